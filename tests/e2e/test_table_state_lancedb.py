"""A table's columns, indexes and tags applied through lance-sync on `dir`, read back with
lancedb (through lance-sync's own driver, `connect_namespace`) and with pylance (issue 47:
"read back with pylance and lancedb")."""

from __future__ import annotations

from pathlib import Path

import lance
import lancedb
import numpy as np
import pyarrow as pa
import yaml

from lance_sync import api
from lance_sync.drivers import connect_backends, impl_name, register
from lance_sync.model.table_state import INDEX_RECORD_PREFIX, TAG_OWNER_KEY
from tests.support.cli import cli_env, describe, run_cli

ROWS = 300
DIMENSIONS = 8


def _rows() -> pa.Table:
    vectors = np.random.default_rng(7).random(ROWS * DIMENSIONS, dtype=np.float32)
    return pa.table({"id": pa.array(range(ROWS), pa.int64()),
                     "text": pa.array([f"topic{i % 7} common words" for i in range(ROWS)]),
                     "emb": pa.FixedSizeListArray.from_arrays(pa.array(vectors), DIMENSIONS)})


def test_columns_indexes_and_tags_applied_by_lance_sync_read_back_with_lancedb_and_pylance(tmp_path: Path):
    location = tmp_path / "lake" / "data" / "docs.lance"
    lance.write_dataset(_rows(), str(location))
    manifest = tmp_path / "lance-sync.yaml"
    manifest.write_text(yaml.safe_dump({
        "version": 1, "owner": "team", "backends": {"lake": {"type": "dir", "root": "./lake"}},
        "namespaces": [{"backend": "lake", "id": "ml"}],
        "tables": [{
            "name": "docs", "location": "./lake/data/docs.lance", "register": [{"backend": "lake", "namespace": "ml"}],
            "schema": [{"name": "id", "type": "int64"}, {"name": "text", "type": "string"},
                       {"name": "emb", "type": f"fixed_size_list<float32>[{DIMENSIONS}]"},
                       {"name": "score", "type": "float64"}],
            "indexes": [{"name": "id_idx", "column": "id", "type": "BTREE"},
                        {"name": "text_fts", "column": "text", "type": "FTS"},
                        {"name": "emb_idx", "column": "emb", "type": "IVF_PQ",
                         "params": {"num_partitions": 1, "num_sub_vectors": 2, "metric": "cosine"}}],
            "tags": {"first": 1}}]}, sort_keys=False))
    applied = run_cli(manifest, "apply", "--auto-approve", env=cli_env())
    assert applied.returncode == 0, describe(applied)
    assert run_cli(manifest, "plan", "--detailed-exitcode", env=cli_env()).returncode == 0

    register()
    driver = connect_backends(api.load(manifest).backends)["lake"]
    db = lancedb.connect_namespace(impl_name("dir"), driver.config.to_properties())
    table = db.open_table("docs", namespace_path=["ml"])
    assert table.schema.field("score").type == pa.float64() and table.schema.field("score").nullable
    assert table.count_rows() == ROWS and table.count_rows("score IS NULL") == ROWS
    indices = {index.name: (index.index_type, tuple(index.columns)) for index in table.list_indices()}
    assert indices == {"id_idx": ("BTree", ("id",)), "text_fts": ("FTS", ("text",)),
                       "emb_idx": ("IvfPq", ("emb",))}
    assert table.index_stats("emb_idx").num_unindexed_rows == 0
    assert "name=emb_idx" in table.search(np.full(DIMENSIONS, 0.5)).limit(3).explain_plan()
    assert {row["id"] % 7 for row in table.search("topic3", query_type="fts").limit(500).to_list()} == {3}
    assert {name: tag["version"] for name, tag in table.tags.list().items()} == {"first": 1}
    table.checkout("first")  # the tagged version is the dataset before lance-sync added the column
    assert "score" not in table.schema.names

    dataset = lance.dataset(str(location))
    assert {index.name for index in dataset.describe_indices()} == set(indices)
    assert {key for key in dataset.config() if key.startswith(INDEX_RECORD_PREFIX)} == \
        {INDEX_RECORD_PREFIX + name for name in indices}
    assert dataset.tags.list()["first"]["metadata"] == {TAG_OWNER_KEY: "team"}
    assert dataset.schema.names == ["id", "text", "emb", "score"]
