"""The directory backend's configuration and identifier rules, read offline
(see lance_sync.model.backend_config)."""

from __future__ import annotations

import functools
import os

from pydantic import Field

from lance_sync.model.backend_config import BackendConfig, BackendRules, Identifier
from lance_sync.model.locations import is_within, normalize_location

#: pylance joins the levels of an object id with it in the manifest table
DELIMITER = "$"


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
        assert isinstance(config, DirConfig)
        # the working directory only matters to a relative root (and costs a system call a table)
        root = _normalized_root(config.root, "" if config.root.startswith("/") else os.getcwd())
        if location == root or not is_within(location, root):
            return f"a dir backend registers only locations inside its root {root} (got {location})"
        return None


@functools.lru_cache(maxsize=16)
def _normalized_root(root: str, cwd: str) -> str:
    """A root as normalize_location spells it (from `cwd` when relative), worked out once:
    manifest checks ask it for every table."""
    return normalize_location(root, cwd)
