"""A table's indexes, tags and retention on a catalog backend over S3: Unity Catalog (the
project's server) registering a dataset on moto S3, the dataset reached with the backend's
storage options; read back with pylance (issue 47)."""

from __future__ import annotations

import uuid
from pathlib import Path

import lance
import pyarrow as pa
import pytest
import yaml

from tests.conformance.harness_unity import ensure_catalog
from tests.servers import s3
from tests.support.cli import cli_env, describe, run_cli

pytestmark = pytest.mark.servers

CATALOG = "state"
KEY, SECRET = "LS_STATE_S3_KEY", "LS_STATE_S3_SECRET"


def test_indexes_tags_and_retention_through_unity_on_s3(unity_server, s3_server, tmp_path: Path):
    """Guards: every part on a catalog backend with S3 storage options: built, tagged, cleaned,
    re-planned clean, drift-reported after an index is dropped out of band, and restored."""
    ensure_catalog(unity_server, CATALOG)
    bucket = s3.new_bucket(s3_server.endpoint, f"ls-state-{uuid.uuid4().hex[:12]}")
    location = f"s3://{bucket}/lake/events.lance"
    options = s3.storage_options(s3_server.endpoint)
    storage = {**options, "aws_access_key_id": "${" + KEY + "}", "aws_secret_access_key": "${" + SECRET + "}"}
    namespace = [CATALOG, f"ns_{uuid.uuid4().hex[:8]}"]
    table = {"name": "events", "location": location, "register": [{"backend": "uc", "namespace": namespace}],
             "schema": [{"name": "id", "type": "int64"}, {"name": "kind", "type": "string"}],
             "indexes": [{"name": "id_idx", "column": "id", "type": "BTREE"},
                         {"name": "kind_idx", "column": "kind", "type": "BITMAP"}]}
    manifest = tmp_path / "lance-sync.yaml"

    def write() -> None:
        manifest.write_text(yaml.safe_dump({
            "version": 1, "owner": "state", "namespaces": [{"backend": "uc", "id": namespace}], "tables": [table],
            "backends": {"uc": {"type": "unity", "endpoint": unity_server.endpoint, "catalog": CATALOG,
                                "root": str(tmp_path), "storage": storage}}}))

    env = {**{k: v for k, v in cli_env().items() if not k.startswith("AWS_")}, KEY: s3.ACCESS_KEY_ID,
           SECRET: s3.SECRET_ACCESS_KEY}

    def cli(command: str, *args: str, code: int = 0):
        result = run_cli(manifest, command, *args, env=env)
        assert result.returncode == code, describe(result)
        return result

    write()
    cli("apply", "--auto-approve")
    for start in range(0, 30, 10):
        rows = pa.table({"id": pa.array(range(start, start + 10), pa.int64()), "kind": [f"k{start}"] * 10})
        lance.write_dataset(rows, location, mode="append", storage_options=options)
    table.update(tags={"stable": 5}, retention={"keep_versions": 2})
    write()
    cli("apply", "--auto-approve", "--allow-drop")
    dataset = lance.dataset(location, storage_options=options)
    assert {index.name for index in dataset.describe_indices()} == {"id_idx", "kind_idx"}
    assert dataset.tags.list()["stable"]["version"] == 5
    assert [v["version"] for v in dataset.versions()] == [5, dataset.version - 1, dataset.version]
    cli("plan", "--detailed-exitcode")
    dataset.drop_index("kind_idx")
    assert "events.lance#kind_idx" in cli("drift", code=2).stdout
    cli("apply", "--auto-approve", "--allow-drop")  # the drop made a version: one more falls out of retention
    assert "kind_idx" in {index.name for index in lance.dataset(location, storage_options=options).describe_indices()}
    cli("drift")
