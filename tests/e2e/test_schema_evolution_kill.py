"""kill -9 at the column seams of an apply (just before and just after pylance's add_columns and
alter_columns commit), then apply again: it exits 0, every column is there once as declared,
the data is intact, the owner record kept, and a plan is empty."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import lance
import pyarrow as pa
import pytest
import yaml

from lance_sync.model.marks import DATASET_OWNER_KEY
from tests.support.cli import cli_env, describe, run_cli_process

pytestmark = pytest.mark.usefixtures("subprocesses")

#: runs `lance-sync ARGS`, killing itself (SIGKILL) before or after the LS_KILL_AT pylance call
KILL_RUNNER = r"""
import os, signal, sys
import lance_sync.cli.app
from lance import LanceDataset

method, _, when = os.environ["LS_KILL_AT"].partition(":")
original = getattr(LanceDataset, method)

def killing(self, *args, **kwargs):
    if when == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    result = original(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
    return result

setattr(LanceDataset, method, killing)
sys.argv = ["lance-sync", *sys.argv[1:]]
lance_sync.cli.app.run()
"""


@pytest.mark.parametrize("kill_at", ["add_columns:before", "add_columns:after", "alter_columns:before",
                                     "alter_columns:after"])
def test_an_apply_killed_at_a_column_change_converges(tmp_path: Path, kill_at: str):
    path = tmp_path / "lance-sync.yaml"
    location = tmp_path / "lake" / "orders.lance"
    manifest = {"version": 1, "owner": "me", "backends": {"lake": {"type": "dir", "root": "./lake"}},
                "namespaces": [{"backend": "lake", "id": "sales"}],
                "tables": [{"name": "orders", "location": "./lake/orders.lance",
                            "register": [{"backend": "lake", "namespace": "sales"}],
                            "schema": [{"name": "id", "type": "int64"}, {"name": "qty", "type": "int32"}]}]}
    path.write_text(yaml.safe_dump(manifest), encoding="utf-8")
    env = cli_env()
    assert run_cli_process(path, "apply", "--auto-approve", env=env).returncode == 0
    lance.write_dataset(pa.table({"id": [1, 2], "qty": pa.array([5, 6], pa.int32())}), str(location), mode="append")
    manifest["tables"][0]["schema"] = [{"name": "id", "type": "int64"},
                                       {"name": "quantity", "type": "int64", "renamed_from": "qty"},
                                       {"name": "score", "type": "float64"}]
    path.write_text(yaml.safe_dump(manifest), encoding="utf-8")
    killed = subprocess.run([sys.executable, "-c", KILL_RUNNER, "apply", "-f", str(path), "--auto-approve"],
                            capture_output=True, text=True, env={**env, "LS_KILL_AT": kill_at}, cwd=tmp_path,
                            timeout=300)
    assert killed.returncode == -signal.SIGKILL, describe(killed)
    again = run_cli_process(path, "apply", "--auto-approve", env=env)
    assert again.returncode == 0, describe(again)
    dataset = lance.dataset(str(location))
    assert dataset.schema.names == ["id", "quantity", "score"]
    assert dataset.schema.field("quantity").type == pa.int64()
    assert dataset.to_table().to_pylist() == [{"id": 1, "quantity": 5, "score": None},
                                              {"id": 2, "quantity": 6, "score": None}]
    assert dataset.schema.metadata[DATASET_OWNER_KEY.encode()] == b"me"
    plan = run_cli_process(path, "plan", "--detailed-exitcode", env=env)
    assert plan.returncode == 0, describe(plan)
