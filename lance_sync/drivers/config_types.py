"""Field types shared by driver configuration models."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field


def _http_url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise ValueError(f"must start with http:// or https:// (got '{value}')")
    return value.rstrip("/")


def _thrift_uri(value: str) -> str:
    if not value.startswith("thrift://") or ":" not in value[len("thrift://"):]:
        raise ValueError(f"must look like thrift://host:port (got '{value}')")
    port = value.rsplit(":", 1)[1]
    if not port.isdigit():
        raise ValueError(f"port must be a number (got '{port}')")
    return value


HttpUrl = Annotated[str, AfterValidator(_http_url), Field(json_schema_extra={"pattern": "^https?://"})]
ThriftUri = Annotated[str, AfterValidator(_thrift_uri),
                      Field(json_schema_extra={"pattern": "^thrift://[^:/]+:[0-9]+$"})]
NonEmpty = Annotated[str, Field(min_length=1)]
