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

Errors are translated at the boundary (`_translate`): AccessDenied is PermissionDenied (15),
bad or expired credentials Unauthenticated (16), throttling after botocore's retries
Throttling (21), 5xx and connection failures ServiceUnavailable (17).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.session
from botocore import xform_name
from botocore.config import Config
from botocore.credentials import (
    CredentialProvider,
    CredentialResolver,
    DeferredRefreshableCredentials,
)
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    CredentialRetrievalError,
    HTTPClientError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    PartialCredentialsError,
)
from botocore.model import Shape
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
from pydantic import Field, SecretStr, model_validator

from lance_sync.drivers.base import (
    CREATE_MODES,
    DROP_BEHAVIORS,
    DROP_MODES,
    REGISTER_MODES,
    BackendConfig,
    Capabilities,
    Identifier,
    NamespaceInfo,
    SyncNamespace,
    TableInfo,
    patched_properties,
    request_mode,
    secret_value,
)
from lance_sync.drivers.config_types import HttpUrl, NonEmpty
from lance_sync.drivers.paging import follow_pages, page_of_names
from lance_sync.errors import ConfigError
from lance_sync.locations import join_location, normalize_location

TABLE_TYPE_KEY = "table_type"
LANCE_TABLE_TYPE = "lance"
EXTERNAL_TABLE = "EXTERNAL_TABLE"
DEFAULT_ROLE_SESSION_NAME = "lance-sync"
#: STS AssumeRole DurationSeconds range
MIN_ROLE_SESSION_SEC, MAX_ROLE_SESSION_SEC = 900, 43200
#: Glue's page caps: GetDatabases / GetTables 100, GetCatalogs 1000
OBJECT_PAGE_SIZE = 100
CATALOG_PAGE_SIZE = 1000
MAX_POOL_CONNECTIONS = 32
ACCOUNT_ID = re.compile(r"\d{12}")
ROLE_ARN = re.compile(r"arn:[\w-]+:iam::\d{12}:role/.+")
#: characters a catalog name cannot hold here: Glue forbids '/', and both build CatalogIds
CATALOG_ID_SEPARATORS = ("/", ":")

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


class GlueConfig(BackendConfig):
    catalog_id: NonEmpty | None = Field(
        None, description="Starting catalog id (default: the caller's account id)")
    endpoint: HttpUrl | None = Field(
        None, description="Custom Glue endpoint for API-compatible metastores")
    region: str | None = Field(None, description="AWS region (default: from the environment)")
    access_key_id: SecretStr | None = Field(None, description="Static credentials; only from ${VAR}")
    secret_access_key: SecretStr | None = Field(None, description="Static credentials; only from ${VAR}")
    session_token: SecretStr | None = Field(None, description="Temporary credentials; only from ${VAR}")
    assume_role_arn: str | None = Field(None, description="IAM role to assume for Glue calls")
    assume_role_region: str | None = Field(None, description="Region of the STS client")
    assume_role_external_id: str | None = Field(None, description="External id for cross-account roles")
    assume_role_session_name: str | None = Field(None, description="Session name of the assumed role")
    assume_role_timeout_sec: int = Field(
        3600, ge=MIN_ROLE_SESSION_SEC, le=MAX_ROLE_SESSION_SEC,
        description="Assumed-role session duration, seconds; refreshed before it ends")
    root: str | None = Field(
        None, description="lance-sync extension: storage root for tables declared without a "
        "location in a database that has no LocationUri ({root}/{namespace...}/{table}.lance)")

    @model_validator(mode="after")
    def _consistent(self) -> GlueConfig:
        if (self.access_key_id is None) != (self.secret_access_key is None):
            raise ValueError("access_key_id and secret_access_key must be given together")
        if self.session_token is not None and self.access_key_id is None:
            raise ValueError("session_token needs access_key_id and secret_access_key")
        role_options = [name for name in ("assume_role_region", "assume_role_external_id",
                                          "assume_role_session_name")
                        if getattr(self, name) is not None]
        if role_options and self.assume_role_arn is None:
            raise ValueError(f"{', '.join(role_options)} need(s) assume_role_arn")
        if self.assume_role_arn is not None and not ROLE_ARN.fullmatch(self.assume_role_arn):
            raise ValueError("assume_role_arn must look like arn:aws:iam::123456789012:role/name")
        if self.endpoint is not None and self.catalog_id is None:
            raise ValueError("catalog_id is required with endpoint: the caller's account id is "
                             "resolved through AWS STS, which a custom endpoint need not serve")
        return self


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


class GlueNamespace(SyncNamespace):
    backend_type = "glue"
    config_model = GlueConfig
    #: a catalog, or a catalog chain ending in a database
    namespace_levels = (1, None)
    table_namespace_levels = (2, None)

    def __init__(self, **properties: Any) -> None:
        super().__init__(**properties)
        config: GlueConfig = self.config
        client_config = Config(retries={"mode": "standard"}, max_pool_connections=MAX_POOL_CONNECTIONS,
                               user_agent_extra="lance-sync")
        try:
            self._session = _session(config)
            self._glue = self._session.client("glue", endpoint_url=config.endpoint, config=client_config)
        except NoRegionError:
            raise ConfigError("glue: no region: set `region` or AWS_REGION") from None
        self._glue.meta.events.register("before-send.glue", lambda **_: self.count_call())
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

    @classmethod
    def check_namespace_id(cls, parts: Identifier, config: BackendConfig) -> str | None:
        assert isinstance(config, GlueConfig)
        if any(not name for name in parts):
            return "names cannot be empty"
        leads_with_root = bool(parts) and parts[0] == config.catalog_id
        if leads_with_root and len(parts) > 2:
            return (f"'{parts[0]}' is the root catalog: its databases are '{parts[0]}$<database>' "
                    "and its child catalogs are level-1 names")
        named = parts[1:] if leads_with_root else parts
        catalogs = named[:-1] if len(parts) > 1 else named
        if any(sep in name for name in catalogs for sep in CATALOG_ID_SEPARATORS):
            return "catalog names cannot contain '/' or ':'"
        if any(name != name.lower() for name in named):
            return "Glue stores names in lower case; write them in lower case"
        return None

    @classmethod
    def check_table_name(cls, name: str, config: BackendConfig) -> str | None:
        if name != name.lower():
            return "Glue stores names in lower case; write them in lower case"
        return None

    # --- namespaces ----------------------------------------------------------------------------

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        id = _identifier(request.id)
        mode = request_mode(request.mode, CREATE_MODES)
        properties = dict(request.properties or {})
        database, catalog_id = self._namespace_refs(id)
        try:
            if database is not None:
                self._create_database(id, database, properties)
            elif catalog_id is not None:
                self._create_catalog(id, properties)
            else:
                raise NamespaceNotFoundError(_under_database(self._subject(id)))
        except NamespaceAlreadyExistsError:
            if mode == "create":
                raise
            existing = self._resolve_namespace(id)
            if mode == "existok":
                return CreateNamespaceResponse(properties=existing.properties)
            self._write_namespace_properties(id, existing, properties)
        return CreateNamespaceResponse(properties=properties)

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        names = [info.id[-1] for info in self._child_namespaces(_identifier(request.id, root_ok=True))]
        page, token = page_of_names(names, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        found = self._resolve_namespace(_identifier(request.id, root_ok=True))
        return DescribeNamespaceResponse(properties=found.properties)

    def namespace_exists(self, request: NamespaceExistsRequest) -> None:
        self._resolve_namespace(_identifier(request.id, root_ok=True))

    def drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        id = _identifier(request.id)
        mode = request_mode(request.mode, DROP_MODES)
        if request_mode(request.behavior, DROP_BEHAVIORS, "behavior") == "cascade":
            raise UnsupportedOperationError("glue: only Restrict drops are supported; "
                                            "deregister the tables first")
        if self._namespace_refs(id) == (None, self._root_catalog_id()):
            raise InvalidInputError(f"{self._subject(id)} is the root catalog; it cannot be dropped")
        try:
            found = self._resolve_namespace(id)
        except NamespaceNotFoundError:
            if mode == "skip":
                return DropNamespaceResponse()
            raise
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
        return DropNamespaceResponse(properties=found.properties)

    # --- tables --------------------------------------------------------------------------------

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        id = _identifier(request.id)
        database, name = self._table_ref(id)
        if request.location:
            location = normalize_location(request.location)
        else:
            location = self._default_location(id, database)
        parameters = _lance_parameters(request.properties)
        self._call("CreateTable", self._subject(id), missing=NamespaceNotFoundError,
                   duplicate=TableAlreadyExistsError, CatalogId=database.catalog_id,
                   DatabaseName=database.name, TableInput=_table_input(name, location, parameters))
        return DeclareTableResponse(location=location, properties=parameters,
                                    storage_options=self.storage_options() or None)

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        id = _identifier(request.id)
        mode = request_mode(request.mode, REGISTER_MODES)
        location = normalize_location(request.location)
        try:
            self.declare_table(DeclareTableRequest(id=list(id), location=location,
                                                   properties=request.properties))
        except TableAlreadyExistsError:
            if mode != "overwrite":
                raise
            self._update_table(id, lambda _: _lance_parameters(request.properties), location)
        return RegisterTableResponse(location=location, properties=_lance_parameters(request.properties))

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

    def table_exists(self, request: TableExistsRequest) -> None:
        self._lance_table(_identifier(request.id))

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
                sts = self._session.client("sts", region_name=self._glue.meta.region_name)
                try:
                    self._root_id = sts.get_caller_identity()["Account"]
                except (ClientError, BotoCoreError) as error:
                    raise _translate(error, "the caller's account (set catalog_id to skip STS)",
                                     "GetCallerIdentity") from error
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
        table_input["Parameters"] = {**parameters(_parameters(table)), TABLE_TYPE_KEY: LANCE_TABLE_TYPE}
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

    def _call(self, operation: str, subject: str, *, missing: type[LanceNamespaceError] | None,
              duplicate: type[LanceNamespaceError] | None = None, **params: Any) -> dict | None:
        """One Glue request, errors translated. EntityNotFound raises `missing` (None: returns None)."""
        try:
            return getattr(self._glue, xform_name(operation))(**params)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code")
            if code == "EntityNotFoundException" and missing is None:
                return None
            raise _translate(error, subject, operation, missing, duplicate) from error
        except BotoCoreError as error:
            raise _translate(error, subject, operation) from error

    def _items(self, operation: str, list_key: str, subject: str, **params: Any) -> Iterator[dict]:
        """Every item of a NextToken listing, page after page."""
        def fetch(token: str | None) -> tuple[list[dict], str | None]:
            paging = {"NextToken": token} if token else {}
            response = self._call(operation, subject, missing=NamespaceNotFoundError, **params, **paging)
            return response[list_key], response.get("NextToken")

        return follow_pages(fetch)

    def _as_input(self, described: dict[str, Any], input_shape: str) -> dict[str, Any]:
        """A Get answer reduced to what the matching *Input shape accepts (for Update calls)."""
        return _project(described, self._service_model.shape_for(input_shape))


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


def _session(config: GlueConfig) -> boto3.Session:
    """Default chain, static keys (with session token), or an assumed role on top of either."""
    base = boto3.Session(aws_access_key_id=secret_value(config.access_key_id),
                         aws_secret_access_key=secret_value(config.secret_access_key),
                         aws_session_token=secret_value(config.session_token),
                         region_name=config.region)
    if config.assume_role_arn is None:
        return base
    sts = base.client("sts", region_name=config.assume_role_region or config.region,
                      config=Config(retries={"mode": "standard"}, user_agent_extra="lance-sync"))
    request = {"RoleArn": config.assume_role_arn,
               "RoleSessionName": config.assume_role_session_name or DEFAULT_ROLE_SESSION_NAME,
               "DurationSeconds": config.assume_role_timeout_sec}
    if config.assume_role_external_id:
        request["ExternalId"] = config.assume_role_external_id

    def assume_role() -> dict[str, str]:
        credentials = sts.assume_role(**request)["Credentials"]
        return {"access_key": credentials["AccessKeyId"], "secret_key": credentials["SecretAccessKey"],
                "token": credentials["SessionToken"],
                "expiry_time": credentials["Expiration"].isoformat()}

    role_session = botocore.session.Session()
    role_credentials = _AssumedRoleCredentials(assume_role, config.assume_role_timeout_sec)
    role_session.register_component("credential_provider",
                                    CredentialResolver([_FixedCredentialProvider(role_credentials)]))
    return boto3.Session(botocore_session=role_session, region_name=config.region)


# --- errors --------------------------------------------------------------------------------------


def _translate(error: ClientError | BotoCoreError, subject: str, operation: str,
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
        detail = "check the configured credentials" if cls is UnauthenticatedError else details.get("Message", "")
        return cls(f"{subject}: {failed} answered {code or status}: {detail}")
    if isinstance(error, NoCredentialsError | PartialCredentialsError | CredentialRetrievalError):
        return UnauthenticatedError(f"{subject}: no usable AWS credentials for Glue {operation}")
    if isinstance(error, ParamValidationError):
        return InvalidInputError(f"{subject}: invalid Glue {operation} request: {error}")
    if isinstance(error, botocore.exceptions.ConnectionError | HTTPClientError):
        return ServiceUnavailableError(f"{subject}: Glue {operation} failed: {error}")
    return InternalError(f"{subject}: Glue {operation} failed: {error}")


# --- small helpers -------------------------------------------------------------------------------


def _identifier(id: list[str] | None, root_ok: bool = False) -> Identifier:
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
            and str(_parameters(table).get(TABLE_TYPE_KEY, "")).lower() == LANCE_TABLE_TYPE)


def _parameters(described: dict[str, Any]) -> dict[str, str]:
    return dict(described.get("Parameters") or {})


def _location(table: dict[str, Any]) -> str | None:
    return (table.get("StorageDescriptor") or {}).get("Location")


def _lance_parameters(properties: dict[str, str] | None) -> dict[str, str]:
    return {**(properties or {}), TABLE_TYPE_KEY: LANCE_TABLE_TYPE}


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
