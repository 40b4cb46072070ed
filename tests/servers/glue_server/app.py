"""The WSGI application: test-only control paths, the Glue JSON protocol in front of moto, and
Lake Formation's permission calls (lakeformation.py) on the same port.

Each Glue request is counted, must be signed (SigV4, checked as AWS checks it:
signatures.py), may be answered by an injected fault, is checked
against Glue's input constraints, and is then handled by moto's Glue handler
(extended in responses.py) under one lock, since moto's backends are not
thread-safe. Control paths live under CONTROL_PREFIX and are not counted:

    GET    /_lance_sync/requests   {"total": N, "by_operation": {"GetTables": n, ...}}
    DELETE /_lance_sync/requests   reset the counts
    GET    /_lance_sync/faults     the active fault rules
    POST   /_lance_sync/faults     add a rule (see control.py)
    DELETE /_lance_sync/faults     remove every rule
    POST   /_lance_sync/catalogs   {"ParentCatalogId", "Name", "CatalogInput"}: seed a child catalog
    POST   /_lance_sync/tables     {"CatalogId", "DatabaseName", "TableInputs": [...]}: many CreateTable
                                   calls in one request (large estates for benchmarks), each one
                                   checked and stored exactly as CreateTable does; not counted
    POST   /_lance_sync/reset      forget all catalogs, databases, tables, grants, counts and faults

Lake Formation is REST-JSON: boto3's `lakeformation` client with this server as
`endpoint_url` sends `POST /GrantPermissions` and so on. The older JSON form
(`POST /` with `X-Amz-Target: AWSLakeFormation.GrantPermissions`) is accepted too.
Lake Formation calls are counted, faulted and checked like Glue calls.
"""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask
from moto.core.exceptions import JsonRESTError
from moto.core.utils import convert_to_flask_response
from moto.moto_server.werkzeug_app import BackendRequest

from tests.servers.glue_server import CONTROL_PREFIX
from tests.servers.glue_server.catalogs import CatalogTree
from tests.servers.glue_server.control import FaultInjector, FaultRule, RequestCounter
from tests.servers.glue_server.errors import GlueError
from tests.servers.glue_server.lakeformation import DELETING_GLUE_OPERATIONS, LakeFormation
from tests.servers.glue_server.responses import CatalogScopedGlueResponse, fold_names
from tests.servers.glue_server.signatures import check_signature
from tests.servers.glue_server.validation import service_model, validate

GLUE_TARGET_PREFIX = "AWSGlue."
LAKEFORMATION_TARGET_PREFIX = "AWSLakeFormation."
#: Paths of Lake Formation's REST-JSON operations: "/" + operation name.
LAKEFORMATION_PATHS = frozenset(
    f"/{name}" for name in service_model("lakeformation").operation_names
)

log = logging.getLogger("glue_server")


class GlueFrontend:
    def __init__(self, catalogs: CatalogTree):
        self.catalogs = catalogs
        self.counter = RequestCounter()
        self.faults = FaultInjector()
        self.lakeformation = LakeFormation(catalogs)
        self._moto = _moto_glue_app(catalogs)
        self._lock = threading.Lock()
        self._control_routes: dict[tuple[str, str], Callable[[dict], Any]] = {
            ("GET", "/requests"): lambda _: self.counter.snapshot(),
            ("DELETE", "/requests"): lambda _: self.counter.reset(),
            ("GET", "/faults"): lambda _: self.faults.rules(),
            ("POST", "/faults"): self._add_fault,
            ("DELETE", "/faults"): lambda _: self.faults.clear(),
            ("POST", "/catalogs"): self._seed_catalog,
            ("POST", "/tables"): self._seed_tables,
            ("POST", "/reset"): self._reset,
        }

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "").startswith(CONTROL_PREFIX):
            return self._control(environ, start_response)
        if environ.get("PATH_INFO", "") in LAKEFORMATION_PATHS or environ.get(
            "HTTP_X_AMZ_TARGET", ""
        ).startswith(LAKEFORMATION_TARGET_PREFIX):
            return self._lakeformation(environ, start_response)
        return self._glue(environ, start_response)

    def _glue(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        operation = target.removeprefix(GLUE_TARGET_PREFIX)
        self.counter.record(operation)
        body = _read_body(environ)
        respond = _logging(operation, start_response)
        try:
            check_signature(environ, body, "glue")
            if not target.startswith(GLUE_TARGET_PREFIX):
                raise GlueError("UnknownOperationException", f"Unknown target {target!r}.")
            params = _json_object(body)
            self.faults.raise_if_injected(operation, params)
            validate(operation, params)
        except GlueError as error:
            return error(environ, respond)
        with self._lock:
            answer = self._moto(environ, respond)
            if operation in DELETING_GLUE_OPERATIONS:
                self.lakeformation.prune()
            return answer

    def _lakeformation(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if target.startswith(LAKEFORMATION_TARGET_PREFIX):
            operation = target.removeprefix(LAKEFORMATION_TARGET_PREFIX)
        else:
            operation = environ["PATH_INFO"].removeprefix("/")
        self.counter.record(operation)
        body = _read_body(environ)
        respond = _logging(operation, start_response)
        try:
            check_signature(environ, body, "lakeformation")
            params = _json_object(body)
            self.faults.raise_if_injected(operation, params)
            validate(operation, params, service="lakeformation")
            with self._lock:
                answer = self.lakeformation.handle(operation, params)
        except GlueError as error:
            return error(environ, respond)
        return _json_answer(respond, "200 OK", answer)

    def _control(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        route = (environ["REQUEST_METHOD"], environ["PATH_INFO"].removeprefix(CONTROL_PREFIX))
        handler = self._control_routes.get(route)
        if handler is None:
            return _json_answer(
                start_response, "404 Not Found", {"error": f"no control route {route}"}
            )
        try:
            body = _read_body(environ)
            answer = handler(_json_object(body) if body else {})
        except GlueError as error:
            return _json_answer(start_response, "400 Bad Request", {"error": error.message})
        except (KeyError, TypeError, ValueError) as error:
            return _json_answer(start_response, "400 Bad Request", {"error": repr(error)})
        return _json_answer(start_response, "200 OK", answer)

    def _add_fault(self, spec: dict) -> dict:
        rule = FaultRule.from_json(spec)
        self.faults.add(rule)
        return rule.as_json()

    def _seed_catalog(self, spec: dict) -> dict:
        """Create a child catalog, as a federated source (S3 Tables, Redshift) does in real Glue."""
        name = spec["Name"]
        if not name or "/" in name:
            raise ValueError(f"invalid catalog name {name!r}")
        with self._lock:
            parent = self.catalogs.get(spec["ParentCatalogId"])
            catalog = self.catalogs.create(parent, name, spec.get("CatalogInput", {}))
            return {"CatalogId": self.catalogs.catalog_id(catalog)}

    def _seed_tables(self, spec: dict) -> dict:
        """CreateTable for each TableInput: the same input checks, name folding and moto
        create_table as a CreateTable request, without one HTTP round trip per table."""
        catalog = {"CatalogId": spec["CatalogId"]} if spec.get("CatalogId") else {}
        requests = [{**catalog, "DatabaseName": spec["DatabaseName"], "TableInput": table}
                    for table in spec["TableInputs"]]
        for params in requests:
            validate("CreateTable", params)
        with self._lock:
            for created, params in enumerate(requests):
                folded = fold_names("CreateTable", params)
                backend = self.catalogs.get(folded.get("CatalogId")).backend
                try:
                    backend.create_table(folded["DatabaseName"], folded["TableInput"]["Name"], folded["TableInput"])
                except JsonRESTError as error:  # moto's answer to that CreateTable
                    raise ValueError(f"table {created} ({folded['TableInput']['Name']}) and those after it "
                                     f"not created: {error.description}") from error
        return {"created": len(requests)}

    def _reset(self, _: dict) -> None:
        with self._lock:
            self.catalogs.reset()
            self.lakeformation.reset()
        self.counter.reset()
        self.faults.clear()


def _moto_glue_app(catalogs: CatalogTree) -> Flask:
    """moto's server plumbing (request normalisation, serialisation) around our Glue handler."""
    app = Flask("glue_server")
    app.request_class = BackendRequest

    def dispatch(request: Any, full_url: str, headers: Any) -> Any:
        return CatalogScopedGlueResponse(catalogs)._dispatch(request, full_url, headers)

    app.add_url_rule("/", "glue", convert_to_flask_response(dispatch), methods=["POST"])
    return app


def _read_body(environ: dict) -> bytes:
    """Read the request body and put it back, so the next WSGI layer can read it again."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    return body


def _json_object(body: bytes) -> dict:
    try:
        value = json.loads(body or b"{}")
    except ValueError as error:
        raise GlueError("SerializationException", "The request body is not valid JSON.") from error
    if not isinstance(value, dict):
        raise GlueError("SerializationException", "The request body is not a JSON object.")
    return value


def _json_answer(start_response: Callable, status: str, payload: Any) -> list[bytes]:
    body = json.dumps(payload).encode()
    start_response(
        status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    )
    return [body]


def _logging(operation: str, start_response: Callable) -> Callable:
    """start_response that also logs the operation and its status, one line per Glue call."""

    def respond(status: str, headers: list, exc_info: Any = None) -> Any:
        log.info("%s %s", operation or "-", status)
        return start_response(status, headers, exc_info)

    return respond
