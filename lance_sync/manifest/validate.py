"""Structural validation: the JSON Schema first, then the pydantic models.

Every problem becomes a ManifestError at the file, line and column of the offending
value. Values that came from `${VAR}` are never quoted back: they may be secrets.

A value YAML typed otherwise than its field expects gets a hint saying what to write, from
its text as the file has it (`Document.written`, or the `${VAR}` reference): quotes around a
number given for text (`'010'`), true or false for a yes, a number without its leading zero.

A value whose variable is not set (a document read with `allow_unset`) is not checked: a
backend setting gets a stand-in its backend accepts, so that the rest of the manifest is
checked as usual, and problems at any other such value are left out.

`validate_strictly` is the fast path for a manifest without problems: the models in
pydantic's strict mode, keys by their aliases only. That accepts nothing the JSON Schema
refuses (the schema is generated from the same models, and strict mode takes no string for
a number nor a number for a string, as the schema does), so the schema, by far the slower
check, need not run; whatever it does not accept goes through `validate_structure`, which
says what is wrong. It validates the tables a chunk at a time, as the desired state is
built from them, and lets each chunk's raw data go once its models are built: a large
manifest never holds its raw tables, their models and their desired state all at once. A
table whose entry is, but for its name and location, one validated before has only those two
validated (`StrictTables`).
"""

from __future__ import annotations

import difflib
import functools
import logging
import marshal
from collections.abc import Collection, Iterable, Iterator
from operator import itemgetter
from typing import TYPE_CHECKING, Annotated, Any, cast

from pydantic import TypeAdapter
from pydantic import ValidationError as ModelError
from pydantic_core import ErrorDetails
from typing_extensions import TypedDict

from lance_sync.drivers import available_drivers
from lance_sync.manifest.loader import DataPath, Document, format_path
from lance_sync.manifest.schema_models import (
    NAME_PATTERN,
    OWNER_PATTERN,
    PolicyFile,
    Table,
    ValidatedManifest,
    backend_models,
    manifest_json_schema,
    manifest_model,
    policy_json_schema,
)
from lance_sync.manifest.strategy import FastPathUnavailable
from lance_sync.manifest.yaml_core import LeadingZero, yaml_1_1_value
from lance_sync.model.backend_config import STORAGE_PREFIX
from lance_sync.model.errors import ManifestError, ManifestErrors

if TYPE_CHECKING:  # the schema checks run on the full road only: a plain load never imports jsonschema
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError as SchemaError

logger = logging.getLogger(__name__)

#: tried in turn in place of a backend setting whose variable is not set; the first one the
#: backend's model accepts stands in (a name, a URL, a Thrift address, client_id:secret, a number)
STAND_INS: tuple[str | int, ...] = ("unset", "http://unset.invalid", "thrift://unset.invalid:9083", "unset:unset", 1)

#: JSON Schema type names of the values YAML gives (bool before number: a bool is an int in Python)
_SCHEMA_TYPES: dict[str, type | tuple[type, ...]] = {"object": dict, "array": list, "string": str,
                                                     "boolean": bool, "integer": int, "number": float}
_JSON_TYPES = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
               int: "a number", float: "a number", type(None): "empty",
               LeadingZero: "a number with a leading zero"}
#: the JSON Schema type a pydantic error type says the field expects
_MODEL_EXPECTS = {"string_type": "string", "bool_type": "boolean", "bool_parsing": "boolean",
                  "int_type": "integer", "int_parsing": "integer", "int_from_float": "integer",
                  "float_type": "number", "float_parsing": "number"}
#: fields an entry of a section lacks on purpose, and why (said instead of "unknown field")
_REFUSED_FIELDS: dict[tuple[str | int, str], str] = {
    ("namespaces", "renamed_from"): "namespaces cannot be renamed: no backend here can; declare the new "
    "namespace, give its tables renamed_from (a table id in the old namespace moves them), then remove "
    "the old namespace",
}


@functools.cache
def _validator() -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(manifest_json_schema())


@functools.cache
def _policy_validator() -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(policy_json_schema())


#: the manifest's name patterns in words: a regular expression is no message
_PATTERN_WORDS = {
    OWNER_PATTERN: "(ASCII letters, digits and . _ @ / -, starting with a letter or digit)",
    NAME_PATTERN: "(ASCII letters, digits, _ and -, starting with a letter)",
}

def validate_structure(document: Document) -> ValidatedManifest:
    """The manifest model for a document, or ManifestErrors listing every problem found."""
    if document.unset:
        _stand_in_unset_settings(document)
    _check_schema(_validator(), document)
    try:
        return cast(ValidatedManifest, manifest_model().model_validate(document.data))
    except ModelError as error:
        problems = [p for p in (_model_problem(e, document) for e in error.errors()) if p is not None]
        if not problems:  # every problem is at a value that is not known yet
            names = sorted({name for names in document.unset.values() for name in names})
            problems = [ManifestError(f"cannot check this manifest further without {', '.join(names)}")]
        raise ManifestErrors(_sorted_unique(problems)) from None


def _is_unset(document: Document, path: DataPath) -> bool:
    """Whether the value at `path` is, or is inside, a value whose variable is not set."""
    return any(path[:len(unset)] == unset for unset in document.unset)


def _stand_in_unset_settings(document: Document) -> None:
    """Give each backend setting whose variable is not set the first of STAND_INS its backend's
    model accepts there (`Document.unset` still says the setting is unknown)."""
    models = backend_models()
    for path in document.unset:
        entry = _backend_entry(document, path)
        model = models.get(str(entry.get("type"))) if entry is not None else None
        if entry is None or model is None:
            continue
        setting = str(path[2])
        for candidate in STAND_INS:
            try:
                model.model_validate({**entry, setting: candidate})
            except ModelError as error:
                if any(e["loc"][:1] == (setting,) for e in error.errors()):
                    continue  # refused here; other problems of the entry are reported later
            entry[setting] = candidate
            break


def validate_policy_structure(document: Document) -> PolicyFile:
    """The policy model of a policy file (`--policy`), or ManifestErrors listing every problem."""
    _check_schema(_policy_validator(), document)
    try:
        return PolicyFile.model_validate(document.data)
    except ModelError as error:
        raise ManifestErrors(_sorted_unique(
            [p for p in (_model_problem(e, document) for e in error.errors()) if p is not None])) from None


def _check_schema(validator: Draft202012Validator, document: Document) -> None:
    problems = [p for error in validator.iter_errors(document.data)
                if not _is_unset(document, tuple(error.absolute_path)) for p in _explain(error, document)]
    if problems:
        raise ManifestErrors(_sorted_unique(problems))


#: tables validated at a time by `validate_strictly`
STRICT_CHUNK = 5_000


def validate_strictly(document: Document) -> tuple[ValidatedManifest, StrictTables]:
    """When the document passes the models' strict mode but for its tables: the manifest model,
    its `tables` empty, and the tables, validated a chunk at a time as they are read
    (`StrictTables`). The document is not changed: they read a copy of its tables list.
    FastPathUnavailable when the rest fails, for the full road to say why."""
    data = document.data
    backends = data.get("backends") if isinstance(data, dict) else None
    if not isinstance(backends, dict) or not all(isinstance(entry, dict) for entry in backends.values()):
        raise FastPathUnavailable("backends that are not a mapping of mappings")
    if any(str(key).startswith(STORAGE_PREFIX) for entry in backends.values() for key in entry):
        # connect() properties the models fold, which a manifest must not use
        raise FastPathUnavailable(f"a backend key that starts with {STORAGE_PREFIX}")
    types = tuple(sorted({entry.get("type") for entry in backends.values()}, key=str))
    if not all(isinstance(t, str) and t in available_drivers() for t in types):
        raise FastPathUnavailable("a backend type that is not known")
    raw_tables = data.get("tables", [])
    if not isinstance(raw_tables, list):
        raise FastPathUnavailable("tables that are not a list")
    try:
        model = manifest_model(types).model_validate({**data, "tables": []}, strict=True, by_alias=True,
                                                     by_name=False)
    except ModelError as error:
        raise FastPathUnavailable(f"not valid in strict mode: {error.errors()[0]['msg']}") from None
    return cast(ValidatedManifest, model), StrictTables(list(raw_tables))


#: a table validated in strict mode: its name, its location, and its shape, the model of its
#: entry, shared by the tables whose entries differ only in name and location (so take those
#: two from the first places, never from the shape)
TableEntry = tuple[str, str, Table]


def table_entries(tables: Iterable[Table]) -> Iterator[TableEntry]:
    """Validated tables as entries, each its own shape."""
    return ((table.name, table.location, table) for table in tables)


#: the shapes a strict load keeps at most (`StrictTables`): a large manifest's tables have a few
MAX_SHAPES = 1_024
#: the share of a chunk's tables whose shape must be known already for the next chunk to be
#: validated by shapes (`StrictTables`): below it, each table's key is work for nothing
SHAPED_SHARE = 0.5


class StrictTables:
    """Raw tables, validated in strict mode a chunk at a time as they are read; FastPathUnavailable when
    one fails. A chunk's raw entries are let go (set to None in `raw`) once validated: a caller
    that lets go of the document's data frees them as it goes. Read once, whole (iterating) or
    a range at a time (`read`, lance_sync.manifest.semantic builds two ranges at once).

    The tables of a large manifest mostly differ only in name and location: an entry whose
    other keys and values are those of one validated before (its shape) needs only its name
    and location validated, as the `Table` model validates them (no check of the model spans
    fields). Where most tables of a chunk have shapes of their own, the next is validated a
    table at a time instead."""

    def __init__(self, raw: list[Any]):
        self.raw = raw
        #: a shape's key (`_shape_key`) -> its model
        self.shapes: dict[bytes, Table] = {}
        self.by_shapes = True

    def __len__(self) -> int:
        return len(self.raw)

    def __iter__(self) -> Iterator[TableEntry]:
        return self.read(0, len(self.raw))

    def read(self, start: int, stop: int) -> Iterator[TableEntry]:
        """The tables of the range, validated."""
        raw = self.raw
        for begin in range(start, stop, STRICT_CHUNK):
            chunk = raw[begin:min(begin + STRICT_CHUNK, stop)]
            try:
                entries = self._by_shapes(chunk) if self.by_shapes else list(table_entries(_validated(chunk)))
            except ModelError as error:
                raise FastPathUnavailable(f"a table not valid in strict mode: {error.errors()[0]['msg']}") from None
            raw[begin:begin + len(chunk)] = [None] * len(chunk)
            del chunk
            yield from entries

    def _by_shapes(self, chunk: list[Any]) -> list[TableEntry]:
        names = _names_adapter().validate_python(chunk, strict=True)
        shapes, known = self.shapes, 0
        chunk_shapes = []
        for entry in chunk:
            key = _shape_key(entry)
            shape = shapes.get(key) if key is not None else None
            if shape is None:
                shape = _validated([entry])[0]
                if key is not None:
                    if len(shapes) >= MAX_SHAPES:
                        shapes.clear()
                    shapes[key] = shape
            else:
                known += 1
            chunk_shapes.append(shape)
        if known < SHAPED_SHARE * len(chunk):
            logger.debug("tables validated one at a time: %d of %d had the shape of one before", known, len(chunk))
            self.by_shapes = False
        return list(zip(map(itemgetter("name"), names), map(itemgetter("location"), names), chunk_shapes, strict=True))

    def let_go(self, start: int, stop: int) -> None:
        """Let go of the range's raw entries unread (another process built them)."""
        self.raw[start:stop] = [None] * (stop - start)


def _shape_key(entry: Any) -> bytes | None:
    """What an entry holds but its name and location, as bytes that only an equal value gives
    (marshal writes each type apart: True is not 1); None for one marshal cannot write."""
    rest = entry.copy()
    del rest["name"], rest["location"]
    try:
        return marshal.dumps(rest)
    except ValueError:
        return None


def _validated(chunk: list[Any]) -> list[Table]:
    return _tables_adapter().validate_python(chunk, strict=True, by_alias=True, by_name=False)


@functools.cache
def _tables_adapter() -> TypeAdapter[list[Table]]:
    return TypeAdapter(list[Table])


@functools.cache
def _names_adapter() -> TypeAdapter[list[Any]]:
    """The name and location of tables, each as the `Table` model validates it."""
    field = Table.model_fields
    return TypeAdapter(list[TypedDict("NameAndLocation", {  # type: ignore[misc, operator]
        key: Annotated[field[key].annotation, field[key]] for key in ("name", "location")})])


def _sorted_unique(problems: list[ManifestError]) -> list[ManifestError]:
    unique = {str(p): p for p in problems}
    return sorted(unique.values(), key=lambda p: (p.position.file, p.position.line, p.position.column)
                  if p.position else ("", 0, 0))


def _explain(error: SchemaError, document: Document) -> list[ManifestError]:
    path: DataPath = tuple(error.absolute_path)
    instance = error.instance
    templated = path in document.templates

    def problem(message: str, at: DataPath = path, key: bool = False) -> ManifestError:
        position = document.key_position(at) if key else document.position(at)
        return ManifestError(message, position, format_path(at))

    if error.validator == "oneOf" and isinstance(instance, dict) and "type" in error.schema.get(
            "discriminator", {}).get("propertyName", ""):
        return _explain_backend(error, document, path)
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in instance]
        return [problem(f"missing required field '{name}'") for name in missing]
    if error.validator == "additionalProperties":
        allowed = list(error.schema.get("properties", {}))
        extras = [k for k in instance if k not in allowed]
        return [problem(_unknown_field(path, k, allowed), (*path, k), key=True) for k in extras]
    if error.validator == "type":
        types = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        got = "" if templated else f", got {_JSON_TYPES.get(type(instance), type(instance).__name__)}"
        return [problem(f"must be {_article(' or '.join(types))}{got}{_hint(document, path, instance, types)}")]
    if error.validator in ("enum", "const"):
        options = error.validator_value if error.validator == "enum" else [error.validator_value]
        got = "" if templated else f" (got {instance!r})"
        hint = _hint(document, path, instance, {_json_type(option) for option in options})
        return [problem(f"must be {' or '.join(repr(o) for o in options)}{got}{hint}")]
    if error.validator == "pattern":
        got = "this value" if templated else repr(instance)
        pattern = _PATTERN_WORDS.get(error.validator_value, error.validator_value)
        return [problem(f"{got} does not match the required pattern {pattern}")]
    if error.validator in ("minItems", "minLength", "minProperties"):
        return [problem("must not be empty")]
    if error.validator == "anyOf":
        return _explain_branch(error, document) or [problem(_any_of_message(error, document))]
    message = error.message if not templated else f"invalid value ({error.validator})"
    return [problem(message)]


def _explain_backend(error: SchemaError, document: Document, path: DataPath) -> list[ManifestError]:
    """A backend entry: report the errors of the branch its `type` selects, not of all branches."""
    mapping = error.schema["discriminator"]["mapping"]
    backend_type = error.instance.get("type")
    if backend_type not in mapping:
        known = ", ".join(sorted(mapping))
        return [ManifestError(f"unknown backend type {backend_type!r} (known: {known})",
                              document.position((*path, "type")), format_path((*path, "type")))]
    branch = next(i for i, option in enumerate(error.schema["oneOf"])
                  if option.get("$ref") == mapping[backend_type])
    problems = [p for sub_error in error.context or []
                if sub_error.relative_schema_path and sub_error.relative_schema_path[0] == branch
                for p in _explain(sub_error, document)]
    return problems or [ManifestError("invalid backend entry", document.position(path), format_path(path))]


def _explain_branch(error: SchemaError, document: Document) -> list[ManifestError]:
    """An optional value of the right type (a list where a list or nothing is allowed): the
    problems inside the branch its type selects, not "must be a list or empty"."""
    instance_type = next((name for name, python_type in _SCHEMA_TYPES.items()
                          if isinstance(error.instance, python_type)), None)
    for branch, option in enumerate(error.validator_value):
        option_type = "object" if "$ref" in option else option.get("type")
        if option_type != instance_type and not (option_type == "number" and instance_type == "integer"):
            continue
        return [p for sub_error in error.context or []
                if sub_error.relative_schema_path and sub_error.relative_schema_path[0] == branch
                for p in _explain(sub_error, document)]
    return []


def _any_of_message(error: SchemaError, document: Document) -> str:
    path: DataPath = tuple(error.absolute_path)
    types = ["object" if "$ref" in option else option.get("type", "") for option in error.validator_value]
    kinds = [_article(t) for t in types if t]
    got = "" if path in document.templates else f", got {_JSON_TYPES.get(type(error.instance), 'something else')}"
    return (f"must be {' or '.join(dict.fromkeys(kinds)) or 'a valid value'}{got}"
            f"{_hint(document, path, error.instance, types)}")


def _hint(document: Document, path: DataPath, value: Any, expected: Collection[str]) -> str:
    """What to write instead of a value YAML typed otherwise than the field's `expected` JSON
    types, to append to the message ("" when there is nothing to say). A value is quoted
    back only as the file writes it: a `${VAR}` value by its reference, never its own text."""
    template = document.templates.get(path)
    written = template or document.written.get(path)
    null = f"YAML reads {written or 'an empty value'} as null"
    if "string" in expected:
        if value is None:
            return f"; {null}: " + (f"quote it, {_quoted(written)}, if you mean the text" if written
                                    else "write '' for empty text")
        if isinstance(value, bool | int | float | LeadingZero) and written:
            return f"; write it in quotes: {_quoted(written)}"
        return ""
    reading = yaml_1_1_value(value) if isinstance(value, str) and not template else None
    if "boolean" in expected:
        if value is None:
            return f"; {null}: use true or false"
        if isinstance(reading, bool):
            return f"; {_quoted(value)} is text in YAML 1.2: use true or false"
        return "; use true or false"
    if not {"integer", "number"} & set(expected):
        return ""
    if value is None:
        return f"; {null}: write a number"
    if isinstance(value, LeadingZero):
        if template:
            return ("; the value has a leading zero, which YAML 1.1 reads as octal and YAML 1.2 as "
                    "decimal: write it without the zero")
        octal = yaml_1_1_value(value.text)
        old = f"octal {octal}" if isinstance(octal, int) else "text"
        return (f"; a leading zero is ambiguous (YAML 1.1 reads {value.text} as {old}, YAML 1.2 as "
                f"{value.decimal}): write {value.decimal}")
    if isinstance(reading, int | float) and not isinstance(reading, bool):
        return f"; {_quoted(value)} is text in YAML 1.2: write {reading}"
    return ""


def _quoted(text: str) -> str:
    """`text` as a single-quoted YAML scalar."""
    return "'" + text.replace("'", "''") + "'"


def _json_type(value: Any) -> str:
    """The JSON Schema type of a value of the schema (an enum option)."""
    return next((name for name, python_type in _SCHEMA_TYPES.items() if isinstance(value, python_type)), "null")


def _article(json_type: str) -> str:
    names = {"object": "a mapping", "array": "a list", "string": "a string", "integer": "an integer",
             "number": "a number", "boolean": "true or false", "null": "empty"}
    return " or ".join(names.get(t.strip(), t) for t in json_type.split(" or "))


def _unknown_field(path: DataPath, key: str, allowed: list[str]) -> str:
    """What to say about a key the entry at `path` does not have."""
    refused = _REFUSED_FIELDS.get((path[0], key)) if len(path) == 2 else None
    return refused or f"unknown field '{key}'{_did_you_mean(key, allowed)}"


def _did_you_mean(key: str, allowed: list[str]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _backend_entry(document: Document, path: DataPath) -> dict | None:
    """The backend entry whose setting is at `path` (backends.NAME.SETTING), if it is one."""
    if len(path) != 3 or path[0] != "backends" or not isinstance(document.data, dict):
        return None
    backends = document.data.get("backends")
    entry = backends.get(path[1]) if isinstance(backends, dict) else None
    return entry if isinstance(entry, dict) else None


def _model_problem(error: ErrorDetails, document: Document) -> ManifestError | None:
    """Map a pydantic error location onto the data path (skipping union tags); None for a
    problem at a value whose variable is not set."""
    path: list[str | int] = []
    data = document.data
    for element in error["loc"]:
        if isinstance(data, dict) and element in data:
            data = data[element]
            path.append(element)
        elif isinstance(data, list) and isinstance(element, int) and element < len(data):
            data = data[element]
            path.append(element)
    if _is_unset(document, tuple(path)):
        return None
    message = error["msg"].removeprefix("Value error, ")
    expected = _MODEL_EXPECTS.get(error["type"])
    if expected is not None:  # a type error, at `data`
        message += _hint(document, tuple(path), data, {expected})
    return ManifestError(message, document.position(tuple(path)), format_path(tuple(path)))
