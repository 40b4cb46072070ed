"""The planner's rules, one case per row, without any server: desired + live -> actions."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from lance_sync.drivers.base import Capabilities, NamespaceInfo, TableInfo
from lance_sync.model.actions import DatasetStatus, Destruction, Kind, Reason, Verb, WriteIntent
from lance_sync.model.desired import (
    DesiredNamespace,
    DesiredState,
    DesiredTable,
    Registration,
)
from lance_sync.model.errors import PlanError
from lance_sync.plan.compare import compare
from lance_sync.plan.observe import LiveState
from tests.support.manifests import dir_backend

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
    #: other registrations the plan sees: (namespace, name) -> (location, properties)
    others: dict = field(default_factory=dict)
    #: registrations seen outside the plan's scope (a dir root's snapshot): same form
    beyond_scope: dict = field(default_factory=dict)


def state(case: Case) -> DesiredState:
    spec = dir_backend()
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
    for where, registrations in ((found.tables, case.others), (found.beyond_scope, case.beyond_scope)):
        for id, (location, properties) in registrations.items():
            where[("b", id)] = TableInfo(id, location, properties)
    return found


def plan(case: Case):
    datasets = {LOCATION: case.dataset} if case.dataset else {}
    return compare(state(case), live(case), {"b": case.capabilities}, datasets)


def verbs(case: Case) -> list[tuple[str, str, str]]:
    return [(a.verb.value, a.kind.value, a.reason.value) for a in plan(case).actions]


VALID = DatasetStatus(status="valid", version=3, row_count=1, columns=INT64)
#: created by this owner's lance-sync: its record is in the dataset
OWNED = VALID.model_copy(update={"owner": OWNER})
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
        Case(live_table={"lance_sync.on_remove": "drop", **MARK}, declared=False, dataset=OWNED),
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
    dropped = plan(Case(live_table={"lance_sync.on_remove": "drop", **MARK}, declared=False, dataset=OWNED))
    delete, forget = dropped.actions
    assert delete.destroys == Destruction.DATA and forget.destroys is None
    assert forget.depends_on == [delete.key]
    assert delete.before.version == 3 and forget.before.version == 3  # newer data makes both stale


def test_protected_removals_are_blocked():
    protected = {"lance_sync.protect": "true", "lance_sync.on_remove": "drop", **MARK}
    result = plan(Case(live_table=protected, declared=False, dataset=OWNED))
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
    # a missing column is added in place (test_table_state_columns), unless it cannot be: not null
    with pytest.raises(PlanError, match="column 'name' is declared string not null and is missing"):
        plan(Case(live_table={"tier": "gold", **MARK}, dataset=VALID,
                  table={"columns": [*INT64, {"name": "name", "type": "string", "nullable": False}]}))


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


# --- one asset per path, data lance-sync created, locations that hold no Lance dataset -----------

THEIRS = {"lance_sync.owner": "other"}
DROP = {"lance_sync.on_remove": "drop", **MARK}


@pytest.mark.parametrize("location, relation", [
    (LOCATION, "is the location of"), (f"{LOCATION}/inner.lance", "contains the location of"),
    ("/data", "lies inside the location of")])
def test_a_create_over_another_registration_is_blocked_and_names_it(location, relation):
    result = plan(Case(others={("ns2", "x"): (location, THEIRS)}))
    [create] = result.actions
    assert create.verb == Verb.CREATE and create.blocked
    assert f"one asset per path: {LOCATION} {relation} ns2$x in backend 'b' (owner 'other')" in create.blocked


def test_a_symbolic_link_is_no_second_place_for_a_create_or_a_delete(tmp_path):
    """Issue 46: locations are compared as the filesystem resolves them. A create at
    `alias/t.lance` (`alias` links to `data`) over another owner's `data/t.lance` is blocked, and
    so is deleting this owner's data at the alias while that registration points at it (on
    main at 94cefba, both compared text and went ahead)."""
    (tmp_path / "data").mkdir()
    (tmp_path / "alias").symlink_to("data")
    aliased, real = f"{tmp_path}/alias/t.lance", f"{tmp_path}/data/t.lance"
    theirs = {("ns2", "x"): (real, THEIRS)}
    [create] = plan(Case(table={"location": aliased}, others=theirs)).actions
    resolution = f"once symbolic links are resolved ({aliased} is {real})"
    assert create.verb == Verb.CREATE and create.blocked
    assert f"{aliased} is the location of ns2$x in backend 'b' (owner 'other') {resolution}" in create.blocked
    case = Case(live_table=DROP, live_location=aliased, declared=False, others=theirs)
    delete, _ = compare(state(case), live(case), {"b": case.capabilities}, {aliased: OWNED}).actions
    assert delete.verb == Verb.DELETE and "is the location of ns2$x" in (delete.blocked or "")
    assert resolution in (delete.blocked or "")


def test_registrations_outside_the_scope_and_without_a_mark_count_too():
    result = plan(Case(beyond_scope={("far", "y"): (LOCATION, {})}, table={"columns": INT64}, dataset=MISSING))
    assert [a.blocked is not None for a in result.actions] == [True, True]  # the data is not written either
    assert "far$y in backend 'b' (no lance-sync owner mark)" in result.actions[0].blocked


def test_adopting_onto_a_shared_location_is_blocked_but_an_in_sync_table_only_warns():
    adopt = plan(Case(live_table={"tier": "gold"}, others={("ns2", "x"): (LOCATION, THEIRS)}))
    assert adopt.actions[0].reason == Reason.ADOPT and adopt.actions[0].blocked
    in_sync = plan(Case(live_table={"tier": "gold", **MARK}, others={("ns2", "x"): (LOCATION, THEIRS)}))
    assert not in_sync.actions and any("one asset per path" in w for w in in_sync.warnings)


def test_a_registration_of_this_owner_that_leaves_does_not_block_its_successor():
    renamed = plan(Case(others={("ns", "old"): (LOCATION, MARK)}))
    assert [(a.verb, a.blocked) for a in renamed.actions] == [(Verb.CREATE, None), (Verb.FORGET, None)]


def test_on_remove_drop_keeps_data_lance_sync_did_not_create():
    result = plan(Case(live_table=DROP, declared=False, dataset=VALID))
    assert verbs_of(result) == [("forget", "table", "left_manifest")]
    assert "carries no lance-sync owner record" in result.actions[0].detail
    assert any("data kept although on_remove is drop" in w for w in result.warnings)
    theirs = plan(Case(live_table=DROP, declared=False, dataset=VALID.model_copy(update={"owner": "other"})))
    assert verbs_of(theirs) == [("forget", "table", "left_manifest")]
    assert "records owner 'other'" in theirs.actions[0].detail


def test_on_remove_drop_is_blocked_while_another_registration_points_at_the_data():
    result = plan(Case(live_table=DROP, declared=False, dataset=OWNED,
                       others={("ns2", "x"): (f"{LOCATION}/inner.lance", THEIRS)}))
    delete, forget = result.actions
    assert delete.verb == Verb.DELETE and "contains the location of ns2$x" in (delete.blocked or "")
    assert forget.depends_on == [delete.key]


def test_on_remove_drop_keeps_data_a_manifest_table_lies_inside():
    case = Case(live_table=DROP, declared=False, dataset=OWNED)
    desired = state(case)
    desired.tables = [DesiredTable("inner", f"{LOCATION}/inner.lance", (Registration("b", ("ns", "inner")),), {})]
    result = compare(desired, live(case), {"b": case.capabilities}, {LOCATION: OWNED})
    assert [a.verb for a in result.actions if a.key.startswith("dataset")] == []
    assert "table 'inner' of the manifest uses this location" in result.actions[-1].detail


def test_a_namespace_that_leaves_but_holds_objects_that_stay_says_what_they_are():
    """Issue 46: a parent namespace leaving the manifest while its declared, owned child stays was
    warned to hold "objects lance-sync does not own" (main at 94cefba); the warning now says which
    stay because the manifest declares them and which are another owner's."""
    case = Case()
    desired = state(case)
    desired.namespaces = [DesiredNamespace("b", ("ns", "sub"), {})]
    found = live(case)
    found.namespaces[("b", ("ns", "sub"))] = NamespaceInfo(("ns", "sub"), dict(MARK))
    found.namespaces[("b", ("ns", "theirs"))] = NamespaceInfo(("ns", "theirs"), dict(THEIRS))
    desired.tables = []
    result = compare(desired, found, {"b": case.capabilities}, {})
    assert [a for a in result.actions if a.kind == Kind.NAMESPACE] == []
    assert result.warnings == ["namespace 'ns' in backend 'b' left the manifest but holds objects that stay "
                               "(declared in the manifest: ns$sub; not owned by 'me': ns$theirs); kept"]


def test_an_overwrite_of_data_lance_sync_did_not_create_is_blocked():
    result = plan(Case(live_table={"tier": "gold", **MARK}, dataset=VALID,
                       table={"columns": [{"name": "id", "type": "string"}],
                              "source": {"format": "csv", "path": "/x", "on_mismatch": "overwrite"}}))
    assert "carries no lance-sync owner record" in (result.actions[0].blocked or "")


@pytest.mark.parametrize("status", ["not_lance", "corrupt"])
@pytest.mark.parametrize("table", [{"columns": INT64}, {}], ids=["with a schema", "declared only"])
def test_a_table_is_never_registered_on_what_is_not_a_lance_dataset(status, table):
    with pytest.raises(PlanError, match=rf"{LOCATION} holds .*never deletes what it did not write"):
        plan(Case(table=table, dataset=DatasetStatus(status=status, error="x")))


INTENT = {"owner": OWNER, "location": LOCATION, "apply": "20261125T000000Z", "started": "2026-11-25T00:00:00+00:00"}


def test_this_owners_unfinished_write_is_written_again_and_another_owners_is_left_alone():
    mine = DatasetStatus(status="interrupted", intent=INTENT)
    result = plan(Case(table={"columns": INT64}, dataset=mine))
    assert verbs_of(result) == [("create", "dataset", "absent"), ("create", "table", "absent")]
    assert "did not finish writing" in result.actions[0].detail
    theirs = DatasetStatus(status="interrupted", intent={**INTENT, "owner": "other"})
    with pytest.raises(PlanError, match="unfinished lance-sync write of owner 'other'"):
        plan(Case(table={"columns": INT64}, dataset=theirs))
    copied = DatasetStatus(status="interrupted", intent={**INTENT, "location": "/data/elsewhere.lance"})
    with pytest.raises(PlanError, match=f"{LOCATION} holds an unfinished lance-sync write of owner 'me'"):
        plan(Case(table={"columns": INT64}, dataset=copied))  # a record copied or moved here is not this write


def test_a_write_committed_before_its_apply_was_cut_off_is_finished():
    committed = OWNED.model_copy(update={"intent": WriteIntent(**INTENT)})
    result = plan(Case(table={"columns": INT64}, dataset=committed))
    dataset = result.actions[0]
    assert (dataset.verb, dataset.kind) == (Verb.CREATE, Kind.DATASET) and "clear its intent record" in dataset.detail
    assert dataset.before is not None and dataset.before.version == 3  # its fingerprint matches the live dataset


def verbs_of(result) -> list[tuple[str, str, str]]:
    return [(a.verb.value, a.kind.value, a.reason.value) for a in result.actions]


def test_a_location_moved_in_place_renders_as_an_update_that_needs_no_flag():
    from lance_sync.apply.guards import check_flags
    from lance_sync.apply.options import ApplyOptions
    from lance_sync.model.actions import Plan
    from lance_sync.plan.render import render_text

    result = plan(Case(live_table={"tier": "gold", **MARK}, live_location="/data/old.lance",
                       capabilities=Capabilities(update_table_location=True)))
    [update] = result.actions
    assert update.destroys is None
    moved = Plan(tool_version="0", created_at="now", owner=OWNER, manifest_files=[], backends={}, actions=[update])
    text = render_text(moved)
    assert "  ~ update table     b: ns$t" in text and f"~ location = /data/old.lance -> {LOCATION}" in text
    assert "Plan: 0 to create, 1 to update, 0 to adopt, 0 to replace, 0 to remove." in text
    check_flags(moved, ApplyOptions())  # neither --allow-replace nor --allow-drop
