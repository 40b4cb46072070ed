"""The `hive3` backend: Hive Metastore 3.x over Thrift. `config` is read offline (manifest
validation); `driver` holds `Hive3Namespace`, imported on first use: `lance_sync.drivers.hive3:Hive3Namespace`
stays the driver's class path."""

from typing import TYPE_CHECKING

from lance_sync.drivers import driver_export

if TYPE_CHECKING:
    from lance_sync.drivers.hive3.driver import Hive3Namespace

__all__ = ["Hive3Namespace"]
__getattr__ = driver_export(__name__, "Hive3Namespace")
