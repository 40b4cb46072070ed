"""Parquet, CSV and JSON sources on an object store Spark has no filesystem for, read in Python tasks.

Spark reads a source's files through a Hadoop FileSystem for the path's scheme; the embedded
Spark has none for s3://, s3a://, gs:// or abfs:// (no hadoop-aws or other connector jar). For
such a path (`reads_in_python`: pyarrow can read the scheme and the JVM has no FileSystem for
it) lance-sync lists the files with pyarrow on the driver, through the storage options resolved
the way pylance resolves them (`effective_storage_options`), takes the schema from the first
file, and reads the files with Spark's Python data source API (the `lance_sync_files` format):
one partition per file, which a Python task reads with pyarrow's dataset readers. A session
whose JVM has a FileSystem for the scheme (a cluster with hadoop-aws) keeps Spark's own reader.

Spark's reader options are honoured where pyarrow can do the same thing (READ_OPTIONS: the
header, inferSchema, separator, quote, escape, null value, encoding and multi-line options of
CSV, Parquet's mergeSchema, and recursiveFileLookup and pathGlobFilter for every format); any
other option is refused with a message naming those that work. As in Spark, CSV columns are
strings unless inferSchema is true and are named `_c0, _c1, ...` unless header is true; files
are taken positionally against the schema; names starting with `_` or `.` are skipped; a
directory with subdirectories needs recursiveFileLookup (partition directories are not
discovered). Unlike Spark, CSV and JSON types are inferred from the first file's first block by
pyarrow (int64 rather than int, timestamps without a zone, JSON columns in file order), and a
malformed row fails the read (Spark's FAILFAST): declare the schema or casts to pin types.

A plain Parquet source on local files (`plain_parquet_files`) is read by the write tasks
themselves instead (`materialize`): `group_files` shares its files, or row-group slices of
them, among the tasks, and each task reads its share with `read_parquet_units`, the same Parquet
reader the `lance_sync_files` format uses; its rows never pass through the JVM.
"""

from __future__ import annotations

import base64
import fnmatch
import heapq
import json
import math
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.dataset as pa_ds
import pyarrow.json as pa_json
import pyarrow.parquet as pq
from pyarrow import fs as pafs
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from lance_sync.data.arrow_spark import conform_batch, spark_arrow_schema, to_spark_schema
from lance_sync.data.materialize import MaterializeError
from lance_sync.data.spark_session import is_connect_session, spark_text
from lance_sync.data.storage import Storage, effective_storage_options, open_storage
from lance_sync.model.locations import is_local, normalize_location, scheme

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FORMAT = "lance_sync_files"
#: schemes (as written in the source's path) whose files pyarrow reads here
PYTHON_SCHEMES = ("s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss")
#: Spark reader options this reader honours, by format (Spark compares their names lower-cased)
_COMMON_OPTIONS = ("recursiveFileLookup", "pathGlobFilter")
READ_OPTIONS = {
    "parquet": ("mergeSchema", *_COMMON_OPTIONS),
    "csv": ("header", "inferSchema", "sep", "delimiter", "quote", "escape", "nullValue", "encoding",
            "charset", "multiLine", "mode", *_COMMON_OPTIONS),
    "json": ("multiLine", "mode", *_COMMON_OPTIONS),
}
#: options this reader honours with one value only, by format and option
_ONLY_VALUES = {("csv", "mode"): "FAILFAST", ("json", "mode"): "FAILFAST", ("json", "multiline"): "false"}
_GLOB = re.compile(r"[*?\[]")
PLAN_OPTION = "plan"
STORAGE_OPTION_PREFIX = "storage."
#: Parquet bytes a write task reads at most when the tasks read the files (Spark's default
#: spark.sql.files.maxPartitionBytes); there are always a multiple of the session's parallelism
TASK_BYTES = 128 * 1024 * 1024
#: rows per batch read from a Parquet file
PARQUET_BATCH_ROWS = 65_536
#: Parquet summary files: Spark takes the schema from them
_SUMMARY_FILES = ("_metadata", "_common_metadata")
#: settings of Spark's file and Parquet reading: a session that sets any reads with Spark
_FILE_READING_CONF = ("spark.sql.parquet.", "spark.sql.files.", "spark.sql.caseSensitive",
                      "spark.sql.legacy.parquet.")


def reads_in_python(spark: SparkSession, path: str) -> bool:
    """Whether lance-sync reads this parquet/csv/json path itself: pyarrow reads its scheme
    and Spark's JVM has no Hadoop FileSystem for it. A Spark Connect server's filesystems
    cannot be asked: its own reader is used."""
    written = scheme(path)
    if written not in PYTHON_SCHEMES or is_connect_session(spark):
        return False
    return not spark_has_filesystem(spark, written)


def spark_has_filesystem(spark: SparkSession, scheme_name: str) -> bool:
    """Whether the session's JVM has a Hadoop FileSystem for the scheme (`fs.<scheme>.impl`
    or one of its service-loaded filesystems)."""
    from py4j.protocol import Py4JJavaError

    jvm = spark._jvm
    assert jvm is not None, "a classic session has a JVM"
    try:
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme_name, spark._jsc.hadoopConfiguration())
    except Py4JJavaError:
        return False
    return True


@dataclass(frozen=True)
class ReadSpec:
    """A format and the Spark reader options for it, checked and lower-cased."""

    format: str
    options: dict[str, str]

    @classmethod
    def parse(cls, source_format: str, options: Mapping[str, Any]) -> ReadSpec:
        known = READ_OPTIONS[source_format]
        given = {str(key).lower(): spark_text(value) for key, value in options.items()}
        for key, value in given.items():
            if key not in (name.lower() for name in known):
                raise MaterializeError(
                    f"the {source_format} option {key!r} is not supported where lance-sync reads the files "
                    f"itself (Spark has no filesystem for the path's scheme); supported: {', '.join(known)}")
            only = _ONLY_VALUES.get((source_format, key))
            if only is not None and value.lower() != only.lower():
                raise MaterializeError(
                    f"the {source_format} option {key}={value} is not supported where lance-sync reads the "
                    f"files itself; only {key}={only} is (or leave it out)")
        return cls(source_format, given)

    def flag(self, key: str) -> bool:
        value = self.options.get(key, "false").lower()
        if value not in ("true", "false"):
            raise MaterializeError(f"the {self.format} option {key} must be true or false, not {value!r}")
        return value == "true"

    def file_format(self, schema: pa.Schema | None = None) -> pa_ds.FileFormat:
        """pyarrow's reader for these options: inferring (no schema) or reading into `schema`."""
        if self.format == "csv":
            return self._csv_format(schema)
        if self.format == "json":
            parse = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore") \
                if schema is not None else pa_json.ParseOptions()
            return pa_ds.JsonFileFormat(parse_options=parse)
        return pa_ds.ParquetFileFormat()

    def _csv_format(self, schema: pa.Schema | None) -> pa_ds.CsvFileFormat:
        header = self.flag("header")
        encoding = self.options.get("encoding", self.options.get("charset", "utf8"))
        if schema is None:
            read = pa_csv.ReadOptions(autogenerate_column_names=not header, encoding=encoding)
        else:  # positional, as Spark takes CSV columns
            read = pa_csv.ReadOptions(column_names=schema.names, skip_rows=int(header), encoding=encoding)
        quote, escape = self.options.get("quote", '"'), self.options.get("escape")
        parse = pa_csv.ParseOptions(
            delimiter=self.options.get("sep", self.options.get("delimiter", ",")),
            quote_char=quote or False, escape_char=escape or False, newlines_in_values=self.flag("multiline"))
        convert = pa_csv.ConvertOptions(
            column_types=schema, null_values=[self.options.get("nullvalue", "")],
            strings_can_be_null=True, quoted_strings_can_be_null=False)
        return pa_ds.CsvFileFormat(parse_options=parse, convert_options=convert, read_options=read)

    def as_spark_reads(self, inferred: pa.Schema) -> pa.Schema:
        """The inferred schema with Spark's rules for these options: CSV names and strings, and
        no all-null (null-typed) columns, which Spark reads as strings."""
        fields = list(inferred)
        if self.format == "csv" and not self.flag("header"):
            fields = [field.with_name(f"_c{index}") for index, field in enumerate(fields)]
        if self.format == "csv" and not self.flag("inferschema"):
            fields = [field.with_type(pa.string()) for field in fields]
        return pa.schema([field.with_type(pa.string()) if pa.types.is_null(field.type) else field
                          for field in fields])


@dataclass(frozen=True)
class FileRead:
    """What the Python tasks read: the files (URIs), how, and into which Arrow schema."""

    spec: ReadSpec
    files: list[str]
    schema: pa.Schema

    def to_json(self) -> str:
        return json.dumps({"format": self.spec.format, "options": self.spec.options, "files": self.files,
                           "schema": base64.b64encode(self.schema.serialize().to_pybytes()).decode()})

    @classmethod
    def from_json(cls, text: str) -> FileRead:
        plan = json.loads(text)
        schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(plan["schema"])))
        return cls(ReadSpec(plan["format"], plan["options"]), plan["files"], schema)


def read_files(spark: SparkSession, source_format: str, path: str, options: Mapping[str, Any],
               storage_options: dict | None) -> tuple[DataFrame, FileRead]:
    """The source as a DataFrame read by Python tasks (one partition per file), and the plan."""
    spec = ReadSpec.parse(source_format, options)
    resolved = effective_storage_options(path, storage_options)
    try:
        storage = open_storage(path, resolved)
        files = list_files(storage, storage.path(normalize_location(path)), spec)
        schema = _read_schema(storage, files, spec)
    except MaterializeError:
        raise
    except Exception as e:  # the store's own error: access, network, a file pyarrow cannot parse
        raise MaterializeError(f"cannot read the {source_format} source {path}: {e}") from e
    plan = FileRead(spec, [storage.uri(file) for file in files], schema)
    reader = spark.read.format(FORMAT).schema(to_spark_schema(schema)).option(PLAN_OPTION, plan.to_json())
    frame = reader.options(**{f"{STORAGE_OPTION_PREFIX}{k}": v for k, v in resolved.items()}).load()
    return frame, plan


def list_files(storage: Storage, path: str, spec: ReadSpec) -> list[str]:
    """The files a path names, sorted: a file, the files of a directory, or what a glob
    (`*`, `?`, `[...]` within one path segment) matches, files of matched directories included."""
    if "{" in path:
        raise MaterializeError(f"{path}: glob alternatives {{a,b}} are not supported where lance-sync reads "
                              "the files itself; use * or [...]")
    matched = _glob(storage, path) if _GLOB.search(path) else [storage.info(path)]
    recursive = spec.flag("recursivefilelookup")
    files = [info.path for info in matched if info.type == pafs.FileType.File and _visible(info.base_name)]
    for directory in (info.path for info in matched if info.type == pafs.FileType.Directory):
        files.extend(_directory_files(storage, directory, recursive))
    name_filter = spec.options.get("pathglobfilter")
    files = sorted(f for f in files if name_filter is None or fnmatch.fnmatchcase(posixpath.basename(f), name_filter))
    if not files:
        raise MaterializeError(f"no {spec.format} files at {storage.uri(path)}")
    return files


def _glob(storage: Storage, pattern: str) -> list[pafs.FileInfo]:
    segments = pattern.split("/")
    fixed = next(index for index, segment in enumerate(segments) if _GLOB.search(segment))
    base = "/".join(segments[:fixed])
    below = storage.filesystem.get_file_info(pafs.FileSelector(base, allow_not_found=True, recursive=True))
    return [info for info in below if len(info.path.split("/")) == len(segments)
            and all(fnmatch.fnmatchcase(part, want) for part, want in zip(info.path.split("/"), segments, strict=True))]


def _directory_files(storage: Storage, directory: str, recursive: bool) -> list[str]:
    """A directory's visible files; subdirectories need recursiveFileLookup (Spark would take
    them for partitions, which this reader does not discover)."""
    entries = storage.filesystem.get_file_info(pafs.FileSelector(directory, recursive=recursive))
    visible = [e for e in entries if all(_visible(part) for part in e.path[len(directory) + 1:].split("/"))]
    subdirectories = [e.path for e in visible if e.type == pafs.FileType.Directory]
    if subdirectories and not recursive:
        raise MaterializeError(
            f"{storage.uri(directory)} holds directories ({storage.uri(subdirectories[0])}...): set the source "
            "option recursiveFileLookup: true to read every file below it, or name the files with a glob")
    return [e.path for e in visible if e.type == pafs.FileType.File]


def _visible(name: str) -> bool:
    """Spark skips names starting with `_` or `.` (_SUCCESS, .crc files, _temporary)."""
    return not name.startswith(("_", "."))


def _read_schema(storage: Storage, files: list[str], spec: ReadSpec) -> pa.Schema:
    """The first file's schema (every file's, unified, for Parquet with mergeSchema), as Spark
    would read it with these options."""
    if spec.format == "parquet" and spec.flag("mergeschema"):
        inferred = pa.unify_schemas([pq.read_schema(file, filesystem=storage.filesystem) for file in files])
    else:
        inferred = pa_ds.dataset(files[0], format=spec.file_format(), filesystem=storage.filesystem).schema
    return spec.as_spark_reads(inferred)


class FileSource(DataSource):
    """The `lance_sync_files` format: the files of a FileRead (PLAN_OPTION option), read into
    the schema the DataFrame reader is given (`read_files` always gives one)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def reader(self, schema: StructType) -> FileReader:
        storage_options = {k[len(STORAGE_OPTION_PREFIX):]: v for k, v in self.options.items()
                           if k.startswith(STORAGE_OPTION_PREFIX)}
        return FileReader(FileRead.from_json(self.options[PLAN_OPTION]), storage_options, schema)


class FileReader(DataSourceReader):
    def __init__(self, plan: FileRead, storage_options: dict[str, str], schema: StructType) -> None:
        self.plan = plan
        self.storage_options = storage_options
        self.batch_schema = spark_arrow_schema(schema)

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(file) for file in self.plan.files]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Runs in a Python task: one file, read into the plan's schema, in Spark's types."""
        storage = open_storage(partition.value, self.storage_options)
        path = storage.path(normalize_location(partition.value))
        if self.plan.spec.format == "parquet":
            batches = _read_parquet_slice(pq.ParquetFile(path, filesystem=storage.filesystem), 0, 1, self.plan.schema)
        else:
            dataset = pa_ds.dataset(path, schema=self.plan.schema, format=self.plan.spec.file_format(self.plan.schema),
                                    filesystem=storage.filesystem)
            batches = dataset.to_batches()
        for batch in batches:
            yield conform_batch(batch, self.batch_schema)


def plain_parquet_files(source: dict) -> list[str] | None:
    """The files of a plain Parquet source, sorted: exactly those Spark would read, and whose
    first file gives the schema Spark would infer; None when only Spark can tell.

    Plain: local, no reader options and no casts; the path is one file, or a directory whose
    entries are files and hidden entries (Spark's rule: a name starting with `.` or `_`), with
    no Parquet summary file (`_metadata`, `_common_metadata`: Spark takes the schema from it).
    Globs, subdirectories (partitions: Spark adds their columns) and column names that differ
    only in case (Spark refuses them) are left to Spark.
    """
    path = source.get("path")
    if source.get("format") != "parquet" or source.get("options") or source.get("casts") \
            or not isinstance(path, str) or not is_local(path) or any(c in path for c in "*?[]{}"):
        return None
    location = normalize_location(path)
    storage = open_storage(location)
    kind = storage.info(location).type
    if kind == pafs.FileType.File:
        files = [location] if _visible(posixpath.basename(location)) else []
    elif kind == pafs.FileType.Directory:
        entries = storage.list_dir(location)
        if any(_visible(e.base_name) and e.type != pafs.FileType.File
               or e.base_name in _SUMMARY_FILES or _spark_may_list(e.base_name) for e in entries):
            return None
        files = sorted(e.path for e in entries if _visible(e.base_name))
    else:
        return None
    if not files:
        return None
    names = pq.read_schema(files[0]).names
    return files if len({name.lower() for name in names}) == len(names) else None


def configures_file_reading(conf: Iterable[str]) -> bool:
    """Whether Spark settings (their keys) say how Spark reads files."""
    return any(key.startswith(_FILE_READING_CONF) for key in conf)


def _spark_may_list(name: str) -> bool:
    """Names Spark's listing treats apart (`_k=v`, `._COPYING_`): left to Spark."""
    return (name.startswith("_") and "=" in name) or name.endswith("._COPYING_")


def parquet_schema(path: str) -> pa.Schema:
    """A Parquet file's schema as Spark's reader gives it with the file's own types (as
    materialize takes a source's types): names, types and nullability, no metadata."""
    return pa.schema([pa.field(f.name, f.type, f.nullable) for f in pq.read_schema(path)])


def group_files(paths: list[str], sizes: list[int], parallelism: int) -> list[str]:
    """Files into tasks of about equal bytes: a multiple of `parallelism` tasks of at most
    TASK_BYTES each, a file larger than a task's share split into slices of its row groups."""
    total = sum(sizes)
    tasks = parallelism * max(1, math.ceil(total / (parallelism * TASK_BYTES)))
    share = total / tasks
    units = []
    for path, size in zip(paths, sizes, strict=True):
        slices = max(1, math.ceil(size / share - 1e-9)) if share else 1
        units += [(size / slices, [path, index, slices]) for index in range(slices)]
    groups: list[list] = [[] for _ in range(min(tasks, len(units)))]
    loads = [(0.0, group) for group in range(len(groups))]
    for unit_size, unit in sorted(units, key=lambda u: -u[0]):  # largest first, to the least loaded
        load, group = heapq.heappop(loads)
        groups[group].append(unit)
        heapq.heappush(loads, (load + unit_size, group))
    return [json.dumps(group) for group in groups]


def read_parquet_units(rows: Iterator[pa.RecordBatch], target: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Runs in a write task: the rows of the Parquet file slices each input row names (a group of
    `group_files`), in `target`'s columns and types."""
    for batch in rows:
        for units in batch.column(0).to_pylist():
            for path, index, count in json.loads(units):
                yield from _read_parquet_slice(pq.ParquetFile(path), index, count, target)


def _read_parquet_slice(
    parquet: pq.ParquetFile, index: int, count: int, target: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """Slice `index` of `count` of a file (that share of its row groups, in order) as Spark's
    reader takes it into `target`: columns by name, ignoring case (spark.sql.caseSensitive is off
    by default), a column the file lacks as nulls, cast to `target`'s types."""
    groups = parquet.num_row_groups
    row_groups = list(range(groups * index // count, groups * (index + 1) // count))
    if not row_groups:
        return
    names = parquet.schema_arrow.names
    by_lower = {name.lower(): name for name in reversed(names)}
    columns = {f.name: f.name if f.name in names else by_lower.get(f.name.lower()) for f in target}
    present = [name for name in columns.values() if name is not None]
    for data in parquet.iter_batches(PARQUET_BATCH_ROWS, row_groups=row_groups, columns=present):
        arrays = [data.column(column).cast(f.type) if column is not None else pa.nulls(data.num_rows, f.type)
                  for f, column in zip(target, columns.values(), strict=True)]
        yield pa.RecordBatch.from_arrays(arrays, schema=target)
