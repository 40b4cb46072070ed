"""How lance-sync types the plain (unquoted) scalars of a manifest: YAML 1.2's core schema.

PyYAML reads YAML 1.1, whose plain scalars hold traps: `NO`, `off` and `yes` are booleans,
`010` is octal 8, `1_000` is 1000, `1:20` is 80 and `2026-01-01` a date. YAML 1.2's core
schema knows only these, and reads everything else as text:

- null: `~`, `null`, `Null`, `NULL` and the empty value
- booleans: `true`, `True`, `TRUE`, `false`, `False`, `FALSE`
- integers: decimal `[-+]?[0-9]+`, octal `0o17`, hexadecimal `0x1F`
- floats: `1.5`, `.5`, `1.`, `1e3`, `-2.5E-3`, `.inf`, `-.Inf`, `.nan`

One rule is lance-sync's own: a decimal integer written with a leading zero (`010`) is
`LeadingZero`, not a number. YAML 1.1 reads it as octal and 1.2 as decimal, so whoever wrote
it may have meant either; every typed field refuses it, and a free-form text map keeps it
as written like any other value.

`dump_yaml` writes data for lance-sync to read back: it quotes every string that YAML 1.1 or
1.2 would read as something else.

`read_json` reads a manifest written as JSON with the json module: YAML 1.2 reads a JSON text
as JSON does, and libyaml's events cost about five times what the json module's C parser
does. It reads a text only where the two are sure to agree (else FastPathUnavailable, and
the plain road of lance_sync.manifest.loader reads it):

- The text is one JSON object: after it nothing but whitespace, which YAML would also read.
- A string holding `${` or `$$` (a `${VAR}` template, or a `$` written twice for one) is
  found and handed back as written, with its path, for the plain road's interpolation
  (`read_json`'s `templates`); without `templates`, such a text is left to the plain road.
  A `$` on its own, as in the `catalog$database` ids of Glue, Unity and Hive, reads alike:
  interpolation leaves such text as it is. Keys are not interpolated, on either road.
- No `\\u` escape of `$` or `{` (which could spell a template), no tab (YAML's separation
  rules for tabs are stricter than JSON's) and no `\\u` escape of a surrogate (json joins a
  pair that libyaml refuses).
- No `NaN` or `Infinity` (not JSON; to YAML they are text), no key written twice (JSON
  takes the last, YAML refuses it).
- Every key as YAML takes an implicit key: on one line with its colon, and within 1,024
  characters as written (libyaml refuses `{"a"\n: 1}` and a longer key). A key is checked
  by its length, which bounds its written text (`MAX_KEY_CHARACTERS`), and by no white
  space between it and its colon.
- The values of text maps (lance_sync.manifest.loader.TEXT_MAPS) are strings, nulls or collections: the plain road
  keeps a number there as written (`1.0` stays "1.0"), json would not.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from typing import Any

import yaml

from lance_sync.manifest.strategy import FastPathUnavailable

#: the plain scalars YAML 1.2 reads as null
NULLS = frozenset({"", "~", "null", "Null", "NULL"})
#: the plain scalars that are null or a boolean (numbers need `_NUMBER`)
_WORDS: dict[str, bool | None] = {
    **dict.fromkeys(NULLS), **dict.fromkeys(("true", "True", "TRUE"), True),
    **dict.fromkeys(("false", "False", "FALSE"), False),
}
_NUMBER_START = frozenset("0123456789+-.")
_INT = r"[-+]?[0-9]+"
_OCTAL = r"0o[0-7]+"
_HEX = r"0x[0-9a-fA-F]+"
_FLOAT = r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
_INFINITY = r"[-+]?\.(?:inf|Inf|INF)"
_NAN = r"\.(?:nan|NaN|NAN)"
_NUMBER = re.compile(f"(?P<int>{_INT})|(?P<octal>{_OCTAL})|(?P<hex>{_HEX})|(?P<float>{_FLOAT})"
                     f"|(?P<infinity>{_INFINITY})|(?P<nan>{_NAN})")


@dataclass(frozen=True)
class LeadingZero:
    """A plain integer written with a leading zero, e.g. `010` (see the module docstring)."""

    text: str

    def __repr__(self) -> str:
        return self.text

    @property
    def decimal(self) -> int:
        """What YAML 1.2 reads: 10."""
        return int(self.text)


def plain_value(text: str) -> Any:
    """The value of a plain scalar: None, a bool, an int, a float, a LeadingZero, or `text`
    itself (the same object) when it is text."""
    if text and text[0] in _NUMBER_START:
        return _number(text)
    return _WORDS.get(text, text)


def _number(text: str) -> Any:
    match = _NUMBER.fullmatch(text)
    kind = match.lastgroup if match else None
    if kind == "int":
        digits = text.lstrip("+-")
        return LeadingZero(text) if len(digits) > 1 and digits[0] == "0" else int(text)
    if kind == "float":
        return float(text)
    if kind == "octal":
        return int(text[2:], 8)
    if kind == "hex":
        return int(text[2:], 16)
    if kind == "infinity":
        return -math.inf if text[0] == "-" else math.inf
    if kind == "nan":
        return math.nan
    return text


def yaml_1_1_value(text: str) -> Any:
    """What PyYAML (YAML 1.1) makes of a plain scalar, for hints; dates stay text."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, bool | int | float) or value is None else text


class _Dumper(yaml.SafeDumper):
    """PyYAML's dumper, which quotes what YAML 1.1 would type, taught YAML 1.2's numbers too."""


for _tag, _pattern, _first in (
        ("tag:yaml.org,2002:int", f"{_INT}|{_OCTAL}|{_HEX}", "-+0123456789"),
        ("tag:yaml.org,2002:float", f"{_FLOAT}|{_INFINITY}|{_NAN}", "-+.0123456789")):
    _Dumper.add_implicit_resolver(_tag, re.compile(f"(?:{_pattern})\\Z"), list(_first))


def dump_yaml(data: Any, **options: Any) -> str:
    """`data` as YAML that YAML 1.1 and 1.2 (and so lance-sync) read back the same."""
    text: str = yaml.dump(data, Dumper=_Dumper, **options)
    return text


# --- JSON text, read by the json module ---------------------------------------------------------

#: a path into the data, as lance_sync.manifest.loader.DataPath
DataPath = tuple[str | int, ...]

#: YAML's limit on an implicit key (a mapping key in flow style) is 1,024 characters as
#: written, from its opening quote to its colon; a character is written in 6 at most
#: (\u00e9), so a key this long is within it however it is written
MAX_KEY_CHARACTERS = (1024 - 2) // 6
#: white space between a key's closing quote and its colon (it may match inside a string,
#: `" :"`, which only leaves the file to the plain road)
_SPACE_BEFORE_COLON = re.compile(r'"[ \r\n]+:')
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
#: an escaped `$` or `{`, from which a template or `$$` could be spelled
_TEMPLATE_ESCAPE = re.compile(r"\\u00(?:24|7[bB])")
#: JSON's whitespace but the tab, then an object's start
_OBJECT_START = re.compile(r"[ \n\r]*\{")


def read_json(text: str, shared: dict[str, str], text_maps: Iterable[tuple[str | type, ...]],
              templates: dict[DataPath, str] | None = None) -> Any:
    """The data of `text` when it is a JSON object the plain road reads alike (the module's
    docstring says when), else FastPathUnavailable; `text_maps` are the plain road's
    (lance_sync.manifest.loader.TEXT_MAPS). With `templates`, each string value that holds
    `${` or `$$` is put there by its path, and left in the data as written: the caller
    interpolates them (lance_sync.manifest.loader.resolve_templates); without it, such a
    text is not read."""
    if not _OBJECT_START.match(text):  # first: a YAML file is not scanned for templates
        raise FastPathUnavailable("not a JSON object")
    with_templates = "${" in text or "$$" in text
    if (with_templates and templates is None) or "\t" in text \
            or ("\\u" in text and (_SURROGATE_ESCAPE.search(text) or _TEMPLATE_ESCAPE.search(text))) \
            or _SPACE_BEFORE_COLON.search(text):
        raise FastPathUnavailable("JSON text YAML may read otherwise (a tab, an escape, a space before a colon)")
    setdefault = shared.setdefault

    def mapping(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if len(key) > MAX_KEY_CHARACTERS:
                raise FastPathUnavailable("a JSON key longer than YAML takes")
            result[setdefault(key, key)] = setdefault(value, value) if type(value) is str else value
        if len(result) != len(pairs):
            raise FastPathUnavailable("a JSON key twice")
        return result

    try:
        data = json.loads(text, object_pairs_hook=mapping, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as error:  # JSONDecodeError is a ValueError
        raise FastPathUnavailable(f"not JSON: {error}") from None
    if not all(_texts_only(data, pattern) for pattern in text_maps):
        raise FastPathUnavailable("a number or boolean in a JSON text map")
    if with_templates and templates is not None:
        _find_templates(data, (), templates)
    return data


def _find_templates(value: dict | list, path: DataPath, found: dict[DataPath, str]) -> None:
    """Each string below `value` that interpolation may change, by its path, in document order."""
    for key, item in value.items() if type(value) is dict else enumerate(value):
        kind = type(item)
        if kind is str:
            if "$" in item and ("${" in item or "$$" in item):
                found[path + (key,)] = item
        elif kind is dict or kind is list:
            _find_templates(item, path + (key,), found)


#: the types of the values of a text map the two read alike
_TEXT_MAP_TYPES = frozenset({str, type(None), dict, list})


def _refuse_constant(name: str) -> Any:
    raise FastPathUnavailable(f"{name} in JSON")


def _texts_only(data: Any, pattern: tuple[str | type, ...]) -> bool:
    """Whether every text map at `pattern` below `data` holds only strings, nulls and collections
    (the maps found a step of the pattern at a time, their values' types taken at once: a
    pattern such as a table's properties matches a million maps)."""
    nodes = [data]
    for step in pattern:
        if isinstance(step, str):
            nodes = [node[step] for node in nodes if type(node) is dict and step in node]
        elif step is int:
            nodes = [item for node in nodes if type(node) is list for item in node]
        else:  # any key
            nodes = [value for node in nodes if type(node) is dict for value in node.values()]
    maps = [node for node in nodes if type(node) is dict]
    return set(map(type, chain.from_iterable(map(dict.values, maps)))) <= _TEXT_MAP_TYPES
