"""Write a table's data from its manifest `source` with Spark, through the `lance` format.

A source block is `{format: parquet|csv|json|lance, path: <path or glob>, options: {reader
options}, casts: {column: arrow type name}}`. Spark reads the source (Lance sources through
the lance format), casts the named columns, and writes with the target schema; types Spark
lacks (uint32, fixed_size_list<float32>[N], timestamp[ms], ...) are restored on the executors.
Parquet/CSV/JSON sources are read by Spark's own filesystems where the session has one for the
path's scheme (a cluster with hadoop-aws and its s3a settings); on an object store it has none
for (the embedded Spark and s3://), Python tasks read them (lance_sync.data.file_source).
Storage options go to the executors resolved (`effective_storage_options`): they do not share
this process's environment.

A plain Parquet source (see file_source.plain_parquet_files: local files Spark would list and
read the same way, no reader options, no casts, no partition directories) on a classic session
that sets none of Spark's file or Parquet reading settings (`spark.sql.parquet.*`, ...) is read
by the write tasks themselves: its files are grouped into tasks of about equal bytes, and each
task reads its share with pyarrow and writes it (`source_files` in lance_source). Its rows never
pass through the JVM, which costs more than the write itself (bench/bench_spark.py measures
both), and Spark neither lists nor infers the schema (the first file's, as Spark would take it). Every
other source, and every source over Spark Connect, is read by Spark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import lance
import pyarrow as pa
import pyarrow.parquet as pq

from lance_sync.data.inspection import inspect_location
from lance_sync.data.spark_session import SparkSettings, get_spark, is_connect_session, spark_errors
from lance_sync.data.storage import effective_storage_options, open_storage
from lance_sync.model.arrow_types import parse_type
from lance_sync.model.locations import normalize_location

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SOURCE_FORMATS = ("parquet", "csv", "json", "lance")
Mode = Literal["create", "overwrite"]
#: Location statuses (see locations.py) each mode may write to.
_WRITABLE = {"create": ("missing",), "overwrite": ("missing", "valid")}


class MaterializeError(RuntimeError):
    """The source or the location does not allow the write; the message says why."""


@dataclass(frozen=True)
class MaterializeResult:
    version: int
    row_count: int
    schema: pa.Schema


def source_schema(
    source: dict, settings: SparkSettings, storage_options: dict | None = None
) -> pa.Schema:
    """The Arrow schema `materialize` would give the dataset without a target schema.

    Only Spark's schema inference runs (for CSV/JSON with inferSchema that reads the data); a
    plain Parquet source's (see the module docstring) is its first file's, as Spark would take
    it, and needs no Spark.
    """
    from lance_sync.data.file_source import (
        configures_file_reading,
        parquet_schema,
        plain_parquet_files,
    )

    _check_source(source)
    files = None if settings.is_connect or configures_file_reading(settings.conf) else plain_parquet_files(source)
    if files is not None:
        return parquet_schema(files[0])
    with spark_errors(settings, f"cannot read the {source['format']} source {source['path']}"):
        read = _read_source(get_spark(settings), source, storage_options)
        return _dataset_schema(read, source, _casts(source, read.frame.columns), storage_options)


def materialize(
    source: dict,
    location: str,
    target_schema: pa.Schema | None,
    mode: Mode,
    settings: SparkSettings,
    storage_options: dict | None = None,
    owner: str | None = None,
) -> MaterializeResult:
    """Write the source's rows as the Lance dataset at `location` and report what was committed.

    mode "create" needs an empty location (or one holding only `owner`'s intent record, see
    lance_sync.data.datasets, which calls this); "overwrite" replaces a dataset (or creates
    one). With `owner`, the dataset carries that owner's record.
    """
    from lance_sync.data.lance_source import FORMAT, lance_options

    if mode not in _WRITABLE:
        raise ValueError(f"mode must be create or overwrite, not {mode!r}")
    location = normalize_location(location)
    _check_location(location, mode, storage_options, owner)
    _check_source(source)
    with spark_errors(settings, f"cannot write {location} from {source['format']} {source['path']}"):
        spark = get_spark(settings)
        frame, target_schema, options = _source_frame(spark, source, target_schema, owner, storage_options)
        options.update(lance_options(target_schema, effective_storage_options(location, storage_options)))
        (
            frame.write.format(FORMAT)
            .mode("overwrite" if mode == "overwrite" else "errorifexists")
            .options(**options)
            .save(location)
        )
    dataset = lance.dataset(location, storage_options=storage_options)
    return MaterializeResult(dataset.version, dataset.count_rows(), dataset.schema)


def _source_frame(
    spark: SparkSession, source: dict, target_schema: pa.Schema | None, owner: str | None,
    storage_options: dict | None,
) -> tuple[DataFrame, pa.Schema, dict[str, str]]:
    """What the write job takes: its DataFrame, the dataset's schema (the source's unless one is
    given, with `owner`'s record) and the writer options that say how to read the frame."""
    from lance_sync.data.datasets import with_owner_record
    from lance_sync.data.file_source import (
        configures_file_reading,
        group_files,
        parquet_schema,
        plain_parquet_files,
    )
    from lance_sync.data.lance_source import SOURCE_FILES_OPTION, SOURCE_FILES_PARQUET

    files = None if is_connect_session(spark) or configures_file_reading(spark.conf.getAll) \
        else plain_parquet_files(source)
    if files is not None:  # the write tasks read the files: one row per task names its share
        schema = parquet_schema(files[0])
        columns = schema.names
        sizes = [info.size or 0 for info in open_storage(files[0]).filesystem.get_file_info(files)]
        groups = group_files(files, sizes, spark.sparkContext.defaultParallelism)
        # a repartition of one partition's n rows into n partitions puts one row in each
        frame = spark.createDataFrame(pa.table({"files": groups})).repartition(len(groups))
        options = {SOURCE_FILES_OPTION: SOURCE_FILES_PARQUET}
    else:
        read = _read_source(spark, source, storage_options)
        casts = _casts(source, read.frame.columns)
        schema = _dataset_schema(read, source, casts, storage_options) if target_schema is None else None
        frame = _apply_casts(read.frame, casts)
        columns, options = frame.columns, {}
    if target_schema is None:
        assert schema is not None
        target_schema = schema if owner is None else with_owner_record(schema, owner)
    _check_columns(columns, target_schema)
    return frame, target_schema, options


def _check_location(location: str, mode: Mode, storage_options: dict | None, owner: str | None) -> None:
    report = inspect_location(location, storage_options)
    if report.status == "interrupted" and report.intent is not None and owner is not None \
            and report.intent.is_for(owner, location):
        return  # the intent record of this very write
    if report.status not in _WRITABLE[mode]:
        detail = f": {report.error}" if report.error else ""
        raise MaterializeError(
            f"cannot {mode} a dataset at {location}: the location is {report.status}{detail}"
        )


def _check_source(source: dict) -> None:
    source_format, path = source.get("format"), source.get("path")
    if source_format not in SOURCE_FORMATS:
        raise MaterializeError(
            f"source format must be one of {', '.join(SOURCE_FORMATS)}, not {source_format!r}"
        )
    if not path:
        raise MaterializeError("the source needs a path")


@dataclass(frozen=True)
class _SourceRead:
    """The source as a DataFrame, and the files lance-sync lists itself when Python tasks read
    them (None: Spark read them and knows them)."""

    frame: DataFrame
    files: list[str] | None = None

    def input_files(self) -> list[str]:
        return self.files if self.files is not None else self.frame.inputFiles()


def _read_source(spark: SparkSession, source: dict, storage_options: dict | None) -> _SourceRead:
    from lance_sync.data.file_source import read_files, reads_in_python
    from lance_sync.data.lance_source import lance_options

    _check_source(source)
    source_format, path = source["format"], source["path"]
    options = source.get("options") or {}
    if source_format != "lance" and reads_in_python(spark, path):
        frame, plan = read_files(spark, source_format, path, options, storage_options)
        return _SourceRead(frame, plan.files)
    reader = spark.read.format(source_format).options(**options)
    if source_format == "lance":
        reader = reader.options(**lance_options(storage_options=effective_storage_options(path, storage_options)))
    return _SourceRead(reader.load(path))


def _casts(source: dict, columns: list[str]) -> dict[str, pa.DataType]:
    """The source's casts as Arrow types; every cast must name a source column."""
    casts = {column: parse_type(name) for column, name in (source.get("casts") or {}).items()}
    unknown = sorted(set(casts) - set(columns))
    if unknown:
        raise MaterializeError(
            f"casts name columns the source lacks: {', '.join(unknown)} "
            f"(source columns: {', '.join(columns)})"
        )
    return casts


def _native_schema(read: _SourceRead, source: dict, storage_options: dict | None) -> pa.Schema:
    """The source's own Arrow types where it records them: a Lance dataset, a Parquet footer.

    Spark's are lossy (uint32 -> bigint, fixed_size_list -> array, timestamp[ms] -> [us]).
    For Parquet, the first input file speaks for all; CSV and JSON have none (empty schema).
    """
    if source["format"] == "lance":
        return lance.dataset(source["path"], storage_options=storage_options).schema
    if source["format"] != "parquet":
        return pa.schema([])
    first_file = min(read.input_files())
    try:
        storage = open_storage(first_file, storage_options)
        path = storage.path(normalize_location(first_file))
        return pq.read_schema(path, filesystem=storage.filesystem)
    except Exception as e:
        raise MaterializeError(
            f"cannot read the Arrow schema of {first_file} ({e}); "
            "declare the table's schema in the manifest instead"
        ) from e


def _dataset_schema(
    read: _SourceRead, source: dict, casts: dict[str, pa.DataType], storage_options: dict | None
) -> pa.Schema:
    """Spark's schema of the source, with its native types where known, then the casts."""
    from lance_sync.data.arrow_spark import spark_arrow_schema

    native = _native_schema(read, source, storage_options)
    schema = spark_arrow_schema(read.frame.schema)
    for index, spark_field in enumerate(schema):
        if spark_field.name in casts:
            schema = schema.set(index, spark_field.with_type(casts[spark_field.name]))
        elif spark_field.name in native.names:
            native_field = native.field(spark_field.name)
            schema = schema.set(
                index, spark_field.with_type(native_field.type).with_nullable(native_field.nullable)
            )
    return schema


def _apply_casts(frame: DataFrame, casts: dict[str, pa.DataType]) -> DataFrame:
    """Cast in Spark to the nearest Spark type; the exact Arrow type is applied when writing."""
    from pyspark.sql import functions as F

    from lance_sync.data.arrow_spark import to_spark_type

    if not casts:
        return frame
    return frame.withColumns(
        {column: F.col(_quoted(column)).cast(to_spark_type(t)) for column, t in casts.items()}
    )


def _quoted(column: str) -> str:
    return "`" + column.replace("`", "``") + "`"


def _check_columns(columns: list[str], target: pa.Schema) -> None:
    missing = [name for name in target.names if name not in columns]
    extra = [name for name in columns if name not in target.names]
    if missing or extra:
        raise MaterializeError(
            "the source's columns do not match the target schema: "
            f"missing {', '.join(missing) or 'none'}; not in the schema {', '.join(extra) or 'none'}"
        )
