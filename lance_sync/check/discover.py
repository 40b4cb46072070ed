"""`lance-sync discover`: the Lance datasets under a storage root that no backend of the
manifest registers, as a manifest snippet to adopt."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lance_sync.check.verify import spark_log_file
from lance_sync.drivers.base import Drivers
from lance_sync.manifest.yaml_core import dump_yaml
from lance_sync.model.desired import DesiredState
from lance_sync.model.locations import is_within, manifest_relative, normalize_location
from lance_sync.model.shared import DEFAULT_PARALLELISM, Progress
from lance_sync.model.storage_options import layered
from lance_sync.plan.observe import observe

if TYPE_CHECKING:
    from lance_sync.data.inspection import Engine


def discover(state: DesiredState, drivers: Drivers, root: str, engine: Engine = "auto",
             spark: str | None = None, storage_options: dict[str, str] | None = None,
             parallelism: int = DEFAULT_PARALLELISM, progress: Progress | None = None) -> list[str]:
    """Lance dataset roots under `root` that no backend registers and no manifest table names.

    `storage_options` override, key by key, those the manifest gives the root
    (`storage_for_walk`)."""
    from lance_sync.data.find_datasets import find_lance_datasets
    from lance_sync.data.spark_session import resolve_spark_settings

    live = observe(state, drivers, parallelism, progress)
    known = {info.location for info in live.tables.values() if info.location}
    known |= {table.location for table in state.tables}
    known |= {location for driver in drivers.values() for location in driver.internal_locations()}
    if progress:
        progress(f"walking {root}")
    root = normalize_location(root, state.base_dir)
    options = layered(storage_for_walk(state, root), storage_options)
    found = find_lance_datasets(root, storage_options=options or None,
                                engine=engine,
                                spark_settings=resolve_spark_settings(spark, state.spark, spark_log_file(state)))
    return [location for location in found if normalize_location(location) not in known]


def storage_for_walk(state: DesiredState, root: str) -> dict[str, str]:
    """The storage options the manifest gives `root` (normalized): those of a `dir` backend
    whose root holds it, else the manifest's default `storage:`."""
    for spec in state.backends.values():
        backend_root = getattr(spec.config, "root", None)
        if spec.type == "dir" and isinstance(backend_root, str) and is_within(root, normalize_location(backend_root)):
            return dict(spec.config.storage)
    return dict(state.storage)


def render_discovered(locations: list[str], state: DesiredState) -> str:
    """A `tables:` snippet to paste into the manifest; each entry still needs a registration."""
    if not locations:
        return "# no unregistered Lance datasets found\n"
    backend = next(iter(state.backends), "BACKEND")
    used: set[str] = {t.name for t in state.tables}
    tables = []
    for location in locations:
        name = _table_name(location, used)
        tables.append({"name": name, "location": manifest_relative(location, state.base_dir),
                       "register": [{"backend": backend, "namespace": "NAMESPACE"}]})
    header = (f"# {len(locations)} Lance dataset(s) that no backend of the manifest registers.\n"
              "# Paste under `tables:` and set each `register` entry's namespace (and backend).\n")
    return header + dump_yaml({"tables": tables}, sort_keys=False, allow_unicode=True)


def _table_name(location: str, used: set[str]) -> str:
    """A name every backend accepts (lower-case letters, digits, '_'), unique in the manifest."""
    base = location.rstrip("/").rsplit("/", 1)[-1].removesuffix(".lance")
    base = re.sub(r"[^a-z0-9_]+", "_", base.lower()).strip("_") or "table"
    name, counter = base, 2
    while name in used:
        name, counter = f"{base}_{counter}", counter + 1
    used.add(name)
    return name
