"""A new version of a large manifest file, read from the parse of its earlier version.

A pull request changes a few tables of a file that holds 50,000 of them; parsing the whole
file again costs seconds, while the earlier version's parse is at hand (the parse cache).
`reparse` splits both versions' text the same way: the lines before the file's longest list,
that list's items, the lines after it. An item whose text the earlier version has is that
version's item; only the others are parsed, each alone.

It answers only when that is sure to be what parsing the new text whole gives, else None
(and the caller parses whole):
- the text before and after the list is the same in both versions, and parsed on its own
  (the list left out) reads as the earlier version does but for the list;
- the list is a block sequence whose items each start a line with the same indentation and
  `- `, and the earlier version splits into exactly as many items as it parsed into: no
  split point lies inside a quoted or flow value, so each split is where YAML saw an item;
- no line break other than `\\n` (YAML also breaks lines at `\\r`, NEL, LS and PS), no item
  written as `-` at the end of its line or `-` and a tab (they would start items the split
  does not see), a last line that ends with `\\n`;
- each new item parses on its own into one item of a block sequence at the list's
  indentation, built at its place in the file (text maps, `${VAR}` templates and depth go
  by the path). Such an item has every line but its first indented deeper than the list (a
  line that is not would end the sequence, and the parse alone would fail), so YAML reads
  it the same whatever items surround it: each item begins where the one before ended, at
  the start of a line, in the same state;
- the earlier version has no `${VAR}` inside the list (a template is known by its path, and
  an inserted item moves the paths of those after it);
- the whole counts no more values than the loader's limit for the new text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lance_sync.manifest import loader
from lance_sync.manifest.loader import Document, NotPlain
from lance_sync.model.errors import ManifestError

#: the new items' text, as a share of the file's, above which the file is parsed whole
MAX_NEW_SHARE = 0.25
#: line breaks YAML knows beside `\n`, and a byte order mark (a line break of its own to libyaml)
_OTHER_BREAKS = ("\r", "\x85", "\u2028", "\u2029", "\ufeff")


@dataclass(frozen=True)
class _Layout:
    """A file's text around its longest list: `head` + the items + `tail`."""

    head: str
    #: each item's text, without the indentation and `- ` that start it and the `\n` that ends it
    items: list[str]
    indent: int
    tail: str


def reparse(name: str, earlier: Document, earlier_raw: bytes, raw: bytes,
            environ: Mapping[str, str] | None) -> Document | None:
    """The document of `raw`, a new version of the file whose version `earlier_raw` parsed
    into `earlier` by the plain road; None when it must be parsed whole (module docstring)."""
    key = _longest_list(earlier)
    if key is None:
        return None
    try:
        before, text = loader.decode(earlier_raw, name), loader.decode(raw, name)
    except ManifestError:
        return None
    old, new = _layout(before, key), _layout(text, key)
    if old is None or new is None or (old.head, old.indent, old.tail) != (new.head, new.indent, new.tail) \
            or len(old.items) != len(earlier.data[key]):
        return None
    known = dict(zip(old.items, earlier.data[key], strict=True))
    fresh = [(index, item) for index, item in enumerate(new.items) if item not in known]
    if sum(map(len, (item for _, item in fresh))) > MAX_NEW_SHARE * len(text):
        return None
    limit = loader.node_limit(text)
    try:
        around = loader.parse_plain_text(name, old.head + old.tail, environ, None, max_nodes=limit)
        if around.data != {**earlier.data, key: None}:
            return None
        parts = [around]
        parsed: dict[int, Any] = {}
        for index, item in fresh:
            parts.append(loader.parse_plain_text(name, f"{' ' * new.indent}- {item}\n", environ, None,
                                                 item_at=(key, index), max_nodes=limit))
            parsed[index] = parts[-1].data
    except NotPlain:
        return None
    counted = sum(part.values for part in parts)
    earlier_room = loader.node_limit(before) - around.values  # what the earlier items counted, at most
    kept = [item for index, item in enumerate(new.items) if index not in parsed]
    if not _fits(kept, known, old.items, earlier_room, limit - counted):
        return None
    items = [parsed[index] if index in parsed else known[item] for index, item in enumerate(new.items)]
    return Document({**earlier.data, key: items}, templates={k: v for part in parts for k, v in part.templates.items()},
                    typed_templates=frozenset().union(*(part.typed_templates for part in parts)), files=[name])


def _longest_list(document: Document) -> str | None:
    """The top-level key of the document's longest list (tables, as a rule); None when the
    document is not a mapping of at least one list, or has templates in it (they go by index)."""
    if not isinstance(document.data, dict):
        return None
    lists = [(len(value), key) for key, value in document.data.items() if isinstance(value, list) and value]
    key = max(lists)[1] if lists else None
    return None if any(path[0] == key for path in document.templates) else key


def _layout(text: str, key: str) -> _Layout | None:
    """How `text` splits around the block sequence under the top-level `key` (the module's
    docstring says when it does); None when it does not split so."""
    if any(other in text for other in _OTHER_BREAKS) or not text.endswith("\n"):
        return None
    # the key's line (the only line that starts with it), then blank lines and comments only
    line = f"{key}:"
    starts = text.count(f"\n{line}") + text.startswith(line)
    head = re.compile(rf"{re.escape(line)}(?:[ ]+#[^\n]*)?[ ]*\n(?:{_BLANK_LINE}\n)*").match(
        text, 0 if text.startswith(line) else text.find(f"\n{line}") + 1)
    if starts != 1 or head is None:
        return None
    first = head.end()
    first_item = text[first:text.find("\n", first)]
    indent = len(first_item) - len(first_item.lstrip(" "))
    entry = "\n" + " " * indent + "-"
    if not text.startswith(entry[1:] + " ", first) or entry + "\t" in text or entry + "\n" in text:
        return None
    tail = _tail_start(indent).search(text, first)
    end = tail.start() + 1 if tail else len(text)
    items = text[first - 1:end - 1].split(entry + " ")
    return _Layout(text[:first], items[1:], indent, text[end:])


#: a line that holds nothing, or a comment only
_BLANK_LINE = r"[ ]*(?:#[^\n]*)?"


def _tail_start(indent: int) -> re.Pattern[str]:
    """The line break before the first line, past a sequence's first item, that belongs to
    none of its items: not blank, no comment only, indented no deeper than the sequence's
    items, and not the start of one."""
    return re.compile(rf"\n(?!{' ' * indent}- | {{{indent + 1}}}|[ ]*(?:#|\n|\Z))")


def _fits(kept: list[str], known: dict[str, Any], old: list[str], earlier_room: int, room: int) -> bool:
    """Whether the values of the earlier items `kept` (by text) fit in `room` (the loader
    counts a collection and each scalar). Counted only when it is not sure without: each
    earlier item kept once counts no more than the earlier items did (`earlier_room`, their
    room in the earlier file's limit) less the values of those the new version dropped."""
    if len(set(kept)) == len(kept):
        dropped = set(old) - set(kept)
        if earlier_room - sum(_values(known[item]) for item in dropped) <= room:
            return True
    return sum(_values(known[item]) for item in kept) <= room


def _values(value: Any) -> int:
    if type(value) is dict:
        return 1 + sum(map(_values, value.values()))
    if type(value) is list:
        return 1 + sum(map(_values, value))
    return 1
