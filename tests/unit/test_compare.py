"""The planner's rules, one case per row, without any server: desired + live -> actions."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from lance_sync.drivers.base import Capabilities, NamespaceInfo, TableInfo
from lance_sync.drivers.dir import DirConfig, DirNamespace
from lance_sync.errors import PlanError
from lance_sync.manifest.desired import (
    BackendSpec,
    DesiredNamespace,
    DesiredState,
    DesiredTable,
    Registration,
)
from lance_sync.observe import LiveState
from lance_sync.plan.compare import compare
from lance_sync.plan.model import DatasetStatus, Destruction, Kind, Reason, Verb

OWNER = "me"
MARK = {"lance_sync.owner": OWNER}
LOCATION = "/data/t.lance"
INT64 = [{"name": "id", "type": "int64"}]


@dataclass
class Case:
    """One desired table `t` in namespace `ns` (declared), against what is live."""

    live_table: dict | None = None          # properties of the live table ns$t (None: absent)
    live_location: str = LOCATION
    table: dict = field(default_factory=dict)  # overrides of the desired table
    capabilities: Capabilities = field(default_factory=Capabilities)
    dataset: DatasetStatus | None = None
    declared: bool = True                    # False: the table left the manifest


def state(case: Case) -> DesiredState:
    spec = BackendSpec(name="b", type="dir", config=DirConfig(root="/data"), scope=(), template={},
                       rules=DirNamespace)
    table = DesiredTable(**{"name": "t", "location": LOCATION, "registrations": (Registration("b", ("ns", "t")),),
                            "properties": {"tier": "gold"}, **case.table})
    return DesiredState(owner=OWNER, files=[], base_dir="/", backends={"b": spec},
                        namespaces=[DesiredNamespace("b", ("ns",), {})],
                        tables=[table] if case.declared else [])


def live(case: Case) -> LiveState:
    found = LiveState()
    found.namespaces[("b", ("ns",))] = NamespaceInfo(("ns",), dict(MARK))
    found.scanned.add(("b", ("ns",)))
    if case.live_table is not None:
        found.tables[("b", ("ns", "t"))] = TableInfo(("ns", "t"), case.live_location, case.live_table)
    return found


def plan(case: Case):
    datasets = {LOCATION: case.dataset} if case.dataset else {}
    return compare(state(case), live(case), {"b": case.capabilities}, datasets)


def verbs(case: Case) -> list[tuple[str, str, str]]:
    return [(a.verb.value, a.kind.value, a.reason.value) for a in plan(case).actions]


VALID = DatasetStatus(status="valid", version=3, row_count=1, columns=INT64)
MISSING = DatasetStatus(status="missing")
NO_UPDATES = Capabilities(update_table_properties=False)

CASES = {
    "absent table is created": (Case(), [("create", "table", "absent")]),
    "in sync: nothing": (Case(live_table={"tier": "gold", **MARK}), []),
    "changed property, updated in place": (Case(live_table={"tier": "silver", **MARK}),
                                           [("update", "table", "changed")]),
    "unmarked table is adopted in place": (Case(live_table={"tier": "gold"}), [("update", "table", "adopt")]),
    "no in-place update: replaced": (Case(live_table={"tier": "silver", **MARK}, capabilities=NO_UPDATES),
                                     [("replace", "table", "changed")]),
    "no in-place update, unmarked and in sync: adopted without a write": (
        Case(live_table={"tier": "gold"}, capabilities=NO_UPDATES), []),
    "location moved, no in-place move: replaced": (
        Case(live_table={"tier": "gold", **MARK}, live_location="/data/old.lance"),
        [("replace", "table", "changed")]),
    "location moved in place where the backend can": (
        Case(live_table={"tier": "gold", **MARK}, live_location="/data/old.lance",
             capabilities=Capabilities(update_table_location=True)),
        [("update", "table", "changed")]),
    "missing data with a schema is written first": (
        Case(dataset=MISSING, table={"columns": INT64}),
        [("create", "dataset", "absent"), ("create", "table", "absent")]),
    "extra columns in the dataset are fine": (
        Case(live_table={"tier": "gold", **MARK}, table={"columns": INT64},
             dataset=VALID.model_copy(update={"columns": [*INT64, {"name": "x", "type": "string"}]})), []),
    "mismatch with on_mismatch overwrite rewrites the data": (
        Case(live_table={"tier": "gold", **MARK},
             table={"columns": [{"name": "id", "type": "string"}],
                    "source": {"format": "csv", "path": "/x", "on_mismatch": "overwrite"}},
             dataset=VALID), [("replace", "dataset", "schema_mismatch")]),
    "left the manifest: forgotten": (Case(live_table={"tier": "gold", **MARK}, declared=False),
                                     [("forget", "table", "left_manifest")]),
    "left with on_remove drop: data deleted, then forgotten": (
        Case(live_table={"lance_sync.on_remove": "drop", **MARK}, declared=False, dataset=VALID),
        [("delete", "dataset", "left_manifest"), ("forget", "table", "left_manifest")]),
    "left with on_remove drop, data already gone: forgotten": (
        Case(live_table={"lance_sync.on_remove": "drop", **MARK}, declared=False, dataset=MISSING),
        [("forget", "table", "left_manifest")]),
    "another owner's table not in the manifest is left alone": (
        Case(live_table={"lance_sync.owner": "other"}, declared=False), []),
}


@pytest.mark.parametrize("case, expected", CASES.values(), ids=CASES.keys())
def test_rules(case: Case, expected: list):
    assert verbs(case) == expected


def test_replace_destroys_identity_and_drops_destroy_data():
    replace = plan(Case(live_table={"tier": "silver", **MARK}, capabilities=NO_UPDATES)).actions[0]
    assert replace.destroys == Destruction.IDENTITY and "new id" in replace.detail
    dropped = plan(Case(live_table={"lance_sync.on_remove": "drop", **MARK}, declared=False, dataset=VALID))
    delete, forget = dropped.actions
    assert delete.destroys == Destruction.DATA and forget.destroys is None
    assert forget.depends_on == [delete.key]
    assert delete.before.version == 3 and forget.before.version == 3  # newer data makes both stale


def test_protected_removals_are_blocked():
    protected = {"lance_sync.protect": "true", "lance_sync.on_remove": "drop", **MARK}
    result = plan(Case(live_table=protected, declared=False, dataset=VALID))
    assert all(a.blocked for a in result.actions)
    replace = plan(Case(live_table={"lance_sync.protect": "true", "tier": "x", **MARK}, capabilities=NO_UPDATES,
                        table={"protect": True}))
    assert replace.actions[0].verb == Verb.REPLACE and replace.actions[0].blocked


def test_adopted_without_mark_is_reported_not_planned():
    result = plan(Case(live_table={"tier": "gold"}, capabilities=NO_UPDATES))
    assert not result.actions and [o.display_id for o in result.adopted_unmarked] == ["ns$t"]


def test_extra_columns_are_a_note_and_a_mismatch_names_table_and_column():
    extra = plan(Case(live_table={"tier": "gold", **MARK}, table={"columns": INT64},
                      dataset=VALID.model_copy(update={"columns": [*INT64, {"name": "x", "type": "string"}]})))
    assert any("x: string" in note for note in extra.notes)
    with pytest.raises(PlanError, match=r"table 't'.*column 'id' is declared string but the dataset has int64"):
        plan(Case(live_table={"tier": "gold", **MARK}, table={"columns": [{"name": "id", "type": "string"}]},
                  dataset=VALID))
    with pytest.raises(PlanError, match="column 'name' is declared but missing"):
        plan(Case(live_table={"tier": "gold", **MARK}, dataset=VALID,
                  table={"columns": [*INT64, {"name": "name", "type": "string"}]}))


def test_ownership_conflict_stops_the_plan():
    with pytest.raises(PlanError, match="owned by 'other'"):
        plan(Case(live_table={"lance_sync.owner": "other", "tier": "gold"}))


def test_table_create_waits_for_its_data():
    result = plan(Case(dataset=MISSING, table={"columns": INT64}))
    dataset, table = result.actions
    assert dataset.kind == Kind.DATASET and table.depends_on == [dataset.key]
    assert dataset.reason == Reason.ABSENT and dataset.registrations[0].id == ["ns", "t"]


def test_a_replace_that_lifts_protection_is_allowed():
    """Unity cannot update a table in place, so `protect: false` itself is a replace."""
    protected = {"lance_sync.protect": "true", "tier": "gold", **MARK}
    lifting = plan(Case(live_table=protected, capabilities=NO_UPDATES))
    assert lifting.actions[0].verb == Verb.REPLACE and not lifting.actions[0].blocked
