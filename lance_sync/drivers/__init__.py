"""Backend drivers and their registry.

Drivers are found through the `lance_namespace.impls` entry-point group (lance-sync's own
are declared in pyproject.toml; other packages can add theirs the same way) and are
registered with `lance_namespace.register_namespace_impl`, so after `import lance_sync`
`lance_namespace.connect("unity", {...})` builds lance-sync's Unity driver.
"""

from __future__ import annotations

import functools
import importlib
from importlib.metadata import entry_points
from typing import Any

import lance_namespace

from lance_sync.drivers.base import BackendConfig, SyncNamespace
from lance_sync.errors import ConfigError

ENTRY_POINT_GROUP = "lance_namespace.impls"

#: lance-sync's own drivers; also the fallback when package metadata is unavailable.
BUILTIN_DRIVERS: dict[str, str] = {
    "dir": "lance_sync.drivers.dir:DirNamespace",
    "unity": "lance_sync.drivers.unity:UnityNamespace",
    "iceberg": "lance_sync.drivers.iceberg:IcebergNamespace",
    "glue": "lance_sync.drivers.glue:GlueNamespace",
    "hive3": "lance_sync.drivers.hive3:Hive3Namespace",
}

#: `lance_namespace.connect` resolves "dir" to pylance's DirectoryNamespace before any
#: registered name, so lance-sync's directory driver is registered under this name.
CONNECT_ALIASES = {"dir": "lance-sync-dir"}


@functools.cache
def available_drivers() -> dict[str, str]:
    """Backend type -> "module:Class", builtins overridden by installed entry points."""
    drivers = dict(BUILTIN_DRIVERS)
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        drivers[entry.name] = entry.value
    return drivers


def driver_class(backend_type: str) -> type[SyncNamespace]:
    target = available_drivers().get(backend_type)
    if target is None:
        known = ", ".join(sorted(available_drivers()))
        raise ConfigError(f"unknown backend type '{backend_type}' (known: {known})")
    module_name, class_name = target.split(":")
    return getattr(importlib.import_module(module_name), class_name)


def connect(backend_type: str, config: BackendConfig | dict[str, Any]) -> SyncNamespace:
    """Build a driver from a validated config model or from connect() properties."""
    cls = driver_class(backend_type)
    properties = config.to_properties() if isinstance(config, BackendConfig) else config
    return cls(**properties)


def register_with_lance_namespace() -> None:
    for name, target in available_drivers().items():
        lance_namespace.register_namespace_impl(CONNECT_ALIASES.get(name, name), target.replace(":", "."))
