"""Apply leases on each backend, beyond the race (test_lease_race.py): what each backend's own
client sees of a lease, leases of the previous format, claims left by a takeover that stopped
midway (Unity), plans that never see lease objects, and what a lease costs in calls.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from pathlib import Path

import pytest
import yaml
from pymetastore.hive_metastore.ttypes import ShowLocksRequest

from lance_sync import api
from lance_sync.apply.lease import (
    LeaseHeld,
    Leases,
    LeaseStore,
    current_leases,
    lease_name,
    lease_stores,
    unlock,
)
from lance_sync.drivers.base import Identifier, SyncNamespace
from lance_sync.drivers.dir.driver import DirNamespace
from lance_sync.drivers.leases import LeaseRecord, NamespaceLeaseRegister
from tests.conformance.conftest import harness_class
from tests.conformance.harness import Harness
from tests.servers.base import RunningServer
from tests.servers.glue import glue_client
from tests.servers.hive_support import hive_client
from tests.support.catalogs import (
    GLUE_CATALOG,
    ensure_glue_catalog,
    glue_backend,
    glue_catalog_id,
    glue_env,
    iceberg_backend,
    pyiceberg,
)
from tests.support.processes import dead_pid

pytestmark = pytest.mark.servers


def harness_for(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Harness:
    cls = harness_class(backend)
    return cls(request.getfixturevalue(cls.server_fixture), tmp_path)


def the_store(driver: SyncNamespace, harness: Harness, owner: str) -> LeaseStore:
    [store] = lease_stores({"b": driver}, {"b": [(*harness.parent_namespace(), "sales")]}, owner)
    return store


def leases_of(driver: SyncNamespace, harness: Harness, owner: str) -> Leases:
    return Leases([the_store(driver, harness, owner)], owner, sleep=lambda _: None)


def unique_owner() -> str:
    return f"lease-{uuid.uuid4().hex[:8]}"


# --- what each backend's own client sees ----------------------------------------------------------


def test_pyiceberg_reads_the_lease_table_and_commits_keep_it_small(request, tmp_path):
    harness = harness_for("iceberg", request, tmp_path)
    owner = unique_owner()
    holder = leases_of(harness.driver(), harness, owner)
    holder.acquire()
    table_id = (lease_name(owner), "lease")
    catalog = pyiceberg(harness.server)
    assert catalog.load_table(table_id).properties["lance_sync.lease.id"] == holder.record.id
    for _ in range(3):
        assert holder._renew_all()
    holder.release()
    table = catalog.load_table(table_id)
    assert table.properties["lance_sync.lease.id"] == holder.record.id
    assert table.properties["lance_sync.lease.released"]
    # the create, 3 renewals and the release: each swap added a schema and removed the one
    # before; one earlier metadata file is kept
    assert [schema.schema_id for schema in table.metadata.schemas] == [table.metadata.current_schema_id] == [4]
    assert len(table.metadata.metadata_log) <= 1


def test_boto3_reads_the_lease_table_and_renewals_are_not_archived(request, tmp_path):
    harness = harness_for("glue", request, tmp_path)
    owner = unique_owner()
    holder = leases_of(harness.driver(), harness, owner)
    holder.acquire()
    for _ in range(3):
        assert holder._renew_all()
    catalog_id, _ = harness._database((*harness.parent_namespace(), "x"))
    glue = glue_client(harness.server)
    table = glue.get_table(CatalogId=catalog_id, DatabaseName=lease_name(owner), Name="lease")["Table"]
    assert table["Parameters"]["lance_sync.lease.id"] == holder.record.id
    versions = glue.get_table_versions(CatalogId=catalog_id, DatabaseName=lease_name(owner), TableName="lease")
    assert [version["VersionId"] for version in versions["TableVersions"]] == [table["VersionId"]]
    holder.release()
    table = glue.get_table(CatalogId=catalog_id, DatabaseName=lease_name(owner), Name="lease")["Table"]
    assert table["Parameters"]["lance_sync.lease.released"]


@pytest.mark.parametrize("backend", ["hms", "hive3"])
def test_pymetastore_sees_the_lease_lock_while_it_is_held(backend, request, tmp_path):
    harness = harness_for(backend, request, tmp_path)
    owner = unique_owner()
    holder = leases_of(harness.driver(), harness, owner)
    holder.acquire()
    lock_name = holder.stores[0].register.lock_name
    with hive_client(harness.server.endpoint) as client:
        [lock] = client.show_locks(ShowLocksRequest(dbname=lock_name)).locks
        assert lock.agentInfo.startswith(f"lance-sync lease {holder.record.id} pid {os.getpid()} ")
        assert lock.user == holder.record.holder and len(lock.agentInfo) <= 128
        assert holder._renew_all()  # a heartbeat
        holder.release()
        assert client.show_locks(ShowLocksRequest(dbname=lock_name)).locks == []


# --- leases of the previous format (a record in a lease namespace's properties) ---------------------


@pytest.mark.parametrize("backend", ["iceberg", "glue", "hms", "hive3", "unity"])
def test_a_lease_of_the_previous_format_is_honoured_then_taken_over(backend, request, tmp_path):
    harness = harness_for(backend, request, tmp_path)
    driver = harness.driver()
    owner = unique_owner()
    old = (*harness.parent_namespace(), lease_name(owner))
    live = LeaseRecord.new(owner, 120)
    driver.create_namespace({"id": list(old), "mode": "Create", "properties": live.to_properties()})

    with pytest.raises(LeaseHeld, match=f"lance-sync unlock {live.id}"):
        leases_of(harness.driver(), harness, owner).acquire(timeout=0)

    dead = dataclasses.replace(live, pid=dead_pid())
    driver.update_namespace_properties(old, dead.to_properties(), [])
    taker = leases_of(harness.driver(), harness, owner)
    taker.acquire(timeout=0)
    assert the_store(driver, harness, owner).register.read().record.id == taker.record.id
    left = driver.get_namespace_info(old)
    if backend in ("hms", "hive3"):
        assert left is None, "the older lease database was not dropped"
    elif backend != "unity":  # Unity keeps the same format: the namespace is the lease
        assert LeaseRecord.from_properties(left.properties) is None, left.properties
    taker.release()


# --- claims: the takeovers of a Unity lease --------------------------------------------------------------


def unity_schemas_of(harness: Harness, owner: str) -> list[str]:
    return [info.id[-1] for info in harness.driver().list_namespace_infos(harness.parent_namespace())
            if info.id[-1].startswith(lease_name(owner))]


def test_claims_name_a_live_claimant_are_superseded_when_it_is_gone_and_unlock_clears_them(request, tmp_path):
    harness = harness_for("unity", request, tmp_path)
    owner = unique_owner()
    store = the_store(harness.driver(), harness, owner)
    register = store.register
    assert isinstance(register, NamespaceLeaseRegister)
    dead = register.create(dataclasses.replace(LeaseRecord.new(owner, 120), pid=dead_pid()))

    # a live apply is taking it over: named, and listed by `lance-sync unlock`
    claimant = LeaseRecord.new(owner, 120)  # alive: this process
    register._create_exclusive(register._claim_id(dead, 0), claimant)
    with pytest.raises(LeaseHeld, match=f"another apply is taking over .*lease {claimant.id}"):
        leases_of(harness.driver(), harness, owner).acquire(timeout=0)
    assert [record.id for _, record in current_leases([store])] == [dead.record.id, claimant.id]
    assert len(unlock([store], dead.record.id)) == 2  # the claim and the lease
    assert current_leases([store]) == [] and unity_schemas_of(harness, owner) == []

    # a takeover that stopped midway (its claimant is gone): the next one supersedes its claim
    dead = register.create(dataclasses.replace(LeaseRecord.new(owner, 120), pid=dead_pid()))
    register._create_exclusive(register._claim_id(dead, 0), dataclasses.replace(claimant, pid=dead_pid()))
    taker = leases_of(harness.driver(), harness, owner)
    taker.acquire(timeout=0)
    assert register.read().record.id == taker.record.id
    assert unity_schemas_of(harness, owner) == [lease_name(owner)], "claims were left behind"
    taker.release()
    assert register.read() is None and unity_schemas_of(harness, owner) == []


# --- plans and verify never see lease objects ---------------------------------------------------------


def test_plans_and_verify_never_see_lease_tables(iceberg_server: RunningServer, glue_server: RunningServer,
                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """After applies, the Iceberg and Glue leases stay as released lease tables in lease
    namespaces: a plan of every namespace (--scan-all) and verify show none of them."""
    ensure_glue_catalog(glue_server)
    for name, value in glue_env(glue_server).items():
        monkeypatch.setenv(name, value)
    owner = unique_owner()
    namespace = f"ns_{uuid.uuid4().hex[:8]}"
    manifest = {"version": 1, "owner": owner,
                "backends": {"ice": iceberg_backend(iceberg_server, tmp_path), "glue": glue_backend(glue_server)},
                "namespaces": [{"backend": "ice", "id": [iceberg_server.extra["warehouse"], namespace]},
                               {"backend": "glue", "id": [GLUE_CATALOG, namespace]}]}
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest))
    state = api.load(path)
    assert api.apply(state).status == "applied"
    assert pyiceberg(iceberg_server).load_table((lease_name(owner), "lease")).properties["lance_sync.lease.released"]
    glue_client(glue_server).get_table(CatalogId=glue_catalog_id(glue_server), DatabaseName=lease_name(owner),
                                       Name="lease")
    plan = api.plan(state, scan_all=True)
    assert not plan.has_changes
    assert "lance_sync_lease_" not in api.render(plan, "json")
    report = api.verify(state, engine="threads")
    assert "lance_sync_lease_" not in str(report.to_dict())


# --- what a lease costs ---------------------------------------------------------------------------------

#: calls of one apply's lease where it was taken before (acquire, release), as the drivers count them
CALLS_PER_APPLY = {"dir": (0, 0), "dir_rows": (1, 3), "iceberg": (2, 1), "glue": (2, 2), "hms": (2, 1),
                   "hive3": (2, 1), "unity": (1, 4)}


@pytest.mark.parametrize("backend", list(CALLS_PER_APPLY))
def test_calls_per_apply(backend, request, tmp_path):
    if backend.startswith("dir"):
        driver: SyncNamespace = DirNamespace(root=str(tmp_path / "lake"))
        driver.create_namespace({"id": ["sales"]})
        driver.leases_as_files = backend == "dir"
        touched: Identifier = ("sales", "t")
    else:
        harness = harness_for(backend, request, tmp_path)
        driver = harness.driver()
        touched = (*harness.parent_namespace(), "sales")
    owner = unique_owner()
    stores = lease_stores({"b": driver}, {"b": [touched]}, owner)
    with Leases(stores, owner).holding():  # the first apply of an owner sets up more
        pass
    before = driver.api_calls
    leases = Leases(stores, owner)
    leases.acquire()
    acquired = driver.api_calls
    leases.release()
    assert (acquired - before, driver.api_calls - acquired) == CALLS_PER_APPLY[backend]
