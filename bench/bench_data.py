"""Benchmark the data plane: Spark against one process, for writing and for inspecting.

    python bench/bench_data.py [--rows N] [--locations N] [--master local[2]]

1. Writes N rows (Parquet, 6 columns incl. uint32, timestamp[ms], fixed_size_list<float32>[8])
   into Lance through `materialize` (Spark, first and second run) and through one
   `lance.write_dataset` call, and prints the times and their ratio.
2. Inspects N locations (90% valid datasets, 5% missing, 5% not Lance) with the thread pool
   and with Spark.
Inputs are generated in a temporary directory and deleted afterwards.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lance  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.dataset as pads  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from lance_sync.data import SparkSettings, get_spark, inspect_locations  # noqa: E402
from lance_sync.data.materialize import materialize  # noqa: E402
from lance_sync.model.arrow_types import schema_from_columns  # noqa: E402

SCHEMA = schema_from_columns(
    [
        {"name": "id", "type": "int64"},
        {"name": "user", "type": "uint32"},
        {"name": "score", "type": "float64"},
        {"name": "name", "type": "string"},
        {"name": "seen", "type": "timestamp[ms]"},
        {"name": "vector", "type": "fixed_size_list<float32>[8]"},
    ]
)
ROWS_PER_FILE = 500_000
T = TypeVar("T")


def timed(action: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def write_parquet_source(directory: Path, rows: int) -> None:
    directory.mkdir()
    random = np.random.default_rng(7)
    for index, first in enumerate(range(0, rows, ROWS_PER_FILE)):
        count = min(ROWS_PER_FILE, rows - first)
        ids = np.arange(first, first + count, dtype=np.int64)
        seen = np.datetime64(datetime.datetime(2024, 1, 1), "ms") + ids.astype("timedelta64[ms]")
        vectors = random.random(count * 8, dtype=np.float32)
        table = pa.table(
            [
                ids,
                (ids % 100_000).astype(np.uint32),
                random.random(count),
                pa.array([f"user-{i % 1000}" for i in ids]),
                seen,
                pa.FixedSizeListArray.from_arrays(vectors, 8),
            ],
            schema=SCHEMA,
        )
        pq.write_table(table, directory / f"part-{index:04d}.parquet")


def make_locations(directory: Path, count: int) -> list[str]:
    """`count` locations: copies of one small dataset, plus missing and non-Lance ones."""
    directory.mkdir()
    template = directory / "template.lance"
    lance.write_dataset(pa.table({"id": pa.array(range(100), pa.int64())}), str(template))
    uris = []
    for index in range(count):
        location = directory / f"loc-{index:06d}.lance"
        if index % 20 == 0:
            pass  # missing
        elif index % 20 == 1:
            location.mkdir()
            (location / "part-0.parquet").write_bytes(b"not lance")
        else:
            shutil.copytree(template, location)
        uris.append(str(location))
    return uris


def statuses(reports: list) -> str:
    counts = collections.Counter(report.status for report in reports)
    return ", ".join(f"{status} {n}" for status, n in sorted(counts.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--locations", type=int, default=10_000)
    parser.add_argument("--master", default="local[*]", help="Spark master or sc:// URL")
    arguments = parser.parse_args()
    settings = SparkSettings(master=arguments.master)
    results: list[tuple[str, float, str]] = []

    with tempfile.TemporaryDirectory(prefix="bench-data-") as scratch:
        work = Path(scratch)
        seconds, _ = timed(lambda: write_parquet_source(work / "source", arguments.rows))
        results.append(("generate Parquet input", seconds, f"{arguments.rows:,} rows"))

        seconds, _ = timed(lambda: get_spark(settings))
        results.append(("start Spark session", seconds, arguments.master))

        source = {"format": "parquet", "path": str(work / "source")}
        spark_times = []
        for run in ("first", "second"):
            location = str(work / f"spark-{run}.lance")
            seconds, result = timed(
                lambda loc=location: materialize(source, loc, None, "create", settings)
            )
            if (result.row_count, result.schema) != (arguments.rows, SCHEMA):
                raise SystemExit(f"unexpected result: {result}")
            spark_times.append(seconds)
            results.append(
                (f"materialize via Spark ({run} run)", seconds, f"{result.row_count:,} rows")
            )

        seconds, _ = timed(
            lambda: lance.write_dataset(pads.dataset(source["path"]), str(work / "single.lance"))
        )
        results.append(("lance.write_dataset, one process", seconds, ""))
        results.append(("ratio Spark (second run) / one process", spark_times[1] / seconds, "x"))

        seconds, uris = timed(lambda: make_locations(work / "locations", arguments.locations))
        results.append(("generate locations", seconds, f"{len(uris):,} locations"))
        for engine in ("threads", "spark"):
            seconds, reports = timed(
                lambda e=engine: inspect_locations(uris, engine=e, spark_settings=settings)
            )
            results.append((f"inspect locations via {engine}", seconds, statuses(reports)))

    print(f"\nlance-sync data bench: {os.cpu_count()} cores, pylance {lance.__version__}\n")
    print(f"{'step':<42} {'seconds':>9}  notes")
    for step, value, note in results:
        print(f"{step:<42} {value:>9.2f}  {note}")


if __name__ == "__main__":
    main()
