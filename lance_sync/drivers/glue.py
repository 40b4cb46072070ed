"""AWS Glue Data Catalog backend (spec: glue.md)."""

from __future__ import annotations

from pydantic import Field, PositiveInt, SecretStr, model_validator

from lance_sync.drivers.base import BackendConfig, SyncNamespace


class GlueConfig(BackendConfig):
    catalog_id: str | None = Field(None, description="Starting catalog id (default: the caller's account id)")
    endpoint: str | None = Field(None, description="Custom Glue endpoint for API-compatible metastores")
    region: str | None = Field(None, description="AWS region (default: from the environment)")
    access_key_id: SecretStr | None = Field(None, description="Static credentials; only from ${VAR}")
    secret_access_key: SecretStr | None = Field(None, description="Static credentials; only from ${VAR}")
    session_token: SecretStr | None = Field(None, description="Temporary credentials; only from ${VAR}")
    assume_role_arn: str | None = Field(None, description="IAM role to assume for Glue calls")
    assume_role_region: str | None = Field(None, description="Region of the STS client")
    assume_role_external_id: str | None = Field(None, description="External id for cross-account roles")
    assume_role_session_name: str | None = Field(None, description="Session name of the assumed role")
    assume_role_timeout_sec: PositiveInt = Field(
        3600, description="Assumed-role session duration, seconds; refreshed before it ends")

    @model_validator(mode="after")
    def _static_credentials_pair(self) -> GlueConfig:
        if (self.access_key_id is None) != (self.secret_access_key is None):
            raise ValueError("access_key_id and secret_access_key must be given together")
        if self.session_token is not None and self.access_key_id is None:
            raise ValueError("session_token needs access_key_id and secret_access_key")
        return self


class GlueNamespace(SyncNamespace):
    backend_type = "glue"
    config_model = GlueConfig
    #: a catalog, or a catalog chain ending in a database
    namespace_levels = (1, None)
    table_namespace_levels = (2, None)
