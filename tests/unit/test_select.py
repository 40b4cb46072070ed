"""Partial plans: a target keeps what it depends on; leaving an action out takes its dependents along."""

from __future__ import annotations

import pytest

from lance_sync.model.actions import (
    Action,
    Address,
    Kind,
    ObjectState,
    Plan,
    Reason,
    Verb,
    action_key,
    dataset_key,
    fingerprint,
)
from lance_sync.model.desired import (
    DesiredNamespace,
    DesiredState,
    DesiredTable,
    Registration,
)
from lance_sync.model.errors import LanceSyncError
from lance_sync.plan.select import leave_out, parse_targets, select_targets
from tests.support.manifests import dir_backend

OWNED = {"lance_sync.owner": "o"}


def action(verb: Verb, kind: Kind, id: tuple[str, ...], location: str | None = None,
           depends_on: tuple[str, ...] = (), backend: str = "b") -> Action:
    state = ObjectState(properties=OWNED, location=location)
    removal = verb in (Verb.FORGET, Verb.DELETE)
    reason = Reason.LEFT_MANIFEST if removal else Reason.ABSENT
    display = location or "" if kind == Kind.DATASET else "$".join(id)
    return Action(verb=verb, kind=kind, reason=reason, backend=backend, id=list(id), display_id=display,
                  detail="d", before=state if removal else None, after=None if removal else state,
                  fingerprint=fingerprint(None, []), depends_on=list(depends_on),
                  registrations=[Address(backend=backend, id=["old", "t"]), Address(backend="c", id=["old", "t"])]
                  if kind == Kind.DATASET else [])


def plan_of(*actions: Action) -> Plan:
    return Plan(tool_version="0", created_at="now", owner="o", manifest_files=[], backends={},
                actions=list(actions))


NS = action_key(Kind.NAMESPACE, "b", ["sales"])
DATA = dataset_key("/d/orders.lance")
OLD_DATA = dataset_key("/d/old.lance")


def example() -> Plan:
    """sales (namespace) <- orders data <- sales$orders; sales$returns; old data deleted, then its two
    registrations forgotten."""
    return plan_of(
        action(Verb.CREATE, Kind.NAMESPACE, ("sales",)),
        action(Verb.CREATE, Kind.DATASET, (), "/d/orders.lance"),
        action(Verb.CREATE, Kind.TABLE, ("sales", "orders"), "/d/orders.lance", depends_on=(NS, DATA)),
        action(Verb.CREATE, Kind.TABLE, ("sales", "returns"), "/d/returns.lance", depends_on=(NS,)),
        action(Verb.DELETE, Kind.DATASET, (), "/d/old.lance"),
        action(Verb.FORGET, Kind.TABLE, ("old", "t"), "/d/old.lance", depends_on=(OLD_DATA,)),
        action(Verb.FORGET, Kind.TABLE, ("old", "t"), "/d/old.lance", depends_on=(OLD_DATA,), backend="c"),
    )


def state_of(*backends: str, tables: tuple[DesiredTable, ...] = ()) -> DesiredState:
    specs = {name: dir_backend(name, "/d") for name in backends}
    return DesiredState(owner="o", files=[], base_dir="/", backends=specs, tables=list(tables),
                        namespaces=[DesiredNamespace("b", ("sales",), {})])


ORDERS = DesiredTable(name="orders", location="/d/orders.lance", properties={},
                      registrations=(Registration("b", ("sales", "orders")),))
RETURNS = DesiredTable(name="returns", location="/d/returns.lance", properties={},
                       registrations=(Registration("b", ("sales", "returns")),))


def names(plan: Plan) -> list[str]:
    return [f"{a.name} {a.backend}:{a.display_id}" for a in plan.actions]


def test_a_target_keeps_what_it_depends_on_and_says_what_it_left_out():
    plan = select_targets(example(), parse_targets(["b:sales$orders"], state_of("b", "c")))
    assert names(plan) == ["create namespace b:sales", "create dataset b:/d/orders.lance",
                           "create table b:sales$orders"]
    assert plan.partial is not None and plan.partial.by == "target" and plan.partial.targets == ["b:sales$orders"]
    assert {o.display_id for o in plan.partial.omitted} == {"sales$returns", "/d/old.lance", "old$t"}
    assert all(o.why == "not targeted" for o in plan.partial.omitted)


def test_globs_match_backends_and_ids():
    assert len(select_targets(example(), parse_targets(["b:sales$*"], state_of("b"))).actions) == 4
    assert names(select_targets(example(), parse_targets(["?:sales"], state_of("b")))) == ["create namespace b:sales"]


def test_deleting_data_comes_with_forgetting_every_registration_of_it():
    plan = select_targets(example(), parse_targets(["c:old$t"], state_of("b", "c")))
    assert names(plan) == ["delete dataset b:/d/old.lance", "forget table b:old$t", "forget table c:old$t"]


def test_a_target_that_names_nothing_is_a_warning_and_a_bad_one_an_error():
    plan = select_targets(example(), parse_targets(["b:nothing$here"], state_of("b")), declared=[("b", "sales$x")])
    assert plan.actions == [] and "--target b:nothing$here matches nothing" in plan.warnings[0]
    in_sync = select_targets(example(), parse_targets(["b:sales$x"], state_of("b")), declared=[("b", "sales$x")])
    assert in_sync.warnings == []
    with pytest.raises(LanceSyncError, match="takes BACKEND:ID"):
        parse_targets(["sales$orders"], state_of("b"))
    with pytest.raises(LanceSyncError, match="'prod' names no backend"):
        parse_targets(["prod:x"], state_of("b"))


def test_a_target_may_be_a_table_name_or_an_id_joined_by_a_slash():
    """`$` is a shell's: `lake:sales/orders` and the manifest's table name need no quotes."""
    state = state_of("b", "c", tables=(ORDERS, RETURNS))
    expected = ["create namespace b:sales", "create dataset b:/d/orders.lance", "create table b:sales$orders"]
    for target in ("b:sales/orders", "orders", "ord*"):
        plan = select_targets(example(), parse_targets([target], state))
        assert names(plan) == expected and plan.partial is not None and plan.partial.targets == [target], target
    with pytest.raises(LanceSyncError, match="or the name of a manifest table, not 'nothing'"):
        parse_targets(["nothing"], state)


def test_a_target_that_names_a_namespace_whose_tables_are_left_out_warns():
    """Unquoted, `lake:sales$orders` reaches lance-sync as `lake:sales`: the plan says so."""
    state = state_of("b", tables=(ORDERS, RETURNS))
    contents = {("b", "sales"): ["sales$orders", "sales$returns"]}
    plan = select_targets(example(), parse_targets(["b:sales"], state), contents=contents)
    assert names(plan) == ["create namespace b:sales"]
    assert len(plan.warnings) == 1 and plan.warnings[0].startswith(
        "--target b:sales names the namespace b:sales, not its tables; left out: sales$orders, sales$returns.")
    assert "--target b:sales/TABLE" in plan.warnings[0] and "'b:sales$orders'" in plan.warnings[0]
    whole = select_targets(example(), parse_targets(["b:sales", "b:sales$*"], state), contents=contents)
    assert whole.warnings == []


def test_leaving_an_action_out_takes_what_depends_on_it_along():
    plan = leave_out(example(), lambda a: "needs approval" if a.verb in (Verb.DELETE, Verb.FORGET) else None)
    assert names(plan) == ["create namespace b:sales", "create dataset b:/d/orders.lance",
                           "create table b:sales$orders", "create table b:sales$returns"]
    data_first = leave_out(example(), lambda a: "blocked" if a.key == DATA else None)
    assert data_first.partial is not None
    assert {(o.display_id, o.why) for o in data_first.partial.omitted} == {
        ("/d/orders.lance", "blocked"),
        ("sales$orders", "depends on create dataset /d/orders.lance, which is left out")}
    again = leave_out(data_first, lambda a: "no" if a.kind == Kind.NAMESPACE else None)
    assert again.partial is not None and len(again.partial.omitted) == 4  # what was left out before stays listed
    assert names(again) == ["delete dataset b:/d/old.lance", "forget table b:old$t", "forget table c:old$t"]


def test_leaving_nothing_out_keeps_the_plan_whole():
    plan = example()
    assert leave_out(plan, lambda a: None) is plan and plan.partial is None
