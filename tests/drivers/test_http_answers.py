"""Answers of HTTP servers are checked where they enter the Iceberg and Unity drivers.

A small scripted server on 127.0.0.1 answers canned replies per route: good ones by default,
and for the route under test a wrong shape, an HTML page, a body cut short, a dropped
connection or a throttle. Every read call of both drivers must then fail with a
LanceNamespaceError that names the backend and the call, after the configured retries, and
never read as an empty result; a garbled answer followed by a good one must succeed; a POST
whose answer is lost must not be sent again.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
import urllib3
from lance_namespace import (
    CreateNamespaceRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    ListNamespacesRequest,
    ListTablesRequest,
)
from lance_namespace.errors import (
    InternalError,
    LanceNamespaceError,
    NamespaceNotFoundError,
    ServiceUnavailableError,
    ThrottlingError,
)

from lance_sync.drivers.iceberg.driver import IcebergNamespace
from lance_sync.drivers.support.answers import UnfitAnswer
from lance_sync.drivers.support.http import HttpClient, HttpFailure
from lance_sync.drivers.support.retry import BadAnswerError, TransientError, is_transient
from lance_sync.drivers.unity.driver import UnityNamespace
from lance_sync.model import secrets
from tests.support.scripted_http import (
    API,
    HTML,
    UNITY_ROUTES,
    UNITY_TABLE,
    Reply,
    ScriptedServer,
    cut,
    js,
)

MAX_RETRIES = 2
ATTEMPTS = MAX_RETRIES + 1
TOKEN = "tok-never-shown-9d2e"
WH = "wh"


# --- the scripted server -------------------------------------------------------------------------


DROP = Reply(drop=True)


@pytest.fixture
def servers() -> Iterator[Callable[[dict[str, Reply]], ScriptedServer]]:
    started: list[ScriptedServer] = []

    def start(defaults: dict[str, Reply]) -> ScriptedServer:
        started.append(ScriptedServer(defaults))
        return started[-1]

    yield start
    for server in started:
        server.close()


# --- the two backends: good answers, and the read calls that use them --------------------------

ICEBERG_TABLE = {"metadata-location": "/data/t/metadata/v1.json",
                 "metadata": {"format-version": 2, "table-uuid": "uuid-1", "location": "/data/t",
                              "properties": {"table_type": "lance"}}}
ICEBERG_ROUTES = {
    "GET /v1/config": js({"defaults": {"prefix": "p"}, "overrides": {}}),
    "GET /v1/p/namespaces": js({"namespaces": [["ns"]]}),
    "GET /v1/p/namespaces/ns": js({"namespace": ["ns"], "properties": {"a": "1"}}),
    "GET /v1/p/namespaces/ns/tables": js({"identifiers": [{"namespace": ["ns"], "name": "t"}]}),
    "GET /v1/p/namespaces/ns/tables/t": js(ICEBERG_TABLE),
    "POST /v1/oauth/tokens": js({"access_token": "issued-1", "token_type": "bearer", "expires_in": 3600}),
}


def iceberg(server: ScriptedServer, tmp_path: Path, **properties: Any) -> IcebergNamespace:
    return IcebergNamespace(endpoint=server.endpoint, root=str(tmp_path), max_retries=MAX_RETRIES,
                            **properties)


def unity(server: ScriptedServer, tmp_path: Path, **properties: Any) -> UnityNamespace:
    return UnityNamespace(endpoint=server.endpoint, catalog="main", root=str(tmp_path),
                          max_retries=MAX_RETRIES, **properties)


def http_of(driver: IcebergNamespace | UnityNamespace) -> HttpClient:
    return driver.client.http


def record_sleeps(driver: IcebergNamespace | UnityNamespace) -> list[float]:
    sleeps: list[float] = []
    http_of(driver).sleep = sleeps.append
    return sleeps


@dataclass(frozen=True)
class ReadCall:
    backend: str
    name: str
    route: str
    run: Callable[[Any], Any]
    wrong_type: Any  # a body whose members have the wrong type
    good: Any


def _iceberg(name: str, route: str, run: Callable[[IcebergNamespace], Any], wrong_type: Any) -> ReadCall:
    return ReadCall("iceberg", name, route, run, wrong_type, json.loads(ICEBERG_ROUTES[route].body))


def _unity(name: str, route: str, run: Callable[[UnityNamespace], Any], wrong_type: Any) -> ReadCall:
    return ReadCall("unity", name, route, run, wrong_type, json.loads(UNITY_ROUTES[route].body))


READ_CALLS = [
    _iceberg("config", "GET /v1/config",
             lambda d: d.list_namespaces(ListNamespacesRequest(id=[WH])),
             {"defaults": {"prefix": "p"}, "overrides": ["prefix", "p"]}),
    _iceberg("list namespaces", "GET /v1/p/namespaces",
             lambda d: d.list_namespaces(ListNamespacesRequest(id=[WH])),
             {"namespaces": ["ns"]}),
    _iceberg("namespace infos", "GET /v1/p/namespaces",
             lambda d: list(d.list_namespace_infos((WH,))),
             {"namespaces": [["ns"]], "next-page-token": 7}),
    _iceberg("describe namespace", "GET /v1/p/namespaces/ns",
             lambda d: d.describe_namespace(DescribeNamespaceRequest(id=[WH, "ns"])),
             {"namespace": ["ns"], "properties": {"a": 1}}),
    _iceberg("list tables", "GET /v1/p/namespaces/ns/tables",
             lambda d: d.list_tables(ListTablesRequest(id=[WH, "ns"])),
             {"identifiers": [{"namespace": ["ns"], "name": 5}]}),
    _iceberg("table infos", "GET /v1/p/namespaces/ns/tables",
             lambda d: list(d.list_table_infos((WH, "ns"))),
             {"identifiers": {"namespace": ["ns"], "name": "t"}}),
    _iceberg("load table", "GET /v1/p/namespaces/ns/tables/t",
             lambda d: d.describe_table(DescribeTableRequest(id=[WH, "ns", "t"])),
             {"metadata": {"format-version": "2", "table-uuid": "uuid-1", "location": "/data/t"}}),
    _iceberg("load table in a listing", "GET /v1/p/namespaces/ns/tables/t",
             lambda d: list(d.list_table_infos((WH, "ns"))),
             {"metadata": {"format-version": 2, "table-uuid": "uuid-1", "location": ["/data/t"]}}),
    _unity("catalog", f"GET {API}/catalogs/main",
           lambda d: d.describe_namespace(DescribeNamespaceRequest(id=["main"])),
           {"name": "main", "properties": [["a", "1"]]}),
    _unity("list schemas", f"GET {API}/schemas",
           lambda d: d.list_namespaces(ListNamespacesRequest(id=["main"])),
           {"schemas": {"name": "s"}}),
    _unity("schema infos", f"GET {API}/schemas",
           lambda d: list(d.list_namespace_infos(("main",))),
           {"schemas": [{"name": None}]}),
    _unity("describe schema", f"GET {API}/schemas/main.s",
           lambda d: d.describe_namespace(DescribeNamespaceRequest(id=["main", "s"])),
           {"name": ["s"], "properties": {}}),
    _unity("list tables", f"GET {API}/tables",
           lambda d: d.list_tables(ListTablesRequest(id=["main", "s"])),
           {"tables": [{**UNITY_TABLE, "properties": ["table_type"]}]}),
    _unity("table infos", f"GET {API}/tables",
           lambda d: list(d.list_table_infos(("main", "s"))),
           {"tables": [UNITY_TABLE], "next_page_token": 100}),
    _unity("get table", f"GET {API}/tables/main.s.t",
           lambda d: d.describe_table(DescribeTableRequest(id=["main", "s", "t"])),
           {**UNITY_TABLE, "storage_location": 1}),
]

BAD_ANSWERS: dict[str, Callable[[ReadCall], Reply]] = {
    "hello world": lambda call: js({"hello": "world"}),
    "a list": lambda call: js([call.good]),
    "a member of the wrong type": lambda call: js(call.wrong_type),
    "an HTML page": lambda call: HTML,
    "a body cut short": lambda call: cut(call.good),
    "an empty body": lambda call: Reply(body=b""),
}


def start_backend(servers, call: ReadCall, tmp_path: Path, **properties: Any):
    server = servers(ICEBERG_ROUTES if call.backend == "iceberg" else UNITY_ROUTES)
    make = iceberg if call.backend == "iceberg" else unity
    return server, make(server, tmp_path, **properties)


def call_id(call: ReadCall) -> str:
    return f"{call.backend}-{call.name}".replace(" ", "_")


# --- every read call: a bad answer is an error, after the retries ---------------------------------


@pytest.mark.parametrize("bad", list(BAD_ANSWERS), ids=lambda bad: bad.replace(" ", "_"))
@pytest.mark.parametrize("call", READ_CALLS, ids=call_id)
def test_a_bad_answer_is_an_error_after_the_retries(servers, tmp_path, call: ReadCall, bad: str):
    server, driver = start_backend(servers, call, tmp_path)
    server.script(call.route, BAD_ANSWERS[bad](call))
    sleeps = record_sleeps(driver)

    with pytest.raises(LanceNamespaceError) as raised:
        call.run(driver)

    error = raised.value
    assert not isinstance(error, requests.RequestException)
    assert isinstance(error, BadAnswerError) and is_transient(error)
    assert str(error).startswith(f"{call.backend}: {call.route} answered ")
    assert str(error).endswith(f" after {ATTEMPTS} attempts")
    assert server.seen[call.route] == ATTEMPTS and len(sleeps) == MAX_RETRIES


def test_what_a_bad_answer_says(servers, tmp_path):
    server = servers(ICEBERG_ROUTES)
    driver = iceberg(server, tmp_path)
    record_sleeps(driver)
    expected = {
        cut({"namespaces": [["ns"]]}): "a body cut short (1200 of 4096 bytes)",
        HTML: "a body that is not JSON (text/html: str '<html><body><h1>502 Bad Gateway</h1>proxy</body></html>')",
        js({"hello": "world"}): "an unexpected shape: namespaces: field required",
        js({"namespaces": "ns"}): "an unexpected shape: namespaces: input should be a valid list",
        js([["ns"]]): """list "[['ns']]", not a JSON object""",
    }
    for reply, what in expected.items():
        server.script("GET /v1/p/namespaces", reply)
        with pytest.raises(BadAnswerError) as raised:
            driver.list_namespaces(ListNamespacesRequest(id=[WH]))
        assert str(raised.value) == f"iceberg: GET /v1/p/namespaces answered {what} after {ATTEMPTS} attempts"


# --- a garbled answer, then a good one ----------------------------------------------------------


@pytest.mark.parametrize("bad", ["a body cut short", "an HTML page", "hello world"],
                         ids=lambda bad: bad.replace(" ", "_"))
@pytest.mark.parametrize("call", READ_CALLS, ids=call_id)
def test_a_read_is_retried_until_the_answer_is_good(servers, tmp_path, call: ReadCall, bad: str):
    server, driver = start_backend(servers, call, tmp_path)
    server.script(call.route, BAD_ANSWERS[bad](call), js(call.good))
    sleeps = record_sleeps(driver)

    result = call.run(driver)

    assert result is not None
    assert server.seen[call.route] == 2 and len(sleeps) == 1


def test_a_dropped_read_is_sent_again(servers, tmp_path):
    server = servers(UNITY_ROUTES)
    driver = unity(server, tmp_path)
    server.script(f"GET {API}/schemas", DROP, UNITY_ROUTES[f"GET {API}/schemas"])
    record_sleeps(driver)
    assert driver.list_namespaces(ListNamespacesRequest(id=["main"])).namespaces == ["s"]
    assert server.seen[f"GET {API}/schemas"] == 2


def test_a_dropped_read_to_the_end_is_unavailable(servers, tmp_path):
    server = servers(ICEBERG_ROUTES)
    driver = iceberg(server, tmp_path)
    server.script("GET /v1/p/namespaces/ns", DROP)
    record_sleeps(driver)
    with pytest.raises(TransientError) as raised:
        driver.describe_namespace(DescribeNamespaceRequest(id=[WH, "ns"]))
    assert str(raised.value) == ("iceberg: GET /v1/p/namespaces/ns lost the connection before the answer "
                                 f"(the server closed the connection) after {ATTEMPTS} attempts")
    assert server.seen["GET /v1/p/namespaces/ns"] == ATTEMPTS


def test_a_read_timeout_is_retried_then_unavailable(servers, tmp_path):
    server = servers(ICEBERG_ROUTES)
    driver = iceberg(server, tmp_path, read_timeout=200)
    server.script("GET /v1/p/namespaces", Reply(body=b'{"namespaces": []}', delay=0.6))
    record_sleeps(driver)
    with pytest.raises(ServiceUnavailableError, match=r"GET /v1/p/namespaces timed out .* after 3 attempts"):
        driver.list_namespaces(ListNamespacesRequest(id=[WH]))
    assert server.seen["GET /v1/p/namespaces"] == ATTEMPTS


# --- throttling ---------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["iceberg", "unity"])
def test_retry_after_is_honoured(servers, tmp_path, backend):
    call = next(c for c in READ_CALLS if c.backend == backend and c.name.startswith("list"))
    server, driver = start_backend(servers, call, tmp_path)
    server.script(call.route, js({"error": "slow down"}, 429, **{"Retry-After": "1"}), js(call.good))
    sleeps = record_sleeps(driver)

    call.run(driver)

    assert sleeps == [1.0] and server.seen[call.route] == 2


def test_retry_after_as_an_http_date(servers, tmp_path):
    server = servers(ICEBERG_ROUTES)
    driver = iceberg(server, tmp_path)
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    server.script("GET /v1/p/namespaces", js({}, 503, **{"Retry-After": later}), js({"namespaces": []}))
    sleeps = record_sleeps(driver)

    assert driver.list_namespaces(ListNamespacesRequest(id=[WH])).namespaces == []
    assert len(sleeps) == 1 and 25 <= sleeps[0] <= 31


# --- writes: sent once unless the server cannot have acted --------------------------------------


WRITES = {
    "iceberg": ("POST /v1/p/namespaces",
                lambda d: d.create_namespace(CreateNamespaceRequest(id=[WH, "new"]))),
    "unity": (f"POST {API}/schemas",
              lambda d: d.create_namespace(CreateNamespaceRequest(id=["main", "new"]))),
}


@pytest.mark.parametrize("reply", [DROP, cut({"namespace": ["new"], "name": "new", "properties": {}})],
                         ids=["dropped", "cut_short"])
@pytest.mark.parametrize("backend", ["iceberg", "unity"])
def test_a_post_whose_answer_is_lost_is_not_sent_again(servers, tmp_path, backend, reply):
    server = servers(ICEBERG_ROUTES if backend == "iceberg" else UNITY_ROUTES)
    driver = (iceberg if backend == "iceberg" else unity)(server, tmp_path)
    route, write = WRITES[backend]
    server.script(route, reply)
    sleeps = record_sleeps(driver)

    with pytest.raises(TransientError) as raised:
        write(driver)

    assert isinstance(raised.value, ServiceUnavailableError)
    assert str(raised.value).startswith(f"{backend}: {route} ")
    assert str(raised.value).endswith("; the server may have carried it out, so it was not sent again")
    assert server.seen[route] == 1 and sleeps == []


@pytest.mark.parametrize("backend", ["iceberg", "unity"])
def test_a_post_with_a_malformed_success_is_not_sent_again(servers, tmp_path, backend):
    server = servers(ICEBERG_ROUTES if backend == "iceberg" else UNITY_ROUTES)
    driver = (iceberg if backend == "iceberg" else unity)(server, tmp_path)
    route, write = WRITES[backend]
    server.script(route, js({"hello": "world"}))

    with pytest.raises(BadAnswerError, match="the server carried the request out, so it was not sent again"):
        write(driver)
    assert server.seen[route] == 1


@pytest.mark.parametrize("backend", ["iceberg", "unity"])
def test_a_post_refused_with_503_is_sent_again(servers, tmp_path, backend):
    server = servers(ICEBERG_ROUTES if backend == "iceberg" else UNITY_ROUTES)
    driver = (iceberg if backend == "iceberg" else unity)(server, tmp_path)
    route, write = WRITES[backend]
    created = {"namespace": ["new"], "properties": {}} if backend == "iceberg" else \
        {"name": "new", "catalog_name": "main", "properties": {}}
    server.script(route, js({}, 503), js(created))
    record_sleeps(driver)

    write(driver)
    assert server.seen[route] == 2


def test_a_delete_whose_answer_was_lost_meets_404_and_is_done(servers, tmp_path):
    server = servers(UNITY_ROUTES)
    driver = unity(server, tmp_path)
    route = f"DELETE {API}/schemas/main.s"
    server.script(route, DROP, js({"error_code": "SCHEMA_NOT_FOUND", "message": "Schema not found"}, 404))
    record_sleeps(driver)

    driver.drop_namespace(DropNamespaceRequest(id=["main", "s"]))
    assert server.seen[route] == 2


def test_a_delete_that_meets_404_at_once_is_not_found(servers, tmp_path):
    server = servers(UNITY_ROUTES)
    driver = unity(server, tmp_path)
    server.script(f"DELETE {API}/schemas/main.s",
                  js({"error_code": "SCHEMA_NOT_FOUND", "message": "Schema not found"}, 404))
    with pytest.raises(NamespaceNotFoundError):
        driver.drop_namespace(DropNamespaceRequest(id=["main", "s"]))


def test_an_iceberg_deregister_whose_answer_was_lost_is_done(servers, tmp_path):
    server = servers(ICEBERG_ROUTES)
    driver = iceberg(server, tmp_path)
    route = "DELETE /v1/p/namespaces/ns/tables/t"
    server.script(route, DROP, js({"error": {"message": "gone", "type": "NoSuchTableException", "code": 404}}, 404))
    record_sleeps(driver)

    assert driver.deregister_table(DeregisterTableRequest(id=[WH, "ns", "t"])).location == "/data/t"
    assert server.seen[route] == 2


def test_a_unity_schema_patch_is_sent_again_after_a_lost_answer(servers, tmp_path):
    """The PATCH carries the whole properties map: sending it again leaves the same state."""
    server = servers(UNITY_ROUTES)
    driver = unity(server, tmp_path)
    route = f"PATCH {API}/schemas/main.s"
    server.script(route, DROP, js({"name": "s", "properties": {"a": "2"}}))
    record_sleeps(driver)

    driver.update_namespace_properties(("main", "s"), {"a": "2"}, [])
    assert server.seen[route] == 2
    assert [json.loads(body) for body in server.bodies if body] == [{"properties": {"a": "2"}}] * 2


# --- what "empty" looks like ----------------------------------------------------------------------


def test_an_empty_listing_is_the_server_saying_so(servers, tmp_path):
    ice = servers({**ICEBERG_ROUTES, "GET /v1/p/namespaces": js({"namespaces": [], "next-page-token": None})})
    uc = servers({**UNITY_ROUTES, f"GET {API}/schemas": js({"schemas": [], "next_page_token": None})})
    assert iceberg(ice, tmp_path).list_namespaces(ListNamespacesRequest(id=[WH])).namespaces == []
    assert unity(uc, tmp_path).list_namespaces(ListNamespacesRequest(id=["main"])).namespaces == []


@pytest.mark.parametrize("body", [{"next_page_token": None}, {}, {"schemas": None}])
def test_a_unity_listing_without_its_list_is_not_empty(servers, tmp_path, body):
    server = servers({**UNITY_ROUTES, f"GET {API}/schemas": js(body)})
    driver = unity(server, tmp_path)
    record_sleeps(driver)
    with pytest.raises(BadAnswerError, match="schemas"):
        driver.list_namespaces(ListNamespacesRequest(id=["main"]))


def test_an_iceberg_config_without_a_prefix_means_the_warehouse_name(servers, tmp_path):
    server = servers({**ICEBERG_ROUTES, "GET /v1/config": js({"defaults": {}, "overrides": {}}),
                      f"GET /v1/{WH}/namespaces": js({"namespaces": [["x"]]})})
    assert iceberg(server, tmp_path).list_namespaces(ListNamespacesRequest(id=[WH])).namespaces == ["x"]


@pytest.mark.parametrize("config", [{"defaults": {"prefix": "p"}}, {"overrides": {"prefix": "p"}},
                                    {"defaults": {"prefix": 1}, "overrides": {}}])
def test_a_malformed_iceberg_config_is_no_fallback(servers, tmp_path, config):
    server = servers({**ICEBERG_ROUTES, "GET /v1/config": js(config),
                      f"GET /v1/{WH}/namespaces": js({"namespaces": [["x"]]})})
    driver = iceberg(server, tmp_path)
    record_sleeps(driver)
    with pytest.raises(BadAnswerError, match="GET /v1/config answered an unexpected shape"):
        driver.list_namespaces(ListNamespacesRequest(id=[WH]))
    assert driver.client.prefixes == {}
    assert server.seen[f"GET /v1/{WH}/namespaces"] == 0


# --- authentication -------------------------------------------------------------------------------


def test_a_malformed_token_answer_is_retried_then_an_error(servers, tmp_path):
    server = servers({**ICEBERG_ROUTES, "POST /v1/oauth/tokens": js({"token_type": "bearer"})})
    driver = iceberg(server, tmp_path, credential="client:secret-never-shown-4f")
    driver.client.auth._http.sleep = lambda seconds: None  # the token client's own HttpClient

    with pytest.raises(BadAnswerError) as raised:
        driver.list_namespaces(ListNamespacesRequest(id=[WH]))
    assert str(raised.value).startswith("iceberg: POST /v1/oauth/tokens answered an unexpected shape: "
                                        "access_token: field required")
    assert server.seen["POST /v1/oauth/tokens"] == ATTEMPTS
    assert "secret-never-shown-4f" not in str(raised.value)


@pytest.mark.parametrize("backend", ["iceberg", "unity"])
def test_tokens_never_appear_in_errors(servers, tmp_path, backend):
    call = next(c for c in READ_CALLS if c.backend == backend and c.name.startswith("list"))
    server, driver = start_backend(servers, call, tmp_path, auth_token=TOKEN)
    record_sleeps(driver)
    for reply in (cut(call.good), DROP, js({"hello": "world"}), js({"message": "denied"}, 403)):
        server.script(call.route, reply)
        with pytest.raises(LanceNamespaceError) as raised:
            call.run(driver)
        assert TOKEN not in str(raised.value) and TOKEN not in repr(raised.value)


def test_endpoint_userinfo_never_appears_in_errors(servers, tmp_path):
    server = servers({f"GET {API}/schemas/main.s": js({"error_code": "PERMISSION_DENIED", "message": "no"}, 403),
                      f"GET {API}/tables": cut({"tables": []})})
    endpoint = server.endpoint.replace("http://", "http://admin:pw-never-shown-7a@")
    driver = UnityNamespace(endpoint=endpoint, catalog="main", root=str(tmp_path), max_retries=0)
    for run in (lambda: driver.describe_namespace(DescribeNamespaceRequest(id=["main", "s"])),
                lambda: driver.list_tables(ListTablesRequest(id=["main", "s"]))):
        with pytest.raises(LanceNamespaceError) as raised:
            run()
        assert "pw-never-shown-7a" not in str(raised.value) and "admin" not in str(raised.value)


# --- the client on its own ------------------------------------------------------------------------


def test_the_client_never_raises_an_http_library_exception(servers):
    server = servers({"GET /x": cut({"a": 1}), "POST /x": DROP})
    client = HttpClient(server.endpoint, backend="test", connect_timeout=2, read_timeout=2, max_retries=1,
                        translate=lambda failure: InternalError(failure.message()), sleep=lambda s: None)
    for method in ("GET", "POST"):
        with pytest.raises(LanceNamespaceError) as raised:
            client.request(method, "/x")
        assert not isinstance(raised.value, (requests.RequestException, urllib3.exceptions.HTTPError))
    assert server.seen == {"GET /x": 2, "POST /x": 1}


def test_an_error_status_names_the_attempts(servers):
    server = servers({"GET /x": js({"message": "boom"}, 500)})
    failures: list[HttpFailure] = []

    def translate(failure: HttpFailure) -> LanceNamespaceError:
        failures.append(failure)
        return InternalError(failure.message())

    client = HttpClient(server.endpoint, backend="test", connect_timeout=2, read_timeout=2, max_retries=2,
                        translate=translate, sleep=lambda s: None)
    with pytest.raises(InternalError, match=r"GET http://127\.0\.0\.1:\d+/x -> 500: boom after 3 attempts"):
        client.request("GET", "/x")
    assert [f.attempts for f in failures] == [1, 2, 3]


def test_a_signed_request_is_signed_per_attempt_with_its_whole_body(servers):
    """`sign` sees each attempt as it goes out (method, URL, headers, body) and its headers are
    what is sent; an Authorization it adds is a signature, never registered as a secret."""
    server = servers({"POST /x": js({"message": "busy"}, 503)})
    signed: list[tuple[str, str, bytes | None]] = []

    def sign(method: str, url: str, headers: dict[str, str], body: bytes | None) -> dict[str, str]:
        signed.append((method, url, body))
        return {**headers, "Authorization": f"Signature-{len(signed)}-of-the-request"}

    client = HttpClient(server.endpoint, backend="test", connect_timeout=2, read_timeout=2, max_retries=1,
                        translate=lambda failure: InternalError(failure.message()), sign=sign,
                        sleep=lambda s: None)
    with pytest.raises(LanceNamespaceError):
        client.request("POST", "/x", params={"q": "1"}, json={"a": 1}, headers={"X-Target": "op"},
                       content_type="application/x-amz-json-1.1")
    assert signed == [("POST", f"{server.endpoint}/x?q=1", b'{"a": 1}')] * 2
    assert server.bodies == [b'{"a": 1}'] * 2
    assert "Signature-1-of-the-request" not in secrets._registry.values


def test_parse_label_and_translate_are_the_callers(servers):
    """`parse` reads a success from its bytes (an UnfitAnswer is a bad answer, sent again for a
    retry-safe request), `label` names the call in messages, `translate` replaces the client's."""
    server = servers({"POST /x": Reply(body=b"<html>no</html>")})
    client = HttpClient(server.endpoint, backend="test", connect_timeout=2, read_timeout=2, max_retries=1,
                        translate=lambda failure: InternalError("the client's"), sleep=lambda s: None)

    def parse(body: bytes) -> Any:
        if not body.startswith(b"{"):
            raise UnfitAnswer("not an object")
        return json.loads(body)

    with pytest.raises(BadAnswerError, match=r"^test: Op on thing answered not an object after 2 attempts$"):
        client.request("POST", "/x", parse=parse, retry_safe=True, label="Op on thing")
    server.script("POST /x", js({"message": "no"}, 400))
    with pytest.raises(NamespaceNotFoundError, match="^the caller's$"):
        client.request("POST", "/x", parse=parse, translate=lambda failure: NamespaceNotFoundError("the caller's"))
    server.script("POST /x", Reply(body=b""))
    with pytest.raises(BadAnswerError, match="answered not an object"):  # an empty body is parse's to judge
        client.request("POST", "/x", parse=parse)


def test_an_error_answer_read_as_throttling_is_sent_again_even_for_a_post(servers):
    """AWS answers throttling as a 400 with a code: refused before it was carried out, so even a
    request that is not retry-safe is sent again, honouring Retry-After."""
    server = servers({"POST /x": js({"__type": "ThrottlingException"}, 400, **{"Retry-After": "0"})})
    server.script("POST /x", js({"__type": "ThrottlingException"}, 400, **{"Retry-After": "0"}), js({"ok": 1}))
    waits: list[float] = []

    def translate(failure: HttpFailure) -> LanceNamespaceError:
        assert failure.headers.get("Retry-After") == "0"
        return ThrottlingError("slow down") if failure.body["__type"] == "ThrottlingException" else InternalError("")

    client = HttpClient(server.endpoint, backend="test", connect_timeout=2, read_timeout=2, max_retries=2,
                        translate=translate, sleep=waits.append)
    assert client.request("POST", "/x", json={}) == {"ok": 1}
    assert server.seen == {"POST /x": 2} and waits == [0.0]


# --- an error page instead of an error answer -----------------------------------------------------

#: what a servlet container or a proxy sends for a 500: a page of HTML, many lines long
ERROR_PAGE = Reply(500, b"<!doctype html>\n<html lang=\"en\">\n<head>\n<title>HTTP Status 500 \xe2\x80\x93 Internal "
                        b"Server Error</title>\n<style>body {font-family: Tahoma}</style>\n</head>\n<body>\n"
                        b"<h1>HTTP Status 500</h1>\n<p>java.lang.NullPointerException\n\tat org.example.Api"
                        b"(Api.java:42)</p>\n</body>\n</html>\n", content_type="text/html;charset=utf-8")


@pytest.mark.parametrize("call", [c for c in READ_CALLS if c.name in ("describe namespace", "describe schema")],
                         ids=call_id)
def test_an_html_error_page_is_summarised_in_one_line(servers, tmp_path, call: ReadCall):
    server, driver = start_backend(servers, call, tmp_path)
    server.script(call.route, ERROR_PAGE)
    record_sleeps(driver)

    with pytest.raises(LanceNamespaceError) as raised:
        call.run(driver)

    message = str(raised.value)
    assert "\n" not in message and "<" not in message, message
    assert f"{call.route.split()[0]} {server.endpoint}" in message
    assert "-> 500" in message and "an HTML page titled 'HTTP Status 500 – Internal Server Error'" in message


# --- proxies from the environment ----------------------------------------------------------------

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")


@pytest.fixture
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


def plain_client(endpoint: str) -> HttpClient:
    return HttpClient(endpoint, backend="test", connect_timeout=2, read_timeout=2, max_retries=0,
                      translate=lambda failure: InternalError(failure.message()), sleep=lambda s: None)


def test_requests_go_through_the_proxy_the_environment_names(servers, no_proxy_environment):
    server = servers({"GET /x": js({"via": "server"})})
    proxy = servers({f"GET {server.endpoint}/x": js({"via": "proxy"})})
    no_proxy_environment.setenv("HTTP_PROXY", proxy.endpoint)
    assert plain_client(server.endpoint).request("GET", "/x", params={"a": "b c"}) == {"via": "proxy"}
    assert proxy.seen == {f"GET {server.endpoint}/x": 1} and not server.seen


def test_no_proxy_sends_requests_directly(servers, no_proxy_environment):
    server = servers({"GET /x": js({"via": "server"})})
    proxy = servers({})
    no_proxy_environment.setenv("HTTP_PROXY", proxy.endpoint)
    no_proxy_environment.setenv("NO_PROXY", "127.0.0.1")
    assert plain_client(server.endpoint).request("GET", "/x") == {"via": "server"}
    assert not proxy.seen


def test_an_https_endpoint_is_tunnelled_through_https_proxy(servers, no_proxy_environment):
    """The proxy is asked to CONNECT to the endpoint (here it refuses, which is an error that
    names neither the proxy's credentials nor a raw urllib3 exception)."""
    proxy = servers({"CONNECT catalog.lance-sync.invalid:8443": js({"error": "denied"}, 403)})
    no_proxy_environment.setenv("HTTPS_PROXY", proxy.endpoint.replace("http://", "http://user:pw-7c1@"))
    with pytest.raises(LanceNamespaceError) as raised:
        plain_client("https://catalog.lance-sync.invalid:8443").request("GET", "/x")
    assert proxy.seen == {"CONNECT catalog.lance-sync.invalid:8443": 1}
    assert "pw-7c1" not in str(raised.value) and is_transient(raised.value)
