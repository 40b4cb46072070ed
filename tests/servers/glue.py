"""The session's AWS Glue endpoint: tests/servers/glue_server in a subprocess.

`start` is what the `glue_server` fixture calls. `GlueControl` drives the test
server's control paths (request counts, injected faults, seeded child
catalogs); `glue_client` builds a boto3 client for the test server or for an
external Glue-compatible endpoint, and `lakeformation_client` one for the Lake
Formation calls the same server answers. See tests/servers/docs/glue.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.servers.base import RunningServer, stop_process, wait_until
from tests.servers.glue_server import CONTROL_PREFIX
from tests.servers.glue_server.signatures import KNOWN_SECRETS

ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
#: Fake credentials: the test server checks the signatures made with these (and accepts any
#: other key unchecked; glue_server/signatures.py).
ACCESS_KEY_ID = "testing"
SECRET_ACCESS_KEY = KNOWN_SECRETS[ACCESS_KEY_ID]
PROJECT_ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_SECONDS = 60

#: Control calls go to 127.0.0.1 only: never through a proxy from the environment.
_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def start(workdir: Path) -> RunningServer:
    """Start the Glue test server on a free 127.0.0.1 port and wait until it answers Glue calls."""
    log_path = workdir / "glue_server.log"
    port_file = workdir / "glue_server.port"
    began = time.monotonic()
    process = _launch(log_path, port_file)
    try:
        wait_until(port_file.exists, STARTUP_TIMEOUT_SECONDS, "glue test server", log_path, process)
        endpoint = f"http://127.0.0.1:{port_file.read_text().strip()}"
        wait_until(
            lambda: _answers_glue(endpoint),
            STARTUP_TIMEOUT_SECONDS,
            "glue test server",
            log_path,
            process,
        )
    except BaseException:
        stop_process(process)
        raise
    control = GlueControl(endpoint)
    return RunningServer(
        name="glue",
        endpoint=endpoint,
        startup_seconds=time.monotonic() - began,
        log_path=log_path,
        count_requests=control.request_count,
        reset_requests=control.reset_request_count,
        stop=lambda: stop_process(process),
        extra={
            "region": REGION,
            "account_id": ACCOUNT_ID,
            "access_key_id": ACCESS_KEY_ID,
            "secret_access_key": SECRET_ACCESS_KEY,
            "pid": process.pid,
        },
    )


def glue_client(server: RunningServer, **config: Any) -> Any:
    """A boto3 Glue client for `server`; Config options as keywords (e.g. retries={...}).

    Against an external endpoint, region, credentials and proxies come from the usual
    AWS configuration.
    """
    if server.external:
        return boto3.client("glue", endpoint_url=server.endpoint, config=Config(**config))
    return _local_client(server.endpoint, **config)


def lakeformation_client(server: RunningServer, **config: Any) -> Any:
    """A boto3 Lake Formation client for `server`, which answers Lake Formation on the Glue port."""
    if server.external:
        return boto3.client("lakeformation", endpoint_url=server.endpoint, config=Config(**config))
    return _local_client(server.endpoint, service="lakeformation", **config)


class GlueControl:
    """Client of the test server's control paths (tests/servers/glue_server/app.py)."""

    def __init__(self, endpoint: str):
        self._base = endpoint + CONTROL_PREFIX

    def request_counts(self) -> dict:
        """{"total": N, "by_operation": {"GetTables": n, ...}} since the last reset."""
        return self._call("GET", "/requests")

    def request_count(self) -> int:
        return self.request_counts()["total"]

    def reset_request_count(self) -> None:
        self._call("DELETE", "/requests")

    def inject_fault(
        self,
        code: str,
        *,
        times: int | None = 1,
        operations: list[str] | None = None,
        names: list[str] | None = None,
        status: int | None = None,
        message: str | None = None,
    ) -> dict:
        """Answer the next `times` matching Glue calls (all while None) with error `code`."""
        optional = {"operations": operations, "names": names, "status": status, "message": message}
        rule = {
            "code": code,
            "times": times,
            **{key: value for key, value in optional.items() if value is not None},
        }
        return self._call("POST", "/faults", rule)

    def clear_faults(self) -> None:
        self._call("DELETE", "/faults")

    def seed_catalog(
        self, parent_catalog_id: str, name: str, catalog_input: dict | None = None
    ) -> str:
        """Create a child catalog, as a federated source would; returns its CatalogId."""
        spec = {
            "ParentCatalogId": parent_catalog_id,
            "Name": name,
            "CatalogInput": catalog_input or {},
        }
        return self._call("POST", "/catalogs", spec)["CatalogId"]

    def seed_tables(self, catalog_id: str, database: str, table_inputs: list[dict]) -> int:
        """CreateTable of each TableInput in one control request (checked and stored as
        CreateTable stores it; not counted): seeds a large estate fast. Returns the tables created."""
        spec = {"CatalogId": catalog_id, "DatabaseName": database, "TableInputs": table_inputs}
        return self._call("POST", "/tables", spec, timeout=300)["created"]

    def reset(self) -> None:
        """Forget every catalog, database, table, Lake Formation grant, count and fault."""
        self._call("POST", "/reset")

    def _call(self, method: str, path: str, payload: dict | None = None, timeout: float = 10) -> Any:
        data = json.dumps(payload).encode() if payload is not None else None
        request = urllib.request.Request(
            self._base + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with _direct.open(request, timeout=timeout) as response:
            return json.loads(response.read() or b"null")


def _launch(log_path: Path, port_file: Path) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "tests.servers.glue_server",
        "--account-id",
        ACCOUNT_ID,
        "--region",
        REGION,
        "--port-file",
        str(port_file),
        "--exit-with-parent",
    ]
    with log_path.open("ab") as log:
        return subprocess.Popen(
            command,
            cwd=PROJECT_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


def _answers_glue(endpoint: str) -> bool:
    client = _local_client(
        endpoint, retries={"total_max_attempts": 1}, connect_timeout=2, read_timeout=5
    )
    client.get_databases(MaxResults=1)
    return True


def _local_client(endpoint: str, service: str = "glue", **config: Any) -> Any:
    """A client of the test server: its fake credentials, and never a proxy from the environment."""
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY_ID,
        aws_secret_access_key=SECRET_ACCESS_KEY,
        config=Config(proxies={}, **config),
    )


NO_RETRIES = {"mode": "standard", "total_max_attempts": 1}


@contextmanager
def glue_error(code: str) -> Iterator[None]:
    with pytest.raises(ClientError) as caught:
        yield
    assert caught.value.response["Error"]["Code"] == code, caught.value


def all_pages(call: Any, list_key: str, **request: Any) -> list[list[dict]]:
    """Every page of a NextToken listing, as the caller sees them."""
    pages, token = [], None
    while True:
        response = call(**request, **({"NextToken": token} if token else {}))
        pages.append(response[list_key])
        token = response.get("NextToken")
        if not token:
            return pages


class Scratch:
    """Uniquely named catalogs and databases for one test, deleted afterwards."""

    def __init__(self, glue: Any):
        self.glue = glue
        self.prefix = f"ls_{uuid.uuid4().hex[:8]}"
        self._catalogs: list[str] = []
        self._databases: list[tuple[str | None, str]] = []

    def name(self, suffix: str) -> str:
        return f"{self.prefix}_{suffix}"

    def catalog(self, suffix: str, **catalog_input: Any) -> str:
        name = self.name(suffix).lower()
        self.glue.create_catalog(Name=name, CatalogInput=catalog_input)
        self._catalogs.append(name)
        return name

    def database(self, suffix: str, catalog_id: str | None = None, **database_input: Any) -> str:
        name = self.name(suffix)
        scope = {"CatalogId": catalog_id} if catalog_id else {}
        self.glue.create_database(**scope, DatabaseInput={"Name": name, **database_input})
        self._databases.append((catalog_id, name))
        return name

    def clean_up(self) -> None:
        for catalog_id, name in reversed(self._databases):
            scope = {"CatalogId": catalog_id} if catalog_id else {}
            _ignore_missing(self.glue.delete_database, **scope, Name=name)
        for name in reversed(self._catalogs):
            _ignore_missing(self.glue.delete_catalog, CatalogId=name)


def _ignore_missing(call: Any, **request: Any) -> None:
    try:
        call(**request)
    except ClientError as error:
        if error.response["Error"]["Code"] != "EntityNotFoundException":
            raise
