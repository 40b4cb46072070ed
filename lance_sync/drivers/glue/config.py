"""The AWS Glue backend's configuration and identifier rules, read offline
(see lance_sync.model.backend_config)."""

from __future__ import annotations

import re

from pydantic import Field, SecretStr, model_validator

from lance_sync.model.backend_config import BackendConfig, BackendRules, Identifier
from lance_sync.model.config_types import HttpUrl, NonEmpty

#: STS AssumeRole DurationSeconds range
MIN_ROLE_SESSION_SEC, MAX_ROLE_SESSION_SEC = 900, 43200
ACCOUNT_ID = re.compile(r"\d{12}")
ROLE_ARN = re.compile(r"arn:[\w-]+:iam::\d{12}:role/.+")
#: characters a catalog name cannot hold here: Glue forbids '/', and both build CatalogIds
CATALOG_ID_SEPARATORS = ("/", ":")
LOWER_CASE_ONLY = "Glue stores names in lower case; write them in lower case"


class GlueConfig(BackendConfig):
    catalog_id: NonEmpty | None = Field(
        None, description="Starting catalog id (default: the caller's account id)")
    endpoint: HttpUrl | None = Field(
        None, description="Custom Glue endpoint for API-compatible metastores")
    region: str | None = Field(None, description="AWS region (default: from the environment)")
    access_key_id: SecretStr | None = Field(None, description="Static credentials; only from ${VAR}")
    secret_access_key: SecretStr | None = Field(None, description="Static credentials; only from ${VAR}")
    session_token: SecretStr | None = Field(None, description="Temporary credentials; only from ${VAR}")
    assume_role_arn: str | None = Field(None, description="IAM role to assume for Glue calls")
    assume_role_region: str | None = Field(None, description="Region of the STS client")
    assume_role_external_id: str | None = Field(None, description="External id for cross-account roles")
    assume_role_session_name: str | None = Field(None, description="Session name of the assumed role")
    assume_role_timeout_sec: int = Field(
        3600, ge=MIN_ROLE_SESSION_SEC, le=MAX_ROLE_SESSION_SEC,
        description="Assumed-role session duration, seconds; refreshed before it ends")
    root: str | None = Field(
        None, description="lance-sync extension: storage root for tables declared without a "
        "location in a database that has no LocationUri ({root}/{namespace...}/{table}.lance)")

    @model_validator(mode="after")
    def _consistent(self) -> GlueConfig:
        if (self.access_key_id is None) != (self.secret_access_key is None):
            raise ValueError("access_key_id and secret_access_key must be given together")
        if self.session_token is not None and self.access_key_id is None:
            raise ValueError("session_token needs access_key_id and secret_access_key")
        role_options = [name for name in ("assume_role_region", "assume_role_external_id",
                                          "assume_role_session_name")
                        if getattr(self, name) is not None]
        if role_options and self.assume_role_arn is None:
            raise ValueError(f"{', '.join(role_options)} need(s) assume_role_arn")
        if self.assume_role_arn is not None and not ROLE_ARN.fullmatch(self.assume_role_arn):
            raise ValueError("assume_role_arn must look like arn:aws:iam::123456789012:role/name")
        if self.endpoint is not None and self.catalog_id is None:
            raise ValueError("catalog_id is required with endpoint: the caller's account id is "
                             "resolved through AWS STS, which a custom endpoint need not serve")
        return self


class GlueRules(BackendRules):
    backend_type = "glue"
    config_model = GlueConfig
    #: a catalog, or a catalog chain ending in a database
    namespace_levels = (1, None)
    table_namespace_levels = (2, None)
    checks_read = frozenset({"catalog_id"})

    @classmethod
    def check_namespace_id(cls, parts: Identifier, config: BackendConfig) -> str | None:
        assert isinstance(config, GlueConfig)
        if any(not name for name in parts):
            return "names cannot be empty"
        leads_with_root = bool(parts) and parts[0] == config.catalog_id
        if leads_with_root and len(parts) > 2:
            return (f"'{parts[0]}' is the root catalog: its databases are '{parts[0]}$<database>' "
                    "and its child catalogs are level-1 names")
        named = parts[1:] if leads_with_root else parts
        catalogs = named[:-1] if len(parts) > 1 else named
        if any(sep in name for name in catalogs for sep in CATALOG_ID_SEPARATORS):
            return "catalog names cannot contain '/' or ':'"
        if any(name != name.lower() for name in named):
            return LOWER_CASE_ONLY
        return None

    @classmethod
    def check_table_name(cls, name: str, config: BackendConfig) -> str | None:
        if name != name.lower():
            return LOWER_CASE_ONLY
        return None
