"""Field types shared by driver configuration models."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field, WithJsonSchema


def _http_url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise ValueError(f"must start with http:// or https:// (got '{value}')")
    return value.rstrip("/")


THRIFT_URI = re.compile(r"^thrift://[^:/]+:[0-9]+$")


def _thrift_uri(value: str) -> str:
    if not value.startswith("thrift://") or ":" not in value[len("thrift://"):]:
        raise ValueError(f"must look like thrift://host:port (got '{value}')")
    port = value.rsplit(":", 1)[1]
    if not port.isdigit():
        raise ValueError(f"port must be a number (got '{port}')")
    if not THRIFT_URI.match(value):
        raise ValueError(f"must look like thrift://host:port (got '{value}')")
    return value


HttpUrl = Annotated[str, AfterValidator(_http_url), Field(json_schema_extra={"pattern": "^https?://"})]
ThriftUri = Annotated[str, AfterValidator(_thrift_uri),
                      Field(json_schema_extra={"pattern": THRIFT_URI.pattern})]
NonEmpty = Annotated[str, Field(min_length=1)]
#: A value of a free-form text map (catalog properties, storage options): the manifest loader
#: keeps it as written, so an unquoted number or boolean is text too, and the schema says so
TextValue = Annotated[str, WithJsonSchema({"type": ["string", "number", "boolean"]})]
