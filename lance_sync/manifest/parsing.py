"""Each version of a manifest file is parsed once: read back from the parse cache, parsed in
a worker process, read from the parse of its earlier version, or parsed here.

`Parsing` holds the files of one load, or of one `--changed-since` comparison (which reads a
file the revision has as it is now once, for both sides): `start` parses large files in
worker processes (lance_sync.manifest.workers) while this process goes on, and `document`
gives a version's document, from wherever it comes. The plain road (lance_sync.manifest.loader)
parses; FastPathUnavailable says a file needs the full road.

The parse cache keeps parsed files by content, so that a large file is parsed once, not on
every run. Parsing YAML is most of the time of loading a large manifest (about 16 s of CPU
per million tables); reading a parse back takes a seventh of that. An entry is named by the
SHA-256 of the file's bytes, with the Python version and `FORMAT` (the plain road's output),
so an entry can never be stale. Only what a file says by itself is kept: a value that refers
to the environment (`${VAR}`, which may be a secret) is kept as written, and read again in
the environment of the run that reads the entry back. Files under `MIN_BYTES` are not worth
it. The folder is `$LANCE_SYNC_CACHE`, else `$XDG_CACHE_HOME/lance-sync`, else
`~/.cache/lance-sync`; `LANCE_SYNC_CACHE=off` turns the cache off. It holds at most
`MAX_ENTRIES` files, the least recently used removed first. An entry that does not read back
is ignored and parsed again; a folder that cannot be written only costs the saving.

`reparse` reads a new version of a large file from the parse of its earlier version: a pull
request changes a few tables of a file that holds 50,000 of them, and the earlier version's
parse is at hand (the parse cache, or a worker that parsed both). It splits both versions'
text the same way: the lines before the file's longest list, that list's items, the lines
after it. An item whose text the earlier version has is that version's item; only the others
are parsed, each alone. It answers only when that is sure to be what parsing the new text
whole gives, else None (and the caller parses whole):
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

import contextlib
import functools
import hashlib
import logging
import marshal
import os
import pickle
import re
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from lance_sync.manifest import loader
from lance_sync.manifest.loader import DataPath, Document
from lance_sync.manifest.strategy import FastPathUnavailable
from lance_sync.manifest.workers import Workers, forking_pays
from lance_sync.model.errors import ManifestError

logger = logging.getLogger(__name__)

#: Files of this many bytes in all, or more, that are still to parse are parsed in worker
#: processes, a file each (`Parsing.start`): parsing is most of the time of loading a large
#: manifest, and a worker's document reads back in a fraction of the time it takes to parse.
PARALLEL_BYTES = 4 * 1024 * 1024
#: ... or this many, when this process has work to do meanwhile (`Parsing`'s `meanwhile`)
MEANWHILE_BYTES = 1024 * 1024


def read_files(paths: Sequence[str | os.PathLike]) -> list[tuple[str, bytes]]:
    """Each file's name and bytes (lance_sync.manifest.loader.read_raw); FastPathUnavailable
    when one cannot be read, for the full road to say why."""
    try:
        return [(str(path), loader.read_raw(Path(path), str(path))) for path in paths]
    except ManifestError as error:
        raise FastPathUnavailable(str(error)) from None


def load_plain_documents(paths: Sequence[str | os.PathLike], environ: Mapping[str, str] | None = None,
                         meanwhile: Callable[[], None] | None = None, keep_once: bool = True) -> list[Document]:
    """Each file's document by the plain road, in order (large files parsed in worker
    processes, see `Parsing`); FastPathUnavailable when one needs the full road. Equal texts
    are kept once across the files, unless `keep_once` is false (see `Parsing`)."""
    files = read_files(paths)
    with Parsing(environ, meanwhile, keep_once) as parsing:
        parsing.start(files)
        return [parsing.document(name, raw) for name, raw in files]


def load_plain_document(path: str | os.PathLike, environ: Mapping[str, str] | None = None,
                        keep_once: bool = True) -> Document:
    """One file's document by the plain road; FastPathUnavailable when it needs the full road.
    `keep_once` false: see `Parsing`."""
    return load_plain_documents([path], environ, keep_once=keep_once)[0]


class Parsing:
    """The files of one load, or one comparison: each version (name, bytes) is parsed once, and
    its document shared (nothing changes a document: merges build new ones, and validation
    consumes a copy of the tables list). For one environment only. `meanwhile` runs once, the
    first time this process takes a worker's document, before it waits for it: work that comes
    next anyway (such as importing the planner), done while the worker parses. `keep_once`
    false: the caller reads the documents once and drops them (a worker that answers rows made
    of them), and the texts of a file parsed here are kept once only when the parse cache keeps
    it (lance_sync.manifest.loader: parse_plain). Used as a context manager: leaving the block
    ends the workers."""

    def __init__(self, environ: Mapping[str, str] | None, meanwhile: Callable[[], None] | None = None,
                 keep_once: bool = True):
        self.environ = environ
        self.meanwhile = meanwhile
        self.keep_once = keep_once
        #: one copy of each text across the files
        self.shared: dict[str, str] = {}
        self.documents: dict[tuple[str, bytes], Document] = {}
        #: the versions workers parse: their task, and the version's place in its answer
        self.pending: dict[tuple[str, bytes], tuple[int, int]] = {}
        self.workers: Workers | None = None
        #: each task's answers, read back, until its versions are taken
        self.answers: dict[int, list[Any] | None] = {}

    def __enter__(self) -> Parsing:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self.workers is not None:
            self.workers.close()

    def document(self, name: str, raw: bytes, earlier_raw: bytes | None = None) -> Document:
        """The document of this version of the file: known already, from its worker, from the
        parse cache, read from the parse of its version `earlier_raw` (`reparse_changed`), or
        parsed here (and kept in the cache); FastPathUnavailable when it needs the full road."""
        known = self._known(name, raw)
        if known is None and earlier_raw is not None:
            known = self.reparse_changed(name, earlier_raw, raw)
        if known is not None:
            return known
        cached = cacheable(raw)  # what the cache keeps lives on: its texts are kept once
        document = loader.parse_plain(name, raw, self.environ, self.shared, self.keep_once or cached)
        if cached:
            with contextlib.suppress(ValueError):  # a LeadingZero, which marshal cannot carry
                keep(raw, marshal.dumps(_kept_form(document)))
        return self._keep(name, raw, document)

    def reparse_changed(self, name: str, earlier_raw: bytes, raw: bytes) -> Document | None:
        """The version `raw` read from the parse of its version `earlier_raw`, when that parse
        is known here, in a worker or in the parse cache: only the items that changed are
        parsed (`reparse`). None when that cannot be done, or a worker reads `raw` already."""
        if (name, raw) in self.documents:
            return self.documents[name, raw]
        if (name, raw) in self.pending:
            return None
        earlier = self._known(name, earlier_raw)
        document = reparse(name, earlier, earlier_raw, raw, self.environ) if earlier is not None else None
        if earlier is not None and document is None:
            logger.debug("%s: the changed version is parsed whole (it does not read from the earlier one)", name)
        return None if document is None else self._keep(name, raw, document)

    def _known(self, name: str, raw: bytes) -> Document | None:
        return self.documents.get((name, raw)) or self._from_worker(name, raw) or self._recalled(name, raw)

    def _keep(self, name: str, raw: bytes, document: Document) -> Document:
        self.documents[name, raw] = document
        return document

    def _recalled(self, name: str, raw: bytes) -> Document | None:
        """The document of a file parsed by an earlier run (the parse cache)."""
        document = _from_kept(name, recall(raw), self.environ)
        return None if document is None else self._keep(name, raw, document)

    def start(self, files: Sequence[tuple[str, bytes]],
              earlier: Mapping[tuple[str, bytes], bytes] | None = None) -> None:
        """Start parsing files (name, bytes) in worker processes, for `document` to take (waiting
        for the worker, if need be): this process goes on meanwhile, with the files an earlier
        run parsed (the parse cache) and whatever else it has to do. As many workers as CPUs, a
        file each; only when the files to parse are large (`PARALLEL_BYTES`, or
        `MEANWHILE_BYTES` with work to do meanwhile), this process has something to do beside a
        worker (a second file, one to read from the cache, or its work meanwhile), and forking
        pays. Otherwise, and for a file whose worker fails, files parse where they are read.
        `earlier[name, raw]` is an earlier version of a file, also among `files`: one worker
        parses both, and reads the later from the earlier's parse (`reparse`) where it can."""
        if self.workers is not None:
            return
        fresh = [(name, raw) for name, raw in files if (name, raw) not in self.documents]
        to_parse = [(name, raw) for name, raw in fresh if not kept(raw)]
        # each worker's versions, the first parsed whole: a file's changed version goes with its earlier one
        versions: dict[tuple[str, bytes], list[bytes]] = {}
        for name, raw in to_parse:
            before = (earlier or {}).get((name, raw))
            first = (name, before) if before is not None and (name, before) in versions else (name, raw)
            versions.setdefault(first, []).append(raw)
        processes = min(len(versions), os.cpu_count() or 1)
        # one file alone is worth a worker only when this process has work to do meanwhile
        too_few, threshold = (len(fresh) < 2, PARALLEL_BYTES) if self.meanwhile is None \
            else (False, min(PARALLEL_BYTES, MEANWHILE_BYTES))
        if processes < 1 or too_few or not forking_pays() or sum(len(raw) for _, raw in to_parse) < threshold:
            return
        environ = dict(os.environ if self.environ is None else self.environ)
        groups = list(versions.items())
        try:
            self.workers = Workers([functools.partial(_parse_in_worker, name, raws, environ)
                                    for (name, _), raws in groups], processes)
        except OSError as error:
            logger.debug("no worker processes (%s): the files parse here", error)
            return
        for task, ((name, _), raws) in enumerate(groups):
            for place, raw in enumerate(raws):
                self.pending[name, raw] = (task, place)

    def _from_worker(self, name: str, raw: bytes) -> Document | None:
        """The document a worker parsed, waiting for it; None when no worker parses this
        version, or its worker failed (then this process parses it)."""
        task, place = self.pending.pop((name, raw), (None, 0))
        if task is None or self.workers is None:
            return None
        if self.meanwhile is not None:  # whether the worker is done yet or not: the same work either way
            meanwhile, self.meanwhile = self.meanwhile, None
            meanwhile()
        if task not in self.answers:
            answer = self.workers.answer(task)
            self.answers[task] = pickle.loads(answer) if answer is not None else None
        answers = self.answers[task]
        kept_form = answers[place] if answers is not None else None
        if kept_form is None:
            logger.debug("%s: its worker did not parse it; parsing it here", name)
            return None
        assert answers is not None
        answers[place] = None  # taken: it lives on in the document only
        if isinstance(kept_form, bytes) and cacheable(raw):
            keep(raw, kept_form)
        document = _from_kept(name, marshal.loads(kept_form) if isinstance(kept_form, bytes) else kept_form,
                              self.environ)
        return None if document is None else self._keep(name, raw, document)


def _parse_in_worker(name: str, versions: list[bytes], environ: dict[str, str]) -> bytes:
    """A worker's `parse_plain` of each version of a file, in order, each after the first read
    from the one before where it can be (`reparse`): each document's `_kept_form`, marshalled
    (which reads back twice as fast as a pickle) unless a value is a LeadingZero; None for a
    version that is not plain. The list, pickled."""
    answers: list[bytes | tuple[Any, Any, Any] | None] = []
    before: tuple[Document, bytes] | None = None
    for raw in versions:
        document = reparse(name, before[0], before[1], raw, environ) if before is not None else None
        if document is None:
            try:
                document = loader.parse_plain(name, raw, environ, None)
            except FastPathUnavailable:
                answers.append(None)
                before = None
                continue
        before = (document, raw)
        answer = _kept_form(document)
        try:
            answers.append(marshal.dumps(answer))
        except ValueError:
            answers.append(answer)
    return pickle.dumps(answers, protocol=pickle.HIGHEST_PROTOCOL)


def _kept_form(document: Document) -> tuple[Any, dict[DataPath, str], list[DataPath]]:
    """What is kept of a document (in the parse cache, and from a worker): the data without
    the values of its templates (a variable may hold a secret), the templates and which of
    them are typed; `_from_kept` reads it back in an environment."""
    data = document.data
    for path in document.templates:
        data = _without_value(data, path)
    return data, document.templates, list(document.typed_templates)


def _without_value(data: Any, path: DataPath) -> Any:
    """`data` with None at `path`: a copy of the containers along the path, the rest shared."""
    key, rest = path[0], path[1:]
    copy: Any = dict(data) if isinstance(data, dict) else list(data)
    copy[key] = _without_value(data[key], rest) if rest else None
    return copy


def _from_kept(name: str, kept_form: Any, environ: Mapping[str, str] | None) -> Document | None:
    """The document of `_kept_form` (its data is taken, not copied), its templates read in
    `environ`; None when it is not that form, or a template does not read now (the file is
    then parsed, and says why)."""
    if not (isinstance(kept_form, tuple) and len(kept_form) == 3 and isinstance(kept_form[1], dict)
            and isinstance(kept_form[2], list)):
        return None
    data, templates, typed = kept_form
    try:
        loader.resolve_templates(name, data, templates, frozenset(typed), environ)
    except FastPathUnavailable as unavailable:
        logger.debug("%s: its kept parse does not read here (%s); parsing it", name, unavailable)
        return None
    return Document(data, templates=templates, typed_templates=frozenset(typed), files=[name])


# --- the parse cache ---------------------------------------------------------------------------

CACHE_ENV = "LANCE_SYNC_CACHE"
#: bump when what is kept for the same bytes changes
FORMAT = 2
MIN_BYTES = 1024 * 1024
MAX_ENTRIES = 64
_SUFFIX = ".parsed"
_MAGIC = b"lance-sync parsed manifest\n"


def cache_dir() -> Path | None:
    """The cache folder, or None when the cache is off."""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return None if configured.strip().lower() in ("off", "") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lance-sync"


def cacheable(raw: bytes) -> bool:
    """Whether a file of these bytes is kept: large enough, and the cache on (what is kept is
    not made for nothing)."""
    return len(raw) >= MIN_BYTES and cache_dir() is not None


def kept(raw: bytes) -> bool:
    """Whether an entry for a file of these bytes is there (`recall` may still find it unreadable)."""
    path = _entry(raw)
    return path is not None and path.is_file()


def recall(raw: bytes) -> Any:
    """What was kept for a file of these bytes (`keep`), or None."""
    path = _entry(raw)
    if path is None:
        return None
    try:
        stored = path.read_bytes()
        if not stored.startswith(_MAGIC):
            return None
        data = marshal.loads(stored[len(_MAGIC):])
    except (OSError, EOFError, ValueError, TypeError):
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used
    return data


def keep(raw: bytes, marshalled: bytes) -> None:
    """Keep `marshal.dumps` of what a file of these bytes reads as; nothing on failure."""
    path = _entry(raw)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as out:
            out.write(_MAGIC + marshalled)
        os.replace(out.name, path)
        _trim(path.parent)
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(out.name)


def _entry(raw: bytes) -> Path | None:
    folder = cache_dir()
    if folder is None or len(raw) < MIN_BYTES:
        return None
    digest = hashlib.sha256(raw)
    digest.update(f"\0{sys.version_info[0]}.{sys.version_info[1]}\0{FORMAT}".encode())
    return folder / f"{digest.hexdigest()}{_SUFFIX}"


def _trim(folder: Path) -> None:
    """The most recently used MAX_ENTRIES entries stay."""
    entries = sorted(folder.glob(f"*{_SUFFIX}"), key=_used, reverse=True)
    for stale in entries[MAX_ENTRIES:]:
        with contextlib.suppress(OSError):
            stale.unlink()


def _used(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0  # removed by another run meanwhile


# --- a changed version, from the parse of its earlier one -------------------------------------

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
    except FastPathUnavailable:
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
