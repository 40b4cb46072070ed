"""Applies against a real Hive Metastore 2.3 without transaction tables (issue 50): the schema
DataNucleus' autoCreateAll makes, as in many quick set-ups (`hms_server_without_txn`).

Its lock API fails every call ("Internal error processing lock"): an apply with the default
lease stops with a message that names the backend, says what is missing, how to make it and
which key chooses the fallback, and changes nothing. With `lease: table` the lease is a view of
a lease database (`HiveViewLeaseRegister`), and applies work: one at a time, a dead holder's
lease taken over. Races happen at points the test controls (a hook, a barrier), never by timing.

Fails on the code before (602d6a3): the apply fails with the bare metastore error (no word of
the transaction tables), and `lease: table` is refused by the configuration model.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from lance_sync import api
from lance_sync.apply.lease import LeaseHeld, Leases, LeaseStore, lease_name, lease_stores
from lance_sync.drivers.hive3 import Hive3Namespace
from lance_sync.drivers.leases import LeaseRecord, StoredLease
from lance_sync.model.errors import ExitCode, LanceSyncError
from tests.servers.base import RunningServer
from tests.servers.hive_support import hive_client
from tests.support.cli import cli_env, run_cli
from tests.support.processes import dead_pid, run_together

#: takers of one lease at once in the races below
TAKERS = 8
#: a safety net only: a taker that failed before the barrier would otherwise hang the others
BARRIER_TIMEOUT_SECONDS = 120


def write_manifest(server: RunningServer, tmp_path: Path, **backend: str) -> tuple[Path, str, str]:
    """A manifest of one database with one table on `server`: (path, owner, database)."""
    suffix = uuid.uuid4().hex[:8]
    owner, database = f"notxn-{suffix}", f"notxn_{suffix}"
    manifest = {
        "version": 1, "owner": owner,
        "backends": {"hms": {"type": "hive3", "uri": server.endpoint, "root": str(tmp_path / "lake"), **backend}},
        "namespaces": [{"backend": "hms", "id": f"hive${database}"}],
        "tables": [{"name": "orders", "location": str(tmp_path / "lake" / database / "orders.lance"),
                    "register": [{"backend": "hms", "namespace": f"hive${database}"}]}],
    }
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest))
    return path, owner, database


def catalog(server: RunningServer) -> dict[str, list[str]]:
    """Every database of the metastore with its tables, as pymetastore sees them."""
    with hive_client(server.endpoint) as client:
        return {database: sorted(client.get_all_tables(database)) for database in sorted(client.get_all_databases())}


def view_driver(server: RunningServer, tmp_path: Path) -> Hive3Namespace:
    return Hive3Namespace(uri=server.endpoint, root=str(tmp_path / "lake"), lease="table")


def the_store(driver: Hive3Namespace, owner: str) -> LeaseStore:
    [store] = lease_stores({"hms": driver}, {"hms": [("hive", "sales")]}, owner)
    return store


def test_an_apply_with_the_lock_lease_fails_saying_what_is_missing_and_changes_nothing(
        hms_server_without_txn: RunningServer, tmp_path: Path):
    manifest, owner, database = write_manifest(hms_server_without_txn, tmp_path)
    before = catalog(hms_server_without_txn)

    result = run_cli(manifest, "apply", "--auto-approve", env=cli_env())  # asserts no traceback

    assert result.returncode == ExitCode.ERROR, result
    said = " ".join((result.stdout + result.stderr).split())
    for words in ("backend 'hms'", "no transaction tables", "TXNS", "HIVE_LOCKS",
                  "schematool -dbType", "-initSchema", "hive-txn-schema", "`lease: table`",
                  "Internal error processing lock", "nothing was changed"):
        assert words in said, (words, said)
    assert catalog(hms_server_without_txn) == before
    assert database not in before and not (tmp_path / "lake").exists()


def test_an_apply_with_the_table_lease_succeeds_and_plans_clean(hms_server_without_txn: RunningServer,
                                                               tmp_path: Path):
    manifest, owner, database = write_manifest(hms_server_without_txn, tmp_path, lease="table")
    state = api.load(manifest)
    seen: list[StoredLease | None] = []
    register = the_store(view_driver(hms_server_without_txn, tmp_path), owner).register
    hooks = api.ApplyHooks(on_plan=lambda plan: seen.append(register.read()))

    result = api.apply(state, hooks=hooks)

    assert result.status == "applied"
    [held] = seen
    assert held is not None and held.record.owner == owner and not held.record.released
    after = catalog(hms_server_without_txn)
    assert after[database] == ["orders"]
    assert after[lease_name(owner)] == [], "the lease view (or a claim) was left behind"
    assert not api.plan(state).has_changes
    assert api.apply(state).status == "no_changes"


def test_a_second_apply_meets_the_table_lease_held_and_refuses_naming_it(hms_server_without_txn: RunningServer,
                                                                        tmp_path: Path):
    """The second apply starts while the first holds the lease (its plan hook runs it)."""
    manifest, owner, database = write_manifest(hms_server_without_txn, tmp_path, lease="table")
    state = api.load(manifest)
    refusals: list[str] = []
    holders: list[str] = []

    def second_apply(plan: Any) -> None:
        register = the_store(view_driver(hms_server_without_txn, tmp_path), owner).register
        holders.append(register.read().record.id)
        with pytest.raises(LeaseHeld) as refused:
            api.apply(api.load(manifest), lock_timeout=0)
        refusals.append(str(refused.value))

    result = api.apply(state, hooks=api.ApplyHooks(on_plan=second_apply))

    assert result.status == "applied"
    [holder] = holders
    [refusal] = refusals
    assert f"lance-sync unlock {holder}" in refusal and "backend 'hms'" in refusal, refusal
    assert catalog(hms_server_without_txn)[database] == ["orders"]  # created once, by the first


def test_takers_of_a_free_table_lease_at_once_leave_one_holder(hms_server_without_txn: RunningServer,
                                                              tmp_path: Path):
    """TAKERS applies, each with its own driver, create the lease at the same moment (a barrier
    before the create): exactly one holds it, the others refuse naming it."""
    owner = f"notxn-{uuid.uuid4().hex[:8]}"
    holders, refusals = race(hms_server_without_txn, tmp_path, owner, "create")
    assert len(holders) == 1, f"{len(holders)} takers hold the lease"
    [winner] = holders
    assert all(f"lance-sync unlock {winner.record.id}" in refusal for refusal in refusals), refusals
    winner.release()


def test_a_dead_table_lease_is_taken_over_by_one_of_many(hms_server_without_txn: RunningServer,
                                                        tmp_path: Path, subprocesses: None):
    """A lease whose holder is gone (its process ended on this host, its term over) is taken
    over; TAKERS applies doing it at once (a barrier before each one's swap, so each read the
    dead lease first) leave one holder, and its record is the lease."""
    owner = f"notxn-{uuid.uuid4().hex[:8]}"
    register = the_store(view_driver(hms_server_without_txn, tmp_path), owner).register
    dead = dataclasses.replace(LeaseRecord.new(owner, 120), pid=dead_pid(), started="2020-01-01T00:00:00+00:00",
                               expires="2020-01-01T00:02:00+00:00")
    assert register.create(dead) is not None

    holders, refusals = race(hms_server_without_txn, tmp_path, owner, "swap")

    assert len(holders) == 1, f"{len(holders)} takers hold the lease"
    [winner] = holders
    assert all(f"lance-sync unlock {winner.record.id}" in refusal for refusal in refusals), refusals
    assert register.read().record.id == winner.record.id
    winner.release()
    assert register.read() is None
    assert catalog(hms_server_without_txn)[lease_name(owner)] == [], "claims were left behind"


def race(server: RunningServer, tmp_path: Path, owner: str, step: str) -> tuple[list[Leases], list[str]]:
    """TAKERS threads acquire the lease at once (timeout 0), each held at its register's first
    `step` ("create" or "swap") until all have arrived there: (the holders, the refusals)."""
    barrier = threading.Barrier(TAKERS)
    takers = []
    for _ in range(TAKERS):
        store = the_store(view_driver(server, tmp_path), owner)
        first = getattr(store.register, step)
        arrived = threading.Event()

        def together(*args: Any, first: Any = first, arrived: threading.Event = arrived) -> Any:
            if not arrived.is_set():
                arrived.set()
                barrier.wait(BARRIER_TIMEOUT_SECONDS)
            return first(*args)

        setattr(store.register, step, together)
        takers.append(Leases([store], owner, sleep=lambda _: None))
    refusals: list[str] = []

    def take(leases: Leases) -> None:
        try:
            leases.acquire(timeout=0)
        except LeaseHeld as refused:
            refusals.append(str(refused))

    run_together(take, takers)
    return [leases for leases in takers if leases.held], refusals


def test_the_lock_lease_error_reaches_api_callers_as_a_lance_sync_error(hms_server_without_txn: RunningServer,
                                                                       tmp_path: Path):
    manifest, _, _ = write_manifest(hms_server_without_txn, tmp_path)
    with pytest.raises(LanceSyncError, match=r"backend 'hms'.*no transaction tables"):
        api.apply(api.load(manifest))
