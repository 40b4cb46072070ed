"""A location change says what it leaves behind (issue 49): the rows and bytes at the old
location, and that nothing is copied; on dir it is an in-place update (issue 50), which costs
no table id and no grants."""

from __future__ import annotations

import copy
from pathlib import Path

import lance
import pyarrow as pa
import yaml

from tests.support.cli import cli_env, run_cli

MANIFEST = {
    "version": 1, "owner": "mover",
    "backends": {"lake": {"type": "dir", "root": "./lake"}},
    "namespaces": [{"backend": "lake", "id": "sales"}],
    "tables": [{"name": "orders", "location": "./lake/data/orders.lance",
                "register": [{"backend": "lake", "namespace": "sales"}], "schema": [{"name": "id", "type": "int64"}]}],
}


def write(folder: Path, manifest: dict) -> Path:
    path = folder / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return path


def test_a_moved_table_names_the_data_it_leaves_and_no_grants_on_dir(tmp_path: Path):
    manifest = write(tmp_path, MANIFEST)
    assert run_cli(manifest, "apply", "--auto-approve", env=cli_env()).returncode == 0
    old = tmp_path / "lake" / "data" / "orders.lance"
    lance.write_dataset(pa.table({"id": pa.array(range(1500), pa.int64())}), old, mode="append")
    size = sum(f.bytes_on_disk for f in lance.dataset(old).stats.data_stats().fields)
    moved = copy.deepcopy(MANIFEST)
    moved["tables"][0]["location"] = "./lake/data/orders_v2.lance"
    write(tmp_path, moved)
    plan = run_cli(manifest, "plan", env=cli_env())
    assert plan.returncode == 0, plan.stderr
    shown = f"{size:,} bytes" if size < 1000 else f"{size / 1000:.1f} kB"
    assert (f"! warning: the old location ./lake/data/orders.lance keeps its Lance dataset (1,500 rows, {shown}): "
            "nothing is copied to ./lake/data/orders_v2.lance") in plan.stdout, plan.stdout
    assert "~ update table     lake: sales$orders\n" in plan.stdout
    assert "grants are lost" not in plan.stdout and "new table id" not in plan.stdout
    markdown = run_cli(manifest, "plan", "--format", "markdown", env=cli_env()).stdout
    assert "replaced" not in markdown and "--allow-replace" not in markdown
    page = run_cli(manifest, "plan", "--format", "html", env=cli_env()).stdout
    assert "new table id" not in page and "grants are lost" not in page
