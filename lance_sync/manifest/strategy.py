"""Which road a manifest load takes: the one place that decides (`fast_roads`, `load_state`).

- The full road reads each file with positions (lance_sync.manifest.loader: `load_document`),
  checks the JSON Schema and the models, and names the file, line and field of every problem.
  It is taken when positions are asked for, and whenever a faster road is not.
- The plain road reads the files without positions (the plain parse, the json module, the
  parse cache, worker processes: lance_sync.manifest.parsing), checks the models in strict
  mode and builds the desired state; with `tables` (a plan of what changed since a
  revision) only those tables are built, when the checks that span entries pass as written
  (`split_tables`); with a `document`, that parse of the files is used as it is (`api.load_changed`
  parsed it for its comparison).
- The split road builds a manifest split over files of tables (a first file, then `-f` files
  whose one key is `tables`, none of whose names another file declares) without merging: the
  first file here, each other file parsed, validated and built in a worker process
  (lance_sync.manifest.workers), which answers rows of its tables' fields.

A fast road that cannot give what the full road would, or finds a problem or a warning (which
only the full road can place), raises `FastPathUnavailable` with the reason; the load logs it
at DEBUG and takes the next road.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lance_sync.model.errors import ManifestError, ManifestErrors

if TYPE_CHECKING:
    from lance_sync.manifest.loader import Document
    from lance_sync.manifest.schema_models import ValidatedManifest
    from lance_sync.manifest.validate import StrictTables
    from lance_sync.model.backend_config import Identifier
    from lance_sync.model.desired import DesiredState, DesiredTable

logger = logging.getLogger(__name__)


class FastPathUnavailable(Exception):
    """A fast road cannot load these files as the full road would; `reason` says why."""

    def __init__(self, reason: str = ""):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Load:
    """What a load is asked for (lance_sync.manifest.load_manifest)."""

    paths: Sequence[str]
    environ: Mapping[str, str] | None
    base_dir: str
    allow_unset: bool = False
    positions: bool = False
    #: build only these tables (the others wait in `DesiredState.unbuilt`)
    tables: Collection[str] | None = None
    #: the files' plain documents merged, when the caller has parsed them already
    document: Document | None = None
    #: work to do while worker processes parse (lance_sync.manifest.parsing.Parsing)
    meanwhile: Callable[[], None] | None = field(default=None, repr=False)


Road = Callable[[Load], "DesiredState"]


def fast_roads(load: Load) -> list[Road]:
    """The faster roads a load tries, in order, before the full road (`load_state`)."""
    if load.positions:
        return []
    if load.tables is not None or load.document is not None:
        return [plain_road]
    return [split_road, plain_road]


def load_state(load: Load) -> DesiredState:
    """The desired state of the files, by the first fast road that takes them, else the full road."""
    for road in fast_roads(load):
        try:
            return road(load)
        except FastPathUnavailable as unavailable:
            logger.debug("%s: not the %s (%s)", ", ".join(load.paths), road.__name__.replace("_", " "),
                         unavailable.reason)
    return full_road(load)


def full_road(load: Load) -> DesiredState:
    """Every file with positions: every problem named by its file, line and field."""
    from lance_sync.manifest.loader import load_document
    from lance_sync.manifest.merge import merge_documents
    from lance_sync.manifest.semantic import build_desired_state
    from lance_sync.manifest.validate import validate_structure

    document = merge_documents([load_document(path, load.environ, load.allow_unset) for path in load.paths])
    model = validate_structure(document)
    return build_desired_state(model, document, load.base_dir)


def plain_road(load: Load) -> DesiredState:
    """The files without positions, the models in strict mode; only `load.tables` built when
    those are asked for."""
    from lance_sync.manifest.merge import merge_documents
    from lance_sync.manifest.parsing import load_plain_documents
    from lance_sync.manifest.semantic import build_desired_state
    from lance_sync.manifest.validate import validate_strictly
    from lance_sync.model.desired import Unbuilt

    document = load.document or merge_documents(load_plain_documents(load.paths, load.environ, load.meanwhile))
    if load.tables is not None:
        chosen, others, registered = split_tables(document.data, load.tables, load.base_dir)
        document = dataclasses.replace(document, data={**document.data, "tables": chosen})
    model, validated = validate_strictly(document)
    # the namespaces live on in the model, and the tables are validated and their raw data let
    # go a chunk at a time as the desired state is built from them (see validate_strictly)
    document = dataclasses.replace(document, data={key: value for key, value in document.data.items()
                                                   if key not in ("tables", "namespaces")})
    state = without_problems(lambda: build_desired_state(model, document, load.base_dir, validated))
    if load.tables is not None:
        state.unbuilt = Unbuilt(registered, _built_later(model, document, load, others))
    return state


def without_problems(build: Callable[[], DesiredState]) -> DesiredState:
    """`build()`; FastPathUnavailable when it finds a problem or a warning, whose file and line
    only the full road can name."""
    try:
        state = build()
    except (ManifestError, ManifestErrors) as problem:
        raise FastPathUnavailable(f"a problem: {str(problem).splitlines()[0]}") from None
    if state.notices:
        raise FastPathUnavailable(f"a warning: {state.notices[0]}")
    return state


def _built_later(model: ValidatedManifest, document: Document, load: Load, others: dict[str, Any]
                 ) -> Callable[[Collection[str]], list[DesiredTable]]:
    """How a partial load builds more of its tables: as it built the first ones, or, when one
    does not pass, by the full road, which names the problem's file and line."""
    from lance_sync.manifest.semantic import build_desired_state
    from lance_sync.manifest.validate import StrictTables

    def build(names: Collection[str]) -> list[DesiredTable]:
        entries = [entry for name, entry in others.items() if name in names]
        try:
            return without_problems(
                lambda: build_desired_state(model, document, load.base_dir, StrictTables(entries))).tables
        except FastPathUnavailable as unavailable:
            logger.debug("tables %s: not built as written (%s)", ", ".join(sorted(names)), unavailable.reason)
        whole = Load(load.paths, load.environ, load.base_dir)
        return [table for table in load_state(whole).tables if table.name in names]

    return build


# --- the plain road for some tables: the checks across entries, as written -----------------------

RegistrationKey = tuple[str, "Identifier"]


def split_tables(data: Any, wanted: Collection[str], base_dir: str
                 ) -> tuple[list[Any], dict[str, Any], dict[RegistrationKey, str]]:
    """The raw entries of the `wanted` tables (in manifest order), every other entry by name,
    and the others' registrations; FastPathUnavailable unless the checks across all entries
    pass as written: each name once, each registration once, one table per location. An entry
    these checks cannot read (a name that is not text, an unknown backend, a `renamed_from`,
    whose checks need every table built) needs the full road too. An unchanged entry is not
    checked on its own: `lance-sync validate` checks every entry."""
    from lance_sync.model.locations import normalize_location, overlapping, resolved_locations

    if not isinstance(data, dict):
        raise FastPathUnavailable("a document that is not a mapping")
    raw_tables = data.get("tables", [])
    backends = data.get("backends")
    if not isinstance(raw_tables, list) or not isinstance(backends, dict) or not set(map(type, raw_tables)) <= {dict}:
        raise FastPathUnavailable("tables or backends that are not lists and mappings")
    # each check reads one field of every entry in one pass: a million entries in a large manifest
    names = [entry.get("name") for entry in raw_tables]
    written = [entry.get("location") for entry in raw_tables]
    if not set(map(type, names)) <= {str} or not set(map(type, written)) <= {str} \
            or any(entry.get("renamed_from") is not None for entry in raw_tables):
        raise FastPathUnavailable("a name or location that is not text, or a renamed_from")
    others = dict(zip(names, raw_tables, strict=True))
    if len(others) < len(names):
        raise FastPathUnavailable("a table name twice")
    key_of = _RegistrationKeys(backends)
    registered = _registrations(raw_tables, names, key_of)
    try:
        locations = [normalize_location(location, base_dir) for location in written]
    except ValueError as error:
        raise FastPathUnavailable(f"a location: {error}") from None
    if overlapping(resolved_locations(locations)):  # as the filesystem resolves them, as validate compares
        raise FastPathUnavailable("locations that are equal or nest")
    chosen = [entry for entry in raw_tables if entry["name"] in wanted] if wanted else []
    for entry in chosen:
        del others[entry["name"]]
    for key in _registrations(chosen, [entry["name"] for entry in chosen], key_of):
        del registered[key]
    return chosen, others, registered


def _registrations(entries: list[dict[str, Any]], names: list[str], key_of: _RegistrationKeys
                   ) -> dict[RegistrationKey, str]:
    """Each registration of the entries, to its table's name; FastPathUnavailable for one twice."""
    registered: dict[RegistrationKey, str] = {}
    for name, entry in zip(names, entries, strict=True):
        for item in _list(entry.get("register")):
            key = key_of(item, name)
            if key in registered:
                raise FastPathUnavailable(f"a registration twice: {key}")
            registered[key] = name
    return registered


def _list(value: Any) -> list[Any]:
    """A `register` list as written: none is empty, anything but a list cannot be read."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise FastPathUnavailable("a register that is not a list")
    return value


class _RegistrationKeys:
    """A registration's (backend, table id) as the desired state will have it."""

    def __init__(self, backends: dict[str, Any]):
        from lance_sync.manifest.history import IdReader

        self.ids = IdReader(backends)
        #: (backend, namespace) as written -> (backend, names), checked once for all its tables
        self.namespaces: dict[tuple[Any, Any], tuple[str, Identifier]] = {}

    def __call__(self, item: Any, table: str) -> RegistrationKey:
        if not isinstance(item, dict):
            raise FastPathUnavailable("a registration that is not a mapping")
        name = item.get("name") or table
        if not isinstance(name, str):
            raise FastPathUnavailable("a registered name that is not text")
        where = (item.get("backend"), item.get("namespace"))
        try:
            backend, parts = self.namespaces[where]
        except KeyError:
            backend, parts = self.namespaces[where] = self._namespace(*where)
        except TypeError:  # a namespace written as a list
            backend, parts = self._namespace(*where)
        return backend, (*parts, name)

    def _namespace(self, backend: Any, raw_id: Any) -> tuple[str, Identifier]:
        namespace = self.ids(backend, raw_id)
        if namespace is None or not namespace[1] or not all(namespace[1]):  # not a known backend, or no id
            raise FastPathUnavailable(f"a namespace these checks cannot read: {backend}: {raw_id}")
        return namespace


# --- the split road: files of tables, each built in a worker ----------------------------------------

#: a worker's build of a file's tables: their rows (lance_sync.manifest.semantic: `_rows`),
#: numbered from the file's first table; None when one has a problem or cannot be a row
BuildRows = Callable[["StrictTables"], "bytes | None"]


def split_road(load: Load) -> DesiredState:
    """The first file here, each other file in a worker, without merging (module docstring)."""
    from lance_sync.manifest.semantic import build_desired_state

    model, document, tables = _split_files(load.paths, load.environ)
    return without_problems(lambda: build_desired_state(model, document, load.base_dir, tables))


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
        reads the answers in the files' order. FastPathUnavailable from the answers when a
        file is more than a list of tables, `build` answers None, or a worker fails."""
        from lance_sync.manifest.workers import Workers

        tasks = [functools.partial(_file_rows, build, self.environ, name) for name in self.others]
        with Workers(tasks, min(len(tasks), os.cpu_count() or 1)) as workers:
            yield _answers(workers.answer, self.others)


def _answers(answer: Callable[[int], bytes | None], names: list[str]) -> Iterator[bytes]:
    for index, name in enumerate(names):
        rows = answer(index)
        if rows is None:
            raise FastPathUnavailable(f"{name}: not only new tables, or not built in its worker")
        yield rows


def _split_files(paths: Sequence[str], environ: Mapping[str, str] | None
                 ) -> tuple[ValidatedManifest, Document, TablesInFiles]:
    """The first file's manifest model, its document without tables and namespaces (files:
    all of `paths`) and the tables of all files; FastPathUnavailable unless the files after
    the first are worth workers (`PARALLEL_BYTES` in all), forking pays and the first file
    passes the strict models."""
    from lance_sync.manifest.loader import Document
    from lance_sync.manifest.parsing import PARALLEL_BYTES, load_plain_document
    from lance_sync.manifest.validate import validate_strictly
    from lance_sync.manifest.workers import forking_pays

    names = [str(path) for path in paths]
    if len(names) < 2 or not forking_pays():
        raise FastPathUnavailable("one file, or forking does not pay")
    try:
        if sum(Path(name).stat().st_size for name in names[1:]) < PARALLEL_BYTES:
            raise FastPathUnavailable("files too small to be worth workers")
    except OSError as error:
        raise FastPathUnavailable(str(error)) from None
    first = load_plain_document(names[0], environ)
    model, tables = validate_strictly(first)
    # the first file's templates too: a backend's secrets must be seen to come from ${VAR}
    document = Document({key: value for key, value in first.data.items() if key not in ("tables", "namespaces")},
                        templates=first.templates, typed_templates=first.typed_templates, written=first.written,
                        files=names)
    return model, document, TablesInFiles(tables, names[1:], dict(os.environ if environ is None else environ))


def _file_rows(build: BuildRows, environ: dict[str, str], name: str) -> bytes | None:
    """In a worker: `build` of the file's tables, when the file holds nothing else."""
    from lance_sync.manifest.parsing import load_plain_document
    from lance_sync.manifest.validate import StrictTables

    # the data lives only until its rows are built: its texts need not be kept once
    data = load_plain_document(name, environ, keep_once=False).data
    if not isinstance(data, dict) or data.keys() != {"tables"} or not isinstance(data["tables"], list):
        return None
    return build(StrictTables(list(data["tables"])))
