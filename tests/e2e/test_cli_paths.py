"""Where lance-sync reads and writes files, and how it shows paths, on the embedded `dir` backend:
plan writes nothing, paths below the manifest's folder read relative, journals go to the one
journal directory, saved plans work with -o, and import writes a manifest that adopts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import lance_namespace as ln
import pytest
import yaml
from click.testing import CliRunner

from lance_sync.cli.app import main
from tests.support.project import Project, rollback_path


@pytest.fixture
def project(tmp_path: Path) -> Project:
    (tmp_path / "project").mkdir()
    return Project(tmp_path / "project")


@pytest.fixture
def applied(project: Project) -> Project:
    result = project.apply("--auto-approve")
    assert result.exit_code == 0, result.output
    return project


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch) -> Path:
    """The working directory: not the manifest's folder."""
    directory = tmp_path / "elsewhere"
    directory.mkdir()
    monkeypatch.chdir(directory)
    return directory


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_plan_creates_nothing(project: Project, tmp_path: Path):
    before = files_under(tmp_path)
    for output_format in ("text", "json", "markdown", "html"):
        assert project.plan("--format", output_format).exit_code == 0
    assert files_under(tmp_path) == before
    assert not (project.root / "lakehouse").exists()


def test_plan_o_saves_a_plan_that_applies(project: Project, tmp_path: Path):
    saved = tmp_path / "saved-plan.json"
    result = project.plan("-o", str(saved))
    assert result.exit_code == 0, result.output
    assert f"Saved the plan to {saved}" in result.stderr
    applied = project.run("apply", str(saved), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    assert project.tables("sales") == ["orders", "returns"]


def test_text_and_markdown_show_paths_relative_to_the_manifest(project: Project, elsewhere: Path):
    location = str(project.root / "lakehouse" / "data" / "orders.lance")
    for output_format in ("text", "markdown", "html"):
        output = project.plan("--format", output_format).stdout
        assert "./lakehouse/data/orders.lance" in output
        assert str(project.root) not in output, output
        assert "./ is the manifest's folder" in output
    document = json.loads(project.plan("--format", "json").stdout)
    assert document["base_dir"] == str(project.root)
    assert location in {a["display_id"] for a in document["actions"]}  # JSON keeps locations absolute


def test_manifest_files_are_shown_relative_to_the_working_directory(project: Project, monkeypatch):
    monkeypatch.chdir(project.root.parent)
    result = project.run("plan", "-f", "project/lance-sync.yaml", "--format", "json")
    assert json.loads(result.stdout)["manifest_files"] == ["project/lance-sync.yaml"]


def test_apply_reports_paths_relative_to_the_manifest_and_journals_beside_it(project: Project, elsewhere: Path):
    result = project.apply("--auto-approve")
    assert result.exit_code == 0, result.output
    assert "./lakehouse/data/orders.lance" in result.stdout
    journal = next(line for line in result.stdout.splitlines() if line.startswith("Journal: "))
    assert journal.startswith(f"Journal: {project.root / '.lance-sync' / 'journal'}/apply-")
    assert not (elsewhere / ".lance-sync").exists()


def test_a_rollback_journals_in_the_same_journal_directory(project: Project):
    manifest = project.manifest
    for table in manifest["tables"]:
        table["protect"] = False
    project.write(manifest)
    rollback = rollback_path(project.apply("--auto-approve"))
    undone = project.run("apply", rollback, "--auto-approve", "--allow-drop")
    assert undone.exit_code == 0, undone.output
    journal_directory = project.root / ".lance-sync" / "journal"
    assert len(list(journal_directory.glob("apply-*.jsonl"))) == 2
    assert not (journal_directory / ".lance-sync").exists()


def test_import_writes_a_manifest_that_plans_to_adopts(tmp_path: Path, monkeypatch):
    """Relative paths and schemas where the data exists, objects of other owners left out."""
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "catalog" / "lake"
    driver = ln.connect("lance-sync-dir", {"root": str(root)})
    driver.create_namespace(ln.CreateNamespaceRequest(id=["crm"], properties={"team": "crm"}))
    driver.create_namespace(ln.CreateNamespaceRequest(id=["theirs"], properties={"lance_sync.owner": "ops"}))
    import lance
    import pyarrow as pa

    lance.write_dataset(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}), str(root / "leads.lance"))
    driver.declare_table(ln.DeclareTableRequest(id=["crm", "leads"], location=str(root / "leads.lance"),
                                                properties={"tier": "gold"}))
    driver.declare_table(ln.DeclareTableRequest(id=["crm", "planned"], location=str(root / "planned.lance")))
    runner = CliRunner()
    base = ["import", "--type", "dir", "--set", "root=catalog/lake", "--backend", "lake"]

    no_owner = runner.invoke(main, base, catch_exceptions=False)
    assert no_owner.exit_code == 1 and "--owner is required with --type" in no_owner.output

    out = tmp_path / "catalog" / "imported.yaml"
    result = runner.invoke(main, [*base, "--owner", "crm-team", "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "Left out: namespace theirs (owned by 'ops')" in result.stderr
    imported = yaml.safe_load(out.read_text())
    assert imported["backends"]["lake"]["root"] == "./lake"
    tables = {t["name"]: t for t in imported["tables"]}
    assert tables["leads"]["location"] == "./lake/leads.lance"
    assert tables["leads"]["schema"] == [{"name": "id", "type": "int64"}, {"name": "name", "type": "string"}]
    assert "schema" not in tables["planned"]  # no data there yet
    plan = runner.invoke(main, ["plan", "-f", str(out)], catch_exceptions=False)
    assert plan.exit_code == 0, plan.output
    assert "Plan: 0 to create, 0 to update, 3 to adopt, 0 to replace, 0 to remove." in plan.stdout
    assert runner.invoke(main, ["apply", "-f", str(out), "--auto-approve"]).exit_code == 0
    assert runner.invoke(main, ["plan", "-f", str(out), "--detailed-exitcode"]).exit_code == 0
    assert os.path.isdir(root)
