"""The driver's one client of the metastore: every call, and the lookups and changes of
catalogs, databases and tables that the driver and its helpers (`leases`, `grants`, `renames`)
share.

`Hive3Client` sends each call through `transport.MetastoreClient` (a pool of Thrift
connections; waits between retries with `sleep`), detects once whether the metastore has the
Hive 3 catalog API, and translates the metastore errors each lookup or change expects (a
missing database, a name taken) to `lance_namespace.errors` (`errors`); any other escapes as
raised, for `errors.translated` at the boundary of the caller's operation. It deals in the
metastore's own objects: how Lance ids and properties become them is `objects`' and the
driver's.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from lance_namespace.errors import (
    InvalidInputError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
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

from lance_sync.drivers.base import Identifier
from lance_sync.drivers.hive3.config import Hive3Config
from lance_sync.drivers.hive3.errors import METASTORE_ERRORS, message
from lance_sync.drivers.hive3.objects import (
    DEFAULT_CATALOG,
    DEFAULT_DATABASE,
    LANCE_TABLE_PARAMETERS,
    database_ref,
    display,
    is_default_catalog,
    is_lance,
)
from lance_sync.drivers.hive3.transport import MetastoreClient, MetastorePool
from lance_sync.model.marks import TABLE_TYPE_KEY


class Hive3Client:
    """One driver's calls to one metastore (see the module docstring)."""

    def __init__(self, config: Hive3Config, on_call: Callable[[], None]) -> None:
        address = urlsplit(config.uri)
        assert address.hostname and address.port, "ThriftUri checks both"
        #: host:port of the metastore, as messages name it
        self.address = f"{address.hostname}:{address.port}"
        self._config, self._on_call = config, on_call
        self.pool = MetastorePool(address.hostname, address.port, config.client_pool_size,
                                  config.client_socket_timeout)
        self._client = MetastoreClient(self.pool, self.address, config.client_socket_timeout,
                                       config.client_max_retries, on_call=on_call)
        #: waits between retries, and between a lease lock's polls (tests replace it)
        self.sleep: Callable[[float], None] = time.sleep
        #: None until known: does the metastore have the Hive 3 catalog API?
        self._catalog_api: bool | None = None
        self._catalog_api_lock = threading.Lock()

        #: the apply lease's own client (`for_leases`), made on first use
        self._lease_client: Hive3Client | None = None

    def close(self) -> None:
        """Close the idle connections (calls after this open new ones)."""
        self.pool.close()
        if self._lease_client is not None:
            self._lease_client.close()

    def for_leases(self) -> Hive3Client:
        """A client of the same metastore over one connection of its own, for an apply lease's
        calls: renewed through the pool the apply's workers keep busy, a lease waited behind
        their calls (16 workers on the default 3 connections let it expire in a 10,000-table
        apply). Its waits are this client's `sleep`."""
        with self._catalog_api_lock:
            if self._lease_client is None:
                lease_client = Hive3Client(self._config.model_copy(update={"client_pool_size": 1}), self._on_call)
                lease_client.sleep = lambda seconds: self.sleep(seconds)
                self._lease_client = lease_client
            return self._lease_client

    def send(self, call: str, *args: Any) -> Any:
        """One metastore call (`transport.MetastoreClient.send`), waiting with `sleep` between
        attempts."""
        return self._client.send(call, args, sleep=self.sleep)

    # --- the catalog API -----------------------------------------------------------------------

    def catalog_call(self, call: str, *args: Any) -> Any:
        """A call of the Hive 3 catalog API; UnsupportedOperation on a metastore without it."""
        if self._catalog_api is False:
            raise self._no_catalog_api()
        try:
            result = self.send(call, *args)
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

    def has_catalog_api(self) -> bool:
        """Detected once (get_catalogs), then cached."""
        with self._catalog_api_lock:
            if self._catalog_api is None:
                with contextlib.suppress(UnsupportedOperationError):
                    self.catalog_call("get_catalogs")
        return bool(self._catalog_api)

    def require_catalog(self, catalog: str) -> None:
        """Databases and tables outside `hive` need the catalog API."""
        if not is_default_catalog(catalog) and not self.has_catalog_api():
            raise self._no_catalog_api()

    def _no_catalog_api(self) -> UnsupportedOperationError:
        return UnsupportedOperationError(
            f"hive3: the metastore at {self.address} has no catalog API (a Hive Metastore before "
            f"3.0): only the default catalog '{DEFAULT_CATALOG}', its databases and their tables "
            "are available; catalogs cannot be listed, created, dropped or used")

    # --- catalogs ------------------------------------------------------------------------------

    def catalog_names(self) -> list[str]:
        return self.catalog_call("get_catalogs").names

    def create_catalog(self, catalog: Catalog) -> None:
        try:
            self.catalog_call("create_catalog", CreateCatalogRequest(catalog=catalog))
        except AlreadyExistsException as error:
            raise NamespaceAlreadyExistsError(f"hive3: catalog {catalog.name} already exists") from error

    def alter_catalog(self, name: str, catalog: Catalog) -> None:
        """Replace the catalog `name` (as the user wrote it) with `catalog`."""
        try:
            self.catalog_call("alter_catalog", AlterCatalogRequest(name=name.lower(), newCat=catalog))
        except NoSuchObjectException as error:
            raise NamespaceNotFoundError(f"hive3: catalog {name} not found") from error

    def get_catalog(self, name: str) -> Catalog | None:
        """The Catalog; None for `hive` on a metastore without catalogs (it exists implicitly)."""
        try:
            return self.catalog_call("get_catalog", GetCatalogRequest(name=name)).catalog
        except NoSuchObjectException as error:
            raise NamespaceNotFoundError(f"hive3: catalog {name} not found") from error
        except UnsupportedOperationError:
            if is_default_catalog(name):
                return None
            raise

    def drop_catalog(self, name: str, cascade: bool) -> None:
        """Drop a catalog (HMS then deletes the catalog location's directory tree, with the
        `default` database it drops). Cascade first drops every database and every table of
        `default`, keeping table data."""
        if is_default_catalog(name):
            raise InvalidInputError(f"hive3: the default catalog '{DEFAULT_CATALOG}' cannot be dropped")
        if cascade:
            for database in self.database_names(name):
                if database == DEFAULT_DATABASE:
                    for table in self.table_names(name, database):
                        self._drop_table_keeping_data(name, database, table)
                else:
                    self.drop_database(name, database, cascade=True)
        try:
            self.catalog_call("drop_catalog", DropCatalogRequest(name=name))
        except NoSuchObjectException as error:
            raise NamespaceNotFoundError(f"hive3: catalog {name} not found") from error
        except InvalidOperationException as error:
            raise NamespaceNotEmptyError(f"hive3: catalog {name} is not empty: {message(error)}") from error

    # --- databases -----------------------------------------------------------------------------

    def create_database(self, database: Database) -> None:
        """create_database of `database` (of a catalog `require_catalog` allows)."""
        catalog, name = database.catalogName, database.name
        try:
            self.send("create_database", database)
        except AlreadyExistsException as error:
            raise NamespaceAlreadyExistsError(
                f"hive3: database {display((catalog, name))} already exists") from error
        except (InvalidObjectException, NoSuchObjectException) as error:
            if not is_default_catalog(catalog):
                self.get_catalog(catalog)  # NamespaceNotFound when the parent is missing
            raise InvalidInputError(f"hive3: the metastore refused database {display((catalog, name))}: "
                                    f"{message(error)}") from error

    def get_database(self, catalog: str, name: str) -> Database:
        self.require_catalog(catalog)
        try:
            return self.send("get_database", database_ref(catalog, name))
        except NoSuchObjectException as error:
            raise NamespaceNotFoundError(f"hive3: database {display((catalog, name))} not found") from error

    def database_names(self, catalog: str) -> list[str]:
        if is_default_catalog(catalog):
            return self.send("get_all_databases")
        self.require_catalog(catalog)
        names = self.send("get_databases", f"@{catalog}#")
        if not names:  # every catalog has `default`: empty means missing
            self.get_catalog(catalog)
        return names

    def drop_database(self, catalog: str, name: str, cascade: bool) -> None:
        """One drop_database with deleteData=false: HMS itself refuses a database with tables
        (or functions) without cascade, and with cascade drops them keeping their data."""
        if is_default_catalog(catalog) and name.lower() == DEFAULT_DATABASE:
            raise InvalidInputError(f"hive3: database {DEFAULT_CATALOG}${DEFAULT_DATABASE} cannot be dropped")
        self.require_catalog(catalog)
        try:
            self.send("drop_database", database_ref(catalog, name), False, cascade)
        except NoSuchObjectException as error:
            raise NamespaceNotFoundError(f"hive3: database {display((catalog, name))} not found") from error
        except InvalidOperationException as error:
            raise NamespaceNotEmptyError(f"hive3: database {display((catalog, name))} is not empty: "
                                         f"{message(error)}") from error
        except MetaException:
            self.get_database(catalog, name)  # HMS 2.x answers a missing database this way
            raise

    # --- tables --------------------------------------------------------------------------------

    def get_table(self, catalog: str, database: str, name: str) -> Table:
        self.require_catalog(catalog)
        request = GetTableRequest(dbName=database, tblName=name, catName=catalog)
        try:
            return self.send("get_table_req", request).table
        except NoSuchObjectException as error:
            raise TableNotFoundError(f"hive3: table {display((catalog, database, name))} not found") from error

    def lance_table(self, catalog: str, database: str, name: str) -> Table:
        """The table, which must be a Lance table (InvalidInput otherwise, as the spec says)."""
        table = self.get_table(catalog, database, name)
        if not is_lance(table):
            raise InvalidInputError(f"hive3: table {display((catalog, database, name))} is not a Lance "
                                    f"table (tableType {table.tableType}, {TABLE_TYPE_KEY}="
                                    f"{(table.parameters or {}).get(TABLE_TYPE_KEY)})")
        return table

    def alter_lance_table(self, id: Identifier, table: Table) -> None:
        """alter_table of the Lance table `id` (as read, then changed) with the Lance marks;
        TableNotFound when it was dropped meanwhile, InvalidInput for any other refusal."""
        catalog, database, name = id
        table.parameters = {**(table.parameters or {}), **LANCE_TABLE_PARAMETERS}
        try:
            self.send("alter_table", database_ref(catalog, database), name, table)
        except InvalidOperationException as error:
            self.lance_table(catalog, database, name)  # TableNotFound if it was dropped meanwhile
            raise InvalidInputError(f"hive3: the metastore refused to alter {display(id)}: "
                                    f"{message(error)}") from error

    def table_names(self, catalog: str, database: str) -> list[str]:
        """Sorted names of every table; HMS answers [] for a missing database, so an empty
        answer is checked with get_database."""
        self.require_catalog(catalog)
        names = self.send("get_all_tables", database_ref(catalog, database))
        if not names:
            self.get_database(catalog, database)
        return sorted(names)

    def table_objects(self, catalog: str, database: str, names: list[str]) -> list[Table]:
        """The tables of `names` that still exist, in one call."""
        request = GetTablesRequest(dbName=database, tblNames=names, catName=catalog)
        try:
            return self.send("get_table_objects_by_name_req", request).tables
        except UnknownDBException as error:
            raise NamespaceNotFoundError(f"hive3: database {display((catalog, database))} not found") from error

    def _drop_table_keeping_data(self, catalog: str, database: str, name: str) -> None:
        with contextlib.suppress(NoSuchObjectException):  # already gone
            self.send("drop_table", database_ref(catalog, database), name, False)
