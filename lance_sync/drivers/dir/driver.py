"""Directory backend: pylance's DirectoryNamespace, with its quirks guarded.

pylance keeps namespaces and tables in a `__manifest` Lance table under the root. This
driver delegates to it and adds what lance-sync needs (see notes/lance-namespace.md):

- declaring into a namespace that does not exist fails (pylance accepts it);
- a table can live at any location under the root (a relative location is taken from the
  root): pylance's declare only accepts its own generated path, so the driver writes the
  manifest row itself (relative location and properties in one commit, the way pylance's
  register writes rows);
- request modes mean what they mean on every backend (lance_sync.drivers.base; pylance
  ignores them);
- namespace and table properties can be updated, by updating the manifest row;
- bulk reads scan the manifest once instead of describing every table.

Several processes may write to one root at once (two applies of different owners). The
manifest is one Lance table, so their commits can conflict: every write is one commit, made
against the version it read, and a conflicting commit is tried again on a fresh read (so an
object created or removed meanwhile gives the answer it would have given had it come first).
Rows the driver writes are committed with Lance's own conflict retries off: a retry that
Lance made by itself would not see the fresh state. Property updates are compare-and-swap:
the update only matches the row if its properties are still those that were read. When
conflicts persist, ConcurrentModificationError names the operation and the root.

Writes within one process go through one lock per driver: local directories gain nothing
from concurrent commits to one table.

Apply leases (lance_sync.apply.lease) live at the root: for a local root, as files under
`_lance_sync_leases/` swapped under an exclusive file lock (`FileLeaseRegister`); for an
object-store root, as a namespace row of the manifest table swapped by a conditional row update
(`ManifestRowLeaseRegister`).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import lance
import pyarrow as pa
from lance.namespace import DirectoryNamespace
from lance_namespace import (
    CreateNamespaceRequest,
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    DropNamespaceRequest,
    DropTableRequest,
    DropTableResponse,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    RegisterTableRequest,
    TableExistsRequest,
    TableExistsResponse,
)
from lance_namespace.errors import (
    ConcurrentModificationError,
    ErrorCode,
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    NamespaceAlreadyExistsError,
    NamespaceNotFoundError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)

from lance_sync.drivers.base import (
    Capabilities,
    CatalogSnapshot,
    Identifier,
    NamespaceInfo,
    SyncNamespace,
    TableInfo,
    patched_properties,
)
from lance_sync.drivers.dir.config import DELIMITER, DirConfig, DirRules
from lance_sync.drivers.leases import LeaseRecord, LeaseRegister, StoredLease, not_a_lease
from lance_sync.drivers.support.retry import backoff_seconds
from lance_sync.model.locations import is_local, join_location, normalize_location, relative_to

ROOT = "root"
MANIFEST_TABLE = "__manifest"
#: where a local root keeps its apply leases, one `<lease name>.json` each
LEASE_DIRECTORY = "_lance_sync_leases"
_ROW_COLUMNS = ("object_id", "object_type", "location", "metadata")
_MANIFEST_COLUMNS = frozenset(_ROW_COLUMNS)
#: manifest rows as columns (pyarrow's to_pydict), the _ROW_COLUMNS of each row at one index
_Rows = dict[str, list[Any]]

#: tries of one manifest write (the first included) while other processes' commits conflict
#: with it; the waits between them follow retry.backoff_seconds (up to about 30 s in all)
COMMIT_ATTEMPTS = 8

#: the driver's row writes each add a small fragment to the manifest (pylance's own writes
#: rewrite it whole); past this many fragments they are folded together after a write
COMPACT_AT_FRAGMENTS = 32

#: how Lance (pylance 14) words a commit that lost against another writer's commit:
#: "Incompatible transaction: This Update transaction is incompatible with concurrent
#: transaction Overwrite at version 64.", "Too many concurrent writers. Attempted 0
#: retries.", "Retryable commit conflict for version 7: ... was preempted by concurrent
#: transaction ...", "Commit conflict for version 7: ..."
_CONFLICT_WORDING = re.compile(
    r"\bconflict|incompatible transaction|concurrent transaction|"
    r"too many concurrent writ|preempted|please retry", re.IGNORECASE)
#: Lance appends the Rust source locations to its messages
_SOURCE_LOCATION = re.compile(r",\s*/\S+?\.rs:\d+:\d+")

T = TypeVar("T")


class DirNamespace(DirRules, SyncNamespace):
    config: DirConfig
    #: the manifest table holds every namespace and table row: one scan reads them all
    snapshot_reads = True

    def __init__(self, config: DirConfig | None = None, /, **properties: Any) -> None:
        super().__init__(config, **properties)
        # the root is created by the first write (pylance creates it), not here: plan reads only
        self.root = normalize_location(self.config.root)
        native_properties = {ROOT: self.root}
        native_properties.update({f"storage.{k}": v for k, v in self.config.storage.items()})
        try:
            # pylance reads the root's manifest table here: the store is reached at once
            native = DirectoryNamespace(**native_properties)
        except (OSError, RuntimeError, ValueError) as error:
            raise ServiceUnavailableError(f"dir: cannot open the catalog at {self.root}: {_short(error)}") from error
        self._native = _Counted(native, self.count_call)
        self._write_lock = threading.Lock()
        #: apply leases as files (a local root) or as manifest rows (an object store); tests of
        #: the row register set this on a local root
        self.leases_as_files = is_local(self.root)
        #: tries of a conflicting manifest write, and how to wait between them (tests shorten both)
        self.commit_attempts = COMMIT_ATTEMPTS
        self.sleep: Callable[[float], None] = time.sleep

    def namespace_id(self) -> str:
        return f"lance-sync dir {{ root: {self.root!r} }}"

    def internal_locations(self) -> set[str]:
        return {join_location(self.root, MANIFEST_TABLE)}

    def capabilities(self) -> Capabilities:
        return Capabilities(update_table_location=False, bulk_declare=True)

    def lease_parents(self, touched: list[Identifier]) -> list[Identifier]:
        """One lease per root, at the root (which exists before anything else)."""
        return [()]

    def lease_register(self, parent: Identifier, name: str, owner: str) -> LeaseRegister:
        if self.leases_as_files:
            return FileLeaseRegister(Path(self.root) / LEASE_DIRECTORY, name)
        return ManifestRowLeaseRegister(self, (*parent, name))

    # --- namespaces --------------------------------------------------------------------------

    def _create_namespace_object(self, id: Identifier, properties: dict[str, str]) -> dict[str, str]:
        request = CreateNamespaceRequest(id=_checked(id), properties=properties or None)
        created = self._committed(f"create namespace {_text(id)}",
                                  lambda: self._native.create_namespace(request))
        return dict(created.properties or {})

    def _replace_namespace_properties(self, id: Identifier, properties: dict[str, str]) -> None:
        self._patch_metadata("namespace", list(id), lambda current: properties)

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        return self._native.list_namespaces(request)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        return self._native.describe_namespace(request)

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        return self._native.namespace_exists(request)

    def _drop_namespace_object(self, id: Identifier, cascade: bool) -> dict[str, str] | None:
        request = DropNamespaceRequest(id=list(id))
        dropped = self._committed(f"drop namespace {_text(id)}", lambda: self._native.drop_namespace(request))
        return dropped.properties

    # --- tables ------------------------------------------------------------------------------

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        """Declare at pylance's own location, or write the row of any other location under the
        root, properties included, in one commit."""
        table_id = _checked(request.id)
        operation = f"declare table {_text(table_id)}"
        if request.location is None:
            return self._committed(operation, lambda: self._declare_native(request, table_id))
        location = join_location(self.root, request.location)
        relative = relative_to(location, self.root)
        if relative is None:
            raise InvalidInputError(f"dir: location {location} is outside the root {self.root}")
        properties = dict(request.properties or {})

        def attempt() -> lance.LanceDataset | None:
            dataset = self._writable_manifest()
            if dataset is not None:
                existing = self._existing_objects(dataset, [DELIMITER.join(table_id[:-1]),
                                                            DELIMITER.join(table_id)])
                self._insert_rows(dataset, [self._manifest_row(request, existing)])
            return dataset

        written = self._committed(operation, attempt)
        if written is None:
            self._register_in_fresh_root(table_id, relative, properties)
        else:
            self._compact_if_fragmented(written)
        return DeclareTableResponse(location=location, properties=properties or None,
                                    storage_options=self.storage_options() or None)

    def declare_tables(self, requests: list[DeclareTableRequest]) -> list[LanceNamespaceError | None]:
        """Many tables in one manifest commit: one scan, one merge of up to 1,000 rows.

        Rows are inserted the way pylance's own register writes them (a relative location,
        properties as JSON metadata), with a merge on the object id so that nothing that
        exists is overwritten. A conflicting commit is tried again from a fresh scan.
        """

        def attempt() -> tuple[list[LanceNamespaceError | None], lance.LanceDataset] | None:
            dataset = self._writable_manifest()
            if dataset is None:
                return None
            errors: list[LanceNamespaceError | None] = [None] * len(requests)
            existing = self._existing_objects(dataset)
            rows = []
            for index, request in enumerate(requests):
                try:
                    rows.append(self._manifest_row(request, existing))
                except LanceNamespaceError as error:
                    errors[index] = error
            if rows:
                self._insert_rows(dataset, rows)
            return errors, dataset

        written = self._committed(f"declare {len(requests)} tables", attempt)
        if written is None:  # a root without a manifest yet: one at a time
            return super().declare_tables(requests)
        self._compact_if_fragmented(written[1])
        return written[0]

    def _manifest_row(self, request: DeclareTableRequest, existing: dict[str, str]) -> dict[str, Any]:
        """The manifest row for a declared table; `existing` gains it (duplicates in a batch fail)."""
        table_id = _checked(request.id)
        namespace, object_id = DELIMITER.join(table_id[:-1]), DELIMITER.join(table_id)
        if namespace and existing.get(namespace) != "namespace":
            raise NamespaceNotFoundError(f"Namespace not found: {namespace}")
        if object_id in existing:
            raise TableAlreadyExistsError(f"Table already exists: {object_id}")
        if request.location is None:
            raise InvalidInputError("dir: a batch declare needs each table's location")
        relative = relative_to(join_location(self.root, request.location), self.root)
        if relative is None:
            raise InvalidInputError(f"dir: location {request.location} is outside the root {self.root}")
        existing[object_id] = "table"
        return {"object_id": object_id, "object_type": "table", "location": relative,
                "metadata": json.dumps(request.properties) if request.properties else None,
                "base_objects": None}

    def _declare_native(self, request: DeclareTableRequest, table_id: list[str]) -> DeclareTableResponse:
        """pylance's declare (its own location, properties in the same commit), after the
        namespace check pylance lacks."""
        namespace = table_id[:-1]
        if namespace and not self._namespace_exists(namespace):
            raise NamespaceNotFoundError(f"Namespace not found: {DELIMITER.join(namespace)}")
        return self._native.declare_table(request)

    def _register_in_fresh_root(self, table_id: list[str], relative: str, properties: dict[str, str]) -> None:
        """A root without a manifest table yet, so the table is at the root level (a namespace
        would have created the manifest). pylance's register creates the manifest with the
        row, the properties follow in a second commit, and the row is removed again if they
        cannot be written: the one declare that is two commits."""
        namespace = table_id[:-1]
        if namespace:
            raise NamespaceNotFoundError(f"Namespace not found: {DELIMITER.join(namespace)}")
        operation = f"declare table {_text(table_id)}"
        self._committed(operation, lambda: self._native.register_table(
            RegisterTableRequest(id=table_id, location=relative)))
        if not properties:
            return
        try:
            self._committed(operation, lambda: self._replace_metadata(
                "table", table_id, properties, expected=None))
        except Exception:
            with contextlib.suppress(LanceNamespaceError):  # the error to report is the first one
                self._committed(f"undo {operation}", lambda: self._native.deregister_table(
                    DeregisterTableRequest(id=table_id)))
            raise

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        return self._native.list_tables(request)

    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        response = self._native.describe_table(request)
        if self.config.storage and not response.storage_options:
            response.storage_options = self.storage_options()
        return response

    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        return self._native.table_exists(request)

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        return self._committed(f"deregister table {_text(request.id)}",
                               lambda: self._native.deregister_table(request))

    def drop_table(self, request: DropTableRequest) -> DropTableResponse:
        return self._committed(f"drop table {_text(request.id)}", lambda: self._native.drop_table(request))

    # --- reconciler extensions -----------------------------------------------------------------

    def update_namespace_properties(self, id: Identifier, updates: dict[str, str],
                                    removals: list[str]) -> None:
        self._patch_metadata("namespace", list(id),
                             lambda current: patched_properties(current, updates, removals))

    def update_table_properties(self, id: Identifier, updates: dict[str, str],
                                removals: list[str]) -> None:
        self._patch_metadata("table", list(id),
                             lambda current: patched_properties(current, updates, removals))

    def list_namespace_infos(self, parent: Identifier) -> Iterator[NamespaceInfo]:
        rows = self._manifest_rows("namespace")
        if rows is None:
            yield from super().list_namespace_infos(parent)
            return
        namespaces = {info.id: info for info in self._namespace_infos(rows)}
        if parent and parent not in namespaces:
            raise NamespaceNotFoundError(f"Namespace not found: {DELIMITER.join(parent)}")
        yield from (info for id, info in namespaces.items() if id[:-1] == parent)

    def list_table_infos(self, namespace: Identifier) -> Iterator[TableInfo]:
        rows = self._manifest_rows("table", within=DELIMITER.join(namespace) + DELIMITER if namespace else None)
        if rows is None:
            yield from super().list_table_infos(namespace)
            return
        if namespace and not self._namespace_exists(list(namespace)):
            raise NamespaceNotFoundError(f"Namespace not found: {DELIMITER.join(namespace)}")
        yield from (info for info in self._table_infos(rows) if info.id[:-1] == namespace)

    def snapshot(self) -> CatalogSnapshot | None:
        """Every namespace and table row in one scan of one manifest version."""
        rows = self._manifest_rows("namespace", "table")
        if rows is None:
            return None
        namespaces = {info.id: info for info in self._namespace_infos(rows)}
        tables: dict[Identifier, list[TableInfo]] = {}
        for info in self._table_infos(rows):
            tables.setdefault(info.id[:-1], []).append(info)
        return CatalogSnapshot(namespaces, tables)

    def _namespace_infos(self, rows: _Rows) -> Iterator[NamespaceInfo]:
        for object_id, object_type, _location, properties in _parsed(rows):
            if object_type == "namespace":
                yield NamespaceInfo(tuple(object_id.split(DELIMITER)), properties)

    def _table_infos(self, rows: _Rows) -> Iterator[TableInfo]:
        for object_id, object_type, location, properties in _parsed(rows):
            if object_type == "table":
                yield TableInfo(tuple(object_id.split(DELIMITER)),
                                join_location(self.root, location) if location else None, properties)

    # --- writing the manifest ------------------------------------------------------------------

    def _committed(self, operation: str, attempt: Callable[[], T]) -> T:
        """`attempt()` under the write lock, tried again on a fresh read while its commit
        conflicts with another writer's; ConcurrentModificationError when that persists.

        Each attempt reads what it needs and writes at most one commit, so trying it again
        is safe. Other errors from Lance become InternalError naming the operation.
        """
        last: Exception | None = None
        for tried in range(max(self.commit_attempts, 1)):
            if tried:
                self.sleep(backoff_seconds(tried - 1))
            try:
                with self._write_lock:
                    return attempt()
            except LanceNamespaceError as error:
                if not _is_commit_conflict(error):
                    raise
                last = error
            except (_Raced, OSError, RuntimeError, ValueError) as error:
                if not _is_commit_conflict(error):
                    raise InternalError(f"dir: {operation} in {self.root} failed: {_short(error)}") from error
                last = error
        raise ConcurrentModificationError(
            f"dir: {operation} in {self.root}: other writers kept changing the manifest table; "
            f"gave up after {max(self.commit_attempts, 1)} attempts (last: {_short(last)})") from last

    def _writable_manifest(self) -> lance.LanceDataset | None:
        """The manifest table at its latest version; None when the root has none yet."""
        self.count_call()
        uri = join_location(self.root, MANIFEST_TABLE)
        try:
            dataset = lance.dataset(uri, storage_options=self.storage_options() or None)
        except (ValueError, OSError) as error:
            if "not found" in str(error).lower():
                return None
            raise
        if not _MANIFEST_COLUMNS.issubset(dataset.schema.names):
            raise UnsupportedOperationError(
                f"dir: the manifest table {uri} lacks the columns {sorted(_MANIFEST_COLUMNS)}; "
                f"this pylance version cannot write it")
        return dataset

    def _existing_objects(self, dataset: lance.LanceDataset, ids: list[str] | None = None) -> dict[str, str]:
        """object_id -> object_type of the rows in `ids` (of every row when None)."""
        wanted = [i for i in ids if i] if ids is not None else None
        if wanted == []:
            return {}
        filter = None if wanted is None else f"object_id IN ({', '.join(_sql_string(i) for i in wanted)})"
        table = dataset.to_table(columns=["object_id", "object_type"], filter=filter)
        return {row["object_id"]: row["object_type"] for row in table.to_pylist()}

    def _insert_rows(self, dataset: lance.LanceDataset, rows: list[dict[str, Any]]) -> None:
        """One commit that adds `rows` to the version `dataset` was read at; rows were checked
        against that version, and Lance refuses the commit if another writer added one of
        their ids (or rewrote the manifest) since."""
        table = pa.Table.from_pylist(rows, schema=dataset.schema)
        self.count_call()
        result = (dataset.merge_insert("object_id").when_not_matched_insert_all()
                  .conflict_retries(0).execute(table))
        if result["num_inserted_rows"] != len(rows):
            raise InternalError(f"dir: the manifest of {self.root} took {result['num_inserted_rows']} "
                                f"of {len(rows)} new rows")

    def _patch_metadata(self, object_type: str, id: list[str],
                        patch: Callable[[dict[str, str]], dict[str, str]]) -> None:
        """Read the row's properties, `patch` them, and write them back only if they are still
        what was read (another writer's patch in between makes the write match nothing, and it
        is tried again from a fresh read)."""

        def attempt() -> lance.LanceDataset | None:
            dataset = self._writable_manifest()
            rows = [] if dataset is None else dataset.to_table(
                columns=["metadata"], filter=_row_filter(object_type, id)).to_pylist()
            if not rows:
                raise _missing(object_type, id)
            current = _properties(rows[0]["metadata"])
            patched = patch(current)
            if patched == current:
                return None
            self._replace_metadata(object_type, id, patched, expected=rows[0]["metadata"], dataset=dataset)
            return dataset

        written = self._committed(f"update {object_type} properties of {_text(id)}", attempt)
        if written is not None:
            self._compact_if_fragmented(written)

    def _replace_metadata(self, object_type: str, id: list[str], properties: dict[str, str], *,
                          expected: str | None, dataset: lance.LanceDataset | None = None) -> None:
        """One commit that sets the row's properties, if its metadata is still `expected`
        (None: no properties)."""
        if dataset is None:
            dataset = self._writable_manifest()
        if dataset is None:
            raise _missing(object_type, id)
        where = _row_filter(object_type, id)
        if expected is None:
            where += " AND metadata IS NULL"
        else:
            where += f" AND metadata = {_sql_string(expected)}"
        self.count_call()
        result = dataset.update({"metadata": _sql_string(json.dumps(properties))}, where=where,
                                conflict_retries=0)
        if result["num_rows_updated"] != 1:  # the row changed or went since it was read
            raise _Raced(f"the {object_type} {_text(id)} changed since it was read")

    def _row_metadata(self, object_type: str, id: list[str]) -> str | None:
        """The metadata text of a row as stored ("" when null); None when there is no such row."""
        dataset = self._writable_manifest()
        if dataset is None:
            return None
        return _metadata_of(dataset, object_type, id)

    def _swap_metadata(self, object_type: str, id: list[str], expected: str,
                       properties: dict[str, str]) -> str | None:
        """Set the row's properties if its metadata is still `expected`, in one commit; the new
        metadata text, or None when the row changed or went. Only conflicts with other writers'
        commits are tried again (on a fresh read, so the condition is checked again)."""

        def attempt() -> str | None:
            dataset = self._writable_manifest()
            if dataset is None or _metadata_of(dataset, object_type, id) != expected:
                return None
            try:
                self._replace_metadata(object_type, id, properties, expected=expected or None,
                                       dataset=dataset)
            except _Raced:
                return None
            return json.dumps(properties)

        return self._committed(f"swap {object_type} properties of {_text(id)}", attempt)

    def _delete_row(self, object_type: str, id: list[str], expected: str) -> bool:
        """Remove the row (a namespace without children, a table's registration) if its metadata
        is still `expected`, in one commit; False when it changed or went."""

        def attempt() -> bool:
            dataset = self._writable_manifest()
            if dataset is None or _metadata_of(dataset, object_type, id) != expected:
                return False
            self.count_call()
            condition = f"{_row_filter(object_type, id)} AND metadata = {_sql_string(expected)}"
            return dataset.delete(condition, conflict_retries=0)["num_deleted_rows"] == 1

        return self._committed(f"remove {object_type} {_text(id)}", attempt)

    def _compact_if_fragmented(self, written: lance.LanceDataset) -> None:
        """Best effort: fold the manifest's small fragments together once there are many (as
        counted in `written`, the version a write was made on), so that scans stay fast. A
        compaction that meets another writer's commit is dropped; readers keep reading the
        version they opened."""
        if len(written.get_fragments()) + 1 < COMPACT_AT_FRAGMENTS:
            return
        try:
            with self._write_lock:
                dataset = self._manifest()
                if dataset is None:
                    return
                self.count_call()
                dataset.optimize.compact_files()
        except Exception:  # noqa: BLE001 - tidying only; the write it follows has succeeded
            return

    # --- reading -------------------------------------------------------------------------------

    def _namespace_exists(self, id: list[str]) -> bool:
        try:
            self._native.describe_namespace(DescribeNamespaceRequest(id=list(id)))
        except NamespaceNotFoundError:
            return False
        return True

    def _manifest(self) -> lance.LanceDataset | None:
        """The manifest table for a bulk read; None when there is none the scan can use."""
        self.count_call()
        try:
            dataset = lance.dataset(join_location(self.root, MANIFEST_TABLE),
                                    storage_options=self.storage_options() or None)
        except (ValueError, OSError):
            return None
        return dataset if _MANIFEST_COLUMNS.issubset(dataset.schema.names) else None

    def _manifest_rows(self, *object_types: str, within: str | None = None) -> _Rows | None:
        """The manifest rows of these object types (whose object id starts with `within`, filtered
        by Lance in the scan), as columns, in one scan of one version; None when there is no
        usable manifest."""
        dataset = self._manifest()
        if dataset is None:
            return None
        condition = f"object_type IN ({', '.join(map(_sql_string, object_types))})"
        if within:
            condition += f" AND starts_with(object_id, {_sql_string(within)})"
        return dataset.to_table(columns=list(_ROW_COLUMNS), filter=condition).to_pydict()


class _Raced(Exception):
    """Another writer changed what an attempt read before the attempt could commit."""


def _metadata_of(dataset: lance.LanceDataset, object_type: str, id: list[str]) -> str | None:
    """A row's metadata text in this version of the manifest ("" when null); None without the row."""
    rows = dataset.to_table(columns=["metadata"], filter=_row_filter(object_type, id)).to_pylist()
    return (rows[0]["metadata"] or "") if rows else None


def _is_commit_conflict(error: BaseException) -> bool:
    """A commit that lost against another writer's: worth trying again on a fresh read."""
    if isinstance(error, _Raced | ConcurrentModificationError):
        return True
    if isinstance(error, LanceNamespaceError) and error.code != ErrorCode.INTERNAL:
        return False  # not found, already exists, invalid, ...: final answers
    return bool(_CONFLICT_WORDING.search(str(error)))


def _short(error: BaseException | None) -> str:
    """An error's message on one line, without the Rust source locations Lance appends."""
    text = _SOURCE_LOCATION.sub("", str(error)) if error is not None else ""
    return " ".join(text.split()) or type(error).__name__


def _missing(object_type: str, id: list[str]) -> LanceNamespaceError:
    missing = NamespaceNotFoundError if object_type == "namespace" else TableNotFoundError
    return missing(f"{object_type} not found: {DELIMITER.join(id)}")


def _row_filter(object_type: str, id: list[str]) -> str:
    return (f"object_id = {_sql_string(DELIMITER.join(id))} "
            f"AND object_type = {_sql_string(object_type)}")


def _checked(id: Sequence[str] | None) -> list[str]:
    """`id` as a list; InvalidInput unless it has names, each non-empty and without the delimiter."""
    if not id or any(not name or DELIMITER in name for name in id):
        raise InvalidInputError(f"dir: names must be non-empty and cannot contain '{DELIMITER}': {id}")
    return list(id)


def _text(id: Sequence[str] | None) -> str:
    return DELIMITER.join(id or [])


class _Counted:
    """Counts every call made to the wrapped pylance namespace."""

    def __init__(self, target: DirectoryNamespace, count: Callable[[], None]):
        self._target = target
        self._count = count

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._target, name)
        if not callable(attribute):
            return attribute

        def counted(*args: Any, **kwargs: Any) -> Any:
            self._count()
            return attribute(*args, **kwargs)

        return counted


def _parsed(rows: _Rows) -> Iterator[tuple[str, str, str | None, dict[str, str]]]:
    """Each row's object id, type, location and properties. Many rows carry the same metadata
    text (the same properties and owner mark), so each distinct text is parsed once; every row
    still gets its own dict."""
    parsed: dict[str, dict[str, str]] = {}
    for object_id, object_type, location, metadata in zip(*(rows[c] for c in _ROW_COLUMNS), strict=True):
        if metadata not in parsed:
            parsed[metadata] = _properties(metadata)
        yield object_id, object_type, location, dict(parsed[metadata])


def _properties(metadata: str | None) -> dict[str, str]:
    """A manifest row's properties, from its metadata column (JSON text)."""
    return dict(json.loads(metadata)) if metadata else {}


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# --- apply leases ----------------------------------------------------------------------------------


def _file_errors(method: Callable[..., T]) -> Callable[..., T]:
    """A file system failure (permissions, no flock() where the root lives) as InternalError
    naming the lease file, never a raw OSError."""

    @functools.wraps(method)
    def call(self: FileLeaseRegister, *args: Any) -> T:
        try:
            return method(self, *args)
        except OSError as error:
            raise InternalError(f"dir: the apply lease {self.path}: {_short(error)}") from error

    return call


class FileLeaseRegister(LeaseRegister):
    """An apply lease as the file `<directory>/<name>.json` of a local root.

    Creating it is exclusive: the record is written whole beside it, then linked to its name
    (link() fails when the name exists). A swap or a removal reads the file, compares it and
    writes (os.replace) or unlinks it while holding an exclusive flock() on the directory, which
    every swap and removal takes first, in every thread and process of the host: so each is
    atomic among them. The version is a digest of the file's bytes.
    """

    def __init__(self, directory: Path, name: str):
        self.path = directory / f"{name}.json"
        super().__init__(f"file {self.path}", str(self.path))

    @_file_errors
    def create(self, record: LeaseRecord) -> StoredLease | None:
        text = record.to_json()
        temporary = self._written(text)
        try:
            os.link(temporary, self.path)
        except FileExistsError:
            return None
        finally:
            temporary.unlink()
        return StoredLease(record, _digest(text))

    @_file_errors
    def read(self) -> StoredLease | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        record = LeaseRecord.from_json(text)
        if record is None:
            raise not_a_lease(self.label)
        return StoredLease(record, _digest(text))

    @_file_errors
    def swap(self, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        text = record.to_json()
        with self._locked():
            if not self._still(expected):
                return None
            os.replace(self._written(text), self.path)
        return StoredLease(record, _digest(text))

    @_file_errors
    def remove(self, expected: StoredLease) -> bool:
        with self._locked():
            if not self._still(expected):
                return False
            self.path.unlink()
        return True

    def _still(self, expected: StoredLease) -> bool:
        current = self.read()
        return current is not None and current.version == expected.version

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive flock() on the leases directory itself (so that no lock file is left)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path.parent, os.O_RDONLY)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # closing releases the lock

    def _written(self, text: str) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f"{self.path.name}.{uuid.uuid4().hex[:8]}.tmp")
        temporary.write_text(text, encoding="utf-8")
        return temporary


class ManifestRowLeaseRegister(LeaseRegister):
    """An apply lease as a namespace row of the manifest table of an object-store root (no file
    lock reaches there): a swap is one conditional row update, a removal one conditional row
    delete, each committed against the version it read and tried again on a fresh read while it
    conflicts with other writers' commits (see the module docstring). The version is the row's
    metadata text."""

    def __init__(self, driver: DirNamespace, id: Identifier):
        super().__init__(f"{driver.namespace_id()} {list(id)}", _text(id))
        self.driver = driver
        self.id = list(id)

    def create(self, record: LeaseRecord) -> StoredLease | None:
        request = CreateNamespaceRequest(id=self.id, mode="Create", properties=record.to_properties())
        try:
            self.driver.create_namespace(request)
        except NamespaceAlreadyExistsError:
            return None
        return StoredLease(record, "")  # as pylance wrote it: read before the first swap

    def read(self) -> StoredLease | None:
        text = self.driver._row_metadata("namespace", self.id)
        if text is None:
            return None
        record = LeaseRecord.from_properties(_properties(text))
        if record is None:
            raise not_a_lease(self.label)
        return StoredLease(record, text)

    def swap(self, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        text = self._version(expected)
        if text is None:
            return None
        written = self.driver._swap_metadata("namespace", self.id, text, record.to_properties())
        return StoredLease(record, written) if written is not None else None

    def remove(self, expected: StoredLease) -> bool:
        text = self._version(expected)
        return text is not None and self.driver._delete_row("namespace", self.id, text)

    def _version(self, expected: StoredLease) -> str | None:
        """The version to swap from; read when unknown (None: the lease is not `expected` now)."""
        if expected.version:
            return expected.version
        current = self.read()
        return current.version if current is not None and current.record == expected.record else None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]
