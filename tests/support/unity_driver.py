"""The Unity driver on the suite's Unity server, and tables declared through it."""

from __future__ import annotations

import uuid
from pathlib import Path

from lance_namespace import (
    DeclareTableRequest,
)

from lance_sync.drivers.unity.driver import UnityNamespace
from tests.conformance.harness_unity import EXTERNAL_TOKEN
from tests.servers.base import RunningServer


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def make_driver(server: RunningServer, catalog: str, root: Path, **properties: str) -> UnityNamespace:
    config = {"endpoint": server.endpoint, "catalog": catalog, "root": str(root)}
    if server.external and EXTERNAL_TOKEN:
        config["auth_token"] = EXTERNAL_TOKEN
    return UnityNamespace(**{**config, **properties})


def declare(driver: UnityNamespace, table_id: tuple[str, ...], location: str | Path | None = None,
            **properties: str):
    return driver.declare_table(DeclareTableRequest(
        id=list(table_id), location=str(location) if location else None, properties=properties or None))
