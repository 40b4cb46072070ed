"""A bad answer is an error, never an empty listing: every read of every HTTP backend, garbled.

For each list and describe call of the Iceberg, Unity and Glue drivers, a FaultProxy override
answers (a) a 200 of the wrong shape, `{"hello":"world"}`, (b) a 200 HTML page, or (c) the
server's own answer cut short, on every attempt. `lance-sync plan` (or, for the calls only an
apply makes, `lance-sync apply`) on a manifest that needs that call must exit 1 with an
`Error:` that names the backend and the call, no traceback, and no plan on stdout: a plan made
from a garbled listing would propose to create (or remove) what already exists. The proxy's
events prove the call was really made, and retried.

Hive 3 speaks Thrift, not HTTP: a TCP server on 127.0.0.1 that answers garbage bytes to
anything stands in for a broken metastore.
"""

from __future__ import annotations

import re
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from pyiceberg.catalog.rest import RestCatalog
from unitycatalog.client import TablesApi

from lance_sync.drivers.glue import transport as glue_transport
from tests.conformance.harness_unity import ensure_catalog, run_sdk
from tests.servers.base import RunningServer
from tests.servers.faults import FaultProxy, proxy_fixture
from tests.servers.glue import glue_client
from tests.support.catalogs import (
    GLUE_CATALOG,
    UNITY_CATALOG,
    ensure_glue_catalog,
    glue_backend,
    glue_catalog_id,
    glue_env,
    iceberg_backend,
    unity_backend,
)
from tests.support.cli import cli_env, describe, run_cli

pytestmark = pytest.mark.servers

#: the retries of every backend here: that a bad answer is asked again is what is checked, and
#: the defaults' further retries, each after a longer backoff, only add a second or two a case
ONE_RETRY = 1

iceberg_proxy = proxy_fixture("iceberg_server")
glue_proxy = proxy_fixture("glue_server")
unity_proxy = proxy_fixture("unity_server")

PROXIES = {"iceberg": "iceberg_proxy", "unity": "unity_proxy", "glue": "glue_proxy"}
SERVERS = {"iceberg": "iceberg_server", "unity": "unity_server", "glue": "glue_server"}

HTML = ("<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
        "<body><h1>Bad Gateway</h1><p>upstream went away</p></body></html>")
#: kind -> override() keywords: the answer served instead of the server's, on every attempt
KINDS: dict[str, dict[str, Any]] = {
    "wrong_shape": {"body": {"hello": "world"}},
    "html": {"body": HTML, "content_type": "text/html; charset=utf-8"},
    "truncated": {"body": None, "truncate_to": 10},  # the server's own answer, cut after 10 bytes
}


@dataclass(frozen=True)
class Call:
    backend: str
    name: str
    #: the override: HTTP method and a regex searched in the path (or the AWS operation name)
    method: str
    pattern: str
    #: what needs the call: "plan", "plan-scope" (plan with the container in `scope:`) or
    #: "apply-update" (an apply that changes the table: only its guards read the table alone)
    needs: str = "plan"


CALLS = [
    Call("iceberg", "GET /v1/config", "GET", r"^/v1/config$"),
    Call("iceberg", "list namespaces", "GET", r"/namespaces$"),
    Call("iceberg", "get namespace", "GET", r"/namespaces/[^/]+$"),
    Call("iceberg", "list tables", "GET", r"/namespaces/[^/]+/tables$"),
    Call("iceberg", "load table", "GET", r"/namespaces/[^/]+/tables/[^/]+$"),
    Call("unity", "get catalog", "GET", r"/catalogs/[^/]+$", needs="plan-scope"),
    Call("unity", "list schemas", "GET", r"/schemas$"),
    Call("unity", "get schema", "GET", r"/schemas/[^/]+$"),
    Call("unity", "list tables", "GET", r"/tables$"),
    Call("unity", "get table", "GET", r"/tables/[^/]+$", needs="apply-update"),
    Call("glue", "GetCatalogs", "POST", r"^GetCatalogs$"),
    Call("glue", "GetCatalog", "POST", r"^GetCatalog$", needs="plan-scope"),
    Call("glue", "GetDatabases", "POST", r"^GetDatabases$"),
    Call("glue", "GetDatabase", "POST", r"^GetDatabase$"),
    Call("glue", "GetTables", "POST", r"^GetTables$"),
    Call("glue", "GetTable", "POST", r"^GetTable$", needs="apply-update"),
]


@dataclass
class Seeded:
    """What a clean apply made in one backend: an owned namespace holding one owned table."""

    owner: str
    namespace: str
    location: str
    root: Path


def manifest_for(backend: str, server: RunningServer, seeded: Seeded, *, scope: bool = False,
                 tier: str = "gold") -> dict[str, Any]:
    if backend == "iceberg":
        entry, parent = iceberg_backend(server, seeded.root), server.extra["warehouse"]
    elif backend == "unity":
        entry, parent = unity_backend(server, seeded.root), UNITY_CATALOG
    else:
        entry, parent = glue_backend(server), GLUE_CATALOG
    if scope:
        entry["scope"] = [[parent]]
    if backend != "glue":  # Glue's retries are a constant: see the test
        entry["max_retries"] = ONE_RETRY
    namespace = [parent, seeded.namespace]
    return {"version": 1, "owner": seeded.owner, "backends": {"b": entry},
            "namespaces": [{"backend": "b", "id": namespace}],
            "tables": [{"name": "t1", "location": seeded.location, "properties": {"tier": tier},
                        "register": [{"backend": "b", "namespace": namespace}]}]}


def write(path: Path, manifest: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def seeded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """Per backend, once per module: a clean apply straight to the server (no proxy)."""
    made: dict[str, Seeded] = {}

    def seed(backend: str) -> Seeded:
        if backend in made:
            return made[backend]
        server: RunningServer = request.getfixturevalue(SERVERS[backend])
        if backend == "glue":
            ensure_glue_catalog(server)
        if backend == "unity":
            ensure_catalog(server, UNITY_CATALOG)
        root = tmp_path_factory.mktemp(f"bad_answers_{backend}")
        suffix = uuid.uuid4().hex[:8]
        state = Seeded(owner=f"bad-answers-{suffix}", namespace=f"bad_answers_{suffix}",
                       location=str(root / "t1.lance"), root=root)
        manifest = write(root / "seed.yaml", manifest_for(backend, server, state))
        env = cli_env(**glue_env(server)) if backend == "glue" else cli_env()
        applied = run_cli(manifest, "apply", "--auto-approve", env=env)
        assert applied.returncode == 0, describe(applied)
        made[backend] = state
        return state

    yield seed


def live_tier(backend: str, server: RunningServer, seeded: Seeded) -> str | None:
    """The table's `tier`, read directly from the server."""
    if backend == "unity":
        table = run_sdk(server, lambda client: TablesApi(client).get_table(
            f"{UNITY_CATALOG}.{seeded.namespace}.t1"))
        return (table.properties or {}).get("tier")
    if backend == "glue":
        table = glue_client(server).get_table(CatalogId=glue_catalog_id(server),
                                              DatabaseName=seeded.namespace, Name="t1")["Table"]
        return table.get("Parameters", {}).get("tier")
    catalog = RestCatalog("e2e", uri=server.endpoint, warehouse=server.extra["warehouse"])
    return catalog.load_table((seeded.namespace, "t1")).properties.get("tier")


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("call", CALLS, ids=lambda call: f"{call.backend}-{call.name.replace(' ', '_')}")
def test_a_bad_answer_to_a_read_is_an_error_naming_backend_and_call(
        call: Call, kind: str, seeded, request: pytest.FixtureRequest, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(glue_transport, "MAX_RETRIES", ONE_RETRY)
    state = seeded(call.backend)
    server: RunningServer = request.getfixturevalue(SERVERS[call.backend])
    proxy: FaultProxy = request.getfixturevalue(PROXIES[call.backend])
    env = cli_env(**glue_env(server)) if call.backend == "glue" else cli_env()
    tier = f"changed-{uuid.uuid4().hex[:6]}" if call.needs == "apply-update" else "gold"
    manifest = write(tmp_path / "lance-sync.yaml", manifest_for(
        call.backend, proxy.server, state, scope=call.needs == "plan-scope", tier=tier))

    proxy.override(call.method, call.pattern, **KINDS[kind])
    if call.needs == "apply-update":
        flags = ["--allow-replace"] if call.backend == "unity" else []  # Unity replaces the table
        result = run_cli(manifest, "apply", "--auto-approve", *flags, env=env)
    else:
        result = run_cli(manifest, "plan", env=env)
    hits = [e for e in proxy.events() if e.outcome == "override"]

    assert hits, f"{call.backend} {call.name} was never called: {[(e.method, e.path, e.operation) for e in proxy.events()]}"
    assert result.returncode == 1, describe(result)
    error = result.stderr
    print(f"\n{call.backend} {call.name} {kind} ({len(hits)} answers): "
          f"{next((line for line in error.splitlines() if line.startswith('Error:')), error[-300:])}")
    assert "Error:" in error and call.backend in error, describe(result)
    if call.backend == "glue":
        assert re.search(rf"\b{call.name}\b", error), describe(result)
    else:
        assert any(f"{hit.method} {hit.path}" in error for hit in hits), (
            f"no {[f'{hit.method} {hit.path}' for hit in hits]} in stderr\n{describe(result)}")
    assert "Traceback" not in result.stdout + error
    # a read is asked again after a bad answer before giving up
    assert len(hits) >= 2, f"the bad answer was not retried: {hits}"
    if call.needs == "apply-update":
        # apply shows its plan, then its guards read the table: it stops there, changing nothing
        assert not re.search(r"^Apply (complete|partly failed)", result.stdout, re.MULTILINE), describe(result)
        assert live_tier(call.backend, server, state) == "gold"
    else:
        assert not re.search(r"^Plan:|No changes", result.stdout, re.MULTILINE), describe(result)


# --- Hive 3: a Thrift endpoint that answers garbage ------------------------------------------------


class GarbageServer:
    """Accepts connections on 127.0.0.1 and answers every chunk it receives with garbage bytes."""

    GARBAGE = b"\x80\x01\x00\x02garbage\xff\xfe<html>not thrift</html>\x00\x00\x00\x07" * 4

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    def _accept(self) -> None:
        self.listener.settimeout(0.1)
        while not self._stop.is_set():
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            thread = threading.Thread(target=self._answer, args=(connection,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _answer(self, connection: socket.socket) -> None:
        connection.settimeout(0.2)
        with connection:
            while not self._stop.is_set():
                try:
                    received = connection.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not received:
                    return
                connection.sendall(self.GARBAGE)

    def stop(self) -> None:
        self._stop.set()
        self.listener.close()
        self._acceptor.join(timeout=5)
        for thread in self._threads:
            thread.join(timeout=5)


def test_hive3_garbage_answers_are_an_error_naming_hive3(tmp_path: Path):
    garbage = GarbageServer()
    try:
        manifest = write(tmp_path / "lance-sync.yaml", {
            "version": 1, "owner": "bad-answers-hive3",
            "backends": {"hms": {"type": "hive3", "uri": f"thrift://127.0.0.1:{garbage.port}",
                                 "client.socket-timeout-sec": 5, "root": str(tmp_path)}},
            "namespaces": [{"backend": "hms", "id": ["lance_cat", "sales"]}],
            "tables": [{"name": "t1", "location": str(tmp_path / "t1.lance"),
                        "register": [{"backend": "hms", "namespace": ["lance_cat", "sales"]}]}]})
        result = run_cli(manifest, "plan", env=cli_env())
    finally:
        garbage.stop()
    print(f"\nhive3 garbage ({garbage.connections} connections): {result.stderr.strip()[-500:]}")
    assert garbage.connections > 0, "the driver never connected"
    assert result.returncode == 1, describe(result)
    assert "Error:" in result.stderr and "hive3" in result.stderr, describe(result)
    assert "Traceback" not in result.stdout + result.stderr
    assert not re.search(r"^Plan:|No changes", result.stdout, re.MULTILINE), describe(result)
