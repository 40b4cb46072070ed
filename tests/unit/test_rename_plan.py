"""Renames in a plan: the pairing of `renamed_from` with live registrations (stub capabilities,
no server), the rename action and its inverse, and how render, --target, policy, drift and
reconcile see it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from pydantic import TypeAdapter

from lance_sync.apply.lease import touched_ids
from lance_sync.apply.reconcile import needs_person
from lance_sync.apply.report import ApplyReport, Outcome
from lance_sync.apply.rollback import rollback_plan
from lance_sync.check.drift import DriftKind, report_drift
from lance_sync.drivers.base import Capabilities, NamespaceInfo, TableInfo
from lance_sync.model.actions import Action, Address, Destruction, Kind, Plan, Reason, Verb
from lance_sync.model.desired import (
    DesiredNamespace,
    DesiredState,
    DesiredTable,
    Registration,
)
from lance_sync.model.policy import (
    DEFAULT_UNATTENDED,
    ForbiddenActions,
    MaxRemovals,
    Policy,
    enforce,
)
from lance_sync.plan.compare import Comparison, compare
from lance_sync.plan.observe import LiveState
from lance_sync.plan.planner import Observation, assemble_plan
from lance_sync.plan.render import render_json, render_markdown, render_text
from lance_sync.plan.select import parse_targets, select_targets
from tests.support.manifests import dir_backend

OWNER = "me"
MARK = {"lance_sync.owner": OWNER}
LOCATION = "/data/orders.lance"
WANT = {"tier": "gold", **MARK}
RENAMES = Capabilities(rename_table=True, move_table=True)
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "schemas" / "plan.schema.json").read_text())

Id = tuple[str, ...]

#: an action validated and dumped as a plan file's actions are (a dataclass, not a model)
ACTION = TypeAdapter(Action)


def desired(renamed_from: tuple[Id, ...] = (("ns", "orders"),), new: Id = ("ns", "orders_v2"),
            namespaces: tuple[Id, ...] = (("ns",),), protect: bool = False) -> DesiredState:
    spec = dir_backend()
    table = DesiredTable(name="orders_v2", location=LOCATION, registrations=(Registration("b", new, renamed_from),),
                         properties={"tier": "gold"}, protect=protect)
    return DesiredState(owner=OWNER, files=[], base_dir="/", backends={"b": spec},
                        namespaces=[DesiredNamespace("b", ns, {}) for ns in namespaces], tables=[table])


def live(tables: dict[Id, tuple[str, dict]], namespaces: tuple[Id, ...] = (("ns",),)) -> LiveState:
    found = LiveState()
    for namespace in namespaces:
        found.namespaces[("b", namespace)] = NamespaceInfo(namespace, dict(MARK))
        found.scanned.add(("b", namespace))
    for id, (location, properties) in tables.items():
        found.tables[("b", id)] = TableInfo(id, location, properties)
    return found


def compared(tables: dict[Id, tuple[str, dict]], capabilities: Capabilities = RENAMES,
             state: DesiredState | None = None, namespaces: tuple[Id, ...] = (("ns",),)) -> Comparison:
    return compare(state or desired(), live(tables, namespaces), {"b": capabilities}, {})


def verbs(result: Comparison) -> list[tuple[str, str, str]]:
    return [(a.verb.value, a.display_id, a.reason.value) for a in result.actions]


def planned(result: Comparison, state: DesiredState | None = None) -> Plan:
    state = state or desired()
    observation = Observation(live({}), {"b": RENAMES}, {}, {})
    return assemble_plan(state, observation, result)


OLD = {("ns", "orders"): (LOCATION, WANT)}


# --- pairing -------------------------------------------------------------------------------------

def test_a_former_registration_of_this_owner_at_the_location_is_renamed_not_recreated():
    result = compared(OLD)
    assert verbs(result) == [("rename", "ns$orders_v2", "renamed")]
    [rename] = result.actions
    assert rename.renamed_from == Address(backend="b", id=["ns", "orders"], display_id="ns$orders")
    assert rename.current_id == ["ns", "orders"] and rename.destroys is None
    assert rename.before.properties == rename.after.properties and rename.before.location == LOCATION
    assert "renamed in place (same table id, data and grants)" in rename.detail
    assert not result.notes and not result.warnings


def test_a_move_to_another_namespace_is_a_rename_where_the_backend_can_move():
    state = desired(renamed_from=(("old", "orders"),), namespaces=(("ns",), ("old",)))
    moved = {("old", "orders"): (LOCATION, WANT)}
    result = compared(moved, state=state, namespaces=(("ns",), ("old",)))
    assert verbs(result) == [("rename", "ns$orders_v2", "renamed")]
    assert result.actions[0].renamed_from.display_id == "old$orders"


def test_the_namespace_a_table_is_moved_out_of_is_deleted_after_the_move():
    state = desired(renamed_from=(("old", "orders"),))
    result = compared({("old", "orders"): (LOCATION, WANT)}, state=state, namespaces=(("ns",), ("old",)))
    rename, delete = result.actions
    assert (rename.verb, delete.verb, delete.display_id) == (Verb.RENAME, Verb.DELETE, "old")
    assert delete.depends_on == [rename.key]


def test_a_move_into_a_namespace_the_plan_creates_waits_for_it():
    state = desired(new=("fresh", "orders"), renamed_from=(("ns", "orders"),), namespaces=(("ns",), ("fresh",)))
    create, rename = compared(OLD, state=state).actions
    assert (create.verb, create.kind, rename.verb) == (Verb.CREATE, Kind.NAMESPACE, Verb.RENAME)
    assert rename.depends_on == [create.key]


@pytest.mark.parametrize("capabilities, former, why", [
    (Capabilities(), ("ns", "orders"), "b (dir) has no table rename"),
    (Capabilities(rename_table=True), ("old", "orders"), "b (dir) cannot move a table to another namespace"),
    (Capabilities(rename_table=True, move_table=True, move_fixed_levels=1), ("old", "orders"),
     "b (dir) cannot move a table out of the first 1 level(s) of its id (its catalog)"),
], ids=["no rename", "rename but no move", "a move out of its catalog"])
def test_where_the_backend_cannot_rename_it_is_one_replace_that_says_why(capabilities, former, why):
    state = desired(renamed_from=(former,))
    result = compared({former: (LOCATION, WANT)}, capabilities, state, namespaces=(("ns",), ("old",)))
    replace = result.actions[0]
    assert (replace.verb, replace.reason, replace.destroys) == (Verb.REPLACE, Reason.RENAMED, Destruction.IDENTITY)
    assert replace.renamed_from.id == list(former) and replace.id == ["ns", "orders_v2"]
    assert f"{why}: the table is declared again under the new name (new table id" in replace.detail
    assert [a.verb for a in result.actions if a.kind == Kind.TABLE] == [Verb.REPLACE]  # no forget beside it


def test_property_changes_come_with_the_rename_or_make_it_a_replace_where_they_cannot():
    changed = {("ns", "orders"): (LOCATION, {"tier": "silver", **MARK})}
    [rename] = compared(changed).actions
    assert rename.verb == Verb.RENAME and "changed: properties tier" in rename.detail
    assert (rename.before.properties["tier"], rename.after.properties["tier"]) == ("silver", "gold")
    no_updates = Capabilities(rename_table=True, move_table=True, update_table_properties=False)
    [replace] = compared(changed, no_updates).actions
    assert replace.verb == Verb.REPLACE and "cannot update table properties in place" in replace.detail


def test_a_protected_table_is_renamed_but_never_replaced():
    protected = {("ns", "orders"): (LOCATION, {**WANT, "lance_sync.protect": "true"})}
    state = desired(protect=True)
    [rename] = compared(protected, state=state).actions
    assert rename.verb == Verb.RENAME and rename.blocked is None
    [replace] = compared(protected, Capabilities(), state).actions
    assert replace.verb == Verb.REPLACE and "protected" in (replace.blocked or "")


# --- never on a guess ----------------------------------------------------------------------------

def test_nothing_under_a_former_name_is_a_plain_create_and_a_renamed_table_is_in_sync():
    assert verbs(compared({})) == [("create", "ns$orders_v2", "absent")]
    assert verbs(compared({("ns", "orders_v2"): (LOCATION, WANT)})) == []


def test_when_the_new_name_exists_too_the_former_one_is_removed_as_usual():
    both = {**OLD, ("ns", "orders_v2"): (LOCATION, WANT)}
    assert verbs(compared(both)) == [("forget", "ns$orders", "left_manifest")]


@pytest.mark.parametrize("location, properties, why", [
    ("/data/elsewhere.lance", WANT, "points at /data/elsewhere.lance, not at the table's location"),
    (LOCATION, {"tier": "gold"}, "has no lance-sync owner mark"),
    (LOCATION, {"lance_sync.owner": "other"}, "is owned by 'other'"),
], ids=["another location", "no mark", "another owner"])
def test_a_former_registration_that_is_not_this_table_is_not_renamed_and_a_note_says_why(location, properties, why):
    result = compared({("ns", "orders"): (location, properties)})
    assert all(a.verb != Verb.RENAME for a in result.actions)
    assert any(f"b: ns$orders (renamed_from) is not renamed to ns$orders_v2: it {why}" in n for n in result.notes)


def test_two_former_registrations_are_a_warning_not_a_choice():
    state = desired(renamed_from=(("ns", "orders"), ("ns", "orders_2024")))
    result = compared({**OLD, ("ns", "orders_2024"): (LOCATION, WANT)}, state=state)
    assert sorted(v[0] for v in verbs(result)) == ["create", "forget", "forget"]
    assert any("several former ids are registered (ns$orders, ns$orders_2024)" in w for w in result.warnings)


def test_a_create_beside_a_forget_of_the_same_location_gets_a_note_not_a_rename():
    result = compared(OLD, state=desired(renamed_from=()))
    assert verbs(result) == [("create", "ns$orders_v2", "absent"), ("forget", "ns$orders", "left_manifest")]
    assert result.notes == ["b: ns$orders_v2 looks like a rename of ns$orders: add renamed_from: orders to table "
                            "'orders_v2' to rename it in place (same table id) instead of declaring it again and "
                            "forgetting the old registration"]
    moved = compared({("old", "orders"): (LOCATION, WANT)}, state=desired(renamed_from=()),
                     namespaces=(("ns",), ("old",)))
    assert any("add renamed_from: old$orders to table 'orders_v2'" in n for n in moved.notes)


# --- the action, its inverse and the rollback plan -----------------------------------------------

def test_a_rename_is_undone_by_renaming_back():
    [rename] = compared({("ns", "orders"): (LOCATION, {"tier": "silver", **MARK})}).actions
    back = rename.inverse()
    assert (back.verb, back.id, back.renamed_from.id) == (Verb.RENAME, ["ns", "orders"], ["ns", "orders_v2"])
    assert back.before == rename.after and back.after.properties["tier"] == "silver"
    assert back.shown_id == "ns$orders_v2 -> ns$orders"
    plan = planned(Comparison(actions=[rename]))
    report = ApplyReport(journal_path=Path("j.jsonl"), outcomes=[Outcome(rename, "succeeded")])
    [undo] = rollback_plan(plan, report).actions
    assert undo.headline == "rename table b: ns$orders_v2 -> ns$orders" and undo.reason == Reason.UNDO


def test_a_replace_under_a_new_name_is_undone_under_the_old_one():
    [replace] = compared(OLD, Capabilities()).actions
    back = replace.inverse()
    assert (back.verb, back.id, back.renamed_from.id) == (Verb.REPLACE, ["ns", "orders"], ["ns", "orders_v2"])


def test_only_a_table_rename_or_replace_names_a_former_id():
    [rename] = compared(OLD).actions
    with pytest.raises(ValueError, match="a rename names the id the table had"):
        ACTION.validate_python({**ACTION.dump_python(rename), "renamed_from": None})
    with pytest.raises(ValueError, match="a create table names no id the object had"):
        ACTION.validate_python({**ACTION.dump_python(rename), "verb": "create"})


def test_an_apply_holds_the_leases_of_both_ids():
    [rename] = compared({("old", "orders"): (LOCATION, WANT)}, state=desired(renamed_from=(("old", "orders"),)),
                        namespaces=(("ns",), ("old",))).actions[:1]
    assert touched_ids(planned(Comparison(actions=[rename])))["b"] == {("ns", "orders_v2"), ("old", "orders")}


# --- render, --target, policy, drift, reconcile ---------------------------------------------------

def test_text_markdown_and_json_show_the_rename():
    plan = planned(compared(OLD))
    text = render_text(plan)
    assert " ~> rename table     b: ns$orders -> ns$orders_v2" in text
    assert "Plan: 0 to create, 0 to update, 0 to adopt, 1 to rename, 0 to replace, 0 to remove." in text
    markdown = render_markdown(plan)
    assert "| rename | 1 |" in markdown and "! rename table     b: ns$orders -> ns$orders_v2" in markdown
    document = json.loads(render_json(plan))
    jsonschema.validate(document, SCHEMA)
    assert document["actions"][0]["verb"] == "rename"
    assert document["actions"][0]["renamed_from"] == {"backend": "b", "id": ["ns", "orders"], "display_id": "ns$orders"}
    assert Plan.model_validate(document).actions[0] == plan.actions[0]


def test_a_plan_without_renames_keeps_its_summary_line():
    assert "to rename" not in render_text(planned(compared({})))


@pytest.mark.parametrize("target", ["b:ns$orders_v2", "b:ns$orders", "*:ns$order*"])
def test_a_target_selects_a_rename_by_its_new_or_its_old_id(target):
    plan = planned(compared(OLD))
    selected = select_targets(plan, parse_targets([target], desired()))
    assert [a.verb for a in selected.actions] == [Verb.RENAME] and not selected.warnings


def test_a_policy_can_forbid_renames_and_a_rename_is_no_removal():
    plan = planned(compared(OLD))
    enforce(Policy(rules=(MaxRemovals(name="none", limit=0),)), plan)
    assert not plan.policy_violations
    enforce(Policy(rules=(ForbiddenActions(name="no-renames", types=("rename",)),)), plan)
    [violation] = plan.policy_violations
    assert violation.message == "rename table b: ns$orders -> ns$orders_v2 is forbidden in backend 'b'"
    assert plan.actions[0].blocked == f"policy rule 'no-renames': {violation.message}"


def test_drift_reports_a_registration_under_its_former_name_with_the_rename_as_repair():
    state = desired()
    observation = Observation(live({("ns", "orders"): (LOCATION, {"tier": "silver", **MARK})}), {"b": RENAMES}, {}, {})
    report = report_drift(state, observation, {})
    kinds = [(item.kind, item.detail) for item in report.items]
    assert (DriftKind.RENAMED, "registered as ns$orders; the manifest calls it ns$orders_v2 (renamed_from)") in kinds
    assert any(kind == DriftKind.PROPERTIES for kind, _ in kinds)
    assert {item.repair for item in report.items} == {"~> rename table b: ns$orders -> ns$orders_v2"}


def test_reconcile_renames_unattended_by_default_but_not_a_replace():
    [rename] = compared(OLD).actions
    [replace] = compared(OLD, Capabilities()).actions
    assert needs_person(rename, DEFAULT_UNATTENDED) is None
    assert needs_person(replace, DEFAULT_UNATTENDED) == \
        "needs approval: replace is not in policy.unattended (create, update, rename, grant)"
    assert needs_person(rename, ("create", "update")) is not None
