"""Directory backend: pylance's DirectoryNamespace, with its quirks guarded.

pylance keeps namespaces and tables in a `__manifest` Lance table under the root. This
driver delegates to it and adds what lance-sync needs (see notes/lance-namespace.md):

- declaring into a namespace that does not exist fails (pylance accepts it);
- a table can live at any location under the root: pylance's declare only accepts its own
  generated path, so other locations are registered (relative path) and their properties
  written afterwards (pylance's register drops them);
- create modes ExistOk / Overwrite and drop mode Skip are honoured (pylance ignores them);
- namespace and table properties can be updated, by updating the manifest row;
- bulk reads scan the manifest once instead of describing every table.

Writes go through one lock per driver: the manifest is a single Lance table, and local
directories gain nothing from concurrent commits to it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
from lance.namespace import DirectoryNamespace
from lance_namespace import (
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    DropNamespaceRequest,
    DropNamespaceResponse,
    DropTableRequest,
    DropTableResponse,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceExistsRequest,
    RegisterTableRequest,
    RegisterTableResponse,
    TableExistsRequest,
)
from lance_namespace.errors import (
    InvalidInputError,
    LanceNamespaceError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from pydantic import Field

from lance_sync.drivers.base import (
    CREATE_MODES,
    DROP_BEHAVIORS,
    DROP_MODES,
    BackendConfig,
    Capabilities,
    Identifier,
    NamespaceInfo,
    SyncNamespace,
    TableInfo,
    patched_properties,
    request_mode,
)
from lance_sync.locations import is_local, join_location, normalize_location, relative_to

ROOT = "root"
MANIFEST_TABLE = "__manifest"
_DELIMITER = "$"


class DirConfig(BackendConfig):
    root: str = Field(description="Directory or object-store URI that holds the namespace. "
                      "A relative path is taken from the manifest file's folder.")


class DirNamespace(SyncNamespace):
    backend_type = "dir"
    config_model = DirConfig
    namespace_levels = (1, None)
    table_namespace_levels = (1, None)

    def __init__(self, **properties: Any) -> None:
        super().__init__(**properties)
        self.root = normalize_location(self.config.root)
        if is_local(self.root):
            Path(self.root).mkdir(parents=True, exist_ok=True)
        native_properties = {ROOT: self.root}
        native_properties.update({f"storage.{k}": v for k, v in self.config.storage.items()})
        self._native = _Counted(DirectoryNamespace(**native_properties), self.count_call)
        self._write_lock = threading.Lock()

    def namespace_id(self) -> str:
        return f"lance-sync dir {{ root: {self.root!r} }}"

    def internal_locations(self) -> set[str]:
        return {join_location(self.root, MANIFEST_TABLE)}

    def capabilities(self) -> Capabilities:
        return Capabilities(update_table_location=False, bulk_declare=True)

    @classmethod
    def check_namespace_id(cls, parts: Identifier, config: BackendConfig) -> str | None:
        if any(_DELIMITER in p for p in parts):
            return f"names in a dir backend cannot contain '{_DELIMITER}'"
        return None

    @classmethod
    def check_location(cls, location: str, config: BackendConfig) -> str | None:
        assert isinstance(config, DirConfig)
        root = normalize_location(config.root)
        if relative_to(location, root) is None:
            return f"a dir backend registers only locations inside its root {root} (got {location})"
        return None

    # --- namespaces --------------------------------------------------------------------------

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        self._check_names(request.id)
        mode = request_mode(request.mode, CREATE_MODES)
        with self._write_lock:
            if mode != "create" and self._namespace_exists(request.id):
                if mode == "overwrite":
                    self._write_properties("namespace", request.id, request.properties or {})
                    return CreateNamespaceResponse(properties=request.properties or {})
                return CreateNamespaceResponse(properties=self._namespace_properties(request.id))
            return self._native.create_namespace(request)

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        return self._native.list_namespaces(request)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        return self._native.describe_namespace(request)

    def namespace_exists(self, request: NamespaceExistsRequest) -> None:
        return self._native.namespace_exists(request)

    def drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        if request_mode(request.behavior, DROP_BEHAVIORS, "behavior") == "cascade":
            raise UnsupportedOperationError("dir: cascade drop is not supported; drop the tables first")
        with self._write_lock:
            if request_mode(request.mode, DROP_MODES) == "skip" and not self._namespace_exists(request.id):
                return DropNamespaceResponse()
            return self._native.drop_namespace(request)

    # --- tables ------------------------------------------------------------------------------

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        """Declare at pylance's own location, or register any other location under the root."""
        self._check_names(request.id)
        namespace = list(request.id[:-1])
        with self._write_lock:
            if namespace and not self._namespace_exists(namespace):
                raise NamespaceNotFoundError(f"Namespace not found: {_DELIMITER.join(namespace)}")
            if request.location is None:
                return self._native.declare_table(request)
            location = normalize_location(request.location)
            relative = relative_to(location, self.root)
            if relative is None:
                raise InvalidInputError(f"dir: location {location} is outside the root {self.root}")
            self._native.register_table(RegisterTableRequest(id=request.id, location=relative))
            properties = dict(request.properties or {})
            if properties:
                self._write_properties("table", request.id, properties)
        return DeclareTableResponse(location=location, properties=properties or None,
                                    storage_options=self.storage_options() or None)

    def declare_tables(self, requests: list[DeclareTableRequest]) -> list[LanceNamespaceError | None]:
        """Many tables in one manifest commit: each declare is otherwise two commits of 15-25 ms.

        Rows are inserted the way pylance's own register writes them (a relative location,
        properties as JSON metadata), with a merge on the object id so that nothing that
        exists is overwritten.
        """
        errors: list[LanceNamespaceError | None] = [None] * len(requests)
        rows = []
        with self._write_lock:
            dataset = self._manifest()
            if dataset is None:
                return super().declare_tables(requests)
            existing = {row["object_id"]: row["object_type"]
                        for row in dataset.to_table(columns=["object_id", "object_type"]).to_pylist()}
            for index, request in enumerate(requests):
                try:
                    rows.append(self._manifest_row(request, existing))
                except LanceNamespaceError as error:
                    errors[index] = error
            if rows:
                table = pa.Table.from_pylist(rows, schema=dataset.schema)
                self.count_call()
                dataset.merge_insert("object_id").when_not_matched_insert_all().execute(table)
        return errors

    def _manifest_row(self, request: DeclareTableRequest, existing: dict[str, str]) -> dict[str, Any]:
        """The manifest row for a declared table; `existing` gains it (duplicates in a batch fail)."""
        self._check_names(request.id)
        namespace, object_id = _DELIMITER.join(request.id[:-1]), _DELIMITER.join(request.id)
        if namespace and existing.get(namespace) != "namespace":
            raise NamespaceNotFoundError(f"Namespace not found: {namespace}")
        if object_id in existing:
            raise TableAlreadyExistsError(f"Table already exists: {object_id}")
        if request.location is None:
            raise InvalidInputError("dir: a batch declare needs each table's location")
        relative = relative_to(normalize_location(request.location), self.root)
        if relative is None:
            raise InvalidInputError(f"dir: location {request.location} is outside the root {self.root}")
        existing[object_id] = "table"
        return {"object_id": object_id, "object_type": "table", "location": relative,
                "metadata": json.dumps(request.properties) if request.properties else None,
                "base_objects": None}

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        location = join_location(self.root, request.location)
        self.declare_table(DeclareTableRequest(id=request.id, location=location,
                                               properties=request.properties))
        return RegisterTableResponse(location=request.location, properties=request.properties)

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        return self._native.list_tables(request)

    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        response = self._native.describe_table(request)
        if self.config.storage and not response.storage_options:
            response.storage_options = self.storage_options()
        return response

    def table_exists(self, request: TableExistsRequest) -> None:
        return self._native.table_exists(request)

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        with self._write_lock:
            return self._native.deregister_table(request)

    def drop_table(self, request: DropTableRequest) -> DropTableResponse:
        with self._write_lock:
            return self._native.drop_table(request)

    # --- reconciler extensions -----------------------------------------------------------------

    def update_namespace_properties(self, id: Identifier, updates: dict[str, str],
                                    removals: list[str]) -> None:
        with self._write_lock:
            current = self._namespace_properties(list(id))
            self._write_properties("namespace", list(id), patched_properties(current, updates, removals))

    def update_table_properties(self, id: Identifier, updates: dict[str, str],
                                removals: list[str]) -> None:
        with self._write_lock:
            current = self._native.describe_table(DescribeTableRequest(id=list(id))).properties or {}
            self._write_properties("table", list(id), patched_properties(current, updates, removals))

    def list_namespace_infos(self, parent: Identifier) -> Iterator[NamespaceInfo]:
        rows = self._manifest_rows("namespace")
        if rows is None:
            yield from super().list_namespace_infos(parent)
            return
        if parent and not any(tuple(r["object_id"].split(_DELIMITER)) == parent for r in rows):
            raise NamespaceNotFoundError(f"Namespace not found: {_DELIMITER.join(parent)}")
        for row in rows:
            child = tuple(row["object_id"].split(_DELIMITER))
            if child[:-1] == parent:
                yield NamespaceInfo(child, _metadata(row))

    def list_table_infos(self, namespace: Identifier) -> Iterator[TableInfo]:
        rows = self._manifest_rows("table")
        if rows is None:
            yield from super().list_table_infos(namespace)
            return
        if namespace and not self._namespace_exists(list(namespace)):
            raise NamespaceNotFoundError(f"Namespace not found: {_DELIMITER.join(namespace)}")
        for row in rows:
            table_id = tuple(row["object_id"].split(_DELIMITER))
            if table_id[:-1] == namespace:
                location = join_location(self.root, row["location"]) if row["location"] else None
                yield TableInfo(table_id, location, _metadata(row))

    # --- helpers -----------------------------------------------------------------------------

    @staticmethod
    def _check_names(id: list[str] | None) -> None:
        if not id or any(not name or _DELIMITER in name for name in id):
            raise InvalidInputError(f"dir: names must be non-empty and cannot contain "
                                    f"'{_DELIMITER}': {id}")

    def _namespace_exists(self, id: list[str]) -> bool:
        try:
            self._native.describe_namespace(DescribeNamespaceRequest(id=list(id)))
        except NamespaceNotFoundError:
            return False
        return True

    def _namespace_properties(self, id: list[str]) -> dict[str, str]:
        return dict(self._native.describe_namespace(DescribeNamespaceRequest(id=id)).properties or {})

    def _manifest(self) -> lance.LanceDataset | None:
        self.count_call()
        try:
            dataset = lance.dataset(join_location(self.root, MANIFEST_TABLE),
                                    storage_options=self.storage_options() or None)
        except (ValueError, OSError):
            return None
        expected = {"object_id", "object_type", "location", "metadata"}
        return dataset if expected <= set(dataset.schema.names) else None

    def _manifest_rows(self, object_type: str) -> list[dict[str, Any]] | None:
        """All manifest rows of one type, in one scan; None when there is no usable manifest."""
        dataset = self._manifest()
        if dataset is None:
            return None
        table = dataset.to_table(columns=["object_id", "location", "metadata"],
                                 filter=f"object_type = {_sql_string(object_type)}")
        return table.to_pylist()

    def _write_properties(self, object_type: str, id: list[str], properties: dict[str, str]) -> None:
        dataset = self._manifest()
        if dataset is None:
            raise UnsupportedOperationError("dir: this root has no manifest table to hold properties")
        where = (f"object_id = {_sql_string(_DELIMITER.join(id))} "
                 f"AND object_type = {_sql_string(object_type)}")
        result = dataset.update({"metadata": _sql_string(json.dumps(properties))}, where=where)
        if result["num_rows_updated"] != 1:
            missing = NamespaceNotFoundError if object_type == "namespace" else TableNotFoundError
            raise missing(f"{object_type} not found: {_DELIMITER.join(id)}")


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


def _metadata(row: dict[str, Any]) -> dict[str, str]:
    return dict(json.loads(row["metadata"])) if row.get("metadata") else {}


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
