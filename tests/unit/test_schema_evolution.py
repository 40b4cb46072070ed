"""A table's `schema:` changed against its dataset on a local `dir` catalog, through the CLI in this
process: planned as Lance evolution (add, rename, relax, widen, drop), applied with pylance, read
back, guarded against stale plans, reported by drift and undone by the rollback plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
import yaml

from lance_sync import api
from lance_sync.data.evolution import add_column, alter_column, live_column
from lance_sync.model.errors import GuardRefusal
from lance_sync.model.evolution import definition, narrows, widens
from lance_sync.model.marks import DATASET_OWNER_KEY
from tests.support.cli import cli_env, describe, run_cli

OWNER = "me"


class Lake:
    """A manifest whose table `orders` (id int64 not null, qty int32, price float32) was applied:
    lance-sync wrote its dataset (with this owner's record) and two rows were appended."""

    def __init__(self, root: Path):
        self.path = root / "lance-sync.yaml"
        self.location = root / "lake" / "orders.lance"
        self.manifest: dict[str, Any] = {
            "version": 1, "owner": OWNER, "backends": {"lake": {"type": "dir", "root": "./lake"}},
            "namespaces": [{"backend": "lake", "id": "sales"}],
            "tables": [{"name": "orders", "location": "./lake/orders.lance",
                        "register": [{"backend": "lake", "namespace": "sales"}],
                        "schema": [{"name": "id", "type": "int64", "nullable": False},
                                   {"name": "qty", "type": "int32"}, {"name": "price", "type": "float32"}]}]}
        self.write()
        applied = self.cli("apply", "--auto-approve")
        assert applied.returncode == 0, describe(applied)
        schema = self.dataset().schema
        rows = pa.table({"id": [1, 2], "qty": pa.array([3, 4], pa.int32()), "price": pa.array([1.5, 2.5], pa.float32())},
                        schema=schema)
        lance.write_dataset(rows, str(self.location), mode="append")

    @property
    def columns(self) -> list[dict[str, Any]]:
        return self.manifest["tables"][0]["schema"]

    def write(self) -> None:
        self.path.write_text(yaml.safe_dump(self.manifest, sort_keys=False), encoding="utf-8")

    def cli(self, command: str, *args: str):
        return run_cli(self.path, command, *args, env=cli_env())

    def dataset(self) -> lance.LanceDataset:
        return lance.dataset(str(self.location))

    def version(self) -> int:
        return self.dataset().version


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(tmp_path)


def test_a_new_nullable_column_is_added_in_place_and_a_reapply_writes_nothing(lake: Lake):
    lake.columns.append({"name": "score", "type": "float64"})
    lake.write()
    planned = lake.cli("plan")
    assert planned.returncode == 0, describe(planned)
    assert "+ create column" in planned.stdout and "orders.lance#score" in planned.stdout
    assert "# add column score float64" in planned.stdout
    assert "Plan: 1 to create, 0 to update" in planned.stdout
    assert "+ create column" in lake.cli("plan", "--format", "markdown").stdout
    column = json.loads(lake.cli("plan", "--format", "json").stdout)["actions"][0]
    assert (column["kind"], column["verb"], column["part"]) == ("column", "create", "score")
    assert column["after"]["definition"] == {"name": "score", "type": "float64", "nullable": True}
    before = lake.version()
    applied = lake.cli("apply", "--auto-approve")
    assert applied.returncode == 0, describe(applied)
    dataset = lake.dataset()
    assert dataset.version == before + 1
    assert dataset.schema.field("score").type == pa.float64() and dataset.schema.field("score").nullable
    assert dataset.to_table().column("score").to_pylist() == [None, None]
    assert dataset.to_table().column("id").to_pylist() == [1, 2]  # nothing rewritten, nothing lost
    assert dataset.schema.metadata[DATASET_OWNER_KEY.encode()] == OWNER.encode()  # add_columns kept the record
    again = lake.cli("plan", "--detailed-exitcode")
    assert again.returncode == 0 and "No changes" in again.stdout, describe(again)
    assert lake.cli("apply", "--auto-approve").returncode == 0
    assert lake.version() == before + 1


def test_a_rename_a_widening_and_a_relaxed_nullability_are_altered_in_place(lake: Lake):
    lake.columns[0]["nullable"] = True
    lake.columns[1].update(name="quantity", renamed_from="qty", type="int64")
    lake.columns[2]["type"] = "float64"
    lake.write()
    planned = lake.cli("plan")
    assert planned.returncode == 0, describe(planned)
    assert planned.stdout.count("~ update column") == 3, planned.stdout
    assert "rename qty to quantity (renamed_from); widen int32 to int64" in planned.stdout
    assert "~ nullable = False -> True" in planned.stdout
    applied = lake.cli("apply", "--auto-approve")
    assert applied.returncode == 0, describe(applied)
    schema = lake.dataset().schema
    assert (schema.field("quantity").type, schema.field("price").type) == (pa.int64(), pa.float64())
    assert schema.field("id").nullable and "qty" not in schema.names
    assert lake.dataset().to_table().column("quantity").to_pylist() == [3, 4]
    assert schema.metadata[DATASET_OWNER_KEY.encode()] == OWNER.encode()  # alter_columns kept the record
    assert "No changes" in lake.cli("plan").stdout


def test_what_lance_cannot_do_in_place_is_a_conflict_that_hides_no_other_change(lake: Lake):
    """A narrowing and a new column that is not null conflict, naming table, column and why; the
    hint names no source option on a table without a source; the other changes are shown."""
    lake.columns[1]["type"] = "int8"
    lake.columns.append({"name": "code", "type": "string", "nullable": False})
    lake.manifest["tables"].append({"name": "returns", "location": "./lake/returns.lance",
                                    "register": [{"backend": "lake", "namespace": "sales"}],
                                    "schema": [{"name": "id", "type": "int64"}]})
    lake.write()
    planned = lake.cli("plan")
    assert planned.returncode == 1, describe(planned)
    assert "table 'orders'" in planned.stderr
    assert "column 'qty' is declared int8 but the dataset has int32: a narrowing" in planned.stderr
    assert "column 'code' is declared string not null and is missing from the dataset" in planned.stderr
    assert "on_mismatch" not in planned.stderr and "the table has no source" in planned.stderr
    assert "+ create table" in planned.stdout and "sales$returns" in planned.stdout  # not hidden
    assert "other change(s) wait until these are resolved" in planned.stderr
    refused = lake.cli("apply", "--auto-approve")
    assert refused.returncode == 1 and "+ create table" in refused.stdout, describe(refused)
    assert "column 'qty' is declared int8" in refused.stderr
    assert not (lake.location.parent / "returns.lance").exists()


def test_a_type_lance_does_not_cast_to_is_a_conflict_and_a_rewrite_only_with_on_mismatch(lake: Lake):
    lake.columns[2]["type"] = "string"
    lake.write()
    planned = lake.cli("plan")
    assert planned.returncode == 1
    assert "column 'price' is declared string but the dataset has float32: not a widening" in planned.stderr
    lake.manifest["tables"][0]["source"] = {"format": "csv", "path": "./orders.csv", "on_mismatch": "overwrite"}
    lake.write()
    rewrite = lake.cli("plan")
    assert "-/+ replace dataset" in rewrite.stdout and "create column" not in rewrite.stdout, describe(rewrite)


def test_a_column_declared_removed_is_dropped_only_with_allow_drop(lake: Lake):
    lake.columns[2] = {"name": "price", "removed": True}
    lake.write()
    planned = lake.cli("plan")
    assert "- delete column" in planned.stdout and "[destroys data]" in planned.stdout, describe(planned)
    refused = lake.cli("apply", "--auto-approve")
    assert refused.returncode == 4 and "--allow-drop" in refused.stderr, describe(refused)
    assert "price" in lake.dataset().schema.names
    dropped = lake.cli("apply", "--auto-approve", "--allow-drop")
    assert dropped.returncode == 0, describe(dropped)
    assert lake.dataset().schema.names == ["id", "qty"]
    assert "No changes" in lake.cli("plan").stdout


def test_a_column_is_dropped_only_from_a_dataset_carrying_this_owners_record(tmp_path: Path):
    location = tmp_path / "lake" / "theirs.lance"
    lance.write_dataset(pa.table({"id": [1], "legacy": ["x"]}), str(location))
    manifest = {"version": 1, "owner": OWNER, "backends": {"lake": {"type": "dir", "root": "./lake"}},
                "namespaces": [{"backend": "lake", "id": "sales"}],
                "tables": [{"name": "theirs", "location": "./lake/theirs.lance",
                            "register": [{"backend": "lake", "namespace": "sales"}],
                            "schema": [{"name": "id", "type": "int64"}, {"name": "legacy", "removed": True}]}]}
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest), encoding="utf-8")
    planned = run_cli(path, "plan", env=cli_env())
    assert planned.returncode == 4, describe(planned)
    assert "BLOCKED: the dataset at" in planned.stdout and "carries no lance-sync owner record" in planned.stdout
    refused = run_cli(path, "apply", "--auto-approve", "--allow-drop", env=cli_env())
    assert refused.returncode == 4 and "legacy" in lance.dataset(str(location)).schema.names


def test_a_saved_plan_is_stale_once_the_dataset_moved_on(lake: Lake, tmp_path: Path):
    lake.columns.append({"name": "score", "type": "float64"})
    lake.write()
    saved = tmp_path / "plan.json"
    assert lake.cli("plan", "--out", str(saved)).returncode == 0
    lance.write_dataset(pa.table({"id": [3], "qty": pa.array([1], pa.int32()), "price": pa.array([1.0], pa.float32())},
                                 schema=lake.dataset().schema), str(lake.location), mode="append")
    with pytest.raises(GuardRefusal, match=r"stale(.|\n)*create column .*#score"):
        api.apply(api.load_plan(str(saved)))
    assert "score" not in lake.dataset().schema.names


def test_an_apply_cut_off_after_the_column_was_added_converges(lake: Lake):
    """The add committed, the apply did not record it: the next plan finds the column in sync,
    and the add sent again is done, never an error."""
    lake.columns.append({"name": "score", "type": "float64"})
    lake.write()
    want = definition("score", "float64", True)
    version = add_column(str(lake.location), want)
    assert add_column(str(lake.location), want) == version  # sent again: nothing written
    assert "No changes" in lake.cli("plan").stdout
    renamed = definition("qty2", "int32", True)
    moved = alter_column(str(lake.location), definition("qty", "int32", True), renamed)
    assert alter_column(str(lake.location), definition("qty", "int32", True), renamed) == moved
    assert live_column(str(lake.location), "qty2") == (moved, renamed)


def test_drift_reports_a_column_dropped_or_renamed_out_of_band(lake: Lake):
    lake.dataset().drop_columns(["price"])
    lance.dataset(str(lake.location)).alter_columns({"path": "qty", "name": "amount"})
    drift = lake.cli("drift")
    assert drift.returncode == 2, describe(drift)
    assert "schema: dataset" not in drift.stdout  # told per column
    assert "orders.lance#price" in drift.stdout and "dropped or renamed out of band" in drift.stdout
    assert "orders.lance#qty" in drift.stdout and "renamed_from: amount" in drift.stdout
    assert "amount: int32" in drift.stdout  # the column beyond the manifest


def test_the_rollback_removes_an_added_column_renames_back_and_leaves_a_widening(lake: Lake):
    lake.columns[1].update(name="quantity", renamed_from="qty")
    lake.columns[2]["type"] = "float64"
    lake.columns.append({"name": "score", "type": "float64"})
    lake.write()
    result = api.apply(api.load(lake.path))
    assert result.status == "applied" and result.report.rollback_path is not None
    rollback = api.load_plan(str(result.report.rollback_path))
    undo = {(a.verb.value, a.part) for a in rollback.actions}
    assert undo == {("delete", "score"), ("update", "quantity")}
    assert any("widened from float32 to float64 is not narrowed back" in w for w in rollback.warnings)
    undone = api.apply(rollback, allow_drop=True)
    assert undone.status == "applied", [o.error for o in undone.report.outcomes]
    schema = lake.dataset().schema
    assert schema.names == ["id", "qty", "price"] and schema.field("price").type == pa.float64()


@pytest.mark.parametrize(("have", "want", "widening"), [
    ("int32", "int64", True), ("float32", "float64", True), ("uint8", "int16", True), ("string", "large_string", True),
    ("int64", "int32", False), ("int32", "float64", False), ("uint32", "int32", False), ("int32", "string", False)])
def test_only_lossless_casts_lance_makes_are_widenings(have: str, want: str, widening: bool):
    assert widens(have, want) is widening
    assert narrows(want, have) is widening


BAD_SCHEMAS = {
    "removed with renamed_from": ([{"name": "id", "type": "int64"}, {"name": "x", "removed": True, "renamed_from": "y"}],
                                  "column 'x' is removed: it has no renamed_from"),
    "a former name in use": ([{"name": "id", "type": "int64"}, {"name": "n", "type": "int64", "renamed_from": "id"}],
                             "column 'id' appears twice"),
    "no type": ([{"name": "id"}], "missing required field 'type' (only a removed column"),
    "only removed columns": ([{"name": "id", "removed": True}], "the schema declares no column that is not removed"),
}


@pytest.mark.parametrize(("schema", "message"), BAD_SCHEMAS.values(), ids=BAD_SCHEMAS.keys())
def test_column_entries_are_validated_offline_with_file_and_line(tmp_path: Path, schema: list, message: str):
    manifest = {"version": 1, "owner": OWNER, "backends": {"lake": {"type": "dir", "root": "./lake"}},
                "tables": [{"name": "t", "location": "./lake/t.lance",
                            "register": [{"backend": "lake", "namespace": "s"}], "schema": schema}]}
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
    result = run_cli(path, "validate", env=cli_env())
    assert result.returncode == 1 and message in result.stderr, describe(result)
    assert f"{path.name}:" in result.stderr and "tables[0].schema" in result.stderr


def test_a_removed_column_needs_no_type_and_is_not_written_to_a_new_dataset(tmp_path: Path):
    manifest = {"version": 1, "owner": OWNER, "backends": {"lake": {"type": "dir", "root": "./lake"}},
                "namespaces": [{"backend": "lake", "id": "s"}],
                "tables": [{"name": "t", "location": "./lake/t.lance", "register": [{"backend": "lake", "namespace": "s"}],
                            "schema": [{"name": "id", "type": "int64"}, {"name": "old", "removed": True}]}]}
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest), encoding="utf-8")
    assert run_cli(path, "validate", env=cli_env()).returncode == 0
    assert run_cli(path, "apply", "--auto-approve", env=cli_env()).returncode == 0
    assert lance.dataset(str(tmp_path / "lake" / "t.lance")).schema.names == ["id"]


def test_a_target_naming_the_table_takes_its_column_changes_along(lake: Lake):
    lake.columns.append({"name": "score", "type": "float64"})
    lake.manifest["tables"].append({"name": "returns", "location": "./lake/returns.lance",
                                    "register": [{"backend": "lake", "namespace": "sales"}]})
    lake.write()
    orders = lake.cli("plan", "--target", "lake:sales$orders")
    assert "+ create column" in orders.stdout and "sales$returns" not in orders.stdout.split("This plan is partial")[0]
    returns = lake.cli("plan", "--target", "lake:sales$returns")
    assert "create table" in returns.stdout and "+ create column" not in returns.stdout, describe(returns)


def test_a_plan_since_a_revision_keeps_the_drop_of_a_column_its_change_declares(lake: Lake):
    import subprocess

    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin"}
    for command in (["init", "-q"], ["add", "lance-sync.yaml"], ["commit", "-qm", "m"]):
        subprocess.run(["git", *command], cwd=lake.path.parent, check=True, env=env, capture_output=True)
    lake.columns[2] = {"name": "price", "removed": True}
    lake.write()
    since = lake.cli("plan", "--changed-since", "HEAD")
    assert "- delete column" in since.stdout and "orders.lance#price" in since.stdout, describe(since)
