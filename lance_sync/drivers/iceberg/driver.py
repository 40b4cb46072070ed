"""Apache Iceberg REST Catalog backend (spec: iceberg-rest.md).

Identifiers are [warehouse, namespace..., table]. The warehouse picks the catalog: its API
prefix comes from GET /v1/config?warehouse=... (cached; the warehouse name itself when the
config names none). A Lance table is an Iceberg table with a one-column dummy schema whose
properties say `table_type=lance` and whose location is the Lance dataset's root.

Where the upstream server is looser than the spec, the driver checks for itself: a child
namespace needs its parent, and a namespace with child namespaces is not empty.

Every answer is parsed where it enters (`_send(..., expect=Model)`) into a model of its
OpenAPI schema (the "answers" section below): a body without that shape is a BadAnswerError
naming the call, retried like a 5xx for reads, never an empty listing.

Errors are translated at one place (`_send`): what a 404 or 409 means depends on the call
(a missing table, a missing namespace, a name taken), the rest by status (see `_STATUS_ERRORS`).

Apply leases (`IcebergLeaseRegister`) are a small Iceberg table inside the lease namespace:
every change of the lease is a table commit whose requirements make the catalog refuse it
(409) if another commit came first.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Annotated, Any, TypeVar
from urllib.parse import quote

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
    UnauthenticatedError,
    UnsupportedOperationError,
)
from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    StrictInt,
    StrictStr,
)

from lance_sync.drivers.base import (
    Capabilities,
    Identifier,
    NamespaceInfo,
    SyncNamespace,
    TableInfo,
    secret_value,
)
from lance_sync.drivers.iceberg.config import (
    LEVEL_SEPARATOR,
    IcebergConfig,
    IcebergRules,
    name_problem,
)
from lance_sync.drivers.leases import (
    PREVIOUS_FORMAT,
    LeaseRecord,
    LeaseRegister,
    StoredLease,
    TableLeaseRegister,
    not_a_lease,
)
from lance_sync.drivers.support.answers import Answer, one_line
from lance_sync.drivers.support.http import (
    HttpClient,
    HttpFailure,
    Translator,
    attempts_note,
    transient_if_5xx,
)
from lance_sync.drivers.support.paging import follow_pages
from lance_sync.drivers.support.retry import with_retries
from lance_sync.model import secrets
from lance_sync.model.locations import normalize_location
from lance_sync.model.marks import TABLE_TYPE_KEY, is_lance_table, lance_table_properties

BACKEND = "iceberg"
CONFIG_PATH = "/v1/config"
TOKEN_PATH = "/v1/oauth/tokens"
#: the config key (in `overrides`, else `defaults`) naming the warehouse's path prefix
PREFIX_KEY = "prefix"
#: the companion Iceberg table's schema: one nullable string column `dummy`
DUMMY_SCHEMA = {"type": "struct", "schema-id": 0,
                "fields": [{"id": 1, "name": "dummy", "type": "string", "required": False}]}
#: table and namespace loads in flight at once, per driver, in its own bulk reads (a planner
#: runs the loads on its own pool instead: see `table_info_parts`)
LOAD_PARALLELISM = 16
#: table loads per part of `table_info_parts`
LOADS_PER_PART = 25
#: a token is renewed once this share of its lifetime has passed
TOKEN_RENEW_AT = 0.9
#: the Iceberg table that holds an apply lease, in the lease namespace
LEASE_TABLE = "lease"
#: every lease swap is a commit: keep only the current metadata file of the lease table
LEASE_TABLE_PROPERTIES = {"write.metadata.delete-after-commit.enabled": "true",
                          "write.metadata.previous-versions-max": "1"}

#: what an error status means when the call gives it no meaning of its own
_STATUS_ERRORS: dict[int, type[LanceNamespaceError]] = {
    400: InvalidInputError,
    401: UnauthenticatedError,
    403: PermissionDeniedError,
    406: UnsupportedOperationError,
    422: InvalidInputError,
    503: ServiceUnavailableError,
}
ErrorMeanings = Mapping[int, type[LanceNamespaceError]]
T = TypeVar("T")
R = TypeVar("R")


# --- answers: the REST responses the driver reads (apache/iceberg open-api/rest-catalog-open-api.yaml)
#
# Members the OpenAPI requires are required; optional ones keep the meaning the spec gives
# their absence (no next-page-token: the last page; no table properties: none). `namespaces`
# and `identifiers` are optional in the OpenAPI but their absence has no meaning there, and
# both reference clients (Java's ListNamespacesResponse.validate, pyiceberg) refuse it: a body
# without them is not a listing, so it can never read as an empty one.

StringMap = dict[str, StrictStr]
#: a namespace as the API writes it, outermost level first
Levels = Annotated[list[StrictStr], Field(min_length=1)]


class CatalogConfig(Answer):
    """GET /v1/config: both maps are required; a prefix in neither means the warehouse name."""

    defaults: StringMap
    overrides: StringMap

    def prefix(self) -> str | None:
        return self.overrides.get(PREFIX_KEY) or self.defaults.get(PREFIX_KEY)


class ListNamespacesAnswer(Answer):
    """ListNamespacesResponse."""

    namespaces: list[Levels]
    next_page_token: StrictStr | None = Field(None, alias="next-page-token")


class NamespaceAnswer(Answer):
    """GetNamespaceResponse and CreateNamespaceResponse; null properties: the server keeps none."""

    namespace: list[StrictStr]
    properties: StringMap | None = None


class TableIdentifier(Answer):
    namespace: list[StrictStr]
    name: StrictStr


class ListTablesAnswer(Answer):
    """ListTablesResponse."""

    identifiers: list[TableIdentifier]
    next_page_token: StrictStr | None = Field(None, alias="next-page-token")


class TableMetadata(Answer):
    """The members of TableMetadata the driver reads. `location` is optional in the OpenAPI but
    required by the table spec, and a Lance table is its location."""

    format_version: StrictInt = Field(alias="format-version", ge=1)
    table_uuid: StrictStr = Field(alias="table-uuid")
    location: StrictStr
    properties: StringMap = Field(default_factory=dict)


class LoadTableAnswer(Answer):
    """LoadTableResult: the answer to a load and to a create."""

    metadata: TableMetadata


class CommitTableAnswer(Answer):
    """CommitTableResponse."""

    metadata_location: StrictStr = Field(alias="metadata-location")
    metadata: TableMetadata


class LeaseTableMetadata(Answer):
    """The members of a lease table's TableMetadata that its register reads."""

    table_uuid: StrictStr = Field(alias="table-uuid")
    current_schema_id: StrictInt = Field(alias="current-schema-id")
    properties: StringMap = Field(default_factory=dict)

    def version(self) -> str:
        return f"{self.table_uuid}/{self.current_schema_id}"


class LeaseTableAnswer(Answer):
    """LoadTableResult (a load, a create) and CommitTableResponse (a commit) of the lease table."""

    metadata: LeaseTableMetadata


class UpdateNamespacePropertiesAnswer(Answer):
    """UpdateNamespacePropertiesResponse."""

    updated: list[StrictStr]
    removed: list[StrictStr]


class OAuthTokenAnswer(Answer):
    """OAuthTokenResponse (RFC 6749 5.1); `expires_in` in seconds, absent: no known expiry."""

    access_token: StrictStr = Field(min_length=1)
    token_type: StrictStr
    expires_in: int | None = None  # not strict: some token servers send "3599"


class IcebergNamespace(IcebergRules, SyncNamespace):
    config: IcebergConfig

    #: pageSize of the listings behind bulk reads; None lets the server choose (upstream
    #: answers everything in one page). Every page is followed either way.
    bulk_page_size: int | None = None

    def __init__(self, config: IcebergConfig | None = None, /, **properties: Any) -> None:
        super().__init__(config, **properties)
        config = self.config

        def client(translate: Translator, headers: Callable[[], dict[str, str]] | None = None) -> HttpClient:
            connect_timeout, read_timeout = config.timeout_seconds()
            return HttpClient(config.endpoint, backend=BACKEND, connect_timeout=connect_timeout,
                              read_timeout=read_timeout, max_retries=config.max_retries,
                              translate=translate, headers=headers, on_request=self.count_call)

        if config.credential is not None:
            self._auth: _StaticToken | _ClientCredentials = _ClientCredentials(config.credential,
                                                                                client(_token_error))
        else:
            self._auth = _StaticToken(secret_value(config.auth_token))
        self._http = client(_ErrorAnswer, headers=self._auth_headers)
        self._sent_token = _SentToken()
        self._prefixes: dict[str, str] = {}
        self._prefix_lock = threading.Lock()
        self._loads = ThreadPoolExecutor(LOAD_PARALLELISM, thread_name_prefix="iceberg-load")

    def namespace_id(self) -> str:
        return f"lance-sync iceberg {{ endpoint: {self.config.endpoint!r} }}"

    def capabilities(self) -> Capabilities:
        return Capabilities(creatable_namespace_levels=(2, None))

    def lease_register(self, parent: Identifier, name: str, owner: str) -> LeaseRegister:
        return IcebergLeaseRegister(self, (*parent, name))

    # --- namespaces --------------------------------------------------------------------------

    def _create_namespace_object(self, id: Identifier, properties: dict[str, str]) -> dict[str, str]:
        """POST namespaces, after checking the parent exists (the upstream server does not)."""
        warehouse, levels = _split_namespace(id)
        if not levels:
            raise UnsupportedOperationError(f"iceberg: warehouse '{warehouse}' cannot be created "
                                            "through the REST API")
        if len(levels) > 1 and not self._namespace_exists(warehouse, levels[:-1]):
            raise NamespaceNotFoundError(f"Parent namespace not found: {_display((warehouse, *levels[:-1]))}")
        path = f"/v1/{self._prefix(warehouse, NamespaceNotFoundError)}/namespaces"
        created = self._send("POST", path, json={"namespace": list(levels), "properties": properties},
                             expect=NamespaceAnswer, meanings={409: NamespaceAlreadyExistsError})
        return dict(created.properties or {})

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        warehouse, levels = _split_listed_namespace(request.id)
        names, token = self._namespace_page(warehouse, levels, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=names, page_token=token)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        if not request.id:
            return DescribeNamespaceResponse(properties={})
        warehouse, levels = _split_namespace(request.id)
        return DescribeNamespaceResponse(properties=self._namespace_properties(warehouse, levels))

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        if request.id:
            warehouse, levels = _split_namespace(request.id)
            if not self._namespace_exists(warehouse, levels):
                raise NamespaceNotFoundError(f"Namespace not found: {_display(request.id)}")
        return NamespaceExistsResponse()

    def _drop_namespace_object(self, id: Identifier, cascade: bool) -> None:
        """A namespace that does not exist is dropped already (the spec)."""
        warehouse, levels = _split_namespace(id)
        if not levels:
            raise UnsupportedOperationError(f"iceberg: warehouse '{warehouse}' cannot be dropped "
                                            "through the REST API")
        self._drop_namespace(warehouse, levels)

    # --- tables ------------------------------------------------------------------------------

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        """POST a companion Iceberg table (dummy schema, table_type=lance) at the Lance location."""
        warehouse, levels, name = _split_table(request.id)
        location = request.location or self._default_location(warehouse, levels, name)
        properties = lance_table_properties(request.properties)
        body = {"name": name, "location": location, "schema": DUMMY_SCHEMA, "properties": properties,
                "stage-create": False}
        path = self._namespace_path(warehouse, levels, missing=NamespaceNotFoundError) + "/tables"
        created = self._send("POST", path, json=body, expect=LoadTableAnswer,
                             meanings={404: NamespaceNotFoundError, 409: TableAlreadyExistsError})
        return DeclareTableResponse(location=created.metadata.location,
                                    properties=created.metadata.properties,
                                    storage_options=self.storage_options() or None)

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        """One page of table names, each table loaded (in parallel) to keep only Lance tables."""
        warehouse, levels = _split_listed_namespace(request.id)
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

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        """Check it is a Lance table, then DELETE without purge (data and Iceberg metadata stay).

        The check costs a load; it keeps a Lance client from deregistering a plain Iceberg table.
        """
        info = self._require_lance(request.id)
        self._send("DELETE", self._table_path(info.id), params={"purgeRequested": "false"},
                   ok=(200, 204), meanings={404: TableNotFoundError})
        return DeregisterTableResponse(id=list(info.id), location=info.location,
                                       properties=info.properties)

    # --- reconciler extensions -----------------------------------------------------------------

    def update_namespace_properties(self, id: Identifier, updates: dict[str, str],
                                    removals: list[str]) -> None:
        warehouse, levels = _split_namespace(id)
        if not levels:
            raise UnsupportedOperationError("iceberg: a warehouse has no properties to update")
        if not updates and not removals:
            return
        self._send("POST", self._namespace_path(warehouse, levels) + "/properties",
                   json={"updates": updates, "removals": list(removals)},
                   expect=UpdateNamespacePropertiesAnswer, meanings={404: NamespaceNotFoundError})

    def update_table_properties(self, id: Identifier, updates: dict[str, str],
                                removals: list[str]) -> None:
        """Load for the table's uuid, then commit set/remove-properties asserting that uuid."""
        if not updates and not removals:
            return
        path = self._table_path(id)
        loaded = self._send("GET", path, expect=LoadTableAnswer, meanings={404: TableNotFoundError})
        changes: list[dict[str, Any]] = []
        if updates:
            changes.append({"action": "set-properties", "updates": updates})
        if removals:
            changes.append({"action": "remove-properties", "removals": list(removals)})
        commit = {"requirements": [{"type": "assert-table-uuid", "uuid": loaded.metadata.table_uuid}],
                  "updates": changes}
        self._send("POST", path, json=commit, expect=CommitTableAnswer,
                   meanings={404: TableNotFoundError, 409: ConcurrentModificationError})

    def list_namespace_infos(self, parent: Identifier) -> Iterator[NamespaceInfo]:
        """Every page of child names, then each child loaded in parallel for its properties."""
        warehouse, levels = _split_listed_namespace(parent)
        names = follow_pages(lambda token: self._namespace_page(warehouse, levels, token,
                                                                self.bulk_page_size))
        children = ((warehouse, *levels, name) for name in names)
        yield from self._in_parallel(self._load_namespace_info, children)

    def list_table_infos(self, namespace: Identifier) -> Iterator[TableInfo]:
        """Every page of table names, each table loaded in parallel; Lance or not (is_lance)."""
        warehouse, levels = _split_listed_namespace(namespace)
        names = follow_pages(lambda token: self._table_page(warehouse, levels, token,
                                                            self.bulk_page_size))
        yield from self._in_parallel(self._load_table_info, ((warehouse, *levels, n) for n in names))

    def namespace_info_parts(self, parent: Identifier) -> list[Callable[[], list[NamespaceInfo]]]:
        """Every page of child names now; the loads in parts of LOADS_PER_PART namespaces."""
        warehouse, levels = _split_listed_namespace(parent)
        names = follow_pages(lambda token: self._namespace_page(warehouse, levels, token,
                                                                self.bulk_page_size))
        return _in_parts(self._load_namespace_info, [(warehouse, *levels, name) for name in names])

    def table_info_parts(self, namespace: Identifier) -> list[Callable[[], list[TableInfo]]]:
        """Every page of table names now; the loads in parts of LOADS_PER_PART tables."""
        warehouse, levels = _split_listed_namespace(namespace)
        names = follow_pages(lambda token: self._table_page(warehouse, levels, token,
                                                            self.bulk_page_size))
        return _in_parts(self._load_table_info, [(warehouse, *levels, name) for name in names])

    def get_table_info(self, id: Identifier) -> TableInfo | None:
        return self._load_table_info(tuple(id))

    # --- requests ------------------------------------------------------------------------------

    def _send(self, method: str, path: str, *, expect: type[BaseModel] | None = None,
              meanings: ErrorMeanings | None = None, **request: Any) -> Any:
        """One API call, its answer parsed as `expect` (an instance of it is returned), its error
        answer translated; a rejected OAuth2 token is renewed once."""
        try:
            try:
                return self._http.request(method, path, expect=expect, **request)
            except _ErrorAnswer as answer:
                if answer.failure.status != 401 or not self._auth.discard(self._sent_token.value):
                    raise
            return self._http.request(method, path, expect=expect, **request)
        except _ErrorAnswer as answer:
            raise _error_for(answer.failure, meanings or {}) from answer

    def _auth_headers(self) -> dict[str, str]:
        token = self._auth.current()
        self._sent_token.value = token
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _prefix(self, warehouse: str, missing: type[LanceNamespaceError]) -> str:
        """The warehouse's API prefix from GET /v1/config (cached): overrides, then defaults, then
        (the spec's rule for a config that names none) the warehouse name itself."""
        with self._prefix_lock:
            if warehouse not in self._prefixes:
                try:
                    config = self._send("GET", CONFIG_PATH, params={"warehouse": warehouse},
                                        expect=CatalogConfig, meanings={404: NamespaceNotFoundError})
                except NamespaceNotFoundError as error:
                    raise missing(f"iceberg: warehouse '{warehouse}' not found ({error})") from error
                self._prefixes[warehouse] = config.prefix() or quote(warehouse, safe="")
            return self._prefixes[warehouse]

    def _namespace_path(self, warehouse: str, levels: tuple[str, ...],
                        missing: type[LanceNamespaceError] = NamespaceNotFoundError) -> str:
        return f"/v1/{self._prefix(warehouse, missing)}/namespaces/{_encode(LEVEL_SEPARATOR.join(levels))}"

    def _table_path(self, id: Iterable[str] | None) -> str:
        warehouse, levels, name = _split_table(id)
        return f"{self._namespace_path(warehouse, levels, missing=TableNotFoundError)}/tables/{_encode(name)}"

    def _namespace_properties(self, warehouse: str, levels: tuple[str, ...]) -> dict[str, str]:
        if not levels:
            self._prefix(warehouse, NamespaceNotFoundError)
            return {}
        found = self._send("GET", self._namespace_path(warehouse, levels), expect=NamespaceAnswer,
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
            raise NamespaceNotEmptyError(f"Namespace {_display((warehouse, *levels))} has child "
                                         f"namespaces, e.g. '{children[0]}'")
        try:
            self._send("DELETE", self._namespace_path(warehouse, levels), ok=(200, 204),
                       meanings={404: NamespaceNotFoundError, 409: NamespaceNotEmptyError})
        except NamespaceNotFoundError:
            return

    def _namespace_page(self, warehouse: str, levels: tuple[str, ...], token: str | None,
                        size: int | None) -> tuple[list[str], str | None]:
        path = f"/v1/{self._prefix(warehouse, NamespaceNotFoundError)}/namespaces"
        params = {"parent": LEVEL_SEPARATOR.join(levels) or None, "pageToken": token, "pageSize": size}
        page = self._send("GET", path, params=params, expect=ListNamespacesAnswer,
                          meanings={404: NamespaceNotFoundError})
        return [child[-1] for child in page.namespaces], page.next_page_token

    def _table_page(self, warehouse: str, levels: tuple[str, ...], token: str | None,
                    size: int | None) -> tuple[list[str], str | None]:
        if not levels:  # Iceberg tables live in namespaces, never directly in a warehouse
            self._prefix(warehouse, NamespaceNotFoundError)
            return [], None
        path = self._namespace_path(warehouse, levels) + "/tables"
        page = self._send("GET", path, params={"pageToken": token, "pageSize": size},
                          expect=ListTablesAnswer, meanings={404: NamespaceNotFoundError})
        return [identifier.name for identifier in page.identifiers], page.next_page_token

    def _load_table(self, id: Iterable[str] | None) -> TableInfo:
        """GET the table: location, properties, whether it is a Lance table."""
        metadata = self._send("GET", self._table_path(id), expect=LoadTableAnswer,
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
        warehouse, levels = _split_namespace(id)
        try:
            return NamespaceInfo(tuple(id), self._namespace_properties(warehouse, levels))
        except NamespaceNotFoundError:
            return None

    def _require_lance(self, id: Iterable[str] | None) -> TableInfo:
        info = self._load_table(id)
        if not info.is_lance:
            found = info.properties.get(TABLE_TYPE_KEY, "(none)")
            raise InvalidInputError(f"iceberg: {_display(id)} is not a Lance table "
                                    f"({TABLE_TYPE_KEY}={found})")
        return info

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
        parts = [_path_part(part) for part in (warehouse, *levels, name)]
        return "/".join([normalize_location(self.config.root).rstrip("/"), *parts])


class IcebergLeaseRegister(TableLeaseRegister):
    """An apply lease as the table `lease` of the lease namespace, its properties the record.

    Every swap is one commit with the requirements `assert-table-uuid` (the same table, not one
    dropped and created again) and `assert-current-schema-id` (no commit since the lease was
    read): each swap adds a new schema (ids only grow), makes it current and removes the old
    one, so the catalog answers 409 CommitFailed to any commit made against an older read. The
    version is the table uuid and current schema id. A released lease stays, marked released
    (dropping a table is not conditional in the REST API).

    A namespace of that name holding a record in its properties is a lease of lance-sync before
    this register (no table): it is read as the lease, and replacing it creates the table.
    """

    driver: IcebergNamespace

    def __init__(self, driver: IcebergNamespace, namespace: Identifier):
        self.table = (*namespace, LEASE_TABLE)
        super().__init__(driver, namespace, f"{driver.namespace_id()} {list(self.table)}", _display(self.table))

    def create(self, record: LeaseRecord) -> StoredLease | None:
        warehouse, levels = _split_namespace(self.namespace)
        body = {"name": LEASE_TABLE, "schema": _lease_schema(0), "stage-create": False,
                "properties": {**LEASE_TABLE_PROPERTIES, **record.to_properties()}}
        tables = self.driver._namespace_path(warehouse, levels) + "/tables"
        meanings = {404: NamespaceNotFoundError, 409: TableAlreadyExistsError}
        for _ in range(2):
            try:
                # sent again after a lost answer: a create that landed then answers 409, and the
                # lease protocol reads the lease back and finds its own record
                created = self.driver._send("POST", tables, json=body, expect=LeaseTableAnswer,
                                            meanings=meanings, retry_safe=True)
            except TableAlreadyExistsError:
                return None
            except NamespaceNotFoundError:  # the first lease of this owner here
                request = CreateNamespaceRequest(id=list(self.namespace), mode="ExistOk")
                with_retries(functools.partial(self.driver.create_namespace, request), self.driver.config.max_retries)
                continue
            return StoredLease(record, created.metadata.version())
        raise NamespaceNotFoundError(f"iceberg: the lease namespace {_display(self.namespace)} "
                                     "was dropped each time its table was created")

    def read(self) -> StoredLease | None:
        try:
            loaded = self.driver._send("GET", self.driver._table_path(self.table), expect=LeaseTableAnswer,
                                       meanings={404: TableNotFoundError})
        except TableNotFoundError:
            return self.previous_format()
        record = LeaseRecord.from_properties(loaded.metadata.properties)
        if record is None:
            raise not_a_lease(self.label)
        return StoredLease(record, loaded.metadata.version())

    def swap(self, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        if expected.version == PREVIOUS_FORMAT:
            return self.replace_previous_format(expected, record)
        table_uuid, _, schema_id = expected.version.rpartition("/")
        current = int(schema_id)
        properties = record.to_properties()
        updates: list[dict[str, Any]] = [
            {"action": "add-schema", "schema": _lease_schema(current + 1)},
            {"action": "set-current-schema", "schema-id": -1},
            {"action": "remove-schemas", "schema-ids": [current]},
            {"action": "set-properties", "updates": properties},
        ]
        gone = [key for key in expected.record.to_properties() if key not in properties]
        if gone:
            updates.append({"action": "remove-properties", "removals": gone})
        commit = {"requirements": [{"type": "assert-table-uuid", "uuid": table_uuid},
                                   {"type": "assert-current-schema-id", "current-schema-id": current}],
                  "updates": updates}
        try:
            # conditional, so sending it again is safe: a resend after it landed fails the requirements
            committed = self.driver._send("POST", self.driver._table_path(self.table), json=commit,
                                          expect=LeaseTableAnswer, retry_safe=True,
                                          meanings={404: TableNotFoundError, 409: ConcurrentModificationError})
        except (TableNotFoundError, ConcurrentModificationError):
            return None
        return StoredLease(record, committed.metadata.version())


def _lease_schema(schema_id: int) -> dict[str, Any]:
    """The lease table's schema number `schema_id`: one optional string column named after it, so
    that each schema differs from the one before (an equal schema would be reused, not added)."""
    return {"type": "struct", "schema-id": schema_id,
            "fields": [{"id": 1, "name": f"lease_{schema_id}", "type": "string", "required": False}]}


def _in_parts(load: Callable[[Identifier], R | None], ids: list[Identifier]) -> list[Callable[[], list[R]]]:
    """Parts of LOADS_PER_PART loads each, run one after the other within a part; None skipped."""
    def part(share: list[Identifier]) -> list[R]:
        return [loaded for loaded in map(load, share) if loaded is not None]

    return [functools.partial(part, ids[start:start + LOADS_PER_PART])
            for start in range(0, len(ids), LOADS_PER_PART)]


# --- authentication ----------------------------------------------------------------------------


class _SentToken(threading.local):
    """The token this thread sent last, so a 401 renews exactly that one."""

    value: str | None = None


class _StaticToken:
    """A configured bearer token, or none at all."""

    def __init__(self, token: str | None):
        self._token = token

    def current(self) -> str | None:
        return self._token

    def discard(self, rejected: str | None) -> bool:
        """A static token cannot be renewed."""
        return False


class _ClientCredentials:
    """OAuth2 client-credentials tokens from POST /v1/oauth/tokens, cached until near expiry."""

    def __init__(self, credential: SecretStr, http: HttpClient,
                 clock: Callable[[], float] = time.monotonic):
        self._client_id, self._secret = credential.get_secret_value().split(":", 1)
        secrets.register(self._secret)  # sent on its own in the token request's form
        self._http = http
        self.clock = clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._renew_at: float | None = None

    def current(self) -> str:
        with self._lock:
            if self._token is None or (self._renew_at is not None and self.clock() >= self._renew_at):
                self._token, self._renew_at = self._fetch()
            return self._token

    def discard(self, rejected: str | None) -> bool:
        """Forget a token the server rejected (unless another thread renewed it already)."""
        with self._lock:
            if rejected is not None and rejected == self._token:
                self._token = None
        return rejected is not None

    def _fetch(self) -> tuple[str, float | None]:
        form = {"grant_type": "client_credentials", "client_id": self._client_id,
                "client_secret": self._secret, "scope": "catalog"}
        # a token request changes nothing on the server, so it is safe to send again
        answer = self._http.request("POST", TOKEN_PATH, data=form, expect=OAuthTokenAnswer, retry_safe=True)
        lifetime = answer.expires_in
        renew_at = self.clock() + lifetime * TOKEN_RENEW_AT if lifetime else None
        secrets.register(answer.access_token)
        return answer.access_token, renew_at


# --- errors ------------------------------------------------------------------------------------


class _ErrorAnswer(InternalError):
    """An error answer on its way to `_send`, which gives it its meaning for the call."""

    def __init__(self, failure: HttpFailure):
        super().__init__(_describe(failure))
        self.failure = failure


def _error_for(failure: HttpFailure, meanings: ErrorMeanings) -> LanceNamespaceError:
    kind = meanings.get(failure.status) or transient_if_5xx(_STATUS_ERRORS.get(failure.status, InternalError),
                                                            failure.status)
    if kind is TableNotFoundError and _error_type(failure) == "NotFoundException":
        # upstream answers 404 for Iceberg's NotFoundException too: a file the table needs (its
        # metadata.json, kept in the table's location) is missing, while the table is listed.
        # Taking it for an absent table would plan a create the catalog refuses, or count a
        # deregistration as done that never happened.
        return InternalError(f"iceberg: the catalog lists the table but cannot load it: {_describe(failure)}")
    return kind(f"iceberg: {_describe(failure)}")


def _error_type(failure: HttpFailure) -> str | None:
    """The `type` of an Iceberg ErrorModel answer, if the answer is one."""
    error = failure.body.get("error") if isinstance(failure.body, dict) else None
    return error.get("type") if isinstance(error, dict) and isinstance(error.get("type"), str) else None


def _token_error(failure: HttpFailure) -> LanceNamespaceError:
    """The token endpoint answers 400/401 for a wrong client or secret (RFC 6749 5.2)."""
    if failure.status in (400, 401):
        return UnauthenticatedError(f"iceberg: OAuth2 token request rejected: {_describe(failure)}")
    return _error_for(failure, {})


def _describe(failure: HttpFailure) -> str:
    """Method, URL, status, and the server's error type and message (never a stack trace)."""
    body = failure.body if isinstance(failure.body, dict) else {}
    error = body.get("error")
    if isinstance(error, dict):  # Iceberg ErrorModel
        detail = f"{error.get('type') or 'error'}: {error.get('message') or ''}"
    elif isinstance(error, str):  # OAuth2 error
        detail = f"{error}: {body.get('error_description') or ''}"
    else:
        detail = one_line(str(failure.body or ""), 200)
    return f"{failure.method} {failure.shown_url} -> {failure.status} {one_line(detail)}".rstrip() + \
        attempts_note(failure.attempts)


# --- identifiers -------------------------------------------------------------------------------


def _checked(id: Iterable[str] | None) -> tuple[str, ...]:
    parts = tuple(id or ())
    problem = name_problem(parts)
    if problem:
        raise InvalidInputError(f"iceberg: {problem}")
    return parts


def _split_namespace(id: Iterable[str] | None) -> tuple[str, tuple[str, ...]]:
    """(warehouse, namespace levels) of a namespace id."""
    parts = _checked(id)
    if not parts:
        raise InvalidInputError("iceberg: a namespace id starts with the warehouse")
    return parts[0], parts[1:]


def _split_listed_namespace(id: Iterable[str] | None) -> tuple[str, tuple[str, ...]]:
    """Like `_split_namespace`, for listings: the root cannot be listed (no warehouse listing)."""
    if not id:
        raise UnsupportedOperationError("iceberg: the REST API cannot list warehouses; "
                                        "list under a warehouse, e.g. [warehouse]")
    return _split_namespace(id)


def _split_table(id: Iterable[str] | None) -> tuple[str, tuple[str, ...], str]:
    """(warehouse, namespace levels, table name) of a table id."""
    parts = _checked(id)
    if len(parts) < 3:
        raise InvalidInputError(f"iceberg: a table id is [warehouse, namespace..., table], "
                                f"got {list(parts)}")
    return parts[0], parts[1:-1], parts[-1]


def _encode(text: str) -> str:
    """One path segment, percent-encoded once ('+' too: upstream decodes it as a space)."""
    return quote(text, safe="")


def _path_part(name: str) -> str:
    return name.replace("%", "%25").replace("/", "%2F")


def _display(id: Iterable[str] | None) -> str:
    return IcebergNamespace.format_identifier(tuple(id or ()))
