"""Spark with lance-sync: the `lance` format on any SparkSession, no connector jar needed.

    import lance_sync.spark

    spark = lance_sync.spark.get_spark()          # lance-sync's session: the format is on it
    lance_sync.spark.install(my_spark)            # or add it to a session of your own

    df.write.format("lance").save(uri)                                    # ErrorIfExists
    df.write.format("lance").mode("append" | "overwrite" | "ignore").save(uri)
    spark.read.format("lance").load(uri)

ErrorIfExists (Spark's default) refuses a location that holds a Lance dataset; Ignore leaves
such a dataset as it is and writes nothing; Append adds to it; Overwrite replaces it. A
dataset that another writer creates while a job runs is never overwritten by ErrorIfExists,
Ignore or Append. Options: `storage.<key>` for object-store settings, `schema` for a target
schema (see `lance_sync.data.lance_source.lance_options`).

Needs Spark 4 (its Python data source API) and the `spark` extra; works over Spark Connect
too, where the server must be able to import lance_sync. Importing this module does not import
pyspark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lance_sync.data.spark_session import (
    SparkSettings,
    SparkUnavailableError,
    get_spark,
    stop_spark,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SparkSettings", "SparkUnavailableError", "get_spark", "install", "stop_spark"]


def install(spark: SparkSession) -> SparkSession:
    """Add the `lance` format, with every save mode, to `spark`; returns it. Idempotent."""
    from lance_sync.data.lance_source import install_lance_format

    install_lance_format(spark)
    return spark
