"""A fault-injecting HTTP reverse proxy to put in front of the suite's catalog servers.

    with fault_proxy(iceberg_server, rate=0.3, seed=7) as proxy:
        catalog = RestCatalog("t", uri=proxy.endpoint)   # every call may now fail
        ...
        assert proxy.stats["requests"] == ...

`FaultProxy` listens on 127.0.0.1 (a free port), speaks HTTP/1.1 with keep-alive to its
clients and forwards each request (method, path and query, headers with Host preserved,
body) over a fresh connection to one loopback upstream. It reads the upstream's whole
answer (chunked or not) and sends it back with a Content-Length.

For each request it may inject one fault instead (see FAULTS). Which request gets which
fault depends only on a SHA-256 of (seed, method, path, query, body digest, n), where the
key is (method, path, query, body digest; plus the AWS operation, because every Glue call is
POST / with the operation in X-Amz-Target) and n counts the earlier requests with that same
key: a retry of an identical request gets a fresh decision, and a run with the same seed sees
the same faults for the same logical requests, whatever the thread scheduling (identical
requests in flight at once are interchangeable). Headers other than X-Amz-Target (dates,
signatures, request ids) do not count. The AWS operation (`aws_operation`) comes from
X-Amz-Target, or for Lake Formation's REST-JSON calls from the path (POST /GrantPermissions).
Canned answers (`override`) serve wrong-shape tests.

Used as a function-scoped fixture around a session server:

    iceberg_proxy = proxy_fixture("iceberg_server")     # at module level of a test file

    def test_x(iceberg_proxy): ...                       # iceberg_proxy.server.endpoint
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import http.client
import json
import re
import selectors
import socket
import struct
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.servers.base import RunningServer

#: What each fault kind does to one request:
FAULTS = {
    "503": "answer 503 with a JSON error body; the upstream never sees the request",
    "429": "answer 429 with Retry-After; the upstream never sees the request",
    "500": "answer 500 with a JSON error body; the upstream never sees the request",
    "reset": "close the client connection with a TCP RST (SO_LINGER 0); no forwarding",
    "dropped": "forward (the upstream acts), then close the client connection without answer",
    "truncated": "forward, then send status and headers with the full Content-Length but only "
                 "half the body, then close (no body to cut: half the status line, since "
                 "clients take a cut among the headers for a complete answer)",
}
ALL_KINDS: tuple[str, ...] = tuple(FAULTS)
#: Faults after which the upstream has carried the request out.
FORWARDING_KINDS = frozenset({"dropped", "truncated"})
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost"})
#: Not forwarded in either direction (RFC 9110 section 7.6.1), plus what the proxy recomputes.
HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
    "te", "trailer", "transfer-encoding", "upgrade", "content-length", "expect",
})
UPSTREAM_TIMEOUT_SECONDS = 60.0
#: `configure`'s "leave this setting as it is"
KEEP: Any = object()

_ERRORS = {  # status -> (reason, AWS-style __type, Databricks/UC-style error_code)
    503: ("Service Unavailable", "ServiceUnavailableException", "TEMPORARILY_UNAVAILABLE"),
    429: ("Too Many Requests", "ThrottlingException", "REQUEST_LIMIT_EXCEEDED"),
    500: ("Internal Server Error", "InternalServiceException", "INTERNAL_ERROR"),
    502: ("Bad Gateway", "BadGatewayException", "BAD_GATEWAY"),
}


def error_body(status: int, message: str) -> bytes:
    """A small JSON error every client here can read: the Iceberg REST `error` object, AWS
    JSON protocol `__type`/`message` (botocore) and UC's `error_code`/`message`."""
    _, aws_type, error_code = _ERRORS[status]
    return json.dumps({
        "error": {"message": message, "type": aws_type, "code": status},
        "__type": aws_type,
        "error_code": error_code,
        "message": message,
    }).encode()


@dataclass(frozen=True)
class ProxyEvent:
    """One request the proxy saw, in arrival order, and what it did with it."""

    method: str
    path: str
    query: str
    operation: str  #: the AWS operation ("GetTables", "GrantPermissions": `aws_operation`), else ""
    n: int  #: earlier requests with the same key (see the module docstring)
    outcome: str  #: "forwarded", a fault kind or "override"


#: builds an answer's headers and body from the request: (method, target, headers, body)
Responder = Callable[[str, str, list[tuple[str, str]], bytes], tuple[list[tuple[str, str]], bytes]]


@dataclass
class _Override:
    method: str
    path: re.Pattern[str]
    status: int
    body: bytes | None
    headers: list[tuple[str, str]]
    truncate_to: int | None
    forward: bool
    times: int | None
    respond: Responder | None = None


class FaultProxy:
    """A reverse proxy on 127.0.0.1 that injects faults with a seeded, per-request decision.

    upstream: http://127.0.0.1:PORT[/base] (or localhost). The proxy keeps request paths as
        they are; `endpoint` carries the upstream's base path, so it replaces the upstream's
        URL one for one.
    rate: probability in [0, 1] that a request gets a fault; kinds: the fault kinds to pick
        from (uniformly; see FAULTS); seed: any int; retry_after: the 429's Retry-After
        value (None: no header).
    """

    def __init__(self, upstream: str, rate: float = 0.0, seed: int = 0,
                 kinds: Iterable[str] = ALL_KINDS, retry_after: str | None = "0", *,
                 upstream_timeout: float = UPSTREAM_TIMEOUT_SECONDS):
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname not in LOOPBACK_HOSTS or not parts.port:
            raise ValueError(f"FaultProxy only fronts http://127.0.0.1:PORT or "
                             f"http://localhost:PORT, not {upstream!r}")
        self.upstream = upstream.rstrip("/")
        self._upstream_port = parts.port
        self._base_path = parts.path.rstrip("/")
        self._upstream_timeout = upstream_timeout
        self._lock = threading.Lock()
        self._rate = 0.0
        self._seed = 0
        self._kinds: tuple[str, ...] = ALL_KINDS
        self._only: re.Pattern[str] | None = None
        self._methods: frozenset[str] | None = None
        self._max_per_request: int | None = None
        self.retry_after = retry_after
        self._seen: dict[tuple[str, str, str, str], int] = defaultdict(int)
        self.configure(rate=rate, seed=seed, kinds=kinds)
        self._stats: Counter[str] = Counter()
        self._events: list[ProxyEvent] = []
        self._overrides: list[_Override] = []
        self._connections: set[socket.socket] = set()
        self._abort: set[socket.socket] = set()
        self._upstreams: set[http.client.HTTPConnection] = set()
        self._threads: set[threading.Thread] = set()
        self._stopped = False
        #: a copy of the fronted RunningServer with `endpoint` replaced (set by fault_proxy)
        self.server: RunningServer | None = None

        self._listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = self._listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}{self._base_path}"
        self._wake_read, self._wake_write = socket.socketpair()
        self._acceptor = threading.Thread(target=self._accept_loop, name=f"fault-proxy-{self.port}",
                                          daemon=True)
        self._acceptor.start()

    # -- controls -------------------------------------------------------------------------

    def configure(self, *, rate: float | None = None, kinds: Iterable[str] | None = None,
                  seed: int | None = None, retry_after: Any = KEEP, only: Any = KEEP,
                  methods: Any = KEEP, max_faults_per_request: Any = KEEP) -> FaultProxy:
        """Change the fault settings now; arguments left out keep their value.

        A given `seed` starts a new run: the per-key request counts restart at 0, so the same
        requests get the same faults again. `only` (a regex searched in the path, and in the
        AWS operation name such as "GetTables" for X-Amz-Target requests) and `methods`
        restrict which requests may get a fault (None: all). Lake Formation's REST-JSON calls
        (POST /GrantPermissions) have their operation name too (`aws_operation`).
        `max_faults_per_request`: only the first k requests with a given key may get a fault
        (n < k), so a client making more than k attempts always gets through; with rate 1.0
        and k=1 every distinct request fails exactly once (None: no limit)."""
        with self._lock:
            if rate is not None:
                if not 0.0 <= rate <= 1.0:
                    raise ValueError(f"rate must be within [0, 1], not {rate}")
                self._rate = float(rate)
            if kinds is not None:
                chosen = [kinds] if isinstance(kinds, str) else list(kinds)
                unknown = set(chosen) - set(ALL_KINDS)
                if unknown or not chosen:
                    raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {ALL_KINDS}")
                # canonical order: the same set of kinds gives the same decisions
                self._kinds = tuple(kind for kind in ALL_KINDS if kind in chosen)
            if seed is not None:
                self._seed = int(seed)
                self._seen.clear()
            if retry_after is not KEEP:
                self.retry_after = retry_after
            if only is not KEEP:
                self._only = re.compile(only) if only is not None else None
            if methods is not KEEP:
                self._methods = (frozenset(method.upper() for method in methods)
                                 if methods is not None else None)
            if max_faults_per_request is not KEEP:
                self._max_per_request = max_faults_per_request
        return self

    @property
    def rate(self) -> float:
        return self._rate

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def kinds(self) -> tuple[str, ...]:
        return self._kinds

    def override(self, method: str, path_regex: str, status: int = 200,
                 body: bytes | str | dict | list | None = b'{"hello":"world"}',
                 content_type: str = "application/json", truncate_to: int | None = None, *,
                 forward: bool | None = None, headers: dict[str, str] | None = None,
                 times: int | None = None, respond: Responder | None = None) -> None:
        """Answer matching requests with a canned answer instead of the upstream's.

        method: an HTTP method or "*". path_regex: searched in the path (query excluded), so
        ".*" matches every request, and in the AWS operation name (`aws_operation`; Glue: every
        call is POST /, so "^GetTables$" picks one operation, as "^GrantPermissions$" picks
        Lake Formation's).
        body: bytes, str, or a dict/list sent as JSON; None keeps the upstream's own answer
        (status, headers, body), which implies forwarding.
        truncate_to: declare the full Content-Length but send only this many body bytes (at
        most all but one), then close; it implies forwarding unless `forward=False`.
        forward: whether the upstream receives (and carries out) the request first.
        times: how many matching requests it answers (None: until `clear_overrides`).
        respond: builds the answer's headers and body from each request instead (an answer
        that echoes the request: tests/servers/echo.py); `status` is still the status.
        The latest override wins; overrides take precedence over random faults."""
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        if forward is None:
            forward = body is None or truncate_to is not None
        if body is None and not forward:
            raise ValueError("body=None answers with the upstream's answer: it needs forwarding")
        extra = [("Content-Type", content_type)] if body is not None and content_type else []
        extra += list((headers or {}).items())
        rule = _Override(method.upper(), re.compile(path_regex), status, body, extra,
                         truncate_to, forward, times, respond)
        with self._lock:
            self._overrides.insert(0, rule)

    def clear_overrides(self) -> None:
        with self._lock:
            self._overrides.clear()

    @property
    def stats(self) -> Counter[str]:
        """A snapshot: "requests" (all), "forwarded" (sent on with no fault or override), one
        key per injected fault kind, "faults" (their sum), "override", "upstream_error" (the
        upstream could not be reached or answered badly: the client got a 502 or, for a
        forwarding fault, a closed connection)."""
        with self._lock:
            return Counter(self._stats)

    def events(self) -> list[ProxyEvent]:
        """Every request seen so far, in arrival order."""
        with self._lock:
            return list(self._events)

    def reset_stats(self) -> None:
        """Forget stats and events (not the per-key counts that drive decisions)."""
        with self._lock:
            self._stats.clear()
            self._events.clear()

    def decide(self, method: str, path: str, query: str, body: bytes, n: int,
               operation: str = "") -> str | None:
        """The fault kind for a request with this key seen n times before, under the current
        rate, kinds and seed (before the only/methods/max_faults_per_request filters), or None.
        Pure: the same arguments always give the same answer."""
        with self._lock:
            rate, kinds, seed = self._rate, self._kinds, self._seed
        digest = hashlib.sha256(body).hexdigest()
        if operation:
            digest = f"{operation}:{digest}"
        return _decision(seed, rate, kinds, method, path, query, digest, n)

    def stop(self) -> None:
        """Stop accepting, cut every open connection and join every thread (a few ms)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True  # no new connection, no new upstream request
        with contextlib.suppress(OSError):
            self._wake_write.send(b"x")
        self._acceptor.join(timeout=5)
        with self._lock:
            connections = list(self._connections)
            upstreams = list(self._upstreams)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        for upstream in upstreams:
            with contextlib.suppress(OSError, AttributeError):
                upstream.sock.shutdown(socket.SHUT_RDWR)
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout=5)
        self._listener.close()
        self._wake_read.close()
        self._wake_write.close()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (f"FaultProxy({self.endpoint} -> {self.upstream}, rate={self._rate}, "
                f"seed={self._seed}, kinds={list(self._kinds)})")

    # -- serving --------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            selector.register(self._wake_read, selectors.EVENT_READ)
            while True:
                for key, _ in selector.select():
                    if key.fileobj is self._wake_read:
                        return
                    try:
                        connection, address = self._listener.accept()
                    except OSError:
                        continue
                    with self._lock:
                        if self._stopped:
                            connection.close()
                            return
                        thread = threading.Thread(target=self._serve_connection,
                                                  args=(connection, address), daemon=True,
                                                  name=f"fault-proxy-{self.port}-conn")
                        self._connections.add(connection)
                        # A thread leaves the set only once it has ended, so stop() joins
                        # every thread that may still run (even one inside its last lines).
                        self._threads = {t for t in self._threads if t.is_alive()}
                        self._threads.add(thread)
                    thread.start()

    def _serve_connection(self, connection: socket.socket, address: Any) -> None:
        try:
            _Handler(connection, address, self)
        except Exception:  # noqa: BLE001 - a client that went away, or stop()
            pass
        finally:
            with self._lock:
                self._connections.discard(connection)
                abort = connection in self._abort
                self._abort.discard(connection)
            if abort:
                with contextlib.suppress(OSError):
                    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                          struct.pack("ii", 1, 0))
            else:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_WR)
            connection.close()

    def _plan(self, method: str, path: str, query: str, operation: str,
              body: bytes) -> tuple[str, Any]:
        """("override", rule) | ("fault", kind) | ("forward", None); counts the request."""
        digest = hashlib.sha256(body).hexdigest()
        if operation:  # AWS JSON protocols: every call is POST /, the operation is a header
            digest = f"{operation}:{digest}"
        with self._lock:
            key = (method, path, query, digest)
            n = self._seen[key]
            self._seen[key] = n + 1
            self._stats["requests"] += 1
            for rule in self._overrides:
                if rule.method in ("*", method) and _matches(rule.path, path, operation):
                    if rule.times is not None:
                        rule.times -= 1
                        if rule.times <= 0:
                            self._overrides.remove(rule)
                    self._stats["override"] += 1
                    self._events.append(ProxyEvent(method, path, query, operation, n,
                                                   "override"))
                    return "override", rule
            kind = None
            if ((self._only is None or _matches(self._only, path, operation))
                    and (self._methods is None or method in self._methods)
                    and (self._max_per_request is None or n < self._max_per_request)):
                kind = _decision(self._seed, self._rate, self._kinds, method, path, query,
                                 digest, n)
            if kind is None:
                self._stats["forwarded"] += 1
                self._events.append(ProxyEvent(method, path, query, operation, n, "forwarded"))
                return "forward", None
            self._stats[kind] += 1
            self._stats["faults"] += 1
            self._events.append(ProxyEvent(method, path, query, operation, n, kind))
            return "fault", kind

    def _count_upstream_error(self) -> None:
        with self._lock:
            self._stats["upstream_error"] += 1

    def _forward(self, method: str, target: str, headers: list[tuple[str, str]],
                 body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self._upstream_port,
                                                timeout=self._upstream_timeout)
        with self._lock:
            if self._stopped:
                raise ConnectionAbortedError("proxy stopped")
            self._upstreams.add(connection)
        try:
            connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                connection.putheader(name, value)
            if body or method in ("POST", "PUT", "PATCH"):
                connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body or None)
            response = connection.getresponse()
            data = response.read()
            return response.status, response.reason, response.getheaders(), data
        finally:
            with self._lock:
                self._upstreams.discard(connection)
            connection.close()


def _decision(seed: int, rate: float, kinds: tuple[str, ...], method: str, path: str,
              query: str, body_digest: str, n: int) -> str | None:
    if rate <= 0.0:
        return None
    material = "\0".join((str(seed), method, path, query, body_digest, str(n))).encode()
    digest = hashlib.sha256(material).digest()
    draw = int.from_bytes(digest[:8], "big") / 2**64  # uniform in [0, 1)
    if draw >= rate:
        return None
    return kinds[int.from_bytes(digest[8:16], "big") % len(kinds)]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else small answers wait ~40 ms (Nagle + delayed ACK)
    server: FaultProxy  # type: ignore[assignment]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def handle_one_request(self) -> None:
        # Any method is proxied, not only those with a do_* method.
        try:
            self.raw_requestline = self.rfile.readline(65537)
        except OSError:
            self.close_connection = True
            return
        if len(self.raw_requestline) > 65536:
            self.send_error(414)
            return
        if not self.raw_requestline:
            self.close_connection = True
            return
        if not self.parse_request():
            return
        self._proxy()
        self.wfile.flush()

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():  # trailers
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _proxy(self) -> None:
        proxy = self.server
        method = self.command.upper()
        body = self._read_body()
        target = self.path
        if not target.startswith("/"):  # absolute form
            parts = urlsplit(target)
            target = parts.path + (f"?{parts.query}" if parts.query else "")
        path, _, query = target.partition("?")
        operation = aws_operation(method, path, self.headers.get("X-Amz-Target", ""))
        action, detail = proxy._plan(method, path, query, operation, body)

        if action == "fault" and detail not in FORWARDING_KINDS:
            if detail == "reset":
                self._abort()
            else:
                status = int(detail)
                extra = ([("Retry-After", proxy.retry_after)]
                         if status == 429 and proxy.retry_after is not None else [])
                self._answer(status, _ERRORS[status][0],
                             [("Content-Type", "application/json"), *extra],
                             error_body(status, f"{detail} injected by FaultProxy"))
            return
        rule: _Override | None = detail if action == "override" else None
        upstream = None
        if rule is None or rule.forward:
            headers = [(name, value) for name, value in self.headers.items()
                       if name.lower() not in HOP_BY_HOP]
            if self.headers.get("Host") is None:
                headers.append(("Host", f"127.0.0.1:{proxy._upstream_port}"))
            try:
                upstream = proxy._forward(method, target, headers, body)
            except (OSError, http.client.HTTPException) as error:
                proxy._count_upstream_error()
                if action == "fault":
                    self.close_connection = True
                    return
                self._answer(502, "Bad Gateway", [("Content-Type", "application/json")],
                             error_body(502, f"FaultProxy: upstream {proxy.upstream} failed: "
                                             f"{type(error).__name__}: {error}"))
                return
        if action == "fault":
            if detail == "dropped":
                self.close_connection = True
            else:
                status, reason, headers, data = upstream
                self._answer(status, reason, _end_to_end(headers), data, truncate_to=len(data) // 2)
            return
        if rule is not None:
            if rule.respond is not None:
                status, reason = rule.status, _reason(rule.status)
                headers, data = rule.respond(method, target, list(self.headers.items()), body)
            elif rule.body is None:
                status, reason, headers, data = upstream
                headers = _end_to_end(headers)
            else:
                status, reason, data = rule.status, _reason(rule.status), rule.body
                headers = list(rule.headers)
            self._answer(status, reason, headers, data, truncate_to=rule.truncate_to)
            return
        status, reason, headers, data = upstream
        self._answer(status, reason, _end_to_end(headers), data,
                     upstream_length=_header(headers, "Content-Length"))

    def _answer(self, status: int, reason: str, headers: list[tuple[str, str]], body: bytes, *,
                truncate_to: int | None = None, upstream_length: str | None = None) -> None:
        bodiless = self.command == "HEAD" or status in (204, 304) or 100 <= status < 200
        lines = [f"HTTP/1.1 {status} {reason}"]
        lines += [f"{name}: {value}" for name, value in headers]
        if bodiless:
            if upstream_length is not None and status != 204:
                lines.append(f"Content-Length: {upstream_length}")
            body = b""
        else:
            lines.append(f"Content-Length: {len(body)}")
        if truncate_to is not None or self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if truncate_to is not None:
            self.close_connection = True
            if not body:  # cut inside the status line: a cut among headers looks complete
                self.wfile.write(head[: len(lines[0]) // 2])
                return
            body = body[: max(0, min(truncate_to, len(body) - 1))]
        self.wfile.write(head + body)

    def _abort(self) -> None:
        self.close_connection = True
        with self.server._lock:
            self.server._abort.add(self.connection)


#: the path of an AWS REST-JSON call named by its path alone (Lake Formation: POST /GrantPermissions)
_REST_OPERATION_PATH = re.compile(r"/([A-Z][A-Za-z0-9]+)")


def aws_operation(method: str, path: str, target: str) -> str:
    """The AWS operation of a request: from X-Amz-Target (AWS JSON protocols: Glue, STS's
    JSON form), else from a REST-JSON path that is the operation's name (Lake Formation's
    `POST /GrantPermissions`); "" for any other request."""
    if target:
        return target.rpartition(".")[2]
    named = _REST_OPERATION_PATH.fullmatch(path) if method == "POST" else None
    return named.group(1) if named else ""


def _matches(pattern: re.Pattern[str], path: str, operation: str) -> bool:
    return bool(pattern.search(path) or (operation and pattern.search(operation)))


def _end_to_end(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(name, value) for name, value in headers if name.lower() not in HOP_BY_HOP]


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    return next((value for key, value in headers if key.lower() == name.lower()), None)


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Status"


# -- fixtures ---------------------------------------------------------------------------------


@contextlib.contextmanager
def fault_proxy(upstream: str | RunningServer, **options: Any) -> Iterator[FaultProxy]:
    """A FaultProxy for the duration of a `with` block (FaultProxy's keywords as options).

    Given a RunningServer, `proxy.server` is a copy of it whose endpoint is the proxy's (its
    request counts still come from the server itself). An external server cannot be
    fronted: the test is skipped."""
    server = upstream if isinstance(upstream, RunningServer) else None
    if server is not None and server.external:
        pytest.skip(f"fault injection needs the suite's own {server.name} server")
    proxy = FaultProxy(server.endpoint if server is not None else upstream, **options)
    if server is not None:
        proxy.server = dataclasses.replace(server, endpoint=proxy.endpoint, stop=lambda: None,
                                           extra=dict(server.extra))
    try:
        yield proxy
    finally:
        proxy.stop()


def proxy_fixture(server_fixture: str, **options: Any) -> Callable[..., Iterator[FaultProxy]]:
    """A function-scoped pytest fixture: a FaultProxy (rate 0 unless `options` say otherwise)
    in front of the session server fixture named `server_fixture`. At module level:

        glue_proxy = proxy_fixture("glue_server")
    """

    @pytest.fixture
    def _fixture(request: pytest.FixtureRequest) -> Iterator[FaultProxy]:
        with fault_proxy(request.getfixturevalue(server_fixture), **options) as proxy:
            yield proxy

    _fixture.__doc__ = f"A FaultProxy in front of {server_fixture}."
    return _fixture
