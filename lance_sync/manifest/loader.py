"""Read manifest YAML into plain data that remembers where every value came from.

`load_document` turns one file into a `Document`: the data (dicts, lists, scalars), the
position of every value (file, line, column), and the raw text of every value that was
written with `${VAR}` (lance_sync.manifest.merge lays overlays over a base, positions and
all), so later stages can name the line of a problem in any of the files.

Plain scalars are typed by YAML 1.2's core schema (`yaml_core`), not PyYAML's YAML 1.1: `no`
is text, `010` is refused by every typed field. The values of free-form text maps
(`TEXT_MAPS`: catalog properties and the like) are kept exactly as written, whatever YAML
would make of them; only a null there (`~`, empty) stays None, for validation to refuse.

`parse_plain` reads the same data and templates without positions, from libyaml's event
stream instead of a tree of YAML nodes: many times faster and without the node tree in
memory, which is what a manifest of 100,000 tables needs. It takes plain documents only
(mappings, sequences and scalars; no anchors, aliases, merge keys or explicit tags) and
raises `FastPathUnavailable` for anything else or any problem: the caller then loads the
file with `load_document`, which says exactly what is wrong and where. Which file is parsed
when, and where (once per version, in worker processes, or read back from the parse cache),
is lance_sync.manifest.parsing's.

A file written as JSON is read by the json module where the two read alike
(lance_sync.manifest.yaml_core: `read_json`), and a file in the YAML large manifests are written
in (a block mapping of one-line flow collections and scalars) by the json module too, where
lance_sync.manifest.common_yaml is sure the two read alike; libyaml reads the others.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from lance_sync.manifest.common_yaml import read_common_yaml
from lance_sync.manifest.strategy import FastPathUnavailable
from lance_sync.manifest.yaml_core import NULLS, LeadingZero, plain_value, read_json
from lance_sync.model.errors import ManifestError, Position
from lance_sync.model.variables import REFERENCE

logger = logging.getLogger(__name__)

#: A path into the data: mapping keys and list indices.
DataPath = tuple[str | int, ...]

#: About 100,000 tables; a larger set is split into files laid over each other (`-f` more than
#: once: tables are merged by name), each checked against this limit.
MAX_FILE_BYTES = 16 * 1024 * 1024
#: Values produced while expanding one file: this many, plus one per BYTES_PER_VALUE bytes of
#: it (a file cannot write values more densely without aliases). A YAML alias bomb stops here,
#: not in memory.
MAX_NODES = 200_000
BYTES_PER_VALUE = 4
MAX_DEPTH = 64

#: The mappings whose values are free-form text, kept as written: catalog properties, a table
#: source's reader options, Spark settings, a backend's storage options. In a pattern, `int`
#: stands for any list index and `str` for any mapping key.
TEXT_MAPS: tuple[tuple[str | type, ...], ...] = (
    ("namespaces", int, "properties"),
    ("tables", int, "properties"),
    ("tables", int, "source", "options"),
    ("spark", "conf"),
    ("backends", str, "storage"),
    ("storage",),
)
#: TEXT_MAPS by the length, first and last element of their paths (each is told apart by these)
_TEXT_MAPS_BY_ENDS: dict[tuple[int, object, object], tuple[str | type, ...]] = {
    (len(pattern), pattern[0], pattern[-1]): pattern for pattern in TEXT_MAPS}

_MERGE_KEY_TAG = "tag:yaml.org,2002:merge"
_STRING_TAG = "tag:yaml.org,2002:str"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
#: what the loader tags a plain scalar with: `_Builder` types it (`yaml_core.plain_value`)
_PLAIN_TAG = "tag:lance-sync.dev,2026:plain"
_NULL_TAG = "tag:yaml.org,2002:null"
_FLOAT_TAG = "tag:yaml.org,2002:float"
#: explicit tags that `yaml_core` reads: what each names, and the types of value it takes
_CORE_TAGS: dict[str, tuple[str, tuple[type, ...]]] = {
    _NULL_TAG: ("null", (type(None),)), "tag:yaml.org,2002:bool": ("a boolean", (bool,)),
    "tag:yaml.org,2002:int": ("an integer", (int, LeadingZero)), _FLOAT_TAG: ("a float", (float, int)),
}


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's loader when pyyaml was built with it (much faster: bench/bench_cli.py), else the
    pure-Python one, that leaves plain scalars untyped (`_PLAIN_TAG`) but for merge keys (`<<`)."""

    yaml_implicit_resolvers = {"<": [(_MERGE_KEY_TAG, re.compile(r"<<\Z"))],
                               None: [(_PLAIN_TAG, re.compile(""))]}


@dataclass
class Document:
    """Manifest data with the origin of every value."""

    data: Any
    positions: dict[DataPath, Position] = field(default_factory=dict)
    key_positions: dict[DataPath, Position] = field(default_factory=dict)
    #: raw text of each value that referenced the environment, e.g. "${UC_TOKEN}"
    templates: dict[DataPath, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    #: values whose variables are not set (read with allow_unset): path -> variable names; the
    #: value keeps the references as written
    unset: dict[DataPath, list[str]] = field(default_factory=dict)
    #: the text, as written, of each value YAML typed as something else than text (null, a
    #: boolean, a number): messages quote it back, e.g. "write it in quotes: '010'"
    written: dict[DataPath, str] = field(default_factory=dict)
    #: per keyed list (`_KEYED_LISTS`) a merge built: each entry's key -> its index, so that
    #: the next overlay's merge costs what the overlay holds, not what the base holds
    key_index: dict[str, dict[Any, int]] = field(default_factory=dict)
    #: the templates written unquoted outside a text map, whose value is typed as YAML 1.2
    #: types a plain scalar (`${PORT}` reads 8080 as a number); filled by the plain road
    typed_templates: frozenset[DataPath] = frozenset()

    def position(self, path: DataPath) -> Position | None:
        """The position of the value at `path`, or of its nearest enclosing value."""
        if not self.positions:
            return None  # a plain document (load_plain_document)
        for end in range(len(path), -1, -1):
            found = self.positions.get(path[:end])
            if found:
                return found
        return None

    def key_position(self, path: DataPath) -> Position | None:
        return self.key_positions.get(path) or self.position(path)


def load_document(path: str | os.PathLike, environ: Mapping[str, str] | None = None,
                  allow_unset: bool = False) -> Document:
    """Parse one manifest file; raises ManifestError with the file and line of any problem.

    A `${VAR}` whose variable is not set (and has no default) is an error, unless
    `allow_unset`: then the reference stays in the value as written and `Document.unset`
    records it (`lance-sync validate` checks a manifest without its secrets)."""
    name = str(path)
    text = _read_text(Path(path), name)
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = error.problem or error.context or "invalid YAML"
        raise ManifestError(f"invalid YAML: {problem}", _position(name, mark)) from None
    except yaml.YAMLError as error:
        raise ManifestError(f"invalid YAML: {error}", Position(name, 1, 1)) from None
    if root is None:
        raise ManifestError("the file is empty; a manifest needs at least 'version: 1', an 'owner' and its "
                            "'backends' (lance-sync schema manifest prints the whole schema)", Position(name, 1, 1))
    builder = _Builder(name, os.environ if environ is None else environ, allow_unset, node_limit(text))
    data = builder.build(root, ())
    return Document(data, builder.positions, builder.key_positions, builder.templates, [name], builder.unset,
                    builder.written)


def parse_plain(name: str, raw: bytes, environ: Mapping[str, str] | None,
                shared: dict[str, str] | None, keep_once: bool = True) -> Document:
    """A file's bytes read as a plain document (`load_plain_document` parses with this);
    FastPathUnavailable when the file needs `load_document`. `keep_once` false: the caller
    drops the data once it has read it, and the common YAML road does not walk it to keep its
    texts once (lance_sync.manifest.common_yaml)."""
    try:
        text = decode(raw, name)
    except ManifestError as error:
        raise FastPathUnavailable(str(error)) from None
    shared = {} if shared is None else shared
    written: dict[DataPath, str] = {}
    try:
        data = read_json(text, shared, TEXT_MAPS, written)
        return Document(data, templates=resolve_templates(name, data, written, (), environ), files=[name])
    except FastPathUnavailable as unavailable:
        logger.debug("%s: not read by the json module (%s); reading it as YAML", name, unavailable)
    try:
        data, written, typed = read_common_yaml(text, shared, node_limit(text), MAX_DEPTH, is_text_map, keep_once)
        templates = resolve_templates(name, data, written, frozenset(typed), environ)
        return Document(data, templates=templates, typed_templates=frozenset(path for path in typed if path in templates),
                        files=[name])
    except FastPathUnavailable as unavailable:
        logger.debug("%s: not read as common YAML (%s); reading it with libyaml", name, unavailable)
    part = parse_plain_text(name, text, environ, shared)
    return Document(part.data, templates=part.templates, typed_templates=part.typed_templates, files=[name])


class PlainPart(NamedTuple):
    """What the plain road read from a text: the data, its templates, and how many values it
    counts against the limit (`node_limit`)."""

    data: Any
    templates: dict[DataPath, str]
    typed_templates: frozenset[DataPath]
    values: int


def parse_plain_text(name: str, text: str, environ: Mapping[str, str] | None, shared: dict[str, str] | None = None,
                     item_at: DataPath | None = None, max_nodes: int | None = None) -> PlainPart:
    """`parse_plain` of decoded text. With `item_at`, `text` is a block sequence of one item
    written alone, and the item is built as the value at that path of the file
    (lance_sync.manifest.parsing: reparse): text maps, templates and depth are those of its place."""
    try:
        builder = _PlainBuilder(name, os.environ if environ is None else environ, text,
                                node_limit(text) if max_nodes is None else max_nodes, shared)
        data = builder.document() if item_at is None else builder.item(item_at)
    except (ManifestError, yaml.YAMLError, StopIteration) as error:
        raise FastPathUnavailable(str(error)) from None
    templates = builder.templates
    return PlainPart(data, templates, frozenset(path for path in builder.typed if path in templates),
                     builder.nodes_built)


def resolve_templates(name: str, data: Any, templates: Mapping[DataPath, str], typed: Collection[DataPath],
                      environ: Mapping[str, str] | None) -> dict[DataPath, str]:
    """Set each template's value in `data` as the plain road reads it in `environ` (the parse
    cache keeps none: a variable may hold a secret); `typed` as `Document.typed_templates`.
    The templates that referenced a variable (not those with only `$$`), as `Document.templates`.
    FastPathUnavailable when one does not read (a variable not set), or has no place in `data`."""
    builder = _Builder(name, os.environ if environ is None else environ)
    try:
        for path, text in templates.items():
            value = builder.interpolate(ScalarEvent(None, None, (True, False), text), path)
            value_at(data, path[:-1])[path[-1]] = _resolve_plain(value) if path in typed else value
    except (ManifestError, LookupError, TypeError) as error:
        raise FastPathUnavailable(str(error)) from None
    return builder.templates


#: where manifest files are read from: the working tree, or (`reading_files_with`) another
#: source, such as a git revision (lance_sync.manifest.history)
_FILE_READER: ContextVar[Callable[[Path], bytes] | None] = ContextVar("manifest_file_reader", default=None)


@contextlib.contextmanager
def reading_files_with(reader: Callable[[Path], bytes]) -> Iterator[None]:
    """Manifest files (and policy files) are read with `reader` in this block: it answers a
    path's bytes, or raises FileNotFoundError."""
    token = _FILE_READER.set(reader)
    try:
        yield
    finally:
        _FILE_READER.reset(token)


def _read_bytes(path: Path) -> bytes:
    reader = _FILE_READER.get()
    if reader is not None:
        return reader(path)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise _TooLarge(size)
    return path.read_bytes()


class _TooLarge(Exception):
    def __init__(self, size: int):
        super().__init__(size)
        self.size = size


def _read_text(path: Path, name: str) -> str:
    return decode(read_raw(path, name), name)


def read_raw(path: Path, name: str) -> bytes:
    """A manifest file's bytes (see `reading_files_with`); ManifestError when it cannot be read or is too large."""
    try:
        raw = _read_bytes(path)
        if len(raw) > MAX_FILE_BYTES:
            raise _TooLarge(len(raw))
    except _TooLarge as large:
        raise ManifestError(f"the file is {large.size} bytes; manifests are limited to {MAX_FILE_BYTES}",
                            Position(name, 1, 1)) from None
    except FileNotFoundError:
        raise ManifestError(f"no such file: {name}") from None
    except IsADirectoryError:
        raise ManifestError("is a directory, not a manifest file", Position(name, 1, 1)) from None
    except OSError as error:
        raise ManifestError(f"cannot read: {error.strerror}", Position(name, 1, 1)) from None
    return raw


def decode(raw: bytes, name: str) -> str:
    """A manifest file's text; ManifestError (with the line and column) when it is not UTF-8."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        raise ManifestError(f"not UTF-8: byte 0x{raw[error.start]:02x} cannot be decoded",
                            Position(name, line, column)) from None
    return text.removeprefix("\ufeff")


def node_limit(text: str) -> int:
    """How many values a file of this text may expand to (`MAX_NODES`)."""
    return MAX_NODES + len(text) // BYTES_PER_VALUE


def _position(name: str, mark: yaml.Mark | None) -> Position:
    if mark is None:
        return Position(name, 1, 1)
    return Position(name, mark.line + 1, mark.column + 1)


def is_text_map(path: DataPath) -> bool:
    """Whether the mapping at `path` is one of TEXT_MAPS, whose values are kept as written
    (asked of every mapping a manifest holds: a dictionary lookup for nearly all)."""
    pattern = _TEXT_MAPS_BY_ENDS.get((len(path), path[0], path[-1])) if path else None
    if pattern is None:
        return False
    for expected, element in zip(pattern, path, strict=True):
        matches = isinstance(element, expected) if isinstance(expected, type) else element == expected
        if not matches:
            return False
    return True


class _Builder:
    """Turns a composed YAML node tree into data, recording positions as it goes."""

    def __init__(self, name: str, environ: Mapping[str, str], allow_unset: bool = False,
                 max_nodes: int = MAX_NODES):
        self.name = name
        self.environ = environ
        self.allow_unset = allow_unset
        self.max_nodes = max_nodes
        self.positions: dict[DataPath, Position] = {}
        self.key_positions: dict[DataPath, Position] = {}
        self.templates: dict[DataPath, str] = {}
        self.unset: dict[DataPath, list[str]] = {}
        self.written: dict[DataPath, str] = {}
        self.nodes_built = 0

    def build(self, node: Node, path: DataPath, as_text: bool = False) -> Any:
        """The data of `node`; with `as_text` (a value of a text map) a scalar as written."""
        self.nodes_built += 1
        if self.nodes_built > self.max_nodes:
            raise ManifestError(f"the document expands to more than {self.max_nodes} values "
                                "(an alias bomb?)", self.at(node))
        if len(path) > MAX_DEPTH:
            raise ManifestError(f"nesting deeper than {MAX_DEPTH} levels", self.at(node))
        self.positions[path] = self.at(node)
        if isinstance(node, MappingNode):
            return self.mapping(node, path)
        if isinstance(node, SequenceNode):
            return [self.build(item, (*path, index)) for index, item in enumerate(node.value)]
        if as_text and (node.tag in (_PLAIN_TAG, _STRING_TAG) or node.tag in _CORE_TAGS):
            return self.text(node, path)
        return self.scalar(node, path)

    def at(self, node: Node | Event) -> Position:
        return _position(self.name, node.start_mark)

    def mapping(self, node: MappingNode, path: DataPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        as_text = is_text_map(path)
        for key_node, value_node in self.entries(node):
            if not isinstance(key_node, ScalarNode):
                raise ManifestError("mapping keys must be plain strings", self.at(key_node))
            key = str(key_node.value)
            if key in result:
                raise ManifestError(f"duplicate key '{key}'", self.at(key_node))
            key_path = (*path, key)
            self.key_positions[key_path] = self.at(key_node)
            result[key] = self.build(value_node, key_path, as_text)
        return result

    def entries(self, node: MappingNode) -> Iterator[tuple[Node, Node]]:
        """The mapping's own entries, then those pulled in by YAML merge keys (`<<: *base`)."""
        merged: list[tuple[Node, Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_KEY_TAG:
                sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
                for source in sources:
                    if not isinstance(source, MappingNode):
                        raise ManifestError("'<<' must merge a mapping", self.at(source))
                    merged.extend(source.value)
            else:
                yield key_node, value_node
        own = {k.value for k, _ in node.value if isinstance(k, ScalarNode)}
        seen: set[str] = set()
        for key_node, value_node in merged:
            if key_node.value not in own and key_node.value not in seen:
                seen.add(key_node.value)
                yield key_node, value_node

    def scalar(self, node: ScalarNode, path: DataPath) -> Any:
        text = node.value
        if node.tag == _PLAIN_TAG:
            value = plain_value(text)
            if value is not text:
                self.written[path] = text
                return value
            return text if "$" not in text else _resolve_plain(self.interpolate(node, path))
        if node.tag == _STRING_TAG:
            return text if "$" not in text else self.interpolate(node, path)
        if node.tag in _CORE_TAGS:
            return self.tagged(node, path)
        if node.tag in (_TIMESTAMP_TAG, _MERGE_KEY_TAG):
            return text  # a date stays as written (manifests hold catalog strings), and `<<` as a value
        try:
            return yaml.SafeLoader("").construct_object(node, deep=True)
        except yaml.YAMLError as error:
            problem = getattr(error, "problem", None) or str(error)
            raise ManifestError(f"invalid YAML: {problem}", self.at(node), _field(path)) from None

    def tagged(self, node: ScalarNode, path: DataPath) -> Any:
        """A scalar with an explicit core tag (`!!int 5`), read as YAML 1.2 reads its text."""
        value = plain_value(node.value)
        name, types = _CORE_TAGS[node.tag]
        if type(value) not in types:
            raise ManifestError(f"invalid YAML: {node.value!r} is not {name} in YAML 1.2", self.at(node),
                                _field(path))
        self.written[path] = node.value
        return float(value) if node.tag == _FLOAT_TAG else value

    def text(self, node: ScalarNode, path: DataPath) -> str | None:
        """A value of a text map: its text as written (after ${VAR}); None for a YAML null."""
        text = node.value
        if node.tag == _NULL_TAG:
            return self.tagged(node, path)  # None, or not null at all
        if node.tag == _PLAIN_TAG and text in NULLS:
            self.written[path] = text
            return None
        if "$" in text and node.tag in (_PLAIN_TAG, _STRING_TAG):
            return self.interpolate(node, path)
        return text

    def interpolate(self, node: ScalarNode | ScalarEvent, path: DataPath) -> str:
        text = node.value
        used = False

        def replace(match: re.Match[str]) -> str:
            nonlocal used
            if match.group(0) == "$$":
                return "$"
            used = True
            variable, default = match.group(1), match.group(2)
            value = self.environ.get(variable)
            if value in (None, "") and default is not None:
                return default
            if value is None and self.allow_unset:
                self.unset.setdefault(path, []).append(variable)
                return match.group(0)
            if value is None:
                raise ManifestError(f"environment variable '{variable}' is not set "
                                    "(give a default with ${" + variable + ":-value})", self.at(node),
                                    _field(path))
            return value

        result = REFERENCE.sub(replace, text)
        if used:
            self.templates[path] = text
        elif "${" in text:
            raise ManifestError(f"malformed variable reference in '{text}' "
                                "(use ${NAME} or ${NAME:-default}; write $$ for a literal $)",
                                self.at(node), _field(path))
        return result


class _PlainBuilder:
    """Builds data from libyaml's events (see `load_plain_document`); FastPathUnavailable for anything else.

    Equal texts (mapping keys, backend and namespace names, property values: most of a large
    manifest) are kept once, through `shared`, which a load passes to each of its files. The
    commonest events (a plain scalar value, a collection that starts a value) are read inline:
    a large manifest is millions of them."""

    def __init__(self, name: str, environ: Mapping[str, str], text: str, max_nodes: int,
                 shared: dict[str, str] | None = None):
        #: the next event; None after the stream's end (libyaml's loader, like yaml.parse)
        self.next_event: Callable[[], Any] = _Loader(text).get_event
        self.max_nodes = max_nodes
        #: interpolates ${VAR} and records templates, as `load_document` does
        self.interpolator = _Builder(name, environ)
        self.templates = self.interpolator.templates
        self.nodes_built = 0
        self.shared: dict[str, str] = {} if shared is None else shared
        #: paths of the unquoted values outside text maps that hold a `$`
        self.typed: list[DataPath] = []

    def document(self) -> Any:
        for kind in (StreamStartEvent, DocumentStartEvent):
            self.expect(kind)
        data = self.node(self.next_event(), ())
        for kind in (DocumentEndEvent, StreamEndEvent):
            self.expect(kind)
        return data

    def item(self, path: DataPath) -> Any:
        """The one item of the block sequence that is the whole document, as the value at `path`."""
        for kind in (StreamStartEvent, DocumentStartEvent):
            self.expect(kind)
        start = self.next_event()
        if type(start) is not SequenceStartEvent or start.anchor is not None or start.tag not in (None, "!"):
            raise FastPathUnavailable("not a block sequence")
        data = self.node(self.next_event(), path)
        for kind in (SequenceEndEvent, DocumentEndEvent, StreamEndEvent):
            self.expect(kind)
        return data

    def expect(self, kind: type[Event]) -> None:
        if type(self.next_event()) is not kind:
            raise FastPathUnavailable(f"expected {kind.__name__}")

    def node(self, event: Any, path: DataPath, as_text: bool = False) -> Any:
        kind = type(event)
        if kind is ScalarEvent:
            self.count(path)
            return self.text(event, path) if as_text else self.scalar(event, path)
        return self.collection(event, path)

    def count(self, path: DataPath) -> None:
        """One more value, at `path`: FastPathUnavailable past the limits."""
        self.nodes_built += 1
        if self.nodes_built > self.max_nodes or len(path) > MAX_DEPTH:
            raise FastPathUnavailable("too big or too deep")

    def collection(self, event: Any, path: DataPath) -> Any:
        """The mapping or sequence `event` starts."""
        self.count(path)
        kind = type(event)
        if kind not in (MappingStartEvent, SequenceStartEvent) or event.anchor is not None \
                or event.tag not in (None, "!"):
            raise FastPathUnavailable("an alias, an anchor or a tag")
        return self.sequence(path) if kind is SequenceStartEvent else self.mapping(path)

    def sequence(self, path: DataPath) -> list[Any]:
        items: list[Any] = []
        next_event = self.next_event
        while True:
            item = next_event()
            kind = type(item)
            if kind is SequenceEndEvent:
                return items
            if kind is ScalarEvent:
                items.append(self.node(item, (*path, len(items))))
            elif item is None:
                raise FastPathUnavailable("the document ended inside a sequence")
            else:
                items.append(self.collection(item, (*path, len(items))))

    def mapping(self, path: DataPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        values_as_text = is_text_map(path)
        next_event, shared = self.next_event, self.shared
        while True:
            key = next_event()
            kind = type(key)
            if kind is MappingEndEvent:
                return result
            if kind is not ScalarEvent or key.anchor is not None or key.tag not in (None, "!") \
                    or (key.implicit[0] and key.value == "<<") or key.value in result:
                raise FastPathUnavailable("a key that is not a plain string, a merge key, or a duplicate")
            name = shared.setdefault(key.value, key.value)
            value = next_event()
            kind = type(value)
            if kind is not ScalarEvent:
                result[name] = self.collection(value, (*path, name))
                continue
            # the most common value, inline: an untagged plain scalar without ${VAR}, as `scalar`
            # reads it
            text = value.value
            if not values_as_text and value.tag is None and value.anchor is None \
                    and value.implicit[0] and "$" not in text:
                self.nodes_built += 1
                if self.nodes_built > self.max_nodes or len(path) >= MAX_DEPTH:
                    raise FastPathUnavailable("too big or too deep")
                typed = plain_value(text)
                result[name] = shared.setdefault(text, text) if typed is text else typed
            else:
                result[name] = self.node(value, (*path, name), values_as_text)

    def scalar(self, event: ScalarEvent, path: DataPath) -> Any:
        if event.anchor is not None or event.tag not in (None, "!"):
            raise FastPathUnavailable("an anchor or a tag")
        text = event.value
        if event.implicit[0]:  # plain
            value = plain_value(text)
            if value is not text:
                return value
            if "$" not in text:
                return self.shared.setdefault(text, text)
            self.typed.append(path)
            return _resolve_plain(self.interpolator.interpolate(event, path))  # an event has a node's marks
        return self.shared.setdefault(text, text) if "$" not in text else self.interpolator.interpolate(event, path)

    def text(self, event: ScalarEvent, path: DataPath) -> str | None:
        """A value of a text map, as `_Builder.text` reads it."""
        if event.anchor is not None or event.tag not in (None, "!"):
            raise FastPathUnavailable("an anchor or a tag")
        text = event.value
        if event.implicit[0] and text in NULLS:
            return None
        return self.shared.setdefault(text, text) if "$" not in text else self.interpolator.interpolate(event, path)


def _resolve_plain(text: str) -> Any:
    """Type an interpolated unquoted value as YAML 1.2 types a plain scalar (8080 -> int),
    except that it is never null: an empty variable gives empty text."""
    value = plain_value(text)
    return text if value is None else value


def value_at(data: Any, path: DataPath) -> Any:
    """The value at `path` in `data`; LookupError or TypeError when there is none."""
    for element in path:
        data = data[element]
    return data


def _field(path: DataPath) -> str:
    return format_path(path)


def format_path(path: DataPath) -> str:
    """A data path as a field name: tables[2].register[0].backend."""
    parts: list[str] = []
    for element in path:
        if isinstance(element, int):
            parts.append(f"[{element}]")
        else:
            parts.append(("." if parts else "") + element)
    return "".join(parts) or "(document)"

