"""Schema evolution on a catalog backend: a table registered in the Unity test server, its dataset
at the registration's location changed in place (add, rename, drop), read back with pylance."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest
import yaml

from lance_sync.model.marks import DATASET_OWNER_KEY
from tests.conformance.harness_unity import UnityHarness
from tests.support.cli import cli_env, describe, run_cli

pytestmark = pytest.mark.servers


def test_columns_change_in_place_under_a_unity_registration(unity_server, tmp_path: Path):
    harness = UnityHarness(unity_server, tmp_path)
    namespace = list(harness.new_namespace_id())
    location = tmp_path / "orders.lance"
    manifest = {
        "version": 1, "owner": "evolve",
        "backends": {"uc": {"type": "unity", **harness.config()}},
        "namespaces": [{"backend": "uc", "id": namespace}],
        "tables": [{"name": "orders", "location": str(location), "register": [{"backend": "uc", "namespace": namespace}],
                    "schema": [{"name": "id", "type": "int64"}, {"name": "qty", "type": "int32"},
                               {"name": "legacy", "type": "string"}]}]}
    path = tmp_path / "lance-sync.yaml"

    def applied(*flags: str) -> None:
        path.write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
        result = run_cli(path, "apply", "--auto-approve", *flags, env=cli_env())
        assert result.returncode == 0, describe(result)

    applied()
    schema = lance.dataset(str(location)).schema
    lance.write_dataset(pa.table({"id": [7], "qty": pa.array([2], pa.int32()), "legacy": ["x"]}, schema=schema),
                        str(location), mode="append")
    manifest["tables"][0]["schema"] = [
        {"name": "id", "type": "int64"}, {"name": "quantity", "type": "int64", "renamed_from": "qty"},
        {"name": "legacy", "removed": True}, {"name": "score", "type": "float64"}]
    applied("--allow-drop")
    dataset = lance.dataset(str(location))
    assert dataset.schema.names == ["id", "quantity", "score"]
    assert dataset.schema.field("quantity").type == pa.int64()
    assert dataset.to_table().to_pylist() == [{"id": 7, "quantity": 2, "score": None}]
    assert dataset.schema.metadata[DATASET_OWNER_KEY.encode()] == b"evolve"
    again = run_cli(path, "plan", "--detailed-exitcode", env=cli_env())
    assert again.returncode == 0 and "No changes" in again.stdout, describe(again)
    # the columns Unity recorded at registration are not rewritten by a column change
    drift = run_cli(path, "drift", env=cli_env())
    assert drift.returncode == 2 and "catalog schema" in drift.stdout, describe(drift)
