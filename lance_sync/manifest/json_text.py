"""Manifest files written as JSON, read by the json module: the plain road's data, faster.

YAML 1.2 reads a JSON text as JSON does, so a manifest may be written as JSON (a generated
estate often is), and libyaml's events cost about five times what the json module's C
parser does. `read_json` answers the data the plain road (lance_sync.manifest.loader) would
build from the same text, or None, and the plain road reads it: it answers only where the
two are sure to agree.

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
- The values of text maps (loader.TEXT_MAPS) are strings, nulls or collections: the plain
  road keeps a number there as written (`1.0` stays "1.0"), json would not.

Equal strings are kept once through `shared`, as the plain road keeps them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

#: a path pattern of a text map, as loader.TEXT_MAPS writes them
TextMapPattern = tuple[str | type, ...]
#: a path into the data, as loader.DataPath
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


class _NotJson(Exception):
    """The text is not JSON the plain road would read the same."""


def read_json(text: str, shared: dict[str, str], text_maps: Iterable[TextMapPattern],
              templates: dict[DataPath, str] | None = None) -> Any | None:
    """The data of `text` when it is a JSON object the plain road reads alike, else None;
    `text_maps` are the plain road's (loader.TEXT_MAPS). With `templates`, each string value
    that holds `${` or `$$` is put there by its path, and left in the data as written: the
    caller interpolates them (loader.resolve_templates); without it, such a text is None."""
    with_templates = "${" in text or "$$" in text
    if not _OBJECT_START.match(text) or (with_templates and templates is None) or "\t" in text \
            or ("\\u" in text and (_SURROGATE_ESCAPE.search(text) or _TEMPLATE_ESCAPE.search(text))) \
            or _SPACE_BEFORE_COLON.search(text):
        return None
    setdefault = shared.setdefault

    def mapping(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if len(key) > MAX_KEY_CHARACTERS:
                raise _NotJson
            result[setdefault(key, key)] = setdefault(value, value) if type(value) is str else value
        if len(result) != len(pairs):
            raise _NotJson
        return result

    try:
        data = json.loads(text, object_pairs_hook=mapping, parse_constant=_refuse_constant)
    except (_NotJson, ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return None
    if not all(_texts_only(data, pattern) for pattern in text_maps):
        return None
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


def _refuse_constant(name: str) -> Any:
    raise _NotJson(name)


def _texts_only(data: Any, pattern: TextMapPattern) -> bool:
    """Whether every text map at `pattern` below `data` holds only strings, nulls and collections."""
    if not pattern:
        return not isinstance(data, dict) or all(
            value is None or isinstance(value, str | dict | list) for value in data.values())
    step, rest = pattern[0], pattern[1:]
    if isinstance(step, str):
        return not isinstance(data, dict) or step not in data or _texts_only(data[step], rest)
    if step is int:
        return not isinstance(data, list) or all(_texts_only(item, rest) for item in data)
    return not isinstance(data, dict) or all(_texts_only(value, rest) for value in data.values())
