"""The read timeout of the REST drivers' HTTP client, kept by `deadlines`' watchdog on blocking
sockets: an answer that stalls ends as a timeout, and no other request is ever ended for it.

A kept-alive server on loopback (HTTP/1.1, plain and TLS) whose stalls the test controls: a
stalled answer sends its headers and half its body, then waits for an event that is set only
when the test ends.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import random
import ssl
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from lance_namespace.errors import InternalError

from lance_sync.drivers.support import deadlines
from lance_sync.drivers.support.http import HttpClient
from lance_sync.drivers.support.retry import TransientError

#: long beside a pause of the whole test process (a full garbage collection of the quick lane's heap
#: made a request that was answered at once miss a 0.2 s deadline), short enough for 20 stalls
READ_TIMEOUT = 1.0
SEED = 21


class KeptAliveServer:
    """GET /ok/N answers {"n": N}; GET /stall/N stalls mid-body. Counts the connections it accepted."""

    def __init__(self, tls: ssl.SSLContext | None = None):
        self.released = threading.Event()
        self.connections = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                server.connections += 1
                super().setup()

            def do_GET(self) -> None:
                _, kind, n = self.path.split("/")
                body = json.dumps({"n": int(n), "padding": "x" * 2000}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if kind == "stall":
                    self.wfile.write(body[:1000])
                    self.wfile.flush()
                    server.released.wait()
                    self.close_connection = True
                    return
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        if tls is not None:
            self.http.socket = tls.wrap_socket(self.http.socket, server_side=True)
        scheme = "https" if tls else "http"
        self.endpoint = f"{scheme}://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def close(self) -> None:
        self.released.set()
        self.http.shutdown()
        self.http.server_close()


def self_signed(folder: Path) -> tuple[ssl.SSLContext, str]:
    """A TLS context for the server and the CA file a client trusts it with."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                  critical=False)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return context, str(cert_file)


@pytest.fixture(params=["http", "https"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[KeptAliveServer, HttpClient]]:
    tls, ca = self_signed(tmp_path) if request.param == "https" else (None, None)
    server = KeptAliveServer(tls)
    client = HttpClient(server.endpoint, backend="test", connect_timeout=2, read_timeout=READ_TIMEOUT,
                        max_retries=0, translate=lambda failure: InternalError(failure.message()), ca_bundle=ca)
    yield server, client
    server.close()


def test_an_answer_that_stalls_mid_body_ends_as_a_timeout(served):
    server, client = served
    with pytest.raises(TransientError, match=r"^test: GET /stall/1 timed out waiting for the answer \(1 s\)$"):
        client.request("GET", "/stall/1")
    assert client.request("GET", "/ok/2")["n"] == 2  # on a new connection
    assert server.connections == 2


def test_a_kept_alive_connection_blocks_and_is_not_watched_in_the_pool(served):
    server, client = served
    assert client.request("GET", "/ok/1")["n"] == 1
    assert deadlines.WATCHDOG._watched == {}  # forgotten as it went back to the pool
    threading.Event().wait(READ_TIMEOUT + 3 * deadlines.TICK_SECONDS)  # its deadline passes, idle
    assert client.request("GET", "/ok/2")["n"] == 2
    assert server.connections == 1  # the same connection, not shut down


def test_stalls_among_sixteen_threads_end_only_their_own_requests(served):
    server, client = served
    stalled = set(random.Random(SEED).sample(range(400), 20))

    def one(n: int) -> int | str:
        try:
            return client.request("GET", f"/{'stall' if n in stalled else 'ok'}/{n}")["n"]
        except TransientError as error:
            return str(error)

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(one, range(400)))

    for n, answer in enumerate(answers):
        if n in stalled:
            assert answer == f"test: GET /stall/{n} timed out waiting for the answer (1 s)"
        else:
            assert answer == n
    assert deadlines.WATCHDOG._watched == {}


def test_a_connection_forgotten_inside_the_watchdog_thread_stops_nothing():
    """The garbage collector can run a discarded pool's finalizer in the watchdog's own thread
    while it holds its lock; the finalizer closes, so forgets, that pool's connections. Seen as
    a test run that hung: the watchdog waited for itself, then every request for it. With the
    plain Lock the watchdog had, `forgot` is never set and the last join fails."""
    watchdog = deadlines._Watchdog()
    forgot = threading.Event()

    class Connecting:
        sock = None

    class ClosedByAFinalizer:
        @property
        def sock(self) -> None:  # read by the watchdog, in its thread, under its lock
            watchdog.forget(other)  # type: ignore[arg-type]
            watchdog.forget(self)  # type: ignore[arg-type]
            forgot.set()

    other = Connecting()
    deadlines.begin(60.0)
    watchdog.watch(other)  # type: ignore[arg-type]
    watchdog.watch(ClosedByAFinalizer())  # type: ignore[arg-type]
    assert forgot.wait(timeout=60), "the watchdog waited for its own lock"
    caller = threading.Thread(target=watchdog.forget, args=(other,))
    caller.start()
    caller.join(timeout=60)
    assert not caller.is_alive(), "a caller waits for the watchdog's lock for ever"
