"""Quiet by default (issue 49): what a command prints explains its result, reflects the flags
given, and shows paths one way (relative to the manifest's folder, as a plan does)."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from click.testing import CliRunner

from lance_sync.cli.app import main
from tests.support.cli import cli_env, run_cli

MANIFEST = {
    "version": 1, "owner": "quiet",
    "backends": {"lake": {"type": "dir", "root": "./lake"}},
    "namespaces": [{"backend": "lake", "id": "sales"}, {"backend": "lake", "id": "archive"}],
    "tables": [{"name": "orders", "location": "./lake/data/orders.lance",
                "register": [{"backend": "lake", "namespace": "sales"}], "schema": [{"name": "id", "type": "int64"}]},
               {"name": "old", "location": "./lake/data/old.lance", "on_remove": "drop",
                "register": [{"backend": "lake", "namespace": "archive"}], "schema": [{"name": "id", "type": "int64"}]}],
}
SCANNED = "Scanned (owned objects outside these namespaces are not seen"


def write(folder: Path, manifest: dict) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return path


def applied(folder: Path) -> Path:
    manifest = write(folder, MANIFEST)
    result = run_cli(manifest, "apply", "--auto-approve", env=cli_env())
    assert result.returncode == 0, result.stderr
    return manifest


def test_the_scan_note_only_when_it_explains_the_plan(tmp_path: Path):
    """A plan that reads what it needs says nothing of its scope; one that does not see a table
    of its owner (in a namespace another owner declares, once the table left the manifest) names it."""
    manifest = write(tmp_path, MANIFEST)
    fresh = run_cli(manifest, "plan", env=cli_env())
    assert fresh.returncode == 0 and SCANNED not in fresh.stdout, fresh.stdout
    applied(tmp_path)
    assert SCANNED not in run_cli(manifest, "plan", env=cli_env()).stdout
    other = {**MANIFEST, "owner": "other", "backends": {"lake": {"type": "dir", "root": "../lake"}},
             "namespaces": [{"backend": "lake", "id": "shared"}], "tables": []}
    assert run_cli(write(tmp_path / "other", other), "apply", "--auto-approve", env=cli_env()).returncode == 0
    guest = copy.deepcopy(MANIFEST)
    guest["tables"][0]["register"].append({"backend": "lake", "namespace": "shared"})
    assert run_cli(write(tmp_path, guest), "apply", "--auto-approve", env=cli_env()).returncode == 0
    write(tmp_path, MANIFEST)
    outside = run_cli(manifest, "plan", env=cli_env())
    assert SCANNED in outside.stdout, outside.stdout
    assert "owned by 'quiet' outside them, not planned: shared$orders" in outside.stdout
    assert "every namespace (--scan-all)" in run_cli(manifest, "plan", "--scan-all", env=cli_env()).stdout


def test_the_summary_says_what_the_flags_given_allow(tmp_path: Path):
    manifest = applied(tmp_path)
    removed = copy.deepcopy(MANIFEST)
    removed["tables"] = removed["tables"][:1]
    write(tmp_path, removed)
    assert "1 destroy data (needs --allow-drop)." in run_cli(manifest, "plan", env=cli_env()).stdout
    result = run_cli(manifest, "apply", "--auto-approve", "--allow-drop", env=cli_env())
    assert result.returncode == 0, result.stderr
    assert "1 destroy data (allowed by --allow-drop)." in result.stdout and "needs --allow-drop" not in result.stdout
    markdown = run_cli(manifest, "apply", "--dry-run", "--allow-drop", "--format", "markdown", env=cli_env())
    assert "needs" not in markdown.stdout


def test_show_heads_a_rollback_plan_as_one(tmp_path: Path):
    applied(tmp_path)
    rollback = next((tmp_path / ".lance-sync" / "journal").glob("*.rollback.json"))
    for output_format, head in (("text", "lance-sync rollback plan for owner 'quiet'"),
                                ("markdown", "### lance-sync rollback plan")):
        shown = CliRunner(env={"NO_COLOR": "1"}).invoke(main, ["show", str(rollback), "--format", output_format])
        assert shown.exit_code == 0 and shown.stdout.startswith(head), shown.stdout
    page = CliRunner().invoke(main, ["show", str(rollback), "--format", "html"]).stdout
    assert "<h1>lance-sync rollback plan</h1>" in page and "<title>lance-sync rollback plan: quiet" in page


def test_verify_before_the_first_apply_reports_nothing_ok(tmp_path: Path):
    result = run_cli(write(tmp_path, MANIFEST), "verify", env=cli_env())
    assert result.returncode == 0, result.stderr
    assert " ok " not in result.stdout and "(missing)" not in result.stdout
    assert "absent  ./lake/data/orders.lance  (no dataset yet: apply writes it)" in result.stdout
    assert result.stdout.endswith("0 broken, 0 ok, 2 not written yet (lance-sync apply writes them).\n")


def test_errors_and_drift_show_paths_as_a_plan_does(tmp_path: Path):
    """Relative to the manifest's folder, from wherever the command runs."""
    outside = copy.deepcopy(MANIFEST)
    outside["backends"]["lake"]["root"] = "./elsewhere"
    invalid = run_cli(write(tmp_path, outside), "validate", env=cli_env())
    assert invalid.returncode == 1 and "(got ./lake/data/orders.lance)" in invalid.stderr, invalid.stderr
    assert str(tmp_path / "lake") not in invalid.stderr  # the manifest itself is named as given
    manifest = applied(tmp_path)
    moved = copy.deepcopy(MANIFEST)
    moved["tables"][0]["location"] = "./lake/data/orders_v2.lance"
    write(tmp_path, moved)
    drift = run_cli(manifest, "drift", env=cli_env())
    assert "./lake/data/orders" in drift.stdout and str(tmp_path) not in drift.stdout, drift.stdout
