"""A manifest split over files of tables, each file parsed and built in a worker process.

A large estate is commonly one file of backends and namespaces (with tables or without) and
many files that only add tables (`-f` overlays whose one key is `tables`, none of whose
names another file declares). Laid over the first file, such files only lengthen its list
of tables, so the desired state is built without merging: this process validates the first
file and builds its tables, while worker processes forked with that context parse,
validate and build the other files' tables, a file each, and answer rows of their fields
(lance_sync.manifest.semantic: `_tables_of_files`). No document crosses between processes.

Whenever a file is more than new tables (another key, a table another file declares too, a
problem, grants, which rows cannot carry), or a worker fails, `NotSplit` is raised and the
manifest loads the usual way, which merges the files and names every problem's file and line.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from lance_sync.manifest.fork import forking_pays
from lance_sync.manifest.loader import Document, NotPlain
from lance_sync.manifest.models import ValidatedManifest
from lance_sync.manifest.parse_once import PARALLEL_BYTES, load_plain_document, parsing_files_once
from lance_sync.manifest.validate import NotStrict, StrictTables, validate_strictly

#: a worker's build of a file's tables: their rows (lance_sync.manifest.semantic: `_rows`),
#: numbered from the file's first table; None when one has a problem or cannot be a row
BuildRows = Callable[[StrictTables], "bytes | None"]


class NotSplit(Exception):
    """The files are not a first file and files of new tables only: load them the usual way."""


@dataclass
class TablesInFiles:
    """The tables of a split manifest: the first file's, validated as they are read, and the
    files that add the others."""

    first: StrictTables
    others: list[str]
    environ: dict[str, str]

    @contextlib.contextmanager
    def built_in_workers(self, build: BuildRows) -> Iterator[Iterator[bytes]]:
        """Workers, forked now (so that they have `build` and what it holds, unpickled), each
        parsing a file of `others` at a time and answering `build` of its tables; the block
        reads the answers in the files' order. NotSplit from the answers when a file is more
        than a list of tables, `build` answers None, or a worker fails."""
        workers = min(len(self.others), os.cpu_count() or 1)
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                   initializer=_start_worker, initargs=(build, self.environ))
        try:
            futures = [pool.submit(_file_rows, name) for name in self.others]
            yield _answers(futures)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _answers(futures: list[Future]) -> Iterator[bytes]:
    for future in futures:
        try:
            answer = future.result()
        except Exception:  # noqa: BLE001 - a worker that failed or died: the usual road says what is wrong
            raise NotSplit from None
        if answer is None:
            raise NotSplit
        yield answer


def split_files(paths: Sequence[str | os.PathLike], environ: Mapping[str, str] | None
                ) -> tuple[ValidatedManifest, Document, TablesInFiles] | None:
    """The first file's manifest model, its document without tables and namespaces (files:
    all of `paths`) and the tables of all files, when the files after the first are worth
    workers (`PARALLEL_BYTES` in all) and forking pays; None when not, or when the first file
    does not pass the strict models (the usual road then loads them)."""
    names = [str(path) for path in paths]
    if len(names) < 2 or parsing_files_once() or not forking_pays():
        return None
    try:
        if sum(Path(name).stat().st_size for name in names[1:]) < PARALLEL_BYTES:
            return None
        first = load_plain_document(names[0], environ, {})
    except (OSError, NotPlain):
        return None
    strict = validate_strictly(first)
    if strict is None:
        return None
    model, tables = strict
    # the first file's templates too: a backend's secrets must be seen to come from ${VAR}
    document = Document({key: value for key, value in first.data.items() if key not in ("tables", "namespaces")},
                        templates=first.templates, typed_templates=first.typed_templates, written=first.written,
                        files=names)
    return model, document, TablesInFiles(tables, names[1:], dict(os.environ if environ is None else environ))


#: in a worker: the build of the files' tables, and the environment they are read in
_WORKER: tuple[BuildRows, dict[str, str]] | None = None


def _start_worker(build: BuildRows, environ: dict[str, str]) -> None:
    global _WORKER
    gc.disable()  # a worker builds rows and ends: no garbage cycles to look for
    _WORKER = (build, environ)


def _file_rows(name: str) -> bytes | None:
    """In a worker: `build` of the file's tables, when the file holds nothing else."""
    assert _WORKER is not None
    build, environ = _WORKER
    try:
        data = load_plain_document(name, environ).data
    except NotPlain:
        return None
    if not isinstance(data, dict) or data.keys() != {"tables"} or not isinstance(data["tables"], list):
        return None
    try:
        return build(StrictTables(list(data["tables"])))
    except NotStrict:
        return None
