"""`lance-sync status` against a directory catalog: each declared object on both axes, why it is
not green, the last apply that changed it, and the exit codes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
import yaml
from lance_namespace_urllib3_client.models import DeregisterTableRequest

from lance_sync.check.status import StatusReport
from lance_sync.drivers.dir.driver import DirNamespace
from tests.support.cli import cli_env, describe, run_cli

INT64 = [{"name": "id", "type": "int64"}]
DECOY = "<img src=x onerror=alert(1)>"


def estate(folder: Path, **extra_backends: dict[str, Any]) -> Path:
    """Namespace sales with tables orders and returns, each with its dataset; applied."""
    manifest: dict[str, Any] = {
        "version": 1, "owner": "status-test",
        "backends": {"lake": {"type": "dir", "root": "./lake"}, **extra_backends},
        "namespaces": [{"backend": "lake", "id": "sales"}],
        "tables": [{"name": name, "location": f"./lake/data/{name}.lance", "properties": {"note": DECOY},
                    "register": [{"backend": "lake", "namespace": "sales"}], "schema": INT64}
                   for name in ("orders", "returns")]}
    path = folder / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    applied = run_cli(path, "apply", "--auto-approve", env=cli_env())
    assert applied.returncode == 0, describe(applied)
    return path


def status(path: Path, *args: str) -> tuple[int, StatusReport]:
    result = run_cli(path, "status", "--format", "json", *args, env=cli_env())
    return result.returncode, StatusReport.model_validate_json(result.stdout)


def states(report: StatusReport) -> dict[str, tuple[str, str]]:
    return {f"{o.kind} {o.id}": (o.sync.value, o.health.value) for o in report.objects}


def test_a_table_dropped_out_of_band_is_missing_and_the_rest_synced_and_healthy(tmp_path: Path):
    path = estate(tmp_path)
    code, report = status(path)
    assert code == 0 and report.summary.sync["Synced"] == report.summary.objects == 7
    DirNamespace(root=str(tmp_path / "lake")).deregister_table(DeregisterTableRequest(id=["sales", "returns"]))

    code, report = status(path)
    assert code == 2
    seen = states(report)
    assert seen.pop("table sales$returns") == ("Missing", "Missing")
    assert set(seen.values()) == {("Synced", "Healthy")}, seen  # the namespace, orders, both datasets, columns
    returns = next(o for o in report.objects if o.id == "sales$returns")
    assert returns.reason == "declared in the manifest, absent from backend 'lake'"
    assert returns.repairs == ["+ create table lake: sales$returns"]
    assert returns.last_applied is not None and returns.last_applied.action == "create table"
    assert Path(returns.last_applied.journal).parent == tmp_path / ".lance-sync" / "journal"
    assert report.summary.health == {"Healthy": 6, "Degraded": 0, "Missing": 1, "Unknown": 0}

    text = run_cli(path, "status", env=cli_env())
    assert text.returncode == 2
    assert "! table lake: sales$returns            Missing    Missing" in text.stdout, text.stdout
    assert "  dataset ./lake/data/orders.lance     Synced     Healthy" in text.stdout
    assert "7 object(s): sync 6 Synced, 1 Missing; health 6 Healthy, 1 Missing." in text.stdout
    markdown = run_cli(path, "status", "--format", "markdown", env=cli_env()).stdout
    assert "| `table lake: sales$returns` | Missing | Missing | declared in the manifest" in markdown


def test_a_dataset_without_a_declared_column_is_degraded_and_an_unreadable_one_too(tmp_path: Path):
    path = estate(tmp_path)
    lance.write_dataset(pa.table({"other": [1]}), str(tmp_path / "lake/data/orders.lance"), mode="overwrite")
    (tmp_path / "lake/data/returns.lance/_versions").rename(tmp_path / "lake/data/returns.lance/moved")
    code, report = status(path)
    assert code == 2
    seen = states(report)
    orders, returns = (str(tmp_path / f"lake/data/{name}.lance") for name in ("orders", "returns"))
    assert seen[f"dataset {orders}"][1] == "Degraded"
    assert seen[f"column {orders}#id"] == ("Missing", "Missing")
    assert seen[f"dataset {returns}"][1] == "Degraded"
    assert seen[f"column {returns}#id"] == ("Unknown", "Degraded")
    reasons = {o.id: o.reason or "" for o in report.objects}
    assert "missing columns: id" in reasons[orders]
    assert "the dataset does not open" in reasons[returns]


def test_a_backend_that_cannot_be_read_makes_its_objects_unknown_and_exits_1(tmp_path: Path):
    """A second catalog on a closed port: its registration and namespace are Unknown, the rest
    is read as usual."""
    path = estate(tmp_path)
    manifest = yaml.safe_load(path.read_text())
    manifest["backends"]["ice"] = {"type": "iceberg", "endpoint": "http://127.0.0.1:9", "root": "./ice",
                                   "max_retries": 0}
    manifest["tables"][0]["register"].append({"backend": "ice", "namespace": ["wh", "sales"]})
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    code, report = status(path)
    assert code == 1
    unknown = [o for o in report.objects if o.sync.value == "Unknown"]
    assert [(o.kind, o.id, o.health.value) for o in unknown] == [("table", "wh.sales.orders", "Unknown")]
    assert "cannot reach the server" in (unknown[0].reason or "")
    assert states(report)["table sales$orders"] == ("Synced", "Healthy")


def test_the_revision_of_a_manifest_in_git_is_shown_and_journalled(tmp_path: Path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    manifest = {"version": 1, "owner": "status-test", "backends": {"lake": {"type": "dir", "root": "./lake"}},
                "namespaces": [{"backend": "lake", "id": "sales"}]}
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest))
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "add", "lance-sync.yaml"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "m"], check=True)
    head = subprocess.run([*git, "rev-parse", "--short=12", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    assert run_cli(path, "apply", "--auto-approve", env=cli_env()).returncode == 0
    code, report = status(path)
    assert code == 0 and report.revision == head
    assert report.objects[0].last_applied is not None and report.objects[0].last_applied.revision == head
    path.write_text(yaml.safe_dump({**manifest, "owner": "status-test"}) + "# changed\n")
    assert status(path)[1].revision == f"{head} (modified)"


@pytest.mark.parametrize("output_format", ["text", "json", "markdown"])
def test_secrets_are_masked_in_every_format(tmp_path: Path, output_format: str):
    """A credential the object stores read from the environment, quoted by a property's drift."""
    path = estate(tmp_path)
    manifest = yaml.safe_load(path.read_text())
    manifest["tables"][0]["properties"]["key"] = "${AWS_SECRET_ACCESS_KEY}"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    result = run_cli(path, "status", "--format", output_format, env=cli_env(AWS_SECRET_ACCESS_KEY="s3cr3t-v4lue"))
    assert result.returncode == 2 and "key is not set" in result.stdout
    assert "s3cr3t-v4lue" not in result.stdout
    if output_format == "json":
        assert json.loads(result.stdout)["objects"][1]["sync"] == "OutOfSync"
