"""A large plan's tables share their properties' dicts (the load and the live read keep equal
dicts once), and the comparer decides an unchanged table by those dicts: each table must still
be planned by its own live state."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from lance_sync.drivers.base import Capabilities, NamespaceInfo, TableInfo
from lance_sync.model.actions import DatasetStatus, ObjectState
from lance_sync.model.desired import (
    DesiredNamespace,
    DesiredState,
    DesiredTable,
    Registration,
)
from lance_sync.plan.compare import compare
from lance_sync.plan.observe import LiveState
from tests.support.manifests import dir_backend

OWNER = "me"
DECLARED = {"tier": "gold"}
IN_SYNC = {"tier": "gold", "lance_sync.owner": OWNER}


def _state(names: list[str], namespaces: tuple[str, ...] = ("ns",)) -> DesiredState:
    spec = dir_backend()
    tables = [DesiredTable(name=name, location=f"/data/{name}.lance", registrations=(Registration("b", ("ns", name)),),
                           properties=DECLARED) for name in names]
    return DesiredState(owner=OWNER, files=[], base_dir="/", backends={"b": spec},
                        namespaces=[DesiredNamespace("b", (n,), {}) for n in namespaces], tables=tables)


def _live(tables: dict[str, tuple[str, dict[str, str]]], namespace: bool = True) -> LiveState:
    live = LiveState()
    if namespace:
        live.namespaces[("b", ("ns",))] = NamespaceInfo(("ns",), {"lance_sync.owner": OWNER})
    for name, (location, properties) in tables.items():
        live.tables[("b", ("ns", name))] = TableInfo(("ns", name), location, properties)
    return live


def test_tables_sharing_dicts_are_each_compared_with_their_own_live_state() -> None:
    names = [f"t{i}" for i in range(6)]
    live = {name: (f"/data/{name}.lance", IN_SYNC) for name in names}
    live["t2"] = ("/data/t2.lance", {"tier": "silver", "lance_sync.owner": OWNER})  # changed
    live["t3"] = ("/data/t3.lance", {"tier": "gold"})                                # no owner mark
    live["t4"] = ("/data/elsewhere.lance", IN_SYNC)                                  # moved
    live["t5"] = ("/data/t5.lance", {**IN_SYNC, "lance_sync.protect": "true"})       # a mark too many
    missing = DatasetStatus(status="missing")
    result = compare(_state(names), _live(live), {"b": Capabilities()},
                     {f"/data/{name}.lance": missing for name in names})
    assert sorted((a.display_id, a.verb.value, a.reason.value) for a in result.actions) == [
        ("ns$t2", "update", "changed"), ("ns$t3", "update", "adopt"), ("ns$t4", "replace", "changed"),
        ("ns$t5", "update", "changed")]


def test_a_table_in_sync_in_a_namespace_that_is_not_there_is_still_a_conflict() -> None:
    result = compare(_state(["t0"], namespaces=()), _live({"t0": ("/data/t0.lance", IN_SYNC)}, namespace=False),
                     {"b": Capabilities()}, {}, strict=False)
    assert [c.topic for c in result.conflicts] == ["namespace"]


def test_the_tables_of_a_first_plan_share_one_warning_text() -> None:
    """A million creates hold one text, not a million (fails on the code before: each warning
    named its table's location, which the action shows beside it)."""
    names = ["t0", "t1"]
    missing = DatasetStatus(status="missing")
    result = compare(_state(names), _live({}), {"b": Capabilities()}, {f"/data/{n}.lance": missing for n in names})
    first, second = (a.warnings for a in result.actions if a.kind.value == "table")
    assert first == second and first[0].startswith("no Lance dataset at its location yet")


def test_the_creates_of_a_first_plan_share_their_properties_and_keys() -> None:
    """Fails on the code before: each action held a copy of both."""
    names = ["t0", "t1"]
    missing = DatasetStatus(status="missing")
    result = compare(_state(names), _live({}), {"b": Capabilities()}, {f"/data/{n}.lance": missing for n in names})
    first, second = (a for a in result.actions if a.kind.value == "table")
    assert first.after is not None and second.after is not None
    assert first.after.properties is second.after.properties
    assert first.compared_keys is second.compared_keys


def test_a_saved_state_is_still_validated() -> None:
    with pytest.raises(ValidationError):
        ObjectState(properties={"tier": 1})  # type: ignore[dict-item]
    with pytest.raises(ValidationError):
        TypeAdapter(ObjectState).validate_json('{"properties": {"tier": ["gold"]}}')
    assert TypeAdapter(ObjectState).validate_json('{"properties": {"tier": "gold"}}').properties == {"tier": "gold"}
