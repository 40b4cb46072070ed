"""Small inputs for the data-plane tests: a table with the types Spark loses, file listings."""

from __future__ import annotations

import datetime
from pathlib import Path

import lance
import pyarrow as pa

from lance_sync.model.arrow_types import schema_from_columns

#: The types that do not survive Spark unless cast back on the executors.
TYPED_SCHEMA = schema_from_columns(
    [
        {"name": "id", "type": "uint32"},
        {"name": "vector", "type": "fixed_size_list<float32>[8]"},
        {"name": "seen", "type": "timestamp[ms]"},
        {"name": "name", "type": "string"},
    ]
)


def typed_table(rows: int, first_id: int = 0) -> pa.Table:
    ids = range(first_id, first_id + rows)
    start = datetime.datetime(2024, 1, 1)
    return pa.table(
        {
            "id": [i for i in ids],
            "vector": [[float(i)] * 8 for i in ids],
            "seen": [start + datetime.timedelta(milliseconds=7 * i) for i in ids],
            "name": [f"row-{i}" for i in ids],
        },
        schema=TYPED_SCHEMA,
    )


def data_files(location: Path) -> set[str]:
    data = location / "data"
    return {p.name for p in data.iterdir()} if data.exists() else set()


def referenced_files(location: Path) -> set[str]:
    dataset = lance.dataset(str(location))
    return {f.path for fragment in dataset.get_fragments() for f in fragment.data_files()}
