"""The Hive Metastore 3.x calls lance-sync uses, with HMS 3.1 semantics, kept in memory.

Each public method is one Thrift call of ThriftHiveMetastore (same name, same
arguments). Errors are the exception types HMS raises for the same input; messages
follow HMS 3.1 where known. One lock serialises every call, like a single-writer
metastore database. Stored objects are never changed in place (a change stores a new
object), so answers share them without copying while the processor serialises them.
"""

from __future__ import annotations

import copy
import functools
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pymetastore.hive_metastore.ttypes import (
    AlreadyExistsException,
    AlterCatalogRequest,
    Catalog,
    CheckLockRequest,
    CreateCatalogRequest,
    Database,
    DropCatalogRequest,
    EnvironmentContext,
    GetCatalogRequest,
    GetCatalogResponse,
    GetCatalogsResponse,
    GetTableRequest,
    GetTableResult,
    GetTablesRequest,
    GetTablesResult,
    GrantRevokePrivilegeRequest,
    GrantRevokePrivilegeResponse,
    HeartbeatRequest,
    HiveObjectPrivilege,
    HiveObjectRef,
    InvalidObjectException,
    InvalidOperationException,
    LockRequest,
    LockResponse,
    MetaException,
    NoSuchObjectException,
    PrincipalType,
    PrivilegeBag,
    Role,
    ShowLocksRequest,
    ShowLocksResponse,
    SkewedInfo,
    Table,
    UnknownDBException,
    UnlockRequest,
)
from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TApplicationException

from tests.servers.hive3_server import files
from tests.servers.hive3_server.locks import LockTable
from tests.servers.hive3_server.names import (
    DEFAULT_CATALOG,
    DEFAULT_DATABASE,
    is_valid_name,
    is_valid_table_name,
    matches_pattern,
    normalize,
    parse_db_name,
    qualify_location,
)
from tests.servers.hive3_server.privileges import Privileges

EXTERNAL_TABLE = "EXTERNAL_TABLE"
MANAGED_TABLE = "MANAGED_TABLE"
VIRTUAL_VIEW = "VIRTUAL_VIEW"
DDL_TIME = "transient_lastDdlTime"
DO_NOT_UPDATE_STATS = "DO_NOT_UPDATE_STATS"


def _synchronized(method: Callable) -> Callable:
    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return locked


def _now() -> int:
    return int(time.time())


class HiveMetastoreHandler:
    """Catalogs, databases and tables of one metastore whose warehouse is `warehouse`."""

    def __init__(self, warehouse: Path) -> None:
        self._lock = threading.RLock()
        self._catalogs: dict[str, Catalog] = {}
        self._databases: dict[tuple[str, str], Database] = {}
        self._tables: dict[tuple[str, str, str], Table] = {}
        self._lock_table = LockTable()
        self._privileges = Privileges()
        root = qualify_location(warehouse.as_uri())
        files.make_directory(root)
        self._catalogs[DEFAULT_CATALOG] = Catalog(
            name=DEFAULT_CATALOG, description="Default catalog, for Hive", locationUri=root)
        self._store_database(Database(
            name=DEFAULT_DATABASE, description="Default Hive database", locationUri=root,
            parameters={}, ownerName="public", ownerType=PrincipalType.ROLE,
            catalogName=DEFAULT_CATALOG))

    # ---- locks (locks.py) ------------------------------------------------------------

    @_synchronized
    def lock(self, rqst: LockRequest) -> LockResponse:
        return self._lock_table.lock(rqst)

    @_synchronized
    def check_lock(self, rqst: CheckLockRequest) -> LockResponse:
        return self._lock_table.check_lock(rqst)

    @_synchronized
    def unlock(self, rqst: UnlockRequest) -> None:
        self._lock_table.unlock(rqst)

    @_synchronized
    def heartbeat(self, ids: HeartbeatRequest) -> None:
        self._lock_table.heartbeat(ids)

    @_synchronized
    def show_locks(self, rqst: ShowLocksRequest) -> ShowLocksResponse:
        return self._lock_table.show_locks(rqst)

    # ---- privileges and roles (privileges.py) ----------------------------------------

    @_synchronized
    def grant_revoke_privileges(self, request: GrantRevokePrivilegeRequest
                                ) -> GrantRevokePrivilegeResponse:
        return self._privileges.grant_revoke(request, self._database_exists, self._table_exists)

    @_synchronized
    def grant_privileges(self, privileges: PrivilegeBag) -> bool:
        return self._privileges.grant(privileges, self._database_exists, self._table_exists)

    @_synchronized
    def revoke_privileges(self, privileges: PrivilegeBag) -> bool:
        return self._privileges.revoke(privileges, False, self._database_exists)

    @_synchronized
    def list_privileges(self, principal_name: str | None, principal_type: int | None,
                        hive_object: HiveObjectRef) -> list[HiveObjectPrivilege]:
        return self._privileges.list(principal_name, principal_type, hive_object)

    @_synchronized
    def create_role(self, role: Role) -> bool:
        return self._privileges.create_role(role)

    @_synchronized
    def drop_role(self, role_name: str) -> bool:
        return self._privileges.drop_role(role_name)

    @_synchronized
    def get_role_names(self) -> list[str]:
        return self._privileges.get_role_names()

    def _database_exists(self, catalog: str, database: str) -> bool:
        return (catalog, database) in self._databases

    def _table_exists(self, catalog: str, database: str, table: str) -> bool:
        return (catalog, database, table) in self._tables

    # ---- catalogs -------------------------------------------------------------------

    @_synchronized
    def create_catalog(self, request: CreateCatalogRequest) -> None:
        new = copy.deepcopy(request.catalog)
        if new.name is None:
            raise MetaException("Catalog name cannot be null.")
        if normalize(new.name) in self._catalogs:
            raise AlreadyExistsException(f"Catalog {new.name} already exists")
        if not is_valid_name(new.name):
            raise InvalidObjectException(f"{new.name} is not a valid catalog name")
        if new.locationUri is None:
            raise InvalidObjectException("You must specify a path for the catalog")
        new.name = normalize(new.name)
        files.make_directory(qualify_location(new.locationUri))
        self._catalogs[new.name] = new
        self._create_database(Database(
            name=DEFAULT_DATABASE, description=f"Default database for catalog {new.name}",
            locationUri=new.locationUri, parameters={}, catalogName=new.name))

    @_synchronized
    def alter_catalog(self, request: AlterCatalogRequest) -> None:
        altered = copy.deepcopy(self._catalog(request.name))
        if request.newCat.name != request.name:
            raise InvalidOperationException("You cannot change a catalog's name")
        if _not_blank(request.newCat.locationUri):
            altered.locationUri = request.newCat.locationUri
        if _not_blank(request.newCat.description):
            altered.description = request.newCat.description
        self._catalogs[altered.name] = altered

    @_synchronized
    def get_catalog(self, request: GetCatalogRequest) -> GetCatalogResponse:
        return GetCatalogResponse(catalog=self._catalog(request.name))

    @_synchronized
    def get_catalogs(self) -> GetCatalogsResponse:
        return GetCatalogsResponse(names=sorted(self._catalogs))

    @_synchronized
    def drop_catalog(self, request: DropCatalogRequest) -> None:
        name = request.name
        if name is not None and normalize(name) == DEFAULT_CATALOG:
            raise MetaException(f"Can not drop {DEFAULT_CATALOG} catalog")
        catalog = self._catalog(name)
        databases = self._database_names(catalog.name)
        if databases == [DEFAULT_DATABASE]:
            if self._table_keys(catalog.name, DEFAULT_DATABASE):
                raise InvalidOperationException(
                    f"There are still objects in the default database for catalog {catalog.name}")
            self._drop_database(catalog.name, DEFAULT_DATABASE, delete_data=True, cascade=False)
        elif databases:
            raise InvalidOperationException(
                f"There are non-default databases in the catalog {catalog.name} so it cannot be dropped.")
        del self._catalogs[catalog.name]

    def _catalog(self, name: str | None) -> Catalog:
        if name is None:
            raise MetaException("Catalog name cannot be null.")
        catalog = self._catalogs.get(normalize(name))
        if catalog is None:
            raise NoSuchObjectException(f"No catalog {name}")
        return catalog

    # ---- databases ------------------------------------------------------------------

    @_synchronized
    def create_database(self, database: Database) -> None:
        new = copy.deepcopy(database)
        new.catalogName = new.catalogName or DEFAULT_CATALOG
        if new.name is None:
            raise MetaException("Database name cannot be null.")
        if (normalize(new.catalogName), normalize(new.name)) in self._databases:
            raise AlreadyExistsException(f"Database {new.name} already exists")
        self._create_database(new)

    @_synchronized
    def get_database(self, name: str) -> Database:
        return self._database(*parse_db_name(name))

    @_synchronized
    def get_databases(self, pattern: str | None) -> list[str]:
        catalog, database_pattern = parse_db_name(pattern)
        return [name for name in self._database_names(normalize(catalog))
                if _matches(name, database_pattern)]

    @_synchronized
    def get_all_databases(self) -> list[str]:
        return self._database_names(DEFAULT_CATALOG)

    @_synchronized
    def alter_database(self, dbname: str, db: Database) -> None:
        altered = copy.deepcopy(self._database(*parse_db_name(dbname)))
        altered.parameters = dict(db.parameters or {})
        altered.ownerName = db.ownerName
        if db.ownerType is not None:
            altered.ownerType = db.ownerType
        if _not_blank(db.description):
            altered.description = db.description
        if _not_blank(db.locationUri):
            altered.locationUri = qualify_location(db.locationUri)
        self._databases[(altered.catalogName, altered.name)] = altered

    @_synchronized
    def drop_database(self, name: str, delete_data: bool, cascade: bool) -> None:
        catalog, database = parse_db_name(name)
        if normalize(catalog) == DEFAULT_CATALOG and database is not None \
                and normalize(database) == DEFAULT_DATABASE:
            raise MetaException(
                f"Can not drop {DEFAULT_DATABASE} database in catalog {DEFAULT_CATALOG}")
        self._drop_database(catalog, database, delete_data, cascade)

    def _create_database(self, new: Database) -> None:
        if not is_valid_name(new.name):
            raise InvalidObjectException(f"{new.name} is not a valid database name")
        catalog = self._catalogs.get(normalize(new.catalogName))
        if catalog is None:
            raise InvalidObjectException(f"No such catalog {new.catalogName}")
        if new.locationUri is None:
            new.locationUri = f"{qualify_location(catalog.locationUri)}/{normalize(new.name)}.db"
        new.locationUri = qualify_location(new.locationUri)
        files.make_directory(new.locationUri)
        self._store_database(new)

    def _store_database(self, new: Database) -> None:
        new.name = normalize(new.name)
        new.catalogName = normalize(new.catalogName)
        new.parameters = new.parameters or {}
        new.ownerType = new.ownerType or PrincipalType.USER
        self._databases[(new.catalogName, new.name)] = new

    def _drop_database(self, catalog: str, name: str | None, delete_data: bool,
                       cascade: bool) -> None:
        database = self._database(catalog, name)
        table_keys = self._table_keys(database.catalogName, database.name)
        if table_keys and not cascade:
            raise InvalidOperationException(
                f"Database {database.name} is not empty. One or more tables exist.")
        for key in table_keys:
            table = self._tables.pop(key)
            self._privileges.forget(("table", *key))
            if table.sd.location and _deletes_data(table, delete_data) \
                    and not files.is_inside(table.sd.location, database.locationUri):
                files.delete_directory(table.sd.location)
        del self._databases[(database.catalogName, database.name)]
        self._privileges.forget(("database", database.catalogName, database.name))
        if delete_data:
            files.delete_directory(database.locationUri)

    def _database(self, catalog: str, name: str | None) -> Database:
        if name is None:
            raise MetaException("Database name cannot be null.")
        database = self._databases.get((normalize(catalog), normalize(name)))
        if database is None:
            raise NoSuchObjectException(name)
        return database

    def _database_names(self, catalog: str) -> list[str]:
        return sorted(name for (owner, name) in self._databases if owner == catalog)

    # ---- tables ---------------------------------------------------------------------

    @_synchronized
    def create_table(self, table: Table) -> None:
        self._create_table(copy.deepcopy(table))

    @_synchronized
    def create_table_with_environment_context(self, table: Table,
                                              context: EnvironmentContext | None) -> None:
        self._create_table(copy.deepcopy(table))

    @_synchronized
    def get_table(self, dbname: str, name: str) -> Table:
        return self._table(*parse_db_name(dbname), name)

    @_synchronized
    def get_table_req(self, request: GetTableRequest) -> GetTableResult:
        _check_required_fields(request)
        table = self._table(request.catName or DEFAULT_CATALOG, request.dbName, request.tblName)
        return GetTableResult(table=table)

    @_synchronized
    def get_tables(self, dbname: str, pattern: str | None) -> list[str]:
        catalog, database = parse_db_name(dbname)
        return sorted(name for (_, _, name) in self._table_keys(catalog, database)
                      if _matches(name, pattern))

    @_synchronized
    def get_all_tables(self, dbname: str) -> list[str]:
        return sorted(name for (_, _, name) in self._table_keys(*parse_db_name(dbname)))

    @_synchronized
    def get_table_objects_by_name(self, dbname: str, names: list[str] | None) -> list[Table]:
        catalog, database = parse_db_name(dbname)
        return self._tables_by_name(catalog, database, names)

    @_synchronized
    def get_table_objects_by_name_req(self, request: GetTablesRequest) -> GetTablesResult:
        _check_required_fields(request)
        catalog = request.catName or DEFAULT_CATALOG
        tables = self._tables_by_name(catalog, request.dbName, request.tblNames)
        return GetTablesResult(tables=tables)

    @_synchronized
    def alter_table(self, dbname: str, name: str, new: Table) -> None:
        self._alter_table(dbname, name, new, environment={})

    @_synchronized
    def alter_table_with_environment_context(self, dbname: str, name: str, new: Table,
                                             context: EnvironmentContext | None) -> None:
        environment = (context.properties or {}) if context else {}
        self._alter_table(dbname, name, new, environment)

    @_synchronized
    def drop_table(self, dbname: str, name: str, delete_data: bool) -> None:
        self._drop_table(dbname, name, delete_data)

    @_synchronized
    def drop_table_with_environment_context(self, dbname: str, name: str, delete_data: bool,
                                            context: EnvironmentContext | None) -> None:
        self._drop_table(dbname, name, delete_data)

    def _create_table(self, new: Table) -> None:
        if new.sd is None:
            raise MetaException(f"Table {new.tableName} has no storage descriptor")
        if not is_valid_table_name(new.tableName):
            raise InvalidObjectException(f"{new.tableName} is not a valid object name")
        new.catName = new.catName or DEFAULT_CATALOG
        database = self._databases.get((normalize(new.catName), normalize(new.dbName or "")))
        if database is None:
            raise InvalidObjectException(new.dbName)
        key = (database.catalogName, database.name, normalize(new.tableName))
        if key in self._tables:
            raise AlreadyExistsException(
                f"Table {new.catName}.{new.dbName}.{new.tableName} already exists")
        new.parameters = new.parameters or {}
        new.tableType = _stored_table_type(new)
        made_directory = False
        if new.tableType != VIRTUAL_VIEW:
            default = f"{database.locationUri}/{normalize(new.tableName)}"
            new.sd.location = qualify_location(new.sd.location or default)
            made_directory = files.make_directory(new.sd.location)
        if not made_directory:
            _update_quick_stats(new, force=False)
        new.createTime = _now()
        new.parameters.setdefault(DDL_TIME, str(new.createTime))
        self._tables[key] = _with_stored_defaults(new, *key)

    def _alter_table(self, dbname: str, tbl_name: str, new: Table,
                     environment: dict[str, str]) -> None:
        if not is_valid_table_name(new.tableName):
            raise InvalidOperationException(f"{new.tableName} is not a valid object name")
        if new.sd is None:
            raise MetaException(f"Table {new.tableName} has no storage descriptor")
        catalog, database = parse_db_name(dbname)
        old_key = (normalize(catalog), normalize(database or ""), normalize(tbl_name or ""))
        old = self._tables.get(old_key)
        if old is None:
            raise InvalidOperationException(
                f"table {catalog}.{database}.{tbl_name} doesn't exist")
        new_key = (old_key[0], normalize(new.dbName or database), normalize(new.tableName))
        if new_key != old_key:
            self._check_rename_target(new_key)
        altered = _altered_table(old, copy.deepcopy(new))
        altered.parameters.setdefault(DDL_TIME, str(_now()))
        if new_key == old_key and environment.get(DO_NOT_UPDATE_STATS) != "true":
            _update_quick_stats(altered, force=True)
        del self._tables[old_key]
        self._tables[new_key] = _with_stored_defaults(altered, *new_key)
        self._privileges.move(("table", *old_key), ("table", *new_key))

    def _check_rename_target(self, key: tuple[str, str, str]) -> None:
        catalog, database, table = key
        if (catalog, database) not in self._databases:
            raise InvalidOperationException(
                f"Unable to change partition or table. Database {database} does not exist")
        if key in self._tables:
            raise InvalidOperationException(f"new table {database}.{table} already exists")

    def _drop_table(self, dbname: str, name: str, delete_data: bool) -> None:
        catalog, database = parse_db_name(dbname)
        table = self._table(catalog, database, name)
        del self._tables[(table.catName, table.dbName, table.tableName)]
        self._privileges.forget(("table", table.catName, table.dbName, table.tableName))
        if _deletes_data(table, delete_data):
            files.delete_directory(table.sd.location)

    def _table(self, catalog: str, database: str | None, name: str | None) -> Table:
        if database is None or name is None:
            raise MetaException("Database and table names cannot be null.")
        table = self._tables.get((normalize(catalog), normalize(database), normalize(name)))
        if table is None:
            raise NoSuchObjectException(f"{catalog}.{database}.{name} table not found")
        return table

    def _table_keys(self, catalog: str, database: str | None) -> list[tuple[str, str, str]]:
        if database is None:
            return []
        owner = (normalize(catalog), normalize(database))
        return [key for key in self._tables if key[:2] == owner]

    def _tables_by_name(self, catalog: str, database: str | None,
                        names: list[str] | None) -> list[Table]:
        if not database:
            raise UnknownDBException("DB name is null or empty")
        if names is None:
            raise InvalidOperationException(f"{database} cannot find null tables")
        owner = (normalize(catalog), normalize(database))
        wanted = {normalize(name) for name in names}
        found = [table for key, table in self._tables.items()
                 if key[:2] == owner and key[2] in wanted]
        if not found and owner not in self._databases:
            raise UnknownDBException(f"Could not find database {catalog}.{database}")
        return found


def _check_required_fields(request: GetTableRequest | GetTablesRequest) -> None:
    """A Java server rejects a request missing a required field while reading it."""
    try:
        request.validate()
    except TProtocolException as error:
        raise TApplicationException(TApplicationException.PROTOCOL_ERROR, error.message) from error


def _matches(name: str, pattern: str | None) -> bool:
    try:
        return matches_pattern(name, pattern)
    except re.error as error:
        raise MetaException(f"Invalid pattern {pattern}: {error}") from error


def _not_blank(text: str | None) -> bool:
    return text is not None and text.strip() != ""


def _is_external(table: Table) -> bool:
    """HMS's isExternalTable: case-insensitive, unlike the rule for the stored type."""
    return (table.parameters or {}).get("EXTERNAL", "").upper() == "TRUE"


def _stored_table_type(table: Table) -> str:
    """HMS keeps EXTERNAL_TABLE only with parameter EXTERNAL=TRUE (exactly), and turns
    MANAGED_TABLE into EXTERNAL_TABLE when it is set: the parameter wins."""
    declared = table.tableType or MANAGED_TABLE
    external = (table.parameters or {}).get("EXTERNAL") == "TRUE"
    if declared in (MANAGED_TABLE, EXTERNAL_TABLE):
        return EXTERNAL_TABLE if external else MANAGED_TABLE
    return declared


def _deletes_data(table: Table, delete_data: bool) -> bool:
    """Dropping deletes a managed table's data; an external one's only with purge set."""
    purge = (table.parameters or {}).get("external.table.purge", "").lower() == "true"
    return delete_data and (not _is_external(table) or purge)


def _update_quick_stats(table: Table, force: bool) -> None:
    """numFiles/totalSize, as HMS refreshes them on create (existing directory) and alter."""
    params = table.parameters
    if params.pop(DO_NOT_UPDATE_STATS, "false").lower() == "true":
        return
    if table.tableType == VIRTUAL_VIEW or table.partitionKeys:
        return
    if not force and {"numFiles", "totalSize"} <= params.keys():
        return
    params.update(files.quick_stats(table.sd.location))
    params.pop("COLUMN_STATS_ACCURATE", None)


def _altered_table(old: Table, new: Table) -> Table:
    """The fields HMS's alter_table takes from the new definition; the rest stays."""
    altered = copy.deepcopy(old)
    altered.parameters = new.parameters or {}
    altered.tableType = _stored_table_type(new)
    altered.lastAccessTime = new.lastAccessTime
    altered.partitionKeys = new.partitionKeys
    altered.sd = new.sd
    if altered.sd.location:
        altered.sd.location = qualify_location(altered.sd.location)
    altered.owner = new.owner
    altered.ownerType = new.ownerType
    altered.retention = new.retention
    altered.viewOriginalText = new.viewOriginalText
    altered.viewExpandedText = new.viewExpandedText
    altered.rewriteEnabled = new.rewriteEnabled
    return altered


def _with_stored_defaults(table: Table, catalog: str, database: str, name: str) -> Table:
    """What a table looks like after a round trip through HMS's database: lower-case
    names and empty collections where the client sent none."""
    table.catName, table.dbName, table.tableName = catalog, database, name
    table.partitionKeys = table.partitionKeys or []
    table.parameters = table.parameters or {}
    table.lastAccessTime = table.lastAccessTime or 0
    table.retention = table.retention or 0
    table.rewriteEnabled = bool(table.rewriteEnabled)
    table.ownerType = table.ownerType or PrincipalType.USER
    sd = table.sd
    sd.cols = sd.cols or []
    sd.bucketCols = sd.bucketCols or []
    sd.sortCols = sd.sortCols or []
    sd.parameters = sd.parameters or {}
    sd.compressed = bool(sd.compressed)
    sd.numBuckets = sd.numBuckets or 0
    sd.storedAsSubDirectories = bool(sd.storedAsSubDirectories)
    sd.skewedInfo = sd.skewedInfo or SkewedInfo(
        skewedColNames=[], skewedColValues=[], skewedColValueLocationMaps={})
    return table
