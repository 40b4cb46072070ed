"""Find every Lance dataset under a storage root, never descending into a dataset.

A directory is a dataset root when it has a `_versions/` directory. The walk lists one
directory per request, level by level with a thread pool; for large roots, Spark runs one task
per top-level directory, each walking its subtree the same way. Results are normalized
locations (see storage.normalize_location), sorted.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pyarrow as pa
from pyarrow import fs as pafs

from lance_sync.data.inspection import (
    DEFAULT_MAX_WORKERS,
    DEFAULT_SPARK_THRESHOLD,
    Engine,
    choose_engine,
)
from lance_sync.data.spark_session import SparkSettings, get_spark
from lance_sync.data.storage import Storage, open_storage, shipped_storage_options
from lance_sync.model.locations import normalize_location

VERSIONS_DIR = "_versions"
#: Upper bound on Spark tasks; a task walks one or more top-level subtrees.
MAX_WALK_TASKS = 256


def find_lance_datasets(
    root: str,
    storage_options: dict | None = None,
    engine: Engine = "auto",
    spark_settings: SparkSettings | None = None,
    spark_threshold: int = DEFAULT_SPARK_THRESHOLD,
    max_workers: int = DEFAULT_MAX_WORKERS,
) -> list[str]:
    """Normalized locations of all Lance datasets under `root` (which may be one itself).

    engine "auto" walks with threads below `spark_threshold` top-level directories, else Spark.
    Raises FileNotFoundError if `root` does not exist (on object stores: no object under it).
    """
    root = normalize_location(root)
    storage = open_storage(root, storage_options)
    root_path = storage.path(root)
    if storage.info(root_path).type != pafs.FileType.Directory:
        raise FileNotFoundError(f"no directory at {root}")
    is_dataset, top_level = _look(storage, root_path)
    if is_dataset:
        return [root]
    top_level_uris = [storage.uri(path) for path in top_level]
    if choose_engine(engine, len(top_level), spark_threshold) == "threads":
        found = walk(top_level_uris, storage_options, max_workers)
    else:
        found = _walk_with_spark(top_level_uris, storage_options, spark_settings, max_workers)
    return sorted(found)


def walk(directories: list[str], storage_options: dict | None, max_workers: int) -> list[str]:
    """Dataset roots at or below these directories (normalized locations of one scheme)."""
    if not directories:
        return []
    storage = open_storage(directories[0], storage_options)
    found: list[str] = []
    frontier = [storage.path(normalize_location(d)) for d in directories]
    with ThreadPoolExecutor(max_workers=max_workers) as pool:
        while frontier:
            looks = pool.map(partial(_look, storage), frontier)
            next_frontier: list[str] = []
            for path, (is_dataset, children) in zip(frontier, looks, strict=True):
                if is_dataset:
                    found.append(storage.uri(path))
                else:
                    next_frontier.extend(children)
            frontier = next_frontier
    return found


def _look(storage: Storage, path: str) -> tuple[bool, list[str]]:
    """One listing: is `path` a dataset root, and which subdirectories does it have."""
    subdirectories = [
        entry for entry in storage.list_dir(path) if entry.type == pafs.FileType.Directory
    ]
    if any(entry.base_name == VERSIONS_DIR for entry in subdirectories):
        return True, []
    return False, [entry.path for entry in subdirectories]


def _walk_with_spark(
    directories: list[str],
    storage_options: dict | None,
    settings: SparkSettings | None,
    max_workers: int,
) -> list[str]:
    spark = get_spark(settings)
    frame = spark.createDataFrame(pa.table({"directory": directories}))
    walk_task = partial(_walk_batches, storage_options=shipped_storage_options(directories, storage_options),
                        max_workers=max_workers)
    tasks = min(len(directories), MAX_WALK_TASKS)
    found = frame.repartition(tasks).mapInArrow(walk_task, "location string")
    return found.toArrow().column("location").to_pylist()


def _walk_batches(
    batches: Iterator[pa.RecordBatch], storage_options: dict | None, max_workers: int
) -> Iterator[pa.RecordBatch]:
    """Runs in a Spark task: walk each directory of this task's share."""
    for batch in batches:
        found = walk(batch.column("directory").to_pylist(), storage_options, max_workers)
        yield pa.RecordBatch.from_pydict({"location": pa.array(found, pa.string())})
