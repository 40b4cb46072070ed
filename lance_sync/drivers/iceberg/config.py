"""The Iceberg REST backend's configuration and identifier rules, read offline
(see lance_sync.model.backend_config)."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field, NonNegativeInt, PositiveInt, SecretStr, field_validator, model_validator

from lance_sync.model.backend_config import (
    BackendConfig,
    BackendRules,
    HttpTimeoutsConfig,
    Identifier,
    RenamedKey,
    root_field,
    spec_timeout_field,
)
from lance_sync.model.config_types import HttpUrl

#: joins namespace levels in paths and in the `parent` query parameter
LEVEL_SEPARATOR = "\x1f"
#: names that cannot be a URL path segment (HTTP clients resolve them away) or a level
UNADDRESSABLE_NAMES = frozenset({"", ".", ".."})


class IcebergConfig(HttpTimeoutsConfig):
    endpoint: HttpUrl = Field(description="Iceberg REST endpoint, e.g. http://localhost:8181")
    auth_token: SecretStr | None = Field(None, description="Bearer token; only from ${VAR}")
    credential: SecretStr | None = Field(
        None, description="OAuth2 client credentials 'client_id:client_secret'; only from ${VAR}")
    SPEC_TIMEOUT_UNIT = 0.001

    connect_timeout: PositiveInt = spec_timeout_field(10000, "Connect timeout, milliseconds", "connect_timeout_seconds")
    read_timeout: PositiveInt = spec_timeout_field(30000, "Read timeout, milliseconds", "read_timeout_seconds")
    max_retries: NonNegativeInt = Field(3, description="Retries of failed requests")
    root: str = root_field()

    @field_validator("credential")
    @classmethod
    def _credential_has_both_parts(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and ":" not in value.get_secret_value():
            raise ValueError("must look like 'client_id:client_secret'")
        return value

    @model_validator(mode="after")
    def _one_way_to_authenticate(self) -> IcebergConfig:
        if self.auth_token is not None and self.credential is not None:
            raise ValueError("set auth_token or credential, not both")
        return self


class IcebergRules(BackendRules):
    backend_type = "iceberg"
    config_model = IcebergConfig
    id_delimiter = "."
    #: [warehouse, namespace, ...]
    namespace_levels = (2, None)
    table_namespace_levels = (2, None)
    renamed_keys = {"connect_timeout": RenamedKey("connect_timeout_seconds", "milliseconds", 0.001),
                    "read_timeout": RenamedKey("read_timeout_seconds", "milliseconds", 0.001)}

    @classmethod
    def check_namespace_id(cls, parts: Identifier, config: BackendConfig) -> str | None:
        return name_problem(parts)


def name_problem(parts: Iterable[str]) -> str | None:
    for part in parts:
        if part in UNADDRESSABLE_NAMES:
            return f"iceberg names cannot be empty, '.' or '..' (got {part!r})"
        if LEVEL_SEPARATOR in part:
            return "iceberg names cannot contain the unit separator \\x1f"
    return None
