"""The data plane: Lance datasets read, written, checked and found, with Spark or threads.

Importing this package neither imports pyspark nor starts a JVM; Spark starts on first use.
"""

from lance_sync.data.discover import find_lance_datasets
from lance_sync.data.inspection import LocationReport, inspect_location, inspect_locations
from lance_sync.data.materialize import (
    MaterializeError,
    MaterializeResult,
    materialize,
    source_schema,
)
from lance_sync.data.session import (
    SparkSettings,
    SparkUnavailableError,
    get_spark,
    resolve_spark_settings,
    stop_spark,
)

__all__ = [
    "LocationReport",
    "MaterializeError",
    "MaterializeResult",
    "SparkSettings",
    "SparkUnavailableError",
    "find_lance_datasets",
    "get_spark",
    "inspect_location",
    "inspect_locations",
    "materialize",
    "resolve_spark_settings",
    "source_schema",
    "stop_spark",
]
