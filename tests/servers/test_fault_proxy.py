"""Tests of the fault-injecting proxy (tests/servers/faults.py).

The first part runs against a tiny upstream of its own (http.server on 127.0.0.1) and plain
clients (requests, http.client); the second puts the proxy in front of the suite's real
catalog servers and drives it with their independent clients (pyiceberg, boto3,
unitycatalog-client), pinning how each client reacts to each fault.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import botocore.exceptions
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ServiceUnavailableError
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, StringType
from unitycatalog.client import ApiClient, CatalogsApi, Configuration, CreateCatalog
from unitycatalog.client.exceptions import ServiceException

from tests.servers.base import RunningServer
from tests.servers.faults import (
    ALL_KINDS,
    FaultProxy,
    aws_operation,
    fault_proxy,
    proxy_fixture,
)
from tests.servers.glue import glue_client, lakeformation_client
from tests.servers.unity_server.app import API_ROOT

NO_RETRIES = {"mode": "standard", "total_max_attempts": 1}
ERROR_STATUS = {"503": 503, "429": 429, "500": 500}


# -- a tiny upstream ----------------------------------------------------------------------------


class Upstream(ThreadingHTTPServer):
    """Echoes every request as JSON and remembers it; a few paths answer specially:
    /chunked (a chunked answer), /empty (204), /status/N (status N), /slow (after 1 s)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _UpstreamHandler)
        self.seen: list[dict] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def hits(self) -> int:
        with self.lock:
            return len(self.seen)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client (the proxy) that went away: expected here


class _UpstreamHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: Upstream  # type: ignore[assignment]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if "chunked" in self.headers.get("Transfer-Encoding", ""):
            body = b""
            while size := int(self.rfile.readline().strip(), 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
        else:
            body = self.rfile.read(length) if length else b""
        path, _, query = self.path.partition("?")
        record = {"method": self.command, "path": path, "query": query,
                  "body": body.decode("latin-1"), "headers": dict(self.headers.items())}
        with self.server.lock:
            self.server.seen.append(record)
        if path == "/slow":
            time.sleep(1)
        if path == "/empty":
            self.send_response(204)
            self.send_header("X-Upstream", "yes")
            self.end_headers()
            return
        if path == "/chunked":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"hello ", b"chunked ", b"world"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        status = int(path.rsplit("/", 1)[1]) if path.startswith("/status/") else 200
        data = json.dumps(record).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Upstream", "yes")
        self.send_header("Set-Cookie", "a=1")
        self.send_header("Set-Cookie", "b=2")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _handle


@pytest.fixture(scope="module")
def upstream_server() -> Iterator[Upstream]:
    server = Upstream()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def upstream(upstream_server: Upstream) -> Upstream:
    with upstream_server.lock:
        upstream_server.seen.clear()
    return upstream_server


@pytest.fixture
def proxy(upstream: Upstream) -> Iterator[FaultProxy]:
    with FaultProxy(upstream.url) as running:
        yield running


@pytest.fixture
def web() -> Iterator[requests.Session]:
    """A requests session that never uses a proxy from the environment."""
    session = requests.Session()
    session.trust_env = False
    yield session
    session.close()


def outcome(session: requests.Session, method: str, url: str, **kwargs: Any) -> str:
    """What a requests client saw: the status code, or the exception's name."""
    try:
        response = session.request(method, url, timeout=10, **kwargs)
    except requests.RequestException as error:
        return type(error).__name__
    return str(response.status_code)


def proxy_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("fault-proxy")]


# -- forwarding at rate 0 -----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
def test_rate_zero_forwards_method_path_query_headers_and_body(proxy, upstream, web, method):
    response = web.request(method, f"{proxy.endpoint}/a/b%20c?x=1&y=%2F", data=b'{"k": 1}',
                            headers={"X-Client": "c1", "Content-Type": "application/json"},
                            timeout=10)
    assert response.status_code == 200
    echoed = response.json()
    assert (echoed["method"], echoed["path"], echoed["query"]) == (method, "/a/b%20c", "x=1&y=%2F")
    assert echoed["body"] == '{"k": 1}'
    assert echoed["headers"]["X-Client"] == "c1"
    assert echoed["headers"]["Host"] == f"127.0.0.1:{proxy.port}"  # preserved
    assert echoed["headers"]["Content-Length"] == "8"
    assert response.headers["X-Upstream"] == "yes"
    assert response.headers["Content-Type"] == "application/json"
    assert response.raw.headers.getlist("Set-Cookie") == ["a=1", "b=2"]
    assert int(response.headers["Content-Length"]) == len(response.content)
    assert upstream.hits() == 1
    assert proxy.stats == Counter(requests=1, forwarded=1)


def test_rate_zero_passes_error_statuses_head_and_204_through(proxy, upstream, web):
    missing = web.get(f"{proxy.endpoint}/status/404", timeout=10)
    assert missing.status_code == 404 and missing.json()["path"] == "/status/404"
    head = web.head(f"{proxy.endpoint}/x", timeout=10)
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["Content-Length"]) > 0  # the upstream's, for the GET
    empty = web.delete(f"{proxy.endpoint}/empty", timeout=10)
    assert (empty.status_code, empty.content, empty.headers["X-Upstream"]) == (204, b"", "yes")
    assert web.get(f"{proxy.endpoint}/x", timeout=10).status_code == 200  # connection still fine
    assert upstream.hits() == 4


def test_chunked_upstream_answer_is_sent_with_content_length(proxy, web):
    response = web.get(f"{proxy.endpoint}/chunked", timeout=10)
    assert response.content == b"hello chunked world"
    assert response.headers["Content-Length"] == str(len(b"hello chunked world"))
    assert "Transfer-Encoding" not in response.headers


def test_chunked_request_body_is_forwarded_with_content_length(proxy, web):
    response = web.post(f"{proxy.endpoint}/c", data=iter([b"part1-", b"part2"]), timeout=10)
    echoed = response.json()
    assert echoed["body"] == "part1-part2"
    assert echoed["headers"]["Content-Length"] == "11"
    assert "Transfer-Encoding" not in echoed["headers"]


def test_keep_alive_towards_the_client(proxy, upstream):
    connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    try:
        for index in range(5):
            connection.request("POST", f"/k/{index}", body=b"x" * index)
            response = connection.getresponse()
            assert response.status == 200 and response.version == 11
            assert json.loads(response.read())["path"] == f"/k/{index}"
            assert not response.will_close
    finally:
        connection.close()
    assert upstream.hits() == 5


def test_upstream_base_path_is_kept_in_the_endpoint(upstream, web):
    with FaultProxy(upstream.url + "/api/2.1/") as proxy:
        assert proxy.endpoint == f"http://127.0.0.1:{proxy.port}/api/2.1"
        assert web.get(proxy.endpoint + "/x", timeout=10).json()["path"] == "/api/2.1/x"


def test_unreachable_upstream_answers_502(web):
    with FaultProxy("http://127.0.0.1:1") as proxy:
        response = web.get(proxy.endpoint + "/x", timeout=10)
        assert response.status_code == 502
        assert "upstream" in response.json()["message"]
        assert proxy.stats["upstream_error"] == 1


@pytest.mark.parametrize("upstream_url", [
    "http://example.com:80", "http://10.0.0.1:8080", "http://0.0.0.0:8080",
    "https://127.0.0.1:8443", "http://127.0.0.1", "thrift://127.0.0.1:9083",
])
def test_refuses_an_upstream_that_is_not_loopback_http(upstream_url):
    with pytest.raises(ValueError, match="only fronts"):
        FaultProxy(upstream_url)


def test_localhost_upstream_is_accepted(upstream, web):
    with FaultProxy(upstream.url.replace("127.0.0.1", "localhost")) as proxy:
        assert web.get(proxy.endpoint + "/x", timeout=10).status_code == 200


# -- each fault kind, as a plain client sees it --------------------------------------------------


@pytest.mark.parametrize("kind", ["503", "429", "500"])
def test_error_status_faults_answer_without_forwarding(proxy, upstream, web, kind):
    proxy.configure(rate=1.0, kinds=[kind])
    for _ in range(3):  # the connection stays usable after an injected error answer
        response = web.post(f"{proxy.endpoint}/t", json={"n": 1}, timeout=10)
        assert response.status_code == int(kind)
        body = response.json()
        assert body["error"]["code"] == int(kind) and "injected" in body["message"]
        assert body["__type"] and body["error_code"]
        assert response.headers.get("Retry-After") == ("0" if kind == "429" else None)
    assert upstream.hits() == 0
    assert proxy.stats == Counter({"requests": 3, kind: 3, "faults": 3})


def test_retry_after_is_configurable(proxy, web):
    proxy.configure(rate=1.0, kinds=["429"], retry_after="7")
    assert web.get(proxy.endpoint + "/x", timeout=10).headers["Retry-After"] == "7"
    proxy.configure(retry_after=None)
    assert "Retry-After" not in web.get(proxy.endpoint + "/x", timeout=10).headers
    with FaultProxy(proxy.upstream, rate=1.0, kinds=["429"], retry_after="2") as other:
        assert web.get(other.endpoint + "/x", timeout=10).headers["Retry-After"] == "2"


def test_reset_is_a_connection_reset_and_never_forwarded(proxy, upstream, web):
    proxy.configure(rate=1.0, kinds=["reset"])
    with pytest.raises(requests.exceptions.ConnectionError) as raised:
        web.post(f"{proxy.endpoint}/t", data=b"payload", timeout=10)
    assert isinstance(raised.value.args[0].args[1], ConnectionResetError)  # an RST, not a FIN
    connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    connection.request("GET", "/t")
    with pytest.raises(ConnectionResetError):
        connection.getresponse()
    connection.close()
    assert upstream.hits() == 0
    assert proxy.stats["reset"] == 2


def test_dropped_reaches_the_upstream_but_the_client_gets_no_answer(proxy, upstream, web):
    proxy.configure(rate=1.0, kinds=["dropped"])
    with pytest.raises(requests.exceptions.ConnectionError) as raised:
        web.post(f"{proxy.endpoint}/create", json={"name": "t1"}, timeout=10)
    assert isinstance(raised.value.args[0].args[1], http.client.RemoteDisconnected)
    assert upstream.hits() == 1
    assert upstream.seen[0]["body"] == '{"name": "t1"}'
    assert proxy.stats["dropped"] == 1


def test_truncated_reaches_the_upstream_and_cuts_the_body(proxy, upstream, web):
    proxy.configure(rate=1.0, kinds=["truncated"])
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        web.post(f"{proxy.endpoint}/create", json={"name": "t1"}, timeout=10)
    assert upstream.hits() == 1
    connection = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    connection.request("GET", "/chunked")
    response = connection.getresponse()
    assert response.status == 200
    assert response.getheader("Content-Length") == str(len(b"hello chunked world"))
    with pytest.raises(http.client.IncompleteRead) as raised:
        response.read()
    assert raised.value.partial == b"hello chun"[: len(b"hello chunked world") // 2]
    connection.close()


def test_truncated_answer_without_body_is_cut_in_its_status_line(proxy, upstream, web):
    proxy.configure(rate=1.0, kinds=["truncated"])
    assert outcome(web, "DELETE", proxy.endpoint + "/empty") == "ConnectionError"
    assert outcome(web, "HEAD", proxy.endpoint + "/x") == "ConnectionError"
    assert upstream.hits() == 2


# -- determinism and controls -------------------------------------------------------------------


def request_script() -> list[tuple[str, str, bytes]]:
    """Logical requests with repeats (retries of the same request) and distinct bodies."""
    script = []
    for index in range(40):
        script.append(("GET", f"/v1/ns/{index % 7}/tables?pageToken={index % 3}", b""))
        script.append(("POST", "/v1/ns", json.dumps({"name": f"t{index % 5}"}).encode()))
    return script


def run_script(proxy: FaultProxy, web: requests.Session) -> list[str]:
    return [outcome(web, method, proxy.endpoint + target, data=body or None)
            for method, target, body in request_script()]


def test_same_seed_gives_the_same_fault_sequence(upstream, web):
    runs = []
    for seed in (11, 11, 12):
        with FaultProxy(upstream.url, rate=0.5, seed=seed) as proxy:
            runs.append((run_script(proxy, web), [event.outcome for event in proxy.events()],
                         proxy.stats))
    (first, first_events, first_stats), (second, second_events, second_stats) = runs[:2]
    assert first == second and first_events == second_events and first_stats == second_stats
    assert runs[2][1] != first_events  # another seed, other faults
    assert set(first_events) == {"forwarded", *ALL_KINDS}
    assert {"503", "429", "500", "ConnectionError", "ChunkedEncodingError", "200"} == set(first)


def test_configure_with_a_seed_starts_a_new_run(proxy, web):
    proxy.configure(rate=0.5, seed=3, kinds=["503", "500"])
    first = run_script(proxy, web)
    second = run_script(proxy, web)  # later requests with the same keys: fresh decisions
    assert first != second
    proxy.configure(seed=3)
    assert run_script(proxy, web) == first


def test_a_retried_identical_request_gets_a_fresh_decision(proxy, web):
    proxy.configure(rate=0.5, seed=5, kinds=["503"])
    statuses = [outcome(web, "POST", proxy.endpoint + "/same", data=b"x") for _ in range(30)]
    assert set(statuses) == {"200", "503"}
    events = proxy.events()
    assert [event.n for event in events] == list(range(30))
    assert [event.outcome != "forwarded" for event in events] == [
        proxy.decide("POST", "/same", "", b"x", n) is not None for n in range(30)]


def test_decisions_do_not_depend_on_thread_scheduling(upstream):
    """Eight threads send the script's requests in a scrambled, concurrent order: every
    logical request (key) gets the same multiset of outcomes as in a sequential run."""
    script = request_script()

    def outcomes_by_key(concurrent: bool) -> dict:
        with FaultProxy(upstream.url, rate=0.4, seed=9, kinds=["503", "429", "500"]) as proxy:
            def send(item: tuple[str, str, bytes]) -> tuple[tuple[str, str, bytes], str]:
                session = requests.Session()
                session.trust_env = False
                with session:
                    return item, outcome(session, item[0], proxy.endpoint + item[1],
                                         data=item[2] or None)
            if concurrent:
                with ThreadPoolExecutor(8) as pool:
                    results = list(pool.map(send, list(reversed(script))))
            else:
                results = [send(item) for item in script]
        grouped: dict = {}
        for key, seen in results:
            grouped.setdefault(key, Counter())[seen] += 1
        return grouped

    assert outcomes_by_key(concurrent=True) == outcomes_by_key(concurrent=False)


def test_rate_and_kinds_shape_the_faults(proxy, web):
    proxy.configure(rate=0.3, seed=1, kinds=["500", "503"])
    for index in range(300):
        outcome(web, "GET", f"{proxy.endpoint}/r/{index}")
    stats = proxy.stats
    assert stats["requests"] == 300
    assert 60 <= stats["faults"] <= 120
    assert stats["faults"] == stats["500"] + stats["503"] and stats["500"] and stats["503"]
    assert stats["faults"] + stats["forwarded"] == 300
    # raising the rate keeps every earlier fault (the same draw is compared with it)
    kept = [proxy.decide("GET", f"/r/{index}", "", b"", 0) for index in range(300)]
    proxy.configure(rate=0.6)
    raised = [proxy.decide("GET", f"/r/{index}", "", b"", 0) for index in range(300)]
    assert all(after == before for before, after in zip(kept, raised, strict=True) if before)


def test_kinds_order_does_not_change_decisions(upstream):
    with FaultProxy(upstream.url, rate=0.5, kinds=["reset", "503"]) as one, \
            FaultProxy(upstream.url, rate=0.5, kinds=("503", "reset")) as other:
        assert one.kinds == other.kinds == ("503", "reset")
        assert [one.decide("GET", "/p", "", b"", n) for n in range(50)] == [
            other.decide("GET", "/p", "", b"", n) for n in range(50)]


def test_bad_settings_are_refused(proxy):
    with pytest.raises(ValueError):
        proxy.configure(rate=1.5)
    with pytest.raises(ValueError):
        proxy.configure(kinds=["timeout"])
    with pytest.raises(ValueError):
        proxy.configure(kinds=[])


def test_max_faults_per_request_lets_a_retry_through(proxy, upstream, web):
    proxy.configure(rate=1.0, kinds=["503"], max_faults_per_request=1)
    assert [outcome(web, "POST", proxy.endpoint + "/a", data=b"1") for _ in range(3)] == [
        "503", "200", "200"]
    assert outcome(web, "POST", proxy.endpoint + "/a", data=b"2") == "503"  # another key
    assert upstream.hits() == 2


def test_only_and_methods_restrict_the_faults(proxy, web):
    proxy.configure(rate=1.0, kinds=["500"], only=r"/tables$", methods=["POST"])
    assert outcome(web, "POST", proxy.endpoint + "/v1/ns/tables") == "500"
    assert outcome(web, "GET", proxy.endpoint + "/v1/ns/tables") == "200"
    assert outcome(web, "POST", proxy.endpoint + "/v1/ns") == "200"
    proxy.configure(only=None, methods=None)
    assert outcome(web, "GET", proxy.endpoint + "/v1/ns") == "500"


def test_amz_target_operation_is_part_of_the_key_and_matchable(proxy, web):
    proxy.configure(rate=1.0, kinds=["503"], only="^GetTables$")
    glue_call = {"Content-Type": "application/x-amz-json-1.1"}
    body = b'{"DatabaseName": "d"}'
    assert outcome(web, "POST", proxy.endpoint + "/", data=body,
                   headers={**glue_call, "X-Amz-Target": "AWSGlue.GetTables"}) == "503"
    assert outcome(web, "POST", proxy.endpoint + "/", data=body,
                   headers={**glue_call, "X-Amz-Target": "AWSGlue.GetDatabase"}) == "200"
    events = proxy.events()
    assert [(event.operation, event.n) for event in events] == [("GetTables", 0),
                                                               ("GetDatabase", 0)]


def test_rest_json_operation_from_the_path_is_part_of_the_key_and_matchable(proxy, web):
    """Lake Formation's REST-JSON calls carry no X-Amz-Target: the operation is the path."""
    proxy.configure(rate=1.0, kinds=["503"], only="^GrantPermissions$")
    body = b'{"Permissions": ["SELECT"]}'
    assert outcome(web, "POST", proxy.endpoint + "/GrantPermissions", data=body) == "503"
    assert outcome(web, "POST", proxy.endpoint + "/RevokePermissions", data=body) == "200"
    assert outcome(web, "GET", proxy.endpoint + "/GrantPermissions") == "200"  # not an AWS call
    assert outcome(web, "POST", proxy.endpoint + "/v1/GrantPermissions", data=body) == "200"
    assert [(event.operation, event.n) for event in proxy.events()] == [
        ("GrantPermissions", 0), ("RevokePermissions", 0), ("", 0), ("", 0)]


def test_aws_operation_reads_the_target_header_then_a_rest_json_path():
    assert aws_operation("POST", "/", "AWSGlue.GetTables") == "GetTables"
    assert aws_operation("POST", "/ListPermissions", "") == "ListPermissions"
    assert aws_operation("POST", "/", "AWSLakeFormation.ListPermissions") == "ListPermissions"
    assert aws_operation("POST", "/v1/namespaces", "") == ""
    assert aws_operation("POST", "/", "") == ""
    assert aws_operation("DELETE", "/GrantPermissions", "") == ""


# -- canned answers ------------------------------------------------------------------------------


def test_override_answers_a_canned_body_without_forwarding(proxy, upstream, web):
    proxy.override("GET", r"/tables$")
    response = web.get(proxy.endpoint + "/v1/ns/tables", timeout=10)
    assert (response.status_code, response.json()) == (200, {"hello": "world"})
    assert response.headers["Content-Type"] == "application/json"
    assert web.get(proxy.endpoint + "/v1/ns", timeout=10).json()["path"] == "/v1/ns"
    assert web.post(proxy.endpoint + "/v1/ns/tables", timeout=10).json()["method"] == "POST"
    assert upstream.hits() == 2
    proxy.clear_overrides()
    assert web.get(proxy.endpoint + "/v1/ns/tables", timeout=10).json()["method"] == "GET"
    assert proxy.stats["override"] == 1


def test_override_every_request_latest_first_and_times(proxy, upstream, web):
    proxy.configure(rate=1.0, kinds=["503"])  # overrides take precedence over faults
    proxy.override("*", ".*", status=500, body="<html>oops</html>", content_type="text/html")
    proxy.override("GET", "^/special$", status=201, body={"n": 1}, headers={"X-Canned": "1"},
                   times=2)
    for method in ("GET", "PUT", "DELETE"):
        response = web.request(method, proxy.endpoint + "/any", timeout=10)
        assert (response.status_code, response.text) == (500, "<html>oops</html>")
        assert response.headers["Content-Type"] == "text/html"
    for _ in range(2):
        special = web.get(proxy.endpoint + "/special", timeout=10)
        assert (special.status_code, special.json(), special.headers["X-Canned"]) == (
            201, {"n": 1}, "1")
    assert web.get(proxy.endpoint + "/special", timeout=10).status_code == 500  # used up
    assert upstream.hits() == 0
    assert proxy.stats["faults"] == 0


def test_override_forwarding_then_truncating(proxy, upstream, web):
    proxy.override("POST", "/create", body=None, truncate_to=5)  # the upstream's answer, cut
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        web.post(proxy.endpoint + "/create", data=b"t1", timeout=10)
    assert upstream.hits() == 1
    proxy.override("POST", "/create", body=b'{"ok": true}', forward=True)  # acts, lies
    assert web.post(proxy.endpoint + "/create", data=b"t2", timeout=10).json() == {"ok": True}
    assert upstream.hits() == 2
    proxy.override("POST", "/create", body=b'{"ok": true}', truncate_to=3, forward=False)
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        web.post(proxy.endpoint + "/create", data=b"t3", timeout=10)
    assert upstream.hits() == 2
    with pytest.raises(ValueError):
        proxy.override("GET", ".*", body=None, forward=False)


# -- lifecycle -----------------------------------------------------------------------------------


def test_start_and_stop_are_fast_and_leave_no_threads(upstream):
    assert not proxy_threads()
    began = time.perf_counter()
    proxy = FaultProxy(upstream.url)
    started = time.perf_counter() - began
    idle = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)  # kept alive, idle
    idle.request("GET", "/x")
    idle.getresponse().read()
    pending = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    pending.connect()  # connected, never sends a request
    deadline = time.monotonic() + 5
    while len(proxy_threads()) < 3 and time.monotonic() < deadline:  # acceptor + 2 connections
        time.sleep(0.005)
    assert len(proxy_threads()) == 3
    began = time.perf_counter()
    proxy.stop()
    stopped = time.perf_counter() - began
    assert started < 0.1 and stopped < 0.1, (started, stopped)  # typically well under 5 ms
    assert not proxy_threads()
    proxy.stop()  # twice is fine
    with pytest.raises(OSError):
        http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=2).request("GET", "/x")
    idle.close()
    pending.close()


def test_stop_cuts_a_request_in_flight(upstream, web):
    proxy = FaultProxy(upstream.url)
    seen: list[str] = []
    client = threading.Thread(target=lambda: seen.append(outcome(web, "GET",
                                                                 proxy.endpoint + "/slow")))
    client.start()
    deadline = time.monotonic() + 5
    while not upstream.hits() and time.monotonic() < deadline:
        time.sleep(0.005)
    began = time.perf_counter()
    proxy.stop()
    assert time.perf_counter() - began < 0.5
    client.join(timeout=5)
    assert seen == ["ConnectionError"]
    assert not proxy_threads()


def test_stop_waits_for_a_connection_thread_in_its_last_lines(upstream, monkeypatch):
    """stop() returns only after every connection thread has ended, even one that has
    finished serving and is closing its socket (the CI run of 37305d4 saw one outlive stop())."""
    proxy = FaultProxy(upstream.url)
    stop_returned = threading.Event()
    order: list[str] = []
    real_shutdown = socket.socket.shutdown

    def held_shutdown(sock: socket.socket, how: int) -> None:
        if how == socket.SHUT_WR and threading.current_thread().name.endswith("-conn"):
            # Wait for stop() to return; a correct stop() never does while this thread runs,
            # so the wait ends by its timeout and the order below shows which came first.
            stop_returned.wait(timeout=1)
            order.append("connection thread closing")
        real_shutdown(sock, how)

    monkeypatch.setattr(socket.socket, "shutdown", held_shutdown)
    client = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    client.request("GET", "/x", headers={"Connection": "close"})
    client.getresponse().read()
    client.close()
    proxy.stop()
    order.append("stop returned")
    stop_returned.set()
    assert order == ["connection thread closing", "stop returned"]
    assert not proxy_threads()


def test_stats_are_thread_safe(proxy, upstream):
    proxy.configure(rate=0.5, kinds=["503", "500"])

    def hammer(worker: int) -> None:
        with requests.Session() as session:
            session.trust_env = False
            for index in range(25):
                outcome(session, "GET", f"{proxy.endpoint}/w{worker}/{index}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(hammer, range(8)))
    stats = proxy.stats
    assert stats["requests"] == 200 == stats["faults"] + stats["forwarded"]
    assert stats["forwarded"] == upstream.hits()
    assert len(proxy.events()) == 200
    proxy.reset_stats()
    assert proxy.stats == Counter() and proxy.events() == []


def test_fault_proxy_wraps_a_running_server(upstream):
    server = RunningServer(name="up", endpoint=upstream.url, startup_seconds=0.1,
                           count_requests=upstream.hits, extra={"k": "v"})
    with fault_proxy(server, rate=1.0, kinds=["500"]) as proxy:
        assert proxy.server.endpoint == proxy.endpoint != server.endpoint
        assert proxy.server.requests_served() == upstream.hits()
        assert proxy.server.extra == {"k": "v"} and proxy.rate == 1.0
    assert not proxy_threads()
    external = RunningServer(name="ext", endpoint="https://glue.example", startup_seconds=0,
                             external=True)
    with pytest.raises(pytest.skip.Exception), fault_proxy(external):
        pass


# -- through the suite's real servers ------------------------------------------------------------

iceberg_proxy = proxy_fixture("iceberg_server")
glue_proxy = proxy_fixture("glue_server")
unity_proxy = proxy_fixture("unity_server")

DUMMY_SCHEMA = Schema(NestedField(1, "dummy", StringType(), required=False))


def pyiceberg(proxy: FaultProxy) -> RestCatalog:
    properties = {}
    if warehouse := proxy.server.extra.get("warehouse"):
        properties["warehouse"] = warehouse
    return RestCatalog("faults", uri=proxy.endpoint, **properties)


def scratch_name() -> str:
    return f"faults_{uuid.uuid4().hex[:8]}"


@pytest.mark.servers
def test_pyiceberg_through_the_proxy_at_rate_zero(iceberg_proxy, tmp_path):
    catalog = pyiceberg(iceberg_proxy)
    namespace = scratch_name()
    catalog.create_namespace(namespace, {"owner": "faults"})
    try:
        table = catalog.create_table(f"{namespace}.t1", DUMMY_SCHEMA,
                                     location=f"file://{tmp_path}/t1")
        assert catalog.load_table(f"{namespace}.t1").metadata.table_uuid == (
            table.metadata.table_uuid)
        assert catalog.list_tables(namespace) == [(namespace, "t1")]
        assert catalog.load_namespace_properties(namespace)["owner"] == "faults"
        catalog.drop_table(f"{namespace}.t1")
    finally:
        iceberg_proxy.configure(rate=0)
        catalog.drop_namespace(namespace)
    stats = iceberg_proxy.stats
    assert stats["requests"] == stats["forwarded"] >= 7


@pytest.mark.servers
def test_pyiceberg_gets_503_for_every_call_at_rate_one(iceberg_proxy, iceberg_server):
    catalog = pyiceberg(iceberg_proxy)  # reads /v1/config before the faults start
    iceberg_proxy.configure(rate=1.0, kinds=["503"])
    iceberg_server.reset_request_count()
    for call in (catalog.list_namespaces, lambda: catalog.list_tables("missing"),
                 lambda: catalog.create_namespace(scratch_name())):
        with pytest.raises(ServiceUnavailableError, match="503 injected"):
            call()
    assert iceberg_server.requests_served() == 0
    assert iceberg_proxy.stats["503"] == 3


PYICEBERG_REACTIONS = {  # fault kind -> exception pyiceberg 0.12 lets through (no retries)
    "503": "ServiceUnavailableError",
    "429": "TooManyRequestsError",
    "500": "ServerError",
    "reset": "ConnectionError",  # requests.exceptions, ConnectionResetError inside
    "dropped": "ConnectionError",  # requests.exceptions, RemoteDisconnected inside
    "truncated": "ChunkedEncodingError",  # requests.exceptions, not a ConnectionError
}


@pytest.mark.servers
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_pyiceberg_reaction_to_each_fault(iceberg_proxy, kind):
    catalog = pyiceberg(iceberg_proxy)
    iceberg_proxy.configure(rate=1.0, kinds=[kind])
    namespace = scratch_name()
    with pytest.raises(Exception) as raised:
        catalog.create_namespace(namespace)
    assert type(raised.value).__name__ == PYICEBERG_REACTIONS[kind]
    iceberg_proxy.configure(rate=0)
    created = (namespace,) in catalog.list_namespaces()
    assert created == (kind in ("dropped", "truncated"))  # those reached the server
    if created:
        catalog.drop_namespace(namespace)


@pytest.mark.servers
def test_pyiceberg_wrong_shape_answer_is_a_validation_error(iceberg_proxy):
    catalog = pyiceberg(iceberg_proxy)
    iceberg_proxy.override("GET", r"/namespaces$")
    with pytest.raises(Exception) as raised:
        catalog.list_namespaces()
    assert type(raised.value).__name__ == "ValidationError"  # pydantic's, not a pyiceberg error


@pytest.mark.servers
def test_boto3_glue_through_the_proxy_at_rate_zero(glue_proxy, glue_server):
    glue = glue_client(glue_proxy.server, retries=NO_RETRIES)
    database = scratch_name()
    glue_server.reset_request_count()
    glue.create_database(DatabaseInput={"Name": database, "Description": "via proxy"})
    try:
        glue.create_table(DatabaseName=database, TableInput={
            "Name": "t1", "TableType": "EXTERNAL_TABLE", "Parameters": {"table_type": "lance"},
            "StorageDescriptor": {"Location": "file:///tmp/t1"}})
        assert glue.get_database(Name=database)["Database"]["Description"] == "via proxy"
        names = [table["Name"] for table in glue.get_tables(DatabaseName=database)["TableList"]]
        assert names == ["t1"]
    finally:
        glue.delete_database(Name=database)
    stats = glue_proxy.stats
    assert stats["requests"] == stats["forwarded"] == glue_server.requests_served() == 5
    assert [event.operation for event in glue_proxy.events()] == [
        "CreateDatabase", "CreateTable", "GetDatabase", "GetTables", "DeleteDatabase"]


@pytest.mark.servers
def test_boto3_lakeformation_calls_are_faulted_by_operation_name(glue_proxy, glue_server):
    """Faults aimed at one Lake Formation operation hit it and nothing else."""
    glue = glue_client(glue_proxy.server, retries=NO_RETRIES)
    lakeformation = lakeformation_client(glue_proxy.server, retries=NO_RETRIES)
    database = scratch_name()
    glue.create_database(DatabaseInput={"Name": database})
    resource = {"Database": {"CatalogId": glue_server.extra["account_id"], "Name": database}}
    principal = {"DataLakePrincipalIdentifier": f"arn:aws:iam::{glue_server.extra['account_id']}:role/r"}
    try:
        glue_proxy.configure(rate=1.0, kinds=["503"], only="^GrantPermissions$")
        assert lakeformation.list_permissions(Resource=resource)["PrincipalResourcePermissions"] == []
        with pytest.raises(botocore.exceptions.ClientError) as raised:
            lakeformation.grant_permissions(Principal=principal, Resource=resource, Permissions=["DESCRIBE"])
        assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
        glue_proxy.configure(rate=0.0)
        lakeformation.grant_permissions(Principal=principal, Resource=resource, Permissions=["DESCRIBE"])
        listed = lakeformation.list_permissions(Resource=resource)["PrincipalResourcePermissions"]
        assert [entry["Permissions"] for entry in listed] == [["DESCRIBE"]]
    finally:
        glue.delete_database(Name=database)
    assert [(event.operation, event.outcome) for event in glue_proxy.events()] == [
        ("CreateDatabase", "forwarded"), ("ListPermissions", "forwarded"), ("GrantPermissions", "503"),
        ("GrantPermissions", "forwarded"), ("ListPermissions", "forwarded"), ("DeleteDatabase", "forwarded")]


@pytest.mark.servers
def test_boto3_glue_gets_503_for_every_call_at_rate_one(glue_proxy, glue_server):
    glue_proxy.configure(rate=1.0, kinds=["503"])
    glue_server.reset_request_count()
    glue = glue_client(glue_proxy.server, retries={"mode": "standard", "total_max_attempts": 3})
    for call in (glue.get_databases, lambda: glue.create_database(DatabaseInput={
            "Name": scratch_name()})):
        with pytest.raises(botocore.exceptions.ClientError) as raised:
            call()
        assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
        assert raised.value.response["Error"]["Code"] == "ServiceUnavailableException"
    assert glue_proxy.stats["503"] == 6  # botocore retried each call twice
    assert glue_server.requests_served() == 0


BOTOCORE_REACTIONS = {  # fault kind -> what botocore 1.44 raises (Glue's error codes for 4xx/5xx)
    "503": "ClientError",  # generic: ServiceUnavailableException is not in Glue's model
    "429": "ThrottlingException",
    "500": "InternalServiceException",
    "reset": "ConnectionClosedError",
    "dropped": "ConnectionClosedError",
    "truncated": None,  # nothing raised: see the test below
}


@pytest.mark.servers
@pytest.mark.parametrize("kind", ALL_KINDS)
def test_botocore_reaction_to_each_fault(glue_proxy, kind):
    glue = glue_client(glue_proxy.server, retries=NO_RETRIES)
    database = scratch_name()
    glue_proxy.configure(rate=1.0, kinds=[kind])
    try:
        glue.create_database(DatabaseInput={"Name": database})
        raised = None
    except Exception as error:  # noqa: BLE001 - the reaction is what is tested
        raised = type(error).__name__
    assert raised == BOTOCORE_REACTIONS[kind]
    glue_proxy.configure(rate=0)
    names = [item["Name"] for item in glue.get_databases()["DatabaseList"]]
    assert (database in names) == (kind in ("dropped", "truncated"))
    if database in names:
        glue.delete_database(Name=database)


@pytest.mark.servers
def test_botocore_takes_a_truncated_or_wrong_shape_answer_for_success(glue_proxy):
    """botocore reads bodies with enforce_content_length off and parses what it got: the
    output simply lacks its members. A caller must check required members itself."""
    glue = glue_client(glue_proxy.server, retries=NO_RETRIES)
    glue_proxy.configure(rate=1.0, kinds=["truncated"])
    truncated = glue.get_databases()
    assert "DatabaseList" not in truncated
    glue_proxy.configure(rate=0)
    glue_proxy.override("POST", "^GetDatabases$", body="<html>gateway</html>",
                        content_type="text/html")
    assert "DatabaseList" not in glue.get_databases()


@pytest.mark.servers
def test_botocore_retries_a_dropped_create_into_already_exists(glue_proxy):
    """The first CreateDatabase reaches the server, its answer is lost, botocore's own retry
    then finds the database there: the caller sees AlreadyExistsException for its own create."""
    glue = glue_client(glue_proxy.server, retries={"mode": "standard", "total_max_attempts": 3})
    database = scratch_name()
    glue_proxy.configure(rate=1.0, kinds=["dropped"], max_faults_per_request=1)
    try:
        with pytest.raises(botocore.exceptions.ClientError) as raised:
            glue.create_database(DatabaseInput={"Name": database})
        assert raised.value.response["Error"]["Code"] == "AlreadyExistsException"
        assert [event.outcome for event in glue_proxy.events()] == ["dropped", "forwarded"]
    finally:
        glue_proxy.configure(rate=0)
        glue.delete_database(Name=database)


UNITY_REACTIONS = {  # fault kind -> what unitycatalog-client 0.7 (aiohttp) raises
    "503": "ServiceException",
    "429": "ApiException",
    "500": "ServiceException",
    "reset": "ClientOSError",  # aiohttp
    "dropped": "ServerDisconnectedError",  # aiohttp
    "truncated": "ClientPayloadError",  # aiohttp
}


@contextlib.asynccontextmanager
async def unity_catalogs(proxy: FaultProxy):
    client = ApiClient(Configuration(host=proxy.endpoint + API_ROOT))
    try:
        yield CatalogsApi(client)
    finally:
        await client.close()


@pytest.mark.servers
def test_unity_client_through_the_proxy(unity_proxy):
    name = scratch_name()

    async def scenario() -> dict:
        reactions = {}
        async with unity_catalogs(unity_proxy) as catalogs:
            await catalogs.create_catalog(CreateCatalog(name=name, comment="via proxy"))
            assert (await catalogs.get_catalog(name)).comment == "via proxy"
            for kind in ALL_KINDS:
                unity_proxy.configure(rate=1.0, kinds=[kind])
                try:
                    await catalogs.get_catalog(name)
                except Exception as error:  # noqa: BLE001 - the reaction is what is tested
                    reactions[kind] = type(error).__name__
            unity_proxy.configure(rate=1.0, kinds=["503"])
            with pytest.raises(ServiceException):
                await catalogs.list_catalogs()
            unity_proxy.configure(rate=0)
            unity_proxy.override("GET", r"/catalogs$")
            listed = await catalogs.list_catalogs()  # {"hello": "world"} parses as "no catalogs"
            assert listed.catalogs is None and listed.next_page_token is None
            unity_proxy.clear_overrides()
            await catalogs.delete_catalog(name, force=True)
        return reactions

    assert asyncio.run(scenario()) == UNITY_REACTIONS
