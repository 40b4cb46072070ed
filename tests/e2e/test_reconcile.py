"""The reconcile loop end to end: `lance-sync reconcile` as a subprocess against the Iceberg
REST test server, through a FaultProxy that can take the server away.

The test never waits for time to pass: it reads the loop's JSON lines as they come and waits
for the cycle it expects (the deadline only stops a hung loop from hanging the suite).
"""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.servers.base import RunningServer
from tests.servers.faults import FaultProxy, proxy_fixture
from tests.support.catalogs import (
    OWNER_KEY,
    iceberg_backend,
    iceberg_lance_tables,
    iceberg_leases_held,
)
from tests.support.reconcile import LINE_DEADLINE_SECONDS, Loop, scrape

pytestmark = pytest.mark.servers

iceberg_proxy = proxy_fixture("iceberg_server")
INT64 = [{"name": "id", "type": "int64"}]


def write(path: Path, manifest: dict[str, Any]) -> None:
    """Whole or not at all: a cycle never reads half a manifest."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(yaml.safe_dump(manifest, sort_keys=False))
    os.replace(temporary, path)


def test_reconcile_converges_leaves_removals_survives_an_outage_and_stops_on_sigterm(
        iceberg_server: RunningServer, iceberg_proxy: FaultProxy, tmp_path: Path):
    owner, ns = f"reconcile-{uuid.uuid4().hex[:8]}", f"reconcile_{uuid.uuid4().hex[:8]}"
    warehouse = iceberg_server.extra["warehouse"]
    backend = {**iceberg_backend(iceberg_proxy.server, tmp_path), "max_retries": 0}

    def table(name: str, tier: str) -> dict[str, Any]:
        return {"name": name, "location": str(tmp_path / "data" / f"{name}.lance"), "schema": INT64,
                "properties": {"tier": tier}, "register": [{"backend": "ice", "namespace": [warehouse, ns]}]}

    manifest: dict[str, Any] = {"version": 1, "owner": owner, "backends": {"ice": backend},
                                "namespaces": [{"backend": "ice", "id": [warehouse, ns]}],
                                "tables": [table("a", "gold"), table("b", "gold")]}
    path = tmp_path / "lance-sync.yaml"
    write(path, manifest)
    loop = Loop(path, "--interval", "300ms", "--max-backoff", "1s", "--metrics-port", "0")
    try:
        start = loop.wait_for("start", lambda line: line["event"] == "start")
        assert start["unattended"] == ["create", "update", "rename", "grant"] and start["metrics"].startswith("http://127.0.0.1:")
        first = loop.cycle("applied")
        assert (first["applied"], first["drift"], first["pending"]) == (5, 5, [])  # namespace, 2 datasets, 2 tables
        loop.cycle("in_sync")

        # a changed manifest converges; the removal waits for a person
        manifest["tables"] = [table("a", "silver"), table("c", "gold")]
        write(path, manifest)
        changed = loop.cycle("applied")
        assert changed["applied"] == 3  # update a, write c's data, create c
        assert [(p["action"], p["id"]) for p in changed["pending"]] == [("forget table", f"{warehouse}.{ns}.b")]
        assert "needs approval" in changed["pending"][0]["why"]
        loop.cycle("pending")

        # the catalog goes away: cycles fail and back off, and the loop goes on
        iceberg_proxy.configure(rate=1.0, kinds=["503"], seed=1)
        manifest["tables"][1]["properties"]["tier"] = "bronze"
        write(path, manifest)
        outage = [loop.cycle("error"), loop.cycle("error")]
        assert all("503" in line["error"] or "navailable" in line["error"] for line in outage), outage
        assert all(line["next_run_in_seconds"] >= 0.3 for line in outage)
        iceberg_proxy.configure(rate=0.0)
        recovered = loop.cycle("applied")
        assert recovered["applied"] == 1 and recovered["pending_count"] == 1  # c updated; b still waits
        loop.cycle("pending")

        metrics = scrape(start["metrics"])
        assert metrics['lance_sync_reconcile_cycles_total{outcome="applied"}'] == 3
        assert metrics["lance_sync_reconcile_errors_total"] == sum(line.get("outcome") == "error" for line in loop.seen)
        assert metrics["lance_sync_reconcile_errors_total"] >= 2
        assert metrics["lance_sync_reconcile_actions_applied_total"] == 9
        assert metrics["lance_sync_reconcile_pending_actions"] == 1
        assert metrics["lance_sync_reconcile_drift_actions"] == 1
        assert metrics['lance_sync_reconcile_last_outcome{outcome="pending"}'] == 1
        assert metrics["lance_sync_reconcile_consecutive_failures"] == 0
        assert metrics["lance_sync_reconcile_last_run_timestamp_seconds"] > 0

        loop.process.send_signal(signal.SIGTERM)
        assert loop.process.wait(timeout=LINE_DEADLINE_SECONDS) == 0, loop.describe()
        stopped = loop.wait_for("stop", lambda line: line["event"] == "stop")
        assert stopped["reason"] == "signal"
    finally:
        loop.stop()

    # what the catalog holds, read straight from the server with pyiceberg
    names, tables = iceberg_lance_tables(iceberg_server, ns)
    assert sorted(names) == ["a", "b", "c"]  # b left for approval
    assert {name: props["tier"] for name, (_, props) in tables.items()} == {"a": "silver", "b": "gold", "c": "bronze"}
    assert all(props[OWNER_KEY] == owner for _, props in tables.values())
    assert not iceberg_leases_held(iceberg_server, owner)
