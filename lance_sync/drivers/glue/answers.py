"""Checks of Glue's answers where they enter the driver.

A success answer (of Glue and of Lake Formation, whose grants the driver reads and writes) is
decoded and checked in one walk against its operation's output shape in botocore's model
(`answer_parser`, the `parse` of each request the driver's transport sends): types
everywhere, the members the model requires and those of `REQUIRED_ANSWER_MEMBERS` present. A
body that is not JSON or not of that shape is an `UnfitAnswer`, which the shared HTTP client
raises as a `BadAnswerError` naming the call; reads (`READ_OPERATIONS`) are sent again, writes
are not. A body cut short never gets here: the HTTP client reads it as a transient failure.
The walk hands the answer over reduced to the model's members (null ones left out), as
botocore's parser would, except that timestamps stay epoch seconds as JSON has them; the
driver reads no timestamp, and sends one back (an Update's input rebuilt from a Get answer)
in the form the protocol writes it anyway. botocore's parse of a page of 100 tables took
2.4 ms of CPU here, the decoding and the check together 0.3 ms (`_fitter`).

STS stays on a botocore client (one call per driver, or per role session): its XML answers
are checked by a `before-parse` hook (`check_xml_answer`), and a garbled one is sent again
(`with_bad_answer_retries`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from typing import Any
from xml.etree import ElementTree

from botocore.model import OperationModel, Shape
from botocore.utils import parse_timestamp

from lance_sync.drivers.support.answers import UnfitAnswer, describe_body, html_summary
from lance_sync.drivers.support.retry import BadAnswerError, with_retries
from lance_sync.model import secrets

#: Members an answer must carry to mean anything (`[]`: in every item of the list). botocore's
#: model requires only DatabaseList, CatalogList and each object's Name; it leaves the rest
#: optional, but GetTables without TableList is garbage, not "no tables". Any other member,
#: here and in every other answer, must have its model type when present (and be present
#: where the model requires it).
REQUIRED_ANSWER_MEMBERS: dict[str, frozenset[str]] = {
    "GetCatalogs": frozenset({"CatalogList", "CatalogList[].Name", "CatalogList[].CatalogId"}),
    "GetCatalog": frozenset({"Catalog", "Catalog.Name"}),
    "GetDatabases": frozenset({"DatabaseList", "DatabaseList[].Name"}),
    "GetDatabase": frozenset({"Database", "Database.Name"}),
    "GetTables": frozenset({"TableList", "TableList[].Name"}),
    "GetTable": frozenset({"Table", "Table.Name"}),
    # Lake Formation (same hooks on its client): an entry without its principal, resource or
    # permissions says nothing about who holds what
    "ListPermissions": frozenset({
        "PrincipalResourcePermissions", "PrincipalResourcePermissions[].Principal",
        "PrincipalResourcePermissions[].Principal.DataLakePrincipalIdentifier",
        "PrincipalResourcePermissions[].Resource", "PrincipalResourcePermissions[].Permissions"}),
}
#: Calls that change nothing: sent again after any transient failure or garbled answer (the
#: shared HTTP client's retries). A write is sent again only when Glue cannot have acted on it.
READ_OPERATIONS = frozenset({"GetCatalogs", "GetCatalog", "GetDatabases", "GetDatabase",
                             "GetTables", "GetTable", "ListPermissions"})
#: resends of a garbled STS answer
BAD_ANSWER_RETRIES = 2


def answer_parser(operation_model: OperationModel) -> Callable[[bytes], dict[str, Any]]:
    """The success answers of an operation, decoded, checked and reduced (see above); an
    UnfitAnswer, saying what was wrong and showing the body, for one that does not fit."""
    shape = operation_model.output_shape
    required = REQUIRED_ANSWER_MEMBERS.get(operation_model.name, frozenset())

    def parse(body: bytes) -> dict[str, Any]:
        problem, answer = _checked_answer(body, shape, required)
        if problem is not None:
            raise UnfitAnswer(f"{problem} (body: {_body_picture(body)})")
        return answer

    return parse


def check_xml_answer(operation_model: OperationModel, response_dict: dict[str, Any],
                      **_: Any) -> None:
    """botocore `before-parse` hook for STS (AWS query protocol, XML): raise UnfitAnswer for a
    2xx answer without its result element, on which botocore's parser fails with KeyError."""
    if response_dict["status_code"] >= 300:
        response_dict["body"] = _masked(response_dict["body"] or b"")
        return
    if operation_model.output_shape is None:
        return
    body: bytes = response_dict["body"] or b""
    wrapper = operation_model.output_shape.serialization.get("resultWrapper")
    try:
        children = {child.tag.rpartition("}")[2] for child in ElementTree.fromstring(body)}
    except ElementTree.ParseError:
        raise UnfitAnswer(f"a body that is not XML (body: {_body_picture(body)})") from None
    if wrapper and wrapper not in children:
        raise UnfitAnswer(f"without {wrapper} (body: {_body_picture(body)})")


def _checked_answer(body: bytes, shape: Shape | None, required: frozenset[str]) -> tuple[str | None, Any]:
    """(what is wrong with a 2xx body for an operation with output `shape`, or None; the
    decoded body, reduced to the model's members)."""
    try:
        answer = json.loads(body.decode("utf-8")) if body.strip() else {}
    except ValueError:  # UnicodeDecodeError is one
        return "a body that is not JSON", None
    if not isinstance(answer, dict):
        return f"{_json_kind(answer)} in JSON, not an object", answer
    if shape is None:
        return None, answer
    try:
        return None, _fitter(shape, "", required)(answer)
    except _Unfit:  # say where: the slower walk that names the place
        return _shape_problem(answer, shape, "", "", required) or "an answer that does not fit its model", None


class _Unfit(Exception):
    """Raised by a fitter: the value departs from its shape (`_shape_problem` says where)."""


#: the pattern of a place below which `required` names nothing (so that recursive shapes
#: compile to finitely many fitters)
_ANY = "*"


@functools.lru_cache(maxsize=1024)
def _fitter(shape: Shape, pattern: str, required: frozenset[str]) -> Callable[[Any], Any]:
    """A function of decoded JSON that accepts exactly what `_shape_problem` finds no problem
    in (else raises _Unfit) and returns it reduced to the model's members, null members left
    out, as botocore's parser reads it (timestamps and blobs kept as JSON has them). Built once
    per shape and place: checking 10,000 tables costs a walk without a string built."""
    kind = shape.type_name
    if kind == "structure" and not shape.is_document_type:
        return _structure_fitter(shape, pattern, required)
    if kind in ("list", "map"):
        below = _place(pattern, "[]" if kind == "list" else "{}", required)
        item_shape = shape.member if kind == "list" else shape.value
        if item_shape.type_name in _TEXT:
            return _text_list if kind == "list" else _text_map
        cell: list[Callable[[Any], Any]] = []

        def item(value: Any) -> Any:
            if value is None:
                raise _Unfit
            if not cell:
                cell.append(_fitter(item_shape, below, required))
            return cell[0](value)

        if kind == "list":
            def fit_list(value: Any) -> Any:
                if type(value) is not list:
                    raise _Unfit
                return [item(each) for each in value]
            return fit_list

        def fit_map(value: Any) -> Any:
            if type(value) is not dict:
                raise _Unfit
            return {key: item(each) for key, each in value.items()}
        return fit_map
    if kind in ("string", "blob"):
        def fit_string(value: Any) -> Any:
            if type(value) is not str:
                raise _Unfit
            return value
        return fit_string

    exact = _EXACT_TYPES.get(kind, ())

    def fit_scalar(value: Any) -> Any:
        if type(value) not in exact and not _fits_scalar(kind, value):
            raise _Unfit
        return value
    return fit_scalar


#: the scalar kinds that JSON holds as strings
_TEXT = frozenset({"string", "blob"})
#: the Python types of decoded JSON that fit a scalar kind at once (others ask `_fits_scalar`)
_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,), "long": (int,), "float": (int, float), "double": (int, float),
    "boolean": (bool,), "timestamp": (int, float)}


def _text_list(value: Any) -> Any:
    """A list of strings, checked without a call per item (a table's names, a column's)."""
    if type(value) is not list or not all(type(item) is str for item in value):
        raise _Unfit
    return value


def _text_map(value: Any) -> Any:
    """A map of strings (Parameters, of every table a page holds), checked without a call per
    value; the decoded dict itself is handed over, as a copy would hold the same."""
    if type(value) is not dict or not all(type(item) is str for item in value.values()):
        raise _Unfit
    return value


def _structure_fitter(shape: Shape, pattern: str, required: frozenset[str]) -> Callable[[Any], Any]:
    needed = _required_names(shape, pattern, required)
    members = shape.members
    #: members whose string value is taken as it is, without a call each (most of a table's)
    texts = frozenset(name for name, member in members.items() if member.type_name in _TEXT)
    fitters: dict[str, Callable[[Any], Any]] = {}

    def fit(value: Any) -> Any:
        if type(value) is not dict:
            raise _Unfit
        for name in needed:
            if value.get(name) is None:
                raise _Unfit
        fitted = {}
        for name, item in value.items():
            if item is None:
                continue
            if type(item) is str and name in texts:
                fitted[name] = item
                continue
            member = fitters.get(name)
            if member is None:
                if name not in members:
                    continue  # a member the model lacks: botocore drops it
                member = fitters[name] = _fitter(members[name], _place(pattern, f".{name}" if pattern else name,
                                                                       required), required)
            fitted[name] = member(item)
        return fitted
    return fit


def _place(pattern: str, step: str, required: frozenset[str]) -> str:
    """The pattern one step below `pattern`, or _ANY when `required` names nothing there."""
    if pattern == _ANY:
        return _ANY
    below = pattern + step
    return below if any(path.startswith(below) for path in required) else _ANY


def _shape_problem(value: Any, shape: Shape, where: str, pattern: str,
                   required: frozenset[str]) -> str | None:
    """The first place where decoded JSON `value` departs from `shape`, or None.

    `where` names the place ("TableList[3].Name"), `pattern` the same place with `[]` for any
    list item and `{}` for any map value ("TableList[].Name"), matched against `required`. A null member is an absent one
    (botocore skips it); a null list item or map value is a problem.
    """
    kind = shape.type_name
    if kind == "structure" and not shape.is_document_type:
        if not isinstance(value, dict):
            return _wrong(where, value, "an object")
        for name in _required_names(shape, pattern, required):
            if value.get(name) is None:
                return f"without {_member_path(where, name)}"
        members = shape.members  # Glue's JSON names are its member names (no locationName)
        for name, item in value.items():
            member = members.get(name)
            if member is None or item is None:
                continue  # a member the model lacks (botocore drops it), or an absent one
            problem = _shape_problem(item, member, _member_path(where, name),
                                     _member_path(pattern, name), required)
            if problem is not None:
                return problem
        return None
    if kind == "list":
        if not isinstance(value, list):
            return _wrong(where, value, "a list")
        items = ((f"{where}[{index}]", item) for index, item in enumerate(value))
        return _items_problem(items, shape.member, f"{pattern}[]", required)
    if kind == "map":
        if not isinstance(value, dict):
            return _wrong(where, value, "an object")
        items = ((f"{where}[{key!r}]", item) for key, item in value.items())
        return _items_problem(items, shape.value, f"{pattern}{{}}", required)
    return None if _fits_scalar(kind, value) else _wrong(where, value, _SCALAR_KINDS.get(kind, kind))


@functools.lru_cache(maxsize=256)
def _required_names(shape: Shape, pattern: str, required: frozenset[str]) -> tuple[str, ...]:
    """Members of the structure at `pattern` that must be present: the model's and ours."""
    ours = (path.rpartition(".")[2] for path in required if path.rpartition(".")[0] == pattern)
    return tuple(dict.fromkeys([*shape.required_members, *ours]))


def _items_problem(items: Iterator[tuple[str, Any]], shape: Shape, pattern: str,
                   required: frozenset[str]) -> str | None:
    for where, item in items:
        if item is None:
            return f"with {where} null"
        problem = _shape_problem(item, shape, where, pattern, required)
        if problem is not None:
            return problem
    return None


_SCALAR_KINDS = {"string": "a string", "blob": "a string", "integer": "an integer",
                 "long": "an integer", "float": "a number", "double": "a number",
                 "boolean": "a boolean", "timestamp": "a timestamp"}
_SPECIAL_FLOATS = frozenset({"NaN", "Infinity", "-Infinity"})


def _fits_scalar(kind: str, value: Any) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind in ("string", "blob"):
        return isinstance(value, str)
    if kind in ("integer", "long"):
        return isinstance(value, int) and not isinstance(value, bool)
    if kind in ("float", "double"):
        return number or (isinstance(value, str) and value in _SPECIAL_FLOATS)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "timestamp":
        return number or (isinstance(value, str) and _parses_as_timestamp(value))
    return True  # a kind botocore passes through as it is


def _parses_as_timestamp(text: str) -> bool:
    try:
        parse_timestamp(text)
    except (ValueError, TypeError, OverflowError):
        return False
    return True


def _member_path(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _wrong(where: str, value: Any, expected: str) -> str:
    return f"with {where} {_json_kind(value)}, not {expected}"


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "a number" if isinstance(value, int | float) else "null"


def _body_picture(body: bytes) -> str:
    """A garbled body in one short line: an HTML page by its title, anything else cut short."""
    text = secrets.mask(body.decode("utf-8", errors="replace"))
    return html_summary(text) or describe_body(text or None)


def _masked(body: bytes) -> bytes:
    """An answer's body with any secret it echoes masked (bytes that are not UTF-8 kept)."""
    return secrets.mask(body.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


def with_bad_answer_retries(send: Callable[[], Any], sleep: Callable[[float], None]) -> Any:
    """`send()` again while its answer is garbled, BAD_ANSWER_RETRIES times at most; the last
    BadAnswerError says how many attempts were made."""
    attempts = 0

    def attempt() -> Any:
        nonlocal attempts
        attempts += 1
        return send()

    try:
        return with_retries(attempt, BAD_ANSWER_RETRIES,
                            retryable=lambda error: isinstance(error, BadAnswerError), sleep=sleep)
    except BadAnswerError as error:
        if attempts == 1:
            raise
        raise BadAnswerError(f"{error} after {attempts} attempts") from None
