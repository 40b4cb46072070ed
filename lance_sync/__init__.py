"""lance-sync: declarative catalog sync for Lance tables.

Importing lance_sync changes nothing global: `lance_sync.drivers.register()` makes the drivers
known to `lance_namespace.connect` by their `lance-sync-*` names, and
`lance_sync.spark.install(spark)` adds the `lance` format to a SparkSession.
"""

__version__ = "0.1.0"
