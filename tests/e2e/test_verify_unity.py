"""verify reports drift between a dataset's schema and the columns Unity records for it."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner

from lance_sync.cli.app import main
from tests.conformance.harness_unity import UnityHarness

pytestmark = pytest.mark.servers


def test_verify_reports_unity_column_drift(unity_server, tmp_path: Path):
    harness = UnityHarness(unity_server, tmp_path)
    namespace = list(harness.new_namespace_id())
    declared_first = tmp_path / "declared_first.lance"
    with_data = tmp_path / "with_data.lance"
    lance.write_dataset(pa.table({"id": pa.array([1], pa.int64())}), str(with_data))
    manifest = {
        "version": 1, "owner": "drift",
        "backends": {"uc": {"type": "unity", **harness.config()}},
        "namespaces": [{"backend": "uc", "id": namespace}],
        "tables": [{"name": name, "location": str(location), "register": [{"backend": "uc", "namespace": namespace}]}
                   for name, location in (("declared_first", declared_first), ("with_data", with_data))],
    }
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    runner = CliRunner()
    assert runner.invoke(main, ["apply", "-f", str(path), "--auto-approve"]).exit_code == 0
    lance.write_dataset(pa.table({"id": pa.array([1], pa.int64()), "v": pa.array(["x"])}), str(declared_first))
    result = runner.invoke(main, ["verify", "-f", str(path), "--engine", "threads", "--format", "json"])
    assert result.exit_code == 1, result.output
    problems = {Path(f["location"]).name: f["problems"] for f in json.loads(result.stdout)["findings"]}
    assert problems["with_data.lance"] == []
    assert len(problems["declared_first.lance"]) == 1
    assert "schema drift" in problems["declared_first.lance"][0]
    assert "(id: bigint, v: string)" in problems["declared_first.lance"][0]
