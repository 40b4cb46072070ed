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
- a table can be pointed at another location under the root in place, by rewriting its row's
  location (`update_table_location`);
- bulk reads scan the manifest once instead of describing every table.

Several processes may write to one root at once (two applies of different owners). The
manifest is one Lance table, so their commits can conflict: every write is one commit, made
against the version it read, and a conflicting commit is tried again on a fresh read (so an
object created or removed meanwhile gives the answer it would have given had it come first).
Rows the driver writes are committed with Lance's own conflict retries off: a retry that
Lance made by itself would not see the fresh state. Property updates are compare-and-swap:
the update only matches the row if its properties are still those that were read. When
conflicts persist, ConcurrentModificationError names the operation and the root. The rows,
what a failed commit means, and the reads and writes of the manifest table are `client`'s
(`DirClient`, the driver's `client`).

Writes within one process go through one lock per driver (its client's): local directories
gain nothing from concurrent commits to one table.

Apply leases (lance_sync.apply.lease) live at the root (`leases`): for a local root, as files
under `_lance_sync_leases/` swapped under an exclusive file lock (`FileLeaseRegister`); for an
object-store root, as a namespace row of the manifest table swapped by a conditional row update
(`ManifestRowLeaseRegister`).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    DirClient,
    LocationJoiner,
    RowParser,
    Rows,
    checked_id,
    id_text,
    is_commit_conflict,
    missing_error,
    row_filter,
    short_message,
    store_unavailable,
)
from lance_sync.drivers.dir.config import (
    DELIMITER,
    LEASE_DIRECTORY,
    MANIFEST_TABLE,
    DirConfig,
    DirRules,
)
from lance_sync.drivers.dir.leases import FileLeaseRegister, ManifestRowLeaseRegister
from lance_sync.drivers.leases import LeaseRegister
from lance_sync.drivers.support.retry import is_transient_store_error
from lance_sync.model.locations import is_local, join_location, normalize_location, relative_to
from lance_sync.model.storage_options import with_store_defaults

if TYPE_CHECKING:
    import lance
    from lance.namespace import DirectoryNamespace

ROOT = "root"



class DirNamespace(DirRules, SyncNamespace):
    config: DirConfig
    #: the manifest table holds every namespace and table row: one scan reads them all
    snapshot_reads = True

    def __init__(self, config: DirConfig | None = None, /, **properties: Any) -> None:
        super().__init__(config, **properties)
        # the root is created by the first write (pylance creates it), not here: plan reads only
        self.root = normalize_location(self.config.root)
        self.client = DirClient(self.root, self.storage_options() or None, self.count_call)
        #: apply leases as files (a local root) or as manifest rows (an object store); tests of
        #: the row register set this on a local root
        self.leases_as_files = is_local(self.root)
        self._native_lock = threading.Lock()
        # pylance reads the root's manifest table when its namespace opens: the store is reached
        # at once. A local root that does not exist yet holds nothing to read (`snapshot`), so
        # pylance (with pyarrow's datasets and pandas, a third of a plan's start-up) is imported
        # at the namespace's first use instead (a write, for a plan's apply).
        self._opened: _Counted | None = None if self._root_absent() else self._open_native()

    @property
    def _native(self) -> _Counted:
        """pylance's DirectoryNamespace of the root, every call to it counted."""
        opened = self._opened
        if opened is None:
            with self._native_lock:
                if self._opened is None:
                    self._opened = self._open_native()
                opened = self._opened
        return opened

    def _open_native(self) -> _Counted:
        from lance.namespace import DirectoryNamespace

        properties = {ROOT: self.root, **{f"storage.{k}": v for k, v in self.storage_options().items()}}
        try:
            native = DirectoryNamespace(**properties)
        except (OSError, RuntimeError, ValueError) as error:
            raise ServiceUnavailableError(f"dir: cannot open the catalog at {self.root}: {short_message(error)}") from error
        return _Counted(native, self.count_call, self.root)

    def _root_absent(self) -> bool:
        """A local root that does not exist (yet): no catalog there."""
        return is_local(self.root) and not os.path.lexists(self.root)

    def storage_options(self) -> dict[str, str]:
        """The configured storage options, over lance-sync's store retry defaults for a root on
        an object store (`model.storage_options.STORE_DEFAULTS`): the manifest table, the
        datasets and the leases of the root all live on that store."""
        configured = super().storage_options()
        return configured if is_local(self.root) else with_store_defaults(configured)

    def namespace_id(self) -> str:
        return f"lance-sync dir {{ root: {self.root!r} }}"

    def internal_locations(self) -> set[str]:
        return {join_location(self.root, MANIFEST_TABLE)}

    def capabilities(self) -> Capabilities:
        return Capabilities(update_table_location=True, rename_table=True, move_table=True,
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
        created = self.client.committed(f"create namespace {id_text(id)}",
                                  lambda: self._native.create_namespace(request))
        return dict(created.properties or {})

    def replace_namespace_properties(self, id: Identifier, properties: dict[str, str]) -> None:
        self.client.patch_metadata("namespace", list(id), lambda current: properties)

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        return self._native.list_namespaces(request)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        return self._native.describe_namespace(request)

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        return self._native.namespace_exists(request)

    def _drop_namespace_object(self, id: Identifier, cascade: bool) -> dict[str, str] | None:
        request = DropNamespaceRequest(id=list(id))
        dropped = self.client.committed(f"drop namespace {id_text(id)}", lambda: self._native.drop_namespace(request))
        return dropped.properties

    # --- tables ------------------------------------------------------------------------------

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        """Declare at pylance's own location, or write the row of any other location under the
        root, properties included, in one commit."""
        table_id = checked_id(request.id)
        operation = f"declare table {id_text(table_id)}"
        if request.location is None:
            return self.client.committed(operation, lambda: self._declare_native(request, table_id))
        location = join_location(self.root, request.location)
        relative = relative_to(location, self.root)
        if relative is None:
            raise InvalidInputError(f"dir: location {location} is outside the root {self.root}")
        properties = dict(request.properties or {})

        def attempt() -> lance.LanceDataset | None:
            dataset = self.client.writable_manifest()
            if dataset is not None:
                existing = self.client.existing_objects(dataset, [DELIMITER.join(table_id[:-1]),
                                                            DELIMITER.join(table_id)])
                self.client.insert_rows(dataset, [self._manifest_row(request, existing)])
            return dataset

        written = self.client.committed(operation, attempt)
        if written is None:
            self._register_in_fresh_root(table_id, relative, properties)
        else:
            self.client.compact_if_fragmented(written)
        return DeclareTableResponse(location=location, properties=properties or None,
                                    storage_options=self.storage_options() or None)

    def declare_tables(self, requests: list[DeclareTableRequest]) -> list[LanceNamespaceError | None]:
        """Many tables in one manifest commit: one scan, one merge of up to 1,000 rows.

        Rows are inserted the way pylance's own register writes them (a relative location,
        properties as JSON metadata), with a merge on the object id so that nothing that
        exists is overwritten. A conflicting commit is tried again from a fresh scan.
        """

        def attempt() -> tuple[list[LanceNamespaceError | None], lance.LanceDataset] | None:
            dataset = self.client.writable_manifest()
            if dataset is None:
                return None
            errors: list[LanceNamespaceError | None] = [None] * len(requests)
            existing = self.client.existing_objects(dataset)
            rows = []
            for index, request in enumerate(requests):
                try:
                    rows.append(self._manifest_row(request, existing))
                except LanceNamespaceError as error:
                    errors[index] = error
            if rows:
                self.client.insert_rows(dataset, rows)
            return errors, dataset

        written = self.client.committed(f"declare {len(requests)} tables", attempt)
        if written is None:  # a root without a manifest yet: one at a time
            return super().declare_tables(requests)
        self.client.compact_if_fragmented(written[1])
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
        self.client.committed(operation, lambda: self._native.register_table(
            RegisterTableRequest(id=table_id, location=relative)))
        if not properties:
            return
        try:
            self.client.committed(operation, lambda: self.client.replace_metadata(
                "table", table_id, properties, expected=None))
        except Exception:
            with contextlib.suppress(LanceNamespaceError):  # the error to report is the first one
                self.client.committed(f"undo {operation}", lambda: self._native.deregister_table(
                    DeregisterTableRequest(id=table_id)))
            raise

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        return self._native.list_tables(request)

    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        response = self._native.describe_table(request)
        options = self.storage_options()
        if options and not response.storage_options:
            response.storage_options = options
        return response

    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        return self._native.table_exists(request)

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        return self.client.committed(f"deregister table {id_text(request.id)}",
                               lambda: self._native.deregister_table(request))

    def rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        """Give the table's manifest row the new id, in one commit (pylance has no rename): its
        location, properties and dataset stay as they are (the dataset's version too), so the
        table keeps its data wherever it lies; a move to any namespace of the root is the same
        rewrite.

        Checked on the version the commit is made against, before it: TableNotFound for a
        missing source, NamespaceNotFound for a missing destination namespace,
        TableAlreadyExists for a destination id that is taken (by a table or a namespace). The
        commit replaces the row (`client.DirClient.replace_row_id`): one that conflicts with another writer's
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
            dataset = self.client.writable_manifest()
            rows = [] if dataset is None else dataset.to_table(filter=row_filter("table", source)).to_pylist()
            if dataset is None or not rows:
                raise missing_error("table", source)
            existing = self.client.existing_objects(dataset, [namespace, new_id])
            if namespace and existing.get(namespace) != "namespace":
                raise NamespaceNotFoundError(f"Namespace not found: {namespace}")
            if new_id in existing:
                raise TableAlreadyExistsError(f"Table already exists: {new_id}")
            self.client.replace_row_id(dataset, rows[0], source, new_id)
            return dataset

        self.client.compact_if_fragmented(self.client.committed(f"rename table {id_text(source)} to {new_id}", attempt))
        return RenameTableResponse()

    def update_table_location(self, id: Identifier, location: str) -> None:
        """Point the table's manifest row at another location under the root (taken from the root
        when relative), in one commit that rewrites the row's location and nothing else
        (`client.DirClient.replace_location`): the table keeps its id and properties, owner mark
        included, and no dataset is moved, written or deleted, at either location. A row that
        points there already is left alone.

        TableNotFound for a missing table, InvalidInput for a location outside the root, and
        UnsupportedOperation for a table at the root level (pylance finds those by their
        directory, not by their row), all before any change."""
        table_id = checked_id(id)
        if len(table_id) < 2:
            raise UnsupportedOperationError(
                f"dir: {id_text(table_id)} cannot be moved in place: pylance finds a table at the root "
                "level by its directory name, not by its manifest row")
        relative = relative_to(join_location(self.root, location), self.root)
        if relative is None:
            raise InvalidInputError(f"dir: location {location} is outside the root {self.root}")
        self.client.replace_location(table_id, relative)

    def drop_table(self, request: DropTableRequest) -> DropTableResponse:
        return self.client.committed(f"drop table {id_text(request.id)}", lambda: self._native.drop_table(request))

    # --- reconciler extensions -----------------------------------------------------------------

    def update_namespace_properties(self, id: Identifier, updates: dict[str, str],
                                    removals: list[str]) -> None:
        self.client.patch_metadata("namespace", list(id),
                             lambda current: patched_properties(current, updates, removals))

    def update_table_properties(self, id: Identifier, updates: dict[str, str],
                                removals: list[str]) -> None:
        self.client.patch_metadata("table", list(id),
                             lambda current: patched_properties(current, updates, removals))

    def list_namespace_infos(self, parent: Identifier) -> Iterator[NamespaceInfo]:
        rows = self.client.manifest_rows("namespace")
        if rows is None:
            yield from super().list_namespace_infos(parent)
            return
        namespaces = {info.id: info for info in self._namespace_infos(rows)}
        if parent and parent not in namespaces:
            raise NamespaceNotFoundError(f"Namespace not found: {DELIMITER.join(parent)}")
        yield from (info for id, info in namespaces.items() if id[:-1] == parent)

    def list_table_infos(self, namespace: Identifier) -> Iterator[TableInfo]:
        rows = self.client.manifest_rows("table", within=DELIMITER.join(namespace) + DELIMITER if namespace else None)
        if rows is None:
            yield from super().list_table_infos(namespace)
            return
        if namespace and not self._namespace_exists(list(namespace)):
            raise NamespaceNotFoundError(f"Namespace not found: {DELIMITER.join(namespace)}")
        yield from (info for info in self._table_infos(rows) if info.id[:-1] == namespace)

    def snapshot(self) -> CatalogSnapshot | None:
        """Every namespace and table row in one scan of one manifest version, read a batch of
        rows at a time (a million rows as Python text would double the plan's peak memory).
        A local root that does not exist holds nothing: one look at it, and no pylance."""
        if self._root_absent():
            self.count_call()
            return CatalogSnapshot({}, {})
        batches = self.client.manifest_batches("namespace", "table")
        if batches is None:
            return None
        namespaces: dict[Identifier, NamespaceInfo] = {}
        tables: dict[Identifier, list[TableInfo]] = {}
        parser, join = RowParser(), LocationJoiner(self.root)
        for rows in batches:
            for parent, name, object_type, location, properties in parser.grouped_rows(rows):
                if object_type == "table":
                    listed = tables.get(parent)
                    if listed is None:
                        listed = tables[parent] = []
                    listed.append(TableInfo((*parent, name), join(location) if location else None, properties))
                elif object_type == "namespace":
                    id = (*parent, name)
                    namespaces[id] = NamespaceInfo(id, properties)
        return CatalogSnapshot(namespaces, tables, normalized=True)

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

    # --- reading ------------------------------------------------------------------------------

    def _namespace_exists(self, id: list[str]) -> bool:
        try:
            self._native.describe_namespace(DescribeNamespaceRequest(id=list(id)))
        except NamespaceNotFoundError:
            return False
        return True


class _Counted:
    """Counts every call made to the wrapped pylance namespace, and turns a store failure worth
    trying again into ServiceUnavailable (`client.store_unavailable`)."""

    def __init__(self, target: DirectoryNamespace, count: Callable[[], None], root: str):
        self._target = target
        self._count = count
        self._root = root

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._target, name)
        if not callable(attribute):
            return attribute

        def counted(*args: Any, **kwargs: Any) -> Any:
            self._count()
            try:
                return attribute(*args, **kwargs)
            except Exception as error:
                if is_commit_conflict(error) or not is_transient_store_error(error):
                    raise
                raise store_unavailable(f"{name} in {self._root}", error) from error

        return counted

