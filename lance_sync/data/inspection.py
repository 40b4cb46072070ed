"""Is there a valid Lance dataset at a location? One plain function, run by threads or by Spark.

`inspect_location` tells apart (pylance raises the same ValueError for all of them, so the
filesystem is asked first):

- missing:     nothing at the location (an empty directory counts as nothing, as on object
               stores, where empty directories do not exist; so does an Iceberg catalog's
               `metadata/` folder, which it writes into a table's location when the table is
               registered: see lance_sync.data.intents);
- not_lance:   a file, or a non-empty directory without `_versions/`;
- corrupt:     `_versions/` exists but pylance cannot open the dataset, or a data file the
               latest version references is gone;
- valid:       opens, with its version, row count, columns and the owner recorded in its
               schema metadata (see lance_sync.model.marks.DATASET_OWNER_KEY);
- interrupted: a lance-sync write that did not commit: an intent record and nothing Lance
               committed (see lance_sync.data.intents);
- unreachable: the storage itself failed (permissions, network): nothing is known about the
               location, so callers must not treat it as missing.

A valid dataset may still hold the intent record of the write that made it (the write was cut
off after its commit); the report carries any intent record it finds.

Many locations often share a parent (a table per directory of one root): `inspect_locations`
then lists each such parent once and knows every location absent from the listing to be
missing without asking for it (one call instead of one per location; most of a plan's
locations are missing while their tables are only declared), and whether each present one is
a file or a directory (on an object store, asking costs a request or two per location).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
from pyarrow import fs as pafs

from lance_sync.data.intents import INTENT_FILE, catalog_metadata, read_intent
from lance_sync.data.spark_session import SparkSettings, get_spark
from lance_sync.data.storage import Storage, open_storage, shipped_storage_options
from lance_sync.model.actions import WriteIntent
from lance_sync.model.arrow_types import columns_from_schema
from lance_sync.model.locations import normalize_location
from lance_sync.model.marks import dataset_owner

if TYPE_CHECKING:
    import lance

logger = logging.getLogger(__name__)

Status = Literal["valid", "missing", "not_lance", "corrupt", "interrupted", "unreachable"]
Engine = Literal["auto", "threads", "spark"]

#: called with a location and the dataset an inspection found valid there, in the inspecting thread
OnOpen = Callable[[str, "lance.LanceDataset"], None]

DEFAULT_SPARK_THRESHOLD = 2000
DEFAULT_MAX_WORKERS = 16
#: locations a parent must hold before it is listed instead of asking for each location
LIST_PARENT_AT = 8
#: Locations per Spark task; each task inspects its share with a thread pool.
LOCATIONS_PER_TASK = 500
_ERROR_LENGTH = 500


@dataclass(slots=True)
class LocationReport:
    uri: str
    status: Status
    version: int | None = None
    row_count: int | None = None
    columns: list[dict] | None = None  # arrow_types.columns_from_schema form
    error: str | None = None
    #: the lance-sync owner recorded in a valid dataset's schema metadata
    owner: str | None = None
    #: the intent record at the location: an interrupted write's, or a finished one's not cleared
    intent: WriteIntent | None = None


def inspect_location(
    uri: str, storage_options: dict | None = None, *, listed_as: pafs.FileType | None = None,
    on_open: OnOpen | None = None,
) -> LocationReport:
    """Classify one location and, for a valid dataset, read its version, rows and columns.

    `listed_as`: the location's type in a listing of its parent made just before, which spares
    asking for it. `on_open`: given a valid dataset as opened, so that a caller reads more of it
    without opening it again.
    """
    try:
        location = normalize_location(uri)
        storage = open_storage(location, storage_options)
        status, reason, intent = _classify(storage, storage.path(location), listed_as)
    except Exception as e:  # any storage failure: report it, never guess "missing"
        return LocationReport(uri, "unreachable", error=_describe(e))
    if status is not None:
        return LocationReport(uri, status, error=reason, intent=intent)
    report, dataset = _open_dataset(uri, location, storage, storage_options)
    report.intent = intent
    if on_open is not None and dataset is not None:
        on_open(uri, dataset)
    return report


def _classify(
    storage: Storage, path: str, kind: pafs.FileType | None = None
) -> tuple[Status | None, str | None, WriteIntent | None]:
    """What the filesystem says: a status, why, and the intent record at the location; the
    status is None if pylance must judge. `kind`: the location's type, if known already."""
    if kind is None:
        kind = storage.info(path).type
    if kind == pafs.FileType.NotFound:
        return "missing", None, None
    if kind == pafs.FileType.File:
        return "not_lance", "a file, not a directory", None
    # a catalog's table metadata (an Iceberg catalog's `metadata/`) is not the location's data
    entries = [entry for entry in storage.list_dir(path) if not catalog_metadata(storage, entry)]
    intent = read_intent(storage, path) if any(e.base_name == INTENT_FILE for e in entries) else None
    if any(entry.base_name == "_versions" and entry.type == pafs.FileType.Directory for entry in entries) \
            and (intent is None or has_committed_version(storage, path)):
        return None, None, intent
    if intent is not None and intent.owner is None and len(entries) == 1:
        # cut off while the record itself was written, so before the write's first byte: nothing
        # is there yet (the next write of the dataset writes the record again)
        return "missing", None, intent
    if intent is not None:
        return "interrupted", f"a lance-sync write that did not finish ({intent.describe()})", intent
    if not entries:
        return "missing", None, None
    return "not_lance", "a directory without _versions/", None


def has_committed_version(storage: Storage, path: str) -> bool:
    """Whether Lance committed a version at a location: a manifest in `_versions/` (a write cut
    off inside its commit may leave the folder without one)."""
    return any(entry.base_name.endswith(".manifest") for entry in storage.list_dir(f"{path}/_versions"))


def _open_dataset(
    uri: str, location: str, storage: Storage, storage_options: dict | None
) -> tuple[LocationReport, lance.LanceDataset | None]:
    """The report of a location Lance must judge, and the dataset if it is valid."""
    import lance  # only where a dataset is opened: a plan of locations that hold none does without

    try:
        dataset = lance.dataset(location, storage_options=storage_options)
        missing_files = _missing_data_files(dataset, storage, storage.path(location))
        if missing_files:
            more = f" and {len(missing_files) - 1} more" if len(missing_files) > 1 else ""
            return LocationReport(
                uri, "corrupt", error=f"data file missing: data/{missing_files[0]}{more}"
            ), None
        return LocationReport(
            uri,
            "valid",
            version=dataset.version,
            row_count=dataset.count_rows(),
            columns=columns_from_schema(dataset.schema),
            owner=dataset_owner(dataset.schema.metadata),
        ), dataset
    except Exception as e:
        return LocationReport(uri, "corrupt", error=_describe(e)), None


def dataset_bytes(location: str, storage_options: dict | None = None) -> int | None:
    """The bytes the latest version of the dataset at `location` takes (None when it cannot
    be read): its data files' sizes, from their metadata."""
    import lance

    try:
        stats = lance.dataset(location, storage_options=storage_options).stats.data_stats()
    except Exception:  # noqa: BLE001 - a size is a courtesy; the plan does not depend on it
        return None
    fields: list[Any] = stats.fields  # type: ignore[assignment]  # pylance's stub names one, it is a list
    return sum(field.bytes_on_disk for field in fields)


def _missing_data_files(dataset: lance.LanceDataset, storage: Storage, path: str) -> list[str]:
    """Data files the latest version references but `data/` lacks (one listing, no reads)."""
    referenced = {
        data_file.path
        for fragment in dataset.get_fragments()
        for data_file in fragment.data_files()
        if data_file.base_id is None  # files in other base paths are not checked
    }
    if not referenced:
        return []
    present = {info.base_name for info in storage.list_dir(f"{path}/data")}
    return sorted(referenced - present)


def _describe(error: Exception) -> str:
    """The first line of an error, bounded (pylance appends Rust source locations)."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text[:_ERROR_LENGTH]


def inspect_locations(
    uris: list[str],
    storage_options: dict | None = None,
    engine: Engine = "auto",
    spark_threshold: int = DEFAULT_SPARK_THRESHOLD,
    spark_settings: SparkSettings | None = None,
    max_workers: int = DEFAULT_MAX_WORKERS,
    on_open: OnOpen | None = None,
) -> list[LocationReport]:
    """inspect_location for many locations; results in the order of `uris`.

    engine "auto" uses a thread pool below `spark_threshold` locations and Spark from there on.
    `on_open` (see inspect_location) is called on the thread pool only: Spark's executors keep
    their datasets.
    """
    uris = list(uris)
    if choose_engine(engine, len(uris), spark_threshold) == "threads":
        return _inspect_with_threads(uris, storage_options, max_workers, on_open)
    return _inspect_with_spark(uris, storage_options, spark_settings, max_workers)


def choose_engine(engine: Engine, work_items: int, spark_threshold: int) -> Literal["threads", "spark"]:
    if engine not in ("auto", "threads", "spark"):
        raise ValueError(f"engine must be auto, threads or spark, not {engine!r}")
    if engine == "auto":
        chosen: Literal["threads", "spark"] = "spark" if work_items >= spark_threshold else "threads"
        logger.debug("engine auto: %s for %d item(s) (Spark from %d)", chosen, work_items, spark_threshold)
        return chosen
    return engine


def _inspect_with_threads(
    uris: list[str], storage_options: dict | None, max_workers: int, on_open: OnOpen | None = None
) -> list[LocationReport]:
    if not uris:
        return []
    with ThreadPoolExecutor(max_workers=min(max_workers, len(uris))) as pool:
        listed = _types_in_parent_listings(uris, storage_options, pool)
        present = [uri for uri in uris if listed.get(uri) != pafs.FileType.NotFound]

        def inspect(uri: str) -> LocationReport:
            return inspect_location(uri, storage_options=storage_options, listed_as=listed.get(uri),
                                    on_open=on_open)

        inspected = dict(zip(present, pool.map(inspect, present), strict=True))
    return [inspected[uri] if uri in inspected else LocationReport(uri, "missing") for uri in uris]


def _types_in_parent_listings(
    uris: list[str], storage_options: dict | None, pool: ThreadPoolExecutor
) -> dict[str, pafs.FileType]:
    """Each location's type in a listing of its parent (NotFound: absent from it), for parents
    of at least LIST_PARENT_AT locations; a parent that cannot be listed decides nothing."""
    by_parent: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for uri in uris:
        try:
            location = normalize_location(uri)
        except ValueError:
            continue  # inspect_location reports it
        scheme = location.split("://", 1)[0] if "://" in location else ""
        parent, name = _split(location.rstrip("/"))
        if name and parent and parent != f"{scheme}:/":
            by_parent[(scheme, parent)].append((uri, name))
    listed = [(parent, children) for (_, parent), children in by_parent.items()
              if len(children) >= LIST_PARENT_AT]

    def types(parent: str, children: list[tuple[str, str]]) -> list[tuple[str, pafs.FileType]]:
        try:
            storage = open_storage(parent, storage_options)
            entries = storage.list_dir(storage.path(parent))
        except Exception:  # noqa: BLE001 - each location is then asked for on its own
            return []
        # on an object store a name can be an object and a prefix at once: an object, as `info` says
        kinds = {info.base_name: info.type for info in entries if info.type != pafs.FileType.File}
        kinds.update({info.base_name: info.type for info in entries if info.type == pafs.FileType.File})
        return [(uri, kinds.get(name, pafs.FileType.NotFound)) for uri, name in children]

    return {uri: kind for found in pool.map(lambda item: types(*item), listed) for uri, kind in found}


def _split(path: str) -> tuple[str, str]:
    """posixpath.split, in a third of its time (a plan splits every declared location)."""
    head, slash, name = path.rpartition("/")
    return head.rstrip("/") or head + slash, name


_REPORT_SCHEMA = pa.schema(
    [
        ("position", pa.int64()),
        ("uri", pa.string()),
        ("status", pa.string()),
        ("version", pa.int64()),
        ("row_count", pa.int64()),
        ("columns", pa.string()),  # JSON
        ("error", pa.string()),
        ("owner", pa.string()),
        ("intent", pa.string()),  # JSON
    ]
)
_REPORT_DDL = (
    "position long, uri string, status string, version long, row_count long, "
    "columns string, error string, owner string, intent string"
)


def _inspect_with_spark(
    uris: list[str],
    storage_options: dict | None,
    settings: SparkSettings | None,
    max_workers: int,
) -> list[LocationReport]:
    """One task per LOCATIONS_PER_TASK locations, neighbours in the sorted order of the URIs, so
    that each task lists few parents (see _types_in_parent_listings)."""
    if not uris:
        return []
    spark = get_spark(settings)
    order = sorted(range(len(uris)), key=uris.__getitem__)
    chunks = [order[start:start + LOCATIONS_PER_TASK] for start in range(0, len(order), LOCATIONS_PER_TASK)]
    table = pa.table({"positions": chunks,
                      "uris": [[uris[position] for position in chunk] for chunk in chunks]})
    inspect = partial(_inspect_batches, storage_options=shipped_storage_options(uris, storage_options),
                      max_workers=max_workers)
    # a repartition of one partition's n rows into n partitions puts one row in each
    tasks = spark.createDataFrame(table).repartition(len(chunks))
    rows = tasks.mapInArrow(inspect, _REPORT_DDL).toArrow()
    return [_report_from_row(row) for row in sorted(rows.to_pylist(), key=lambda r: r["position"])]


def _inspect_batches(
    batches: Iterator[pa.RecordBatch], storage_options: dict | None, max_workers: int
) -> Iterator[pa.RecordBatch]:
    """Runs in a Spark task: the thread-pool path over each of this task's chunks of locations."""
    for batch in batches:
        for positions, uris in zip(batch.column("positions").to_pylist(), batch.column("uris").to_pylist(),
                                   strict=True):
            reports = _inspect_with_threads(uris, storage_options, max_workers)
            rows = [
                {**asdict(report), "position": position, "columns": json.dumps(report.columns),
                 "intent": report.intent.model_dump_json() if report.intent else None}
                for position, report in zip(positions, reports, strict=True)
            ]
            yield pa.RecordBatch.from_pylist(rows, schema=_REPORT_SCHEMA)


def _report_from_row(row: dict) -> LocationReport:
    fields = {k: v for k, v in row.items() if k != "position"}
    fields["columns"] = json.loads(row["columns"])
    fields["intent"] = WriteIntent.model_validate_json(row["intent"]) if row.get("intent") else None
    return LocationReport(**fields)
