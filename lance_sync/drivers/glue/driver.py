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

Answers are checked where they enter the driver (`_check_answer`, a botocore `before-parse`
hook): a 2xx body that is cut short, not JSON, or not of its operation's output shape in
botocore's model (types everywhere; the members of `REQUIRED_ANSWER_MEMBERS` present) never
reaches botocore's parser, which would read it as an empty answer. It is a `BadAnswerError`;
reads send it again (`BAD_ANSWER_RETRIES`), writes do not.

Secrets: the credentials botocore resolved (configured, from the environment or a profile),
those of an assumed role, and the session token header of each request sent are registered
for masking (`lance_sync.model.secrets`), and an error answer's body is masked before botocore
parses it, so a server that echoes the request cannot put them into a message.

Apply leases (`GlueLeaseRegister`) are a table in the lease database whose every change is an
UpdateTable conditional on the VersionId that was read.

Errors are translated at the boundary (`_translate`): AccessDenied is PermissionDenied (15),
bad or expired credentials Unauthenticated (16), throttling after botocore's retries
Throttling (21), 5xx and connection failures ServiceUnavailable (17). Messages start with
`glue: <Operation> on <namespace or table>`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload
from xml.etree import ElementTree

import boto3
import botocore.session
from botocore import xform_name
from botocore.config import Config
from botocore.credentials import (
    CredentialProvider,
    CredentialResolver,
    DeferredRefreshableCredentials,
    RefreshableCredentials,
)
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    CredentialRetrievalError,
    HTTPClientError,
    IncompleteReadError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    PartialCredentialsError,
)
from botocore.model import OperationModel, Shape
from botocore.parsers import ResponseParserError
from botocore.utils import parse_timestamp
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
    ConcurrentModificationError,
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    PermissionDeniedError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableNotFoundError,
    ThrottlingError,
    UnauthenticatedError,
    UnsupportedOperationError,
)

from lance_sync.drivers.base import (
    Capabilities,
    Identifier,
    NamespaceInfo,
    SyncNamespace,
    TableInfo,
    patched_properties,
    secret_value,
)
from lance_sync.drivers.glue.config import ACCOUNT_ID, CATALOG_ID_SEPARATORS, GlueConfig, GlueRules
from lance_sync.drivers.leases import (
    PREVIOUS_FORMAT,
    LeaseRecord,
    LeaseRegister,
    StoredLease,
    TableLeaseRegister,
    not_a_lease,
)
from lance_sync.drivers.support.answers import describe_body, html_summary, one_line
from lance_sync.drivers.support.paging import follow_pages, page_of_names
from lance_sync.drivers.support.retry import BadAnswerError, with_retries
from lance_sync.model import secrets
from lance_sync.model.errors import ConfigError
from lance_sync.model.locations import join_location, normalize_location
from lance_sync.model.marks import (
    LANCE_TABLE_TYPE,
    TABLE_TYPE_KEY,
    is_lance_table,
    lance_table_properties,
)

EXTERNAL_TABLE = "EXTERNAL_TABLE"
DEFAULT_ROLE_SESSION_NAME = "lance-sync"
#: Glue's page caps: GetDatabases / GetTables 100, GetCatalogs 1000
OBJECT_PAGE_SIZE = 100
CATALOG_PAGE_SIZE = 1000
MAX_POOL_CONNECTIONS = 32
#: the Glue table that holds an apply lease, in the lease database
LEASE_TABLE = "lease"

#: Members an answer must carry to mean anything (`[]`: in every item of the list). botocore's
#: model requires only DatabaseList, CatalogList and each object's Name; it leaves the rest
#: optional, but GetTables without TableList is garbage, not "no tables". Any other member,
#: here and in every other answer, must have its model type when present (and be present
#: where the model requires it).
REQUIRED_ANSWER_MEMBERS: dict[str, frozenset[str]] = {
    "GetCatalogs": frozenset({"CatalogList", "CatalogList[].Name", "CatalogList[].CatalogId"}),
    "GetCatalog": frozenset({"Catalog", "Catalog.Name"}),
    "GetDatabases": frozenset({"DatabaseList", "DatabaseList[].Name"}),
    "GetDatabase": frozenset({"Database", "Database.Name"}),
    "GetTables": frozenset({"TableList", "TableList[].Name"}),
    "GetTable": frozenset({"Table", "Table.Name"}),
}
#: Calls this driver sends again when the answer is garbled, BAD_ANSWER_RETRIES times. Writes
#: are sent once (botocore retries 5xx and lost connections itself): a garbled answer to a
#: write may follow a write that landed.
READ_OPERATIONS = frozenset({"GetCatalogs", "GetCatalog", "GetDatabases", "GetDatabase",
                             "GetTables", "GetTable"})
BAD_ANSWER_RETRIES = 2
#: members of STS AssumeRole's Credentials the role session is built from
ASSUMED_ROLE_CREDENTIALS = ("AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration")

_UNAUTHENTICATED_CODES = frozenset({
    "UnrecognizedClientException", "InvalidSignatureException", "IncompleteSignature",
    "SignatureDoesNotMatch", "InvalidClientTokenId", "ExpiredToken", "ExpiredTokenException",
    "MissingAuthenticationToken", "MissingAuthenticationTokenException", "AuthFailure",
})
_THROTTLED_CODES = frozenset({
    "ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded",
})
_UNAVAILABLE_CODES = frozenset({
    "InternalServiceException", "InternalFailure", "ServiceUnavailableException",
    "ServiceUnavailable", "OperationTimeoutException", "FederationSourceRetryableException",
})
_ERROR_BY_CODE: dict[str, type[LanceNamespaceError]] = {
    "AccessDeniedException": PermissionDeniedError,
    "AccessDenied": PermissionDeniedError,
    "InvalidInputException": InvalidInputError,
    "ValidationException": InvalidInputError,
    "ValidationError": InvalidInputError,
    "ConcurrentModificationException": ConcurrentModificationError,
    **dict.fromkeys(_UNAUTHENTICATED_CODES, UnauthenticatedError),
    **dict.fromkeys(_THROTTLED_CODES, ThrottlingError),
    **dict.fromkeys(_UNAVAILABLE_CODES, ServiceUnavailableError),
}


@dataclass(frozen=True)
class _DatabaseRef:
    catalog_id: str
    name: str


@dataclass(frozen=True)
class _Namespace:
    """A namespace found in Glue: a database (`database` set) or a catalog."""

    catalog_id: str
    database: str | None
    #: the Glue Database or Catalog object
    described: dict[str, Any]

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.described.get("Parameters") or {})


class GlueNamespace(GlueRules, SyncNamespace):
    config: GlueConfig
    bulk_namespace_reads = True

    def __init__(self, config: GlueConfig | None = None, /, **properties: Any) -> None:
        super().__init__(config, **properties)
        config = self.config
        client_config = Config(retries={"mode": "standard"}, max_pool_connections=MAX_POOL_CONNECTIONS,
                               user_agent_extra="lance-sync")
        try:
            self._session = _session(config)
            self._glue = self._session.client("glue", endpoint_url=config.endpoint, config=client_config)
        except NoRegionError:
            raise ConfigError("glue: no region: set `region` or AWS_REGION") from None
        _register_resolved_credentials(self._session)
        self._glue.meta.events.register("before-send.glue", lambda **_: self.count_call())
        self._glue.meta.events.register("before-send.glue", _register_session_token)
        self._glue.meta.events.register("before-parse.glue", _check_answer)
        #: waits between sends of a read whose answer was garbled (tests replace it)
        self._sleep: Callable[[float], None] = time.sleep
        self._service_model = self._glue.meta.service_model
        self._root_id = config.catalog_id
        self._root_lock = threading.Lock()
        #: CatalogIds seen to exist, so creating databases in one checks the catalog once
        self._known_catalogs: set[str] = set()

    def namespace_id(self) -> str:
        config: GlueConfig = self.config
        return (f"lance-sync glue {{ region: {self._glue.meta.region_name!r}, "
                f"endpoint: {config.endpoint!r}, catalog_id: {config.catalog_id!r} }}")

    def capabilities(self) -> Capabilities:
        # CreateCatalog only creates children of the caller's default catalog
        root = self.config.catalog_id
        catalogs_creatable = root is None or ACCOUNT_ID.fullmatch(root) is not None
        return Capabilities(update_table_location=True,
                            creatable_namespace_levels=(1 if catalogs_creatable else 2, None))

    def lease_register(self, parent: Identifier, name: str, owner: str) -> LeaseRegister:
        return GlueLeaseRegister(self, (*parent, name))

    # --- namespaces ----------------------------------------------------------------------------

    def _create_namespace_object(self, id: Identifier, properties: dict[str, str]) -> dict[str, str]:
        id = _identifier(id)
        database, catalog_id = self._namespace_refs(id)
        if database is not None:
            self._create_database(id, database, properties)
        elif catalog_id is not None:
            self._create_catalog(id, properties)
        else:
            raise NamespaceNotFoundError(_under_database(self._subject(id)))
        return properties

    def _replace_namespace_properties(self, id: Identifier, properties: dict[str, str]) -> None:
        self._write_namespace_properties(id, self._resolve_namespace(id), properties)

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        names = [info.id[-1] for info in self._child_namespaces(_identifier(request.id, root_ok=True))]
        page, token = page_of_names(names, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        found = self._resolve_namespace(_identifier(request.id, root_ok=True))
        return DescribeNamespaceResponse(properties=found.properties)

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        self._resolve_namespace(_identifier(request.id, root_ok=True))
        return NamespaceExistsResponse()

    def _drop_namespace_object(self, id: Identifier, cascade: bool) -> dict[str, str]:
        id = _identifier(id)
        if self._namespace_refs(id) == (None, self._root_catalog_id()):
            raise InvalidInputError(f"{self._subject(id)} is the root catalog; it cannot be dropped")
        found = self._resolve_namespace(id)
        subject = self._subject(id)
        if found.database is not None:
            self._check_empty(subject, "GetTables", "TableList", "tables",
                              CatalogId=found.catalog_id, DatabaseName=found.database)
            self._call("DeleteDatabase", subject, missing=NamespaceNotFoundError,
                       CatalogId=found.catalog_id, Name=found.database)
        else:
            self._check_empty(subject, "GetDatabases", "DatabaseList", "databases",
                              CatalogId=found.catalog_id)
            self._check_empty(subject, "GetCatalogs", "CatalogList", "child catalogs",
                              ParentCatalogId=found.catalog_id)
            self._call("DeleteCatalog", subject, missing=NamespaceNotFoundError,
                       CatalogId=found.catalog_id)
            self._known_catalogs.discard(found.catalog_id)
        return found.properties

    # --- tables --------------------------------------------------------------------------------

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        id = _identifier(request.id)
        database, name = self._table_ref(id)
        if request.location:
            location = normalize_location(request.location)
        else:
            location = self._default_location(id, database)
        parameters = lance_table_properties(request.properties)
        self._call("CreateTable", self._subject(id), missing=NamespaceNotFoundError,
                   duplicate=TableAlreadyExistsError, CatalogId=database.catalog_id,
                   DatabaseName=database.name, TableInput=_table_input(name, location, parameters))
        return DeclareTableResponse(location=location, properties=parameters,
                                    storage_options=self.storage_options() or None)

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        names = [info.id[-1] for info in self.list_table_infos(_identifier(request.id, root_ok=True))]
        page, token = page_of_names(names, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        if request.load_detailed_metadata:
            raise UnsupportedOperationError("glue: only load_detailed_metadata=false is supported")
        table = self._lance_table(_identifier(request.id))
        return DescribeTableResponse(location=_location(table), properties=_parameters(table),
                                     storage_options=self.storage_options() or None)

    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        self._lance_table(_identifier(request.id))
        return TableExistsResponse()

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        id = _identifier(request.id)
        table = self._lance_table(id)
        database, name = self._table_ref(id)
        self._call("DeleteTable", self._subject(id), missing=TableNotFoundError,
                   CatalogId=database.catalog_id, DatabaseName=database.name, Name=name)
        return DeregisterTableResponse(id=list(id), location=_location(table),
                                       properties=_parameters(table))

    # --- reconciler extensions -----------------------------------------------------------------

    def update_namespace_properties(self, id: Identifier, updates: dict[str, str],
                                    removals: list[str]) -> None:
        found = self._resolve_namespace(id)
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
        self._update_table(_identifier(id), lambda _: parameters, location)
        return DeclareTableResponse(location=location, properties=parameters,
                                    storage_options=self.storage_options() or None)

    def update_table_location(self, id: Identifier, location: str) -> None:
        """Point a registered Lance table at another location, in place (UpdateTable)."""
        self._update_table(id, dict, normalize_location(location))

    def list_namespace_infos(self, parent: Identifier) -> Iterator[NamespaceInfo]:
        return iter(self._child_namespaces(parent))

    def list_table_infos(self, namespace: Identifier) -> Iterator[TableInfo]:
        """Lance tables of a database from GetTables pages of 100; no call per table."""
        database, nested_catalog = self._namespace_refs(namespace)
        if database is None:
            # a catalog (or nothing): tables live only in databases
            self._resolve_namespace(namespace)
            return
        listed = False
        try:
            for table in self._items("GetTables", "TableList", self._subject(namespace),
                                     CatalogId=database.catalog_id, DatabaseName=database.name,
                                     MaxResults=OBJECT_PAGE_SIZE):
                listed = True
                if _is_lance(table):
                    yield TableInfo((*namespace, table["Name"]), _location(table), _parameters(table))
        except NamespaceNotFoundError:
            if listed or nested_catalog is None or self._get_catalog(namespace, nested_catalog) is None:
                raise

    def get_namespace_info(self, id: Identifier) -> NamespaceInfo | None:
        try:
            return NamespaceInfo(id, self._resolve_namespace(id).properties)
        except NamespaceNotFoundError:
            return None

    def get_namespace_infos(self, ids: list[Identifier]) -> list[NamespaceInfo | None]:
        """Databases from GetDatabases pages of their catalog (100 a page) while that takes fewer
        calls than one GetDatabase each; the others (and catalogs) one by one."""
        found: dict[Identifier, NamespaceInfo] = {}
        by_catalog: dict[str, dict[str, Identifier]] = {}
        for id in map(_identifier, ids):
            database = self._namespace_refs(id)[0]
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
            answer = self._call("GetDatabases", catalog_id, missing=NamespaceNotFoundError, CatalogId=catalog_id,
                                MaxResults=OBJECT_PAGE_SIZE, **paging)
            pages += 1
            for database in answer["DatabaseList"]:
                id = wanted.pop(database["Name"], None)
                if id is not None:
                    found[id] = NamespaceInfo(id, _parameters(database))
            token = answer.get("NextToken")
            if not token:
                break
        return found

    def get_table_info(self, id: Identifier) -> TableInfo | None:
        table = self._get_table(id)
        if table is None:
            return None
        return TableInfo(id, _location(table), _parameters(table), is_lance=_is_lance(table))

    # --- identifiers ---------------------------------------------------------------------------

    def _root_catalog_id(self) -> str:
        """`catalog_id`, or the caller's account id (one STS call per driver)."""
        with self._root_lock:
            if self._root_id is None:
                sts = _sts_client(self._session, self._glue.meta.region_name)
                self._root_id = _with_bad_answer_retries(lambda: _caller_account(sts), self._sleep)
            return self._root_id

    def _catalog_id(self, chain: Identifier) -> str:
        """The CatalogId of a catalog chain below the root (the root itself for `(root,)`)."""
        root = self._root_catalog_id()
        if chain == (root,):
            return root
        catalog_id = root
        for name in chain:
            if any(sep in name for sep in CATALOG_ID_SEPARATORS):
                raise InvalidInputError(f"glue: catalog name {name!r} cannot contain '/' or ':'")
            catalog_id = f"{catalog_id}:{name}" if ACCOUNT_ID.fullmatch(catalog_id) else f"{catalog_id}/{name}"
        return catalog_id

    def _namespace_refs(self, id: Identifier) -> tuple[_DatabaseRef | None, str | None]:
        """What a namespace id can name: (database, CatalogId of a catalog); None where it cannot."""
        root = self._root_catalog_id()
        if len(id) <= 1:
            return None, self._catalog_id(id or (root,))
        if id[0] == root:
            return (_DatabaseRef(root, id[1]), None) if len(id) == 2 else (None, None)
        parent = self._catalog_id(id[:-1])
        nested = None if any(sep in id[-1] for sep in CATALOG_ID_SEPARATORS) else self._catalog_id(id)
        return _DatabaseRef(parent, id[-1]), nested

    def _table_ref(self, id: Identifier) -> tuple[_DatabaseRef, str]:
        database = self._namespace_refs(id[:-1])[0] if len(id) >= 3 else None
        if database is None:
            raise InvalidInputError(f"glue: {self._subject(id)} is not a table id: tables are "
                                    "<catalog chain>$<database>$<table>")
        return database, id[-1]

    def _subject(self, id: Identifier) -> str:
        return self.format_identifier(id) if id else "the root namespace"

    # --- namespace helpers ---------------------------------------------------------------------

    def _resolve_namespace(self, id: Identifier) -> _Namespace:
        """The database (asked first) or catalog an id names; NamespaceNotFound otherwise."""
        database, catalog_id = self._namespace_refs(id)
        subject = self._subject(id)
        if database is not None:
            found = self._call("GetDatabase", subject, missing=None,
                               CatalogId=database.catalog_id, Name=database.name)
            if found is not None:
                return _Namespace(database.catalog_id, database.name, found["Database"])
        if catalog_id is not None:
            catalog = self._get_catalog(id, catalog_id)
            if catalog is not None:
                return _Namespace(catalog_id, None, catalog)
        raise NamespaceNotFoundError(f"namespace {subject} not found")

    def _get_catalog(self, id: Identifier, catalog_id: str) -> dict[str, Any] | None:
        found = self._call("GetCatalog", self._subject(id), missing=None, CatalogId=catalog_id)
        if found is None:
            return None
        self._known_catalogs.add(catalog_id)
        return found["Catalog"]

    def _create_catalog(self, id: Identifier, properties: dict[str, str]) -> None:
        subject = self._subject(id)
        if id[0] == self._root_catalog_id():
            raise NamespaceAlreadyExistsError(f"{subject} is the root catalog")
        if self.capabilities().creatable_namespace_levels[0] > 1:
            raise UnsupportedOperationError(
                f"glue: cannot create catalog {subject}: CreateCatalog only creates catalogs under "
                "an account's default catalog, and the root catalog is not one")
        self._call("CreateCatalog", subject, missing=NamespaceNotFoundError,
                   duplicate=NamespaceAlreadyExistsError, Name=id[0],
                   CatalogInput={"Parameters": properties})

    def _create_database(self, id: Identifier, database: _DatabaseRef,
                         properties: dict[str, str]) -> None:
        subject = self._subject(id)
        parent = database.catalog_id
        unchecked = parent != self._root_catalog_id() and parent not in self._known_catalogs
        if unchecked and self._get_catalog(id[:-1], parent) is None:
            raise NamespaceNotFoundError(f"parent catalog of {subject} not found")
        self._call("CreateDatabase", subject, missing=NamespaceNotFoundError,
                   duplicate=NamespaceAlreadyExistsError, CatalogId=parent,
                   DatabaseInput={"Name": database.name, "Parameters": properties})

    def _write_namespace_properties(self, id: Identifier, found: _Namespace,
                                    properties: dict[str, str]) -> None:
        """Replace the Parameters of a database or catalog, keeping its other fields."""
        subject = self._subject(id)
        if found.database is not None:
            database_input = self._as_input(found.described, "DatabaseInput")
            self._call("UpdateDatabase", subject, missing=NamespaceNotFoundError,
                       CatalogId=found.catalog_id, Name=found.database,
                       DatabaseInput={**database_input, "Parameters": properties})
        else:
            catalog_input = self._as_input(found.described, "CatalogInput")
            self._call("UpdateCatalog", subject, missing=NamespaceNotFoundError,
                       CatalogId=found.catalog_id,
                       CatalogInput={**catalog_input, "Parameters": properties})

    def _child_namespaces(self, parent: Identifier) -> list[NamespaceInfo]:
        """Child catalogs and databases of `parent`, each with its Parameters."""
        if not parent:
            return self._root_children()
        subject = self._subject(parent)
        if len(parent) == 1:
            catalog_id = self._catalog_id(parent)
        else:
            found = self._resolve_namespace(parent)
            if found.database is not None:
                return []  # databases hold tables, not namespaces
            catalog_id = found.catalog_id
        children = [NamespaceInfo((*parent, database["Name"]), _parameters(database))
                    for database in self._items("GetDatabases", "DatabaseList", subject,
                                                CatalogId=catalog_id, MaxResults=OBJECT_PAGE_SIZE)]
        if catalog_id != self._root_catalog_id():  # the root's child catalogs are level-1 names
            children += [NamespaceInfo((*parent, catalog["Name"]), _parameters(catalog))
                         for catalog in self._child_catalogs(subject, catalog_id)]
        return children

    def _root_children(self) -> list[NamespaceInfo]:
        """Level 1: the root catalog (named by its id) and its child catalogs."""
        root = self._root_catalog_id()
        subject = self._subject(())
        if ACCOUNT_ID.fullmatch(root):
            return [NamespaceInfo((root if c["CatalogId"] == root else c["Name"],), _parameters(c))
                    for c in self._child_catalogs(subject, root, IncludeRoot=True)]
        # IncludeRoot is only accepted for an account's default catalog
        own = self._call("GetCatalog", subject, missing=NamespaceNotFoundError, CatalogId=root)
        return [NamespaceInfo((root,), _parameters(own["Catalog"])),
                *(NamespaceInfo((c["Name"],), _parameters(c)) for c in self._child_catalogs(subject, root))]

    def _child_catalogs(self, subject: str, catalog_id: str, **options: Any) -> Iterator[dict]:
        return self._items("GetCatalogs", "CatalogList", subject, ParentCatalogId=catalog_id,
                           Recursive=False, MaxResults=CATALOG_PAGE_SIZE, **options)

    def _check_empty(self, subject: str, operation: str, list_key: str, what: str,
                     **params: Any) -> None:
        response = self._call(operation, subject, missing=NamespaceNotFoundError, MaxResults=1,
                              **params)
        if response[list_key]:
            raise NamespaceNotEmptyError(f"namespace {subject} is not empty: it has {what}")

    # --- table helpers -------------------------------------------------------------------------

    def _get_table(self, id: Identifier) -> dict[str, Any] | None:
        database, name = self._table_ref(id)
        found = self._call("GetTable", self._subject(id), missing=None,
                           CatalogId=database.catalog_id, DatabaseName=database.name, Name=name)
        return found["Table"] if found is not None else None

    def _lance_table(self, id: Identifier) -> dict[str, Any]:
        table = self._get_table(id)
        if table is None:
            raise TableNotFoundError(f"table {self._subject(id)} not found")
        if not _is_lance(table):
            raise InvalidInputError(f"table {self._subject(id)} is not a Lance table "
                                    f"(TableType {table.get('TableType')!r}, "
                                    f"{TABLE_TYPE_KEY} {_parameters(table).get(TABLE_TYPE_KEY)!r})")
        return table

    def _update_table(self, id: Identifier, parameters: Callable[[dict[str, str]], dict[str, str]],
                      location: str | None = None) -> None:
        """UpdateTable of a Lance table with new Parameters (and Location), the rest kept.

        VersionId makes it conditional: Glue refuses it if the table changed since GetTable.
        """
        table = self._lance_table(id)
        database, name = self._table_ref(id)
        table_input = self._as_input(table, "TableInput")
        table_input["Parameters"] = lance_table_properties(parameters(_parameters(table)))
        if location is not None:
            table_input["StorageDescriptor"] = {**table_input.get("StorageDescriptor", {}),
                                                "Location": location}
        version = {"VersionId": table["VersionId"]} if table.get("VersionId") else {}
        self._call("UpdateTable", self._subject(id), missing=TableNotFoundError,
                   CatalogId=database.catalog_id, DatabaseName=database.name,
                   TableInput=table_input, **version)

    def _default_location(self, id: Identifier, database: _DatabaseRef) -> str:
        """`{LocationUri}/{table}.lance` of the database, else `{root}/{namespace...}/{table}.lance`."""
        found = self._call("GetDatabase", self._subject(id[:-1]), missing=NamespaceNotFoundError,
                           CatalogId=database.catalog_id, Name=database.name)
        database_location = found["Database"].get("LocationUri")
        if database_location:
            return join_location(normalize_location(database_location), f"{id[-1]}.lance")
        if self.config.root:
            return join_location(normalize_location(self.config.root),
                                 "/".join([*id[:-1], f"{id[-1]}.lance"]))
        raise InvalidInputError(f"glue: {self._subject(id)} has no location, its database has no "
                                "LocationUri and no `root` is configured")

    # --- requests ------------------------------------------------------------------------------

    @overload
    def _call(self, operation: str, subject: str, *, missing: type[LanceNamespaceError],
              duplicate: type[LanceNamespaceError] | None = None, **params: Any) -> dict[str, Any]: ...

    @overload
    def _call(self, operation: str, subject: str, *, missing: None,
              duplicate: type[LanceNamespaceError] | None = None, **params: Any) -> dict[str, Any] | None: ...

    def _call(self, operation: str, subject: str, *, missing: type[LanceNamespaceError] | None,
              duplicate: type[LanceNamespaceError] | None = None, **params: Any) -> dict[str, Any] | None:
        """One Glue request, errors translated. EntityNotFound raises `missing` (None: returns None).

        A read whose answer does not fit (`_check_answer`) is sent again, BAD_ANSWER_RETRIES
        times, then raised as a BadAnswerError; a write is sent once. botocore's own retries
        (5xx, throttling, lost connections) happen inside each send.
        """
        def send() -> dict[str, Any] | None:
            return self._send(operation, subject, missing, duplicate, params)

        if operation not in READ_OPERATIONS:
            return send()
        return _with_bad_answer_retries(send, self._sleep)

    def _send(self, operation: str, subject: str, missing: type[LanceNamespaceError] | None,
              duplicate: type[LanceNamespaceError] | None, params: dict[str, Any]) -> dict[str, Any] | None:
        try:
            return getattr(self._glue, xform_name(operation))(**params)
        except _UnfitAnswer as unfit:
            raise BadAnswerError(f"glue: {operation} on {subject} answered {unfit}") from None
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code")
            if code == "EntityNotFoundException" and missing is None:
                return None
            raise _translate(error, subject, operation, missing, duplicate) from error
        except (BotoCoreError, ResponseParserError) as error:
            raise _translate(error, subject, operation) from error

    def _items(self, operation: str, list_key: str, subject: str, **params: Any) -> Iterator[dict]:
        """Every item of a NextToken listing, page after page."""
        def fetch(token: str | None) -> tuple[list[dict], str | None]:
            paging: dict[str, Any] = {"NextToken": token} if token else {}
            response = self._call(operation, subject, missing=NamespaceNotFoundError, **params, **paging)
            return response[list_key], response.get("NextToken")

        return follow_pages(fetch)

    def _as_input(self, described: dict[str, Any], input_shape: str) -> dict[str, Any]:
        """A Get answer reduced to what the matching *Input shape accepts (for Update calls)."""
        return _project(described, self._service_model.shape_for(input_shape))


class GlueLeaseRegister(TableLeaseRegister):
    """An apply lease as the table `lease` of the lease database, its Parameters the record.

    Every swap is one UpdateTable with the VersionId that was read: Glue refuses it with
    ConcurrentModificationException when the table changed since (optimistic locking, as
    Iceberg's GlueCatalog commits). SkipArchive keeps the table's archived versions, which Glue
    limits per table, from growing with every renewal. UpdateTable does not answer the new
    VersionId, so a swap is preceded by a GetTable unless the lease was just read. A released
    lease stays, marked released (DeleteTable is not conditional).

    A lease database whose Parameters hold a record is a lease of lance-sync before this
    register (no table): it is read as the lease, and replacing it creates the table.
    """

    driver: GlueNamespace

    def __init__(self, driver: GlueNamespace, database_id: Identifier):
        self.table_id = (*database_id, LEASE_TABLE)
        super().__init__(driver, database_id, f"{driver.namespace_id()} {list(self.table_id)}",
                         driver.format_identifier(self.table_id))

    def create(self, record: LeaseRecord) -> StoredLease | None:
        database = self._database()
        for _ in range(2):
            try:
                self.driver._call("CreateTable", self.label, missing=NamespaceNotFoundError,
                                  duplicate=TableAlreadyExistsError, CatalogId=database.catalog_id,
                                  DatabaseName=database.name,
                                  TableInput={"Name": LEASE_TABLE, "Parameters": record.to_properties()})
            except TableAlreadyExistsError:
                return None
            except NamespaceNotFoundError:  # the first lease of this owner here
                self.driver.create_namespace(CreateNamespaceRequest(id=list(self.namespace), mode="ExistOk"))
                continue
            return StoredLease(record, "")  # its VersionId is read before the first swap
        raise NamespaceNotFoundError(f"glue: the lease database of {self.label} was dropped each time "
                                     "its table was created")

    def read(self) -> StoredLease | None:
        database = self._database()
        found = self.driver._call("GetTable", self.label, missing=None, CatalogId=database.catalog_id,
                                  DatabaseName=database.name, Name=LEASE_TABLE)
        if found is None:
            return self.previous_format()
        table = found["Table"]
        record = LeaseRecord.from_properties(_parameters(table))
        if record is None:
            raise not_a_lease(self.label)
        if not table.get("VersionId"):
            raise BadAnswerError(f"glue: GetTable on {self.label} answered a table without VersionId, "
                                 "which the lease needs for its conditional updates")
        return StoredLease(record, table["VersionId"])

    def swap(self, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        if expected.version == PREVIOUS_FORMAT:
            return self.replace_previous_format(expected, record)
        version = expected.version or self._version_of(expected)
        if version is None:
            return None
        database = self._database()
        try:
            self.driver._call("UpdateTable", self.label, missing=TableNotFoundError,
                              CatalogId=database.catalog_id, DatabaseName=database.name,
                              TableInput={"Name": LEASE_TABLE, "Parameters": record.to_properties()},
                              VersionId=version, SkipArchive=True)
        except (ConcurrentModificationError, TableNotFoundError):
            return None
        return StoredLease(record, "")

    def _version_of(self, expected: StoredLease) -> str | None:
        """The VersionId of `expected`, read now; None when the lease is another record."""
        current = self.read()
        return current.version if current is not None and current.record == expected.record else None

    def _database(self) -> _DatabaseRef:
        database = self.driver._namespace_refs(self.namespace)[0]
        if database is None:
            raise InvalidInputError(f"glue: {self.label} cannot hold a lease: its parent is not a catalog")
        return database



# --- credentials ---------------------------------------------------------------------------------


class _AssumedRoleCredentials(DeferredRefreshableCredentials):
    """Role credentials fetched on first use and again before the session runs out.

    botocore refreshes when less than the advisory margin is left (and blocks callers once
    less than the mandatory margin is left): a quarter and a sixth of the session, capped at
    botocore's own 15 and 10 minutes.
    """

    def __init__(self, fetch: Callable[[], dict[str, str]], session_seconds: int):
        super().__init__(refresh_using=fetch, method="assume-role")
        self._advisory_refresh_timeout = min(15 * 60, session_seconds // 4)
        self._mandatory_refresh_timeout = min(10 * 60, session_seconds // 6)


class _FixedCredentialProvider(CredentialProvider):
    METHOD = "assume-role"

    def __init__(self, credentials: _AssumedRoleCredentials):
        super().__init__()
        self._credentials = credentials

    def load(self) -> _AssumedRoleCredentials:
        return self._credentials


def _sts_client(session: boto3.Session, region: str | None) -> Any:
    client = session.client("sts", region_name=region,
                            config=Config(retries={"mode": "standard"}, user_agent_extra="lance-sync"))
    client.meta.events.register("before-send.sts", _register_session_token)
    client.meta.events.register("before-parse.sts", _check_xml_answer)
    return client


def _register_resolved_credentials(session: boto3.Session) -> None:
    """Register the credentials botocore resolved when it made the client (configured, from
    the environment or a profile). Credentials it refreshes (an assumed role, instance or
    container credentials) are registered as they come: `_session`'s role fetch, and the
    session token each request carries (`_register_session_token`)."""
    credentials = session.get_credentials()
    if credentials is not None and not isinstance(credentials, RefreshableCredentials):
        secrets.register(credentials.access_key, credentials.secret_key, credentials.token)


def _register_session_token(request: Any, **_: Any) -> None:
    """botocore `before-send` hook: register the session token the signed request carries."""
    token = request.headers.get("X-Amz-Security-Token")
    secrets.register(token.decode() if isinstance(token, bytes) else token)


def _session(config: GlueConfig) -> boto3.Session:
    """Default chain, static keys (with session token), or an assumed role on top of either."""
    base = boto3.Session(aws_access_key_id=secret_value(config.access_key_id),
                         aws_secret_access_key=secret_value(config.secret_access_key),
                         aws_session_token=secret_value(config.session_token),
                         region_name=config.region)
    if config.assume_role_arn is None:
        return base
    sts = _sts_client(base, config.assume_role_region or config.region)
    request = {"RoleArn": config.assume_role_arn,
               "RoleSessionName": config.assume_role_session_name or DEFAULT_ROLE_SESSION_NAME,
               "DurationSeconds": config.assume_role_timeout_sec}
    if config.assume_role_external_id:
        request["ExternalId"] = config.assume_role_external_id

    def assume_role() -> dict[str, str]:
        subject = f"role {config.assume_role_arn}"
        try:
            credentials = sts.assume_role(**request).get("Credentials") or {}
        except _UnfitAnswer as unfit:
            raise BadAnswerError(f"glue: AssumeRole on {subject} answered {unfit}") from None
        except ResponseParserError as error:
            raise _translate(error, subject, "AssumeRole") from error
        if not all(credentials.get(key) for key in ASSUMED_ROLE_CREDENTIALS):
            raise BadAnswerError(f"glue: AssumeRole on {subject} answered without Credentials "
                                 f"({', '.join(ASSUMED_ROLE_CREDENTIALS)})")
        secrets.register(credentials["AccessKeyId"], credentials["SecretAccessKey"], credentials["SessionToken"])
        return {"access_key": credentials["AccessKeyId"], "secret_key": credentials["SecretAccessKey"],
                "token": credentials["SessionToken"],
                "expiry_time": credentials["Expiration"].isoformat()}

    role_session = botocore.session.Session()
    role_credentials = _AssumedRoleCredentials(assume_role, config.assume_role_timeout_sec)
    role_session.register_component("credential_provider",
                                    CredentialResolver([_FixedCredentialProvider(role_credentials)]))
    return boto3.Session(botocore_session=role_session, region_name=config.region)


# --- errors --------------------------------------------------------------------------------------


def _translate(error: ClientError | BotoCoreError | ResponseParserError, subject: str, operation: str,
               missing: type[LanceNamespaceError] | None = None,
               duplicate: type[LanceNamespaceError] | None = None) -> LanceNamespaceError:
    """The lance_namespace error for a failed Glue request (or the STS request behind it)."""
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        code = details.get("Code", "")
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        failed = error.operation_name or operation
        if code == "EntityNotFoundException" and missing is not None:
            cls = missing
        elif code == "AlreadyExistsException" and duplicate is not None:
            cls = duplicate
        else:
            cls = _ERROR_BY_CODE.get(code) or (ServiceUnavailableError if status >= 500 else InternalError)
        # credential errors can echo key ids and signing details: keep only the code
        detail = ("check the configured credentials" if cls is UnauthenticatedError
                  else one_line(details.get("Message", "")))
        return cls(f"glue: {failed} on {subject} answered {code or status}: {detail}")
    if isinstance(error, NoCredentialsError | PartialCredentialsError | CredentialRetrievalError):
        return UnauthenticatedError(f"glue: {operation} on {subject}: no usable AWS credentials")
    if isinstance(error, ParamValidationError):
        return InvalidInputError(f"glue: {operation} on {subject}: invalid request: {error}")
    if isinstance(error, ResponseParserError):  # STS answers XML, which botocore checks
        return BadAnswerError(f"glue: {operation} on {subject} answered a body that botocore "
                              f"cannot parse: {one_line(str(error), limit=200)}")
    # ConnectionClosedError, ReadTimeoutError, ResponseStreamingError, EndpointConnectionError...
    if isinstance(error, botocore.exceptions.ConnectionError | HTTPClientError | IncompleteReadError):
        return ServiceUnavailableError(f"glue: {operation} on {subject} failed: {error}")
    return InternalError(f"glue: {operation} on {subject} failed: {error}")


# --- answers -------------------------------------------------------------------------------------


class _UnfitAnswer(Exception):
    """A 2xx answer that does not fit its operation (`_check_answer`); `_send` turns it into a
    BadAnswerError naming the call. The message says what was wrong and shows the body."""


def _check_answer(operation_model: OperationModel, response_dict: dict[str, Any], **_: Any) -> None:
    """botocore `before-parse` hook: raise _UnfitAnswer for a 2xx answer that botocore would
    read wrongly, before botocore parses it. botocore does not enforce Content-Length, reads a
    non-JSON body as `{"message": body}` and then drops every member its model lacks, so a cut,
    HTML or foreign body comes out as an empty answer; and it fails with AttributeError or
    ValueError where a member has the wrong JSON type."""
    body: bytes = response_dict["body"] or b""
    status = response_dict["status_code"]
    if status >= 300:
        # an error answer: botocore raises ClientError and `_translate` reads its code, unless
        # it was cut short (the code is then lost: AlreadyExists would read as a bare 400)
        cut = _cut_short(body, response_dict["headers"])
        if cut is not None:
            raise _UnfitAnswer(f"{status} with {cut} (body: {_body_picture(body)})")
        response_dict["body"] = _masked(body)
        return
    problem = _answer_problem(body, response_dict["headers"], operation_model.output_shape,
                              REQUIRED_ANSWER_MEMBERS.get(operation_model.name, frozenset()))
    if problem is not None:
        raise _UnfitAnswer(f"{problem} (body: {_body_picture(body)})")


def _check_xml_answer(operation_model: OperationModel, response_dict: dict[str, Any],
                      **_: Any) -> None:
    """botocore `before-parse` hook for STS (AWS query protocol, XML): raise _UnfitAnswer for a
    2xx answer without its result element, on which botocore's parser fails with KeyError."""
    if response_dict["status_code"] >= 300:
        response_dict["body"] = _masked(response_dict["body"] or b"")
        return
    if operation_model.output_shape is None:
        return
    body: bytes = response_dict["body"] or b""
    wrapper = operation_model.output_shape.serialization.get("resultWrapper")
    try:
        children = {child.tag.rpartition("}")[2] for child in ElementTree.fromstring(body)}
    except ElementTree.ParseError:
        raise _UnfitAnswer(f"a body that is not XML (body: {_body_picture(body)})") from None
    if wrapper and wrapper not in children:
        raise _UnfitAnswer(f"without {wrapper} (body: {_body_picture(body)})")


def _cut_short(body: bytes, headers: Any) -> str | None:
    """'a body cut short (n of m bytes)' when the body is shorter than its Content-Length."""
    announced = headers.get("content-length")
    if announced and announced.isdigit() and int(announced) > len(body):
        return f"a body cut short ({len(body)} of {announced} bytes)"
    return None


def _answer_problem(body: bytes, headers: Any, shape: Shape | None,
                    required: frozenset[str]) -> str | None:
    """What is wrong with a 2xx body for an operation with output `shape`, or None."""
    cut = _cut_short(body, headers)
    if cut is not None:
        return cut
    try:
        answer = json.loads(body.decode("utf-8")) if body.strip() else {}
    except ValueError:  # UnicodeDecodeError is one
        return "a body that is not JSON"
    if not isinstance(answer, dict):
        return f"{_json_kind(answer)} in JSON, not an object"
    return _shape_problem(answer, shape, "", "", required) if shape is not None else None


def _shape_problem(value: Any, shape: Shape, where: str, pattern: str,
                   required: frozenset[str]) -> str | None:
    """The first place where decoded JSON `value` departs from `shape`, or None.

    `where` names the place ("TableList[3].Name"), `pattern` the same place with `[]` for any
    list item and `{}` for any map value ("TableList[].Name"), matched against `required`. A null member is an absent one
    (botocore skips it); a null list item or map value is a problem.
    """
    kind = shape.type_name
    if kind == "structure" and not shape.is_document_type:
        if not isinstance(value, dict):
            return _wrong(where, value, "an object")
        for name in _required_names(shape, pattern, required):
            if value.get(name) is None:
                return f"without {_member_path(where, name)}"
        members = shape.members  # Glue's JSON names are its member names (no locationName)
        for name, item in value.items():
            member = members.get(name)
            if member is None or item is None:
                continue  # a member the model lacks (botocore drops it), or an absent one
            problem = _shape_problem(item, member, _member_path(where, name),
                                     _member_path(pattern, name), required)
            if problem is not None:
                return problem
        return None
    if kind == "list":
        if not isinstance(value, list):
            return _wrong(where, value, "a list")
        items = ((f"{where}[{index}]", item) for index, item in enumerate(value))
        return _items_problem(items, shape.member, f"{pattern}[]", required)
    if kind == "map":
        if not isinstance(value, dict):
            return _wrong(where, value, "an object")
        items = ((f"{where}[{key!r}]", item) for key, item in value.items())
        return _items_problem(items, shape.value, f"{pattern}{{}}", required)
    return None if _fits_scalar(kind, value) else _wrong(where, value, _SCALAR_KINDS.get(kind, kind))


@functools.lru_cache(maxsize=256)
def _required_names(shape: Shape, pattern: str, required: frozenset[str]) -> tuple[str, ...]:
    """Members of the structure at `pattern` that must be present: the model's and ours."""
    ours = (path.rpartition(".")[2] for path in required if path.rpartition(".")[0] == pattern)
    return tuple(dict.fromkeys([*shape.required_members, *ours]))


def _items_problem(items: Iterator[tuple[str, Any]], shape: Shape, pattern: str,
                   required: frozenset[str]) -> str | None:
    for where, item in items:
        if item is None:
            return f"with {where} null"
        problem = _shape_problem(item, shape, where, pattern, required)
        if problem is not None:
            return problem
    return None


_SCALAR_KINDS = {"string": "a string", "blob": "a string", "integer": "an integer",
                 "long": "an integer", "float": "a number", "double": "a number",
                 "boolean": "a boolean", "timestamp": "a timestamp"}
_SPECIAL_FLOATS = frozenset({"NaN", "Infinity", "-Infinity"})


def _fits_scalar(kind: str, value: Any) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind in ("string", "blob"):
        return isinstance(value, str)
    if kind in ("integer", "long"):
        return isinstance(value, int) and not isinstance(value, bool)
    if kind in ("float", "double"):
        return number or (isinstance(value, str) and value in _SPECIAL_FLOATS)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "timestamp":
        return number or (isinstance(value, str) and _parses_as_timestamp(value))
    return True  # a kind botocore passes through as it is


def _parses_as_timestamp(text: str) -> bool:
    try:
        parse_timestamp(text)
    except (ValueError, TypeError, OverflowError):
        return False
    return True


def _member_path(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _wrong(where: str, value: Any, expected: str) -> str:
    return f"with {where} {_json_kind(value)}, not {expected}"


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "a number" if isinstance(value, int | float) else "null"


def _body_picture(body: bytes) -> str:
    """A garbled body in one short line: an HTML page by its title, anything else cut short."""
    text = secrets.mask(body.decode("utf-8", errors="replace"))
    return html_summary(text) or describe_body(text or None)


def _masked(body: bytes) -> bytes:
    """An answer's body with any secret it echoes masked (bytes that are not UTF-8 kept)."""
    return secrets.mask(body.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


def _with_bad_answer_retries(send: Callable[[], Any], sleep: Callable[[float], None]) -> Any:
    """`send()` again while its answer is garbled, BAD_ANSWER_RETRIES times at most; the last
    BadAnswerError says how many attempts were made."""
    attempts = 0

    def attempt() -> Any:
        nonlocal attempts
        attempts += 1
        return send()

    try:
        return with_retries(attempt, BAD_ANSWER_RETRIES,
                            retryable=lambda error: isinstance(error, BadAnswerError), sleep=sleep)
    except BadAnswerError as error:
        if attempts == 1:
            raise
        raise BadAnswerError(f"{error} after {attempts} attempts") from None


def _caller_account(sts: Any) -> str:
    """The caller's account id from STS GetCallerIdentity."""
    subject = "the caller's account (set catalog_id to skip STS)"
    try:
        account = sts.get_caller_identity().get("Account")
    except _UnfitAnswer as unfit:
        raise BadAnswerError(f"glue: GetCallerIdentity on {subject} answered {unfit}") from None
    except (ClientError, BotoCoreError, ResponseParserError) as error:
        raise _translate(error, subject, "GetCallerIdentity") from error
    if not isinstance(account, str) or not ACCOUNT_ID.fullmatch(account):
        raise BadAnswerError(f"glue: GetCallerIdentity on {subject} answered Account {account!r}, "
                             "not a 12-digit account id")
    return account


# --- small helpers -------------------------------------------------------------------------------


def _identifier(id: Sequence[str] | None, root_ok: bool = False) -> Identifier:
    parts = tuple(id or ())
    if not parts and not root_ok:
        raise InvalidInputError("glue: an empty identifier names the root catalog, not an object")
    if any(not isinstance(name, str) or not name for name in parts):
        raise InvalidInputError(f"glue: identifier names must be non-empty strings: {list(parts)}")
    return parts


def _under_database(subject: str) -> str:
    return f"parent of {subject} not found: a database of the root catalog holds no namespaces"


def _is_lance(table: dict[str, Any]) -> bool:
    return (str(table.get("TableType", "")).upper() == EXTERNAL_TABLE
            and is_lance_table(_parameters(table)))


def _parameters(described: dict[str, Any]) -> dict[str, str]:
    return dict(described.get("Parameters") or {})


def _location(table: dict[str, Any]) -> str | None:
    return (table.get("StorageDescriptor") or {}).get("Location")


def _table_input(name: str, location: str, parameters: dict[str, str]) -> dict[str, Any]:
    return {"Name": name, "TableType": EXTERNAL_TABLE, "Parameters": parameters,
            "StorageDescriptor": {"Location": location}}


def _project(value: Any, shape: Shape) -> Any:
    """`value` with every structure reduced to the members `shape` declares."""
    if shape.type_name == "structure":
        return {key: _project(item, shape.members[key])
                for key, item in value.items() if key in shape.members}
    if shape.type_name == "list":
        return [_project(item, shape.member) for item in value]
    if shape.type_name == "map":
        return {key: _project(item, shape.value) for key, item in value.items()}
    return value
