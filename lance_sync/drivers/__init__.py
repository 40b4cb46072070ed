"""Backend drivers and their registry.

Drivers are found through the `lance_namespace.impls` entry-point group (lance-sync's own
are declared in pyproject.toml; other packages can add theirs the same way) and are
registered with `lance_namespace.register_namespace_impl`, so after `import lance_sync`
`lance_namespace.connect("unity", {...})` builds lance-sync's Unity driver.

lance-sync itself builds its drivers here: from a loaded manifest's validated configurations
(`connect_backends`), or from backend templates whose secrets are still `${VAR}` references,
as a saved plan keeps them (`connect_templates`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points
from typing import Any, Protocol

import lance_namespace

from lance_sync.drivers.base import BackendConfig, SyncNamespace
from lance_sync.errors import ConfigError
from lance_sync.variables import resolve_references

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


def connect(backend_type: str, config: BackendConfig | Mapping[str, Any]) -> SyncNamespace:
    """Build a driver from a validated config model or from connect() properties."""
    cls = driver_class(backend_type)
    return cls(config) if isinstance(config, BackendConfig) else cls(**config)


class ConfiguredBackend(Protocol):
    """A backend whose configuration is validated already (`manifest.desired.BackendSpec`)."""

    @property
    def driver_class(self) -> type[SyncNamespace]: ...

    @property
    def config(self) -> BackendConfig: ...


def connect_backends(backends: Mapping[str, ConfiguredBackend]) -> dict[str, SyncNamespace]:
    """A driver for each backend of a loaded manifest, from its validated configuration."""
    drivers = {}
    for name, backend in backends.items():
        with _naming(name):
            drivers[name] = backend.driver_class(backend.config)
    return drivers


def connect_templates(templates: Mapping[str, Mapping[str, Any]],
                      environ: Mapping[str, str] | None = None) -> dict[str, SyncNamespace]:
    """A driver for each backend template (a saved plan's, `import --type`'s): `type` plus
    properties, where each value written `${VAR}` is read from the environment."""
    environ = os.environ if environ is None else environ
    drivers = {}
    for name, template in templates.items():
        properties = resolve_references({k: v for k, v in template.items() if k != "type"}, environ,
                                        f"backend '{name}'")
        with _naming(name):
            drivers[name] = driver_class(template["type"])(**properties)
    return drivers


@contextlib.contextmanager
def _naming(backend: str) -> Iterator[None]:
    """A configuration error raised while building a driver names its backend."""
    try:
        yield
    except ConfigError as error:
        raise ConfigError(f"backend '{backend}': {error}") from None


def register_with_lance_namespace() -> None:
    for name, target in available_drivers().items():
        lance_namespace.register_namespace_impl(CONNECT_ALIASES.get(name, name), target.replace(":", "."))
