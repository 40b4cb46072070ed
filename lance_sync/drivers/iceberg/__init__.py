"""The `iceberg` backend: an Iceberg REST catalog. `config` is read offline (manifest
validation); `driver` holds `IcebergNamespace`, imported on first use: `lance_sync.drivers.iceberg:IcebergNamespace`
stays the driver's class path."""

from typing import TYPE_CHECKING

from lance_sync.drivers import driver_export

if TYPE_CHECKING:
    from lance_sync.drivers.iceberg.driver import IcebergNamespace

__all__ = ["IcebergNamespace"]
__getattr__ = driver_export(__name__, "IcebergNamespace")
