"""A table moved to another location on the `dir` backend (issue 50): one in-place update of its
manifest row, shown as `~ update` with the location before and after, applied without
--allow-replace; pylance and lancedb find the table at its new location through the directory
namespace, the dataset at the old location stays as it was, and rollback, a saved plan and drift
handle the move like any update.

Fails on the code before (602d6a3): the move was planned as `-/+ replace table` (deregister and
declare again) and refused without --allow-replace.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import lance
import lancedb
import pyarrow as pa
import yaml
from click.testing import CliRunner
from lance.namespace import DirectoryNamespace
from lance_namespace import DeclareTableRequest, DescribeTableRequest

from lance_sync.cli.app import main
from lance_sync.drivers.dir.driver import DirNamespace
from lance_sync.model.locations import normalize_location
from tests.support.cli import cli_env, run_cli
from tests.support.project import rollback_path

MANIFEST = {
    "version": 1, "owner": "mover",
    "backends": {"lake": {"type": "dir", "root": "./lake"}},
    "namespaces": [{"backend": "lake", "id": "sales"}],
    "tables": [{"name": "orders", "location": "./lake/data/orders.lance", "properties": {"tier": "gold"},
                "register": [{"backend": "lake", "namespace": "sales"}], "schema": [{"name": "id", "type": "int64"}]}],
}
ID = ["sales", "orders"]


def write(folder: Path, manifest: dict) -> Path:
    path = folder / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return path


def apply_saved(plan: str | Path, *flags: str) -> None:
    """`lance-sync apply PLAN` of a saved (or rollback) plan, which takes no manifest."""
    result = CliRunner(env=cli_env()).invoke(main, ["apply", str(plan), "--auto-approve", *flags])
    assert result.exit_code == 0, result.output


def registered_at(root: Path) -> str:
    """Where pylance's own DirectoryNamespace finds the table."""
    described = DirectoryNamespace(root=str(root)).describe_table(DescribeTableRequest(id=ID))
    return normalize_location(described.location)


def test_a_moved_table_is_updated_in_place(tmp_path: Path):
    manifest, root = write(tmp_path, MANIFEST), tmp_path / "lake"
    assert run_cli(manifest, "apply", "--auto-approve", env=cli_env()).returncode == 0
    old, new = root / "data" / "orders.lance", root / "data" / "orders_v2.lance"
    lance.write_dataset(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), old, mode="append")
    moved = copy.deepcopy(MANIFEST)
    moved["tables"][0]["location"] = "./lake/data/orders_v2.lance"
    write(tmp_path, moved)

    plan = run_cli(manifest, "plan", env=cli_env())
    assert plan.returncode == 0, plan.stderr
    assert "~ update table     lake: sales$orders\n" in plan.stdout, plan.stdout
    assert "~ location = ./lake/data/orders.lance -> ./lake/data/orders_v2.lance" in plan.stdout
    assert "the dataset at the old location is neither moved nor deleted" in plan.stdout
    assert "-/+ replace" not in plan.stdout and "new table id" not in plan.stdout
    assert "+ create dataset" in plan.stdout  # nothing at the new location: written as for any table

    applied = run_cli(manifest, "apply", "--auto-approve", env=cli_env())
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert registered_at(root) == normalize_location(str(new))
    info = DirNamespace(root=str(root)).get_table_info(tuple(ID))
    assert info is not None and info.properties == {"tier": "gold", "lance_sync.owner": "mover"}
    table = lancedb.connect_namespace("dir", {"root": str(root)}).open_table("orders", namespace_path=["sales"])
    assert (table.schema.field("id").type, table.count_rows()) == (pa.int64(), 0)
    assert lance.dataset(old).count_rows() == 3  # the old dataset is left as it was
    assert run_cli(manifest, "plan", "--detailed-exitcode", env=cli_env()).returncode == 0

    # the rollback moves the table back and deletes the dataset this apply created (hence the flag)
    apply_saved(tmp_path / rollback_path(applied), "--allow-drop")
    assert registered_at(root) == normalize_location(str(old))
    assert lance.dataset(old).count_rows() == 3 and not new.exists()

    drift = run_cli(manifest, "drift", "--format", "json", env=cli_env())
    kinds = {item["kind"]: item for item in json.loads(drift.stdout)["items"]}
    assert drift.returncode == 2 and kinds["location"]["repair"] == "~ update table lake: sales$orders"
    saved = tmp_path / "move.json"
    assert run_cli(manifest, "plan", "--out", str(saved), env=cli_env()).returncode == 0
    driver = DirNamespace(root=str(root))
    driver.update_table_location(tuple(ID), str(root / "data" / "elsewhere.lance"))  # moved meanwhile
    stale = CliRunner(env=cli_env()).invoke(main, ["apply", str(saved), "--auto-approve"])
    assert stale.exit_code == 4 and "stale" in stale.output, stale.output
    driver.update_table_location(tuple(ID), str(old))
    apply_saved(saved)
    assert registered_at(root) == normalize_location(str(new))
    assert run_cli(manifest, "plan", "--detailed-exitcode", env=cli_env()).returncode == 0


def test_a_move_onto_a_location_registered_elsewhere_is_blocked(tmp_path: Path):
    """One asset per path: nothing else may be registered at the new location (here a table
    registered by hand, outside the manifest); the table stays where it was."""
    manifest, root = write(tmp_path, MANIFEST), tmp_path / "lake"
    assert run_cli(manifest, "apply", "--auto-approve", env=cli_env()).returncode == 0
    taken = root / "data" / "stray.lance"
    lance.write_dataset(pa.table({"id": pa.array([1], pa.int64())}), taken)
    DirNamespace(root=str(root)).declare_table(DeclareTableRequest(id=["sales", "stray"], location=str(taken)))
    moved = copy.deepcopy(MANIFEST)
    moved["tables"][0]["location"] = "./lake/data/stray.lance"
    write(tmp_path, moved)
    refused = run_cli(manifest, "apply", "--auto-approve", "--allow-replace", env=cli_env())
    assert refused.returncode != 0
    assert "one asset per path" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    assert registered_at(root) == normalize_location(str(root / "data" / "orders.lance"))
