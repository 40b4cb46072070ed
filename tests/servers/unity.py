"""Starts the project's Unity Catalog OSS test server (tests/servers/unity_server).

`start(workdir)` runs it as its own Python process on 127.0.0.1 (port chosen
by the server, reported through a file), checks it with a real API request and
hands back a `RunningServer` whose endpoint is `http://127.0.0.1:PORT` (the
API lives under /api/2.1/unity-catalog). `inject_faults` and `clear_faults`
drive its test-only fault injection; `create_user` makes a grant principal
through UC's SCIM API. See tests/servers/docs/unity.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import requests

from tests.servers.base import RunningServer, stop_process, wait_until
from tests.servers.unity_server.app import API_ROOT, CONTROL_API_ROOT, CONTROL_ROOT
from tests.servers.unity_server.server import TOKEN_VARIABLE

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = 30.0

# Loopback only: never route these calls through a proxy from the environment.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def start(workdir: Path, token: str | None = None, authorization: bool = True) -> RunningServer:
    """Start a server keeping its SQLite database and log in `workdir`.

    With `token`, every API call must carry `Authorization: Bearer <token>`.
    `authorization` is UC's `server.authorization`. It is on by default, unlike
    UC's own default, because grants are stored only with it on; with it off
    the server behaves as a stock UC does: PATCH of permissions is accepted and
    drops every grant, and GET lists none.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / "unity-server.log"
    port_file = workdir / "unity-server.port"
    port_file.unlink(missing_ok=True)
    began = time.monotonic()
    process = _spawn(workdir, port_file, log_path, token, authorization)
    try:
        wait_until(port_file.exists, STARTUP_TIMEOUT, "Unity Catalog test server", log_path, process)
        endpoint = f"http://127.0.0.1:{port_file.read_text().strip()}"
        wait_until(lambda: _answers_api(endpoint, token), STARTUP_TIMEOUT,
                   "Unity Catalog test server API", log_path, process)
    except BaseException:
        stop_process(process)
        raise
    startup_seconds = time.monotonic() - began
    _control(endpoint, "DELETE", "/requests")  # the health check is not a driver's call
    return RunningServer(
        name="unity",
        endpoint=endpoint,
        startup_seconds=startup_seconds,
        log_path=log_path,
        count_requests=lambda: _control(endpoint, "GET", "/requests")["count"],
        reset_requests=lambda: _control(endpoint, "DELETE", "/requests"),
        stop=lambda: stop_process(process),
        extra={"pid": process.pid, "api_url": endpoint + API_ROOT},
    )


def inject_faults(server: RunningServer, status: int, count: int = 1, retry_after: int | None = None,
                  method: str | None = None, path_prefix: str | None = None) -> None:
    """Make the next `count` API requests (optionally only `method` ones, or only those under
    `path_prefix`, e.g. "/tables") answer `status` with a UC-style error body."""
    fault = {"status": status, "count": count, "retry_after": retry_after,
             "method": method, "path_prefix": path_prefix}
    _control(server.endpoint, "POST", "/faults", fault)


def clear_faults(server: RunningServer) -> None:
    _control(server.endpoint, "DELETE", "/faults")


def create_user(server: RunningServer, email: str, name: str | None = None,
                token: str | None = None) -> dict:
    """Create a user (a grant's principal) through UC's SCIM API, as on a real UC; returns the
    SCIM UserResource. Works against an external UC too (its admin token as `token`)."""
    resource = {"displayName": name or email, "emails": [{"value": email, "primary": True}]}
    request = urllib.request.Request(f"{server.endpoint}{CONTROL_API_ROOT}/scim2/Users",
                                     data=json.dumps(resource).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    with _opener.open(request, timeout=10) as response:
        return json.load(response)


def _spawn(workdir: Path, port_file: Path, log_path: Path, token: str | None,
           authorization: bool) -> subprocess.Popen:
    environment = {**os.environ, "PYTHONUNBUFFERED": "1"}
    environment.pop(TOKEN_VARIABLE, None)
    if token is not None:
        environment[TOKEN_VARIABLE] = token
    command = [
        sys.executable, "-m", "tests.servers.unity_server",
        "--db", str(workdir / "unity.sqlite3"),
        "--port-file", str(port_file),
        "--parent-pid", str(os.getpid()),
        "--authorization", "enable" if authorization else "disable",
    ]
    with open(log_path, "ab") as log:
        return subprocess.Popen(command, cwd=PROJECT_ROOT, env=environment, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT)


def _answers_api(endpoint: str, token: str | None) -> bool:
    request = urllib.request.Request(f"{endpoint}{API_ROOT}/catalogs?max_results=1")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    with _opener.open(request, timeout=5) as response:
        return response.status == 200 and "catalogs" in json.load(response)


def _control(endpoint: str, method: str, path: str, payload: dict | None = None) -> dict:
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(f"{endpoint}{CONTROL_ROOT}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with _opener.open(request, timeout=10) as response:
        return json.load(response)


EXTERNAL_TOKEN = os.environ.get("LANCE_SYNC_TEST_UNITY_TOKEN") or None


def raw(server: RunningServer, method: str, path: str, **kwargs: Any) -> requests.Response:
    """A request the SDK cannot make (it validates enums and has no table PATCH)."""
    session = requests.Session()
    session.trust_env = False
    if EXTERNAL_TOKEN and server.external:
        session.headers["Authorization"] = f"Bearer {EXTERNAL_TOKEN}"
    with session:
        return session.request(method, server.endpoint + API_ROOT + path, timeout=30, **kwargs)
