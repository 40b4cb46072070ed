"""Unity Catalog backend (spec: unity.md)."""

from __future__ import annotations

from pydantic import Field, NonNegativeInt, PositiveFloat, SecretStr

from lance_sync.drivers.base import BackendConfig, Identifier, SyncNamespace, default_root
from lance_sync.drivers.config_types import HttpUrl, NonEmpty

DEFAULT_API_PATH = "/api/2.1/unity-catalog"


class UnityConfig(BackendConfig):
    endpoint: HttpUrl = Field(description="Unity Catalog REST endpoint, e.g. http://localhost:8080")
    catalog: NonEmpty = Field(description="The Unity catalog this backend manages (the first identifier level)")
    api_path: str = Field(DEFAULT_API_PATH, description="API path prefix")
    auth_token: SecretStr | None = Field(None, description="Bearer token; only from ${VAR}")
    connect_timeout: PositiveFloat = Field(10, description="HTTP connect timeout, seconds")
    read_timeout: PositiveFloat = Field(60, description="HTTP read timeout, seconds")
    max_retries: NonNegativeInt = Field(3, description="Retries of failed requests")
    root: str = Field(default_factory=default_root,
                      description="Storage root for tables declared without a location (default: cwd)")


class UnityNamespace(SyncNamespace):
    backend_type = "unity"
    config_model = UnityConfig
    namespace_levels = (2, 2)
    table_namespace_levels = (2, 2)

    @classmethod
    def check_namespace_id(cls, parts: Identifier, config: BackendConfig) -> str | None:
        assert isinstance(config, UnityConfig)
        if parts and parts[0] != config.catalog:
            return f"catalog '{parts[0]}' is not the configured catalog '{config.catalog}'"
        return None
