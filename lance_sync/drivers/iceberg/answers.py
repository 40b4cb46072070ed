"""The REST responses the Iceberg driver reads (apache/iceberg open-api/rest-catalog-open-api.yaml).

Every answer is parsed where it enters (`IcebergClient.send(..., expect=Model)`) into one
of these models: a body without that shape is a BadAnswerError naming the call, retried like
a 5xx for reads, never an empty listing.

Members the OpenAPI requires are required; optional ones keep the meaning the spec gives
their absence (no next-page-token: the last page; no table properties: none). `namespaces`
and `identifiers` are optional in the OpenAPI but their absence has no meaning there, and
both reference clients (Java's ListNamespacesResponse.validate, pyiceberg) refuse it: a body
without them is not a listing, so it can never read as an empty one.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictInt, StrictStr

from lance_sync.drivers.support.answers import Answer

#: the config key (in `overrides`, else `defaults`) naming the warehouse's path prefix
PREFIX_KEY = "prefix"

StringMap = dict[str, StrictStr]
#: a namespace as the API writes it, outermost level first
Levels = Annotated[list[StrictStr], Field(min_length=1)]


class CatalogConfig(Answer):
    """GET /v1/config: both maps are required; a prefix in neither means the warehouse name."""

    defaults: StringMap
    overrides: StringMap

    def prefix(self) -> str | None:
        return self.overrides.get(PREFIX_KEY) or self.defaults.get(PREFIX_KEY)


class ListNamespacesAnswer(Answer):
    """ListNamespacesResponse."""

    namespaces: list[Levels]
    next_page_token: StrictStr | None = Field(None, alias="next-page-token")


class NamespaceAnswer(Answer):
    """GetNamespaceResponse and CreateNamespaceResponse; null properties: the server keeps none."""

    namespace: list[StrictStr]
    properties: StringMap | None = None


class TableIdentifier(Answer):
    namespace: list[StrictStr]
    name: StrictStr


class IcebergTablesAnswer(Answer):
    """ListTablesResponse."""

    identifiers: list[TableIdentifier]
    next_page_token: StrictStr | None = Field(None, alias="next-page-token")


class TableMetadata(Answer):
    """The members of TableMetadata the driver reads. `location` is optional in the OpenAPI but
    required by the table spec, and a Lance table is its location."""

    format_version: StrictInt = Field(alias="format-version", ge=1)
    table_uuid: StrictStr = Field(alias="table-uuid")
    location: StrictStr
    properties: StringMap = Field(default_factory=dict)


class LoadTableAnswer(Answer):
    """LoadTableResult: the answer to a load and to a create."""

    metadata: TableMetadata


class CommitTableAnswer(Answer):
    """CommitTableResponse."""

    metadata_location: StrictStr = Field(alias="metadata-location")
    metadata: TableMetadata


class LeaseTableMetadata(Answer):
    """The members of a lease table's TableMetadata that its register reads."""

    table_uuid: StrictStr = Field(alias="table-uuid")
    current_schema_id: StrictInt = Field(alias="current-schema-id")
    properties: StringMap = Field(default_factory=dict)

    def version(self) -> str:
        return f"{self.table_uuid}/{self.current_schema_id}"


class LeaseTableAnswer(Answer):
    """LoadTableResult (a load, a create) and CommitTableResponse (a commit) of the lease table."""

    metadata: LeaseTableMetadata


class UpdateNamespacePropertiesAnswer(Answer):
    """UpdateNamespacePropertiesResponse."""

    updated: list[StrictStr]
    removed: list[StrictStr]


class OAuthTokenAnswer(Answer):
    """OAuthTokenResponse (RFC 6749 5.1); `expires_in` in seconds, absent: no known expiry."""

    access_token: StrictStr = Field(min_length=1)
    token_type: StrictStr
    expires_in: int | None = None  # not strict: some token servers send "3599"
