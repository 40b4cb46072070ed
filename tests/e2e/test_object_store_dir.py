"""A `dir` catalog whose root and tables live on S3 (moto's server on 127.0.0.1), through the CLI.

The CLI runs in a subprocess, as a user runs it, with the store configured the two ways users
do: only through the standard AWS environment (docs/object-storage.md's example, which the first
test runs as shipped), or through the manifest's `storage:` with credentials as ${VAR}. On
dbc981d the first apply failed (the apply lease needed a namespace the manifest had yet to
create), and plan failed when the endpoint came from AWS_ENDPOINT_URL (pyarrow ignored it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
import yaml
from lance.namespace import DirectoryNamespace
from lance_namespace import ListTablesRequest

from tests.servers.base import RunningServer
from tests.servers.s3 import (
    ACCESS_KEY_ID,
    SECRET_ACCESS_KEY,
    aws_environment,
    new_bucket,
    s3_client,
    storage_options,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "object-store" / "lance-sync.yaml"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
CLI_TIMEOUT_SECONDS = 300
#: AWS settings of the test process that must not reach the CLI (it gets exactly the test's)
_AWS_PREFIXES = ("AWS_",)


def lance_sync(*args: str, cwd: Path, environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user would, with only `environment`'s AWS settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(_AWS_PREFIXES)}
    clean["PYTHONPATH"] = os.pathsep.join([str(PROJECT_ROOT), clean.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run([sys.executable, "-m", "lance_sync", *args], cwd=cwd, env={**clean, **environment},
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=CLI_TIMEOUT_SECONDS)


def succeeds(result: subprocess.CompletedProcess[str], code: int = 0) -> str:
    assert result.returncode == code, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stdout + result.stderr
    return result.stdout


def unique_bucket(server: RunningServer, purpose: str) -> str:
    return new_bucket(server.endpoint, f"{purpose}-{uuid.uuid4().hex[:10]}")


def keys(server: RunningServer, bucket: str, prefix: str) -> list[str]:
    answer = s3_client(server.endpoint).list_objects_v2(Bucket=bucket, Prefix=prefix)
    return [entry["Key"] for entry in answer.get("Contents", [])]


def registered(root: str, options: dict[str, str], namespace: str) -> list[str]:
    """The tables pylance's own DirectoryNamespace lists in `namespace` of the root."""
    catalog = DirectoryNamespace(root=root, **{f"storage.{k}": v for k, v in options.items()})
    return sorted(catalog.list_tables(ListTablesRequest(id=[namespace])).tables)


def test_the_readme_example_runs_on_s3_from_the_environment_alone(s3_server: RunningServer, tmp_path: Path):
    bucket = unique_bucket(s3_server, "example")
    shutil.copy(EXAMPLE, tmp_path / "lance-sync.yaml")
    environment = {**aws_environment(s3_server.endpoint), "LAKE_BUCKET": bucket}

    planned = succeeds(lance_sync("plan", cwd=tmp_path, environment=environment))
    assert "Plan: 5 to create" in planned
    applied = succeeds(lance_sync("apply", "--auto-approve", cwd=tmp_path, environment=environment))
    assert "Apply complete: 5 succeeded" in applied
    succeeds(lance_sync("plan", "--detailed-exitcode", cwd=tmp_path, environment=environment))
    assert "0 broken" in succeeds(lance_sync("verify", cwd=tmp_path, environment=environment))
    succeeds(lance_sync("drift", cwd=tmp_path, environment=environment))

    options = storage_options(s3_server.endpoint)
    root = f"s3://{bucket}/lakehouse"
    assert registered(root, options, "sales") == ["customers", "orders"]
    orders = lance.dataset(f"{root}/data/orders.lance", storage_options=options)
    assert orders.schema.names == ["order_id", "customer", "amount"]
    assert keys(s3_server, bucket, "lakehouse/data/orders.lance/_versions/")


def manifest_with_storage(bucket: str, endpoint: str, tables: list[dict[str, Any]]) -> dict[str, Any]:
    """A manifest that names the store itself: endpoint in the manifest-wide `storage:`,
    credentials as ${VAR}."""
    return {
        "version": 1, "owner": "team-s3",
        "storage": {"aws_endpoint": endpoint, "allow_http": "true", "aws_region": "us-east-1",
                    "aws_access_key_id": "${S3_KEY_ID}", "aws_secret_access_key": "${S3_SECRET}"},
        "backends": {"lake": {"type": "dir", "root": f"s3://{bucket}/root"}},
        "namespaces": [{"backend": "lake", "id": "sales"}],
        "tables": tables,
    }


def test_discover_and_drop_use_the_storage_the_manifest_gives(s3_server: RunningServer, tmp_path: Path):
    bucket = unique_bucket(s3_server, "manifest")
    root = f"s3://{bucket}/root"
    options = storage_options(s3_server.endpoint)
    foreign = f"{root}/data/foreign.lance"
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), foreign, storage_options=options)
    tables = [{"name": name, "location": f"{root}/data/{name}.lance", "on_remove": "drop",
               "register": [{"backend": "lake", "namespace": "sales"}],
               "schema": [{"name": "id", "type": "int64"}]} for name in ("orders", "returns")]
    manifest = tmp_path / "lance-sync.yaml"
    manifest.write_text(yaml.safe_dump(manifest_with_storage(bucket, s3_server.endpoint, tables)))
    # credentials reach lance-sync only through the manifest's ${VAR}s, never AWS_* variables
    environment = {"S3_KEY_ID": ACCESS_KEY_ID, "S3_SECRET": SECRET_ACCESS_KEY}

    succeeds(lance_sync("apply", "--auto-approve", cwd=tmp_path, environment=environment))
    found = succeeds(lance_sync("discover", root, cwd=tmp_path, environment=environment))
    assert "foreign.lance" in found and "orders.lance" not in found
    assert SECRET_ACCESS_KEY not in found

    manifest.write_text(yaml.safe_dump(manifest_with_storage(bucket, s3_server.endpoint, tables[1:])))
    succeeds(lance_sync("apply", "--auto-approve", "--allow-drop", cwd=tmp_path, environment=environment))
    assert keys(s3_server, bucket, "root/data/orders.lance/") == []
    assert keys(s3_server, bucket, "root/data/returns.lance/_versions/")
    assert lance.dataset(foreign, storage_options=options).count_rows() == 3
    assert registered(root, options, "sales") == ["returns"]
    succeeds(lance_sync("plan", "--detailed-exitcode", cwd=tmp_path, environment=environment))


@pytest.mark.parametrize("where", ["environment", "manifest"])
def test_a_store_that_cannot_be_reached_is_an_error_naming_the_backend_and_root(
        s3_server: RunningServer, tmp_path: Path, where: str):
    """Never an empty catalog: with the endpoint wrong, plan fails naming the backend and the
    root, and prints no credential."""
    bucket = unique_bucket(s3_server, "unreachable")
    nothing_listens = "http://127.0.0.1:9"  # the discard port
    if where == "environment":
        shutil.copy(EXAMPLE, tmp_path / "lance-sync.yaml")
        environment = {**aws_environment(nothing_listens), "LAKE_BUCKET": bucket}
        root = f"s3://{bucket}/lakehouse"
    else:
        manifest = manifest_with_storage(bucket, nothing_listens, [])
        # the store's message is checked, not how long it is retried: the variant above keeps
        # the default retries (about 11 s against a store that cannot be reached)
        manifest["storage"]["client_max_retries"] = "0"
        (tmp_path / "lance-sync.yaml").write_text(yaml.safe_dump(manifest))
        environment = {"S3_KEY_ID": ACCESS_KEY_ID, "S3_SECRET": "never-printed-secret"}
        root = f"s3://{bucket}/root"
    result = lance_sync("plan", cwd=tmp_path, environment=environment)
    assert result.returncode == 1
    assert f"backend 'lake': dir: cannot open the catalog at {root}: " in result.stderr
    assert "Traceback" not in result.stderr and "never-printed-secret" not in result.stdout + result.stderr
