"""lance-sync: declarative catalog sync for Lance tables.

Importing lance_sync changes nothing global: `lance_sync.drivers.register()` makes the drivers
known to `lance_namespace.connect` by their `lance-sync-*` names, and
`lance_sync.spark.install(spark)` adds the `lance` format to a SparkSession. The one thing it
does to another package is invisible to its users: the body of the Lance Namespace REST
client package runs only when one of its names is first asked for (see `_deferred`).
"""

from lance_sync._deferred import defer_body

__version__ = "0.1.0"

defer_body("lance_namespace_urllib3_client")
