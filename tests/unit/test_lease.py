"""Leases without a server: exclusive, taken over from the dead, read back after a lost answer."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from lance_namespace.errors import ServiceUnavailableError

from lance_sync.lease import FileLeaseStore, LeaseHeld, LeaseRecord, Leases, lease_name, unlock


def leases(root, owner: str = "team") -> Leases:
    return Leases([FileLeaseStore(str(root), owner, "lake")], owner, sleep=lambda _: None)


def test_one_holder_at_a_time_and_the_refusal_names_it(tmp_path):
    first = leases(tmp_path)
    first.acquire()
    try:
        with pytest.raises(LeaseHeld, match=rf"pid {os.getpid()}.*lance-sync unlock {first.record.id}"):
            leases(tmp_path).acquire(timeout=0)
    finally:
        first.release()
    second = leases(tmp_path)
    second.acquire()
    second.release()


def test_a_dead_holder_is_taken_over(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    store = FileLeaseStore(str(tmp_path), "team", "lake")
    record = LeaseRecord.new("team", 120)
    assert store.create(LeaseRecord(**{**record.__dict__, "pid": int(dead.stdout)}))
    taker = leases(tmp_path)
    taker.acquire(timeout=0)
    assert store.read().id == taker.record.id
    taker.release()
    assert store.read() is None


def test_unlock_removes_only_the_named_lease(tmp_path):
    holder = leases(tmp_path)
    holder.acquire()
    store = holder.stores[0]
    assert unlock([store], "not-it") == []
    assert unlock([store], holder.record.id) and store.read() is None
    holder.release()  # its lease is gone: releasing changes nothing


class LosingStore(FileLeaseStore):
    """The create lands, but its answer is lost once."""

    lost = False

    def create(self, record: LeaseRecord) -> bool:
        created = super().create(record)
        if not self.lost:
            self.lost = True
            raise ServiceUnavailableError("answer lost")
        return created


def test_a_create_whose_answer_was_lost_is_read_back(tmp_path):
    lease = Leases([LosingStore(str(tmp_path), "team", "lake")], "team", sleep=lambda _: None)
    lease.acquire(timeout=0)
    assert lease.held and lease.stores[0].read().id == lease.record.id
    lease.release()


def test_lease_names_are_valid_everywhere_and_distinct():
    assert lease_name("Data Platform/EU") != lease_name("data-platform-eu")
    assert all(c.isalnum() or c == "_" for c in lease_name("Data Platform/EU"))
