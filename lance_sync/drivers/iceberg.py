"""Apache Iceberg REST Catalog backend (spec: iceberg-rest.md)."""

from __future__ import annotations

from pydantic import Field, NonNegativeInt, PositiveInt, SecretStr

from lance_sync.drivers.base import BackendConfig, SyncNamespace, default_root
from lance_sync.drivers.config_types import HttpUrl


class IcebergConfig(BackendConfig):
    endpoint: HttpUrl = Field(description="Iceberg REST endpoint, e.g. http://localhost:8181")
    auth_token: SecretStr | None = Field(None, description="Bearer token; only from ${VAR}")
    credential: SecretStr | None = Field(
        None, description="OAuth2 client credentials 'client_id:client_secret'; only from ${VAR}")
    connect_timeout: PositiveInt = Field(10000, description="Connect timeout, milliseconds")
    read_timeout: PositiveInt = Field(30000, description="Read timeout, milliseconds")
    max_retries: NonNegativeInt = Field(3, description="Retries of failed requests")
    root: str = Field(default_factory=default_root,
                      description="Storage root for tables declared without a location (default: cwd)")


class IcebergNamespace(SyncNamespace):
    backend_type = "iceberg"
    config_model = IcebergConfig
    id_delimiter = "."
    #: [warehouse, namespace, ...]
    namespace_levels = (2, None)
    table_namespace_levels = (2, None)
