"""A table's `indexes:` and `maintenance:` end to end on the `dir` backend, through the CLI in
this process, read back with pylance (issue 47)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner

from lance_sync.cli.app import main
from lance_sync.model.table_state import INDEX_RECORD_PREFIX, index_record
from tests.support.cli import cli_env, describe, run_cli

ROWS = 300
#: runs `lance-sync ARGS` and kills itself (SIGKILL) right before or right after (LS_KILL) the
#: first scalar index build: inside a build, as far as lance-sync's records can tell
KILL_DURING_BUILD = r"""
import os, signal, sys, lance, lance_sync.cli.app
original = lance.LanceDataset.create_scalar_index
def build(self, *args, **kwargs):
    if os.environ["LS_KILL"] == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    original(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
lance.LanceDataset.create_scalar_index = build
sys.argv = ["lance-sync", *sys.argv[1:]]
lance_sync.cli.app.main()
"""


def _rows(count: int, start: int = 0) -> pa.Table:
    vectors = np.random.default_rng(start).random(count * 8, dtype=np.float32)
    return pa.table({"id": pa.array(range(start, start + count), pa.int64()),
                     "text": pa.array([f"word{i % 7} text" for i in range(start, start + count)]),
                     "emb": pa.FixedSizeListArray.from_arrays(pa.array(vectors), 8)})


class IndexedProject:
    def __init__(self, root: Path, rows: int = ROWS):
        self.root = root
        self.manifest = root / "lance-sync.yaml"
        self.location = str(root / "lake" / "data" / "docs.lance")
        lance.write_dataset(_rows(rows), self.location)
        self.indexes: list[dict[str, Any]] = [
            {"name": "id_idx", "column": "id", "type": "BTREE"},
            {"name": "text_fts", "column": "text", "type": "FTS", "params": {"with_position": True}},
            {"name": "emb_idx", "column": "emb", "type": "IVF_PQ",
             "params": {"num_partitions": 2, "num_sub_vectors": 2, "metric": "cosine"}},
        ]
        self.write()

    def write(self, **table: Any) -> None:
        entry = {"name": "docs", "location": "./lake/data/docs.lance", "register": [{"backend": "lake",
                 "namespace": "ml"}], "indexes": self.indexes, **table}
        self.manifest.write_text(yaml.safe_dump({
            "version": 1, "owner": "team", "backends": {"lake": {"type": "dir", "root": "./lake"}},
            "namespaces": [{"backend": "lake", "id": "ml"}], "tables": [entry]}, sort_keys=False))

    def cli(self, command: str, *args: str, code: int = 0):
        result = run_cli(self.manifest, command, *args, env=cli_env())
        assert result.returncode == code, describe(result)
        return result

    def dataset(self) -> lance.LanceDataset:
        return lance.dataset(self.location)

    def built(self) -> dict[str, str]:
        return {index.name: index.index_type for index in self.dataset().describe_indices()}


@pytest.fixture
def project(tmp_path: Path) -> IndexedProject:
    return IndexedProject(tmp_path)


def test_declared_indexes_are_built_and_a_reapply_writes_no_version(project: IndexedProject):
    """Guards: every declared type is built as declared, and an index in sync is left as it is
    (lancedb#2215: creating the index again on every push bumps the version)."""
    project.cli("apply", "--auto-approve")
    assert project.built() == {"id_idx": "BTree", "text_fts": "Inverted", "emb_idx": "IVF_PQ"}
    version = project.dataset().version
    plan = project.cli("plan", "--detailed-exitcode")
    assert "No changes" in plan.stdout
    project.cli("apply", "--auto-approve")
    assert project.dataset().version == version


def test_a_changed_definition_is_a_replace_and_only_lance_syncs_indexes_are_dropped(project: IndexedProject):
    """Guards: a params change rebuilds the index (shown as a replace); an index lance-sync made
    and the manifest dropped is dropped; one someone else made is listed and kept."""
    project.cli("apply", "--auto-approve")
    project.dataset().create_scalar_index("id", "BITMAP", name="theirs")
    project.indexes[2]["params"]["num_partitions"] = 4
    del project.indexes[0]
    project.write()
    plan = project.cli("plan").stdout
    assert "-/+ replace index    lake: ./lake/data/docs.lance#emb_idx" in plan
    assert "num_partitions=2, num_sub_vectors=2) -> IVF_PQ on emb (metric=cosine, num_partitions=4" in plan
    assert "  - delete index     lake: ./lake/data/docs.lance#id_idx" in plan
    assert "index lake: ./lake/data/docs.lance#theirs (made outside lance-sync)" in plan
    project.cli("apply", "--auto-approve")
    assert project.built() == {"text_fts": "Inverted", "emb_idx": "IVF_PQ", "theirs": "Bitmap"}
    record = json.loads(project.dataset().config()[INDEX_RECORD_PREFIX + "emb_idx"])
    assert record["params"]["num_partitions"] == 4 and record["owner"] == "team"
    project.cli("plan", "--detailed-exitcode")


def _segments(dataset: lance.LanceDataset) -> dict[str, list[str]]:
    return {index.name: [segment.uuid for segment in index.segments] for index in dataset.describe_indices()}


def test_an_index_made_elsewhere_as_declared_is_adopted_without_a_rebuild(project: IndexedProject):
    """Guards: an index made outside lance-sync under a declared name and with the declared
    column, type and parameters is recorded as this owner's, never rebuilt; one with another
    definition stops the plan naming both; an undeclared one stays, listed."""
    dataset = project.dataset()
    dataset.create_scalar_index("id", "BTREE", name="id_idx")
    dataset.create_index("emb", "IVF_PQ", name="emb_idx", num_partitions=2, num_sub_vectors=2, metric="cosine")
    dataset.create_scalar_index("id", "BITMAP", name="theirs")
    dataset.create_scalar_index("text", "INVERTED", name="text_fts", with_position=False)
    stopped = project.cli("plan", code=1)
    assert "table 'docs': index 'text_fts' at " in stopped.stderr
    assert "was made outside lance-sync as INVERTED on text (" in stopped.stderr
    assert "with_position=False" in stopped.stderr
    assert "the manifest declares INVERTED on text (with_position=True): drop that index, or give yours another " \
           "name" in stopped.stderr
    project.dataset().drop_index("text_fts")
    built = _segments(project.dataset())
    plan = project.cli("plan").stdout
    for name in ("id_idx", "emb_idx"):
        assert f"  ~ update index     lake: ./lake/data/docs.lance#{name}  (adopt)" in plan, plan
    assert "made outside lance-sync as declared (IVF_PQ on emb (metric=cosine, num_bits=8, num_sub_vectors=2)): " \
           "adopt it" in plan
    assert "+ create index     lake: ./lake/data/docs.lance#text_fts" in plan
    assert "index lake: ./lake/data/docs.lance#theirs (made outside lance-sync)" in plan
    project.cli("apply", "--auto-approve")
    after = _segments(project.dataset())
    assert {name: after[name] for name in ("id_idx", "emb_idx", "theirs")} == \
        {name: built[name] for name in ("id_idx", "emb_idx", "theirs")}  # recorded, not rebuilt
    for name in ("id_idx", "emb_idx", "text_fts"):
        record = json.loads(project.dataset().config()[INDEX_RECORD_PREFIX + name])
        assert record["owner"] == "team" and record["built"] is True, record
    assert INDEX_RECORD_PREFIX + "theirs" not in project.dataset().config()
    project.cli("plan", "--detailed-exitcode")


def test_an_index_made_elsewhere_with_other_parameters_is_a_conflict(project: IndexedProject):
    """Guards: a vector index under a declared name whose metric Lance tells back differs is
    neither rebuilt nor adopted: the plan stops."""
    project.dataset().create_index("emb", "IVF_PQ", name="emb_idx", num_partitions=2, num_sub_vectors=2,
                                   metric="l2")
    stopped = project.cli("plan", code=1)
    assert "index 'emb_idx' at " in stopped.stderr and "as IVF_PQ on emb (metric=l2, " in stopped.stderr
    assert "the manifest declares IVF_PQ on emb (metric=cosine, num_partitions=2, num_sub_vectors=2)" in stopped.stderr


def test_an_index_dropped_out_of_band_is_drift_and_the_rollback_undoes_a_drop(project: IndexedProject):
    """Guards: drift exits 2 naming the dropped index; apply builds it again; the rollback plan of
    an apply that dropped an index builds it back."""
    project.cli("apply", "--auto-approve")
    project.dataset().drop_index("id_idx")
    drift = project.cli("drift", code=2).stdout
    assert "! dataset state: index lake: " in drift and "docs.lance#id_idx" in drift
    project.cli("apply", "--auto-approve")
    project.cli("drift")
    project.indexes = project.indexes[1:]
    project.write()
    applied = project.cli("apply", "--auto-approve").stdout
    assert "id_idx" not in project.built()
    rollback = next(line.split(": ", 1)[1].split(" (")[0] for line in applied.splitlines()
                    if line.startswith("Rollback plan:"))
    restored = CliRunner().invoke(main, ["apply", str(project.root / rollback), "--auto-approve"],
                                  catch_exceptions=False)
    assert restored.exit_code == 0, restored.output
    assert project.built()["id_idx"] == "BTree"


def test_a_column_add_and_an_index_build_on_one_dataset_run_in_turn(project: IndexedProject):
    """Guards: each is a commit to the same dataset, and concurrent commits preempt each other:
    the index build waits for the column add (it ran beside it before)."""
    project.indexes = project.indexes[:1]
    project.write(schema=[{"name": "id", "type": "int64"}, {"name": "text", "type": "string"},
                          {"name": "emb", "type": "fixed_size_list<float32>[8]"}, {"name": "score", "type": "float64"}])
    actions = json.loads(project.cli("plan", "--format", "json").stdout)["actions"]
    column = next(a for a in actions if a["kind"] == "column")
    index = next(a for a in actions if a["kind"] == "index")
    assert (column["verb"], column["part"], index["part"]) == ("create", "score", "id_idx")
    assert f"column:{project.location}#score" in index["depends_on"], index
    project.cli("apply", "--auto-approve")
    assert project.built() == {"id_idx": "BTree"} and "score" in project.dataset().schema.names
    project.cli("plan", "--detailed-exitcode")


def test_a_vector_index_waits_for_rows_to_train_on(tmp_path: Path):
    """Guards: a vector index on a table with too few rows is a note, not a failed build."""
    project = IndexedProject(tmp_path, rows=10)
    plan = project.cli("plan").stdout
    assert "index 'emb_idx' waits: IVF_PQ on emb" in plan and "the dataset has 10" in plan
    project.cli("apply", "--auto-approve")
    assert set(project.built()) == {"id_idx", "text_fts"}


def test_an_apply_cut_off_during_a_build_builds_it_again(project: IndexedProject):
    """Guards: crash safety. An apply killed during a build leaves the record unbuilt (written
    before the build): the next plan builds the index again, and then it is in sync."""
    project.cli("apply", "--auto-approve")
    definition = {"column": "id", "type": "BTREE", "params": {}}
    project.dataset().update_config({INDEX_RECORD_PREFIX + "id_idx": index_record("team", definition, built=False)})
    plan = project.cli("plan").stdout
    assert "an earlier apply did not finish building it" in plan
    project.cli("apply", "--auto-approve")
    project.cli("plan", "--detailed-exitcode")


def test_maintenance_updates_indexes_and_compacts_small_fragments(project: IndexedProject):
    """Guards: crossing `maintenance:` thresholds plans optimize_indices and compact_files, and
    the plan reports the unindexed rows of each index."""
    project.cli("apply", "--auto-approve")
    for start in (ROWS, ROWS + 20, ROWS + 40):
        lance.write_dataset(_rows(20, start), project.location, mode="append")
    project.write(maintenance={"unindexed_rows": 50, "small_fragments": 3, "target_rows_per_fragment": 1000})
    plan = project.cli("plan").stdout
    assert "  ~ update index     lake: ./lake/data/docs.lance#id_idx" in plan
    assert "60 row(s) are not in the index (maintenance.unindexed_rows: 50)" in plan
    assert "4 fragment(s) hold fewer than 1000 rows" in plan
    project.cli("apply", "--auto-approve")
    dataset = project.dataset()
    assert dataset.stats.index_stats("id_idx")["num_unindexed_rows"] == 0
    assert len(dataset.get_fragments()) < 4  # the three appended ones are one now
    project.cli("plan", "--detailed-exitcode")


def test_a_target_names_the_table_or_one_index(project: IndexedProject):
    """Guards: --target reaches a dataset's indexes through the table's registration, or one
    index by its address."""
    whole = project.cli("plan", "--target", "lake:ml$docs").stdout
    assert whole.count("+ create index") == 3
    one = project.cli("plan", "--target", "lake:*#id_idx").stdout
    assert "  + create index     lake: ./lake/data/docs.lance#id_idx" in one and "Plan: 1 to create" in one


@pytest.mark.parametrize("moment", ["before", "after"])
def test_an_apply_killed_during_an_index_build_converges(project: IndexedProject, moment: str, subprocesses):
    """Guards: crash safety with a real kill -9 at an index build (before it, or after it and
    before its record says built): the next apply converges and the index is in sync."""
    project.indexes = project.indexes[:1]
    project.write()
    killed = subprocess.run([sys.executable, "-c", KILL_DURING_BUILD, "apply", "-f", str(project.manifest),
                             "--auto-approve"], capture_output=True, text=True, cwd=project.root,
                            env={**cli_env(), "LS_KILL": moment}, stdin=subprocess.DEVNULL, timeout=300)
    assert killed.returncode == -signal.SIGKILL, describe(killed)
    assert json.loads(project.dataset().config()[INDEX_RECORD_PREFIX + "id_idx"])["built"] is False
    project.cli("apply", "--auto-approve")
    assert project.built() == {"id_idx": "BTree"}
    project.cli("plan", "--detailed-exitcode")


def test_an_index_on_a_column_the_dataset_lacks_stops_the_plan(project: IndexedProject):
    """Guards: a plan error naming the index and column, not a build that fails at apply."""
    project.indexes.append({"name": "nope_idx", "column": "nope", "type": "BTREE"})
    project.write()
    stopped = project.cli("plan", code=1)
    assert "index 'nope_idx' is on column 'nope', which the dataset at " in stopped.stderr


def test_a_policy_forbids_an_index_type(project: IndexedProject):
    """Guards: the policy rule forbidden_index_types refuses a plan that builds such an index."""
    text = project.manifest.read_text() + "policy:\n  rules:\n    - {name: no-flat-scans, forbidden_index_types: [fts]}\n"
    project.manifest.write_text(text)
    refused = project.cli("plan", code=4)
    assert "[no-flat-scans] forbidden_index_types: create index lake: " in refused.stdout
    assert "#text_fts: index type INVERTED is forbidden in backend 'lake'" in refused.stdout


def test_changed_since_plans_the_indexes_of_a_changed_table(project: IndexedProject, subprocesses):
    """Guards: --changed-since keeps a changed table's index removal (its entry did not leave the
    manifest, so it is not an unasked-for removal) beside its new index."""
    project.cli("apply", "--auto-approve")
    environment = {**cli_env(), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                   "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    for command in (["init", "-q", "-b", "main"], ["add", "lance-sync.yaml"], ["commit", "-q", "-m", "applied"]):
        subprocess.run(["git", *command], cwd=project.root, check=True, env=environment)
    project.indexes[0] = {"name": "id_bitmap", "column": "id", "type": "BITMAP"}
    project.write()
    plan = run_cli(project.manifest, "plan", "--changed-since", "HEAD", env=environment)
    assert plan.returncode == 0, describe(plan)
    assert "  + create index     lake: ./lake/data/docs.lance#id_bitmap" in plan.stdout
    assert "  - delete index     lake: ./lake/data/docs.lance#id_idx" in plan.stdout
    assert "left out" not in plan.stdout


def test_status_lists_declared_indexes_and_a_stale_one_is_degraded(project: IndexedProject):
    """Guards: `status` has a row per declared index; one that maintenance would bring up to date
    is Degraded (its queries miss the newer rows), not a crash."""
    project.cli("apply", "--auto-approve")
    lance.write_dataset(_rows(20, ROWS), project.location, mode="append")
    project.write(maintenance={"unindexed_rows": 10})
    status = run_cli(project.manifest, "status", env=cli_env())
    assert status.returncode == 2, describe(status)
    for name in ("id_idx  ", "text_fts", "emb_idx "):
        assert f"! index ./lake/data/docs.lance#{name}  Synced     Degraded" in status.stdout, describe(status)
    assert "stale index: 20 row(s) are not in the index" in status.stdout
    project.cli("apply", "--auto-approve")
    assert "All 6 object(s) Synced and Healthy." in project.cli("status").stdout


def test_status_shows_an_index_dropped_out_of_band_as_out_of_sync(project: IndexedProject):
    """Guards: an index lance-sync built and someone dropped is OutOfSync in `status` (not
    Missing: an apply made it), with the rebuild as its repair; the others stay Synced."""
    project.cli("apply", "--auto-approve")
    project.dataset().drop_index("id_idx")
    status = run_cli(project.manifest, "status", env=cli_env())
    assert status.returncode == 2, describe(status)
    assert "! index ./lake/data/docs.lance#id_idx    OutOfSync" in status.stdout, describe(status)
    assert "index ./lake/data/docs.lance#emb_idx   Synced" in status.stdout, describe(status)
    project.cli("apply", "--auto-approve")
    assert "All 6 object(s) Synced and Healthy." in project.cli("status").stdout
