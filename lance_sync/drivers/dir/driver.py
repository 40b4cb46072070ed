"""Directory backend: pylance's DirectoryNamespace, with its quirks guarded.

pylance keeps namespaces and tables in a `__manifest` Lance table under the root. This
driver delegates to it and adds what lance-sync needs (docs/backends/dir.md, "What lance-sync
adds to pylance's DirectoryNamespace", sets each pylance behaviour beside the driver's):

- declaring into a namespace that does not exist fails (pylance accepts it);
- a table can live at any location under the root (a relative location is taken from the
  root): pylance's declare only accepts its own generated path, so the driver writes the
  manifest row itself (relative location and properties in one commit, the way pylance's
  register writes rows);
- request modes mean what they mean on every backend (lance_sync.drivers.base; pylance
  ignores them);
- namespace and table properties can be updated, by updating the manifest row;
- a table can be renamed (also into another namespace), by giving its row another object id;
- bulk reads scan the manifest once instead of describing every table.

Several processes may write to one root at once (two applies of different owners). The
manifest is one Lance table, so their commits can conflict: every write is one commit, made
against the version it read, and a conflicting commit is tried again on a fresh read (so an
object created or removed meanwhile gives the answer it would have given had it come first).
Rows the driver writes are committed with Lance's own conflict retries off: a retry that
Lance made by itself would not see the fresh state. Property updates are compare-and-swap:
the update only matches the row if its properties are still those that were read. When
conflicts persist, ConcurrentModificationError names the operation and the root. The rows,
and what a failed commit means, are `client`'s.

Writes within one process go through one lock per driver: local directories gain nothing
from concurrent commits to one table.

Apply leases (lance_sync.apply.lease) live at the root (`leases`): for a local root, as files
under `_lance_sync_leases/` swapped under an exclusive file lock (`FileLeaseRegister`); for an
object-store root, as a namespace row of the manifest table swapped by a conditional row update
(`ManifestRowLeaseRegister`).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
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
    RenameTableRequest,
    RenameTableResponse,
    TableExistsRequest,
    TableExistsResponse,
)
from lance_namespace.errors import (
    ConcurrentModificationError,
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    NamespaceNotFoundError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
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
from lance_sync.drivers.dir.client import (
    MANIFEST_COLUMNS,
    MANIFEST_TABLE,
    ROW_COLUMNS,
    Raced,
    RowParser,
    Rows,
    checked_id,
    id_text,
    is_commit_conflict,
    metadata_of,
    missing_error,
    properties_of,
    row_filter,
    short_message,
    sql_string,
)
from lance_sync.drivers.dir.config import DELIMITER, DirConfig, DirRules
from lance_sync.drivers.dir.leases import (
    LEASE_DIRECTORY,
    FileLeaseRegister,
    ManifestRowLeaseRegister,
)
from lance_sync.drivers.leases import LeaseRegister
from lance_sync.drivers.support.retry import backoff_seconds
from lance_sync.model.locations import is_local, join_location, normalize_location, relative_to

ROOT = "root"

#: tries of one manifest write (the first included) while other processes' commits conflict
#: with it; the waits between them follow retry.backoff_seconds (jittered, growing and capped,
#: so a write that keeps conflicting gives up after a bounded wait)
COMMIT_ATTEMPTS = 8

#: the driver's row writes each add a small fragment to the manifest (pylance's own writes
#: rewrite it whole); past this many fragments they are folded together after a write
COMPACT_AT_FRAGMENTS = 32
#: manifest rows read at a time by a snapshot
ROW_BATCH = 65_536

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
            raise ServiceUnavailableError(f"dir: cannot open the catalog at {self.root}: {short_message(error)}") from error
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
        return Capabilities(update_table_location=False, rename_table=True, move_table=True,
                            move_fixed_levels=0, bulk_declare=True)

    def lease_parents(self, touched: list[Identifier]) -> list[Identifier]:
        """One lease per root, at the root (which exists before anything else)."""
        return [()]

    def lease_register(self, parent: Identifier, name: str, owner: str) -> LeaseRegister:
        if self.leases_as_files:
            return FileLeaseRegister(Path(self.root) / LEASE_DIRECTORY, name)
        return ManifestRowLeaseRegister(self, (*parent, name))

    # --- namespaces --------------------------------------------------------------------------

    def _create_namespace_object(self, id: Identifier, properties: dict[str, str]) -> dict[str, str]:
        request = CreateNamespaceRequest(id=checked_id(id), properties=properties or None)
        created = self._committed(f"create namespace {id_text(id)}",
                                  lambda: self._native.create_namespace(request))
        return dict(created.properties or {})

    def replace_namespace_properties(self, id: Identifier, properties: dict[str, str]) -> None:
        self._patch_metadata("namespace", list(id), lambda current: properties)

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        return self._native.list_namespaces(request)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        return self._native.describe_namespace(request)

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        return self._native.namespace_exists(request)

    def _drop_namespace_object(self, id: Identifier, cascade: bool) -> dict[str, str] | None:
        request = DropNamespaceRequest(id=list(id))
        dropped = self._committed(f"drop namespace {id_text(id)}", lambda: self._native.drop_namespace(request))
        return dropped.properties

    # --- tables ------------------------------------------------------------------------------

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        """Declare at pylance's own location, or write the row of any other location under the
        root, properties included, in one commit."""
        table_id = checked_id(request.id)
        operation = f"declare table {id_text(table_id)}"
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
        table_id = checked_id(request.id)
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
        operation = f"declare table {id_text(table_id)}"
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
        return self._committed(f"deregister table {id_text(request.id)}",
                               lambda: self._native.deregister_table(request))

    def rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        """Give the table's manifest row the new id, in one commit (pylance has no rename): its
        location, properties and dataset stay as they are (the dataset's version too), so the
        table keeps its data wherever it lies; a move to any namespace of the root is the same
        rewrite.

        Checked on the version the commit is made against, before it: TableNotFound for a
        missing source, NamespaceNotFound for a missing destination namespace,
        TableAlreadyExists for a destination id that is taken (by a table or a namespace). The
        commit replaces the row (`_replace_row_id`): one that conflicts with another writer's
        is tried again on a fresh read, so the table is never under both ids, nor under neither.
        A rename sent again after it was carried out meets TableNotFound (the source is gone;
        the destination row holds the source's location).

        Tables at the root level are out of reach (UnsupportedOperation): pylance finds them by
        their directory (`{root}/{name}.lance`), not by their row, so a renamed row would not
        be seen (lance-sync's manifests never declare tables there).
        """
        source_id, destination_id = self._rename_ids(request, fixed_levels=0)
        source, destination = checked_id(source_id), checked_id(destination_id)
        if len(source) < 2 or len(destination) < 2:
            raise UnsupportedOperationError(
                f"dir: {id_text(source)} cannot be renamed to {id_text(destination)}: pylance finds a table "
                "at the root level by its directory name, not by its manifest row")
        namespace, new_id = DELIMITER.join(destination[:-1]), DELIMITER.join(destination)

        def attempt() -> lance.LanceDataset:
            dataset = self._writable_manifest()
            rows = [] if dataset is None else dataset.to_table(filter=row_filter("table", source)).to_pylist()
            if dataset is None or not rows:
                raise missing_error("table", source)
            existing = self._existing_objects(dataset, [namespace, new_id])
            if namespace and existing.get(namespace) != "namespace":
                raise NamespaceNotFoundError(f"Namespace not found: {namespace}")
            if new_id in existing:
                raise TableAlreadyExistsError(f"Table already exists: {new_id}")
            self._replace_row_id(dataset, rows[0], source, new_id)
            return dataset

        self._compact_if_fragmented(self._committed(f"rename table {id_text(source)} to {new_id}", attempt))
        return RenameTableResponse()

    def drop_table(self, request: DropTableRequest) -> DropTableResponse:
        return self._committed(f"drop table {id_text(request.id)}", lambda: self._native.drop_table(request))

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
        """Every namespace and table row in one scan of one manifest version, read a batch of
        rows at a time (a million rows as Python text would double the plan's peak memory)."""
        batches = self._manifest_batches("namespace", "table")
        if batches is None:
            return None
        namespaces: dict[Identifier, NamespaceInfo] = {}
        tables: dict[Identifier, list[TableInfo]] = {}
        parser = RowParser()
        for rows in batches:
            for id, object_type, location, properties in parser.rows(rows):
                if object_type == "namespace":
                    namespaces[id] = NamespaceInfo(id, properties)
                elif object_type == "table":
                    tables.setdefault(id[:-1], []).append(self._table_info(id, location, properties))
        return CatalogSnapshot(namespaces, tables)

    def _namespace_infos(self, rows: Rows) -> Iterator[NamespaceInfo]:
        for id, object_type, _location, properties in RowParser().rows(rows):
            if object_type == "namespace":
                yield NamespaceInfo(id, properties)

    def _table_infos(self, rows: Rows) -> Iterator[TableInfo]:
        for id, object_type, location, properties in RowParser().rows(rows):
            if object_type == "table":
                yield self._table_info(id, location, properties)

    def _table_info(self, id: Identifier, location: str | None, properties: dict[str, str]) -> TableInfo:
        return TableInfo(id, join_location(self.root, location) if location else None, properties)

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
                if not is_commit_conflict(error):
                    raise
                last = error
            except (Raced, OSError, RuntimeError, ValueError) as error:
                if not is_commit_conflict(error):
                    raise InternalError(f"dir: {operation} in {self.root} failed: {short_message(error)}") from error
                last = error
        raise ConcurrentModificationError(
            f"dir: {operation} in {self.root}: other writers kept changing the manifest table; "
            f"gave up after {max(self.commit_attempts, 1)} attempts (last: {short_message(last)})") from last

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
        if not MANIFEST_COLUMNS.issubset(dataset.schema.names):
            raise UnsupportedOperationError(
                f"dir: the manifest table {uri} lacks the columns {sorted(MANIFEST_COLUMNS)}; "
                f"this pylance version cannot write it")
        return dataset

    def _existing_objects(self, dataset: lance.LanceDataset, ids: list[str] | None = None) -> dict[str, str]:
        """object_id -> object_type of the rows in `ids` (of every row when None)."""
        wanted = [i for i in ids if i] if ids is not None else None
        if wanted == []:
            return {}
        filter = None if wanted is None else f"object_id IN ({', '.join(sql_string(i) for i in wanted)})"
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

    def _replace_row_id(self, dataset: lance.LanceDataset, row: dict[str, Any], id: list[str],
                        new_id: str) -> None:
        """One commit, against the version `dataset` was read at, that inserts the table row
        `row` of `id` under `new_id` and deletes it under `id`: a merge on the object id, so that
        Lance refuses the commit if another writer added `new_id` or changed the row since."""
        moved = pa.Table.from_pylist([{**row, "object_id": new_id}], schema=dataset.schema)
        self.count_call()
        result = (dataset.merge_insert("object_id").when_not_matched_insert_all()
                  .when_not_matched_by_source_delete(row_filter("table", id))
                  .conflict_retries(0).execute(moved))
        if (result["num_inserted_rows"], result["num_deleted_rows"]) != (1, 1):
            raise InternalError(f"dir: the manifest of {self.root} took {result['num_inserted_rows']} new "
                                f"row(s) for {new_id} and deleted {result['num_deleted_rows']} for "
                                f"{row['object_id']}, where one of each was asked")

    def _patch_metadata(self, object_type: str, id: list[str],
                        patch: Callable[[dict[str, str]], dict[str, str]]) -> None:
        """Read the row's properties, `patch` them, and write them back only if they are still
        what was read (another writer's patch in between makes the write match nothing, and it
        is tried again from a fresh read)."""

        def attempt() -> lance.LanceDataset | None:
            dataset = self._writable_manifest()
            rows = [] if dataset is None else dataset.to_table(
                columns=["metadata"], filter=row_filter(object_type, id)).to_pylist()
            if not rows:
                raise missing_error(object_type, id)
            current = properties_of(rows[0]["metadata"])
            patched = patch(current)
            if patched == current:
                return None
            self._replace_metadata(object_type, id, patched, expected=rows[0]["metadata"], dataset=dataset)
            return dataset

        written = self._committed(f"update {object_type} properties of {id_text(id)}", attempt)
        if written is not None:
            self._compact_if_fragmented(written)

    def _replace_metadata(self, object_type: str, id: list[str], properties: dict[str, str], *,
                          expected: str | None, dataset: lance.LanceDataset | None = None) -> None:
        """One commit that sets the row's properties, if its metadata is still `expected`
        (None: no properties)."""
        if dataset is None:
            dataset = self._writable_manifest()
        if dataset is None:
            raise missing_error(object_type, id)
        where = row_filter(object_type, id)
        if expected is None:
            where += " AND metadata IS NULL"
        else:
            where += f" AND metadata = {sql_string(expected)}"
        self.count_call()
        result = dataset.update({"metadata": sql_string(json.dumps(properties))}, where=where,
                                conflict_retries=0)
        if result["num_rows_updated"] != 1:  # the row changed or went since it was read
            raise Raced(f"the {object_type} {id_text(id)} changed since it was read")

    def _row_metadata(self, object_type: str, id: list[str]) -> str | None:
        """The metadata text of a row as stored ("" when null); None when there is no such row."""
        dataset = self._writable_manifest()
        if dataset is None:
            return None
        return metadata_of(dataset, object_type, id)

    def _swap_metadata(self, object_type: str, id: list[str], expected: str,
                       properties: dict[str, str]) -> str | None:
        """Set the row's properties if its metadata is still `expected`, in one commit; the new
        metadata text, or None when the row changed or went. Only conflicts with other writers'
        commits are tried again (on a fresh read, so the condition is checked again)."""

        def attempt() -> str | None:
            dataset = self._writable_manifest()
            if dataset is None or metadata_of(dataset, object_type, id) != expected:
                return None
            try:
                self._replace_metadata(object_type, id, properties, expected=expected or None,
                                       dataset=dataset)
            except Raced:
                return None
            return json.dumps(properties)

        return self._committed(f"swap {object_type} properties of {id_text(id)}", attempt)

    def _delete_row(self, object_type: str, id: list[str], expected: str) -> bool:
        """Remove the row (a namespace without children, a table's registration) if its metadata
        is still `expected`, in one commit; False when it changed or went."""

        def attempt() -> bool:
            dataset = self._writable_manifest()
            if dataset is None or metadata_of(dataset, object_type, id) != expected:
                return False
            self.count_call()
            condition = f"{row_filter(object_type, id)} AND metadata = {sql_string(expected)}"
            return dataset.delete(condition, conflict_retries=0)["num_deleted_rows"] == 1

        return self._committed(f"remove {object_type} {id_text(id)}", attempt)

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
        return dataset if MANIFEST_COLUMNS.issubset(dataset.schema.names) else None

    def _manifest_rows(self, *object_types: str, within: str | None = None) -> Rows | None:
        """The manifest rows of these object types (whose object id starts with `within`, filtered
        by Lance in the scan), as columns, in one scan of one version; None when there is no
        usable manifest."""
        dataset = self._manifest()
        if dataset is None:
            return None
        condition = f"object_type IN ({', '.join(map(sql_string, object_types))})"
        if within:
            condition += f" AND starts_with(object_id, {sql_string(within)})"
        return dataset.to_table(columns=list(ROW_COLUMNS), filter=condition).to_pydict()

    def _manifest_batches(self, *object_types: str) -> Iterator[Rows] | None:
        """`_manifest_rows` of the whole root, a batch of rows at a time (one scan of one version)."""
        dataset = self._manifest()
        if dataset is None:
            return None
        condition = f"object_type IN ({', '.join(map(sql_string, object_types))})"
        return (batch.to_pydict() for batch in dataset.to_batches(columns=list(ROW_COLUMNS), filter=condition,
                                                                   batch_size=ROW_BATCH))



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

