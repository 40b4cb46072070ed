"""The CLI tells the truth: exit codes, one JSON document, schema evolution, names that apply takes."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import yaml
from click.testing import CliRunner

from lance_sync.cli.app import main
from tests.support.project import Project


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def run(*args: str):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def test_usage_errors_exit_1_not_the_changes_present_code(project: Project):
    result = project.run("plan", "-f", str(project.manifest_path), "--fromat", "json")
    assert result.exit_code == 1 and "No such option" in result.output
    assert run("plan", "--format", "yaml").exit_code == 1
    assert run("no-such-command").exit_code == 1
    assert run("--help").exit_code == 0


def test_apply_json_is_one_document_with_the_plan_and_every_outcome(project: Project):
    result = project.apply("--auto-approve", "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)  # the whole stdout is one JSON document
    assert document["status"] == "applied" and document["exit_code"] == 0
    assert len(document["outcomes"]) == len(document["plan"]["actions"]) == 7
    assert {o["status"] for o in document["outcomes"]} == {"succeeded"}
    again = json.loads(project.apply("--auto-approve", "--format", "json").stdout)
    assert again["status"] == "no_changes" and again["plan"]["actions"] == []


def test_a_refusal_in_json_is_still_one_document(project: Project):
    assert project.apply("--auto-approve").exit_code == 0
    manifest = project.manifest
    orders = next(t for t in manifest["tables"] if t["name"] == "orders")
    orders["on_remove"] = "drop"
    project.write(manifest)
    assert project.apply("--auto-approve").exit_code == 0
    manifest["tables"].remove(orders)
    project.write(manifest)
    refused = project.apply("--auto-approve", "--format", "json")
    assert refused.exit_code == 4
    document = json.loads(refused.stdout)
    assert document["status"] == "refused" and "--allow-drop" in document["error"]


def test_a_plan_error_in_json_is_one_document(project: Project):
    manifest = project.manifest
    manifest["tables"][0]["register"] = [{"backend": "lake", "namespace": "nowhere"}]
    project.write(manifest)
    result = project.plan("--format", "json")
    assert result.exit_code == 1
    assert "nowhere" in json.loads(result.stdout)["error"]


def test_schema_evolution_is_fine_and_a_missing_column_names_table_and_column(project: Project):
    assert project.apply("--auto-approve").exit_code == 0
    orders = project.root / "lakehouse" / "data" / "orders.lance"
    dataset = lance.dataset(str(orders))
    dataset.add_columns({"note": "'x'"})
    plan = project.plan("--detailed-exitcode")
    assert plan.exit_code == 0, plan.output
    assert "Note: table 'orders'" in plan.stdout and "note: string" in plan.stdout
    verify = project.run("verify", "-f", str(project.manifest_path), "--engine", "threads")
    assert verify.exit_code == 0, verify.output
    assert "columns beyond the manifest" in verify.stdout

    manifest = project.manifest
    table = next(t for t in manifest["tables"] if t["name"] == "orders")
    table["schema"] = [*table["schema"], {"name": "missing_col", "type": "int64", "nullable": False}]
    project.write(manifest)
    broken = project.plan()
    assert broken.exit_code == 1
    assert "table 'orders'" in broken.output and "column 'missing_col' is declared int64 not null and is missing" \
        in broken.output
    verify = project.run("verify", "-f", str(project.manifest_path), "--engine", "threads")
    assert verify.exit_code == 1 and "missing_col" in verify.stdout


def test_on_mismatch_overwrite_destroys_data_and_needs_allow_drop(project: Project, tmp_path: Path):
    csv = tmp_path / "rows.csv"
    csv.write_text("id\n1\n2\n")
    manifest = project.manifest
    manifest["tables"] = [{"name": "rows", "location": "./lakehouse/data/rows.lance",
                           "schema": [{"name": "id", "type": "string"}],
                           "source": {"format": "csv", "path": str(csv), "on_mismatch": "overwrite"},
                           "register": [{"backend": "lake", "namespace": "sales"}]}]
    project.write(manifest)
    lance.write_dataset(pa.table({"id": pa.array([7], pa.int64())}), str(project.root / "lakehouse/data/rows.lance"))
    plan = project.plan()
    assert "-/+ replace dataset" in plan.stdout and "[destroys data]" in plan.stdout, plan.stdout
    refused = project.apply("--auto-approve")
    assert refused.exit_code == 4 and "--allow-drop" in refused.output
    assert pc.sum(lance.dataset(str(project.root / "lakehouse/data/rows.lance")).to_table()["id"]).as_py() == 7


def test_discover_proposes_names_that_validate(project: Project):
    assert project.apply("--auto-approve").exit_code == 0
    odd = project.root / "lakehouse" / "data" / "Odd$Name v2.lance"
    lance.write_dataset(pa.table({"id": [1]}), str(odd))
    found = project.run("discover", "-f", str(project.manifest_path), str(project.root / "lakehouse"),
                        "--engine", "threads")
    assert found.exit_code == 0, found.output
    snippet = yaml.safe_load(found.stdout)
    entry = next(t for t in snippet["tables"] if t["location"].endswith("Odd$Name v2.lance"))
    assert entry["name"] == "odd_name_v2"
    manifest = project.manifest
    manifest["tables"].append({**entry, "register": [{"backend": "lake", "namespace": "sales"}]})
    project.write(manifest)
    assert project.run("validate", "-f", str(project.manifest_path)).exit_code == 0
    assert project.apply("--auto-approve").exit_code == 0


def test_validate_refuses_a_table_name_the_backend_would_refuse(project: Project):
    manifest = project.manifest
    manifest["tables"][0]["register"] = [{"backend": "lake", "namespace": "sales", "name": "a$b"}]
    project.write(manifest)
    result = project.run("validate", "-f", str(project.manifest_path))
    assert result.exit_code == 1 and "lance-sync.yaml:" in result.output and "'$'" in result.output


def test_plan_states_its_scope_and_scan_all_finds_owned_objects_elsewhere(project: Project):
    assert project.apply("--auto-approve").exit_code == 0
    manifest = project.manifest
    manifest["namespaces"] = [ns for ns in manifest["namespaces"] if ns["id"] == "sales"]
    manifest["tables"] = [t for t in manifest["tables"] if all(r["namespace"] == "sales" for r in t["register"])]
    project.write(manifest)
    plan = project.plan()
    # the owned objects that left are found and planned: the scope explains nothing in the text
    # (issue 49), and the JSON plan records it
    assert "Scanned (" not in plan.stdout and "forget table     lake: sales$archive$returns_2026" in plan.stdout
    scope = json.loads(project.plan("--format", "json").stdout)["scope"]
    assert "sales" in scope[0]["namespaces"] and scope[0]["backend"] == "lake"
    scanned = project.plan("--scan-all")
    assert "every namespace (--scan-all)" in scanned.stdout
