"""A principal deleted from `grants:` (grants_mode named) is revoked, because each object records
the principals lance-sync manages there; on every backend with grants (the suite's Unity
Catalog server, the suite's Hive 3 server, the real Hive Metastore 2.3, the suite's Glue server
with Lake Formation), read back with each backend's independent client (the conformance
harnesses: unitycatalog-client, pymetastore, boto3).

Fails on the code before records (602d6a3): a principal deleted from `grants:` kept its
privileges, the plan had no revoke for it, and nothing was recorded on the objects.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lance_sync.drivers.base import SyncNamespace
from tests.conformance.harness import Harness
from tests.support.grants import Lifecycle, apply_plan, harness_fixture

pytestmark = pytest.mark.servers

harness = harness_fixture()


def test_a_principal_that_leaves_the_manifest_is_revoked_and_others_stay(harness: Harness, tmp_path: Path):
    life = Lifecycle(harness, tmp_path)
    alice, bob, carol = principals = harness.grant_principals()
    read, write, _ = harness.grant_examples("table")
    use = harness.grant_examples("namespace")[0]
    life.write({alice: [use], bob: [use]}, {alice: [read], bob: [read, write]})
    life.run("apply", "--auto-approve")
    table, namespace = tuple(life.table), tuple(life.namespace)
    # the record is lance-sync's bookkeeping: neither a planned change nor drift
    life.run("plan", "--detailed-exitcode")
    life.run("drift")
    # another team grants carol on the same table, out of band
    harness.grant_out_of_band("table", table, carol, [read])

    life.write({alice: [use]}, {alice: [read]})  # bob deleted from both grants:
    plan = json.loads(life.run("plan", "--format", "json", "--detailed-exitcode", expect=2))
    revokes = [(a["kind"], a["principal"], a["privileges"], a["reason"], a["detail"]) for a in plan["actions"]
               if a["verb"] == "revoke"]
    why = f"principal {bob} left the manifest; lance-sync granted it"
    assert revokes == [("namespace", bob, [use], "left_grants", why),
                       ("table", bob, sorted({read, write}), "left_grants", why)], plan["actions"]
    assert [(a["verb"], a["kind"], a["after"]["principals"]) for a in plan["actions"] if a["verb"] == "record"] \
        == [("record", "namespace", [alice]), ("record", "table", [alice])], plan["actions"]
    assert [o["reason"] for o in plan["grants_left_alone"]] == [f"{carol}: {read}"], plan["grants_left_alone"]
    driver = harness.driver()
    assert driver.grants_record("table", table) == {alice, bob}
    assert driver.grants_record("namespace", namespace) == {alice, bob}
    text = life.run("plan")
    assert f"- revoke {', '.join(sorted({read, write}))} from {bob} on table b:" in text, text
    assert f"# {why}" in text and "[revokes access]" in text and "2 to revoke, 2 to record" in text, text
    markdown = life.run("plan", "--format", "markdown")
    assert "2 revoke(s)" in markdown and why in markdown, markdown
    drift = json.loads(life.run("drift", "--format", "json", expect=2))
    assert sorted(i["detail"] for i in drift["items"]) == sorted([
        f"{bob} holds {use}, and left the manifest; lance-sync granted it",
        f"{bob} holds {', '.join(sorted({read, write}))}, and left the manifest; lance-sync granted it"]), drift

    refused = life.run("apply", "--auto-approve", expect=4)
    assert "--allow-revoke" in refused or life.last_exit == 4
    assert life.table_grants(principals) == {alice: {read}, bob: {read, write}, carol: {read}}
    life.run("apply", "--auto-approve", "--allow-revoke")
    assert life.table_grants(principals) == {alice: {read}, carol: {read}}  # carol's grant stays
    assert life.namespace_grants(principals) == {alice: {use}}
    assert driver.grants_record("table", table) == {alice}
    life.run("plan", "--detailed-exitcode")

    # the rollback grants bob's privileges again and records him again: the next plan revokes him
    rollback = sorted((tmp_path / ".lance-sync" / "journal").glob("*.rollback.json"))[-1]
    apply_plan(life, rollback, "--allow-revoke")
    assert life.table_grants(principals) == {alice: {read}, bob: {read, write}, carol: {read}}
    assert driver.grants_record("table", table) == {alice, bob}
    plan = json.loads(life.run("plan", "--format", "json", expect=None))
    assert sorted((a["verb"], a["principal"]) for a in plan["actions"] if a["verb"] == "revoke") == [
        ("revoke", bob), ("revoke", bob)], plan["actions"]


def test_an_object_without_a_record_keeps_the_old_behaviour_until_an_apply_records_it(
        harness: Harness, tmp_path: Path):
    life = Lifecycle(harness, tmp_path)
    alice, bob, _ = principals = harness.grant_principals()
    read, write, _ = harness.grant_examples("table")
    life.write({}, {alice: [read], bob: [write]})
    life.run("apply", "--auto-approve")
    table = tuple(life.table)
    driver = harness.driver()
    forget_records(driver, life)  # as objects managed before records were kept

    life.write({}, {alice: [read]})  # bob deleted, but nothing says lance-sync granted him
    plan = json.loads(life.run("plan", "--format", "json"))
    assert not [a for a in plan["actions"] if a["verb"] == "revoke"], plan["actions"]
    assert [o["reason"] for o in plan["grants_left_alone"]] == [f"{bob}: {write}"], plan["grants_left_alone"]
    records = [a for a in plan["actions"] if a["verb"] == "record"]
    assert [(a["kind"], a["reason"], a["after"]["principals"]) for a in records] == [
        ("namespace", "absent", []), ("table", "absent", [alice])], records
    assert "no record yet" in records[1]["detail"], records
    assert "(no record) -> " in life.run("plan"), "the text plan shows the record it writes"

    life.write({}, {alice: [read], bob: [write]})  # bob back: the next apply records both
    life.run("apply", "--auto-approve")
    assert driver.grants_record("table", table) == {alice, bob}
    life.run("plan", "--detailed-exitcode")
    life.write({}, {alice: [read]})
    life.run("apply", "--auto-approve", "--allow-revoke")
    assert life.table_grants(principals) == {alice: {read}}
    life.run("plan", "--detailed-exitcode")


def test_reconcile_records_unattended_and_leaves_the_revoke_for_a_person(harness: Harness, tmp_path: Path):
    life = Lifecycle(harness, tmp_path)
    alice, bob, _ = principals = harness.grant_principals()
    read, write, _ = harness.grant_examples("table")
    life.write({}, {alice: [read], bob: [write]})
    life.run("apply", "--auto-approve")
    forget_records(harness.driver(), life)
    life.run("reconcile", "--once")  # records, changing no privilege
    assert harness.driver().grants_record("table", tuple(life.table)) == {alice, bob}
    life.write({}, {alice: [read]})
    life.run("reconcile", "--once")
    assert life.table_grants(principals) == {alice: {read}, bob: {write}}  # the revoke waits for a person
    life.write({}, {alice: [read]}, policy={"unattended": ["create", "update", "grant", "revoke"]})
    life.run("reconcile", "--once")
    assert life.table_grants(principals) == {alice: {read}}


def forget_records(driver: SyncNamespace, life: Lifecycle) -> None:
    for kind, id in (("namespace", tuple(life.namespace)), ("table", tuple(life.table))):
        driver.write_grants_record(kind, id, None)  # type: ignore[arg-type]
        assert driver.grants_record(kind, id) is None  # type: ignore[arg-type]
