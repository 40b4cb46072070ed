"""lance-sync: declarative catalog sync for Lance tables.

Importing lance_sync changes nothing global: `lance_sync.drivers.register()` makes the drivers
known to `lance_namespace.connect` by their `lance-sync-*` names, and
`lance_sync.spark.install(spark)` adds the `lance` format to a SparkSession.

Every module logs to a logger named after it, under "lance_sync", which has only a
`NullHandler`: silent until the application configures logging (the CLI's `--log-level`).
"""

import logging

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())
