"""The `lance` format for Spark, built on Spark 4's Python data source API (no connector jar).

    df.write.format("lance").mode("overwrite" | "append").options(**lance_options(schema)).save(uri)
    spark.read.format("lance").options(**lance_options()).load(uri)

Writing: each task casts its Arrow batches to the target schema (so uint32,
fixed_size_list<float32>[N] and timestamp[ms] survive Spark's type system) and writes Lance
fragments with `lance.fragment.write_fragments`; the driver commits them once, as an Overwrite,
or as an Append on the version it saw when the job started (a concurrent commit in between
makes the append fail rather than interleave). "append" to a location without a dataset
creates it. A failed job removes what it wrote (see `LanceWriter.abort`).

The target schema is the `schema` option (JSON list of manifest columns, see `lance_options`),
else the existing dataset's schema when appending, else the Arrow form of the DataFrame schema.
Storage options travel as `storage.<key>` options (Spark lower-cases option keys).

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

from lance_sync.arrow_types import columns_from_schema, schema_from_columns
from lance_sync.data.arrow_spark import conform_batch, spark_arrow_schema, to_spark_schema
from lance_sync.data.storage import open_storage
from lance_sync.locations import normalize_location

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FORMAT = "lance"
#: after a failed write, uncommitted files are swept this many times, this far apart
ABORT_SWEEPS = 4
ABORT_SWEEP_SECONDS = 0.5
SCHEMA_OPTION = "schema"
STORAGE_OPTION_PREFIX = "storage."


def lance_options(
    target_schema: pa.Schema | None = None, storage_options: dict | None = None
) -> dict[str, str]:
    """Spark options for the lance format: the target schema and the storage options."""
    options = {f"{STORAGE_OPTION_PREFIX}{k}": str(v) for k, v in (storage_options or {}).items()}
    if target_schema is not None:
        options[SCHEMA_OPTION] = json.dumps(columns_from_schema(target_schema))
    return options


def register_lance_source(spark: SparkSession) -> None:
    spark.dataSource.register(LanceDataSource)


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
        return LanceWriter(
            target=target,
            schema=self._target_schema(schema, existing, overwrite),
            overwrite=overwrite,
            read_version=existing.version if existing else None,
            location_existed=existing is not None or target.location_exists(),
        )

    def _target_schema(
        self, schema: StructType, existing: lance.LanceDataset | None, overwrite: bool
    ) -> pa.Schema:
        if SCHEMA_OPTION in self.options:
            return schema_from_columns(json.loads(self.options[SCHEMA_OPTION]))
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
    ) -> None:
        self.target = target
        self.schema = schema
        self.overwrite = overwrite
        self.read_version = read_version
        self.location_existed = location_existed

    @property
    def appends(self) -> bool:
        return self.read_version is not None and not self.overwrite

    @property
    def fragment_mode(self) -> str:
        """write_fragments' mode: append checks the data against the dataset's field ids."""
        if self.read_version is None:
            return "create"
        return "overwrite" if self.overwrite else "append"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
        """Runs on the executors: cast each batch to the target schema and write fragments."""
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
            )
        except Exception:
            self.abort(messages)
            raise

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Remove uncommitted files: every file no version references, or the whole new location.

        On an existing dataset this uses cleanup_old_versions(delete_unverified=True) keeping
        every version, which assumes no other writer is working on the dataset meanwhile.
        """
        existing = self.target.open_if_exists()
        if existing is not None:
            existing.cleanup_old_versions(
                retain_versions=len(existing.versions()), delete_unverified=True
            )
            return
        storage = open_storage(self.target.uri, self.target.storage_options)
        root = storage.path(self.target.uri)
        leftover = root if not self.location_existed else f"{root}/data"
        # tasks Spark is still cancelling may write a last fragment after the first sweep
        for sweep in range(ABORT_SWEEPS):
            if sweep:
                time.sleep(ABORT_SWEEP_SECONDS)
            if storage.info(leftover).type == pafs.FileType.Directory:
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
