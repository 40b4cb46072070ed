"""The Unity Catalog backend's configuration and identifier rules, read offline
(see lance_sync.model.backend_config)."""

from __future__ import annotations

import re

from pydantic import Field, NonNegativeInt, PositiveFloat, SecretStr

from lance_sync.model.backend_config import (
    BackendConfig,
    BackendRules,
    HttpTimeoutsConfig,
    Identifier,
    RenamedKey,
    root_field,
    spec_timeout_field,
)
from lance_sync.model.config_types import HttpUrl, NonEmpty
from lance_sync.model.grants import ParentNeed, Securable

DEFAULT_API_PATH = "/api/2.1/unity-catalog"
#: what UC OSS accepts as a schema or table name (ValidationUtils)
VALID_NAME = re.compile(r"[a-zA-Z0-9_@-]+")

# --- grants: UC's Privilege enum (api/all.yaml), spelled as the wire carries it -------------------
#
# UC OSS applies a privilege held on a catalog or schema to the objects in it (its authorizer's
# object hierarchy), so a catalog or schema may also hold what its tables use. Privileges of
# objects lance-sync does not manage (functions, volumes, models) are grantable on the
# namespaces that hold them; OWNER is UC's own and cannot be sent.
USE_CATALOG, USE_SCHEMA = "USE CATALOG", "USE SCHEMA"
TABLE_PRIVILEGES = frozenset({"SELECT", "MODIFY"})
SCHEMA_PRIVILEGES = TABLE_PRIVILEGES | {
    USE_SCHEMA, "CREATE TABLE", "CREATE FUNCTION", "CREATE VOLUME", "CREATE MODEL", "EXECUTE", "READ VOLUME"}
CATALOG_PRIVILEGES = SCHEMA_PRIVILEGES | {USE_CATALOG, "CREATE SCHEMA"}


class UnityConfig(HttpTimeoutsConfig):
    endpoint: HttpUrl = Field(description="Unity Catalog REST endpoint, e.g. http://localhost:8080")
    catalog: NonEmpty = Field(description="The Unity catalog this backend manages (the first identifier level)")
    api_path: str = Field(DEFAULT_API_PATH, description="API path prefix")
    auth_token: SecretStr | None = Field(None, description="Bearer token; only from ${VAR}")
    connect_timeout: PositiveFloat = spec_timeout_field(10, "HTTP connect timeout, seconds", "connect_timeout_seconds")
    read_timeout: PositiveFloat = spec_timeout_field(60, "HTTP read timeout, seconds", "read_timeout_seconds")
    max_retries: NonNegativeInt = Field(3, description="Retries of failed requests")
    root: str = root_field()


class UnityRules(BackendRules):
    backend_type = "unity"
    config_model = UnityConfig
    namespace_levels = (2, 2)
    table_namespace_levels = (2, 2)
    checks_read = frozenset({"catalog"})
    #: UC OSS applies a privilege held on a catalog or schema to the objects in it
    grants_inherit = True
    renamed_keys = {"connect_timeout": RenamedKey("connect_timeout_seconds", "seconds", 1.0),
                    "read_timeout": RenamedKey("read_timeout_seconds", "seconds", 1.0)}

    @classmethod
    def check_namespace_id(cls, parts: Identifier, config: BackendConfig) -> str | None:
        assert isinstance(config, UnityConfig)
        if parts and parts[0] != config.catalog:
            return f"catalog '{parts[0]}' is not the configured catalog '{config.catalog}'"
        return next((_name_problem(name) for name in parts[1:] if _name_problem(name)), None)

    @classmethod
    def check_table_name(cls, name: str, config: BackendConfig) -> str | None:
        return _name_problem(name)

    # --- grants: a catalog (catalog,), a schema (catalog, schema), a table ---------------------

    @classmethod
    def grant_privileges(cls, kind: Securable, id: Identifier, config: BackendConfig) -> frozenset[str]:
        if kind == "table":
            return TABLE_PRIVILEGES if len(id) == 3 else frozenset()
        return {1: CATALOG_PRIVILEGES, 2: SCHEMA_PRIVILEGES}.get(len(id), frozenset())

    @classmethod
    def canonical_privilege(cls, privilege: str) -> str:
        """UC's spelling: upper case, words separated by one space ('use_schema' -> 'USE SCHEMA')."""
        return " ".join(privilege.replace("_", " ").upper().split())

    @classmethod
    def check_principal(cls, principal: str, config: BackendConfig) -> str | None:
        """UC names a principal by its user's e-mail, exactly as it was created."""
        if not principal.strip():
            return "a principal cannot be empty"
        if principal != principal.strip():
            return f"a Unity principal has no leading or trailing spaces (got {principal!r})"
        return None

    @classmethod
    def parent_needs(cls, kind: Securable, id: Identifier, config: BackendConfig) -> list[ParentNeed]:
        """USE SCHEMA on a table's schema, and USE CATALOG on the catalog of either."""
        needs = []
        if kind == "table" and len(id) == 3:
            needs.append(ParentNeed(id[:2], frozenset({USE_SCHEMA})))
        if (kind == "table" and len(id) == 3) or (kind == "namespace" and len(id) == 2):
            needs.append(ParentNeed(id[:1], frozenset({USE_CATALOG})))
        return needs


def _name_problem(name: str) -> str | None:
    """UC OSS refuses other names with 400 INVALID_ARGUMENT; say so before anything is sent."""
    if VALID_NAME.fullmatch(name):
        return None
    return f"Unity names take letters, digits, '_', '@' and '-' only (got {name!r})"
