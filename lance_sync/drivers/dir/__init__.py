"""The `dir` backend: a directory of Lance datasets (`__manifest` table), no server. `config` is read offline (manifest
validation); `driver` holds `DirNamespace`, imported on first use: `lance_sync.drivers.dir:DirNamespace`
stays the driver's class path."""

from typing import TYPE_CHECKING

from lance_sync.drivers import driver_export

if TYPE_CHECKING:
    from lance_sync.drivers.dir.driver import DirNamespace

__all__ = ["DirNamespace"]
__getattr__ = driver_export(__name__, "DirNamespace")
