"""The fast path of a plan (lance_sync.plan.in_sync): tables a `dir` read shows in sync are
planned nothing, their locations are not inspected, and their registrations are not searched for
removals and moves. Many estates (fixed seeds), each planned through the fast path and through
the full comparison (every location inspected beside the read, every table compared, every live
registration searched): the plans must be the same."""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any

import lance_namespace as ln
import pytest
from lance_namespace import DeclareTableRequest

from lance_sync.data import inspection
from lance_sync.data.inspection import LocationReport
from lance_sync.drivers import connect_backends, register
from lance_sync.manifest import load_manifest
from lance_sync.model.actions import Plan
from lance_sync.model.errors import PlanConflicts
from lance_sync.plan import in_sync as in_sync_module
from lance_sync.plan import planner
from lance_sync.plan.in_sync import InSync, unchanged_tables
from lance_sync.plan.observe import observe

OWNER = "me"
SEEDS = range(18)

#: what may happen to a declared table in the live root (besides being in sync)
CHANGES = ("in sync", "property changed", "moved", "no owner mark", "absent", "protect mark", "other owner",
           "not a dataset")


def _estate(root: Path, seed: int, drift: bool = True) -> tuple[list[str], list[tuple[str, str]]]:
    """A root and a manifest of about 30 tables: most in sync, the others changed as `seed` draws,
    with live tables the manifest does not declare (every table in sync without `drift`). The
    manifest's lines and what was drawn."""
    rnd = random.Random(seed)
    rate = 0.3 if seed % 3 else 0.04  # some estates with a single change or none
    driver = ln.connect("lance-sync-dir", {"root": str(root)})
    for ns in ("ns0", "ns1"):
        driver.create_namespace(ln.CreateNamespaceRequest(id=[ns], properties={"lance_sync.owner": OWNER}))
    lines = ["version: 1", f"owner: {OWNER}", "backends:", f"  lake: {{type: dir, root: '{root}'}}", "namespaces:",
             "  - {backend: lake, id: ns0}", "  - {backend: lake, id: ns1}", "tables:"]
    drawn, requests = [], []
    for i in range(rnd.randint(20, 40)):
        name, ns = f"t{i}", f"ns{i % 2}"
        location = root / ns / f"{name}.lance"
        tier = rnd.choice(["gold", "silver"])
        second = f"{name}_b" if rnd.random() < 0.2 else None  # registered twice: in sync or not, alone
        register = f"{{backend: lake, namespace: {ns}}}" + (f", {{backend: lake, namespace: ns1, name: {second}}}"
                                                               if second else "")
        lines.append(f"  - {{name: {name}, location: '{location}', properties: {{tier: {tier}}}, "
                     f"register: [{register}]}}")
        change = rnd.choice(CHANGES) if drift and rnd.random() < rate else "in sync"
        drawn.append((name, change))
        live: dict[str, str] = {"tier": tier, "lance_sync.owner": OWNER}
        if second:
            second_change = rnd.choice(["in sync", "absent", "property changed"]) if drift else "in sync"
            drawn.append((second, second_change))
            if second_change != "absent":
                requests.append(DeclareTableRequest(id=["ns1", second], location=str(location), properties={
                    **live, "tier": "bronze" if second_change == "property changed" else tier}))
        at = location
        if change == "property changed":
            live["tier"] = "bronze"
        elif change == "moved":
            at = root / ns / f"{name}-old.lance"
            if rnd.random() < 0.5:  # something left at the old location: the plan says so
                at.parent.mkdir(parents=True, exist_ok=True)
                at.write_text("old")
        elif change == "no owner mark":
            del live["lance_sync.owner"]
        elif change == "protect mark":
            live["lance_sync.protect"] = "true"
        elif change == "other owner":
            live["lance_sync.owner"] = "someone-else"
        elif change == "not a dataset":
            location.parent.mkdir(parents=True, exist_ok=True)
            location.write_text("not lance")
            if rnd.random() < 0.5:
                continue  # absent too: a create refused
        if change != "absent":
            requests.append(DeclareTableRequest(id=[ns, name], location=str(at), properties=live))
    for i in range(rnd.randint(0, 4) if drift else 0):  # live tables the manifest does not declare
        owner = rnd.choice([OWNER, "someone-else", None])
        properties = {"lance_sync.owner": owner} if owner else {}
        # sometimes at a declared location: one asset per path
        at = root / "ns0" / (f"t{rnd.randint(0, 19)}.lance" if rnd.random() < 0.4 else f"extra{i}.lance")
        requests.append(DeclareTableRequest(id=["ns1", f"extra{i}"], location=str(at), properties=properties))
        drawn.append((f"extra{i}", f"undeclared, owner {owner}, at {at.name}"))
    if drift and rnd.random() < 0.3:  # a table of the manifest at a location reached through a symbolic link
        (root / "alias").symlink_to(root / "ns0", target_is_directory=True)
        requests.append(DeclareTableRequest(id=["ns1", "linked"], location=str(root / "alias" / "t0.lance"),
                                            properties={}))
        drawn.append(("linked", "undeclared, unmarked, at ns0/t0.lance through a link"))
    driver.declare_tables(requests)
    return lines, drawn


def _fast_plan(manifest: Path) -> dict[str, Any]:
    """The plan as `lance-sync plan` makes it."""
    state = load_manifest([str(manifest)])
    try:
        plan = planner.build_plan(state, connect_backends(state.backends))
        conflicts: list[str] = []
    except PlanConflicts as error:
        assert error.plan is not None
        plan, conflicts = error.plan, [str(c) for c in error.conflicts]
    return _shown(plan, conflicts)


def _full_plan(manifest: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The plan without the fast path: every declared location inspected beside the read, every
    table compared in full, every live registration searched for removals and moves."""
    state = load_manifest([str(manifest)])
    drivers = connect_backends(state.backends)
    with monkeypatch.context() as full:
        full.setattr(in_sync_module, "in_sync", lambda desired, live: InSync([False] * len(desired.tables), set()))
        observation = planner.read_state(state, drivers)
        comparison = planner.compare_all(state, observation, drivers, strict=False)
    return _shown(planner.assemble_plan(state, observation, comparison), [str(c) for c in comparison.conflicts])


def _shown(plan: Plan, conflicts: list[str]) -> dict[str, Any]:
    return {**plan.model_dump(mode="json", exclude={"created_at"}), "conflicts": conflicts}


@pytest.mark.parametrize("seed", SEEDS)
def test_the_fast_path_plans_what_the_full_comparison_plans(tmp_path: Path, seed: int,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    register()
    monkeypatch.setenv("LANCE_SYNC_CACHE", "off")
    lines, drawn = _estate(tmp_path / "lake", seed)
    manifest = tmp_path / "lance-sync.yaml"
    manifest.write_text("\n".join(lines) + "\n")
    assert _fast_plan(manifest) == _full_plan(manifest, monkeypatch), drawn


def test_an_estate_in_sync_takes_the_fast_path_for_every_table_and_inspects_no_location(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    register()
    monkeypatch.setenv("LANCE_SYNC_CACHE", "off")
    lines, _ = _estate(tmp_path / "lake", 0, drift=False)
    manifest = tmp_path / "lance-sync.yaml"
    manifest.write_text("\n".join(lines) + "\n")
    state = load_manifest([str(manifest)])
    drivers = connect_backends(state.backends)
    inspected: list[str] = []

    def inspect_locations(uris: list[str], **_options: Any) -> list[LocationReport]:
        inspected.extend(uris)
        return [LocationReport(uri, "missing") for uri in uris]

    monkeypatch.setattr(inspection, "inspect_locations", inspect_locations)
    plan = planner.build_plan(state, drivers)
    assert len(state.tables) >= 20 and not plan.actions and not plan.warnings
    assert all(unchanged_tables(state, observe(state, drivers)))
    assert inspected == []


def test_a_table_the_fast_path_does_not_take_is_logged_with_why(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    register()
    monkeypatch.setenv("LANCE_SYNC_CACHE", "off")
    root = tmp_path / "lake"
    driver = ln.connect("lance-sync-dir", {"root": str(root)})
    driver.create_namespace(ln.CreateNamespaceRequest(id=["ns"], properties={}))
    driver.declare_tables([
        DeclareTableRequest(id=["ns", "same"], location=str(root / "same.lance"),
                            properties={"tier": "gold", "lance_sync.owner": OWNER}),
        DeclareTableRequest(id=["ns", "moved"], location=str(root / "old.lance"),
                            properties={"tier": "gold", "lance_sync.owner": OWNER})])
    manifest = tmp_path / "lance-sync.yaml"
    manifest.write_text("\n".join([
        "version: 1", f"owner: {OWNER}", "backends:", f"  lake: {{type: dir, root: '{root}'}}", "tables:",
        *(f"  - {{name: {name}, location: '{root / f'{name}.lance'}', properties: {{tier: gold}}, "
          "register: [{backend: lake, namespace: ns}]}" for name in ("same", "moved", "new"))]) + "\n")
    state = load_manifest([str(manifest)])
    live = observe(state, connect_backends(state.backends))
    with caplog.at_level(logging.DEBUG, logger="lance_sync.plan.in_sync"):
        assert unchanged_tables(state, live) == [True, False, False]
    assert f"table 'moved' is compared in full: registered elsewhere: lake:ns.moved at {root / 'old.lance'}" \
        in caplog.text
    assert "table 'new' is compared in full: not registered: lake:ns.new" in caplog.text
    assert "2 of 3 tables compared in full (1 registered elsewhere, 1 not registered)" in caplog.text
