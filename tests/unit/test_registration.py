"""Driver names: `lance-sync-*` in lance_namespace, registered on request, beside other packages'."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import lance_namespace
import pytest
from lance.namespace import DirectoryNamespace

from lance_sync.drivers import (
    BUILTIN_DRIVERS,
    ENTRY_POINT_GROUP,
    available_drivers,
    driver_class,
    impl_name,
    register,
)
from lance_sync.drivers.dir.driver import DirNamespace

PROJECT = Path(__file__).resolve().parents[2]

#: properties each driver (and lance-namespace-impls' class of the same backend) builds from
#: without contacting anything
PROPERTIES = {
    "unity": {"endpoint": "http://127.0.0.1:1", "catalog": "main", "unity.endpoint": "http://127.0.0.1:1"},
    "iceberg": {"endpoint": "http://127.0.0.1:1"},
    "glue": {"region": "us-east-1"},
    "hive3": {"uri": "thrift://127.0.0.1:1"},
}


def ours(backend_type: str, properties: dict[str, str]) -> dict[str, str]:
    """The properties lance-sync's driver takes (lance-namespace-impls' `unity.endpoint` is not one)."""
    allowed = driver_class(backend_type).config_model.model_fields
    return {k: v for k, v in properties.items() if k in allowed}


def test_pyproject_declares_each_driver_under_its_lance_sync_name():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    declared = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["entry-points"][ENTRY_POINT_GROUP]
    assert declared == {impl_name(t): target for t, target in BUILTIN_DRIVERS.items()}


def test_importing_lance_sync_registers_nothing(tmp_path: Path, subprocesses: None):
    script = textwrap.dedent(f"""
        import lance_namespace
        import lance_sync, lance_sync.api, lance_sync.cli.app, lance_sync.drivers, lance_sync.spark
        try:
            lance_namespace.connect("lance-sync-dir", {{"root": {str(tmp_path)!r}}})
        except ValueError:
            print("not registered")
        from lance_sync.drivers import register
        register()
        print(type(lance_namespace.connect("lance-sync-dir", {{"root": {str(tmp_path)!r}}})).__name__)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                            cwd=PROJECT, check=False)
    assert result.stdout.splitlines() == ["not registered", "DirNamespace"], result.stderr


def test_each_name_builds_its_own_class_beside_lance_namespace_impls(tmp_path: Path):
    """lance-namespace-impls registers glue, hive3, iceberg and unity when imported; lance-sync's
    names are its own, in either order of registration."""
    impls = pytest.importorskip("lance_namespace_impls")
    register()
    for backend_type, properties in PROPERTIES.items():
        driver = lance_namespace.connect(impl_name(backend_type), ours(backend_type, properties))
        assert type(driver) is driver_class(backend_type)
        try:
            theirs = type(lance_namespace.connect(backend_type, properties)).__module__
        except ValueError as error:  # their class was found but wants its own extras (Hive)
            theirs = str(error).split("impl ")[1]
        assert theirs.startswith(impls.__name__), backend_type
    assert type(lance_namespace.connect("dir", {"root": str(tmp_path)})) is DirectoryNamespace
    assert type(lance_namespace.connect(impl_name("dir"), {"root": str(tmp_path)})) is DirNamespace


def test_the_full_class_path_needs_no_registration(tmp_path: Path):
    driver = lance_namespace.connect("lance_sync.drivers.dir.DirNamespace", {"root": str(tmp_path)})
    assert isinstance(driver, DirNamespace)


def test_entry_points_add_backend_types_but_replace_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Another package's `lance-sync-<type>` entry adds a type; its un-prefixed entries and a
    `lance-sync-glue` of its own change nothing."""
    info = tmp_path / "lance_sync_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lance-sync-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(f"""
        [{ENTRY_POINT_GROUP}]
        lance-sync-extra = lance_sync.drivers.dir:DirNamespace
        lance-sync-glue = lance_sync.drivers.dir:DirNamespace
        glue = somebody_else.glue:GlueNamespace
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    available_drivers.cache_clear()
    try:
        drivers = available_drivers()
        assert drivers["extra"] == "lance_sync.drivers.dir:DirNamespace"
        assert {t: drivers[t] for t in BUILTIN_DRIVERS} == BUILTIN_DRIVERS
    finally:
        available_drivers.cache_clear()
