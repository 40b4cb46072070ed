"""The directory backend's configuration and identifier rules, read offline
(see lance_sync.model.backend_config)."""

from __future__ import annotations

import functools
import os

from pydantic import Field

from lance_sync.model.backend_config import BackendConfig, BackendRules, Identifier
from lance_sync.model.locations import is_within, join_location, normalize_location
from lance_sync.model.shared import STATE_DIRECTORY

#: pylance joins the levels of an object id with it in the manifest table
DELIMITER = "$"
#: pylance's catalog table of a root's namespaces and tables (a Lance table in the root)
MANIFEST_TABLE = "__manifest"
#: where a local root keeps lance-sync's apply leases, one `<lease name>.json` each
LEASE_DIRECTORY = "_lance_sync_leases"
#: the folders a root keeps for itself, and what each holds: no table may be at or inside one
#: (lance-sync's state folder is there when the manifest lies in the root)
OWN_FOLDERS = {MANIFEST_TABLE: "catalog table", LEASE_DIRECTORY: "apply lease folder",
               STATE_DIRECTORY: "state folder (journals, rollback plans)"}


class DirConfig(BackendConfig):
    root: str = Field(description="Directory or object-store URI that holds the namespace. "
                      "A relative path is taken from the manifest file's folder.")


class DirRules(BackendRules):
    backend_type = "dir"
    config_model = DirConfig
    namespace_levels = (1, None)
    table_namespace_levels = (1, None)
    checks_read = frozenset({"root"})

    @classmethod
    def check_namespace_id(cls, parts: Identifier, config: BackendConfig) -> str | None:
        if DELIMITER in "".join(parts):  # asked of every table: no generator
            return f"names in a dir backend cannot contain '{DELIMITER}'"
        return None

    @classmethod
    def check_table_name(cls, name: str, config: BackendConfig) -> str | None:
        return cls.check_namespace_id((name,), config)

    @classmethod
    def check_location(cls, location: str, config: BackendConfig) -> str | None:
        root = _root_of(config)
        if location == root or not is_within(location, root):
            return f"a dir backend registers only locations inside its root {root} (got {location})"
        return None

    @classmethod
    def own_locations(cls, config: BackendConfig) -> dict[str, str]:
        root = _root_of(config)
        return {join_location(root, name): what for name, what in OWN_FOLDERS.items()}


def _root_of(config: BackendConfig) -> str:
    assert isinstance(config, DirConfig)
    # the working directory only matters to a relative root (and costs a system call a table)
    return _normalized_root(config.root, "" if config.root.startswith("/") else os.getcwd())


@functools.lru_cache(maxsize=16)
def _normalized_root(root: str, cwd: str) -> str:
    """A root as normalize_location spells it (from `cwd` when relative), worked out once:
    manifest checks ask it for every table."""
    return normalize_location(root, cwd)
