"""The dir backend's bulk declare (one manifest commit) and apply's batching of declares."""

from __future__ import annotations

import lance_namespace as ln
from lance_namespace import DeclareTableRequest, DescribeTableRequest
from lance_namespace.errors import (
    InvalidInputError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
)

import lance_sync  # noqa: F401 - registers the drivers
from lance_sync.apply import ApplyOptions, execute
from lance_sync.plan.model import Action, ActionType, ObjectState, Plan, fingerprint


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


def test_apply_sends_ready_declares_to_a_bulk_backend_together(tmp_path):
    driver = ln.connect("lance-sync-dir", {"root": str(tmp_path)})
    driver.create_namespace(ln.CreateNamespaceRequest(id=["ns"]))
    actions = [Action(action=ActionType.DECLARE_TABLE, object="table", backend="lake", id=["ns", f"t{i}"],
                      display_id=f"ns$t{i}", after=ObjectState(location=str(tmp_path / f"t{i}"),
                                                               properties={"lance_sync.owner": "o"}),
                      reason="r", compared_keys=["lance_sync.owner"], fingerprint=fingerprint(None, []))
               for i in range(50)]
    plan = Plan(tool_version="0", created_at="now", owner="o", manifest_files=[], backends={}, actions=actions)
    calls = driver.api_calls
    report = execute(plan, {"lake": driver}, ApplyOptions(state_dir=tmp_path / ".state"))
    assert report.exit_code == 0 and len(report.with_status("succeeded")) == 50
    assert driver.api_calls - calls <= 3
    assert len(list(driver.list_table_infos(("ns",)))) == 50
