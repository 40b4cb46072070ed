"""The dir backend's bulk declare (one manifest commit) and apply's batching of declares."""

from __future__ import annotations

import json
import random

import lance
import lance_namespace as ln
import pytest
from lance_namespace import DeclareTableRequest, DescribeTableRequest
from lance_namespace.errors import (
    InvalidInputError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
)

from lance_sync.apply.execute import execute
from lance_sync.apply.options import ApplyOptions
from lance_sync.drivers import register
from lance_sync.drivers.dir.client import LocationJoiner
from lance_sync.model.actions import Action, Kind, ObjectState, Plan, Reason, Verb, fingerprint
from lance_sync.model.locations import join_location, normalize_location

register()  # lance_namespace.connect("lance-sync-<type>", ...) builds lance-sync's drivers


def test_bulk_declare_reports_each_table_and_writes_the_rest_in_one_commit(tmp_path):
    driver = ln.connect("lance-sync-dir", {"root": str(tmp_path)})
    driver.create_namespace(ln.CreateNamespaceRequest(id=["ns"]))
    driver.declare_table(DeclareTableRequest(id=["ns", "old"], location=str(tmp_path / "old")))
    calls = driver.api_calls
    requests = [
        DeclareTableRequest(id=["ns", "a"], location=str(tmp_path / "a"), properties={"p": "1"}),
        DeclareTableRequest(id=["missing", "b"], location=str(tmp_path / "b")),
        DeclareTableRequest(id=["ns", "a"], location=str(tmp_path / "a2")),
        DeclareTableRequest(id=["ns", "old"], location=str(tmp_path / "old2")),
        DeclareTableRequest(id=["ns", "c"], location="/elsewhere/c"),
        DeclareTableRequest(id=["ns", "d"], location=str(tmp_path / "d")),
    ]
    errors = driver.declare_tables(requests)
    assert [type(e) if e else None for e in errors] == [
        None, NamespaceNotFoundError, TableAlreadyExistsError, TableAlreadyExistsError, InvalidInputError, None]
    assert driver.api_calls - calls == 2  # read the manifest, one merge commit
    described = driver.describe_table(DescribeTableRequest(id=["ns", "a"]))
    assert described.properties == {"p": "1"} and described.location.endswith("/a")
    assert sorted(i.id[-1] for i in driver.list_table_infos(("ns",))) == ["a", "d", "old"]


def test_bulk_declare_into_a_root_without_a_manifest_declares_one_at_a_time(tmp_path):
    """A fresh root has no `__manifest` yet: the first declare makes pylance create it."""
    driver = ln.connect("lance-sync-dir", {"root": str(tmp_path)})
    errors = driver.declare_tables([
        DeclareTableRequest(id=[name], location=str(tmp_path / name), properties={"lance_sync.owner": "o"})
        for name in ("a", "b")] + [DeclareTableRequest(id=["missing", "c"], location=str(tmp_path / "c"))])
    assert [type(e) if e else None for e in errors] == [None, None, NamespaceNotFoundError]
    rows = lance.dataset(str(tmp_path / "__manifest")).to_table().to_pylist()
    assert {r["object_id"]: json.loads(r["metadata"]) for r in rows} == {
        "a": {"lance_sync.owner": "o"}, "b": {"lance_sync.owner": "o"}}


def test_apply_sends_ready_declares_to_a_bulk_backend_together(tmp_path):
    driver = ln.connect("lance-sync-dir", {"root": str(tmp_path)})
    driver.create_namespace(ln.CreateNamespaceRequest(id=["ns"]))
    actions = [Action(verb=Verb.CREATE, kind=Kind.TABLE, reason=Reason.ABSENT, backend="lake", id=["ns", f"t{i}"],
                      display_id=f"ns$t{i}", after=ObjectState(location=str(tmp_path / f"t{i}"),
                                                               properties={"lance_sync.owner": "o"}),
                      detail="r", compared_keys=["lance_sync.owner"], fingerprint=fingerprint(None, []))
               for i in range(50)]
    plan = Plan(tool_version="0", created_at="now", owner="o", manifest_files=[], backends={}, actions=actions)
    calls = driver.api_calls
    report = execute(plan, {"lake": driver}, ApplyOptions(state_dir=tmp_path / ".state"))
    assert report.exit_code == 0 and len(report.with_status("succeeded")) == 50
    assert driver.api_calls - calls <= 3
    assert len(list(driver.list_table_infos(("ns",)))) == 50


def test_the_driver_s_row_writes_keep_the_manifest_compact(tmp_path):
    """Each declare or property update adds a small fragment; they are folded together."""
    driver = ln.connect("lance-sync-dir", {"root": str(tmp_path)})
    driver.create_namespace(ln.CreateNamespaceRequest(id=["ns"]))
    for i in range(80):
        driver.declare_table(DeclareTableRequest(id=["ns", f"t{i}"], location=str(tmp_path / f"t{i}"),
                                                 properties={"lance_sync.owner": "o"}))
        driver.update_table_properties(("ns", f"t{i}"), {"n": str(i)}, [])
    dataset = lance.dataset(str(tmp_path / "__manifest"))
    assert len(dataset.get_fragments()) < 40
    rows = {r["object_id"]: r for r in dataset.to_table().to_pylist()}
    assert len(rows) == 81 and dataset.count_rows() == 81
    assert all(json.loads(rows[f"ns$t{i}"]["metadata"]) == {"lance_sync.owner": "o", "n": str(i)}
               for i in range(80))


def test_a_table_in_a_root_with_nothing_yet_is_absent(tmp_path):
    """pylance answers NamespaceNotFound for any table of a root without a manifest, so a
    saved plan made on a fresh root can be checked against it."""
    assert ln.connect("lance-sync-dir", {"root": str(tmp_path)}).get_table_info(("sales", "orders")) is None


def test_a_snapshot_reads_every_namespace_and_table_in_one_scan(tmp_path):
    """A plan reads a dir root with one manifest scan, and the snapshot answers what the
    listings answer."""
    driver = ln.connect("lance-sync-dir", {"root": str(tmp_path)})
    for id in (["a"], ["b"], ["a", "inner"]):
        driver.create_namespace(ln.CreateNamespaceRequest(id=id, properties={"team": id[-1]}))
    for ns in (("a",), ("a", "inner")):
        driver.declare_tables([DeclareTableRequest(id=[*ns, f"t{i}"], location=str(tmp_path / "/".join(ns) / f"t{i}"),
                                                   properties={"tier": "gold"}) for i in range(3)])
    driver.declare_tables([DeclareTableRequest(id=["b", "odd"], location=f"{tmp_path}//b/./x/../odd.lance/",
                                               properties={})])
    calls = driver.api_calls
    snapshot = driver.snapshot()
    assert driver.api_calls - calls == 1
    for parent in ((), ("a",), ("b",), ("a", "inner")):
        assert snapshot.children(parent) == list(driver.list_namespace_infos(parent))
        assert snapshot.tables_in(parent) == list(driver.list_table_infos(parent))
    assert [t.id for t in snapshot.tables_in(("a",))] == [("a", "t0"), ("a", "t1"), ("a", "t2")]
    assert snapshot.tables_in(("a",))[0].properties == {"tier": "gold"}
    # rows with the same metadata share one properties dict (a million tables' worth of memory):
    # a TableInfo is read, never changed in place
    assert snapshot.tables_in(("a",))[0].properties is snapshot.tables_in(("a",))[1].properties
    # normalized as a plan compares them (it takes such a snapshot's tables as they are)
    assert snapshot.normalized
    assert all(info.location == normalize_location(info.location or "")
               for tables in snapshot.tables.values() for info in tables)
    with pytest.raises(NamespaceNotFoundError):
        snapshot.tables_in(("gone",))
    with pytest.raises(NamespaceNotFoundError):
        snapshot.children(("gone",))


def test_a_root_without_a_manifest_has_no_snapshot(tmp_path):
    """Then the plan reads it through the listings, which answer for a fresh root."""
    assert ln.connect("lance-sync-dir", {"root": str(tmp_path)}).snapshot() is None


@pytest.mark.parametrize("root", ["/r", "/", "/r/s p", "file:///r/", "s3://B/r", "s3a://b//r/", "gs://b"])
def test_a_snapshot_joins_its_locations_as_join_location_does(root: str) -> None:
    """The snapshot joins each folder once (`LocationJoiner`): on many locations (fixed seed),
    relative, absolute, with schemes, dots, spaces and escapes, it answers what
    join_location answers."""
    rnd = random.Random(7)
    parts = ["a", "b.lance", ".", "..", ".h", "", " ", "x ", " y", "%41", "s3:", "file:", "~", "c:d", "ns$1"]
    root = normalize_location(root)
    join = LocationJoiner(root)
    for _ in range(5000):
        location = "/".join(rnd.choice(parts) for _ in range(rnd.randint(1, 4)))
        if rnd.random() < 0.2:
            location = "/" + location
        if rnd.random() < 0.1:
            location = rnd.choice(["s3://", "file://", "file:", "s3:/"]) + location
        try:
            expected: object = join_location(root, location)
        except ValueError as error:
            expected = type(error)
        try:
            found: object = join(location)
        except ValueError as error:
            found = type(error)
        assert found == expected, (root, location)
