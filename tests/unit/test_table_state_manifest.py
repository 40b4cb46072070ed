"""A table's `indexes:`, `maintenance:`, `tags:` and `retention:` checked offline: each problem
names its file and line (and a close name where there is one), and a good entry becomes the
desired state the planner reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from lance_sync.cli.app import main
from lance_sync.manifest import load_manifest

HEAD = ("version: 1\nowner: team\nbackends:\n  lake: {type: dir, root: ./lake}\ntables:\n  - name: docs\n"
        "    location: ./lake/docs.lance\n    register: [{backend: lake, namespace: ml}]\n")

#: (case id, the table's lines after HEAD, fragment of the message, line it names)
CASES = [
    ("unknown-type", "    indexes:\n      - {name: a, column: id, type: BTRE}\n",
     "unknown index type 'BTRE' (did you mean 'BTREE'?)", 10),
    ("unknown-param", "    indexes:\n      - name: a\n        column: v\n        type: IVF_PQ\n"
     "        params: {num_partitions: 2, num_sub_vector: 2}\n",
     "IVF_PQ has no parameter 'num_sub_vector' (did you mean 'num_sub_vectors'?)", 13),
    ("param-of-another-type", "    indexes:\n      - {name: a, column: t, type: BITMAP, params: {with_position: true}}\n",
     "BITMAP has no parameter 'with_position'; it takes none", 10),
    ("bad-metric", "    indexes:\n      - {name: a, column: v, type: IVF_FLAT, params: {metric: cosin}}\n",
     "metric 'cosin' is not one of l2, cosine, dot, hamming (did you mean 'cosine'?)", 10),
    ("count-not-a-number", "    indexes:\n      - {name: a, column: v, type: IVF_FLAT, params: {num_partitions: many}}\n",
     "num_partitions is a whole number of at least 1", 10),
    ("pq-without-sub-vectors", "    indexes:\n      - {name: a, column: v, type: IVF_PQ, params: {num_partitions: 2}}\n",
     "IVF_PQ needs num_sub_vectors in params", 10),
    ("twice", "    indexes:\n      - {name: a, column: id, type: BTREE}\n      - {name: a, column: id, type: BITMAP}\n",
     "index 'a' is declared twice", 11),
    ("column-not-in-schema", "    schema:\n      - {name: id, type: int64}\n"
     "    indexes:\n      - {name: a, column: idd, type: BTREE}\n",
     "column 'idd' is not in the table's schema (did you mean 'id'?)", 12),
    ("empty-retention", "    retention: {}\n", "retention states keep_versions, older_than or both", 9),
    ("bad-duration", "    retention: {older_than: 7 days}\n", "does not match the required pattern", 9),
    ("tag-version-zero", "    tags: {prod: 0}\n", "0 is less than the minimum of 1", 9),
]


@pytest.mark.parametrize(("lines", "fragment", "line"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_a_bad_entry_is_explained_with_file_and_line(tmp_path: Path, lines: str, fragment: str, line: int):
    """Guards: offline validation of a table's own state, at the line of the value."""
    path = tmp_path / "lance-sync.yaml"
    path.write_text(HEAD + lines)
    result = CliRunner().invoke(main, ["validate", "-f", str(path)], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert fragment in result.output, result.output
    assert f"lance-sync.yaml:{line}:" in result.output, result.output


def test_a_good_entry_is_the_desired_state(tmp_path: Path):
    """Guards: aliases resolved, params kept for comparison, durations in seconds."""
    path = tmp_path / "lance-sync.yaml"
    path.write_text(HEAD + "    indexes:\n      - {name: t_fts, column: text, type: fts, params: {with_position: true}}\n"
                    "    maintenance: {unindexed_rows: 1000}\n    tags: {prod: 3}\n"
                    "    retention: {keep_versions: 5, older_than: 7d}\n")
    table = load_manifest([str(path)]).tables[0]
    assert table.table_state == {
        "indexes": [{"name": "t_fts", "column": "text", "type": "INVERTED", "params": {"with_position": True}}],
        "maintenance": {"unindexed_rows": 1000, "small_fragments": None, "target_rows_per_fragment": 1024 * 1024},
        "tags": {"prod": 3}, "retention": {"keep_versions": 5, "older_than": 7 * 86400}}
