"""Each version of a manifest file is parsed once, and large ones in parallel.

`load_plain_document` reads a file by the plain road (lance_sync.manifest.loader) and keeps
what it read: in a `parsing_once` block a file read again with the same bytes (from the
working tree, or from a git revision that has it as it is) is not parsed again, and the
parse cache (lance_sync.manifest.parse_cache) reads back what an earlier run parsed.
`parse_ahead` parses large files in worker processes while this process goes on, and
`merged_once` merges the same documents once (`--changed-since` reads the working tree's files
for the comparison and for the desired state), and `reparse_changed` reads a changed file from
the parse of its earlier version, parsing only what changed.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import multiprocessing
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from lance_sync.manifest import loader, parse_cache
from lance_sync.manifest.fork import forking_pays
from lance_sync.manifest.loader import DataPath, Document, NotPlain
from lance_sync.manifest.reparse import reparse
from lance_sync.model.errors import ManifestError


def load_plain_document(path: str | os.PathLike, environ: Mapping[str, str] | None = None,
                        shared: dict[str, str] | None = None) -> Document:
    """Like `load_document`, without positions (lance_sync.manifest.loader); NotPlain when the
    file needs `load_document`. `shared` keeps one copy of each text across the files of a
    load (equal strings are one object)."""
    name = str(path)
    try:
        raw = loader.read_raw(Path(path), name)
    except ManifestError as error:
        raise NotPlain(str(error)) from None
    known = _remembered(name, raw) or _recalled(name, raw, environ)
    if known is not None:
        return known
    document = loader.parse_plain(name, raw, environ, shared)
    if parse_cache.cacheable(raw):
        with contextlib.suppress(ValueError):  # a LeadingZero, which marshal cannot carry
            parse_cache.keep(raw, marshal.dumps(_kept_form(document)))
    return _remember(name, raw, document)


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


def _from_kept(name: str, kept: Any, environ: Mapping[str, str] | None) -> Document | None:
    """The document of `_kept_form` (its data is taken, not copied), its templates read in
    `environ`; None when it is not that form, or a template does not read now (the file is
    then parsed, and says why)."""
    if not (isinstance(kept, tuple) and len(kept) == 3 and isinstance(kept[1], dict) and isinstance(kept[2], list)):
        return None
    data, templates, typed = kept
    try:
        loader.resolve_templates(name, data, templates, frozenset(typed), environ)
    except NotPlain:
        return None
    return Document(data, templates=templates, typed_templates=frozenset(typed), files=[name])


def _recalled(name: str, raw: bytes, environ: Mapping[str, str] | None) -> Document | None:
    """The document of a file parsed by an earlier run (lance_sync.manifest.parse_cache)."""
    document = _from_kept(name, parse_cache.recall(raw), environ)
    return None if document is None else _remember(name, raw, document)


def reparse_changed(name: str, earlier_raw: bytes, raw: bytes, environ: Mapping[str, str] | None = None) -> None:
    """In a `parsing_once` block, read the version `raw` of a file from the parse of its
    version `earlier_raw`, when this block (waiting for its worker) or an earlier run (the
    parse cache) has that: only the items that changed are parsed (lance_sync.manifest.reparse).
    When that cannot be done, or a worker reads `raw` already, nothing: the file is parsed
    whole when it is read."""
    parsed = _PARSED.get()
    if parsed is None or (name, raw) in parsed.documents or (name, raw) in parsed.pending:
        return
    earlier = parsed.get(name, earlier_raw) or _recalled(name, earlier_raw, environ)
    if earlier is not None and (document := reparse(name, earlier, earlier_raw, raw, environ)) is not None:
        parsed.keep(name, raw, document)


class _ParsedFiles:
    """The files of a `parsing_once` block: each one's document, by name and bytes, and the
    parses still under way in worker processes (`parse_ahead`): each version's future, and
    where its answer is in the worker's list of answers."""

    def __init__(self, meanwhile: Callable[[], None] | None) -> None:
        self.meanwhile = meanwhile
        self.documents: dict[tuple[str, bytes], Document] = {}
        self.pending: dict[tuple[str, bytes], tuple[Future, int]] = {}
        self.pool: ProcessPoolExecutor | None = None
        #: the environment the workers parse in (`parse_ahead`)
        self.environ: dict[str, str] = {}
        #: merges of these documents (`merged_once`): the documents, by identity, and the merge
        self.merges: list[tuple[list[Document], Document]] = []

    def get(self, name: str, raw: bytes) -> Document | None:
        """The document of this version of the file, waiting for a worker that parses it;
        None when nobody has parsed it, or its worker failed (then this process parses it)."""
        key = (name, raw)
        if key in self.documents:
            return self.documents[key]
        future, index = self.pending.pop(key, (None, 0))
        if future is None:
            return None
        if self.meanwhile is not None and not future.done():
            meanwhile, self.meanwhile = self.meanwhile, None
            meanwhile()
        try:
            answer = future.result()[index]
        except Exception:  # noqa: BLE001 - a worker that died or failed: the file parses here, with its errors
            return None
        if answer is None:
            return None
        if isinstance(answer, bytes) and parse_cache.cacheable(raw):
            parse_cache.keep(raw, answer)
        document = _from_kept(name, marshal.loads(answer) if isinstance(answer, bytes) else answer, self.environ)
        return None if document is None else self.keep(name, raw, document)

    def keep(self, name: str, raw: bytes, document: Document) -> Document:
        self.documents[name, raw] = document
        return document

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


_PARSED: ContextVar[_ParsedFiles | None] = ContextVar("parsed_manifest_files", default=None)
_MEANWHILE: ContextVar[Callable[[], None] | None] = ContextVar("work_while_parsing", default=None)


@contextlib.contextmanager
def meanwhile_next(work: Callable[[], None] | None) -> Iterator[None]:
    """In this block, a load that parses its files in its own `parsing_once` block does `work`
    meanwhile (see there): what the caller does next anyway, such as importing the planner."""
    token = _MEANWHILE.set(work)
    try:
        yield
    finally:
        _MEANWHILE.reset(token)


@contextlib.contextmanager
def parsing_once(meanwhile: Callable[[], None] | None = None) -> Iterator[None]:
    """In this block, the plain road parses a file once: read again with the same bytes (from
    the working tree, or from a git revision that has it as it is), its document is taken
    again. For one environment only: `--changed-since` reads the same files for the comparison
    and for the desired state. The documents are shared, so nothing changes them: merges build
    new ones, and validation consumes a copy of the tables list. `meanwhile` runs once, the
    first time this process would wait for a worker (`parse_ahead`): work that comes next
    anyway, done while the worker parses."""
    parsed = _ParsedFiles(meanwhile)
    token = _PARSED.set(parsed)
    try:
        yield
    finally:
        _PARSED.reset(token)
        parsed.close()


def merged_once(documents: list[Document], merge: Callable[[list[Document]], Document]) -> Document:
    """`merge(documents)`, once per list of the same documents in a `parsing_once` block:
    `--changed-since` merges the working tree's files for the comparison and for the load."""
    parsed = _PARSED.get()
    if parsed is None:
        return merge(documents)
    for merged, result in parsed.merges:
        if len(merged) == len(documents) and all(a is b for a, b in zip(merged, documents, strict=True)):
            return result
    result = merge(documents)
    parsed.merges.append((list(documents), result))
    return result


def parsing_files_once() -> bool:
    """Whether this runs in a `parsing_once` block."""
    return _PARSED.get() is not None


def _remembered(name: str, raw: bytes) -> Document | None:
    parsed = _PARSED.get()
    return parsed.get(name, raw) if parsed is not None else None


def _remember(name: str, raw: bytes, document: Document) -> Document:
    parsed = _PARSED.get()
    return parsed.keep(name, raw, document) if parsed is not None else document


#: Files of this many bytes in all, or more, that are still to parse are parsed in worker
#: processes, a file each (`parse_ahead`): parsing is most of the time of loading a large
#: manifest, and a worker's document reads back in a fraction of the time it takes to parse.
PARALLEL_BYTES = 4 * 1024 * 1024
#: ... or this many, when this process has work to do meanwhile (`parsing_once`)
MEANWHILE_BYTES = 1024 * 1024


def load_plain_documents(paths: Sequence[str | os.PathLike], environ: Mapping[str, str] | None = None,
                         shared: dict[str, str] | None = None) -> list[Document]:
    """`load_plain_document` of each path, in order; NotPlain when one needs `load_document`.
    Large split manifests are parsed in worker processes (`parse_ahead`)."""
    with parsing_once(_MEANWHILE.get()) if not parsing_files_once() else contextlib.nullcontext():
        try:
            files = [(str(path), loader.read_raw(Path(path), str(path))) for path in paths]
        except ManifestError as error:
            raise NotPlain(str(error)) from None
        parse_ahead(files, environ)
        del files
        return [load_plain_document(path, environ, shared) for path in paths]


def parse_ahead(files: Sequence[tuple[str, bytes]], environ: Mapping[str, str] | None = None,
                earlier: Mapping[tuple[str, bytes], bytes] | None = None) -> None:
    """Start parsing files (name, bytes) in worker processes, for `load_plain_document` to take
    in this `parsing_once` block (waiting for the worker, if need be): this process goes on
    meanwhile, with the files an earlier run parsed (lance_sync.manifest.parse_cache) and
    whatever else it has to do. As many workers as CPUs, a file each; only when the files to
    parse are large (`PARALLEL_BYTES`, or `MEANWHILE_BYTES` with work to do meanwhile), this
    process has something to do beside a worker (a second file, one to read from the cache,
    or the block's work meanwhile), and forking pays (lance_sync.manifest.fork).
    Otherwise, and for a file whose worker fails, files parse where they are read.
    `earlier[name, raw]` is an earlier version of a file, also among `files`: one worker parses
    both, and reads the later from the earlier's parse (`reparse_changed`) where it can."""
    parsed = _PARSED.get()
    if parsed is None or parsed.pool is not None:
        return
    fresh = [(name, raw) for name, raw in files if parsed.get(name, raw) is None]
    to_parse = [(name, raw) for name, raw in fresh if not parse_cache.kept(raw)]
    # each worker's versions, the first parsed whole: a file's changed version goes with its earlier one
    versions: dict[tuple[str, bytes], list[bytes]] = {}
    for name, raw in to_parse:
        before = (earlier or {}).get((name, raw))
        first = (name, before) if before is not None and (name, before) in versions else (name, raw)
        versions.setdefault(first, []).append(raw)
    workers = min(len(versions), os.cpu_count() or 1)
    # one file alone is worth a worker only when this process has work to do meanwhile
    too_few, threshold = (len(fresh) < 2, PARALLEL_BYTES) if parsed.meanwhile is None \
        else (False, min(PARALLEL_BYTES, MEANWHILE_BYTES))
    if workers < 1 or too_few or not forking_pays() or sum(len(raw) for _, raw in to_parse) < threshold:
        return
    environ = parsed.environ = dict(os.environ if environ is None else environ)
    try:
        # a worker makes its documents and ends: no garbage cycles to look for
        parsed.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                          initializer=gc.disable)
        for (name, _), raws in versions.items():
            future = parsed.pool.submit(_parse_in_worker, name, raws, environ)
            for index, raw in enumerate(raws):
                parsed.pending[name, raw] = (future, index)
    except (OSError, BrokenProcessPool):
        parsed.pending.clear()


def _parse_in_worker(name: str, versions: list[bytes], environ: dict[str, str]
                     ) -> list[bytes | tuple[Any, Any, Any] | None]:
    """A worker's `parse_plain` of each version of a file, in order, each after the first read
    from the one before where it can be (lance_sync.manifest.reparse): each document's
    `_kept_form`, marshalled (which reads back twice as fast as a pickle) unless a value is a
    LeadingZero; None for a version that is not plain."""
    answers: list[bytes | tuple[Any, Any, Any] | None] = []
    before: tuple[Document, bytes] | None = None
    for raw in versions:
        document = reparse(name, before[0], before[1], raw, environ) if before is not None else None
        if document is None:
            try:
                document = loader.parse_plain(name, raw, environ, None)
            except NotPlain:
                answers.append(None)
                before = None
                continue
        before = (document, raw)
        answer = _kept_form(document)
        try:
            answers.append(marshal.dumps(answer))
        except ValueError:
            answers.append(answer)
    return answers
