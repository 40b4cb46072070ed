"""Backend drivers and their registry.

Each driver has a short backend type for manifests (`dir`, `unity`, `iceberg`, `glue`,
`hive3`) and a name for `lance_namespace.connect`: the type with the `lance-sync-` prefix
(`lance-sync-unity`), so it never takes the place of pylance's `dir` or of another package's
`unity` (lance-namespace-impls registers `glue`, `hive3`, `iceberg`, `unity` on import).

lance_namespace reads no entry points: its names are registered with
`lance_namespace.register_namespace_impl`, which `register()` does for every driver, and which
importing lance_sync never does by itself. Without registering, the full class path works
too: `lance_namespace.connect("lance_sync.drivers.unity.UnityNamespace", {...})`.

The `lance_namespace.impls` entry-point group declares the same names (pyproject.toml). Another
package can add a backend type to manifests by declaring an entry `lance-sync-<type>` there;
lance-sync's own types cannot be replaced that way, and entries without the prefix (other
packages' own implementations) are not lance-sync drivers and are ignored.

lance-sync itself builds its drivers here: from a loaded manifest's validated configurations
(`connect_backends`), or from backend templates whose secrets are still `${VAR}` references,
as a saved plan keeps them (`connect_templates`).

This module imports no driver and not lance_namespace: manifest validation reads a backend's
configuration model and identifier rules (`backend_rules`, from the light `<type>.config`
modules) without loading the Lance Namespace client or a backend SDK; a backend's `driver`
module (and the modules it is split into) is imported when a driver is built.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from lance_sync.model.errors import BackendUnavailable, ConfigError
from lance_sync.model.variables import resolve_references

if TYPE_CHECKING:
    from lance_sync.drivers.base import Drivers, SyncNamespace
    from lance_sync.model.actions import Plan
    from lance_sync.model.backend_config import BackendConfig, BackendRules
    from lance_sync.model.desired import DesiredState

ENTRY_POINT_GROUP = "lance_namespace.impls"
#: what a backend type is prefixed with in `lance_namespace.connect` and in the entry points
IMPL_PREFIX = "lance-sync-"

#: lance-sync's own drivers, by backend type
BUILTIN_DRIVERS: dict[str, str] = {
    "dir": "lance_sync.drivers.dir:DirNamespace",
    "unity": "lance_sync.drivers.unity:UnityNamespace",
    "iceberg": "lance_sync.drivers.iceberg:IcebergNamespace",
    "glue": "lance_sync.drivers.glue:GlueNamespace",
    "hive3": "lance_sync.drivers.hive3:Hive3Namespace",
}

#: the offline rules of each of lance-sync's own drivers (their driver classes inherit them)
BUILTIN_RULES: dict[str, str] = {
    "dir": "lance_sync.drivers.dir.config:DirRules",
    "unity": "lance_sync.drivers.unity.config:UnityRules",
    "iceberg": "lance_sync.drivers.iceberg.config:IcebergRules",
    "glue": "lance_sync.drivers.glue.config:GlueRules",
    "hive3": "lance_sync.drivers.hive3.config:Hive3Rules",
}


@functools.cache
def available_drivers() -> dict[str, str]:
    """Backend type -> "module:Class": the builtins, plus the types installed packages add
    through `lance-sync-<type>` entry points (read here only: a scan of every installed
    package, which a builtin type spares)."""
    from importlib.metadata import entry_points

    drivers = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name.startswith(IMPL_PREFIX):
            drivers[entry.name[len(IMPL_PREFIX):]] = entry.value
    drivers.update(BUILTIN_DRIVERS)
    return drivers


def impl_name(backend_type: str) -> str:
    """The name `lance_namespace.connect` knows a backend type's driver by, after `register()`."""
    return f"{IMPL_PREFIX}{backend_type}"


def register() -> list[str]:
    """Make `lance_namespace.connect("lance-sync-<type>", properties)` (and so lancedb's
    `connect_namespace`) build lance-sync's drivers; returns the names registered. Idempotent."""
    import lance_namespace

    names = []
    for backend_type, target in sorted(available_drivers().items()):
        names.append(impl_name(backend_type))
        lance_namespace.register_namespace_impl(names[-1], target.replace(":", "."))
    return names


def driver_class(backend_type: str) -> type[SyncNamespace]:
    return _load(_target(backend_type))


def backend_rules(backend_type: str) -> type[BackendRules]:
    """A backend's configuration model and identifier rules, without importing its driver
    (a driver from another package is its own rules)."""
    return _load(BUILTIN_RULES.get(backend_type) or _target(backend_type))


def driver_export(package: str, class_name: str) -> Callable[[str], Any]:
    """A backend package's module `__getattr__`: `<package>:<class_name>` is the driver's class
    path, and importing the package (for its offline `config`) does not import the driver."""

    def __getattr__(name: str) -> Any:
        if name != class_name:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.driver"), class_name)

    return __getattr__


def _target(backend_type: str) -> str:
    """A builtin type's driver without reading the entry points (no entry point replaces one)."""
    target = BUILTIN_DRIVERS.get(backend_type) or available_drivers().get(backend_type)
    if target is None:
        known = ", ".join(sorted(available_drivers()))
        raise ConfigError(f"unknown backend type '{backend_type}' (known: {known})")
    return target


def _load(target: str) -> Any:
    module_name, class_name = target.split(":")
    return getattr(importlib.import_module(module_name), class_name)


def connect(backend_type: str, config: BackendConfig | Mapping[str, Any]) -> SyncNamespace:
    """Build a driver from a validated config model or from connect() properties."""
    from lance_sync.model.backend_config import BackendConfig

    cls = driver_class(backend_type)
    return cls(config) if isinstance(config, BackendConfig) else cls(**config)


class ConfiguredBackend(Protocol):
    """A backend whose configuration is validated already (`model.desired.BackendSpec`)."""

    @property
    def type(self) -> str: ...

    @property
    def config(self) -> BackendConfig: ...


def connect_drivers(source: DesiredState | Plan) -> Drivers:
    """A driver per backend of a loaded manifest, or of a saved plan (its `${VAR}` secrets read
    from the environment); the plan's model is imported here, as this module stays light."""
    from lance_sync.model.actions import Plan

    if isinstance(source, Plan):
        return connect_templates(source.backends)
    return connect_backends(source.backends)


def close_drivers(drivers: Drivers) -> None:
    for driver in drivers.values():
        driver.close()


def connect_backends(backends: Mapping[str, ConfiguredBackend]) -> Drivers:
    """A driver for each backend of a loaded manifest, from its validated configuration."""
    drivers = {}
    for name, backend in backends.items():
        with _naming(name):
            drivers[name] = driver_class(backend.type)(backend.config)
    return drivers


def connect_templates(templates: Mapping[str, Mapping[str, Any]],
                      environ: Mapping[str, str] | None = None) -> Drivers:
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
    """A configuration error, or a catalog that cannot be opened, while building a driver
    names its backend."""
    try:
        yield
    except ConfigError as error:
        raise ConfigError(f"backend '{backend}': {error}") from None
    except Exception as error:
        from lance_namespace.errors import LanceNamespaceError  # only once a driver is built

        if not isinstance(error, LanceNamespaceError):
            raise
        raise BackendUnavailable(f"backend '{backend}': {error}") from error
