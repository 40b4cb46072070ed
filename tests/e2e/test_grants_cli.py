"""Grants as code, end to end through the CLI, on every backend with grants: the suite's Unity
Catalog server, the suite's Hive 3 server, the real Hive Metastore 2.3 and the suite's Glue
server with Lake Formation. What lance-sync wrote is read back with each backend's independent
client (the conformance harnesses: unitycatalog-client, pymetastore, boto3), and what "someone
else" does is done through that client or a second driver.

One life cycle per backend: grants declared on a namespace and a table are applied; a plan
then finds nothing; a changed declaration plans `+ grant` and `- revoke`, and the revoke needs
--allow-revoke (exit 4 without); a privilege revoked out of band and one granted out of band
are drift; reconcile restores the first unattended and leaves the second for a person; a
principal the manifest does not name is left alone until grants_mode is authoritative.
"""

from __future__ import annotations

import json
from pathlib import Path

import lance
import pyarrow as pa
import pytest

from tests.conformance.harness import Harness
from tests.support.cli import describe, run_cli
from tests.support.grants import Lifecycle, apply_plan, harness_fixture

pytestmark = pytest.mark.servers

harness = harness_fixture()


def test_grants_are_applied_changed_revoked_drift_reported_and_restored(harness: Harness, tmp_path: Path):
    life = Lifecycle(harness, tmp_path)
    alice, bob, carol = principals = harness.grant_principals()
    read, write, third = harness.grant_examples("table")
    use = harness.grant_examples("namespace")[0]

    # applied, and read back by the independent client
    life.write({alice: [use]}, {alice: [read], bob: [read, write]})
    life.run("apply", "--auto-approve")
    assert life.table_grants(principals) == {alice: {read}, bob: {read, write}}
    assert life.namespace_grants(principals) == {alice: {use}}
    # re-planned clean
    life.run("plan", "--detailed-exitcode")

    # changed: alice gains a privilege, bob loses one (a revoke: destructive)
    life.write({alice: [use]}, {alice: [read, write], bob: [read]})
    plan = life.run("plan", "--detailed-exitcode", expect=2)
    assert f"+ grant {write} to {alice} on table b:" in plan, plan
    assert f"- revoke {write} from {bob} on table b:" in plan, plan
    assert "1 to grant, 1 to revoke" in plan, plan
    refused = life.run("apply", "--auto-approve", expect=4)
    assert life.table_grants(principals) == {alice: {read}, bob: {read, write}}, refused
    life.run("apply", "--auto-approve", "--allow-revoke")
    assert life.table_grants(principals) == {alice: {read, write}, bob: {read}}
    life.run("plan", "--detailed-exitcode")

    # out of band: someone revokes alice's write and grants bob a third privilege; carol, whom
    # the manifest does not name, gets a grant too
    other = harness.driver()
    other.change_grants("table", tuple(life.table), alice, frozenset(), frozenset({write}))
    harness.grant_out_of_band("table", tuple(life.table), bob, [third])
    harness.grant_out_of_band("table", tuple(life.table), carol, [read])
    report = json.loads(life.run("drift", "--format", "json", expect=2))
    grants = sorted(item["detail"] for item in report["items"] if item["kind"] == "grants")
    assert len(grants) == 2 and any(alice in d and "revoked out of band" in d for d in grants) and \
        any(bob in d and third in d for d in grants), report

    # reconcile restores alice's privilege unattended, and leaves bob's extra one for a person
    life.run("reconcile", "--once")
    assert life.table_grants(principals) == {alice: {read, write}, bob: {read, third}, carol: {read}}
    plan = json.loads(life.run("plan", "--format", "json", "--detailed-exitcode", expect=2))
    assert [(a["verb"], a["principal"], a["privileges"]) for a in plan["actions"]] == [("revoke", bob, [third])]
    assert [o["reason"] for o in plan["grants_left_alone"]] == [f"{carol}: {read}"], plan["grants_left_alone"]

    # authoritative: carol's grant, which no one declared, is revoked too
    life.write({alice: [use]}, {alice: [read, write], bob: [read]}, table_mode="authoritative")
    plan = life.run("plan")
    assert f"- revoke {read} from {carol} on table b:" in plan, plan
    life.run("apply", "--auto-approve", "--allow-revoke")
    assert life.table_grants(principals) == {alice: {read, write}, bob: {read}}
    assert life.namespace_grants(principals) == {alice: {use}}
    life.run("plan", "--detailed-exitcode")


def test_policy_forbids_privileges_and_principals(harness: Harness, tmp_path: Path):
    """validate refuses what the policy forbids, naming the rule; nothing is applied."""
    life = Lifecycle(harness, tmp_path)
    alice, bob, _ = harness.grant_principals()
    read, write, _ = harness.grant_examples("table")
    use = harness.grant_examples("namespace")[0]
    policy = {"rules": [{"name": "no-writes", "forbidden_privileges": [write]},
                        {"name": "only-alice", "allowed_principals": [alice]}]}
    life.write({alice: [use]}, {alice: [read, write], bob: [read]}, policy=policy)
    result = run_cli(life.path, "validate", env=life.env)
    assert result.returncode == 4, describe(result)
    assert "no-writes" in result.stdout + result.stderr and "only-alice" in result.stdout + result.stderr
    refused = life.run("apply", "--auto-approve", expect=4)
    assert "Apply complete" not in refused
    assert harness.driver().get_namespace_info(tuple(life.namespace)) is None  # nothing was created


def test_a_grant_without_its_parent_privileges_is_noted_never_granted(harness: Harness, tmp_path: Path):
    """Unity's USE SCHEMA / USE CATALOG and Lake Formation's DESCRIBE on the database: the plan
    notes each missing one, grants none of them, and says nothing once they are held."""
    life = Lifecycle(harness, tmp_path)
    driver = harness.driver()
    needs = driver.parent_needs("table", tuple(life.table), driver.config)
    if not needs:
        pytest.skip(f"{harness.backend_type} has no parent privileges")
    alice = harness.grant_principals()[0]
    read = harness.grant_examples("table")[0]
    life.write({}, {alice: [read]})
    plan = json.loads(life.run("plan", "--format", "json"))
    for need in needs:
        assert any(note.startswith(f"{alice} holds no {need.shown} on {driver.format_identifier(need.id)} ")
                   for note in plan["notes"]), plan["notes"]
    assert [(a["verb"], a["kind"]) for a in plan["actions"] if a["verb"] == "grant"] == [("grant", "table")]

    declared: dict[str, list[str]] = {}
    for need in needs:
        privilege = sorted(need.any_of)[-1] if harness.backend_type == "glue" else sorted(need.any_of)[0]
        if need.id == tuple(life.namespace):
            declared[alice] = [privilege]
        else:  # a parent the manifest cannot declare (Unity's catalog): granted by someone else
            harness.grant_out_of_band("namespace", need.id, alice, [privilege])
    life.write(declared, {alice: [read]})
    plan = json.loads(life.run("plan", "--format", "json"))
    assert not [note for note in plan["notes"] if note.startswith(f"{alice} holds no")], plan["notes"]
    life.run("apply", "--auto-approve")
    life.run("plan", "--detailed-exitcode")


def test_a_replace_grants_the_declared_grants_again_and_names_the_ones_lost(harness: Harness, tmp_path: Path):
    """Unity replaces a table whose location changes: the new table has no grants, so the
    declared ones are granted again after it, and the plan names the undeclared ones lost."""
    if harness.backend_type != "unity":
        pytest.skip("only Unity replaces a table whose location changes")
    life = Lifecycle(harness, tmp_path)
    alice, bob, carol = principals = harness.grant_principals()
    read, write, _ = harness.grant_examples("table")
    life.write({}, {alice: [read], bob: [read]})
    life.run("apply", "--auto-approve")
    harness.grant_out_of_band("table", tuple(life.table), carol, [write])

    moved = tmp_path / "orders_v2.lance"
    lance.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64())}), str(moved))
    life.location = moved
    life.write({}, {alice: [read], bob: [read]})
    plan = json.loads(life.run("plan", "--format", "json"))
    replace = next(a for a in plan["actions"] if a["verb"] == "replace")
    assert any(f"{carol}: {write}" in w for w in replace["warnings"]), replace["warnings"]
    grants = [(a["principal"], a["privileges"], a["depends_on"]) for a in plan["actions"] if a["verb"] == "grant"]
    key = f"table:b:{json.dumps(life.table)}"
    assert grants == [(alice, [read], [key]), (bob, [read], [key])], grants
    life.run("apply", "--auto-approve", "--allow-replace")
    assert life.table_grants(principals) == {alice: {read}, bob: {read}}
    life.run("plan", "--detailed-exitcode")


def test_a_saved_plan_whose_grants_changed_since_is_refused_and_a_rollback_undoes_grants(
        harness: Harness, tmp_path: Path):
    life = Lifecycle(harness, tmp_path)
    alice, bob, _ = principals = harness.grant_principals()
    read, write, _ = harness.grant_examples("table")
    life.write({}, {alice: [read]})
    life.run("apply", "--auto-approve")

    life.write({}, {alice: [read, write], bob: [read]})
    saved = tmp_path / "grants.plan.json"
    life.run("plan", "--out", str(saved))
    harness.grant_out_of_band("table", tuple(life.table), bob, [write])  # bob's grants change after the plan
    stale = apply_plan(life, saved, expect=4)
    assert "stale" in stale.stderr, describe(stale)
    assert life.table_grants(principals) == {alice: {read}, bob: {write}}

    life.run("apply", "--auto-approve", "--allow-revoke")  # a fresh plan: bob's write is revoked
    assert life.table_grants(principals) == {alice: {read, write}, bob: {read}}
    rollback = sorted((tmp_path / ".lance-sync" / "journal").glob("*.rollback.json"))[-1]
    apply_plan(life, rollback, "--allow-revoke")
    assert life.table_grants(principals) == {alice: {read}, bob: {write}}


def test_target_limits_the_plan_to_one_objects_grants(harness: Harness, tmp_path: Path):
    life = Lifecycle(harness, tmp_path)
    alice = harness.grant_principals()[0]
    read = harness.grant_examples("table")[0]
    use = harness.grant_examples("namespace")[0]
    life.write({alice: [use]}, {alice: [read]})
    life.run("apply", "--auto-approve")
    life.write({alice: []}, {alice: []})  # revoke both; target only the table
    target = f"b:{harness.driver().format_identifier(tuple(life.table))}"
    plan = json.loads(life.run("plan", "--format", "json", "--target", target))
    assert [(a["verb"], a["kind"]) for a in plan["actions"]] == [("revoke", "table")], plan["actions"]
    assert [o["action"] for o in plan["partial"]["omitted"]] == ["revoke namespace"], plan["partial"]


def test_reconcile_revokes_only_when_the_policy_lets_it(harness: Harness, tmp_path: Path):
    life = Lifecycle(harness, tmp_path)
    alice, bob, _ = principals = harness.grant_principals()
    read, write, _ = harness.grant_examples("table")
    life.write({}, {alice: [read]}, table_mode="authoritative")
    life.run("apply", "--auto-approve")
    harness.grant_out_of_band("table", tuple(life.table), bob, [write])
    life.run("reconcile", "--once")
    assert life.table_grants(principals) == {alice: {read}, bob: {write}}  # left for a person
    life.write({}, {alice: [read]}, table_mode="authoritative",
               policy={"unattended": ["create", "update", "grant", "revoke"]})
    life.run("reconcile", "--once")
    assert life.table_grants(principals) == {alice: {read}}


def test_on_unity_a_parent_privilege_held_on_the_catalog_counts(harness: Harness, tmp_path: Path):
    """UC passes a privilege held on a catalog down to its schemas: USE SCHEMA on the catalog
    meets a table grant's need for USE SCHEMA on its schema."""
    if harness.backend_type != "unity":
        pytest.skip("only Unity passes privileges down")
    life = Lifecycle(harness, tmp_path)
    carol = harness.grant_principals()[2]
    catalog = tuple(life.namespace[:1])
    harness.grant_out_of_band("namespace", catalog, carol, ["USE CATALOG", "USE SCHEMA"])
    life.write({}, {carol: [harness.grant_examples("table")[0]]})
    plan = json.loads(life.run("plan", "--format", "json"))
    assert not [note for note in plan["notes"] if note.startswith(f"{carol} holds no")], plan["notes"]
