"""Runs in its own process for test_connect: materialize, read back and inspect over Connect.

PySpark's Connect mode is process-wide, so this cannot share the suite's classic session.
Usage: python -m tests.data.connect_client SC_URL PARQUET_DIR LOCATION; prints JSON.
"""

from __future__ import annotations

import json
import sys

from lance_sync.data import SparkSettings, get_spark, inspect_locations, stop_spark
from lance_sync.data.materialize import materialize
from lance_sync.model.arrow_types import columns_from_schema


def main(url: str, parquet_dir: str, location: str) -> dict:
    settings = SparkSettings(master=url)
    source = {"format": "parquet", "path": parquet_dir}
    result = materialize(source, location, None, "create", settings)
    spark = get_spark(settings)
    reports = inspect_locations(
        [location, location + "-missing"], engine="spark", spark_settings=settings
    )
    outcome = {
        "session": type(spark).__module__,
        "version": result.version,
        "row_count": result.row_count,
        "columns": columns_from_schema(result.schema),
        "read_count": spark.read.format("lance").load(location).count(),
        "statuses": [report.status for report in reports],
        "save_modes": save_modes(spark, location),
    }
    stop_spark(settings)
    return outcome


def save_modes(spark, location: str) -> dict:
    """ErrorIfExists (the default) and Ignore on the dataset materialize made, over Connect."""
    try:
        spark.range(1).write.format("lance").save(location)
        refused = False
    except Exception as error:
        refused = "save mode ErrorIfExists" in str(error)
    spark.range(1).write.format("lance").mode("ignore").save(location)
    return {"default_refused": refused, "ignore_count": spark.read.format("lance").load(location).count()}


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])))
