"""Hive Metastore 3.x backend (spec: hive3.md), which also serves Hive Metastore 2.x.

Identifiers (tuples of names; manifests write them `$`-joined):

- `()` is the metastore itself; `(catalog,)` a Hive 3 catalog; `(catalog, database)` a
  database; `(catalog, database, table)` a table. Manifests declare databases only: a Hive
  catalog has no property map, so it cannot carry lance-sync's ownership marks (catalogs
  are created with the driver's `create_namespace` or the metastore's own tools).
- The default catalog `hive` is addressed with unprefixed database names, so its
  databases and tables work on a metastore without catalogs (HMS 2.x) too; other
  catalogs are addressed as HMS 3 expects: `@catalog#database` in database-name
  arguments, `catName`/`catalogName` in request structs.
- Against a metastore without the catalog API (`get_catalogs` answers "Invalid method
  name"), catalog operations raise UnsupportedOperationError. This is detected once per
  driver, lazily, and cached.

Storage layout: a table declared without a location goes to
`{root}/{catalog}/{database}/{table}.lance`; a catalog created without
`catalog.location-uri` gets `{root}/_catalogs/{catalog}`; a database created without
`database.location-uri` gets HMS's own default (`<catalog location>/<database>.db`). So
Lance data never lies inside a directory that HMS deletes recursively when a catalog (or,
from other tools, a database) is dropped.

Modules: `client` (`Hive3Client`, the driver's `client`) makes every call, and the lookups
and changes of catalogs, databases and tables that the driver and its helpers share: `leases`,
`grants` (`Hive3Grants`) and `renames` work through it. It sends through `transport` (a pool of
Thrift connections with a socket timeout; reads retried after a broken or garbled answer, a
write only when it cannot have gone out); `answers` checks every read's answer where it enters
(the fields the driver relies on, and those the Hive IDL marks required, with the types the
IDL gives them, for the object asked for), else a BadAnswerError naming the call; `errors`
translates metastore errors (the exceptions the Hive IDL declares) to `lance_namespace.errors`,
which the client does for those each lookup or change expects, with `errors.translate` as the
fallback at the boundary of each operation; `objects` builds and reads the metastore's Table,
Database and Catalog objects.

Apply leases (`leases.HiveLockLeaseRegister`) are locks of the metastore's own lock API: an
EXCLUSIVE lock that the metastore grants to one requester at a time. A metastore without the
transaction tables that API needs takes them as views instead (`lease: table`,
`leases.HiveViewLeaseRegister`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

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
    InvalidInputError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from pymetastore.hive_metastore.ttypes import (
    AlreadyExistsException,
    Catalog,
    Database,
    InvalidObjectException,
    NoSuchObjectException,
)

from lance_sync.drivers.base import (
    Capabilities,
    Identifier,
    NamespaceInfo,
    SyncNamespace,
    TableInfo,
    patched_properties,
)
from lance_sync.drivers.hive3.client import Hive3Client
from lance_sync.drivers.hive3.config import Hive3Config, Hive3Rules
from lance_sync.drivers.hive3.errors import message, translated
from lance_sync.drivers.hive3.grants import Hive3Grants
from lance_sync.drivers.hive3.leases import VIEW_LEASE, HiveLockLeaseRegister, HiveViewLeaseRegister
from lance_sync.drivers.hive3.objects import (
    CATALOG_DESCRIPTION,
    CATALOG_FIELDS,
    CATALOG_LOCATION,
    CATALOGS_DIRECTORY,
    DATABASE_DESCRIPTION,
    DATABASE_FIELDS,
    DATABASE_LOCATION,
    DATABASE_OWNER,
    DATABASE_OWNER_TYPE,
    DEFAULT_CATALOG,
    LANCE_TABLE_PARAMETERS,
    catalog_properties,
    check_catalog_properties,
    database_properties,
    database_ref,
    display,
    id_parts,
    is_lance,
    lance_properties,
    new_lance_table,
    principal_type,
    table_info,
    table_location,
)
from lance_sync.drivers.hive3.renames import MOVE_FIXED_LEVELS, relocate, rename
from lance_sync.drivers.leases import LeaseRegister
from lance_sync.drivers.support.locations import catalog_url
from lance_sync.drivers.support.paging import check_page_limit, names_after, page_of_names
from lance_sync.model.grants import GrantMap, Securable
from lance_sync.model.locations import join_location, normalize_location

#: tables per get_table_objects_by_name_req: HMS's own metastore.batch.retrieve.max default
TABLE_BATCH_SIZE = 300


class Hive3Namespace(Hive3Rules, SyncNamespace):
    config: Hive3Config
    drops_cascade = True

    def __init__(self, config: Hive3Config | None = None, /, **properties: Any) -> None:
        super().__init__(config, **properties)
        self.client = Hive3Client(self.config, on_call=self.count_call)
        self.grants = Hive3Grants(self.client, type(self), self.config)
        self._root = normalize_location(self.config.root)

    def namespace_id(self) -> str:
        return f"lance-sync hive3 {{ uri: 'thrift://{self.client.address}' }}"

    def lease_register(self, parent: Identifier, name: str, owner: str) -> LeaseRegister:
        (catalog,) = id_parts(list(parent), "lease parent", 1, 1)
        if self.config.lease == VIEW_LEASE:
            return HiveViewLeaseRegister(self, catalog, name)
        return HiveLockLeaseRegister(self.client.for_leases(), self.namespace_id(), catalog, name, owner)

    def close(self) -> None:
        """Close the idle connections (calls after this open new ones)."""
        self.client.close()

    @translated
    def capabilities(self) -> Capabilities:
        levels = (1, 2) if self.client.has_catalog_api() else (2, 2)
        return Capabilities(update_namespace_properties=True, update_table_properties=True,
                            update_table_location=True, rename_table=True, move_table=True,
                            move_fixed_levels=MOVE_FIXED_LEVELS, creatable_namespace_levels=levels,
                            grants=True)

    # --- namespaces ----------------------------------------------------------------------------

    @translated
    def _create_namespace_object(self, id: Identifier, properties: dict[str, str]) -> dict[str, str]:
        parts = id_parts(id, "namespace", 1, 2)
        if len(parts) == 1:
            self._create_catalog(parts[0], properties)
        else:
            catalog, database = parts
            self._create_database(catalog, database, properties)
        return properties

    @translated
    def replace_namespace_properties(self, id: Identifier, properties: dict[str, str]) -> None:
        """Catalogs: their fields; databases: parameters replaced, the fields named set, the
        others kept (HMS keeps a field sent blank)."""
        parts = id_parts(id, "namespace", 1, 2)
        if len(parts) == 1:
            self._alter_catalog(parts[0], properties)
        else:
            self._alter_database(self.client.get_database(*parts), properties)

    @translated
    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        parts = id_parts(request.id, "namespace", 0, 2)
        if not parts:
            names = self.client.catalog_names()
        elif len(parts) == 1:
            names = self.client.database_names(parts[0])
        else:
            self.client.get_database(*parts)
            names = []
        page, token = page_of_names(names, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    @translated
    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        return DescribeNamespaceResponse(properties=self._namespace_properties(
            id_parts(request.id, "namespace", 0, 2)))

    @translated
    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        self._namespace_properties(id_parts(request.id, "namespace", 0, 2))
        return NamespaceExistsResponse()

    @translated
    def _drop_namespace_object(self, id: Identifier, cascade: bool) -> None:
        parts = id_parts(id, "namespace", 1, 2)
        if len(parts) == 1:
            self.client.drop_catalog(parts[0], cascade)
        else:
            catalog, database = parts
            self.client.drop_database(catalog, database, cascade)

    # --- tables --------------------------------------------------------------------------------

    @translated
    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        catalog, database, name = id_parts(request.id, "table", 3, 3)
        self.client.require_catalog(catalog)
        if request.location:
            location = join_location(self._root, request.location)
        else:
            location = join_location(self._root, f"{catalog}/{database}/{name}.lance".lower())
        table = new_lance_table(catalog, database, name, location, request.properties or {})
        try:
            self.client.send("create_table", table)
        except AlreadyExistsException as error:
            raise TableAlreadyExistsError(f"hive3: table {display(request.id)} already exists") from error
        except (InvalidObjectException, NoSuchObjectException) as error:
            self.client.get_database(catalog, database)  # NamespaceNotFound when that is the cause
            raise InvalidInputError(f"hive3: the metastore refused table {display(request.id)}: "
                                    f"{message(error)}") from error
        return DeclareTableResponse(location=location, properties=lance_properties(table),
                                    storage_options=self.storage_options() or None)

    @translated
    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        """Lance tables by name, a page at a time; only the names a page needs are fetched."""
        catalog, database = id_parts(request.id, "namespace", 2, 2)
        limit = check_page_limit(request.limit)
        remaining = names_after(self.client.table_names(catalog, database), request.page_token)
        found: list[str] = []
        for batch in _batches(remaining, min(limit or TABLE_BATCH_SIZE, TABLE_BATCH_SIZE)):
            tables = self.client.table_objects(catalog, database, batch)
            found += sorted(t.tableName for t in tables if is_lance(t))
            if limit and len(found) >= limit:
                found = found[:limit]
                more = found[-1] < remaining[-1]
                return ListTablesResponse(tables=found, page_token=found[-1] if more else None)
        return ListTablesResponse(tables=found, page_token=None)

    @translated
    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        id = id_parts(request.id, "table", 3, 3)
        table = self.client.lance_table(*id)
        return DescribeTableResponse(
            table=id[-1], namespace=list(id[:-1]), location=table_location(table),
            properties=lance_properties(table), storage_options=self.storage_options() or None)

    @translated
    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        catalog, database, name = id_parts(request.id, "table", 3, 3)
        self.client.lance_table(catalog, database, name)
        return TableExistsResponse()

    @translated
    def rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        """One alter_table with the new name and, for a move, the new database of the same
        catalog (`renames.rename`): the table keeps its create time, parameters, storage
        descriptor and location (an external table's data is never moved).

        TableNotFound for a missing source, InvalidInput for a table that is not a Lance
        table, NamespaceNotFound for a missing destination database, TableAlreadyExists for a
        destination that is taken: all checked before the alter. A rename sent again after its
        answer was lost meets TableNotFound (the source is gone, the destination holds the
        table at the source's location); the driver never sends the alter again itself once
        it may have reached the metastore (a TransientError says it may have been carried out).
        """
        source, destination = self._rename_ids(request, MOVE_FIXED_LEVELS)
        id_parts(source, "table", 3, 3)
        id_parts(destination, "table", 3, 3)
        rename(self.client, source, destination)
        return RenameTableResponse()

    @translated
    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        catalog, database, name = id_parts(request.id, "table", 3, 3)
        table = self.client.lance_table(catalog, database, name)
        try:
            self.client.send("drop_table", database_ref(catalog, database), name, False)
        except NoSuchObjectException as error:
            raise TableNotFoundError(f"hive3: table {display(request.id)} not found") from error
        return DeregisterTableResponse(id=[catalog, database, name], location=table_location(table),
                                       properties=lance_properties(table))

    # --- reconciler extensions -----------------------------------------------------------------

    @translated
    def list_grants(self, kind: Securable, id: Identifier) -> GrantMap:
        """Every principal's privileges on a database or table (`grants.Hive3Grants.list_grants`)."""
        return self.grants.list_grants(kind, id)

    @translated
    def change_grants(self, kind: Securable, id: Identifier, principal: str,
                      grant: frozenset[str], revoke: frozenset[str]) -> None:
        """One principal's privileges on a database or table (`grants.Hive3Grants.change_grants`)."""
        self.grants.change_grants(kind, id, principal, grant, revoke)

    @translated
    def update_namespace_properties(self, id: Identifier, updates: dict[str, str],
                                    removals: list[str]) -> None:
        """Catalogs: only catalog.description and catalog.location-uri. The object fields of
        either level can be set but not removed (HMS keeps a field sent blank)."""
        parts = id_parts(list(id), "namespace", 1, 2)
        if not updates and not removals:
            return
        if len(parts) == 1:
            current, fields = catalog_properties(self.client.get_catalog(parts[0])), CATALOG_FIELDS
        else:
            database = self.client.get_database(*parts)
            current, fields = database_properties(database), DATABASE_FIELDS
        fixed = sorted(k for k in removals if k in fields and k in current)
        if fixed:
            raise InvalidInputError(f"hive3: {', '.join(fixed)} cannot be removed (HMS keeps the "
                                    "field); set another value instead")
        wanted = patched_properties(current, updates, removals)
        if wanted == current:
            return
        if len(parts) == 1:
            self._alter_catalog(parts[0], wanted)
        else:
            self._alter_database(database, wanted)

    @translated
    def update_table_properties(self, id: Identifier, updates: dict[str, str],
                                removals: list[str]) -> None:
        catalog, database, name = id_parts(list(id), "table", 3, 3)
        table = self.client.lance_table(catalog, database, name)
        parameters = {**patched_properties(table.parameters or {}, updates, removals), **LANCE_TABLE_PARAMETERS}
        if parameters == table.parameters:
            return
        table.parameters = parameters
        self.client.alter_lance_table((catalog, database, name), table)

    @translated
    def update_table_location(self, id: Identifier, location: str) -> None:
        """One alter_table with the storage descriptor's location changed (`renames.relocate`):
        the same table, its create time and parameters kept. HMS keeps no location elsewhere."""
        relocate(self.client, id_parts(list(id), "table", 3, 3), join_location(self._root, location))

    @translated
    def list_namespace_infos(self, parent: Identifier) -> Iterator[NamespaceInfo]:
        """Catalogs or databases with their properties: one listing call, then one get per child
        (HMS has no bulk read of catalogs or databases)."""
        parts = id_parts(list(parent), "namespace", 0, 2)
        if len(parts) == 2:
            self.client.get_database(*parts)
            return
        names = self.client.database_names(parts[0]) if parts else self.client.catalog_names()
        for name in sorted(names):
            try:
                properties = self._namespace_properties((*parts, name))
            except NamespaceNotFoundError:  # dropped since the listing
                continue
            yield NamespaceInfo((*parent, name), properties)

    @translated
    def list_table_infos(self, namespace: Identifier) -> Iterator[TableInfo]:
        """Every table (non-Lance ones with is_lance=False): get_all_tables, then
        get_table_objects_by_name_req per TABLE_BATCH_SIZE names; an empty database costs a
        get_database to tell it from a missing one."""
        catalog, database = id_parts(list(namespace), "namespace", 2, 2)
        for batch in _batches(self.client.table_names(catalog, database), TABLE_BATCH_SIZE):
            for table in sorted(self.client.table_objects(catalog, database, batch), key=lambda t: t.tableName):
                yield table_info((*namespace, table.tableName), table)

    @translated
    def get_table_info(self, id: Identifier) -> TableInfo | None:
        catalog, database, name = id_parts(list(id), "table", 3, 3)
        try:
            table = self.client.get_table(catalog, database, name)
        except TableNotFoundError:
            return None
        return table_info(id, table)

    # --- catalogs and databases as the metastore's objects ----------------------------------

    def _create_catalog(self, name: str, properties: dict[str, str]) -> None:
        check_catalog_properties(properties)
        location = join_location(self._root, properties.get(CATALOG_LOCATION)
                                 or f"{CATALOGS_DIRECTORY}/{name.lower()}")
        self.client.create_catalog(Catalog(name=name, description=properties.get(CATALOG_DESCRIPTION),
                                           locationUri=catalog_url(location)))

    def _alter_catalog(self, name: str, properties: dict[str, str]) -> None:
        """Set a catalog's description and location (HMS keeps a field sent blank)."""
        check_catalog_properties(properties)
        location = properties.get(CATALOG_LOCATION)
        self.client.alter_catalog(name, Catalog(
            name=name.lower(), description=properties.get(CATALOG_DESCRIPTION),
            locationUri=catalog_url(join_location(self._root, location)) if location else None))

    def _create_database(self, catalog: str, name: str, properties: dict[str, str]) -> None:
        self.client.require_catalog(catalog)
        self.client.create_database(self._database_object(catalog, name, properties))

    def _database_object(self, catalog: str, name: str, properties: dict[str, str]) -> Database:
        location = properties.get(DATABASE_LOCATION)
        return Database(
            name=name, catalogName=catalog, description=properties.get(DATABASE_DESCRIPTION),
            locationUri=catalog_url(join_location(self._root, location)) if location else None,
            ownerName=properties.get(DATABASE_OWNER),
            ownerType=principal_type(properties.get(DATABASE_OWNER_TYPE)),
            parameters={k: v for k, v in properties.items() if k not in DATABASE_FIELDS})

    def _alter_database(self, current: Database, properties: dict[str, str]) -> None:
        """Replace a database's parameters and set the fields named in `properties`; fields
        not named keep their value (HMS ignores blank ones)."""
        catalog = current.catalogName or DEFAULT_CATALOG
        wanted = self._database_object(catalog, current.name, properties)
        altered = Database(
            name=current.name, catalogName=current.catalogName, parameters=wanted.parameters,
            description=wanted.description or current.description,
            locationUri=wanted.locationUri or current.locationUri,
            ownerName=wanted.ownerName or current.ownerName,
            ownerType=wanted.ownerType if wanted.ownerType is not None else current.ownerType)
        before, after = database_properties(current), database_properties(altered)
        moved = [k for k in (DATABASE_DESCRIPTION, DATABASE_LOCATION) if before.get(k) != after.get(k)]
        if moved and not self.client.has_catalog_api():
            raise UnsupportedOperationError(
                f"hive3: a Hive Metastore before 3.0 keeps a database's description and location "
                f"on alter_database, so {', '.join(moved)} cannot be changed here; nothing was changed")
        self.client.send("alter_database", database_ref(catalog, current.name), altered)

    def _namespace_properties(self, parts: tuple[str, ...]) -> dict[str, str]:
        if not parts:
            return {}
        if len(parts) == 1:
            return catalog_properties(self.client.get_catalog(parts[0]))
        return database_properties(self.client.get_database(*parts))


def _batches(names: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(names), size):
        yield names[start:start + size]
