"""The `lance` format for Spark, built on Spark 4's Python data source API (no connector jar).

    install_lance_format(spark)   # public as lance_sync.spark.install; get_spark sessions have it
    df.write.format("lance").options(**lance_options(schema)).save(uri)   # ErrorIfExists
    df.write.format("lance").mode("append" | "overwrite" | "ignore").save(uri)
    spark.read.format("lance").options(**lance_options()).load(uri)

Save modes: ErrorIfExists (Spark's default) refuses a location that holds a dataset; Ignore
writes nothing there; Append adds to the dataset; Overwrite replaces it. Every mode but
Overwrite creates a missing dataset only if no other writer creates one meanwhile (the commit
that would make version 1 is not retried over another writer's), so a dataset that appears
during the job is never overwritten: ErrorIfExists and Append then fail, Ignore leaves it.
Spark itself passes only Append and Overwrite to a Python data source; `save_modes` carries
the other two.

Writing: each task casts its Arrow batches to the target schema (so uint32,
fixed_size_list<float32>[N] and timestamp[ms] survive Spark's type system) and writes Lance
fragments with `lance.fragment.write_fragments`; the driver commits them once, as an Overwrite,
or as an Append on the version it saw when the job started (a concurrent commit in between
makes the append fail rather than interleave). A failed job removes what it wrote (see
`LanceWriter.abort`).

The target schema is the `schema` option (JSON list of manifest columns, see `lance_options`),
else the existing dataset's schema when appending, else the Arrow form of the DataFrame schema.
Storage options travel as `storage.<key>` options (Spark lower-cases option keys).

With the option `source_files=parquet` (and a `schema`), the DataFrame's rows are not data: each
names Parquet files, or row-group slices of one, as JSON `[[path, slice, slices], ...]`, and the
task reads them itself (file_source.read_parquet_units: columns as Spark's reader takes them).
Everything else (casts, commit, abort, save modes) is the same. `materialize` uses it for plain
Parquet sources: their rows then never go through the JVM.

Reading: one Spark partition per fragment, all at the version seen when the scan was planned.
Types Spark lacks are widened (see arrow_spark.spark_compatible).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import lance
import pyarrow as pa
from lance.fragment import FragmentMetadata, write_fragments
from pyarrow import fs as pafs
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from lance_sync.data import save_modes
from lance_sync.data.arrow_spark import conform_batch, spark_arrow_schema, to_spark_schema
from lance_sync.data.file_source import FileSource
from lance_sync.data.spark_session import activate_in_this_thread, is_connect_session
from lance_sync.data.storage import open_storage
from lance_sync.model.arrow_types import columns_from_schema, schema_from_columns
from lance_sync.model.locations import normalize_location

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FORMAT = "lance"
#: commit retries of a write that makes a dataset's first version: none, so that a dataset
#: another writer created meanwhile is never overwritten; pylance's default for the others
CREATE_COMMIT_RETRIES = 0
COMMIT_RETRIES = 20
#: after a failed write, uncommitted files are swept this many times, this far apart
ABORT_SWEEPS = 4
ABORT_SWEEP_SECONDS = 0.5
SCHEMA_OPTION = "schema"
#: the target schema's metadata (JSON), which the columns of SCHEMA_OPTION do not carry
SCHEMA_METADATA_OPTION = "schema_metadata"
#: the rows name Parquet file slices for the tasks to read (see the module docstring)
SOURCE_FILES_OPTION = "source_files"
SOURCE_FILES_PARQUET = "parquet"
STORAGE_OPTION_PREFIX = "storage."


def lance_options(
    target_schema: pa.Schema | None = None, storage_options: dict | None = None
) -> dict[str, str]:
    """Spark options for the lance format: the target schema (with its metadata, such as
    lance-sync's owner record) and the storage options."""
    options = {f"{STORAGE_OPTION_PREFIX}{k}": str(v) for k, v in (storage_options or {}).items()}
    if target_schema is not None:
        options[SCHEMA_OPTION] = json.dumps(columns_from_schema(target_schema))
        if target_schema.metadata:
            options[SCHEMA_METADATA_OPTION] = json.dumps(
                {k.decode(): v.decode() for k, v in target_schema.metadata.items()})
    return options


class LanceDatasetExistsError(FileExistsError):
    """Save mode ErrorIfExists met a Lance dataset at the location."""


def install_lance_format(spark: SparkSession) -> None:
    """The `lance` format, with every save mode, on this session (made this thread's active
    session first: Spark registers and finds Python data sources through the active one), and
    the reader of source files Spark has no filesystem for (lance_sync.data.file_source)."""
    if not is_connect_session(spark):
        activate_in_this_thread(spark)
    spark.dataSource.register(LanceDataSource)
    spark.dataSource.register(FileSource)
    save_modes.install(spark)


@dataclass(frozen=True)
class _Target:
    """A dataset location and how to reach it, parsed from the Spark options."""

    uri: str
    storage_options: dict[str, str]

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> _Target:
        if not options.get("path"):
            raise ValueError("the lance format needs a location: .save(uri) or .load(uri)")
        storage_options = {
            k[len(STORAGE_OPTION_PREFIX) :]: v
            for k, v in options.items()
            if k.startswith(STORAGE_OPTION_PREFIX)
        }
        return cls(normalize_location(options["path"]), storage_options)

    def open(self, version: int | None = None) -> lance.LanceDataset:
        return lance.dataset(self.uri, version=version, storage_options=self.storage_options)

    def open_if_exists(self) -> lance.LanceDataset | None:
        storage = open_storage(self.uri, self.storage_options)
        versions = storage.info(f"{storage.path(self.uri)}/_versions")
        return self.open() if versions.type == pafs.FileType.Directory else None

    def location_exists(self) -> bool:
        storage = open_storage(self.uri, self.storage_options)
        return storage.info(storage.path(self.uri)).type != pafs.FileType.NotFound


class LanceDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        return to_spark_schema(_Target.from_options(self.options).open().schema)

    def reader(self, schema: StructType) -> LanceReader:
        target = _Target.from_options(self.options)
        return LanceReader(target, target.open().version, schema)

    def writer(self, schema: StructType, overwrite: bool) -> LanceWriter:
        target = _Target.from_options(self.options)
        existing = target.open_if_exists()
        save_mode = self.options.get(save_modes.SAVE_MODE_OPTION)
        if existing is not None and save_mode == save_modes.ERROR_IF_EXISTS:
            raise LanceDatasetExistsError(
                f"a Lance dataset already exists at {target.uri} (save mode ErrorIfExists): "
                "write with mode 'append' or 'overwrite', or 'ignore' to leave it as it is")
        source_files = self.options.get(SOURCE_FILES_OPTION)
        if source_files not in (None, SOURCE_FILES_PARQUET):
            raise ValueError(f"{SOURCE_FILES_OPTION} must be {SOURCE_FILES_PARQUET}, not {source_files!r}")
        if source_files and SCHEMA_OPTION not in self.options:
            raise ValueError(f"the option {SOURCE_FILES_OPTION} needs the option {SCHEMA_OPTION}")
        return LanceWriter(
            target=target,
            schema=self._target_schema(schema, existing, overwrite),
            overwrite=overwrite,
            read_version=existing.version if existing else None,
            location_existed=existing is not None or target.location_exists(),
            save_mode=save_mode,
            skip=existing is not None and save_mode == save_modes.IGNORE,
            source_files=source_files is not None,
        )

    def _target_schema(
        self, schema: StructType, existing: lance.LanceDataset | None, overwrite: bool
    ) -> pa.Schema:
        if SCHEMA_OPTION in self.options:
            target = schema_from_columns(json.loads(self.options[SCHEMA_OPTION]))
            metadata = json.loads(self.options.get(SCHEMA_METADATA_OPTION) or "{}")
            return target.with_metadata(metadata) if metadata else target
        if existing is not None and not overwrite:
            return existing.schema
        return spark_arrow_schema(schema)


@dataclass
class LanceCommitMessage(WriterCommitMessage):
    fragments: list[str]  # FragmentMetadata as JSON text


class LanceWriter(DataSourceArrowWriter):
    def __init__(
        self,
        target: _Target,
        schema: pa.Schema,
        overwrite: bool,
        read_version: int | None,
        location_existed: bool,
        save_mode: str | None = None,
        skip: bool = False,
        source_files: bool = False,
    ) -> None:
        self.target = target
        self.schema = schema
        self.overwrite = overwrite
        self.read_version = read_version
        self.location_existed = location_existed
        #: ErrorIfExists or Ignore (see save_modes); None for Spark's own Append and Overwrite
        self.save_mode = save_mode
        #: Ignore met a dataset: the job's tasks still run (Spark plans them before asking the
        #: source) but write and commit nothing
        self.skip = skip
        #: the rows name Parquet file slices to read (SOURCE_FILES_OPTION), not data
        self.source_files = source_files

    @property
    def appends(self) -> bool:
        return self.read_version is not None and not self.overwrite

    @property
    def creates(self) -> bool:
        """Makes a dataset where none was, in a mode that must not overwrite one made meanwhile."""
        return self.read_version is None and not self.overwrite

    @property
    def fragment_mode(self) -> str:
        """write_fragments' mode: append checks the data against the dataset's field ids."""
        if self.read_version is None:
            return "create"
        return "overwrite" if self.overwrite else "append"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
        """Runs on the executors: cast each batch to the target schema and write fragments."""
        if self.skip:
            return LanceCommitMessage([])
        if self.source_files:
            from lance_sync.data.file_source import read_parquet_units

            batches = read_parquet_units(iterator, self.schema)
        else:
            batches = (conform_batch(batch, self.schema) for batch in iterator)
        fragments = write_fragments(
            pa.RecordBatchReader.from_batches(self.schema, batches),
            self.target.uri,
            schema=self.schema,
            mode=self.fragment_mode,
            storage_options=self.target.storage_options,
        )
        return LanceCommitMessage([json.dumps(f.to_json()) for f in fragments])

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.skip:
            return
        fragments = [
            FragmentMetadata.from_json(text)
            for message in messages
            if isinstance(message, LanceCommitMessage)
            for text in message.fragments
        ]
        operation: lance.LanceOperation.BaseOperation
        if self.appends:
            operation = lance.LanceOperation.Append(fragments)
        else:
            operation = lance.LanceOperation.Overwrite(self.schema, fragments)
        try:
            lance.LanceDataset.commit(
                self.target.uri,
                operation,
                read_version=self.read_version,
                storage_options=self.target.storage_options,
                max_retries=CREATE_COMMIT_RETRIES if self.creates else COMMIT_RETRIES,
            )
        except Exception:
            if self.creates and self.target.open_if_exists() is not None:
                self._lost_the_create(fragments)
                return
            self.abort(messages)
            raise

    def _lost_the_create(self, fragments: list[FragmentMetadata]) -> None:
        """Another writer made the dataset while this job wrote: remove this job's files (only
        those: the other writer's may not be committed yet), then leave it (Ignore) or fail."""
        storage = open_storage(self.target.uri, self.target.storage_options)
        root = storage.path(self.target.uri)
        for fragment in fragments:
            for data_file in fragment.files:
                storage.filesystem.delete_file(f"{root}/data/{data_file.path}")
        if self.save_mode == save_modes.IGNORE:
            return
        raise LanceDatasetExistsError(
            f"another writer created a Lance dataset at {self.target.uri} while this write ran; "
            "nothing was written (write again with mode 'append' or 'overwrite')")

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Remove uncommitted files: every file no version references, or the whole new location.

        On an existing dataset this uses cleanup_old_versions(delete_unverified=True) keeping
        every version, which assumes no other writer is working on the dataset meanwhile.
        """
        existing = self.target.open_if_exists()
        storage = open_storage(self.target.uri, self.target.storage_options)
        root = storage.path(self.target.uri)
        leftover = root if not self.location_existed else f"{root}/data"
        # tasks Spark is still cancelling may write a last fragment after the first sweep
        for sweep in range(ABORT_SWEEPS):
            if sweep:
                time.sleep(ABORT_SWEEP_SECONDS)
            if existing is not None:
                existing.cleanup_old_versions(
                    retain_versions=len(existing.versions()), delete_unverified=True
                )
            elif storage.info(leftover).type == pafs.FileType.Directory:
                storage.filesystem.delete_dir(leftover)


class LanceReader(DataSourceReader):
    def __init__(self, target: _Target, version: int, schema: StructType) -> None:
        self.target = target
        self.version = version
        self.arrow_schema = spark_arrow_schema(schema)

    def partitions(self) -> list[InputPartition]:
        dataset = self.target.open(self.version)
        return [InputPartition(fragment.fragment_id) for fragment in dataset.get_fragments()]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:  # no fragments: Spark planned its one default partition
            return
        fragment = self.target.open(self.version).get_fragment(partition.value)
        if fragment is None:
            raise RuntimeError(f"fragment {partition.value} is not in version {self.version} of {self.target.uri}")
        for batch in fragment.to_batches(columns=self.arrow_schema.names):
            yield conform_batch(batch, self.arrow_schema)
