"""The directory backend's configuration and identifier rules (offline; see drivers.config)."""

from __future__ import annotations

from pydantic import Field

from lance_sync.drivers.config import BackendConfig, BackendRules, Identifier
from lance_sync.locations import normalize_location, relative_to

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
        if any(DELIMITER in p for p in parts):
            return f"names in a dir backend cannot contain '{DELIMITER}'"
        return None

    @classmethod
    def check_table_name(cls, name: str, config: BackendConfig) -> str | None:
        return cls.check_namespace_id((name,), config)

    @classmethod
    def check_location(cls, location: str, config: BackendConfig) -> str | None:
        assert isinstance(config, DirConfig)
        root = normalize_location(config.root)
        if relative_to(location, root) is None:
            return f"a dir backend registers only locations inside its root {root} (got {location})"
        return None
