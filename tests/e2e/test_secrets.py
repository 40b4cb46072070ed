"""Secrets never leave lance-sync, even when a server sends them back.

Each HTTP backend (Iceberg REST with a bearer token and with OAuth2 client credentials,
Unity with a token and with a password in its endpoint URL, Glue with an access key, a secret
key and a session token, all from `${VAR}`) is pointed at an EchoServer (tests/servers/echo.py),
whose error answers (401, 403, 400 and 500; JSON, text and HTML) echo the request line, the
query, every header and the body, as some proxies and gateways do. Then, as a subprocess:
`plan` in text, json and markdown, `apply --auto-approve`, `reconcile --once` and a reconcile
loop's metrics; in process, `lance_sync.api.plan`'s exception. The suite's real servers behind
a FaultProxy that echoes only the table creation (after the reads and the first writes
succeeded) give `plan -o FILE` a saved plan and `apply` a journal with a failed action and a
rollback plan.

No secret may show in any byte of stdout, stderr, the saved plan, the journal, the rollback
plan, the JSON lines, the metrics or the exception: not as it is, not URL-encoded, not in
base64 at any offset (`leaks`). Each test also checks that the echo did reach the output
(masked), so none passes because the server's text was dropped.
"""

from __future__ import annotations

import http.client
import json
import random
import subprocess
import traceback
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from lance_sync.model.secrets import MASK
from tests.conformance.harness_unity import ensure_catalog
from tests.servers.base import RunningServer
from tests.servers.echo import EchoServer, assert_no_leak, proxy_echo
from tests.servers.faults import FaultProxy, proxy_fixture
from tests.support.catalogs import UNITY_CATALOG
from tests.support.cli import LANCE_SYNC, cli_env, describe
from tests.support.reconcile import Loop, scrape

pytestmark = pytest.mark.servers

iceberg_proxy = proxy_fixture("iceberg_server")
glue_proxy = proxy_fixture("glue_server")
unity_proxy = proxy_fixture("unity_server")

_rng = random.Random(20261201)
_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _secret(tag: str, special: str = "/+=") -> str:
    """A seeded value with characters that URL encoding changes (none for a URL's password)."""
    letters = "".join(_rng.choice(_ALPHABET) for _ in range(20))
    return f"{tag}-{letters[:10]}{special}{letters[10:]}"


ICE_TOKEN = _secret("ice-token")
ICE_CLIENT_SECRET = _secret("ice-client-secret")
ICE_ISSUED_TOKEN = _secret("ice-issued")
UC_TOKEN = _secret("uc-token")
UC_PASSWORD = _secret("uc-password", special="-_.")
GLUE_ACCESS_KEY = "AKIA" + _secret("key", special="").upper().replace("-", "")
GLUE_SECRET_KEY = _secret("glue-secret-key")
GLUE_SESSION_TOKEN = _secret("glue-session-token")
SECRETS = (ICE_TOKEN, ICE_CLIENT_SECRET, ICE_ISSUED_TOKEN, UC_TOKEN, UC_PASSWORD, GLUE_ACCESS_KEY, GLUE_SECRET_KEY,
           GLUE_SESSION_TOKEN)
ENVIRONMENT = {"LS_SECRET_ICE_TOKEN": ICE_TOKEN, "LS_SECRET_ICE_CREDENTIAL": f"lance-sync-client:{ICE_CLIENT_SECRET}",
               "LS_SECRET_UC_TOKEN": UC_TOKEN,
               "LS_SECRET_GLUE_KEY": GLUE_ACCESS_KEY, "LS_SECRET_GLUE_SECRET": GLUE_SECRET_KEY,
               "LS_SECRET_GLUE_SESSION": GLUE_SESSION_TOKEN}
INT64 = [{"name": "id", "type": "int64"}]


@dataclass
class Case:
    """A backend entry (with its secrets as ${VAR}), its namespace, the echo server's
    settings and the secrets the echo can show."""

    name: str
    backend: dict[str, Any]
    namespace: list[str]
    status: int
    style: str
    shown: tuple[str, ...]
    tokens: dict[str, str] = field(default_factory=dict)


def echo_cases(endpoint: str, root: Path) -> dict[str, Case]:
    """Every HTTP backend and way to authenticate, each with one status and style (together
    they cover 400, 401, 403 and 500, JSON, text and HTML)."""
    glue = {"type": "glue", "endpoint": endpoint, "catalog_id": "123456789012", "region": "us-east-1",
            "access_key_id": "${LS_SECRET_GLUE_KEY}", "secret_access_key": "${LS_SECRET_GLUE_SECRET}",
            "session_token": "${LS_SECRET_GLUE_SESSION}"}
    return {case.name: case for case in [
        Case("iceberg-token", {"type": "iceberg", "endpoint": endpoint, "auth_token": "${LS_SECRET_ICE_TOKEN}",
                               "root": str(root), "max_retries": 0}, ["warehouse", "sales"], 401, "json",
             (ICE_TOKEN,)),
        Case("iceberg-token-500", {"type": "iceberg", "endpoint": endpoint, "auth_token": "${LS_SECRET_ICE_TOKEN}",
                                   "root": str(root), "max_retries": 0}, ["warehouse", "sales"], 500, "html",
             (ICE_TOKEN,)),
        Case("iceberg-oauth-token-request", {"type": "iceberg", "endpoint": endpoint, "root": str(root),
                                             "credential": "${LS_SECRET_ICE_CREDENTIAL}", "max_retries": 0},
             ["warehouse", "sales"], 401, "text", (ICE_CLIENT_SECRET,)),
        Case("iceberg-oauth-issued-token", {"type": "iceberg", "endpoint": endpoint, "root": str(root),
                                            "credential": "${LS_SECRET_ICE_CREDENTIAL}", "max_retries": 0},
             ["warehouse", "sales"], 403, "json", (ICE_ISSUED_TOKEN,), {r"/v1/oauth/tokens$": ICE_ISSUED_TOKEN}),
        Case("unity-token", {"type": "unity", "endpoint": endpoint, "catalog": "main", "root": str(root),
                             "auth_token": "${LS_SECRET_UC_TOKEN}", "max_retries": 0}, ["main", "sales"], 403, "text",
             (UC_TOKEN,)),
        Case("unity-token-400", {"type": "unity", "endpoint": endpoint, "catalog": "main", "root": str(root),
                                 "auth_token": "${LS_SECRET_UC_TOKEN}", "max_retries": 0}, ["main", "sales"], 400,
             "json", (UC_TOKEN,)),
        Case("unity-url-password", {"type": "unity", "endpoint": "${LS_SECRET_UC_ENDPOINT}", "catalog": "main",
                                    "root": str(root),
                                    "max_retries": 0}, ["main", "sales"], 401, "html", (UC_PASSWORD,)),
        Case("glue-keys", glue, ["123456789012", "sales"], 403, "json", (GLUE_ACCESS_KEY, GLUE_SESSION_TOKEN)),
        Case("glue-keys-400", glue, ["123456789012", "sales"], 400, "text", (GLUE_ACCESS_KEY, GLUE_SESSION_TOKEN)),
    ]}


#: the names of the cases
CASES = list(echo_cases("http://127.0.0.1:1", Path("/")))


def write_manifest(path: Path, backend: dict[str, Any], namespace: list[str], table_root: Path) -> Path:
    manifest = {"version": 1, "owner": "secrets-test", "backends": {"cat": backend},
                "namespaces": [{"backend": "cat", "id": namespace}],
                "tables": [{"name": "orders", "location": str(table_root / "orders.lance"), "schema": INT64,
                            "register": [{"backend": "cat", "namespace": namespace}]}]}
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return path


def run(manifest: Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([LANCE_SYNC, *args], capture_output=True, text=True, env=cli_env(**ENVIRONMENT),
                            timeout=300, cwd=manifest.parent)
    assert "Traceback" not in result.stdout + result.stderr, describe(result)
    return result


def check(where: str, text: str, echoed: bool = True) -> None:
    """No secret in `text`; when `echoed`, a secret the echo carried reached it, masked."""
    assert_no_leak(where, text, *SECRETS)
    if echoed:
        assert MASK in text, f"{where} lacks the masked echo:\n{text[-3000:]}"


@pytest.fixture
def echo_case(request: pytest.FixtureRequest, tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Case, Path]]:
    """(the case, its manifest) with an EchoServer of the case's status and style running; an
    endpoint with a password is a secret, so the manifest takes it whole from the environment."""
    template = echo_cases("http://127.0.0.1:1", tmp_path)[request.param]
    with EchoServer(template.status, template.style, template.tokens) as echo:
        monkeypatch.setenv("LS_SECRET_UC_ENDPOINT", echo.endpoint.replace("http://", f"http://svc:{UC_PASSWORD}@"))
        case = echo_cases(echo.endpoint, tmp_path / "lake")[template.name]
        yield case, write_manifest(tmp_path / "lance-sync.yaml", case.backend, case.namespace, tmp_path / "data")


@pytest.mark.parametrize("echo_case", CASES, indirect=True)
def test_plan_and_apply_show_no_secret_a_server_echoes(echo_case: tuple[Case, Path]):
    case, manifest = echo_case
    for output_format in ("text", "json", "markdown"):
        result = run(manifest, "plan", "-f", str(manifest), "--format", output_format)
        assert result.returncode == 1, describe(result)
        check(f"plan --format {output_format} stderr", result.stderr)
        if output_format == "json":
            check("plan --format json stdout", json.loads(result.stdout)["error"])
    applied = run(manifest, "apply", "-f", str(manifest), "--auto-approve")
    assert applied.returncode != 0, describe(applied)
    check("apply stderr", applied.stderr)
    check("apply stdout", applied.stdout, echoed=False)


@pytest.fixture
def secret_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's environment holds the secrets too (for the API, and for the reconcile
    loop, which takes this process's environment)."""
    for name, value in cli_env(**ENVIRONMENT).items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize("echo_case", ["iceberg-token", "unity-token", "glue-keys"], indirect=True)
def test_reconcile_lines_and_metrics_show_no_secret(echo_case: tuple[Case, Path], secret_environment: None):
    case, manifest = echo_case
    once = run(manifest, "reconcile", "-f", str(manifest), "--once")
    assert once.returncode == 1, describe(once)
    check("reconcile --once stdout", once.stdout)
    check("reconcile --once stderr", once.stderr, echoed=False)

    loop = Loop(manifest, "--interval", "1h", "--metrics-port", "0")
    try:
        start = loop.wait_for("start", lambda line: line["event"] == "start")
        check("reconcile loop line", json.dumps(loop.cycle("error")))
        assert scrape(start["metrics"])["lance_sync_reconcile_errors_total"] == 1
        check("the metrics page", metrics_page(start["metrics"]), echoed=False)
    finally:
        loop.stop()
    check("reconcile stderr", "".join(loop.stderr), echoed=False)


def metrics_page(url: str) -> str:
    """The metrics page as served, every byte."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request("GET", parts.path)
        return connection.getresponse().read().decode()
    finally:
        connection.close()


@pytest.mark.parametrize("echo_case", ["iceberg-oauth-issued-token", "unity-url-password", "glue-keys"],
                         indirect=True)
def test_the_python_api_raises_no_secret(echo_case: tuple[Case, Path], secret_environment: None):
    from lance_sync import api

    case, manifest = echo_case
    state = api.load(manifest)
    with pytest.raises(Exception) as raised:
        api.plan(state)
    check("the exception", str(raised.value))
    check("the exception's traceback", "".join(traceback.format_exception(raised.value)))


# --- an echo on a write, after the reads succeeded ----------------------------------------------


@pytest.fixture
def unity_catalog(unity_server: RunningServer) -> str:
    ensure_catalog(unity_server, UNITY_CATALOG)
    return UNITY_CATALOG


def _write_echo_backend(name: str, proxy: FaultProxy, root: Path) -> tuple[dict[str, Any], list[str]]:
    """The backend through `proxy`, with secrets from ${VAR}, and a namespace of its own."""
    server = proxy.server
    assert server is not None
    fresh = f"secrets_{uuid.uuid4().hex[:8]}"
    if name == "iceberg":
        return ({"type": "iceberg", "endpoint": server.endpoint, "auth_token": "${LS_SECRET_ICE_TOKEN}",
                 "root": str(root), "max_retries": 0}, [server.extra["warehouse"], fresh])
    if name == "unity":
        return ({"type": "unity", "endpoint": server.endpoint, "catalog": UNITY_CATALOG, "root": str(root),
                 "auth_token": "${LS_SECRET_UC_TOKEN}", "max_retries": 0}, [UNITY_CATALOG, fresh])
    return ({"type": "glue", "endpoint": server.endpoint, "catalog_id": server.extra["account_id"],
             "region": server.extra["region"], "access_key_id": "${LS_SECRET_GLUE_KEY}",
             "secret_access_key": "${LS_SECRET_GLUE_SECRET}", "session_token": "${LS_SECRET_GLUE_SESSION}"},
            [server.extra["account_id"], fresh])


#: backend -> (proxy fixture, the table creation's path or operation, status, style)
WRITE_ECHOES = {"iceberg": ("iceberg_proxy", r"/namespaces/[^/]+/tables$", 400, "json"),
                "unity": ("unity_proxy", r"/tables$", 403, "html"),
                "glue": ("glue_proxy", r"^CreateTable$", 400, "text")}


@pytest.mark.parametrize("backend", list(WRITE_ECHOES))
def test_a_write_echo_leaves_no_secret_in_the_saved_plan_journal_or_rollback_plan(
        backend: str, request: pytest.FixtureRequest, tmp_path: Path):
    fixture, operation, status, style = WRITE_ECHOES[backend]
    if backend == "unity":
        request.getfixturevalue("unity_catalog")
    proxy: FaultProxy = request.getfixturevalue(fixture)
    entry, namespace = _write_echo_backend(backend, proxy, tmp_path / "lake")
    # an earlier apply made the namespace and the apply lease (whose first use creates a table on
    # Iceberg and Glue), so the echo answers the manifest table's create alone
    (tmp_path / "setup").mkdir()
    setup = write_manifest(tmp_path / "setup" / "lance-sync.yaml", entry, namespace, tmp_path / "data")
    setup.write_text(yaml.safe_dump({**yaml.safe_load(setup.read_text()), "tables": []}, sort_keys=False))
    assert run(setup, "apply", "-f", str(setup), "--auto-approve").returncode == 0
    manifest = write_manifest(tmp_path / "lance-sync.yaml", entry, namespace, tmp_path / "data")
    proxy.override("POST", operation, status=status, respond=proxy_echo(status, style))

    saved = tmp_path / "plan.json"
    planned = run(manifest, "plan", "-f", str(manifest), "-o", str(saved))
    assert planned.returncode == 0, describe(planned)
    check("plan stdout", planned.stdout + planned.stderr, echoed=False)
    check("the saved plan", saved.read_text(), echoed=False)
    assert "${LS_SECRET_" in saved.read_text()  # the secrets stay references

    applied = run(manifest, "apply", "-f", str(manifest), "--auto-approve", "--format", "json")
    assert applied.returncode == 3, describe(applied)  # the dataset made, the table not
    check("apply --format json stdout", applied.stdout)
    check("apply stderr", applied.stderr)
    [journal] = (tmp_path / ".lance-sync" / "journal").glob("apply-*.jsonl")
    check("the journal", journal.read_text())
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    failed = [(record["verb"], record["kind"]) for record in records if record["event"] == "failed"]
    assert failed == [("create", "table")], journal.read_text()
    rollback = journal.with_suffix(".rollback.json")
    check("the rollback plan", rollback.read_text(), echoed=False)
    assert "${LS_SECRET_" in rollback.read_text()
    assert proxy.stats["override"] >= 1
