"""50 simultaneous takeovers of one dead apply lease, on every backend: exactly one holder.

A lease whose holder is dead (expired, and its process gone on this host) is seeded; 50
takers, each with its own driver, acquire it with `--lock-timeout 0` semantics. Every taker is
held at its takeover swap by a barrier until all 50 have arrived there, so each has read the
dead lease before any replaces it: the most adversarial interleaving, reached without timing.

On main before compare-and-swap, the same race (takeover = read, check, delete, create) left
16 to 47 takers believing they held the lease (dir, local root; see the branch's report).
Here: exactly one holds, the 49 others refuse with LeaseHeld naming it, and the lease the
backend stores is its record. Then "never two holders that both write": released together
again, every taker makes the write it would make as a holder (the winner renews; each other
taker swaps from the dead lease it read), and exactly one write lands.

Backends: `dir` with a local root (file swapped under flock; threads, and processes), `dir`
with the row register forced on a local root (the manifest row of an object-store root),
Iceberg REST (upstream CatalogHandlers), Glue (moto plus the suite's VersionId layer), the real
HMS 2.3 and the project's Hive 3 server (lock API), Unity (claims).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lance_sync.apply.lease import LeaseHeld, Leases, LeaseStore, lease_stores
from lance_sync.drivers.base import Identifier, SyncNamespace
from lance_sync.drivers.dir.driver import DirNamespace
from lance_sync.drivers.leases import LeaseRecord, LeaseRegister, StoredLease
from tests.conformance.conftest import harness_class
from tests.support.processes import dead_pid, run_together

#: every test here starts Python processes: the slow lane (tests/support/lanes.py)
pytestmark = pytest.mark.usefixtures("subprocesses")

TAKERS = 50
#: a safety net only: a taker that failed before the barrier would otherwise hang the others
BARRIER_TIMEOUT_SECONDS = 300
SERVER_BACKENDS = ["iceberg", "glue", "hms", "hive3", "unity"]


@dataclass
class Site:
    """Where one backend's lease lives: a new driver for each taker, and a namespace an apply touches."""

    driver: Callable[[], SyncNamespace]
    touched: Identifier


def dir_driver(root: Path, rows: bool) -> Callable[[], SyncNamespace]:
    def build() -> SyncNamespace:
        driver = DirNamespace(root=str(root))
        driver.leases_as_files = not rows  # rows: the register of an object-store root
        return driver

    return build


@pytest.fixture(params=["dir", "dir_rows", *(pytest.param(b, marks=pytest.mark.servers) for b in SERVER_BACKENDS)])
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Site:
    if request.param in ("dir", "dir_rows"):
        root = tmp_path / "lake"
        if request.param == "dir_rows":
            DirNamespace(root=str(root)).create_namespace({"id": ["sales"]})  # the manifest exists
        return Site(dir_driver(root, rows=request.param == "dir_rows"), ("sales",))
    cls = harness_class(request.param)
    harness = cls(request.getfixturevalue(cls.server_fixture), tmp_path)
    return Site(harness.driver, (*harness.parent_namespace(), "sales"))


class Together(LeaseRegister):
    """A register whose first swap waits at a barrier (see the module docstring); it keeps the
    lease that swap was made from."""

    def __init__(self, inner: LeaseRegister, barrier: Any):
        super().__init__(inner.where, inner.label)
        self.inner = inner
        self.barrier = barrier
        self.keeps_released = inner.keeps_released  # type: ignore[misc]
        self.seen: StoredLease | None = None

    def create(self, record: LeaseRecord) -> StoredLease | None:
        return self.inner.create(record)

    def read(self) -> StoredLease | None:
        return self.inner.read()

    def swap(self, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        if self.seen is None:
            self.seen = expected
            self.barrier.wait(BARRIER_TIMEOUT_SECONDS)
        return self.inner.swap(expected, record)

    def remove(self, expected: StoredLease) -> bool:
        return self.inner.remove(expected)

    def claimant(self, expected: StoredLease) -> LeaseRecord | None:
        return self.inner.claimant(expected)


def store_of(driver: SyncNamespace, touched: Identifier, owner: str) -> LeaseStore:
    [store] = lease_stores({"backend": driver}, {"backend": [touched]}, owner)
    return store


def seed_dead_lease(site: Site, owner: str) -> StoredLease:
    """A lease that expired long ago and whose process is gone from this host (a Hive lock runs
    until its last heartbeat plus its term, so there the process is what makes it dead)."""
    record = dataclasses.replace(LeaseRecord.new(owner, 120), pid=dead_pid(), holder="gone@here",
                                 started="2020-01-01T00:00:00+00:00", expires="2020-01-01T00:02:00+00:00")
    seeded = store_of(site.driver(), site.touched, owner).register.create(record)
    assert seeded is not None, "the lease existed before the test"
    return seeded


@dataclass
class Taker:
    leases: Leases
    register: Together
    refusal: str | None = None


def take(taker: Taker) -> None:
    """Acquire at once; a refusal is kept, naming the holder."""
    try:
        taker.leases.acquire(timeout=0)
    except LeaseHeld as refused:
        taker.refusal = str(refused)


def race(site: Site, owner: str) -> list[Taker]:
    """TAKERS threads, each with its own driver, take over the lease at once."""
    barrier = threading.Barrier(TAKERS)
    takers = []
    for _ in range(TAKERS):
        store = store_of(site.driver(), site.touched, owner)
        store.register = Together(store.register, barrier)
        takers.append(Taker(Leases([store], owner, sleep=lambda _: None), store.register))

    run_together(take, takers)
    return takers


def test_fifty_takeovers_of_a_dead_lease_leave_one_holder_whose_writes_alone_land(site: Site):
    owner = f"race-{uuid.uuid4().hex[:8]}"
    seed_dead_lease(site, owner)
    takers = race(site, owner)

    holders = [t for t in takers if t.leases.held]
    assert len(holders) == 1, f"{len(holders)} takers hold the lease"
    [winner] = holders
    won = winner.leases.record.id
    refusals = [t.refusal for t in takers if t is not winner]
    assert all(refusal and f"lance-sync unlock {won}" in refusal for refusal in refusals), (
        [r for r in refusals if not r or won not in r][:3])
    stored = store_of(site.driver(), site.touched, owner).register.read()
    assert stored is not None and stored.record.id == won

    # every taker writes as a holder would, at once: one write lands, the winner's renewal
    barrier = threading.Barrier(TAKERS)
    landed: list[str] = []

    def write(taker: Taker) -> None:
        barrier.wait(BARRIER_TIMEOUT_SECONDS)
        if taker is winner:
            if taker.leases._renew_all():
                landed.append(f"renewal by {taker.leases.record.id}")
        elif taker.register.inner.swap(taker.register.seen, taker.leases.record.renewed(120)) is not None:
            landed.append(f"takeover by {taker.leases.record.id}")

    run_together(write, takers)
    assert landed == [f"renewal by {won}"], landed
    after = store_of(site.driver(), site.touched, owner).register.read()
    assert after is not None and after.record.id == won

    winner.leases.release()
    left = store_of(site.driver(), site.touched, owner).register.read()
    assert left is None or left.record.released, left


# --- the same race across processes (dir, local root) --------------------------------------------

PROCESSES = 5


def _take_in_process(root: str, owner: str, barrier: Any, results: Any) -> None:
    """One process's share of the takers: TAKERS // PROCESSES threads."""
    takers = []
    for _ in range(TAKERS // PROCESSES):
        store = store_of(DirNamespace(root=root), ("sales",), owner)
        store.register = Together(store.register, barrier)
        takers.append(Taker(Leases([store], owner, sleep=lambda _: None), store.register))

    run_together(take, takers)
    for taker in takers:
        results.put((taker.leases.record.id, bool(taker.leases.held), taker.refusal))
        taker.leases._stop.set()  # hold on (no release) until the parent has read the lease


def test_fifty_takeovers_from_five_processes_leave_one_holder(tmp_path: Path):
    root = tmp_path / "lake"
    owner = f"race-{uuid.uuid4().hex[:8]}"
    site = Site(dir_driver(root, rows=False), ("sales",))
    seed_dead_lease(site, owner)
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(TAKERS)
    results = context.Queue()
    processes = [context.Process(target=_take_in_process, args=(str(root), owner, barrier, results))
                 for _ in range(PROCESSES)]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=BARRIER_TIMEOUT_SECONDS) for _ in range(TAKERS)]
    for process in processes:
        process.join()
        assert process.exitcode == 0
    winners = [id for id, held, _ in outcomes if held]
    assert len(winners) == 1, f"{len(winners)} takers in {PROCESSES} processes hold the lease"
    assert all(refusal and f"lance-sync unlock {winners[0]}" in refusal for _, held, refusal in outcomes if not held)
    assert store_of(site.driver(), site.touched, owner).register.read().record.id == winners[0]
