"""CLI habits users bring from Terraform and Atlas (issue 22): `version [--format json]`,
`show PLAN`, `--no-color`, `--chdir DIR`, and `--format json` everywhere, usage errors included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import lance
import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner

from lance_sync import __version__
from lance_sync.cli.app import main

MANIFEST = {
    "version": 1, "owner": "habits",
    "backends": {"lake": {"type": "dir", "root": "./lake"}},
    "namespaces": [{"backend": "lake", "id": "sales"}],
    "tables": [{"name": "orders", "location": "./lake/data/orders.lance",
                "register": [{"backend": "lake", "namespace": "sales"}], "schema": [{"name": "id", "type": "int64"}]}],
}


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(MANIFEST, sort_keys=False))
    return path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """A real process: global options (--chdir) change the process's working directory."""
    env = {**os.environ, "NO_COLOR": ""}
    return subprocess.run([sys.executable, "-m", "lance_sync", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_version_names_the_libraries_and_drivers():
    result = CliRunner().invoke(main, ["version", "--format", "json"])
    document = json.loads(result.output)
    assert result.exit_code == 0 and document["lance_sync_version"] == __version__
    assert {"pylance", "lance-namespace", "pyarrow", "pyspark", "botocore", "pymetastore"} <= set(document["components"])
    assert document["components"]["pylance"] == lance.__version__
    assert document["drivers"] == ["dir", "glue", "hive3", "iceberg", "unity"]
    text = CliRunner().invoke(main, ["version"]).output
    assert text.startswith(f"lance-sync {__version__}") and "lance-namespace" in text


def test_show_prints_a_saved_plan_as_plan_did(manifest: Path, tmp_path: Path):
    saved = tmp_path / "plan.json"
    planned = CliRunner().invoke(main, ["plan", "-f", str(manifest), "-o", str(saved)])
    assert planned.exit_code == 0, planned.output
    for output_format in ("text", "json", "markdown"):
        shown = CliRunner().invoke(main, ["show", str(saved), "--format", output_format])
        assert shown.exit_code == 0, shown.output
        again = CliRunner().invoke(main, ["plan", "-f", str(manifest), "--format", output_format]).output
        assert without_times(shown.output) == without_times(again), output_format
    assert json.loads(CliRunner().invoke(main, ["show", str(saved), "--format", "json"]).output)["owner"] == "habits"


def without_times(text: str) -> list[str]:
    return [line for line in text.splitlines() if "created_at" not in line]


def test_chdir_runs_as_if_started_there(manifest: Path, tmp_path: Path, subprocesses: None):
    result = cli("--chdir", str(tmp_path), "plan", "--no-color")
    assert result.returncode == 0, result.stderr
    assert "+ create table     lake: sales$orders" in result.stdout
    assert "\x1b[" not in result.stdout


def test_no_color_takes_colour_out(manifest: Path, subprocesses: None):
    script = ("import sys; sys.stdout.isatty = lambda: True; from lance_sync.cli.app import main; "
              f"main(['--no-color', 'plan', '-f', {str(manifest)!r}])")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                            env={k: v for k, v in os.environ.items() if k != "NO_COLOR"})
    assert "+ create" in result.stdout and "\x1b[" not in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("args", [
    ["plan", "--format", "json", "--bogus"],
    ["plan", "--format=json", "--parallelism", "zero"],
    ["drift", "--format", "json", "-f", "missing.yaml"],
])
def test_errors_with_format_json_are_a_json_document(args: list[str], tmp_path: Path, subprocesses: None):
    result = cli("--chdir", str(tmp_path), *args)
    assert result.returncode == 1, result
    document = json.loads(result.stdout)
    assert document["exit_code"] == 1 and document["error"]


def test_discover_unlock_and_import_speak_json(manifest: Path, tmp_path: Path):
    lance.write_dataset(pa.table({"id": pa.array([1], pa.int64())}), str(tmp_path / "lake" / "loose.lance"))
    found = CliRunner().invoke(main, ["discover", "-f", str(manifest), str(tmp_path / "lake"), "--format", "json"])
    document = json.loads(found.output)
    assert [Path(p).name for p in document["datasets"]] == ["loose.lance"] and "tables:" in document["snippet"]

    leases = CliRunner().invoke(main, ["unlock", "-f", str(manifest), "--format", "json"])
    assert json.loads(leases.output) == {"owner": "habits", "leases": []}

    CliRunner().invoke(main, ["apply", "-f", str(manifest), "--auto-approve"])
    imported = CliRunner().invoke(main, ["import", "-f", str(manifest), "--backend", "lake", "--format", "json"])
    document = json.loads(imported.output)
    assert "orders" in document["manifest"] and document["left_out"] == [] and document["output"] is None


def test_one_version_and_the_license_the_metadata_declares():
    from importlib import metadata

    import tomllib

    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert metadata.version("lance-sync") == __version__
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert (root / "LICENSE").read_text().split()[:3] == ["Apache", "License", "Version"]
