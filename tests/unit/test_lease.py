"""Leases without a server (a local `dir` root): exclusive, taken over from the dead, renewed and
released as compare-and-swap, read back after a lost answer, old files still understood."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from lance_namespace.errors import ServiceUnavailableError

from lance_sync.apply.lease import (
    LeaseHeld,
    Leases,
    LeaseStore,
    current_leases,
    lease_name,
    lease_stores,
    unlock,
)
from lance_sync.cli.app import main
from lance_sync.drivers.dir.config import LEASE_DIRECTORY
from lance_sync.drivers.dir.driver import DirNamespace
from lance_sync.drivers.dir.leases import FileLeaseRegister
from lance_sync.drivers.leases import LeaseRecord, StoredLease

OWNER = "team"


def store(root: Path) -> LeaseStore:
    [only] = lease_stores({"lake": DirNamespace(root=str(root))}, {"lake": [("sales",)]}, OWNER)
    return only


def leases(root: Path) -> Leases:
    return Leases([store(root)], OWNER, sleep=lambda _: None)


def dead_pid() -> int:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
    return int(finished.stdout)


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


def test_a_dead_holder_is_taken_over_by_one_swap(tmp_path, subprocesses: None):
    register = store(tmp_path).register
    dead = register.create(dataclasses.replace(LeaseRecord.new(OWNER, 120), pid=dead_pid()))
    assert dead is not None
    taker = leases(tmp_path)
    taker.acquire(timeout=0)
    assert register.read().record.id == taker.record.id
    assert register.swap(dead, LeaseRecord.new(OWNER, 120)) is None, "the dead record was swapped twice"
    taker.release()
    assert register.read() is None


def test_a_renewal_that_finds_another_record_marks_the_lease_lost(tmp_path):
    holder = leases(tmp_path)
    holder.acquire()
    holder._stop.set()  # renewals by hand below
    register = holder.stores[0].register
    assert holder._renew_all() and register.read().record.expires == holder.record.expires
    register.swap(register.read(), LeaseRecord.new("intruder", 120))
    assert not holder._renew_all()
    holder.release()
    assert register.read().record.owner == "intruder", "the release removed another apply's lease"


class FailingRenewals(FileLeaseRegister):
    """Every swap fails without an answer."""

    def swap(self, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        raise ServiceUnavailableError("no answer")


def test_a_holder_that_cannot_renew_stops_before_its_lease_can_expire(tmp_path):
    register = FailingRenewals(tmp_path / LEASE_DIRECTORY, lease_name(OWNER))
    holder = Leases([LeaseStore(register, "lake")], OWNER, sleep=lambda _: None)
    holder.acquire()
    holder._stop.set()  # renewals by hand below
    [(store, held)] = holder._held.items()
    assert holder._renew_all(), "a failed renewal with 2 minutes left is tried again later"
    holder._held[store] = dataclasses.replace(held, record=held.record.renewed(20))
    assert not holder._renew_all(), "20 s left, less than the 30 s until the next renewal"
    holder.release()


def test_unlock_removes_only_the_named_lease(tmp_path):
    holder = leases(tmp_path)
    holder.acquire()
    stores = holder.stores
    assert unlock(stores, "not-it") == []
    assert [record.id for _, record in current_leases(stores)] == [holder.record.id]
    assert unlock(stores, holder.record.id) and stores[0].register.read() is None
    holder.release()  # its lease is gone: releasing changes nothing


class LosingRegister(FileLeaseRegister):
    """The create lands, but its answer is lost once."""

    lost = False

    def create(self, record: LeaseRecord) -> StoredLease | None:
        created = super().create(record)
        if not self.lost:
            self.lost = True
            raise ServiceUnavailableError("answer lost")
        return created


def test_a_create_whose_answer_was_lost_is_read_back(tmp_path):
    register = LosingRegister(tmp_path / LEASE_DIRECTORY, lease_name(OWNER))
    lease = Leases([LeaseStore(register, "lake")], OWNER, sleep=lambda _: None)
    lease.acquire(timeout=0)
    assert lease.held and register.read().record.id == lease.record.id
    lease.release()


def test_a_lease_file_of_the_previous_format_is_read_and_taken_over(tmp_path):
    """lance-sync before compare-and-swap wrote the same JSON; a dead one is taken over."""
    path = tmp_path / LEASE_DIRECTORY / f"{lease_name(OWNER)}.json"
    path.parent.mkdir()
    old = {"id": "0123456789ab", "owner": OWNER, "holder": "ci@elsewhere", "host": "elsewhere", "pid": 7,
           "started": "2020-01-01T00:00:00+00:00", "expires": "2020-01-01T00:02:00+00:00"}
    path.write_text(json.dumps(old))
    assert store(tmp_path).register.read().record == LeaseRecord(**old)
    taker = leases(tmp_path)
    taker.acquire(timeout=0)
    assert json.loads(path.read_text())["id"] == taker.record.id
    taker.release()


def test_a_file_that_is_not_a_lease_is_an_error_naming_it(tmp_path):
    path = tmp_path / LEASE_DIRECTORY / f"{lease_name(OWNER)}.json"
    path.parent.mkdir()
    path.write_text("{}")
    with pytest.raises(Exception, match=f"{path.name} exists but is not a lance-sync lease"):
        leases(tmp_path).acquire(timeout=0)


def test_the_unlock_command_lists_and_removes_a_lease(tmp_path):
    manifest = tmp_path / "lance-sync.yaml"
    manifest.write_text(yaml.safe_dump({"version": 1, "owner": OWNER,
                                        "backends": {"lake": {"type": "dir", "root": str(tmp_path)}},
                                        "namespaces": [{"backend": "lake", "id": "sales"}]}))
    holder = leases(tmp_path)
    holder.acquire()
    holder._stop.set()
    listed = CliRunner().invoke(main, ["unlock", "-f", str(manifest)])
    assert listed.exit_code == 0 and f"lease {holder.record.id} held by" in listed.output, listed.output
    removed = CliRunner().invoke(main, ["unlock", holder.record.id, "-f", str(manifest)])
    assert removed.exit_code == 0 and "Removed" in removed.output, removed.output
    assert "No apply holds a lease" in CliRunner().invoke(main, ["unlock", "-f", str(manifest)]).output


def test_lease_names_are_valid_everywhere_and_distinct():
    assert lease_name("Data Platform/EU") != lease_name("data-platform-eu")
    assert all(c.isalnum() or c == "_" for c in lease_name("Data Platform/EU"))
