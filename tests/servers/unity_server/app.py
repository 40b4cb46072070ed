"""The Unity Catalog REST API and the test-only control API, independent of sockets.

`UnityApp.respond` turns one HTTP request into one `Response`:
- `/api/2.1/unity-catalog/...`: catalogs, schemas, tables and permissions as
  UC OSS serves them (an unknown path answers 404, a known path with another
  method 405, in plain text like UC's Armeria server). Every such request is
  counted.
- `/api/1.0/unity-control/scim2/Users...`: UC's SCIM user API (not counted).
- `/_test/...`: request counting and fault injection for tests; never counted.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import threading
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus

from tests.servers.unity_server import bodies, catalogs, permissions, schemas, tables, users
from tests.servers.unity_server.errors import CODE_FOR_STATUS, UcError, error_body
from tests.servers.unity_server.store import Store

API_ROOT = "/api/2.1/unity-catalog"
CONTROL_API_ROOT = "/api/1.0/unity-control"
CONTROL_ROOT = "/_test"
#: The owner UC records for calls made with its admin token.
TOKEN_PRINCIPAL = "admin"

log = logging.getLogger("unity_server")

_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)


def json_response(status: int, payload: object, headers: dict[str, str] | None = None) -> Response:
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    return Response(status, body, "application/json", headers or {})


def text_response(status: int, text: str) -> Response:
    return Response(status, text.encode(), "text/plain; charset=utf-8")


def status_text(status: int) -> Response:
    """Armeria's plain answer for a bare status, e.g. "404 Not Found"."""
    return text_response(status, f"{status} {HTTPStatus(status).phrase}")


@dataclass
class ApiRequest:
    """One API call: decoded path parameters, first value of each query parameter, raw body."""

    params: dict[str, str]
    query: dict[str, str]
    body: bytes
    caller: str | None
    authorization: bool = True

    def required(self, name: str) -> str:
        if name not in self.query:
            raise UcError("INVALID_ARGUMENT", f"Mandatory parameter/header is missing: {name}")
        return self.query[name]

    def optional_int(self, name: str) -> int | None:
        """Java's Integer.parseInt; a blank value counts as absent."""
        value = self.query.get(name, "")
        if not value:
            return None
        if not re.fullmatch(r"[+-]?\d+", value) or not -2**31 <= int(value) < 2**31:
            raise UcError("INVALID_ARGUMENT", f'For input string: "{value}"')
        return int(value)

    def flag(self, name: str) -> bool:
        value = self.query.get(name, "").lower()
        if value in ("", "false", "0"):
            return False
        if value in ("true", "1"):
            return True
        raise UcError("INVALID_ARGUMENT", f"Invalid boolean value for '{name}': {value}")


Handler = Callable[[Store, ApiRequest], object]


@dataclass(frozen=True)
class Route:
    method: str
    pattern: tuple[str, ...]  # literal segments, or "{name}" for a path parameter
    handler: Handler

    def match(self, segments: list[str]) -> dict[str, str] | None:
        if len(segments) != len(self.pattern):
            return None
        params = {}
        for expected, actual in zip(self.pattern, segments, strict=True):
            if expected.startswith("{"):
                if not actual:
                    return None
                params[expected[1:-1]] = actual
            elif expected != actual:
                return None
        return params


ROUTES = (
    Route("POST", ("catalogs",), lambda store, call: catalogs.create_catalog(
        store, call.caller, bodies.read_body(call.body, bodies.CREATE_CATALOG))),
    Route("GET", ("catalogs",), lambda store, call: catalogs.list_catalogs(
        store, call.optional_int("max_results"), call.query.get("page_token"))),
    Route("GET", ("catalogs", "{name}"), lambda store, call: catalogs.get_catalog(
        store, call.params["name"])),
    Route("PATCH", ("catalogs", "{name}"), lambda store, call: catalogs.update_catalog(
        store, call.caller, call.params["name"], bodies.read_body(call.body, bodies.UPDATE_CATALOG))),
    Route("DELETE", ("catalogs", "{name}"), lambda store, call: catalogs.delete_catalog(
        store, call.params["name"], call.flag("force"))),
    Route("POST", ("schemas",), lambda store, call: schemas.create_schema(
        store, call.caller, bodies.read_body(call.body, bodies.CREATE_SCHEMA))),
    Route("GET", ("schemas",), lambda store, call: schemas.list_schemas(
        store, call.required("catalog_name"), call.optional_int("max_results"),
        call.query.get("page_token"))),
    Route("GET", ("schemas", "{full_name}"), lambda store, call: schemas.get_schema(
        store, call.params["full_name"])),
    Route("PATCH", ("schemas", "{full_name}"), lambda store, call: schemas.update_schema(
        store, call.caller, call.params["full_name"], bodies.read_body(call.body, bodies.UPDATE_SCHEMA))),
    Route("DELETE", ("schemas", "{full_name}"), lambda store, call: schemas.delete_schema(
        store, call.params["full_name"], call.flag("force"))),
    Route("POST", ("tables",), lambda store, call: tables.create_table(
        store, call.caller, bodies.read_body(call.body, bodies.CREATE_TABLE))),
    Route("GET", ("tables",), lambda store, call: tables.list_tables(
        store, call.required("catalog_name"), call.required("schema_name"),
        call.optional_int("max_results"), call.query.get("page_token"),
        call.flag("omit_properties"), call.flag("omit_columns"))),
    Route("GET", ("tables", "{full_name}"), lambda store, call: tables.get_table(
        store, call.params["full_name"])),
    Route("DELETE", ("tables", "{full_name}"), lambda store, call: tables.delete_table(
        store, call.params["full_name"])),
    *(route for kind in permissions.SECURABLE_TYPES for route in (
        Route("GET", ("permissions", kind, "{name}"), lambda store, call, kind=kind: permissions.get_permissions(
            store, call.authorization, kind, call.params["name"])),
        Route("PATCH", ("permissions", kind, "{name}"), lambda store, call, kind=kind: permissions.update_permissions(
            store, call.authorization, kind, call.params["name"],
            bodies.read_body(call.body, bodies.UPDATE_PERMISSIONS))),
    )),
)

#: UC's SCIM2 user service, under CONTROL_API_ROOT.
CONTROL_ROUTES = (
    Route("POST", ("scim2", "Users"), lambda store, call: users.create_user(store, _json_body(call.body))),
    Route("GET", ("scim2", "Users"), lambda store, call: users.list_users(
        store, call.query.get("filter"), call.optional_int("startIndex"), call.optional_int("count"))),
    Route("GET", ("scim2", "Users", "{id}"), lambda store, call: users.get_user(store, call.params["id"])),
    Route("DELETE", ("scim2", "Users", "{id}"), lambda store, call: users.delete_user(store, call.params["id"])),
)


@dataclass
class Fault:
    """Answer the next `remaining` matching API requests with `status` instead of serving them."""

    status: int
    remaining: int
    retry_after: str | None = None
    method: str | None = None
    path_prefix: str | None = None  # relative to the API root, e.g. "/tables"

    def matches(self, method: str, api_path: str) -> bool:
        return (self.remaining > 0 and self.method in (None, method)
                and api_path.startswith(self.path_prefix or ""))

    def response(self) -> Response:
        code = CODE_FOR_STATUS[self.status]
        headers = {"Retry-After": self.retry_after} if self.retry_after is not None else {}
        return json_response(self.status, error_body(code, f"Injected by the test server: HTTP {self.status}"),
                             headers)


class UnityApp:
    def __init__(self, store: Store, token: str | None = None, authorization: bool = True) -> None:
        self._store = store
        self._token = token
        self.authorization = authorization
        if authorization:
            _initialize_admin(store)
        self._lock = threading.Lock()
        self._requests = 0
        self._faults: list[Fault] = []

    @property
    def requires_token(self) -> bool:
        return self._token is not None

    def respond(self, method: str, raw_path: str, raw_query: str, authorization: str | None,
                body: bytes) -> Response:
        if raw_path == CONTROL_ROOT or raw_path.startswith(CONTROL_ROOT + "/"):
            return self._control(method, raw_path[len(CONTROL_ROOT):], body)
        if raw_path == "/":
            return text_response(200, "Hello, Unity Catalog!")
        if raw_path.startswith(CONTROL_API_ROOT + "/"):
            return self._guarded(method, raw_path, lambda: self._serve(
                CONTROL_ROUTES, method, raw_path[len(CONTROL_API_ROOT):], raw_query, authorization, body))
        if not raw_path.startswith(API_ROOT + "/"):
            return status_text(404)
        api_path = raw_path[len(API_ROOT):]
        fault = self._count_and_take_fault(method, api_path)
        if fault is not None:
            return fault.response()
        return self._guarded(method, raw_path, lambda: self._serve(
            ROUTES, method, api_path, raw_query, authorization, body))

    def _guarded(self, method: str, raw_path: str, serve: Callable[[], Response]) -> Response:
        try:
            return serve()
        except UcError as error:
            return json_response(error.status, error_body(error.error_code, error.message))
        except users.ScimError as error:  # UC's GlobalExceptionHandler answers SCIM errors with 500
            return json_response(500, error.body)
        except Exception as error:  # answered as UC answers an unexpected exception
            log.exception("unexpected failure on %s %s", method, raw_path)
            return json_response(500, error_body("INTERNAL", str(error) or type(error).__name__))

    def _serve(self, routes: tuple[Route, ...], method: str, api_path: str, raw_query: str,
               authorization: str | None, body: bytes) -> Response:
        caller = self._authenticate(authorization)
        segments = _decoded_segments(api_path)
        if segments is None:
            return status_text(400)
        path_known = False
        for route in routes:
            params = route.match(segments)
            if params is None:
                continue
            if route.method == method:
                request = ApiRequest(params, _first_values(raw_query), body, caller, self.authorization)
                return self._call(route, request, scim=routes is CONTROL_ROUTES)
            path_known = True
        return status_text(405 if path_known else 404)

    def _call(self, route: Route, request: ApiRequest, scim: bool = False) -> Response:
        result = route.handler(self._store, request)
        # UC answers a delete with Armeria's bare "200 OK".
        if result is None:
            return status_text(200)
        if scim:  # SCIM answers are application/scim+json; a create is 201
            response = json_response(201 if route.method == "POST" else 200, result)
            response.content_type = "application/scim+json"
            return response
        return json_response(200, result)

    def _authenticate(self, authorization: str | None) -> str | None:
        """UC's AuthDecorator answers, for a server started with a token."""
        if self._token is None:
            return None
        if not authorization or not authorization.startswith("Bearer "):
            raise UcError("UNAUTHENTICATED", "No authorization found.")
        if not hmac.compare_digest(authorization[len("Bearer "):].encode(), self._token.encode()):
            raise UcError("UNAUTHENTICATED", "Invalid access token.")
        return TOKEN_PRINCIPAL

    def _count_and_take_fault(self, method: str, api_path: str) -> Fault | None:
        with self._lock:
            self._requests += 1
            for fault in self._faults:
                if fault.matches(method, api_path):
                    fault.remaining -= 1
                    return fault
        return None

    def _control(self, method: str, path: str, body: bytes) -> Response:
        """`GET|DELETE /_test/requests`: read or reset the count of API requests;
        `POST|DELETE /_test/faults`: add a fault (JSON: status, count, retry_after,
        method, path_prefix) or clear them all."""
        with self._lock:
            if path == "/requests" and method in ("GET", "DELETE"):
                if method == "DELETE":
                    self._requests = 0
                return json_response(200, {"count": self._requests})
            if path == "/faults" and method == "DELETE":
                self._faults.clear()
                return json_response(200, {"pending": 0})
            if path == "/faults" and method == "POST":
                fault = _parse_fault(body)
                if fault is None:
                    return text_response(400, f"a fault needs a status among {sorted(CODE_FOR_STATUS)}")
                self._faults.append(fault)
                return json_response(200, {"pending": sum(item.remaining for item in self._faults)})
        return status_text(404)


def _parse_fault(body: bytes) -> Fault | None:
    try:
        spec = json.loads(body or b"{}")
        fault = Fault(
            status=int(spec["status"]), remaining=int(spec.get("count", 1)),
            retry_after=None if spec.get("retry_after") is None else str(spec["retry_after"]),
            method=spec.get("method"), path_prefix=spec.get("path_prefix"),
        )
    except (ValueError, KeyError, TypeError):
        return None
    return fault if fault.status in CODE_FOR_STATUS else None


def _initialize_admin(store: Store) -> None:
    """UC's UnityAccessUtil.initializeAdmin: with authorization on, a user `admin` exists and owns
    the metastore (OWNER is implicit here: every caller acts as that owner)."""
    with store.transaction("Failed to initialize admin") as db:
        if db.execute("SELECT 1 FROM users WHERE email = ?", (TOKEN_PRINCIPAL,)).fetchone() is None:
            users.insert_user(db, str(uuid.uuid4()), "Admin", TOKEN_PRINCIPAL, None)


def _json_body(raw: bytes) -> object:
    try:
        return json.loads(raw.decode("utf-8")) if raw.strip() else None
    except (UnicodeDecodeError, ValueError) as error:
        raise UcError("INVALID_ARGUMENT", f"Failed to parse JSON request body: {error}") from error


def _first_values(raw_query: str) -> dict[str, str]:
    parsed = urllib.parse.parse_qs(raw_query, keep_blank_values=True)
    return {name: values[0] for name, values in parsed.items()}


def _decoded_segments(api_path: str) -> list[str] | None:
    """Path segments after the API root, percent-decoded; None for a malformed escape."""
    segments = api_path.split("/")[1:]
    if any(_BAD_ESCAPE.search(segment) for segment in segments):
        return None
    try:
        return [urllib.parse.unquote(segment, errors="strict") for segment in segments]
    except UnicodeDecodeError:
        return None
