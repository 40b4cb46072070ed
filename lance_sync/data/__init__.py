"""The data plane: Lance datasets read, written, checked and found, with Spark or threads.

Importing this package neither imports pyspark nor starts a JVM; Spark starts on first use.
Its names are imported from their modules when first asked for: a plan inspects table
locations with `lance_sync.data.inspection`, which needs neither pylance (until a location
holds a dataset) nor what materializing imports (pylance, Parquet, pandas). The function
`materialize` is imported from `lance_sync.data.materialize`: here that name is the module
(a lazily exported function of a module's own name would turn into the module once anyone
imports the module).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lance_sync.data.find_datasets import find_lance_datasets
    from lance_sync.data.inspection import LocationReport, inspect_location, inspect_locations
    from lance_sync.data.materialize import MaterializeError, MaterializeResult, source_schema
    from lance_sync.data.spark_session import (
        SparkSettings,
        SparkUnavailableError,
        get_spark,
        resolve_spark_settings,
        stop_spark,
    )

#: each exported name's module
_HOMES = {
    "find_lance_datasets": "find_datasets",
    "LocationReport": "inspection", "inspect_location": "inspection", "inspect_locations": "inspection",
    "MaterializeError": "materialize", "MaterializeResult": "materialize", "source_schema": "materialize",
    "SparkSettings": "spark_session", "SparkUnavailableError": "spark_session", "get_spark": "spark_session",
    "resolve_spark_settings": "spark_session", "stop_spark": "spark_session",
}

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
    "resolve_spark_settings",
    "source_schema",
    "stop_spark",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"lance_sync.data.{home}"), name)
    globals()[name] = value
    return value
