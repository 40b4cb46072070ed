"""The `unity` backend: Unity Catalog's REST API. `config` is read offline (manifest
validation); `driver` holds `UnityNamespace`, imported on first use: `lance_sync.drivers.unity:UnityNamespace`
stays the driver's class path."""

from typing import TYPE_CHECKING

from lance_sync.drivers import driver_export

if TYPE_CHECKING:
    from lance_sync.drivers.unity.driver import UnityNamespace

__all__ = ["UnityNamespace"]
__getattr__ = driver_export(__name__, "UnityNamespace")
