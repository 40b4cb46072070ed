"""The directory catalog's own `__manifest` table read straight with pylance, and a stale copy
of it handed to a writer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln

from lance_sync.drivers import register
from lance_sync.drivers.dir.driver import DirNamespace

#: `connect` builds the driver through lance_namespace.connect("lance-sync-dir", ...)
register()


def connect(root: Path | str) -> DirNamespace:
    driver = ln.connect("lance-sync-dir", {"root": str(root)})
    assert isinstance(driver, DirNamespace)
    return driver


def manifest(root: Path | str) -> lance.LanceDataset:
    return lance.dataset(str(Path(root) / "__manifest"))


def manifest_rows(root: Path | str) -> list[dict[str, Any]]:
    return manifest(root).to_table().to_pylist()


def table_rows(root: Path | str) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {}
    for row in manifest_rows(root):
        if row["object_type"] == "table":
            rows.setdefault(row["object_id"], []).append(row)
    return rows


def properties_of(row: dict[str, Any]) -> dict[str, str]:
    return json.loads(row["metadata"]) if row["metadata"] else {}


def hand_stale_manifest(driver: DirNamespace, stale: lance.LanceDataset, times: int = 1) -> None:
    """The driver's next `times` manifest reads return `stale`, a version read before another
    writer committed (what a writer racing that commit would have read)."""
    fresh = driver.client.writable_manifest
    remaining = [times]

    def read() -> lance.LanceDataset | None:
        if remaining[0] > 0:
            remaining[0] -= 1
            driver.count_call()
            return stale
        return fresh()

    driver.client.writable_manifest = read  # type: ignore[method-assign]
