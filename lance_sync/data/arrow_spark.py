"""Arrow types <-> Spark types, and conforming Spark's Arrow batches to a Lance target schema.

Spark has no unsigned integers, fixed-size lists, half floats or non-microsecond timestamps,
so data passing through Spark carries the nearest type Spark holds (`arrow_types.spark_compatible`)
and is cast back to the declared Arrow type on the executors (`conform_batch`) before Lance
writes it.
Imports pyspark: import this module only where Spark is in use.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema
from pyspark.sql.types import DataType, StructField, StructType

from lance_sync.model.arrow_types import spark_compatible

#: Spark's TimestampType values are instants; Arrow batches label them with this zone.
SPARK_TIME_ZONE = "UTC"

def to_spark_type(data_type: pa.DataType) -> DataType:
    """The Spark type that holds values of this Arrow type (naive timestamps -> TIMESTAMP_NTZ)."""
    return from_arrow_type(spark_compatible(data_type))


def to_spark_schema(schema: pa.Schema) -> StructType:
    return StructType([StructField(f.name, to_spark_type(f.type), f.nullable) for f in schema])


def spark_arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema of the batches Spark exchanges with Python for this Spark schema."""
    return to_arrow_schema(schema, timezone=SPARK_TIME_ZONE)


def conform_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """Reorder and cast a batch's columns to `target` (names must match; overflow raises)."""
    names = set(batch.schema.names)
    missing = [f.name for f in target if f.name not in names]
    extra = sorted(names - set(target.names))
    if missing or extra:
        raise ValueError(
            f"columns do not match the target schema: missing {missing or 'none'}, "
            f"not in the target schema {extra or 'none'}"
        )
    arrays = [batch.column(f.name).cast(f.type) for f in target]
    return pa.RecordBatch.from_arrays(arrays, schema=target)
