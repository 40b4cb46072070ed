"""AWS Glue Data Catalog backend (spec: glue.md).

Identifiers (tuples of names; manifests write them `$`-joined):

- `()` is the root catalog: `catalog_id`, or the caller's account id (STS GetCallerIdentity,
  once per driver, only when `catalog_id` is not set).
- Level 1 names a catalog: the root catalog's own id (`123456789012`), or a child catalog of
  the root (`sales_catalog`, CatalogId `123456789012:sales_catalog`).
- Deeper ids are a catalog chain ending in a database or in a nested catalog:
  `123456789012$sales` is database `sales` of the root catalog (the root's children are at
  level 1, so a root-led id is always root + database); `cat$sales` is database `sales` of
  catalog `cat`, or the nested catalog `cat/sales`; `parent$child$db` is database `db` of
  `parent/child`. Where a database and a nested catalog share a name, the database wins:
  the driver asks for the database first (one call in the common case) and for the catalog
  only when there is no such database.
- Tables live in databases: `<catalog chain>$<database>$<table>`.

CatalogIds sent to Glue: the account id, `<account>:<a>/<b>` below an account's default
catalog, `<root>/<a>` below any other root. Glue folds database, table and catalog names to
lower case; listings answer the folded names.

Modules: `client` holds `GlueClient`, the one client the driver, its grants and its leases
share: its requests, their errors and the resolution of ids to CatalogIds and databases.
Below it, `credentials` resolves the region, credentials (an assumed role through STS) and
endpoints, and registers every credential for masking; `transport` sends each call as a
SigV4-signed JSON POST through the shared HTTP client; `answers` checks each answer against
botocore's model of its operation (a garbled one is a `BadAnswerError`, reads are sent again,
writes are not); `errors` translates error answers by their AWS code. `objects` holds what the
driver reads and writes of Glue's objects; `grants` reads and changes grants on databases and
tables, which are AWS Lake Formation permissions (sent the same way, by the client, to Lake
Formation's endpoint, made on first use).

Apply leases (`leases.GlueLeaseRegister`) are a table in the lease database whose every change
is an UpdateTable conditional on the VersionId that was read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
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

from lance_sync.drivers.base import (
    Capabilities,
    Identifier,
    NamespaceInfo,
    SyncNamespace,
    TableInfo,
    patched_properties,
)
from lance_sync.drivers.glue.client import GlueClient
from lance_sync.drivers.glue.config import ACCOUNT_ID, GlueConfig, GlueRules
from lance_sync.drivers.glue.grants import LakeFormationGrants
from lance_sync.drivers.glue.leases import GlueLeaseRegister
from lance_sync.drivers.glue.objects import (
    DatabaseRef,
    FoundNamespace,
    checked_id,
    is_lance,
    lance_table_input,
    location_of,
    parameters_of,
)
from lance_sync.drivers.leases import LeaseRegister
from lance_sync.drivers.support.paging import page_of_names
from lance_sync.model.grants import GrantMap, Securable
from lance_sync.model.locations import join_location, normalize_location
from lance_sync.model.marks import LANCE_TABLE_TYPE, TABLE_TYPE_KEY, lance_table_properties

#: Glue's page caps: GetDatabases / GetTables 100, GetCatalogs 1000
OBJECT_PAGE_SIZE = 100
CATALOG_PAGE_SIZE = 1000


class GlueNamespace(GlueRules, SyncNamespace):
    config: GlueConfig
    bulk_namespace_reads = True

    def __init__(self, config: GlueConfig | None = None, /, **properties: Any) -> None:
        super().__init__(config, **properties)
        self.client = GlueClient(self.config, on_request=self.count_call)
        self._grants = LakeFormationGrants(self.client)

    def namespace_id(self) -> str:
        config: GlueConfig = self.config
        return (f"lance-sync glue {{ region: {self.client.access.region!r}, "
                f"endpoint: {config.endpoint!r}, catalog_id: {config.catalog_id!r} }}")

    def capabilities(self) -> Capabilities:
        # CreateCatalog only creates children of the caller's default catalog
        root = self.config.catalog_id
        catalogs_creatable = root is None or ACCOUNT_ID.fullmatch(root) is not None
        return Capabilities(update_table_location=True, grants=True,
                            creatable_namespace_levels=(1 if catalogs_creatable else 2, None))

    def lease_register(self, parent: Identifier, name: str, owner: str) -> LeaseRegister:
        return GlueLeaseRegister(self, self.client, (*parent, name))

    # --- namespaces ----------------------------------------------------------------------------

    def _create_namespace_object(self, id: Identifier, properties: dict[str, str]) -> dict[str, str]:
        id = checked_id(id)
        database, catalog_id = self.client.namespace_refs(id)
        if database is not None:
            self._create_database(id, database, properties)
        elif catalog_id is not None:
            self._create_catalog(id, properties)
        else:
            raise NamespaceNotFoundError(_under_database(self.client.subject(id)))
        return properties

    def replace_namespace_properties(self, id: Identifier, properties: dict[str, str]) -> None:
        self._write_namespace_properties(id, self.client.resolve_namespace(id), properties)

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        names = [info.id[-1] for info in self._child_namespaces(checked_id(request.id, root_ok=True))]
        page, token = page_of_names(names, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        found = self.client.resolve_namespace(checked_id(request.id, root_ok=True))
        return DescribeNamespaceResponse(properties=found.properties)

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        self.client.resolve_namespace(checked_id(request.id, root_ok=True))
        return NamespaceExistsResponse()

    def _drop_namespace_object(self, id: Identifier, cascade: bool) -> dict[str, str]:
        id = checked_id(id)
        if self.client.namespace_refs(id) == (None, self.client.root_catalog_id()):
            raise InvalidInputError(f"{self.client.subject(id)} is the root catalog; it cannot be dropped")
        found = self.client.resolve_namespace(id)
        subject = self.client.subject(id)
        if found.database is not None:
            self._check_empty(subject, "GetTables", "TableList", "tables",
                              CatalogId=found.catalog_id, DatabaseName=found.database)
            self.client.call("DeleteDatabase", subject, missing=NamespaceNotFoundError,
                             CatalogId=found.catalog_id, Name=found.database)
        else:
            self._check_empty(subject, "GetDatabases", "DatabaseList", "databases",
                              CatalogId=found.catalog_id)
            self._check_empty(subject, "GetCatalogs", "CatalogList", "child catalogs",
                              ParentCatalogId=found.catalog_id)
            self.client.delete_catalog(subject, found.catalog_id)
        return found.properties

    # --- grants (Lake Formation permissions: grants.py) -----------------------------------------

    def list_grants(self, kind: Securable, id: Identifier) -> GrantMap:
        return self._grants.list(kind, checked_id(id))

    def change_grants(self, kind: Securable, id: Identifier, principal: str,
                      grant: frozenset[str], revoke: frozenset[str]) -> None:
        self._grants.change(kind, checked_id(id), principal, grant, revoke)

    # --- tables --------------------------------------------------------------------------------

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        id = checked_id(request.id)
        database, name = self.client.table_ref(id)
        if request.location:
            location = normalize_location(request.location)
        else:
            location = self._default_location(id, database)
        parameters = lance_table_properties(request.properties)
        self.client.call("CreateTable", self.client.subject(id), missing=NamespaceNotFoundError,
                         duplicate=TableAlreadyExistsError, CatalogId=database.catalog_id,
                         DatabaseName=database.name, TableInput=lance_table_input(name, location, parameters))
        return DeclareTableResponse(location=location, properties=parameters,
                                    storage_options=self.storage_options() or None)

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        names = [info.id[-1] for info in self.list_table_infos(checked_id(request.id, root_ok=True))]
        page, token = page_of_names(names, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        if request.load_detailed_metadata:
            raise UnsupportedOperationError("glue: only load_detailed_metadata=false is supported")
        table = self.client.lance_table(checked_id(request.id))
        return DescribeTableResponse(location=location_of(table), properties=parameters_of(table),
                                     storage_options=self.storage_options() or None)

    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        self.client.lance_table(checked_id(request.id))
        return TableExistsResponse()

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        id = checked_id(request.id)
        table = self.client.lance_table(id)
        database, name = self.client.table_ref(id)
        self.client.call("DeleteTable", self.client.subject(id), missing=TableNotFoundError,
                         CatalogId=database.catalog_id, DatabaseName=database.name, Name=name)
        return DeregisterTableResponse(id=list(id), location=location_of(table),
                                       properties=parameters_of(table))

    # --- reconciler extensions -----------------------------------------------------------------

    def update_namespace_properties(self, id: Identifier, updates: dict[str, str],
                                    removals: list[str]) -> None:
        found = self.client.resolve_namespace(id)
        self._write_namespace_properties(id, found, patched_properties(found.properties, updates, removals))

    def update_table_properties(self, id: Identifier, updates: dict[str, str],
                                removals: list[str]) -> None:
        if TABLE_TYPE_KEY in removals or updates.get(TABLE_TYPE_KEY, LANCE_TABLE_TYPE).lower() != LANCE_TABLE_TYPE:
            raise InvalidInputError(f"glue: '{TABLE_TYPE_KEY}={LANCE_TABLE_TYPE}' marks a Lance "
                                    "table and cannot be changed")
        self._update_table(id, lambda current: patched_properties(current, updates, removals))

    def _overwrite_registration(self, id: Identifier, location: str,
                                properties: dict[str, str] | None) -> DeclareTableResponse:
        """In place: one UpdateTable of the location and parameters, refused by Glue if the
        table changed since it was read."""
        location, parameters = normalize_location(location), lance_table_properties(properties)
        self._update_table(checked_id(id), lambda _: parameters, location)
        return DeclareTableResponse(location=location, properties=parameters,
                                    storage_options=self.storage_options() or None)

    def update_table_location(self, id: Identifier, location: str) -> None:
        """Point a registered Lance table at another location, in place (UpdateTable)."""
        self._update_table(id, dict, normalize_location(location))

    def list_namespace_infos(self, parent: Identifier) -> Iterator[NamespaceInfo]:
        return iter(self._child_namespaces(parent))

    def list_table_infos(self, namespace: Identifier) -> Iterator[TableInfo]:
        """Lance tables of a database from GetTables pages of 100; no call per table."""
        database, nested_catalog = self.client.namespace_refs(namespace)
        if database is None:
            # a catalog (or nothing): tables live only in databases
            self.client.resolve_namespace(namespace)
            return
        listed = False
        try:
            for table in self.client.items("GetTables", "TableList", self.client.subject(namespace),
                                           CatalogId=database.catalog_id, DatabaseName=database.name,
                                           MaxResults=OBJECT_PAGE_SIZE):
                listed = True
                if is_lance(table):
                    yield TableInfo((*namespace, table["Name"]), location_of(table), parameters_of(table))
        except NamespaceNotFoundError:
            if listed or nested_catalog is None or self.client.get_catalog(namespace, nested_catalog) is None:
                raise

    def get_namespace_info(self, id: Identifier) -> NamespaceInfo | None:
        try:
            return NamespaceInfo(id, self.client.resolve_namespace(id).properties)
        except NamespaceNotFoundError:
            return None

    def get_namespace_infos(self, ids: list[Identifier]) -> list[NamespaceInfo | None]:
        """Databases from GetDatabases pages of their catalog (100 a page) while that takes fewer
        calls than one GetDatabase each; the others (and catalogs) one by one."""
        found: dict[Identifier, NamespaceInfo] = {}
        by_catalog: dict[str, dict[str, Identifier]] = {}
        for id in map(checked_id, ids):
            database = self.client.namespace_refs(id)[0]
            if database is not None:
                by_catalog.setdefault(database.catalog_id, {})[database.name] = id
        for catalog_id, wanted in by_catalog.items():
            with contextlib.suppress(NamespaceNotFoundError):  # no such catalog: each id says so
                found.update(self._listed_databases(catalog_id, dict(wanted)))
        return [found[id] if id in found else self.get_namespace_info(id) for id in ids]

    def _listed_databases(self, catalog_id: str, wanted: dict[str, Identifier]) -> dict[Identifier, NamespaceInfo]:
        """The `wanted` databases (name -> id) found in GetDatabases pages of a catalog, paging
        while fewer pages were read than databases are still wanted."""
        found: dict[Identifier, NamespaceInfo] = {}
        token: str | None = None
        pages = 0
        while len(wanted) > max(pages, 1):
            paging: dict[str, Any] = {"NextToken": token} if token else {}
            answer = self.client.call("GetDatabases", catalog_id, missing=NamespaceNotFoundError,
                                      CatalogId=catalog_id, MaxResults=OBJECT_PAGE_SIZE, **paging)
            pages += 1
            for database in answer["DatabaseList"]:
                id = wanted.pop(database["Name"], None)
                if id is not None:
                    found[id] = NamespaceInfo(id, parameters_of(database))
            token = answer.get("NextToken")
            if not token:
                break
        return found

    def get_table_info(self, id: Identifier) -> TableInfo | None:
        table = self.client.get_table(id)
        if table is None:
            return None
        return TableInfo(id, location_of(table), parameters_of(table), is_lance=is_lance(table))

    # --- namespace helpers ---------------------------------------------------------------------

    def _create_catalog(self, id: Identifier, properties: dict[str, str]) -> None:
        subject = self.client.subject(id)
        if id[0] == self.client.root_catalog_id():
            raise NamespaceAlreadyExistsError(f"{subject} is the root catalog")
        if self.capabilities().creatable_namespace_levels[0] > 1:
            raise UnsupportedOperationError(
                f"glue: cannot create catalog {subject}: CreateCatalog only creates catalogs under "
                "an account's default catalog, and the root catalog is not one")
        self.client.call("CreateCatalog", subject, missing=NamespaceNotFoundError,
                         duplicate=NamespaceAlreadyExistsError, Name=id[0],
                         CatalogInput={"Parameters": properties})

    def _create_database(self, id: Identifier, database: DatabaseRef,
                         properties: dict[str, str]) -> None:
        subject = self.client.subject(id)
        parent = database.catalog_id
        if not self.client.catalog_exists(id[:-1], parent):
            raise NamespaceNotFoundError(f"parent catalog of {subject} not found")
        self.client.call("CreateDatabase", subject, missing=NamespaceNotFoundError,
                         duplicate=NamespaceAlreadyExistsError, CatalogId=parent,
                         DatabaseInput={"Name": database.name, "Parameters": properties})

    def _write_namespace_properties(self, id: Identifier, found: FoundNamespace,
                                    properties: dict[str, str]) -> None:
        """Replace the Parameters of a database or catalog, keeping its other fields."""
        subject = self.client.subject(id)
        if found.database is not None:
            database_input = self.client.as_input(found.described, "DatabaseInput")
            self.client.call("UpdateDatabase", subject, missing=NamespaceNotFoundError,
                             CatalogId=found.catalog_id, Name=found.database,
                             DatabaseInput={**database_input, "Parameters": properties})
        else:
            catalog_input = self.client.as_input(found.described, "CatalogInput")
            self.client.call("UpdateCatalog", subject, missing=NamespaceNotFoundError,
                             CatalogId=found.catalog_id,
                             CatalogInput={**catalog_input, "Parameters": properties})

    def _child_namespaces(self, parent: Identifier) -> list[NamespaceInfo]:
        """Child catalogs and databases of `parent`, each with its Parameters."""
        if not parent:
            return self._root_children()
        subject = self.client.subject(parent)
        if len(parent) == 1:
            catalog_id = self.client.catalog_id(parent)
        else:
            found = self.client.resolve_namespace(parent)
            if found.database is not None:
                return []  # databases hold tables, not namespaces
            catalog_id = found.catalog_id
        children = [NamespaceInfo((*parent, database["Name"]), parameters_of(database))
                    for database in self.client.items("GetDatabases", "DatabaseList", subject,
                                                      CatalogId=catalog_id, MaxResults=OBJECT_PAGE_SIZE)]
        if catalog_id != self.client.root_catalog_id():  # the root's child catalogs are level-1 names
            children += [NamespaceInfo((*parent, catalog["Name"]), parameters_of(catalog))
                         for catalog in self._child_catalogs(subject, catalog_id)]
        return children

    def _root_children(self) -> list[NamespaceInfo]:
        """Level 1: the root catalog (named by its id) and its child catalogs."""
        root = self.client.root_catalog_id()
        subject = self.client.subject(())
        if ACCOUNT_ID.fullmatch(root):
            return [NamespaceInfo((root if c["CatalogId"] == root else c["Name"],), parameters_of(c))
                    for c in self._child_catalogs(subject, root, IncludeRoot=True)]
        # IncludeRoot is only accepted for an account's default catalog
        own = self.client.call("GetCatalog", subject, missing=NamespaceNotFoundError, CatalogId=root)
        return [NamespaceInfo((root,), parameters_of(own["Catalog"])),
                *(NamespaceInfo((c["Name"],), parameters_of(c)) for c in self._child_catalogs(subject, root))]

    def _child_catalogs(self, subject: str, catalog_id: str, **options: Any) -> Iterator[dict]:
        return self.client.items("GetCatalogs", "CatalogList", subject, ParentCatalogId=catalog_id,
                                 Recursive=False, MaxResults=CATALOG_PAGE_SIZE, **options)

    def _check_empty(self, subject: str, operation: str, list_key: str, what: str,
                     **params: Any) -> None:
        response = self.client.call(operation, subject, missing=NamespaceNotFoundError, MaxResults=1,
                                    **params)
        if response[list_key]:
            raise NamespaceNotEmptyError(f"namespace {subject} is not empty: it has {what}")

    # --- table helpers -------------------------------------------------------------------------

    def _update_table(self, id: Identifier, parameters: Callable[[dict[str, str]], dict[str, str]],
                      location: str | None = None) -> None:
        """UpdateTable of a Lance table with new Parameters (and Location), the rest kept.

        VersionId makes it conditional: Glue refuses it if the table changed since GetTable.
        """
        table = self.client.lance_table(id)
        database, name = self.client.table_ref(id)
        table_input = self.client.as_input(table, "TableInput")
        table_input["Parameters"] = lance_table_properties(parameters(parameters_of(table)))
        if location is not None:
            table_input["StorageDescriptor"] = {**table_input.get("StorageDescriptor", {}),
                                                "Location": location}
        version = {"VersionId": table["VersionId"]} if table.get("VersionId") else {}
        self.client.call("UpdateTable", self.client.subject(id), missing=TableNotFoundError,
                         CatalogId=database.catalog_id, DatabaseName=database.name,
                         TableInput=table_input, **version)

    def _default_location(self, id: Identifier, database: DatabaseRef) -> str:
        """`{LocationUri}/{table}.lance` of the database, else `{root}/{namespace...}/{table}.lance`."""
        found = self.client.call("GetDatabase", self.client.subject(id[:-1]), missing=NamespaceNotFoundError,
                                 CatalogId=database.catalog_id, Name=database.name)
        database_location = found["Database"].get("LocationUri")
        if database_location:
            return join_location(normalize_location(database_location), f"{id[-1]}.lance")
        if self.config.root:
            return join_location(normalize_location(self.config.root),
                                 "/".join([*id[:-1], f"{id[-1]}.lance"]))
        raise InvalidInputError(f"glue: {self.client.subject(id)} has no location, its database has no "
                                "LocationUri and no `root` is configured")

def _under_database(subject: str) -> str:
    return f"parent of {subject} not found: a database of the root catalog holds no namespaces"

