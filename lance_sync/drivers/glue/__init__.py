"""The `glue` backend: AWS Glue Data Catalog. `config` is read offline (manifest
validation); `driver` holds `GlueNamespace`, imported on first use: `lance_sync.drivers.glue:GlueNamespace`
stays the driver's class path."""

from typing import TYPE_CHECKING

from lance_sync.drivers import driver_export

if TYPE_CHECKING:
    from lance_sync.drivers.glue.driver import GlueNamespace

__all__ = ["GlueNamespace"]
__getattr__ = driver_export(__name__, "GlueNamespace")
