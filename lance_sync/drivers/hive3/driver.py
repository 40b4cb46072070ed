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

Modules: `transport` sends every call (a pool of Thrift connections with a socket timeout;
reads retried after a broken or garbled answer, a write only when it cannot have gone out);
`answers` checks every read's answer where it enters (the fields the driver relies on, and
those the Hive IDL marks required, with the types the IDL gives them, for the object asked
for), else a BadAnswerError naming the call; `errors` translates metastore errors (the
exceptions the Hive IDL declares) to `lance_namespace.errors`, which each operation does for
those it expects, with `errors.translate` as the fallback at the boundary; `objects` builds
and reads the metastore's Table, Database and Catalog objects.

Apply leases (`leases.HiveLockLeaseRegister`) are locks of the metastore's own lock API: an
EXCLUSIVE lock that the metastore grants to one requester at a time.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

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
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from pymetastore.hive_metastore.ttypes import (
    AlreadyExistsException,
    AlterCatalogRequest,
    Catalog,
    CreateCatalogRequest,
    Database,
    DropCatalogRequest,
    GetCatalogRequest,
    GetTableRequest,
    GetTablesRequest,
    InvalidObjectException,
    InvalidOperationException,
    MetaException,
    NoSuchObjectException,
    Table,
    UnknownDBException,
)
from thrift.Thrift import TApplicationException

from lance_sync.drivers.base import (
    Capabilities,
    Identifier,
    NamespaceInfo,
    SyncNamespace,
    TableInfo,
    patched_properties,
)
from lance_sync.drivers.hive3 import grants
from lance_sync.drivers.hive3.config import Hive3Config, Hive3Rules
from lance_sync.drivers.hive3.errors import METASTORE_ERRORS, message, translated
from lance_sync.drivers.hive3.leases import HiveLockLeaseRegister
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
    DEFAULT_DATABASE,
    LANCE_TABLE_PARAMETERS,
    catalog_properties,
    check_catalog_properties,
    database_properties,
    database_ref,
    display,
    id_parts,
    is_default_catalog,
    is_lance,
    lance_properties,
    new_lance_table,
    principal_type,
    table_info,
    table_location,
)
from lance_sync.drivers.hive3.renames import MOVE_FIXED_LEVELS, relocate, rename
from lance_sync.drivers.hive3.transport import MetastoreClient, MetastorePool
from lance_sync.drivers.leases import LeaseRegister
from lance_sync.drivers.support.locations import catalog_url
from lance_sync.drivers.support.paging import check_page_limit, names_after, page_of_names
from lance_sync.model.grants import GrantMap, Securable
from lance_sync.model.locations import join_location, normalize_location
from lance_sync.model.marks import TABLE_TYPE_KEY

#: tables per get_table_objects_by_name_req: HMS's own metastore.batch.retrieve.max default
TABLE_BATCH_SIZE = 300


class Hive3Namespace(Hive3Rules, SyncNamespace):
    config: Hive3Config
    drops_cascade = True

    def __init__(self, config: Hive3Config | None = None, /, **properties: Any) -> None:
        super().__init__(config, **properties)
        address = urlsplit(self.config.uri)
        assert address.hostname and address.port, "ThriftUri checks both"
        self._address = f"{address.hostname}:{address.port}"
        self._pool = MetastorePool(address.hostname, address.port, self.config.client_pool_size,
                                   self.config.client_socket_timeout)
        self._client = MetastoreClient(self._pool, self._address, self.config.client_socket_timeout,
                                       self.config.client_max_retries, on_call=self.count_call)
        self._root = normalize_location(self.config.root)
        #: None until known: does the metastore have the Hive 3 catalog API?
        self._catalog_api: bool | None = None
        #: waits between retries (tests replace it)
        self._sleep: Callable[[float], None] = time.sleep
        self._catalog_api_lock = threading.Lock()

    def namespace_id(self) -> str:
        return f"lance-sync hive3 {{ uri: 'thrift://{self._address}' }}"

    def lease_register(self, parent: Identifier, name: str, owner: str) -> LeaseRegister:
        (catalog,) = id_parts(list(parent), "lease parent", 1, 1)
        return HiveLockLeaseRegister(self, catalog, name, owner)

    def close(self) -> None:
        """Close the idle connections (calls after this open new ones)."""
        self._pool.close()

    @translated
    def capabilities(self) -> Capabilities:
        levels = (1, 2) if self._has_catalog_api() else (2, 2)
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
            self._alter_database(self._get_database(*parts), properties)

    @translated
    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        parts = id_parts(request.id, "namespace", 0, 2)
        if not parts:
            names = self._catalog_call("get_catalogs").names
        elif len(parts) == 1:
            names = self._database_names(parts[0])
        else:
            self._get_database(*parts)
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
            self._drop_catalog(parts[0], cascade)
        else:
            catalog, database = parts
            self._drop_database(catalog, database, cascade)

    # --- tables --------------------------------------------------------------------------------

    @translated
    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        catalog, database, name = id_parts(request.id, "table", 3, 3)
        self._require_catalog(catalog)
        if request.location:
            location = join_location(self._root, request.location)
        else:
            location = join_location(self._root, f"{catalog}/{database}/{name}.lance".lower())
        table = new_lance_table(catalog, database, name, location, request.properties or {})
        try:
            self._send("create_table", table)
        except AlreadyExistsException as error:
            raise TableAlreadyExistsError(f"hive3: table {display(request.id)} already exists") from error
        except (InvalidObjectException, NoSuchObjectException) as error:
            self._get_database(catalog, database)  # NamespaceNotFound when that is the cause
            raise InvalidInputError(f"hive3: the metastore refused table {display(request.id)}: "
                                    f"{message(error)}") from error
        return DeclareTableResponse(location=location, properties=lance_properties(table),
                                    storage_options=self.storage_options() or None)

    @translated
    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        """Lance tables by name, a page at a time; only the names a page needs are fetched."""
        catalog, database = id_parts(request.id, "namespace", 2, 2)
        limit = check_page_limit(request.limit)
        remaining = names_after(self._table_names(catalog, database), request.page_token)
        found: list[str] = []
        for batch in _batches(remaining, min(limit or TABLE_BATCH_SIZE, TABLE_BATCH_SIZE)):
            tables = self._table_objects(catalog, database, batch)
            found += sorted(t.tableName for t in tables if is_lance(t))
            if limit and len(found) >= limit:
                found = found[:limit]
                more = found[-1] < remaining[-1]
                return ListTablesResponse(tables=found, page_token=found[-1] if more else None)
        return ListTablesResponse(tables=found, page_token=None)

    @translated
    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        id = id_parts(request.id, "table", 3, 3)
        table = self._lance_table(*id)
        return DescribeTableResponse(
            table=id[-1], namespace=list(id[:-1]), location=table_location(table),
            properties=lance_properties(table), storage_options=self.storage_options() or None)

    @translated
    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        catalog, database, name = id_parts(request.id, "table", 3, 3)
        self._lance_table(catalog, database, name)
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
        rename(self, source, destination)
        return RenameTableResponse()

    @translated
    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        catalog, database, name = id_parts(request.id, "table", 3, 3)
        table = self._lance_table(catalog, database, name)
        try:
            self._send("drop_table", database_ref(catalog, database), name, False)
        except NoSuchObjectException as error:
            raise TableNotFoundError(f"hive3: table {display(request.id)} not found") from error
        return DeregisterTableResponse(id=[catalog, database, name], location=table_location(table),
                                       properties=lance_properties(table))

    # --- reconciler extensions -----------------------------------------------------------------

    @translated
    def list_grants(self, kind: Securable, id: Identifier) -> GrantMap:
        """Every principal's privileges on a database or table (`grants.list_grants`)."""
        return grants.list_grants(self, kind, id)

    @translated
    def change_grants(self, kind: Securable, id: Identifier, principal: str,
                      grant: frozenset[str], revoke: frozenset[str]) -> None:
        """One principal's privileges on a database or table (`grants.change_grants`)."""
        grants.change_grants(self, kind, id, principal, grant, revoke)

    @translated
    def update_namespace_properties(self, id: Identifier, updates: dict[str, str],
                                    removals: list[str]) -> None:
        """Catalogs: only catalog.description and catalog.location-uri. The object fields of
        either level can be set but not removed (HMS keeps a field sent blank)."""
        parts = id_parts(list(id), "namespace", 1, 2)
        if not updates and not removals:
            return
        if len(parts) == 1:
            current, fields = catalog_properties(self._get_catalog(parts[0])), CATALOG_FIELDS
        else:
            database = self._get_database(*parts)
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
        table = self._lance_table(catalog, database, name)
        parameters = {**patched_properties(table.parameters or {}, updates, removals), **LANCE_TABLE_PARAMETERS}
        if parameters == table.parameters:
            return
        table.parameters = parameters
        self._alter_lance_table((catalog, database, name), table)

    @translated
    def update_table_location(self, id: Identifier, location: str) -> None:
        """One alter_table with the storage descriptor's location changed (`renames.relocate`):
        the same table, its create time and parameters kept. HMS keeps no location elsewhere."""
        relocate(self, id_parts(list(id), "table", 3, 3), location)

    @translated
    def list_namespace_infos(self, parent: Identifier) -> Iterator[NamespaceInfo]:
        """Catalogs or databases with their properties: one listing call, then one get per child
        (HMS has no bulk read of catalogs or databases)."""
        parts = id_parts(list(parent), "namespace", 0, 2)
        if len(parts) == 2:
            self._get_database(*parts)
            return
        if parts:
            names = self._database_names(parts[0])
        else:
            names = self._catalog_call("get_catalogs").names
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
        for batch in _batches(self._table_names(catalog, database), TABLE_BATCH_SIZE):
            for table in sorted(self._table_objects(catalog, database, batch), key=lambda t: t.tableName):
                yield table_info((*namespace, table.tableName), table)

    @translated
    def get_table_info(self, id: Identifier) -> TableInfo | None:
        catalog, database, name = id_parts(list(id), "table", 3, 3)
        try:
            table = self._get_table(catalog, database, name)
        except TableNotFoundError:
            return None
        return table_info(id, table)

    # --- catalogs ------------------------------------------------------------------------------

    def _create_catalog(self, name: str, properties: dict[str, str]) -> None:
        check_catalog_properties(properties)
        location = join_location(self._root, properties.get(CATALOG_LOCATION)
                                 or f"{CATALOGS_DIRECTORY}/{name.lower()}")
        catalog = Catalog(name=name, description=properties.get(CATALOG_DESCRIPTION),
                          locationUri=catalog_url(location))
        try:
            self._catalog_call("create_catalog", CreateCatalogRequest(catalog=catalog))
        except AlreadyExistsException as error:
            raise NamespaceAlreadyExistsError(f"hive3: catalog {name} already exists") from error

    def _alter_catalog(self, name: str, properties: dict[str, str]) -> None:
        """Set a catalog's description and location (HMS keeps a field sent blank)."""
        check_catalog_properties(properties)
        location = properties.get(CATALOG_LOCATION)
        catalog = Catalog(name=name.lower(), description=properties.get(CATALOG_DESCRIPTION),
                          locationUri=catalog_url(join_location(self._root, location))
                          if location else None)
        try:
            self._catalog_call("alter_catalog", AlterCatalogRequest(name=name.lower(), newCat=catalog))
        except NoSuchObjectException as error:
            raise NamespaceNotFoundError(f"hive3: catalog {name} not found") from error

    def _get_catalog(self, name: str) -> Catalog | None:
        """The Catalog; None for `hive` on a metastore without catalogs (it exists implicitly)."""
        try:
            return self._catalog_call("get_catalog", GetCatalogRequest(name=name)).catalog
        except NoSuchObjectException as error:
            raise NamespaceNotFoundError(f"hive3: catalog {name} not found") from error
        except UnsupportedOperationError:
            if is_default_catalog(name):
                return None
            raise

    def _drop_catalog(self, name: str, cascade: bool) -> None:
        """Drop a catalog (HMS then deletes the catalog location's directory tree, with the
        `default` database it drops). Cascade first drops every database and every table of
        `default`, keeping table data."""
        if is_default_catalog(name):
            raise InvalidInputError(f"hive3: the default catalog '{DEFAULT_CATALOG}' cannot be dropped")
        if cascade:
            for database in self._database_names(name):
                if database == DEFAULT_DATABASE:
                    for table in self._table_names(name, database):
                        self._drop_table_keeping_data(name, database, table)
                else:
                    self._drop_database(name, database, cascade=True)
        try:
            self._catalog_call("drop_catalog", DropCatalogRequest(name=name))
        except NoSuchObjectException as error:
            raise NamespaceNotFoundError(f"hive3: catalog {name} not found") from error
        except InvalidOperationException as error:
            raise NamespaceNotEmptyError(f"hive3: catalog {name} is not empty: {message(error)}") from error

    def _catalog_call(self, call: str, *args: Any) -> Any:
        """A call of the Hive 3 catalog API; UnsupportedOperation on a metastore without it."""
        if self._catalog_api is False:
            raise self._no_catalog_api()
        try:
            result = self._send(call, *args)
        except TApplicationException as error:
            if error.type != TApplicationException.UNKNOWN_METHOD:
                raise
            self._catalog_api = False
            raise self._no_catalog_api() from error
        except METASTORE_ERRORS:
            self._catalog_api = True
            raise
        self._catalog_api = True
        return result

    def _has_catalog_api(self) -> bool:
        """Detected once (get_catalogs), then cached."""
        with self._catalog_api_lock:
            if self._catalog_api is None:
                with contextlib.suppress(UnsupportedOperationError):
                    self._catalog_call("get_catalogs")
        return bool(self._catalog_api)

    def _require_catalog(self, catalog: str) -> None:
        """Databases and tables outside `hive` need the catalog API."""
        if not is_default_catalog(catalog) and not self._has_catalog_api():
            raise self._no_catalog_api()

    def _no_catalog_api(self) -> UnsupportedOperationError:
        return UnsupportedOperationError(
            f"hive3: the metastore at {self._address} has no catalog API (a Hive Metastore before "
            f"3.0): only the default catalog '{DEFAULT_CATALOG}', its databases and their tables "
            "are available; catalogs cannot be listed, created, dropped or used")

    # --- databases -----------------------------------------------------------------------------

    def _create_database(self, catalog: str, name: str, properties: dict[str, str]) -> None:
        self._require_catalog(catalog)
        database = self._database_object(catalog, name, properties)
        try:
            self._send("create_database", database)
        except AlreadyExistsException as error:
            raise NamespaceAlreadyExistsError(
                f"hive3: database {display((catalog, name))} already exists") from error
        except (InvalidObjectException, NoSuchObjectException) as error:
            if not is_default_catalog(catalog):
                self._get_catalog(catalog)  # NamespaceNotFound when the parent is missing
            raise InvalidInputError(f"hive3: the metastore refused database {display((catalog, name))}: "
                                    f"{message(error)}") from error

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
        if moved and not self._has_catalog_api():
            raise UnsupportedOperationError(
                f"hive3: a Hive Metastore before 3.0 keeps a database's description and location "
                f"on alter_database, so {', '.join(moved)} cannot be changed here; nothing was changed")
        self._send("alter_database", database_ref(catalog, current.name), altered)

    def _get_database(self, catalog: str, name: str) -> Database:
        self._require_catalog(catalog)
        try:
            return self._send("get_database", database_ref(catalog, name))
        except NoSuchObjectException as error:
            raise NamespaceNotFoundError(f"hive3: database {display((catalog, name))} not found") from error

    def _database_names(self, catalog: str) -> list[str]:
        if is_default_catalog(catalog):
            return self._send("get_all_databases")
        self._require_catalog(catalog)
        names = self._send("get_databases", f"@{catalog}#")
        if not names:  # every catalog has `default`: empty means missing
            self._get_catalog(catalog)
        return names

    def _drop_database(self, catalog: str, name: str, cascade: bool) -> None:
        """One drop_database with deleteData=false: HMS itself refuses a database with tables
        (or functions) without cascade, and with cascade drops them keeping their data."""
        if is_default_catalog(catalog) and name.lower() == DEFAULT_DATABASE:
            raise InvalidInputError(f"hive3: database {DEFAULT_CATALOG}${DEFAULT_DATABASE} cannot be dropped")
        self._require_catalog(catalog)
        try:
            self._send("drop_database", database_ref(catalog, name), False, cascade)
        except NoSuchObjectException as error:
            raise NamespaceNotFoundError(f"hive3: database {display((catalog, name))} not found") from error
        except InvalidOperationException as error:
            raise NamespaceNotEmptyError(f"hive3: database {display((catalog, name))} is not empty: "
                                         f"{message(error)}") from error
        except MetaException:
            self._get_database(catalog, name)  # HMS 2.x answers a missing database this way
            raise

    def _namespace_properties(self, parts: tuple[str, ...]) -> dict[str, str]:
        if not parts:
            return {}
        if len(parts) == 1:
            return catalog_properties(self._get_catalog(parts[0]))
        return database_properties(self._get_database(*parts))

    # --- tables --------------------------------------------------------------------------------

    def _get_table(self, catalog: str, database: str, name: str) -> Table:
        self._require_catalog(catalog)
        request = GetTableRequest(dbName=database, tblName=name, catName=catalog)
        try:
            return self._send("get_table_req", request).table
        except NoSuchObjectException as error:
            raise TableNotFoundError(f"hive3: table {display((catalog, database, name))} not found") from error

    def _lance_table(self, catalog: str, database: str, name: str) -> Table:
        """The table, which must be a Lance table (InvalidInput otherwise, as the spec says)."""
        table = self._get_table(catalog, database, name)
        if not is_lance(table):
            raise InvalidInputError(f"hive3: table {display((catalog, database, name))} is not a Lance "
                                    f"table (tableType {table.tableType}, {TABLE_TYPE_KEY}="
                                    f"{(table.parameters or {}).get(TABLE_TYPE_KEY)})")
        return table

    def _alter_lance_table(self, id: Identifier, table: Table) -> None:
        """alter_table of the Lance table `id` (as read, then changed) with the Lance marks;
        TableNotFound when it was dropped meanwhile, InvalidInput for any other refusal."""
        catalog, database, name = id
        table.parameters = {**(table.parameters or {}), **LANCE_TABLE_PARAMETERS}
        try:
            self._send("alter_table", database_ref(catalog, database), name, table)
        except InvalidOperationException as error:
            self._lance_table(catalog, database, name)  # TableNotFound if it was dropped meanwhile
            raise InvalidInputError(f"hive3: the metastore refused to alter {display(id)}: "
                                    f"{message(error)}") from error

    def _table_names(self, catalog: str, database: str) -> list[str]:
        """Sorted names of every table; HMS answers [] for a missing database, so an empty
        answer is checked with get_database."""
        self._require_catalog(catalog)
        names = self._send("get_all_tables", database_ref(catalog, database))
        if not names:
            self._get_database(catalog, database)
        return sorted(names)

    def _table_objects(self, catalog: str, database: str, names: list[str]) -> list[Table]:
        """The tables of `names` that still exist, in one call."""
        request = GetTablesRequest(dbName=database, tblNames=names, catName=catalog)
        try:
            return self._send("get_table_objects_by_name_req", request).tables
        except UnknownDBException as error:
            raise NamespaceNotFoundError(f"hive3: database {display((catalog, database))} not found") from error

    def _drop_table_keeping_data(self, catalog: str, database: str, name: str) -> None:
        with contextlib.suppress(NoSuchObjectException):  # already gone
            self._send("drop_table", database_ref(catalog, database), name, False)

    # --- calls ---------------------------------------------------------------------------------

    def _send(self, call: str, *args: Any) -> Any:
        """One metastore call (`transport.MetastoreClient.send`), waiting with `_sleep` between
        attempts."""
        return self._client.send(call, args, sleep=self._sleep)



def _batches(names: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(names), size):
        yield names[start:start + size]
