"""Apache Iceberg REST Catalog backend (spec: iceberg-rest.md).

Identifiers are [warehouse, namespace..., table]. The warehouse picks the catalog: its API
prefix comes from GET /v1/config?warehouse=... (cached; the warehouse name itself when the
config names none). A Lance table is an Iceberg table with a one-column dummy schema whose
properties say `table_type=lance` and whose location is the Lance dataset's root.

Where the upstream server is looser than the spec, the driver checks for itself: a child
namespace needs its parent, and a namespace with child namespaces is not empty.

Modules: `client` (`IcebergClient`, one per driver, shared with its leases) sends every call:
the HTTP transport with `auth` (the bearer token or the OAuth2 client credentials), the
warehouses' API prefixes, ids written as paths (split by `identifiers`), and the translation
of error answers at one place (`IcebergClient.send`, with `errors`): what a 404 or 409 means
depends on the call, the rest by status. `answers` holds the models of the OpenAPI schemas
every answer is parsed into where it enters (`send(..., expect=Model)`): a body without that
shape is a BadAnswerError naming the call, retried like a 5xx for reads, never an empty listing.

Apply leases (`leases.IcebergLeaseRegister`) are a small Iceberg table inside the lease
namespace: every change of the lease is a table commit whose requirements make the catalog
refuse it (409) if another commit came first.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from lance_namespace import (
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    RenameTableRequest,
    RenameTableResponse,
    TableExistsRequest,
    TableExistsResponse,
)
from lance_namespace.errors import (
    ConcurrentModificationError,
    InvalidInputError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)

from lance_sync.drivers.base import (
    Capabilities,
    Identifier,
    NamespaceInfo,
    SyncNamespace,
    TableInfo,
)
from lance_sync.drivers.iceberg.answers import (
    CommitTableAnswer,
    IcebergTablesAnswer,
    ListNamespacesAnswer,
    LoadTableAnswer,
    NamespaceAnswer,
    UpdateNamespacePropertiesAnswer,
)
from lance_sync.drivers.iceberg.client import IcebergClient
from lance_sync.drivers.iceberg.config import LEVEL_SEPARATOR, IcebergConfig, IcebergRules
from lance_sync.drivers.iceberg.identifiers import (
    display,
    path_part,
    split_listed_namespace,
    split_namespace,
    split_table,
)
from lance_sync.drivers.iceberg.leases import IcebergLeaseRegister
from lance_sync.drivers.leases import LeaseRegister
from lance_sync.drivers.support.paging import follow_pages
from lance_sync.model.locations import normalize_location
from lance_sync.model.marks import TABLE_TYPE_KEY, is_lance_table, lance_table_properties

#: the companion Iceberg table's schema: one nullable string column `dummy`
DUMMY_SCHEMA = {"type": "struct", "schema-id": 0,
                "fields": [{"id": 1, "name": "dummy", "type": "string", "required": False}]}
#: table and namespace loads in flight at once, per driver, in its own bulk reads (a planner
#: runs the loads on its own pool instead: see `table_info_parts`)
LOAD_PARALLELISM = 16
#: table loads per part of `table_info_parts`
LOADS_PER_PART = 25
#: a rename stays in its warehouse (each warehouse is a catalog of its own, with its own prefix)
MOVE_FIXED_LEVELS = 1
T = TypeVar("T")
R = TypeVar("R")


class IcebergNamespace(IcebergRules, SyncNamespace):
    config: IcebergConfig

    #: pageSize of the listings behind bulk reads; None lets the server choose (upstream
    #: answers everything in one page). Every page is followed either way.
    bulk_page_size: int | None = None

    def __init__(self, config: IcebergConfig | None = None, /, **properties: Any) -> None:
        super().__init__(config, **properties)
        self.client = IcebergClient(self.config, on_request=self.count_call)
        self._loads = ThreadPoolExecutor(LOAD_PARALLELISM, thread_name_prefix="iceberg-load")

    def namespace_id(self) -> str:
        return f"lance-sync iceberg {{ endpoint: {self.config.endpoint!r} }}"

    def capabilities(self) -> Capabilities:
        return Capabilities(update_table_location=True, rename_table=True, move_table=True,
                            move_fixed_levels=MOVE_FIXED_LEVELS, creatable_namespace_levels=(2, None))

    def lease_register(self, parent: Identifier, name: str, owner: str) -> LeaseRegister:
        return IcebergLeaseRegister(self.client, self, (*parent, name))

    # --- namespaces --------------------------------------------------------------------------

    def _create_namespace_object(self, id: Identifier, properties: dict[str, str]) -> dict[str, str]:
        """POST namespaces, after checking the parent exists (the upstream server does not)."""
        warehouse, levels = split_namespace(id)
        if not levels:
            raise UnsupportedOperationError(f"iceberg: warehouse '{warehouse}' cannot be created "
                                            "through the REST API")
        if len(levels) > 1 and not self._namespace_exists(warehouse, levels[:-1]):
            raise NamespaceNotFoundError(f"Parent namespace not found: {display((warehouse, *levels[:-1]))}")
        path = self.client.catalog_path(warehouse, NamespaceNotFoundError) + "/namespaces"
        created = self.client.send("POST", path, json={"namespace": list(levels), "properties": properties},
                                   expect=NamespaceAnswer, meanings={409: NamespaceAlreadyExistsError})
        return dict(created.properties or {})

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        warehouse, levels = split_listed_namespace(request.id)
        names, token = self._namespace_page(warehouse, levels, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=names, page_token=token)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        if not request.id:
            return DescribeNamespaceResponse(properties={})
        warehouse, levels = split_namespace(request.id)
        return DescribeNamespaceResponse(properties=self._namespace_properties(warehouse, levels))

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        if request.id:
            warehouse, levels = split_namespace(request.id)
            if not self._namespace_exists(warehouse, levels):
                raise NamespaceNotFoundError(f"Namespace not found: {display(request.id)}")
        return NamespaceExistsResponse()

    def _drop_namespace_object(self, id: Identifier, cascade: bool) -> None:
        """A namespace that does not exist is dropped already (the spec)."""
        warehouse, levels = split_namespace(id)
        if not levels:
            raise UnsupportedOperationError(f"iceberg: warehouse '{warehouse}' cannot be dropped "
                                            "through the REST API")
        self._drop_namespace(warehouse, levels)

    # --- tables ------------------------------------------------------------------------------

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        """POST a companion Iceberg table (dummy schema, table_type=lance) at the Lance location."""
        warehouse, levels, name = split_table(request.id)
        location = request.location or self._default_location(warehouse, levels, name)
        properties = lance_table_properties(request.properties)
        body = {"name": name, "location": location, "schema": DUMMY_SCHEMA, "properties": properties,
                "stage-create": False}
        path = self.client.namespace_path(warehouse, levels, missing=NamespaceNotFoundError) + "/tables"
        created = self.client.send("POST", path, json=body, expect=LoadTableAnswer,
                                   meanings={404: NamespaceNotFoundError, 409: TableAlreadyExistsError})
        return DeclareTableResponse(location=created.metadata.location,
                                    properties=created.metadata.properties,
                                    storage_options=self.storage_options() or None)

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        """One page of table names, each table loaded (in parallel) to keep only Lance tables."""
        warehouse, levels = split_listed_namespace(request.id)
        names, token = self._table_page(warehouse, levels, request.page_token, request.limit)
        infos = self._in_parallel(self._load_table_info, [(warehouse, *levels, n) for n in names])
        return ListTablesResponse(tables=[info.id[-1] for info in infos if info.is_lance],
                                  page_token=token)

    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        """Location and properties of a Lance table; storage options are the driver's `storage.*`."""
        if request.load_detailed_metadata:
            raise UnsupportedOperationError("iceberg: only load_detailed_metadata=false is supported")
        info = self._require_lance(request.id)
        return DescribeTableResponse(table=info.id[-1], namespace=list(info.id[:-1]),
                                     location=info.location, properties=info.properties,
                                     storage_options=self.storage_options() or None)

    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        self._require_lance(request.id)
        return TableExistsResponse()

    def rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        """POST /v1/{prefix}/tables/rename: one change in the catalog, after which the table
        (its UUID, metadata, location and properties) answers to the new id only.

        Before it, the source is loaded (TableNotFound; InvalidInput for a table that is not a
        Lance table) and, for a move, the destination namespace is read (NamespaceNotFound: not
        every server checks it). The catalog answers 409 for a destination that is taken
        (TableAlreadyExists), 404 NoSuchTableException for a source dropped meanwhile, and 406
        where it does not move tables across namespaces (UnsupportedOperation).

        A rename sent again after its answer was lost meets TableNotFound (the source is gone;
        the destination holds the table at the source's location). The driver never sends the
        POST again itself once it may have reached the server: that is a TransientError saying
        the catalog may have carried it out.
        """
        source, destination = self._rename_ids(request, MOVE_FIXED_LEVELS)
        warehouse, levels, name = split_table(source)
        _, new_levels, new_name = split_table(destination)
        self._require_lance(source)
        if new_levels != levels and not self._namespace_exists(warehouse, new_levels):
            raise NamespaceNotFoundError(f"iceberg: namespace {display((warehouse, *new_levels))} not found "
                                         f"(the destination of {display(source)})")
        body = {"source": {"namespace": list(levels), "name": name},
                "destination": {"namespace": list(new_levels), "name": new_name}}
        path = self.client.catalog_path(warehouse, TableNotFoundError) + "/tables/rename"
        self.client.send("POST", path, json=body, ok=(200, 204),
                         meanings={(404, "NoSuchNamespaceException"): NamespaceNotFoundError,
                                   404: TableNotFoundError, 409: TableAlreadyExistsError})
        return RenameTableResponse()

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        """Check it is a Lance table, then DELETE without purge (data and Iceberg metadata stay).

        The check costs a load; it keeps a Lance client from deregistering a plain Iceberg table.
        """
        info = self._require_lance(request.id)
        self.client.send("DELETE", self.client.table_path(info.id), params={"purgeRequested": "false"},
                         ok=(200, 204), meanings={404: TableNotFoundError})
        return DeregisterTableResponse(id=list(info.id), location=info.location,
                                       properties=info.properties)

    # --- reconciler extensions -----------------------------------------------------------------

    def update_namespace_properties(self, id: Identifier, updates: dict[str, str],
                                    removals: list[str]) -> None:
        warehouse, levels = split_namespace(id)
        if not levels:
            raise UnsupportedOperationError("iceberg: a warehouse has no properties to update")
        if not updates and not removals:
            return
        self.client.send("POST", self.client.namespace_path(warehouse, levels) + "/properties",
                         json={"updates": updates, "removals": list(removals)},
                         expect=UpdateNamespacePropertiesAnswer, meanings={404: NamespaceNotFoundError})

    def update_table_properties(self, id: Identifier, updates: dict[str, str],
                                removals: list[str]) -> None:
        """Load for the table's uuid, then commit set/remove-properties asserting that uuid."""
        if not updates and not removals:
            return
        path = self.client.table_path(id)
        loaded = self.client.send("GET", path, expect=LoadTableAnswer, meanings={404: TableNotFoundError})
        changes: list[dict[str, Any]] = []
        if updates:
            changes.append({"action": "set-properties", "updates": updates})
        if removals:
            changes.append({"action": "remove-properties", "removals": list(removals)})
        commit = {"requirements": [{"type": "assert-table-uuid", "uuid": loaded.metadata.table_uuid}],
                  "updates": changes}
        self.client.send("POST", path, json=commit, expect=CommitTableAnswer,
                         meanings={404: TableNotFoundError, 409: ConcurrentModificationError})

    def update_table_location(self, id: Identifier, location: str) -> None:
        """Load the Lance table for its UUID, then commit set-location asserting that UUID: the
        same table (UUID, properties, snapshots and metadata history kept) at the new location."""
        path = self.client.table_path(id)
        metadata = self.client.send("GET", path, expect=LoadTableAnswer,
                                    meanings={404: TableNotFoundError}).metadata
        self._check_lance(id, metadata.properties)
        new_location = normalize_location(location)
        if normalize_location(metadata.location) == new_location:
            return
        commit = {"requirements": [{"type": "assert-table-uuid", "uuid": metadata.table_uuid}],
                  "updates": [{"action": "set-location", "location": new_location}]}
        self.client.send("POST", path, json=commit, expect=CommitTableAnswer,
                         meanings={404: TableNotFoundError, 409: ConcurrentModificationError})

    def list_namespace_infos(self, parent: Identifier) -> Iterator[NamespaceInfo]:
        """Every page of child names, then each child loaded in parallel for its properties."""
        warehouse, levels = split_listed_namespace(parent)
        names = follow_pages(lambda token: self._namespace_page(warehouse, levels, token,
                                                                self.bulk_page_size))
        children = ((warehouse, *levels, name) for name in names)
        yield from self._in_parallel(self._load_namespace_info, children)

    def list_table_infos(self, namespace: Identifier) -> Iterator[TableInfo]:
        """Every page of table names, each table loaded in parallel; Lance or not (is_lance)."""
        warehouse, levels = split_listed_namespace(namespace)
        names = follow_pages(lambda token: self._table_page(warehouse, levels, token,
                                                            self.bulk_page_size))
        yield from self._in_parallel(self._load_table_info, ((warehouse, *levels, n) for n in names))

    def namespace_info_parts(self, parent: Identifier) -> list[Callable[[], list[NamespaceInfo]]]:
        """Every page of child names now; the loads in parts of LOADS_PER_PART namespaces."""
        warehouse, levels = split_listed_namespace(parent)
        names = follow_pages(lambda token: self._namespace_page(warehouse, levels, token,
                                                                self.bulk_page_size))
        return _in_parts(self._load_namespace_info, [(warehouse, *levels, name) for name in names])

    def table_info_parts(self, namespace: Identifier) -> list[Callable[[], list[TableInfo]]]:
        """Every page of table names now; the loads in parts of LOADS_PER_PART tables."""
        warehouse, levels = split_listed_namespace(namespace)
        names = follow_pages(lambda token: self._table_page(warehouse, levels, token,
                                                            self.bulk_page_size))
        return _in_parts(self._load_table_info, [(warehouse, *levels, name) for name in names])

    def get_table_info(self, id: Identifier) -> TableInfo | None:
        return self._load_table_info(tuple(id))

    # --- requests ------------------------------------------------------------------------------

    def _namespace_properties(self, warehouse: str, levels: tuple[str, ...]) -> dict[str, str]:
        if not levels:
            self.client.prefix(warehouse, NamespaceNotFoundError)
            return {}
        found = self.client.send("GET", self.client.namespace_path(warehouse, levels), expect=NamespaceAnswer,
                                 meanings={404: NamespaceNotFoundError})
        return dict(found.properties or {})

    def _namespace_exists(self, warehouse: str, levels: tuple[str, ...]) -> bool:
        """By GET, which every server has (HEAD on namespaces came later to the REST spec)."""
        try:
            self._namespace_properties(warehouse, levels)
        except NamespaceNotFoundError:
            return False
        return True

    def _drop_namespace(self, warehouse: str, levels: tuple[str, ...]) -> None:
        """Refuse a namespace with child namespaces (upstream only counts tables), then DELETE."""
        try:
            children, _ = self._namespace_page(warehouse, levels, None, 1)
        except NamespaceNotFoundError:
            return
        if children:
            raise NamespaceNotEmptyError(f"Namespace {display((warehouse, *levels))} has child "
                                         f"namespaces, e.g. '{children[0]}'")
        try:
            self.client.send("DELETE", self.client.namespace_path(warehouse, levels), ok=(200, 204),
                             meanings={404: NamespaceNotFoundError, 409: NamespaceNotEmptyError})
        except NamespaceNotFoundError:
            return

    def _namespace_page(self, warehouse: str, levels: tuple[str, ...], token: str | None,
                        size: int | None) -> tuple[list[str], str | None]:
        path = self.client.catalog_path(warehouse, NamespaceNotFoundError) + "/namespaces"
        params = {"parent": LEVEL_SEPARATOR.join(levels) or None, "pageToken": token, "pageSize": size}
        page = self.client.send("GET", path, params=params, expect=ListNamespacesAnswer,
                                meanings={404: NamespaceNotFoundError})
        return [child[-1] for child in page.namespaces], page.next_page_token

    def _table_page(self, warehouse: str, levels: tuple[str, ...], token: str | None,
                    size: int | None) -> tuple[list[str], str | None]:
        if not levels:  # Iceberg tables live in namespaces, never directly in a warehouse
            self.client.prefix(warehouse, NamespaceNotFoundError)
            return [], None
        path = self.client.namespace_path(warehouse, levels) + "/tables"
        page = self.client.send("GET", path, params={"pageToken": token, "pageSize": size},
                                expect=IcebergTablesAnswer, meanings={404: NamespaceNotFoundError})
        return [identifier.name for identifier in page.identifiers], page.next_page_token

    def _load_table(self, id: Iterable[str] | None) -> TableInfo:
        """GET the table: location, properties, whether it is a Lance table."""
        metadata = self.client.send("GET", self.client.table_path(id), expect=LoadTableAnswer,
                                    meanings={404: TableNotFoundError}).metadata
        properties = dict(metadata.properties)
        return TableInfo(tuple(id or ()), metadata.location, properties, is_lance=is_lance_table(properties))

    def _load_table_info(self, id: Identifier) -> TableInfo | None:
        """Like `_load_table`; None when the table does not exist."""
        try:
            return self._load_table(id)
        except TableNotFoundError:
            return None

    def _load_namespace_info(self, id: Identifier) -> NamespaceInfo | None:
        warehouse, levels = split_namespace(id)
        try:
            return NamespaceInfo(tuple(id), self._namespace_properties(warehouse, levels))
        except NamespaceNotFoundError:
            return None

    def _require_lance(self, id: Iterable[str] | None) -> TableInfo:
        info = self._load_table(id)
        self._check_lance(id, info.properties)
        return info

    @staticmethod
    def _check_lance(id: Iterable[str] | None, properties: dict[str, str]) -> None:
        if not is_lance_table(properties):
            found = properties.get(TABLE_TYPE_KEY, "(none)")
            raise InvalidInputError(f"iceberg: {display(id)} is not a Lance table "
                                    f"({TABLE_TYPE_KEY}={found})")

    def _in_parallel(self, load: Callable[[T], R | None], items: Iterable[T]) -> Iterator[R]:
        """`load` of every item on the driver's bounded pool; results in item order, None skipped.

        Items are submitted as the (lazy) iterable yields them, so the loads of one page run
        while the next page is listed. The first failure propagates and cancels the rest.
        """
        futures: list[Future] = []
        try:
            for item in items:
                futures.append(self._loads.submit(load, item))
            for future in futures:
                result = future.result()
                if result is not None:
                    yield result
        finally:
            for future in futures:
                future.cancel()

    def _default_location(self, warehouse: str, levels: tuple[str, ...], name: str) -> str:
        """{root}/{warehouse}/{namespace levels}/{table}; '/' and '%' in names percent-encoded."""
        parts = [path_part(part) for part in (warehouse, *levels, name)]
        return "/".join([normalize_location(self.config.root).rstrip("/"), *parts])


def _in_parts(load: Callable[[Identifier], R | None], ids: list[Identifier]) -> list[Callable[[], list[R]]]:
    """Parts of LOADS_PER_PART loads each, run one after the other within a part; None skipped."""
    def part(share: list[Identifier]) -> list[R]:
        return [loaded for loaded in map(load, share) if loaded is not None]

    return [functools.partial(part, ids[start:start + LOADS_PER_PART])
            for start in range(0, len(ids), LOADS_PER_PART)]
