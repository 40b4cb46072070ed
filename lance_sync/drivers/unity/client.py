"""The one client of a Unity Catalog REST API that the driver and its grants share: the HTTP
transport, the translation of error answers, and lance-sync ids resolved to UC names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

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

from lance_sync.drivers.base import Identifier, secret_value
from lance_sync.drivers.support.http import HttpClient, HttpFailure, transient_if_5xx
from lance_sync.drivers.unity.config import UnityConfig
from lance_sync.drivers.unity.grants import SECURABLE_TYPES, SecurableType, permissions_error_class
from lance_sync.model.grants import Securable

BACKEND = "unity"

#: UC `error_code` -> Lance error; FAILED_PRECONDITION is what UC answers for deleting a
#: non-empty schema, the only precondition it checks on the calls this driver makes.
ERRORS_BY_CODE: dict[str, type[LanceNamespaceError]] = {
    "CATALOG_NOT_FOUND": NamespaceNotFoundError,
    "SCHEMA_NOT_FOUND": NamespaceNotFoundError,
    "TABLE_NOT_FOUND": TableNotFoundError,
    "CATALOG_ALREADY_EXISTS": NamespaceAlreadyExistsError,
    "SCHEMA_ALREADY_EXISTS": NamespaceAlreadyExistsError,
    "TABLE_ALREADY_EXISTS": TableAlreadyExistsError,
    "FAILED_PRECONDITION": NamespaceNotEmptyError,
    "INVALID_ARGUMENT": InvalidInputError,
    "UNAUTHENTICATED": UnauthenticatedError,
    "PERMISSION_DENIED": PermissionDeniedError,
    "ABORTED": ConcurrentModificationError,
    "RESOURCE_EXHAUSTED": ThrottlingError,
    "UNIMPLEMENTED": UnsupportedOperationError,
    "UNAVAILABLE": ServiceUnavailableError,
}
#: for answers without a UC error body
ERRORS_BY_STATUS: dict[int, type[LanceNamespaceError]] = {
    400: InvalidInputError,
    401: UnauthenticatedError,
    403: PermissionDeniedError,
    501: UnsupportedOperationError,
    503: ServiceUnavailableError,
}


class UnityClient:
    """Sends the calls of one Unity Catalog endpoint, each counted by `on_request`, for the
    configured catalog.

    `request` is the one way a call goes out; its error answer is translated at the boundary
    (`translate`): UC 0.4+ names the object in `error_code` (SCHEMA_NOT_FOUND,
    TABLE_ALREADY_EXISTS with HTTP 400, ...); older servers answer NOT_FOUND / 409
    ALREADY_EXISTS, and the request path says which kind of object was meant.
    """

    def __init__(self, config: UnityConfig, on_request: Callable[[], None]) -> None:
        self.catalog = config.catalog
        token = secret_value(config.auth_token)
        auth_headers = {"Authorization": f"Bearer {token}"} if token else {}
        connect_timeout, read_timeout = config.timeout_seconds()
        self.http = HttpClient(
            config.endpoint + "/" + config.api_path.strip("/"), backend=BACKEND,
            connect_timeout=connect_timeout, read_timeout=read_timeout, max_retries=config.max_retries,
            translate=self.translate, headers=lambda: auth_headers, on_request=on_request,
        )

    def request(self, method: str, path: str, **request: Any) -> Any:
        """One API call (HttpClient.request: `expect`, `params`, `json`, `retry_safe`), its error
        answer translated."""
        return self.http.request(method, path, **request)

    # --- error answers ---------------------------------------------------------------------------

    def translate(self, failure: HttpFailure) -> LanceNamespaceError:
        body = failure.body if isinstance(failure.body, dict) else {}
        code = str(body.get("error_code") or "")
        if code in ("NOT_FOUND", "ALREADY_EXISTS"):
            error_class = self._generic_error_class(code, failure)
        elif not code and failure.status == 404:
            # a bare 404 is a path the server does not know, not a missing object
            return InternalError(f"unity: {failure.message()} (is this a Unity Catalog API? "
                                 f"check endpoint and api_path)")
        else:
            error_class = ERRORS_BY_CODE.get(code) or ERRORS_BY_STATUS.get(failure.status, InternalError)
        return transient_if_5xx(error_class, failure.status)(f"unity: {failure.message()}")

    def _generic_error_class(self, code: str, failure: HttpFailure) -> type[LanceNamespaceError]:
        """UC before 0.5 says only NOT_FOUND / ALREADY_EXISTS: the request tells what was meant."""
        path = failure.url[len(self.http.base_url):]
        if code == "NOT_FOUND" and (on_grants := permissions_error_class(path, failure)):
            return on_grants
        names_a_table = path.startswith("/tables/") or (path == "/tables" and code == "ALREADY_EXISTS")
        if code == "NOT_FOUND":
            return TableNotFoundError if names_a_table and failure.method != "POST" else NamespaceNotFoundError
        return TableAlreadyExistsError if names_a_table else NamespaceAlreadyExistsError

    # --- identifiers -----------------------------------------------------------------------------

    def namespace_parts(self, id: list[str] | Identifier | None) -> tuple[str, ...]:
        """[], [catalog] or [catalog, schema]; another catalog is NamespaceNotFound."""
        parts = tuple(id or ())
        if len(parts) > 2:
            raise InvalidInputError(f"unity: namespaces have at most 2 levels (catalog, schema): {list(parts)}")
        if parts:
            self._check_names(parts, NamespaceNotFoundError)
        return parts

    def schema_name(self, id: list[str] | Identifier | None,
                    other_catalog: type[LanceNamespaceError]) -> tuple[str, str]:
        """(catalog, schema) of a namespace id; another catalog is `other_catalog`."""
        parts = tuple(id or ())
        if len(parts) != 2:
            raise InvalidInputError(f"unity: a namespace id is [catalog, schema], got {list(parts)}")
        self._check_names(parts, other_catalog)
        return parts[0], parts[1]

    def table_name(self, id: list[str] | Identifier | None,
                   other_catalog: type[LanceNamespaceError]) -> tuple[str, str, str]:
        """(catalog, schema, table) of a table id; another catalog is `other_catalog`."""
        parts = tuple(id or ())
        if len(parts) != 3:
            raise InvalidInputError(f"unity: a table id is [catalog, schema, table], got {list(parts)}")
        self._check_names(parts, other_catalog)
        return parts[0], parts[1], parts[2]

    def _check_names(self, parts: tuple[str, ...], other_catalog: type[LanceNamespaceError]) -> None:
        # UC addresses objects by dot-joined full names, so a name with a dot names another object.
        if any(not part or "." in part for part in parts):
            raise InvalidInputError(f"unity: names must be non-empty and cannot contain '.': {list(parts)}")
        if parts[0] != self.catalog:
            raise other_catalog(f"unity: catalog '{parts[0]}' is not the configured catalog '{self.catalog}'")

    def securable(self, kind: Securable, id: Identifier) -> tuple[SecurableType, str]:
        """UC's securable type and full name: (catalog,), (catalog, schema) or a table id."""
        if kind == "table":
            parts: tuple[str, ...] = self.table_name(id, other_catalog=TableNotFoundError)
        else:
            parts = self.namespace_parts(id)
            if not parts:
                raise InvalidInputError("unity: the root holds no grants; name a catalog or a schema")
        return SECURABLE_TYPES[len(parts)], full_name(*parts)


def full_name(*names: str) -> str:
    """UC's dot-joined name of an object, as a path segment."""
    return quote(".".join(names), safe=".")
