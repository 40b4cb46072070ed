"""End to end through the CLI on a real temporary directory (the embedded `dir` backend)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import lance_namespace as ln
import pytest
import yaml
from click.testing import CliRunner

from lance_sync.cli.app import main
from tests.support.project import Project, rollback_path

PLAN_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "plan.schema.json"


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


@pytest.fixture
def applied(project: Project) -> Project:
    result = project.apply("--auto-approve")
    assert result.exit_code == 0, result.output
    return project


def test_quickstart_applies_and_converges(applied: Project):
    assert applied.tables("sales") == ["orders", "returns"]
    assert applied.tables("sales", "archive") == ["returns_2026"]
    second = applied.plan("--detailed-exitcode")
    assert second.exit_code == 0, second.output
    assert "No changes" in second.stdout


def test_plan_reports_changes_with_detailed_exitcode(project: Project):
    result = project.plan("--detailed-exitcode")
    assert result.exit_code == 2
    assert "  + create namespace lake: sales" in result.stdout and "Plan: 7 to create" in result.stdout


def test_removed_table_is_deregistered_and_data_kept(applied: Project):
    manifest = applied.manifest
    manifest["tables"] = [t for t in manifest["tables"] if t["name"] != "orders"]
    applied.write(manifest)
    plan = applied.plan()
    assert "  - forget table     lake: sales$orders" in plan.stdout
    assert applied.apply("--auto-approve").exit_code == 0
    assert applied.tables("sales") == ["returns"]
    assert (applied.root / "lakehouse" / "data" / "orders.lance" / "_versions").is_dir()


def test_drop_without_allow_drop_is_refused_and_keeps_data(applied: Project):
    manifest = applied.manifest
    orders = next(t for t in manifest["tables"] if t["name"] == "orders")
    orders["on_remove"] = "drop"
    applied.write(manifest)
    assert applied.apply("--auto-approve").exit_code == 0  # stamps lance_sync.on_remove=drop
    manifest["tables"].remove(orders)
    applied.write(manifest)
    refused = applied.apply("--auto-approve")
    assert refused.exit_code == 4
    assert "--allow-drop" in refused.output
    assert (applied.root / "lakehouse" / "data" / "orders.lance").is_dir()
    assert "orders" in applied.tables("sales")
    dropped = applied.apply("--auto-approve", "--allow-drop")
    assert dropped.exit_code == 0, dropped.output
    assert not (applied.root / "lakehouse" / "data" / "orders.lance").exists()
    assert "orders" not in applied.tables("sales")


def test_protected_table_is_never_removed(applied: Project):
    manifest = applied.manifest
    manifest["tables"] = [t for t in manifest["tables"] if t["name"] != "returns"]
    applied.write(manifest)
    plan = applied.plan()
    assert plan.exit_code == 4
    assert "BLOCKED: protected" in plan.stdout
    for flags in (["--auto-approve"], ["--auto-approve", "--allow-drop"]):
        refused = applied.apply(*flags)
        assert refused.exit_code == 4
        assert "protected" in refused.output
    assert "returns" in applied.tables("sales")
    assert "returns_2026" in applied.tables("sales", "archive")


def test_unprotecting_then_removing_works(applied: Project):
    manifest = applied.manifest
    returns = next(t for t in manifest["tables"] if t["name"] == "returns")
    returns["protect"] = False
    applied.write(manifest)
    assert applied.apply("--auto-approve").exit_code == 0
    manifest["tables"].remove(returns)
    applied.write(manifest)
    assert applied.apply("--auto-approve").exit_code == 0
    assert applied.tables("sales") == ["orders"]


def test_objects_without_this_owners_mark_are_never_touched(applied: Project):
    driver = applied.driver()
    driver.declare_table(ln.DeclareTableRequest(id=["sales", "handmade"],
                                                location=str(applied.root / "lakehouse" / "handmade.lance"),
                                                properties={"lance_sync.owner": "someone-else"}))
    driver.declare_table(ln.DeclareTableRequest(id=["sales", "unmarked"],
                                                location=str(applied.root / "lakehouse" / "unmarked.lance")))
    plan = applied.plan("--detailed-exitcode")
    assert plan.exit_code == 0, plan.output
    assert "Left alone (2)" in plan.stdout
    assert "handmade (owned by 'someone-else')" in plan.stdout
    manifest = applied.manifest
    manifest["tables"] = []
    manifest["namespaces"] = [ns for ns in manifest["namespaces"] if ns["id"] == "sales"]
    applied.write(manifest)
    result = applied.apply("--auto-approve", "--allow-drop")
    assert result.exit_code == 4  # the protected table still blocks; nothing else ran
    assert set(applied.tables("sales")) == {"handmade", "orders", "returns", "unmarked"}


def test_stale_saved_plan_is_refused(applied: Project, tmp_path: Path):
    manifest = applied.manifest
    manifest["tables"][0]["properties"]["tier"] = "silver"
    applied.write(manifest)
    plan_file = tmp_path / "plan.json"
    assert applied.plan("--out", str(plan_file)).exit_code == 0
    applied.driver().update_table_properties(("sales", "orders"), {"tier": "bronze"}, [])
    refused = applied.run("apply", str(plan_file), "--auto-approve")
    assert refused.exit_code == 4
    assert "stale" in refused.output and "sales$orders" in refused.output


def test_saved_plan_applies_when_fresh_and_holds_no_secrets(applied: Project, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("LANCE_SYNC_TEST_SECRET", "very-secret-value")
    manifest = applied.manifest
    manifest["backends"]["lake"]["storage"] = {"aws_secret_access_key": "${LANCE_SYNC_TEST_SECRET}"}
    manifest["tables"][0]["properties"]["tier"] = "silver"
    applied.write(manifest)
    plan_file = tmp_path / "plan.json"
    result = applied.plan("--out", str(plan_file))
    assert result.exit_code == 0, result.output
    text = plan_file.read_text()
    assert "very-secret-value" not in text and "very-secret-value" not in result.output
    assert "${LANCE_SYNC_TEST_SECRET}" in text
    applied_plan = applied.run("apply", str(plan_file), "--auto-approve")
    assert applied_plan.exit_code == 0, applied_plan.output
    assert "very-secret-value" not in applied_plan.output
    assert applied.plan("--detailed-exitcode").exit_code == 0


def test_dry_run_changes_nothing(project: Project):
    before = project.snapshot()
    result = project.apply("--dry-run")
    assert result.exit_code == 0
    assert "Dry run: nothing was changed" in result.stdout
    assert project.snapshot() == before


def test_apply_without_terminal_or_auto_approve_refuses(project: Project):
    before = project.snapshot()
    result = project.apply()
    assert result.exit_code == 1
    assert "--auto-approve" in result.output
    assert project.snapshot() == before


def test_existing_unmarked_namespace_is_adopted(project: Project):
    (project.root / "lakehouse").mkdir()
    project.driver().create_namespace(ln.CreateNamespaceRequest(id=["sales"], properties={"team": "sales"}))
    plan = project.plan()
    assert "  ~ update namespace lake: sales  (adopt)" in plan.stdout
    assert project.apply("--auto-approve").exit_code == 0
    properties = project.driver().describe_namespace(ln.DescribeNamespaceRequest(id=["sales"])).properties
    assert properties["lance_sync.owner"] == "quickstart"


def test_property_change_updates_in_place(applied: Project):
    manifest = applied.manifest
    manifest["namespaces"][0]["properties"] = {"team": "finance"}
    applied.write(manifest)
    plan = applied.plan()
    assert "  ~ update namespace lake: sales\n" in plan.stdout
    assert "~ team = 'sales' -> 'finance'" in plan.stdout
    assert applied.apply("--auto-approve").exit_code == 0
    assert applied.plan("--detailed-exitcode").exit_code == 0


def test_removed_namespace_is_dropped_child_first_with_allow_drop(applied: Project):
    manifest = applied.manifest
    returns = next(t for t in manifest["tables"] if t["name"] == "returns")
    returns["protect"] = False
    applied.write(manifest)
    assert applied.apply("--auto-approve").exit_code == 0
    manifest["tables"] = []
    manifest["namespaces"] = []
    applied.write(manifest)
    plan = applied.plan()
    lines = [line for line in plan.stdout.splitlines() if "delete namespace" in line]
    assert [line.split()[4] for line in lines] == ["sales$archive", "sales"]
    assert applied.apply("--auto-approve").exit_code == 4
    assert applied.apply("--auto-approve", "--allow-drop").exit_code == 0
    namespaces = applied.driver().list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces
    assert namespaces == []


def test_rollback_plan_undoes_an_apply(project: Project):
    manifest = project.manifest
    for table in manifest["tables"]:
        table["protect"] = False
    project.write(manifest)
    result = project.apply("--auto-approve")
    undone = project.run("apply", rollback_path(result), "--auto-approve", "--allow-drop")
    assert undone.exit_code == 0, undone.output
    assert project.driver().list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == []
    assert not (project.root / "lakehouse" / "data" / "orders.lance").exists()


def test_rollback_never_removes_a_protected_table_or_newer_data(project: Project):
    """The rollback of creating a protected table, after a writer appended rows, is refused."""
    import lance
    import pyarrow as pa

    result = project.apply("--auto-approve")
    returns = project.root / "lakehouse" / "data" / "returns.lance"
    schema = lance.dataset(str(returns)).schema
    lance.write_dataset(pa.table({f.name: pa.array([None], f.type) for f in schema}, schema=schema),
                        str(returns), mode="append")
    refused = project.run("apply", rollback_path(result), "--auto-approve", "--allow-drop")
    assert refused.exit_code == 4, refused.output
    assert "protected" in refused.output
    assert lance.dataset(str(returns)).count_rows() == 1
    assert "returns" in project.tables("sales")


def test_overlay_file_changes_the_base(project: Project):
    overlay = project.root / "prod.yaml"
    overlay.write_text("tables:\n  - name: orders\n    properties: {tier: platinum}\n")
    result = project.run("plan", "-f", str(project.manifest_path), "-f", str(overlay))
    assert result.exit_code == 0
    assert "tier = 'platinum'" in result.stdout


def test_json_plan_validates_against_the_shipped_schema(project: Project):
    result = project.plan("--format", "json")
    document = json.loads(result.stdout)
    jsonschema.validate(document, json.loads(PLAN_SCHEMA.read_text()))
    assert {(a["verb"], a["kind"]) for a in document["actions"]} == {
        ("create", "namespace"), ("create", "dataset"), ("create", "table")}


def test_markdown_plan_has_summary_then_details(project: Project):
    result = project.plan("--format", "markdown")
    text = result.stdout
    assert text.index("| change | count |") < text.index("<details>")
    assert "| create | 7 |" in text


def test_import_writes_a_manifest_that_adopts_everything(tmp_path: Path):
    root = tmp_path / "existing"
    driver = ln.connect("lance-sync-dir", {"root": str(root)})
    driver.create_namespace(ln.CreateNamespaceRequest(id=["crm"], properties={"team": "crm"}))
    driver.declare_table(ln.DeclareTableRequest(id=["crm", "leads"], location=str(root / "leads.lance"),
                                                properties={"tier": "gold"}))
    out = tmp_path / "imported.yaml"
    runner = CliRunner()
    result = runner.invoke(main, ["import", "--type", "dir", "--set", f"root={root}", "--backend", "lake",
                                  "--owner", "crm-team", "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    imported = yaml.safe_load(out.read_text())
    assert imported["tables"][0]["location"] == "./existing/leads.lance"  # relative to the written manifest
    plan = runner.invoke(main, ["plan", "-f", str(out)], catch_exceptions=False)
    assert "Plan: 0 to create, 0 to update, 2 to adopt, 0 to replace, 0 to remove." in plan.stdout
    assert runner.invoke(main, ["apply", "-f", str(out), "--auto-approve"]).exit_code == 0
    assert runner.invoke(main, ["plan", "-f", str(out), "--detailed-exitcode"]).exit_code == 0


def test_partial_failure_reports_and_a_rerun_converges(project: Project):
    """One table cannot be written (its parent path is a file): the rest is applied, exit 3,
    and once the obstacle is gone the next apply finishes the job."""
    blocker = project.root / "lakehouse" / "blocker"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("not a directory")
    manifest = project.manifest
    manifest["tables"].append({"name": "blocked", "location": "./lakehouse/blocker/t.lance",
                               "register": [{"backend": "lake", "namespace": "sales"}],
                               "schema": [{"name": "id", "type": "int64"}]})
    project.write(manifest)
    partial = project.apply("--auto-approve")
    assert partial.exit_code == 3, partial.output
    assert "Apply partly failed" in partial.stdout and "failed:  create dataset lake: " in partial.stdout
    assert "skipped: create table lake: sales$blocked" in partial.stdout
    assert "will not pass by themselves" in partial.stdout
    assert "orders" in project.tables("sales")
    blocker.unlink()
    rest = project.plan()
    assert "Plan: 2 to create" in rest.stdout
    assert project.apply("--auto-approve").exit_code == 0
    assert project.plan("--detailed-exitcode").exit_code == 0


def renamed(project: Project, new_name: str, renamed_from, namespace: str = "sales") -> None:
    """The manifest with `orders` called `new_name` (in `namespace`), renamed from `renamed_from`."""
    manifest = project.manifest
    orders = next(t for t in manifest["tables"] if t["name"] == "orders")
    orders.update(name=new_name, renamed_from=renamed_from, register=[{"backend": "lake", "namespace": namespace}])
    project.write(manifest)


def test_a_rename_keeps_the_table_and_its_data_and_the_rollback_renames_it_back(applied: Project):
    import lance

    orders = applied.root / "lakehouse" / "data" / "orders.lance"
    version = lance.dataset(str(orders)).version
    renamed(applied, "orders_v2", "orders")
    plan = applied.plan()
    assert " ~> rename table     lake: sales$orders -> sales$orders_v2" in plan.stdout
    assert "Plan: 0 to create, 0 to update, 0 to adopt, 1 to rename, 0 to replace, 0 to remove." in plan.stdout
    result = applied.apply("--auto-approve")
    assert result.exit_code == 0, result.output
    assert applied.tables("sales") == ["orders_v2", "returns"]
    info = applied.driver().get_table_info(("sales", "orders_v2"))
    assert info.location == orders.as_uri() and info.properties["lance_sync.owner"] == "quickstart"
    assert lance.dataset(str(orders)).version == version  # the data was not touched
    assert applied.plan("--detailed-exitcode").exit_code == 0
    back = applied.run("apply", rollback_path(result), "--auto-approve")
    assert back.exit_code == 0, back.output
    assert " ~> rename table     lake: sales$orders_v2 -> sales$orders" in back.stdout
    assert applied.tables("sales") == ["orders", "returns"]


def test_a_move_to_another_namespace_keeps_the_table(applied: Project):
    renamed(applied, "orders", "sales$orders", namespace="sales$archive")
    plan = applied.plan()
    assert " ~> rename table     lake: sales$orders -> sales$archive$orders" in plan.stdout
    assert applied.apply("--auto-approve").exit_code == 0
    assert applied.tables("sales") == ["returns"] and applied.tables("sales", "archive") == ["orders", "returns_2026"]
    assert applied.plan("--detailed-exitcode").exit_code == 0


def test_a_rename_without_renamed_from_is_planned_as_before_with_a_hint(applied: Project):
    renamed(applied, "orders_v2", None)
    manifest = applied.manifest
    del next(t for t in manifest["tables"] if t["name"] == "orders_v2")["renamed_from"]
    applied.write(manifest)
    plan = applied.plan()
    assert "Plan: 1 to create, 0 to update, 0 to adopt, 0 to replace, 1 to remove." in plan.stdout
    assert "Note: lake: sales$orders_v2 looks like a rename of sales$orders: add renamed_from: orders to table " \
        "'orders_v2'" in plan.stdout
