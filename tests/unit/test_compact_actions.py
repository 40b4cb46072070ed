"""A plan keeps the creates of tables as rows (lance_sync.model.actions.Actions) and makes each
Action as it is read: the plan must be the very one it was when every action was an object
(`Comparer.creates_as_rows = False`), action by action, in JSON and in text."""

from __future__ import annotations

import random

import pytest

from lance_sync.drivers.base import Capabilities, NamespaceInfo, TableInfo
from lance_sync.model.action_rows import Actions, TableCreate
from lance_sync.model.actions import Action, DatasetStatus, Destruction, Kind, Plan, Verb
from lance_sync.model.desired import DesiredNamespace, DesiredState, DesiredTable, Registration
from lance_sync.model.policy import ForbiddenActions, Policy, enforce
from lance_sync.plan.compare import Comparer, Comparison, compare
from lance_sync.plan.observe import LiveState
from lance_sync.plan.order import action_order
from lance_sync.plan.render import render_json, render_markdown, render_text
from tests.support.manifests import dir_backend

OWNER = "me"
INT64 = [{"name": "id", "type": "int64"}]
STATUSES = [None, DatasetStatus(status="missing"), DatasetStatus(status="valid", version=3, columns=INT64, owner=OWNER),
            DatasetStatus(status="not_lance"), DatasetStatus(status="unreachable", error="timed out")]
LIVE = ["absent", "absent", "absent", "in sync", "changed", "unmarked", "other owner", "moved", "not lance", "renamed"]


def _scenario(seed: int, tables: int = 300) -> tuple[DesiredState, LiveState, dict[str, DatasetStatus]]:
    """Tables of every kind the comparer tells apart, in namespaces the plan creates or finds,
    beside owned tables that left the manifest (some where a declared table is created)."""
    pick = random.Random(seed)
    live = LiveState()
    namespaces = [DesiredNamespace("b", (f"ns{n}",), {"team": f"t{n % 2}"}) for n in range(4)]
    for n in (0, 2, 4):  # ns1 and ns3 are created; ns4 is not declared
        live.namespaces[("b", (f"ns{n}",))] = NamespaceInfo((f"ns{n}",), {"lance_sync.owner": OWNER})
        live.scanned.add(("b", (f"ns{n}",)))
    shared = [{"tier": "gold"}, {"tier": "silver", "team": "a"}]
    desired, datasets = [], {}
    for i in range(tables):
        namespace, name, location = f"ns{pick.randrange(5)}", f"t{i}", f"/data/t{i}.lance"
        kind = pick.choice(LIVE)
        columns = INT64 if pick.random() < 0.1 else None
        table = DesiredTable(name=name, location=location, registrations=(Registration("b", (namespace, name)),),
                             properties=pick.choice(shared), columns=columns, protect=pick.random() < 0.05,
                             on_remove=pick.choice(["deregister", "drop"]))
        if kind == "renamed":
            former = (namespace, f"old{i}")
            table = DesiredTable(name=name, location=location, properties=table.properties,
                                 registrations=(Registration("b", (namespace, name), renamed_from=(former,)),))
            live.tables[("b", former)] = TableInfo(former, location, {**table.properties, "lance_sync.owner": OWNER})
        desired.append(table)
        status = pick.choice(STATUSES)
        if status is not None:
            datasets[location] = status
        marks = {"in sync": {"lance_sync.owner": OWNER}, "changed": {"lance_sync.owner": OWNER, "tier": "bronze"},
                 "unmarked": {}, "other owner": {"lance_sync.owner": "them"},
                 "moved": {"lance_sync.owner": OWNER}, "not lance": {"lance_sync.owner": OWNER}}
        if kind in marks:
            where = f"/data/elsewhere{i}.lance" if kind == "moved" else location
            live.tables[("b", (namespace, name))] = TableInfo(
                (namespace, name), where, {**table.properties, **marks[kind]},
                is_lance=kind != "not lance")
    for i in range(20):  # owned, no longer declared: forgotten (a few at a declared table's location), some
        # with their data deleted first
        location = f"/data/t{i}.lance" if i % 4 == 0 else f"/data/gone{i}.lance"
        properties = {"lance_sync.owner": OWNER, **({"lance_sync.on_remove": "drop"} if i % 2 else {})}
        live.tables[("b", ("ns4", f"gone{i}"))] = TableInfo(("ns4", f"gone{i}"), location, properties)
        datasets.setdefault(location, STATUSES[2])
    for i in range(0, tables, 17):  # another's table inside a declared location: its create is blocked
        live.beyond_scope[("b", ("ns9", f"in{i}"))] = TableInfo(("ns9", f"in{i}"), f"/data/t{i}.lance/inner", {})
    state = DesiredState(owner=OWNER, files=[], base_dir="/", backends={"b": dir_backend()},
                         namespaces=namespaces, tables=desired)
    return state, live, datasets


def _compared(seed: int, rows: bool, monkeypatch: pytest.MonkeyPatch) -> Comparison:
    state, live, datasets = _scenario(seed)
    capabilities = Capabilities(rename_table=seed % 2 == 0, update_table_properties=seed % 3 != 0)
    with monkeypatch.context() as patched:
        patched.setattr(Comparer, "creates_as_rows", rows)
        return compare(state, live, {"b": capabilities}, datasets, strict=False)


def _plan(comparison: Comparison) -> Plan:
    return Plan(tool_version="0", created_at="2026-12-05T00:00:00+00:00", owner=OWNER, manifest_files=["m.yaml"],
                backends={"b": {"type": "dir"}}, actions=comparison.actions, notes=comparison.notes,
                warnings=comparison.warnings)


@pytest.mark.parametrize("seed", range(8))
def test_a_plan_with_creates_as_rows_is_the_plan_of_actions(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rows, objects = _compared(seed, True, monkeypatch), _compared(seed, False, monkeypatch)
    assert any(isinstance(item, TableCreate) for item in rows.actions._items)  # the road under test is taken
    assert not any(isinstance(item, TableCreate) for item in objects.actions._items)
    assert list(rows.actions) == list(objects.actions)
    assert (rows.notes, rows.warnings, rows.conflicts) == (objects.notes, objects.warnings, objects.conflicts)
    compact, full = _plan(rows), _plan(objects)
    assert isinstance(compact.actions, Actions)
    assert render_json(compact) == render_json(full)
    assert render_text(compact) == render_text(full) and render_markdown(compact) == render_markdown(full)
    assert Plan.model_validate_json(render_json(compact)) == full
    assert compact.blocked() == full.blocked() and compact.refused == full.refused
    assert all(compact.destroying(what) == full.destroying(what) for what in Destruction)


def test_a_first_plan_holds_its_creates_as_rows_only(monkeypatch: pytest.MonkeyPatch) -> None:
    state = DesiredState(owner=OWNER, files=[], base_dir="/", backends={"b": dir_backend()},
                         namespaces=[DesiredNamespace("b", ("ns",), {})],
                         tables=[DesiredTable(name=f"t{i}", location=f"/data/t{i}.lance", properties={},
                                              registrations=(Registration("b", ("ns", f"t{i}")),)) for i in range(50)])
    actions = compare(state, LiveState(), {"b": Capabilities()}, {}).actions
    assert [a.name for a in actions.kept()] == ["create namespace"]
    assert len(actions) == 51 and all(a.depends_on == ['namespace:b:["ns"]'] for a in actions[1:])


def test_a_changed_action_made_of_a_row_is_kept_when_stored_back() -> None:
    state = DesiredState(owner=OWNER, files=[], base_dir="/", backends={"b": dir_backend()},
                         tables=[DesiredTable(name="t", location="/data/t.lance", properties={},
                                              registrations=(Registration("b", ("ns", "t")),))])
    live = LiveState()
    live.namespaces[("b", ("ns",))] = NamespaceInfo(("ns",), {})
    plan = _plan(compare(state, live, {"b": Capabilities()}, {}))
    assert plan.actions[0] is not plan.actions[0]  # made anew on each read
    enforce(Policy(rules=(ForbiddenActions(name="no-new", types=("create table",)),)), plan)
    action: Action = plan.actions[0]
    assert (action.kind, action.verb) == (Kind.TABLE, Verb.CREATE)
    assert action.blocked == "policy rule 'no-new': create table b: ns$t is forbidden in backend 'b'"
    assert plan.refused


def test_actions_made_of_rows_of_one_shape_share_no_list_or_state() -> None:
    """Rows are made into actions by copying one validated action of their shape: an action
    changed where it is used (a warning added, its state's location set) changes no other one,
    nor the actions made of the rows later. Fails when the copy hands the shape's own lists or
    state to each action."""
    tables = [DesiredTable(name=f"t{i}", location=f"/data/t{i}.lance", properties={},
                           registrations=(Registration("b", ("ns", f"t{i}")),)) for i in range(2)]
    state = DesiredState(owner=OWNER, files=[], base_dir="/", backends={"b": dir_backend()}, tables=tables)
    live = LiveState()
    live.namespaces[("b", ("ns",))] = NamespaceInfo(("ns",), {})
    plan = _plan(compare(state, live, {"b": Capabilities()}, {}))
    first, second = plan.actions
    for made in (first, second):
        assert made.after is not None
        made.warnings.append(f"changed {made.table}")
        made.depends_on.append("x")
        made.after.location = f"/moved/{made.table}"
    again = plan.actions  # made anew from the same rows
    assert [(a.warnings, a.depends_on, a.after.location if a.after else None) for a in (first, second)] == [
        (["changed t0"], ["x"], "/moved/t0"), (["changed t1"], ["x"], "/moved/t1")]
    assert [(a.warnings, a.depends_on, a.after.location if a.after else None) for a in again] == [
        ([], [], "/data/t0.lance"), ([], [], "/data/t1.lance")]


def test_sorting_actions_places_each_row_where_its_action_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    """As plan_grants sorts a plan with the grants it adds (by action order, then its own parts)."""
    def key(action: Action) -> tuple:
        return (*action_order(action), action.verb == Verb.RECORD, action.principal or "", action.verb.value)

    rows, objects = _compared(3, True, monkeypatch), _compared(3, False, monkeypatch)
    for comparison in (rows, objects):
        comparison.actions += [a for a in objects.actions if a.verb == Verb.FORGET]  # sorted in again
        comparison.actions.sort(key=key)
    assert list(rows.actions) == list(objects.actions) == sorted(objects.actions, key=key)
