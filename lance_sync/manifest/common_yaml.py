"""Read the YAML that large manifests are written in with the json module, about two and a
half times as fast as libyaml's events: a block mapping at the top, block mappings and block
sequences below it, each value on the line of its key or `- `, written as a one-line flow
collection, a quoted scalar or a plain scalar. Such as (a table a line, as
bench/bench_catalogs.py writes them):

    version: 1
    backends:
      lake: {type: dir, root: /data}
    tables:
      - {name: t0, location: '/data/t0.lance', properties: {tier: gold}, register: [{backend: lake}]}

`read_common_yaml` gives what the plain road of lance_sync.manifest.loader gives for such a
text, or raises FastPathUnavailable (with the reason) for anything else, and libyaml reads the
file. It takes only what it can be sure of, and refuses the rest:

- Characters: printable ones and `\\n` only (no tab, `\\r`, other line break or byte order
  mark); no directive, document marker (`---`, `...`), anchor, alias, tag, `?` key, block
  scalar (`|`, `>`), multi-line value (a flow collection or a plain scalar that goes on to the
  next line), quoted or flow key in block context, compact nested collection (`- a: 1`, `- - a`),
  sequence written at its key's indentation, or a top level that is not a block mapping.
- Quoted scalars (found first, each `'...'` or `"..."` on one line) are text; a double-quoted
  one holds only the escapes JSON reads alike (`\\" \\\\ \\b \\f \\n \\r \\t`, and `\\uXXXX` of
  U+00A0 and above, no surrogate). They must stand alone between the indicators: `a'b'` is
  plain text to YAML, and is refused.
- Comments are a `#` at a line's start or after a space, to the line's end, holding no quoted
  scalar; any other `#` is refused.
- Plain scalars in flow collections are made of letters, digits and `_ . / ~ + - = @ % ( ) ^ ;
  $` and any non-ASCII character, with single spaces inside, a `:` only before another such
  character, and `-` or `+` first only before one: within these, YAML ends a plain scalar
  exactly where an indicator (`{ } [ ] ,` or `: `) starts, so each reads as the text between
  them. Outside flow collections a plain scalar is the rest of its line (any of these
  characters, and `{ } [ ] ,` after its first), as YAML reads it in block context.
- Flow collections are mappings of `key: value` and sequences of values, with one space at
  most around their indicators; no empty value (`{a: }`, `{a}`), trailing comma or single-pair
  mapping in a sequence (`[a: b]`): JSON refuses them too.

Each flow value becomes JSON text by replacing each indicator with its JSON counterpart and
putting each plain scalar in quotes (a few `str.replace`, in C), a quoted one by its JSON
string; all values of a file are one `json.loads`, each wrapped so that one that does not end
on its line cannot go unnoticed. Plain scalars are then typed as the plain road types them
(lance_sync.manifest.yaml_core: `plain_value`, YAML 1.2's core schema; text maps keep them as
written, nulls as None); those that may not be text (a number, a null, a boolean, or holding a
`$`) are marked in the JSON text, and only then is the data walked with paths. Keys are never
typed. A `${VAR}` value is handed back by its path, as `read_json` does, for the caller to
interpolate (lance_sync.manifest.loader.resolve_templates). A key written twice, a merge key
`<<`, more values than the limit and nesting deeper than the loader's are refused. Texts are
kept once through the caller's `shared`, as the plain road keeps them, but for the keys of
flow mappings: the json module keeps each once in a file (they are few), not across files.

Keeping texts once walks every value, which pays only where the data lives on: a caller that
reads the data once and drops it (a worker that answers rows made of it) passes `keep_once`
false. The keys, values and depth of the flow values are then counted from the distinct shapes
of their lines (`_shapes`: a line's containers, keys and items are its shape's, as only the
digits of plain scalars and the bodies of quoted ones differ), each shape walked once and
counted as often as it is written, unless a shape cannot tell: one with a quoted key (equal to
another key or not), or two keys alike in one mapping (which may differ by their digits only).
Those, and files of too many shapes, are counted by walking every value.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

from lance_sync.manifest.strategy import FastPathUnavailable
from lance_sync.manifest.yaml_core import NULLS, DataPath, plain_value

logger = logging.getLogger(__name__)

#: the characters the plain road takes besides printable ASCII and `\n`: no tab, `\r`, NEL, line
#: or paragraph separator, byte order mark, non-character; every line break but `\n` refused
_NOT_PRINTABLE = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
_PRINTABLE_ASCII = bytes([10, *range(0x20, 0x7f)])
#: a quoted scalar on one line: group 1 a single-quoted body, group 2 a double-quoted one
_QUOTED = re.compile(r"""'([^'\n]*(?:''[^'\n]*)*)'|"([^"\\\n]*(?:\\.[^"\\\n]*)*)\"""")
#: an escape that JSON reads as YAML does: `\\uXXXX` only of U+00A0 and above, no surrogate
_SAME_ESCAPE = re.compile(r'\\(?:["\\bfnrt]|u(?:00[a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}'
                          r'|[1-9a-cA-CeEfF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))')
_COMMENT = re.compile(r"(?:^|[ ]+)#[^\n]*", re.MULTILINE)
_TRAILING_SPACES = re.compile(r"[ ]+$", re.MULTILINE)

_PLAIN_CHARS = r"A-Za-z0-9_./~+\-=@%()^;$\x80-\U0010ffff"
_FIRST_CHARS = r"A-Za-z0-9_./~=()^;$\x80-\U0010ffff"
#: what may follow an indicator (the start of a line's value included): an indicator, a quoted
#: scalar (`\x00` in the skeleton) or a plain scalar's first character
_VALUE_START = rf"(?:[{{}}\[\],\n\x00{_FIRST_CHARS}]|[-+][{_PLAIN_CHARS}])"
#: each finds what makes a file's flow values other than this module reads them (one search
#: each, as each starts with a character the regex engine looks for at C speed)
_BAD_FLOW = (
    # a value that starts with what a plain scalar cannot, or a plain scalar before `{` or `[`
    re.compile(rf"[{{\[\n](?:(?!{_VALUE_START})|(?<=[{_PLAIN_CHARS}][{{\[]))"),
    re.compile(rf",(?: (?!{_VALUE_START})|(?! )(?!{_VALUE_START}))"),
    # `:` neither before a space and a value nor inside a plain scalar
    re.compile(rf":(?: (?!{_VALUE_START})|(?![ {_PLAIN_CHARS}])|(?=[{_PLAIN_CHARS}])(?<=[^{_PLAIN_CHARS}]:))"),
    # a space neither after `:` nor inside a plain scalar
    re.compile(rf" (?:(?![{_PLAIN_CHARS}])(?<=[^:,] )|(?<=[^:,{_PLAIN_CHARS}] )|:)"),
    # a quoted scalar not alone between indicators
    re.compile(r"\x00(?:(?![}\],\n]|: |\Z)|(?<=[^{\[,\n ]\x00)|(?<=[^:,] \x00))"),
)
_NOT_FLOW_CHAR = re.compile(rf"[^{{}}\[\],: \n\x00{_PLAIN_CHARS}]")
#: a plain scalar outside flow collections: the rest of its line
_BLOCK_PLAIN = re.compile(rf"(?:[{_FIRST_CHARS}]|[-+][{_PLAIN_CHARS}])(?:[{{}}\[\],{_PLAIN_CHARS}]|[ :](?=[{{}}\[\],{_PLAIN_CHARS}]))*")
#: a key in block context, then `:` and the line's end or a space; within 1,000 characters
#: (libyaml takes an implicit key of 1,024 at most)
_BLOCK_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./\-]{0,999}(?=:(?: |$))")
#: a plain scalar that may be other than text (a number, a null, a boolean), after what may
#: come before it in a flow value (`{` starts a key, never typed): a mark goes before it
_TYPED_START = r"(?=[0-9+.\-]|(?:~|null|Null|NULL|true|True|TRUE|false|False|FALSE)(?:[}\],\n]|: |\Z))"
_MAY_BE_TYPED = tuple((re.compile(re.escape(before) + _TYPED_START), before + "\x01") for before in (": ", ", ", ",", "["))
#: a JSON string of a plain scalar, not marked yet, that holds a `$`: a mark goes in it
_HOLDS_DOLLAR = re.compile('"(?=[^"\x01]*\\$)')
_DIGITS_AS_ZERO = str.maketrans("123456789", "000000000")
#: the mark of such a plain scalar (a control character no quoted scalar of the file can hold)
_MARK = "\x01"
#: the key each line's value is wrapped in (a control character no value can hold)
_WRAP = "\x02"
#: a plain scalar this long, or a quoted one whose body is this long, may be a key longer
#: than libyaml takes (1,024 characters as written)
_LONG_PLAIN_CHARACTERS = 900
_LONG_PLAIN = re.compile(rf"[^{{}}\[\],\n\x00]{{{_LONG_PLAIN_CHARACTERS}}}")
MAX_QUOTED = 400
#: block nesting this module reads at most
MAX_BLOCK_DEPTH = 16
#: the indicators of flow collections, as JSON writes them between the quoted plain scalars
_TO_JSON = (("{", '"{"'), ("}", '"}"'), ("[", '"["'), ("]", '"]"'), (": ", '":"'),
            ("\n", '"},{"\\u0002":"'))
#: the flow values' structure is counted from their lines' distinct shapes only when there are
#: this many lines a shape or more (else walking them all costs less)
LINES_PER_SHAPE = 4


class _Run(NamedTuple):
    """Where flow values go: in a mapping at `key` (one value), or in a sequence from index
    `key` on; `path` is the collection's, `first` the place of the first among the flow values."""

    container: Any
    key: str | int
    path: DataPath
    first: int
    size: int


class _Reading:
    """What the block lines give: the data with room for the flow values, and what the values
    must be checked against."""

    def __init__(self, shared: dict[str, str], is_text_map: Callable[[DataPath], bool]):
        self.shared = shared
        self.is_text_map = is_text_map
        self.runs: list[_Run] = []
        #: the skeleton text of each flow value
        self.flow: list[str] = []
        self.nodes = 1
        #: the longest path of a flow value
        self.deepest = 0
        #: `${VAR}` values by path, and which of them are plain (typed once interpolated)
        self.templates: dict[DataPath, str] = {}
        self.typed: list[DataPath] = []

    def add(self, container: Any, key: str | int, path: DataPath, values: list[str]) -> None:
        """Flow values to read, for `container` at `key` (a sequence: from `key` on)."""
        self.runs.append(_Run(container, key, path, len(self.flow), len(values)))
        self.flow += values
        self.nodes += len(values)
        if type(container) is list:
            container += [None] * len(values)
        else:
            container[key] = None  # in its place among the keys
        self.deepest = max(self.deepest, len(path) + 1)


def read_common_yaml(text: str, shared: dict[str, str], max_nodes: int, max_depth: int,
                     is_text_map: Callable[[DataPath], bool], keep_once: bool = True
                     ) -> tuple[Any, dict[DataPath, str], list[DataPath]]:
    """The data of `text` (the module docstring says which texts), its `${VAR}` values by path
    (left in the data as written, for the caller to interpolate) and the paths of those that
    are plain scalars; FastPathUnavailable with the reason for any other text. Texts are kept
    once through `shared`, as the plain road keeps them; with `keep_once` false (data read once
    and dropped), those of flow values are left as the json module gives them, and not walked."""
    # bytes.translate deletes the printable ASCII bytes at memory speed: what is left is not
    bad = text.encode().translate(None, _PRINTABLE_ASCII) if text.isascii() else _NOT_PRINTABLE.search(text)
    if bad:
        raise FastPathUnavailable(f"a character this reader leaves to libyaml: {bad!r}")
    skeleton, bodies = _without_quoted(text)
    reading = _Reading(shared, is_text_map)
    root = _read_block_lines(skeleton if skeleton.endswith("\n") else skeleton + "\n", reading)
    if reading.flow:
        flow = _flow_values("\n".join(reading.flow), max(map(len, reading.flow)), bodies)
        if len(flow.values) != len(reading.flow):
            raise FastPathUnavailable("a flow value that does not end on its line")
        _place(flow, reading, max_depth, keep_once)
    elif bodies:
        raise FastPathUnavailable("a quoted scalar outside the values")
    if reading.nodes > max_nodes:
        raise FastPathUnavailable("more values than the limit")
    return root, reading.templates, reading.typed


def _without_quoted(text: str) -> tuple[str, list[str]]:
    """The text with each quoted scalar replaced by `\\x00` and comments left out, and the
    quoted scalars' bodies as JSON strings hold them, in order."""
    if '"' not in text and "''" not in text:  # single quotes, none written twice: each pair quotes a body
        parts = text.split("'")
        skeleton, bodies = "\x00".join(parts[0::2]), parts[1::2]
        if len(parts) % 2 == 0 or "\n" in "\x00".join(bodies):
            raise FastPathUnavailable("a quote that does not start a quoted scalar on one line")
        if "\\" in text:
            bodies = [body.replace("\\", "\\\\") for body in bodies]
    else:
        skeleton, bodies = _quoted_bodies(text)
    if "#" in skeleton:
        skeleton = _COMMENT.sub("", skeleton)
        if skeleton.count("\x00") != len(bodies):
            raise FastPathUnavailable("a quoted scalar in a comment")
    if " \n" in skeleton or skeleton.endswith(" "):
        skeleton = _TRAILING_SPACES.sub("", skeleton)
    return skeleton, bodies


def _quoted_bodies(text: str) -> tuple[str, list[str]]:
    """`_without_quoted` of a text with double quotes or a single quote written twice, but its comments."""
    parts = _QUOTED.split(text)
    skeleton, singles, doubles = "\x00".join(parts[0::3]), parts[1::3], parts[2::3]
    if "'" in skeleton or '"' in skeleton:
        raise FastPathUnavailable("a quote that does not start a quoted scalar on one line")
    escaped = "\x00".join(double for double in doubles if double and "\\" in double)
    if "\\" in _SAME_ESCAPE.sub("", escaped):
        raise FastPathUnavailable("a double-quoted escape JSON does not read alike")
    return skeleton, [_single_body(single) if double is None else double
                      for single, double in zip(singles, doubles, strict=True)]


def _single_body(body: str) -> str:
    return body.replace("\\", "\\\\").replace('"', '\\"').replace("''", "'")


def _read_block_lines(text: str, reading: _Reading) -> dict[str, Any]:
    """The block structure of the skeleton's lines (each ends with `\\n`): mappings and sequences by
    indentation, each value read on its line (`_line_value`), a sequence's items that are flow
    values a run of lines at a time."""
    root: dict[str, Any] = {}
    # each open block collection: its entries' indentation, the collection, its path
    open_blocks: list[tuple[int, Any, DataPath]] = [(0, root, ())]
    #: a key whose value is on the lines below it: its mapping, key, path and indentation
    waiting: tuple[dict[str, Any], str, DataPath, int] | None = None
    position = 0
    while position < len(text):
        end = text.index("\n", position)
        line = text[position:end]
        if not line:
            position = end + 1
            continue
        indent = len(line) - len(line.lstrip(" "))
        if waiting is not None:
            _open_below(waiting, indent, line, open_blocks, reading)
            waiting = None
        while indent < open_blocks[-1][0]:
            open_blocks.pop()
        depth, container, path = open_blocks[-1]
        if indent != depth:
            raise FastPathUnavailable("an indentation that does not line up")
        if type(container) is list:
            position = _items(text, position, end, indent, container, path, reading)
            continue
        waiting = _entry(line, indent, container, path, reading)
        position = end + 1
    if waiting is not None:
        reading.nodes += 1  # an empty value: null
    if not root:
        raise FastPathUnavailable("no block mapping")
    return root


@functools.cache
def _flow_items(indent: int) -> re.Pattern[str]:
    """Lines of sequence items at this indentation whose values are flow collections or quoted."""
    return re.compile(f"(?:{' ' * indent}- [{{\\[\x00][^\n]*\n)+")


def _items(text: str, position: int, end: int, indent: int, container: list[Any], path: DataPath,
           reading: _Reading) -> int:
    """Read the sequence items from the line at `position` (ending at `end`) on; where the next line starts."""
    if not text.startswith("- ", position + indent):
        raise FastPathUnavailable("a sequence entry that is not `- value`")
    run = _flow_items(indent).match(text, position)
    if run is None:
        _line_value(text[position + indent + 2:end].lstrip(" "), container, len(container),
                    (*path, len(container)), reading)
        return end + 1
    items = text[position + indent + 2:run.end() - 1].split(f"\n{' ' * indent}- ")
    reading.add(container, len(container), path, items)
    return run.end()


def _entry(line: str, indent: int, mapping: dict[str, Any], path: DataPath, reading: _Reading
           ) -> tuple[dict[str, Any], str, DataPath, int] | None:
    """Read the line `key: value` of a block mapping; when its value is on the lines below, what
    waits for them."""
    key_match = _BLOCK_KEY.match(line, indent)
    if key_match is None:
        raise FastPathUnavailable("a line that is not `key: value` of a plain key")
    key = reading.shared.setdefault(key_match.group(), key_match.group())
    if key in mapping or key == "<<":
        raise FastPathUnavailable("a key written twice")
    rest = line[key_match.end() + 2:].lstrip(" ")
    if rest:
        _line_value(rest, mapping, key, (*path, key), reading)
        return None
    mapping[key] = None
    return mapping, key, (*path, key), indent


def _open_below(waiting: tuple[dict[str, Any], str, DataPath, int], indent: int, line: str,
                open_blocks: list[tuple[int, Any, DataPath]], reading: _Reading) -> None:
    """The value of the waiting key: a block collection that starts on this line when it is
    indented deeper, else null (the line goes on with the key's mapping)."""
    mapping, key, path, key_indent = waiting
    reading.nodes += 1
    if indent <= key_indent:
        if line.startswith("- ", indent) and indent == key_indent:
            raise FastPathUnavailable("a sequence at its key's indentation")
        return
    if len(path) >= MAX_BLOCK_DEPTH:
        raise FastPathUnavailable("block collections nested too deep")
    mapping[key] = [] if line.startswith("- ", indent) else {}
    open_blocks.append((indent, mapping[key], path))


def _line_value(value: str, container: Any, key: str | int, path: DataPath, reading: _Reading) -> None:
    """The value written on a line after its key or `- `: a flow collection or a quoted scalar
    is read later, a plain scalar now."""
    first = value[:1]
    if first and first in "{[\x00":
        reading.add(container, key, path[:-1], [value])
        return
    reading.nodes += 1
    if type(container) is list:
        container.append(None)
    if _BLOCK_PLAIN.fullmatch(value) is None:
        raise FastPathUnavailable(f"a value this reader leaves to libyaml: {value[:40]!r}")
    # a text map is a mapping: the items of a sequence in its place are typed
    container[key] = _plain(value, path, type(container) is dict and reading.is_text_map(path[:-1]), reading)


def _plain(text: str, path: DataPath, as_text: bool, reading: _Reading) -> Any:
    """A plain scalar's value as the plain road reads it (`as_text`: a value of a text map)."""
    if as_text and text in NULLS:
        return None
    if "$" in text:
        if "${" in text or "$$" in text:
            reading.templates[path] = text
            if not as_text:
                reading.typed.append(path)
        return text
    value = text if as_text else plain_value(text)
    return reading.shared.setdefault(text, text) if value is text else value


class _Flow(NamedTuple):
    """What the flow values of a file read as (`_flow_values`)."""

    values: list[Any]
    #: how many keys their mappings are written with
    pairs: int
    #: whether a plain scalar in them may be other than text (marked)
    marked: bool
    #: their lines' distinct shapes (`_shapes`), as checked, and how many lines each is
    shapes: str
    counts: list[int]
    #: the comma indicator, and how JSON writes it (`_as_json`)
    comma: tuple[str, str]


def _flow_values(flow: str, longest: int, bodies: list[str]) -> _Flow:
    """The values of the lines of `flow` (each line a value, quoted scalars as `\\x00`) and what
    they are written with; FastPathUnavailable when one is not read as the module docstring says."""
    shapes, counts = _shapes(flow)
    if "  " in shapes:
        raise FastPathUnavailable("two spaces in a flow value")
    for spaced, tight in ((" ,", ","), ("{ ", "{"), (" }", "}"), ("[ ", "["), (" ]", "]")):
        if spaced in shapes:
            flow, shapes = flow.replace(spaced, tight), shapes.replace(spaced, tight)
    # `, ` (as YAML is written) or `,` is the indicator, all alike
    comma = (", ", '", "') if shapes.count(",") == shapes.count(", ") else (",", '","')
    if comma[0] == ",":
        flow, shapes = flow.replace(", ", ","), shapes.replace(", ", ",")
    bad = _NOT_FLOW_CHAR.search(shapes) or next(filter(None, (bad.search(shapes) for bad in _BAD_FLOW)), None) \
        or (longest >= _LONG_PLAIN_CHARACTERS and _LONG_PLAIN.search(shapes))
    if bad or max(map(len, bodies), default=0) > MAX_QUOTED:
        raise FastPathUnavailable(f"a flow value this reader leaves to libyaml (near {bad and bad.group()!r})")
    pairs = flow.count(": ")
    for typed, marked_before in _MAY_BE_TYPED:
        if typed.search(shapes):
            flow = typed.sub(marked_before, flow)
    flow = _as_json(flow, comma)
    if "$" in flow:
        flow = _HOLDS_DOLLAR.sub('"\x01', flow)
    marked = "\x01" in flow or "$" in "".join(bodies)
    if bodies:
        parts = flow.split("\x00")
        if len(parts) != len(bodies) + 1:
            raise FastPathUnavailable("a quoted scalar outside the flow values")
        pieces = parts + bodies  # as long as they are, in turn
        pieces[0::2], pieces[1::2] = parts, bodies
        flow = "".join(pieces)
    return _Flow(_line_values(flow), pairs, marked, shapes, counts, comma)


def _shapes(flow: str) -> tuple[str, list[int]]:
    """Each distinct line of `flow` once, its digits written `0`, after a line break, and how
    many lines each is: what the checks of a flow value look at (a character, the two before
    it and what follows it on its line: a digit for any other), in a fraction of the text of a
    large file, whose lines differ mostly by the digits of names."""
    counts = Counter(flow.translate(_DIGITS_AS_ZERO).split("\n"))
    return "\n" + "\n".join(counts), list(counts.values())


def _as_json(flow: str, comma: tuple[str, str]) -> str:
    """The lines of `flow` (checked, quoted scalars as `\\x00`) as the JSON text of an array, each
    line's value wrapped in a mapping of one key (`_WRAP`): so that a value that does not end on
    its line cannot go unnoticed (`_line_values`)."""
    for indicator, written in (comma, *_TO_JSON):
        flow = flow.replace(indicator, written)
    return ('[{"\\u0002":"' + flow + '"}]').replace('""', "")


def _line_values(text: str) -> list[Any]:
    """The value of each line of JSON text from `_as_json`; FastPathUnavailable when JSON does
    not read it, or a value does not end on its line."""
    try:
        wrapped = json.loads(text, strict=False)  # the marks are control characters
    except (ValueError, RecursionError) as error:
        raise FastPathUnavailable(f"a flow value JSON does not read: {error}") from None
    values = [value.pop(_WRAP, None) for value in wrapped]
    if any(wrapped):
        raise FastPathUnavailable("a flow value that does not end on its line")
    return values


def _place(flow: _Flow, reading: _Reading, max_depth: int, keep_once: bool) -> None:
    """Each flow value in its place, its texts kept once (with `keep_once`) and counted, its
    marked plain scalars typed: walked with paths when one is marked (`_Walk`), else at once
    (`_walk`, or the shapes of the lines counted in its stead: `_counted_by_shapes`)."""
    values = flow.values
    if flow.marked:
        walk = _Walk(reading, max_depth)
        for run in reading.runs:
            chunk = values[run.first:run.first + run.size]
            if isinstance(run.key, int):  # items of a sequence
                _put(run, [walk.value(value, (*run.path, run.key + index), False) for index, value in enumerate(chunk)])
            else:
                _put(run, [walk.value(chunk[0], (*run.path, run.key), reading.is_text_map(run.path))])
        found = walk.pairs
    else:
        setdefault = reading.shared.setdefault if keep_once else None
        if setdefault is not None:
            for index in [index for index, value in enumerate(values) if type(value) is str]:
                values[index] = setdefault(values[index], values[index])
        for run in reading.runs:
            _put(run, values[run.first:run.first + run.size])
        counted = None if keep_once else _counted_by_shapes(flow)
        found, nodes, levels = _walk(values, setdefault) if counted is None else counted
        reading.nodes += nodes
        if reading.deepest + levels > max_depth:
            raise FastPathUnavailable("nesting deeper than the limit")
    if found != flow.pairs:
        raise FastPathUnavailable("a key written twice in a flow mapping")


def _put(run: _Run, values: list[Any]) -> None:
    if isinstance(run.key, int):
        run.container[run.key:run.key + run.size] = values
    else:
        run.container[run.key] = values[0]


def _counted_by_shapes(flow: _Flow) -> tuple[int, int, int] | None:
    """`_walk` of the unmarked flow values, without keeping texts once, counted from their lines'
    shapes, each walked once (a line's structure is its shape's); None when the shapes cannot
    tell, or are too many to be worth it (the module docstring says which)."""
    if len(flow.counts) * LINES_PER_SHAPE > len(flow.values):
        logger.debug("flow values walked, not counted by shape: %d shapes of %d lines", len(flow.counts),
                     len(flow.values))
        return None
    if "\x00: " in flow.shapes:
        logger.debug("flow values walked, not counted by shape: a quoted key, which a shape cannot tell from another")
        return None
    lines = flow.shapes[1:].split("\n")
    shapes = _line_values(_as_json(flow.shapes[1:], flow.comma).replace("\x00", ""))
    pairs = nodes = levels = 0
    for line, shape, count in zip(lines, shapes, flow.counts, strict=True):
        shape_pairs, shape_nodes, shape_levels = _walk([shape], None)
        if shape_pairs != line.count(": "):
            logger.debug("flow values walked, not counted by shape: two keys alike in a shape (%r)", line[:80])
            return None
        pairs += count * shape_pairs
        nodes += count * shape_nodes
        levels = max(levels, shape_levels)
    return pairs, nodes, levels


def _walk(values: list[Any], setdefault: Callable[[str, str], str] | None) -> tuple[int, int, int]:
    """How many keys the mappings below `values` hold (none is marked), how many values their
    collections hold, and how many levels deep they nest; their texts kept once through
    `setdefault` (`shared`'s), unless None."""
    pairs = nodes = levels = 0
    level = [value for value in values if type(value) is dict or type(value) is list]
    while level:
        below: list[Any] = []
        entries = 0
        for container in level:
            entries += len(container)
            if type(container) is dict:
                pairs += len(container)
                for key, item in container.items():
                    kind = type(item)
                    if kind is str:
                        if setdefault is not None:
                            container[key] = setdefault(item, item)
                    elif kind is dict or kind is list:
                        below.append(item)
            else:
                for index, item in enumerate(container):
                    kind = type(item)
                    if kind is str:
                        if setdefault is not None:
                            container[index] = setdefault(item, item)
                    elif kind is dict or kind is list:
                        below.append(item)
        nodes += entries
        levels += entries > 0
        level = below
    return pairs, nodes, levels


class _Walk:
    """The values of a file with marked plain scalars, walked with their paths as the plain road
    reads them: the marked ones typed (in text maps, kept as written), `${VAR}` values noted."""

    def __init__(self, reading: _Reading, max_depth: int):
        self.reading = reading
        self.max_depth = max_depth
        self.setdefault = reading.shared.setdefault
        self.pairs = 0

    def value(self, value: Any, path: DataPath, as_text: bool) -> Any:
        if len(path) > self.max_depth:
            raise FastPathUnavailable("nesting deeper than the limit")
        kind = type(value)
        if kind is str:
            if value[:1] == _MARK:
                return _plain(value[1:], path, as_text, self.reading)
            if "$" in value and ("${" in value or "$$" in value):
                self.reading.templates[path] = value
                return value
            return self.setdefault(value, value)
        self.reading.nodes += len(value)
        if kind is list:
            return [self.value(item, (*path, index), False) for index, item in enumerate(value)]
        self.pairs += len(value)
        result: dict[str, Any] = {}
        text_map = self.reading.is_text_map(path)
        for written, item in value.items():
            key = written[1:] if written[:1] == _MARK else written
            key = self.setdefault(key, key)
            if key in result:
                raise FastPathUnavailable("a key written twice")
            result[key] = self.value(item, (*path, key), text_map)
        return result
