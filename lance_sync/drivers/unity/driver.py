"""Unity Catalog backend (spec: unity.md).

Lance ids map onto Unity's fixed hierarchy as [catalog, schema, table]; the catalog is the
configured one and is the only child of the root. A Lance table is an EXTERNAL table with
`data_source_format` TEXT and the property `table_type=lance`; its `columns` describe the
Lance dataset's Arrow schema when one exists at the location (mapping at the end of this
module, documented in docs/backends/unity.md).

An id naming another catalog is refused as InvalidInput by operations that create
(create_namespace, declare_table, register_table), and is "not found" for the rest (the
spec's rule for ListNamespaces), so `mode=Skip` and the reconciler's "absent" logic hold.

Every call goes out through `client.UnityClient` (one per driver, shared with `grants`), which
also resolves ids to UC names and translates error answers at the boundary
(`UnityClient.translate`).

Every answer is parsed where it enters (`client.request(..., expect=Model)`) into a model of
the UC OSS API response (the "answers" section below): a body without that shape is a
BadAnswerError naming the call, retried like a 5xx for reads, never an empty listing.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import lance
import pyarrow as pa
from lance_namespace import (
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    TableExistsRequest,
    TableExistsResponse,
)
from lance_namespace.errors import (
    InternalError,
    InvalidInputError,
    NamespaceNotFoundError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from pydantic import ConfigDict, RootModel, StrictInt, StrictStr, with_config
from typing_extensions import NotRequired, TypedDict

from lance_sync.drivers.base import (
    Capabilities,
    Identifier,
    NamespaceInfo,
    SyncNamespace,
    TableInfo,
)
from lance_sync.drivers.support.answers import Answer
from lance_sync.drivers.support.locations import catalog_url
from lance_sync.drivers.support.paging import follow_pages
from lance_sync.drivers.unity.client import UnityClient, full_name
from lance_sync.drivers.unity.config import UnityConfig, UnityRules
from lance_sync.drivers.unity.grants import UnityGrants, check_grantable, record_place
from lance_sync.model.arrow_types import spark_compatible
from lance_sync.model.grants import GrantMap, RecordPlace, Securable
from lance_sync.model.locations import join_location, normalize_location, scheme
from lance_sync.model.marks import TABLE_TYPE_KEY, is_lance_table, lance_table_properties

#: UC OSS serves at most 100 items per page (PagedListingHelper); schema listings ask for that
#: (the Unity Catalog OpenAPI document allows up to 1000)
PAGE_SIZE = 100
#: the OpenAPI document's maximum of listTables' max_results (UC OSS would take 100; its
#: official client refuses more than 50): table listings keep to the document
TABLE_PAGE_SIZE = 50
EXTERNAL = "EXTERNAL"
#: UC has no LANCE data source format; the spec registers Lance tables as TEXT
DATA_SOURCE_FORMAT = "TEXT"


# --- answers: the UC OSS API responses the driver reads (unitycatalog/unitycatalog api/all.yaml) --
#
# The OpenAPI marks every member optional; the driver requires what it cannot do without: the
# `name` of every catalog, schema and table, and the list of a listing. A null or absent
# next_page_token (or "", as older UC sends) is the last page.
# Empty means `"schemas": []`: UC OSS always sends the list (SchemaRepository.listSchemas), so a body without it is an error.
#
# A table is a TypedDict, checked as strictly as a model: a listing page carries up to 50 of
# them with a dozen members each, and pydantic builds a dict of the members named here in half
# the time it builds a model (which keeps every other member too), less than `json.loads`
# takes for the whole body. A single table's answer is a `OneTableAnswer` around one.


#: what a TypedDict answer keeps: the members it names (inside a model it would take the model's
#: `extra="allow"` and keep every other one too)
NAMED_MEMBERS = ConfigDict(extra="ignore")


@with_config(NAMED_MEMBERS)
class ColumnAnswer(TypedDict, total=False):
    """ColumnInfo."""

    name: StrictStr | None
    type_text: StrictStr | None
    position: StrictInt | None


class CatalogAnswer(Answer):
    """CatalogInfo."""

    name: StrictStr
    properties: dict[str, StrictStr] | None = None


class SchemaAnswer(Answer):
    """SchemaInfo."""

    name: StrictStr
    properties: dict[str, StrictStr] | None = None


@with_config(NAMED_MEMBERS)
class TableAnswer(TypedDict):
    """TableInfo."""

    name: StrictStr
    table_type: NotRequired[StrictStr | None]
    storage_location: NotRequired[StrictStr | None]
    properties: NotRequired[dict[str, StrictStr] | None]
    columns: NotRequired[list[ColumnAnswer] | None]


class OneTableAnswer(RootModel[TableAnswer]):
    """The answer of a call about one table (get, create)."""


class ListSchemasAnswer(Answer):
    """ListSchemasResponse."""

    schemas: list[SchemaAnswer]
    next_page_token: StrictStr | None = None


class UnityTablesAnswer(Answer):
    """ListTablesResponse."""

    tables: list[TableAnswer]
    next_page_token: StrictStr | None = None


class UnityNamespace(UnityRules, SyncNamespace):
    config: UnityConfig
    drops_cascade = True
    bulk_namespace_reads = True

    def __init__(self, config: UnityConfig | None = None, /, **properties: Any) -> None:
        super().__init__(config, **properties)
        self.client = UnityClient(self.config, on_request=self.count_call)
        self.catalog = self.config.catalog
        self.root = normalize_location(self.config.root)
        self.grants = UnityGrants(self.client, UnityRules)

    def namespace_id(self) -> str:
        return f"lance-sync unity {{ endpoint: {self.config.endpoint!r}, catalog: {self.catalog!r} }}"

    def capabilities(self) -> Capabilities:
        # UC OSS has no table PATCH: the planner replaces a table whose properties changed.
        return Capabilities(update_table_properties=False, creatable_namespace_levels=(2, 2), grants=True)

    # --- namespaces --------------------------------------------------------------------------

    def _create_namespace_object(self, id: Identifier, properties: dict[str, str]) -> dict[str, str]:
        catalog, schema = self.client.schema_name(id, other_catalog=InvalidInputError)
        body = {"name": schema, "catalog_name": catalog, "properties": properties}
        return _properties(self.client.request("POST", "/schemas", json=body, expect=SchemaAnswer))

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        parts = self.client.namespace_parts(request.id)
        if not parts:
            return ListNamespacesResponse(namespaces=[self.catalog])
        if len(parts) == 2:  # a schema exists or not, but never has children
            self._get_schema(*parts)
            return ListNamespacesResponse(namespaces=[])
        page = self._schemas_page(request.limit, request.page_token)
        names = sorted(schema.name for schema in page.schemas)
        return ListNamespacesResponse(namespaces=names, page_token=page.next_page_token or None)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        """A schema's properties; the catalog's own for [catalog]; none for the root."""
        parts = self.client.namespace_parts(request.id)
        if not parts:
            return DescribeNamespaceResponse(properties={})
        found = self._get_catalog() if len(parts) == 1 else self._get_schema(*parts)
        return DescribeNamespaceResponse(properties=_properties(found))

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        self.describe_namespace(DescribeNamespaceRequest(id=request.id))
        return NamespaceExistsResponse()

    def _drop_namespace_object(self, id: Identifier, cascade: bool) -> None:
        """Cascade is UC's force delete: it deregisters every table of the schema (data stays)."""
        catalog, schema = self.client.schema_name(id, other_catalog=NamespaceNotFoundError)
        self._delete_schema(catalog, schema, force=cascade)

    # --- tables ------------------------------------------------------------------------------

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        """Register an EXTERNAL TEXT table; columns come from the Lance dataset if one exists.

        Without a location the table goes to `{root}/{catalog}/{schema}/{table}.lance`; a
        relative location is taken from the root. Without a dataset at the location, `columns`
        is empty (UC needs a list: null is a 500).
        """
        catalog, schema, name = self.client.table_name(request.id, other_catalog=InvalidInputError)
        location = join_location(self.root, request.location or f"{catalog}/{schema}/{name}.lance")
        properties = lance_table_properties(request.properties)
        storage_location = catalog_url(location)
        body = {
            "name": name, "catalog_name": catalog, "schema_name": schema,
            "table_type": EXTERNAL, "data_source_format": DATA_SOURCE_FORMAT,
            "storage_location": storage_location,
            "columns": unity_columns(self._dataset_schema(location)),
            "properties": properties,
        }
        created = self.client.request("POST", "/tables", json=body, expect=OneTableAnswer).root
        return DeclareTableResponse(location=created.get("storage_location") or storage_location,
                                    properties=_properties(created) or properties,
                                    storage_options=self.storage_options() or None)

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        """Lance tables only, so a page may hold fewer than `limit` names (even none)."""
        catalog, schema = self.client.schema_name(request.id, other_catalog=NamespaceNotFoundError)
        page = self._tables_page(catalog, schema, request.limit, request.page_token)
        names = sorted(table["name"] for table in page.tables if _is_lance(table))
        return ListTablesResponse(tables=names, page_token=page.next_page_token or None)

    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        """Location and properties from one GET; no Arrow schema (that would read the dataset)."""
        catalog, schema, name = self.client.table_name(request.id, other_catalog=TableNotFoundError)
        table = self._get_lance_table(catalog, schema, name)
        return DescribeTableResponse(table=name, namespace=[catalog, schema],
                                     location=table.get("storage_location"),
                                     properties=_properties(table),
                                     storage_options=self.storage_options() or None)

    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        catalog, schema, name = self.client.table_name(request.id, other_catalog=TableNotFoundError)
        self._get_lance_table(catalog, schema, name)
        return TableExistsResponse()

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        """GET and check that it is a Lance table, then DELETE (UC keeps an EXTERNAL table's data)."""
        catalog, schema, name = self.client.table_name(request.id, other_catalog=TableNotFoundError)
        table = self._get_lance_table(catalog, schema, name)
        self.client.request("DELETE", f"/tables/{full_name(catalog, schema, name)}")
        return DeregisterTableResponse(id=[catalog, schema, name], location=table.get("storage_location"),
                                       properties=_properties(table))

    # --- reconciler extensions -----------------------------------------------------------------

    def update_namespace_properties(self, id: Identifier, updates: dict[str, str],
                                    removals: list[str]) -> None:
        """Read-modify-write: UC's PATCH replaces the whole map and ignores an empty one.

        So the last properties of a schema cannot be removed: that is refused before any
        write, rather than sent and silently ignored. Another writer between the GET and the
        PATCH is overwritten (UC offers no version check).
        """
        catalog, schema = self.client.schema_name(id, other_catalog=NamespaceNotFoundError)
        current = _properties(self._get_schema(catalog, schema))
        wanted = {k: v for k, v in current.items() if k not in removals} | updates
        if wanted == current:
            return
        if not wanted:
            raise UnsupportedOperationError(
                f"unity: cannot remove every property of schema {catalog}.{schema} "
                f"({', '.join(sorted(current))}): Unity Catalog ignores an empty properties map")
        # the PATCH carries the whole map, so sending it again leaves the same state
        self.client.request("PATCH", f"/schemas/{full_name(catalog, schema)}", json={"properties": wanted},
                            expect=SchemaAnswer, retry_safe=True)

    def replace_namespace_properties(self, id: Identifier, properties: dict[str, str]) -> None:
        """One PATCH, which replaces the whole map in UC; no properties at all is a read-modify-write
        (UC ignores an empty map, see update_namespace_properties)."""
        if not properties:
            super().replace_namespace_properties(id, properties)
            return
        catalog, schema = self.client.schema_name(id, other_catalog=NamespaceNotFoundError)
        self.client.request("PATCH", f"/schemas/{full_name(catalog, schema)}", json={"properties": properties},
                            expect=SchemaAnswer, retry_safe=True)

    def list_namespace_infos(self, parent: Identifier) -> Iterator[NamespaceInfo]:
        """One call per page of schemas (they carry their properties); the catalog for the root."""
        parts = self.client.namespace_parts(parent)
        if not parts:
            yield NamespaceInfo((self.catalog,), _properties(self._get_catalog()))
            return
        if len(parts) == 2:
            self._get_schema(*parts)
            return

        def fetch(token: str | None) -> tuple[list[NamespaceInfo], str | None]:
            page = self._schemas_page(PAGE_SIZE, token)
            infos = [NamespaceInfo((self.catalog, schema.name), _properties(schema)) for schema in page.schemas]
            return infos, page.next_page_token

        yield from follow_pages(fetch)

    def get_namespace_infos(self, ids: list[Identifier]) -> list[NamespaceInfo | None]:
        """Schemas of the configured catalog from schema listing pages (100 a page, with their
        properties) while that takes fewer calls than one GET each; the others one by one."""
        wanted: dict[str, Identifier] = {id[1]: id for id in ids
                                          if len(id) == 2 and id[0] == self.catalog and id[1] and "." not in id[1]}
        found: dict[Identifier, NamespaceInfo] = {}
        with contextlib.suppress(NamespaceNotFoundError):  # no such catalog: each id says so
            found = self._listed_schemas(wanted)
        return [found[id] if id in found else self.get_namespace_info(id) for id in ids]

    def _listed_schemas(self, wanted: dict[str, Identifier]) -> dict[Identifier, NamespaceInfo]:
        """The `wanted` schemas (name -> id) found in listing pages, paging while fewer pages
        were read than schemas are still wanted."""
        found: dict[Identifier, NamespaceInfo] = {}
        token: str | None = None
        pages = 0
        while len(wanted) > max(pages, 1):
            page = self._schemas_page(PAGE_SIZE, token)
            pages += 1
            for schema in page.schemas:
                id = wanted.pop(schema.name, None)
                if id is not None:
                    found[id] = NamespaceInfo(id, _properties(schema))
            token = page.next_page_token
            if not token:
                break
        return found

    def list_table_infos(self, namespace: Identifier) -> Iterator[TableInfo]:
        """Every table of the schema, one call per page; non-Lance ones with is_lance=False."""
        catalog, schema = self.client.schema_name(namespace, other_catalog=NamespaceNotFoundError)

        def fetch(token: str | None) -> tuple[list[TableInfo], str | None]:
            page = self._tables_page(catalog, schema, PAGE_SIZE, token)
            infos = [TableInfo((catalog, schema, table["name"]), table.get("storage_location"),
                               _properties(table), is_lance=_is_lance(table), columns=_recorded_columns(table))
                     for table in page.tables]
            return infos, page.next_page_token

        yield from follow_pages(fetch)

    # --- grants (drivers/unity/grants.py) ------------------------------------------------------

    def list_grants(self, kind: Securable, id: Identifier) -> GrantMap:
        return self.grants.list(*self.client.securable(kind, id))

    def grants_record_place(self, kind: Securable, id: Identifier) -> RecordPlace:
        return record_place(kind, id)

    def change_grants(self, kind: Securable, id: Identifier, principal: str,
                      grant: frozenset[str], revoke: frozenset[str]) -> None:
        securable_type, securable_name = self.client.securable(kind, id)
        grant = frozenset(self.canonical_privilege(p) for p in grant)
        check_grantable(securable_type, grant, self.grant_privileges(kind, tuple(id), self.config))
        revoke = frozenset(self.canonical_privilege(p) for p in revoke)
        self.grants.change(securable_type, securable_name, principal, grant, revoke)

    def catalog_columns(self, schema: pa.Schema) -> list[dict[str, str]]:
        return [{"name": c["name"], "type": c["type_text"]} for c in unity_columns(schema)]

    # --- requests --------------------------------------------------------------------------------

    def _get_catalog(self) -> CatalogAnswer:
        return self.client.request("GET", f"/catalogs/{full_name(self.catalog)}", expect=CatalogAnswer)

    def _get_schema(self, catalog: str, schema: str) -> SchemaAnswer:
        return self.client.request("GET", f"/schemas/{full_name(catalog, schema)}", expect=SchemaAnswer)

    def _delete_schema(self, catalog: str, schema: str, force: bool) -> None:
        self.client.request("DELETE", f"/schemas/{full_name(catalog, schema)}",
                            params={"force": "true"} if force else None)

    def _schemas_page(self, limit: int | None, token: str | None) -> ListSchemasAnswer:
        return self.client.request("GET", "/schemas", expect=ListSchemasAnswer, params={
            "catalog_name": self.catalog, "max_results": limit if limit is not None else PAGE_SIZE,
            "page_token": token})

    def _tables_page(self, catalog: str, schema: str, limit: int | None, token: str | None) -> UnityTablesAnswer:
        return self.client.request("GET", "/tables", expect=UnityTablesAnswer, params={
            "catalog_name": catalog, "schema_name": schema,
            "max_results": min(limit, TABLE_PAGE_SIZE) if limit else TABLE_PAGE_SIZE, "page_token": token})

    def _get_lance_table(self, catalog: str, schema: str, name: str) -> TableAnswer:
        """The table's TableInfo; TableNotFound also when its schema or catalog is missing."""
        qualified = full_name(catalog, schema, name)
        try:
            table: TableAnswer = self.client.request("GET", f"/tables/{qualified}", expect=OneTableAnswer).root
        except NamespaceNotFoundError as error:
            raise TableNotFoundError(f"unity: table {qualified} not found: {error}") from error
        if not _is_lance(table):
            raise InvalidInputError(f"unity: table {qualified} is not a Lance table "
                                    f"(table_type {table.get('table_type')}, properties.{TABLE_TYPE_KEY}="
                                    f"{_properties(table).get(TABLE_TYPE_KEY)!r})")
        return table

    def _dataset_schema(self, location: str) -> pa.Schema | None:
        """The Arrow schema of the Lance dataset at `location`; None when there is none. A local
        path that does not exist holds none: one stat says so, where opening the dataset would
        cost as much client CPU as the create it describes (docs/benchmarks.md)."""
        if scheme(location) is None and not os.path.lexists(location):
            return None
        try:
            return lance.dataset(location, storage_options=self.storage_options() or None).schema
        except (ValueError, OSError) as error:
            if "not found" in str(error).lower():
                return None
            raise InternalError(f"unity: cannot read the Lance dataset at {location} "
                                f"to describe its columns: {error}") from error


def _properties(info: CatalogAnswer | SchemaAnswer | TableAnswer) -> dict[str, str]:
    """An object's properties; none when UC leaves the map out (as listings may). A table's
    are the answer's own dict (built for it by the parse), a catalog's or schema's a copy."""
    if isinstance(info, dict):
        return info.get("properties") or {}
    return dict(info.properties or {})


def _is_lance(table: TableAnswer) -> bool:
    """The spec's test: EXTERNAL, and properties.table_type equal to 'lance' in any case."""
    return table.get("table_type") == EXTERNAL and is_lance_table(_properties(table))


def _recorded_columns(table: TableAnswer) -> list[dict[str, str | None]]:
    """The columns Unity records for a table, as {name, type_text} in position order."""
    columns = sorted(table.get("columns") or [], key=lambda c: c.get("position") or 0)
    return [{"name": c.get("name"), "type": c.get("type_text")} for c in columns]


# --- Arrow schema -> Unity columns ---------------------------------------------------------------
#
# Each Arrow type becomes the Spark type Unity readers expect: `type_name` (UC's ColumnTypeName),
# `type_text` (Spark's catalog string) and `type_json` (a Spark StructField as JSON, which UC
# 0.5+ validates). Types Spark lacks are widened as the Spark data plane widens them
# (arrow_types.spark_compatible); types with no Spark equivalent (time, duration, interval,
# union, decimals above 38 digits) are recorded as USER_DEFINED_TYPE with Arrow's own type
# name as text.

@dataclass(frozen=True)
class SparkType:
    type_name: str
    text: str
    json: str | dict[str, Any]
    precision: int | None = None
    scale: int | None = None


_SIMPLE_TYPES: tuple[tuple[tuple[Any, ...], SparkType], ...] = (
    ((pa.types.is_boolean,), SparkType("BOOLEAN", "boolean", "boolean")),
    ((pa.types.is_int8,), SparkType("BYTE", "tinyint", "byte")),
    ((pa.types.is_int16,), SparkType("SHORT", "smallint", "short")),
    ((pa.types.is_int32,), SparkType("INT", "int", "integer")),
    ((pa.types.is_int64,), SparkType("LONG", "bigint", "long")),
    ((pa.types.is_float32,), SparkType("FLOAT", "float", "float")),
    ((pa.types.is_float64,), SparkType("DOUBLE", "double", "double")),
    ((pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view),
     SparkType("STRING", "string", "string")),
    ((pa.types.is_binary, pa.types.is_large_binary, pa.types.is_binary_view, pa.types.is_fixed_size_binary),
     SparkType("BINARY", "binary", "binary")),
    ((pa.types.is_date,), SparkType("DATE", "date", "date")),
    ((pa.types.is_null,), SparkType("NULL", "void", "void")),
)
_LIST_TYPES = (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list,
               pa.types.is_list_view, pa.types.is_large_list_view)
_MAX_DECIMAL_PRECISION = 38


def unity_columns(schema: pa.Schema | None) -> list[dict[str, Any]]:
    """UC ColumnInfo dicts for an Arrow schema; [] for None (no dataset yet)."""
    columns = []
    for position, field in enumerate(schema or []):
        spark = spark_type(field.type)
        column = {
            "name": field.name, "type_name": spark.type_name, "type_text": spark.text,
            "type_json": json.dumps(_struct_field(field.name, spark, field.nullable)),
            "position": position, "nullable": field.nullable,
        }
        if spark.precision is not None:
            column.update(type_precision=spark.precision, type_scale=spark.scale)
        columns.append(column)
    return columns


def spark_type(arrow_type: pa.DataType) -> SparkType:
    if pa.types.is_run_end_encoded(arrow_type):
        return spark_type(arrow_type.value_type)  # an encoding of its value type
    if isinstance(arrow_type, pa.ExtensionType):
        return spark_type(arrow_type.storage_type)
    arrow_type = spark_compatible(arrow_type)
    for predicates, spark in _SIMPLE_TYPES:
        if any(predicate(arrow_type) for predicate in predicates):
            return spark
    if pa.types.is_timestamp(arrow_type):
        return SparkType("TIMESTAMP", "timestamp", "timestamp") if arrow_type.tz else \
            SparkType("TIMESTAMP_NTZ", "timestamp_ntz", "timestamp_ntz")
    if pa.types.is_decimal(arrow_type) and 0 <= arrow_type.scale <= arrow_type.precision <= _MAX_DECIMAL_PRECISION:
        return _decimal(arrow_type.precision, arrow_type.scale)
    if any(predicate(arrow_type) for predicate in _LIST_TYPES):
        element = spark_type(arrow_type.value_type)
        return SparkType("ARRAY", f"array<{element.text}>", {
            "type": "array", "elementType": element.json, "containsNull": arrow_type.value_field.nullable})
    if pa.types.is_map(arrow_type):
        key, value = spark_type(arrow_type.key_type), spark_type(arrow_type.item_type)
        return SparkType("MAP", f"map<{key.text},{value.text}>", {
            "type": "map", "keyType": key.json, "valueType": value.json,
            "valueContainsNull": arrow_type.item_field.nullable})
    if pa.types.is_struct(arrow_type):
        fields = [(f, spark_type(f.type)) for f in arrow_type]
        text = ",".join(f"{_quoted(f.name)}:{spark.text}" for f, spark in fields)
        return SparkType("STRUCT", f"struct<{text}>", {
            "type": "struct", "fields": [_struct_field(f.name, spark, f.nullable) for f, spark in fields]})
    return SparkType("USER_DEFINED_TYPE", str(arrow_type), str(arrow_type))


def _decimal(precision: int, scale: int) -> SparkType:
    text = f"decimal({precision},{scale})"
    return SparkType("DECIMAL", text, text, precision, scale)


def _struct_field(name: str, spark: SparkType, nullable: bool) -> dict[str, Any]:
    return {"name": name, "type": spark.json, "nullable": nullable, "metadata": {}}


def _quoted(name: str) -> str:
    """Spark's quoting of a field name in a type string."""
    if name and name.replace("_", "a").isalnum() and name.isascii() and not name.isdigit():
        return name
    return "`" + name.replace("`", "``") + "`"
