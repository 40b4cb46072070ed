"""The Glue backend's one client, shared by the driver, its grants and its leases.

`GlueClient` owns what every one of them sends and resolves:

- the transport: one `transport.AwsJsonService` per service, Glue's made with the client and
  Lake Formation's on first use, both with the credentials, region and waits of `credentials`;
  `call` sends one request to the service that has the operation, `items` follows a
  NextToken listing page after page;
- error translation: every error answer becomes a `lance_namespace` error by its AWS code
  (`errors`, applied by the transport), an EntityNotFound the caller's `missing` error;
- id resolution: the root catalog (`catalog_id`, or the caller's account, one STS call), the
  CatalogId of a catalog chain, what a namespace id can name (a database, a catalog), the
  database and name of a table id, and the lookups that settle them (GetDatabase, GetCatalog,
  GetTable). The driver module's docstring gives the identifier rules.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, overload

from lance_namespace.errors import (
    InvalidInputError,
    LanceNamespaceError,
    NamespaceNotFoundError,
    TableNotFoundError,
)

from lance_sync.drivers.base import Identifier
from lance_sync.drivers.glue.config import ACCOUNT_ID, CATALOG_ID_SEPARATORS, GlueConfig, GlueRules
from lance_sync.drivers.glue.credentials import AwsAccess
from lance_sync.drivers.glue.objects import (
    DatabaseRef,
    FoundNamespace,
    is_lance,
    parameters_of,
    projected,
)
from lance_sync.drivers.glue.transport import AwsJsonService
from lance_sync.drivers.support.paging import follow_pages
from lance_sync.model.marks import TABLE_TYPE_KEY

#: the operations sent to Lake Formation (grants); every other one goes to Glue
LAKE_FORMATION_OPERATIONS = frozenset({"GrantPermissions", "RevokePermissions", "ListPermissions"})


class GlueClient:
    """Glue and Lake Formation requests of one driver configuration (see the module docstring)."""

    def __init__(self, config: GlueConfig, *, on_request: Callable[[], None]) -> None:
        """`on_request` is called once per request sent (the driver counts its calls)."""
        self.config = config
        #: waits between resends of a failed or garbled call (tests replace it)
        self.sleep: Callable[[float], None] = time.sleep
        self._on_request = on_request
        self.access = AwsAccess(config, sleep=self.wait)
        self.glue = self._service("glue", config.endpoint)
        self._root_id = config.catalog_id
        self._lock = threading.Lock()
        #: CatalogIds seen to exist, so creating databases in one checks the catalog once
        self._known_catalogs: set[str] = set()
        self._lakeformation_service: AwsJsonService | None = None

    # --- requests ------------------------------------------------------------------------------

    @overload
    def call(self, operation: str, subject: str, *, missing: type[LanceNamespaceError],
             duplicate: type[LanceNamespaceError] | None = None, retry_safe: bool | None = None,
             **params: Any) -> dict[str, Any]: ...

    @overload
    def call(self, operation: str, subject: str, *, missing: None,
             duplicate: type[LanceNamespaceError] | None = None, retry_safe: bool | None = None,
             **params: Any) -> dict[str, Any] | None: ...

    def call(self, operation: str, subject: str, *, missing: type[LanceNamespaceError] | None,
             duplicate: type[LanceNamespaceError] | None = None, retry_safe: bool | None = None,
             **params: Any) -> dict[str, Any] | None:
        """One Glue (or Lake Formation) request, its answer checked and its errors translated
        (`transport`). EntityNotFound raises `missing` (None: returns None); `retry_safe`
        overrides whether the operation may be sent again after it may have landed."""
        service = self.lakeformation() if operation in LAKE_FORMATION_OPERATIONS else self.glue
        return service.call(operation, subject, missing, duplicate, params, retry_safe)

    def items(self, operation: str, list_key: str, subject: str, **params: Any) -> Iterator[dict]:
        """Every item of a NextToken listing, page after page."""
        def fetch(token: str | None) -> tuple[list[dict], str | None]:
            paging: dict[str, Any] = {"NextToken": token} if token else {}
            response = self.call(operation, subject, missing=NamespaceNotFoundError, **params, **paging)
            return response[list_key], response.get("NextToken")

        return follow_pages(fetch)

    def lakeformation(self) -> AwsJsonService:
        """Lake Formation (made on first use): the driver's credentials and region, at
        `lakeformation_endpoint`, else the Glue `endpoint`, else AWS's for the region."""
        with self._lock:
            if self._lakeformation_service is None:
                self._lakeformation_service = self._service(
                    "lakeformation", self.config.lakeformation_endpoint or self.config.endpoint)
            return self._lakeformation_service

    def wait(self, seconds: float) -> None:
        """Waits through `sleep` as it is at the time (a test may replace it after the
        services were made with this method)."""
        self.sleep(seconds)

    def as_input(self, described: dict[str, Any], input_shape: str) -> dict[str, Any]:
        """A Get answer reduced to what the matching *Input shape accepts (for Update calls)."""
        return projected(described, self.glue.model.shape_for(input_shape))

    def _service(self, service: str, endpoint: str | None) -> AwsJsonService:
        return AwsJsonService(service, self.access.endpoint(service, endpoint), self.access,
                              on_request=self._on_request, sleep=self.wait)

    # --- identifiers ---------------------------------------------------------------------------

    def root_catalog_id(self) -> str:
        """`catalog_id`, or the caller's account id (one STS call per client)."""
        with self._lock:
            if self._root_id is None:
                self._root_id = self.access.caller_account()
            return self._root_id

    def catalog_id(self, chain: Identifier) -> str:
        """The CatalogId of a catalog chain below the root (the root itself for `(root,)`)."""
        root = self.root_catalog_id()
        if chain == (root,):
            return root
        catalog_id = root
        for name in chain:
            if any(sep in name for sep in CATALOG_ID_SEPARATORS):
                raise InvalidInputError(f"glue: catalog name {name!r} cannot contain '/' or ':'")
            catalog_id = f"{catalog_id}:{name}" if ACCOUNT_ID.fullmatch(catalog_id) else f"{catalog_id}/{name}"
        return catalog_id

    def namespace_refs(self, id: Identifier) -> tuple[DatabaseRef | None, str | None]:
        """What a namespace id can name: (database, CatalogId of a catalog); None where it cannot."""
        root = self.root_catalog_id()
        if len(id) <= 1:
            return None, self.catalog_id(id or (root,))
        if id[0] == root:
            return (DatabaseRef(root, id[1]), None) if len(id) == 2 else (None, None)
        parent = self.catalog_id(id[:-1])
        nested = None if any(sep in id[-1] for sep in CATALOG_ID_SEPARATORS) else self.catalog_id(id)
        return DatabaseRef(parent, id[-1]), nested

    def table_ref(self, id: Identifier) -> tuple[DatabaseRef, str]:
        """The database and name of a table id."""
        database = self.namespace_refs(id[:-1])[0] if len(id) >= 3 else None
        if database is None:
            raise InvalidInputError(f"glue: {self.subject(id)} is not a table id: tables are "
                                    "<catalog chain>$<database>$<table>")
        return database, id[-1]

    @staticmethod
    def subject(id: Identifier) -> str:
        """An id as messages name it."""
        return GlueRules.format_identifier(id) if id else "the root namespace"

    # --- lookups -------------------------------------------------------------------------------

    def resolve_namespace(self, id: Identifier) -> FoundNamespace:
        """The database (asked first) or catalog an id names; NamespaceNotFound otherwise."""
        database, catalog_id = self.namespace_refs(id)
        subject = self.subject(id)
        if database is not None:
            found = self.call("GetDatabase", subject, missing=None,
                              CatalogId=database.catalog_id, Name=database.name)
            if found is not None:
                return FoundNamespace(database.catalog_id, database.name, found["Database"])
        if catalog_id is not None:
            catalog = self.get_catalog(id, catalog_id)
            if catalog is not None:
                return FoundNamespace(catalog_id, None, catalog)
        raise NamespaceNotFoundError(f"namespace {subject} not found")

    def get_catalog(self, id: Identifier, catalog_id: str) -> dict[str, Any] | None:
        """The catalog `id` (CatalogId `catalog_id`), None where there is none."""
        found = self.call("GetCatalog", self.subject(id), missing=None, CatalogId=catalog_id)
        if found is None:
            return None
        self._known_catalogs.add(catalog_id)
        return found["Catalog"]

    def catalog_exists(self, id: Identifier, catalog_id: str) -> bool:
        """Whether the catalog `id` exists: asked of Glue unless it is the root or was seen."""
        if catalog_id == self.root_catalog_id() or catalog_id in self._known_catalogs:
            return True
        return self.get_catalog(id, catalog_id) is not None

    def delete_catalog(self, subject: str, catalog_id: str) -> None:
        """DeleteCatalog, and the catalog no longer counted as seen."""
        self.call("DeleteCatalog", subject, missing=NamespaceNotFoundError, CatalogId=catalog_id)
        self._known_catalogs.discard(catalog_id)

    def get_table(self, id: Identifier) -> dict[str, Any] | None:
        """The Glue table of a table id (Lance or not), None where there is none."""
        database, name = self.table_ref(id)
        found = self.call("GetTable", self.subject(id), missing=None,
                          CatalogId=database.catalog_id, DatabaseName=database.name, Name=name)
        return found["Table"] if found is not None else None

    def lance_table(self, id: Identifier) -> dict[str, Any]:
        """The Glue table of a table id: TableNotFound where there is none, InvalidInput where
        it is not a Lance table."""
        table = self.get_table(id)
        if table is None:
            raise TableNotFoundError(f"table {self.subject(id)} not found")
        if not is_lance(table):
            raise InvalidInputError(f"table {self.subject(id)} is not a Lance table "
                                    f"(TableType {table.get('TableType')!r}, "
                                    f"{TABLE_TYPE_KEY} {parameters_of(table).get(TABLE_TYPE_KEY)!r})")
        return table
