"""Request bodies read the way UC's Jackson mapper reads them.

Unknown fields are ignored; scalars are coerced into string fields; an enum
value outside the OpenAPI enum, a malformed body or a value of the wrong shape
is refused with 400 INVALID_ARGUMENT. A field left out takes the generated
model's default (`{}` for maps, `[]` for lists, `nullable: true` for a column);
an explicit `null` stays null.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.servers.unity_server.errors import UcError

TABLE_TYPES = ("MANAGED", "EXTERNAL", "STREAMING_TABLE", "MATERIALIZED_VIEW", "METRIC_VIEW", "VIEW")
#: the DataSourceFormat enum of the Unity Catalog OpenAPI document (api/all.yaml, v0.6.0): no
#: ICEBERG (unitycatalog-client 0.7 has it; UC OSS 0.6 refuses it with 400)
DATA_SOURCE_FORMATS = ("DELTA", "CSV", "JSON", "AVRO", "PARQUET", "ORC", "TEXT")
COLUMN_TYPE_NAMES = (
    "BOOLEAN", "BYTE", "SHORT", "INT", "LONG", "FLOAT", "DOUBLE", "DATE", "TIMESTAMP",
    "TIMESTAMP_NTZ", "STRING", "BINARY", "DECIMAL", "INTERVAL", "ARRAY", "STRUCT", "MAP",
    "VARIANT", "CHAR", "NULL", "USER_DEFINED_TYPE", "TABLE_TYPE",
)

Reader = Callable[[Any, str], Any]


class _Refused(Exception):
    """A JSON value the Java model cannot take."""


@dataclass(frozen=True)
class Field:
    read: Reader
    default: Any = None


@dataclass(frozen=True)
class Model:
    java_name: str
    fields: dict[str, Field]

    def read(self, value: Any, where: str) -> dict:
        if not isinstance(value, dict):
            raise _Refused(f"Cannot deserialize value of type `{self.java_name}` from {_json_kind(value)} value")
        return {
            name: field.read(value[name], f"{where}[\"{name}\"]") if name in value else _fresh(field.default)
            for name, field in self.fields.items()
        }


def read_body(raw: bytes, model: Model) -> dict:
    """The request body as the model's fields; UcError(INVALID_ARGUMENT) when Jackson would fail."""
    try:
        document = json.loads(raw.decode("utf-8")) if raw.strip() else None
    except (UnicodeDecodeError, ValueError) as error:
        raise UcError("INVALID_ARGUMENT", f"Failed to parse JSON request body: {error}") from error
    if document is None:
        raise UcError("INVALID_ARGUMENT", f"A request body of type `{model.java_name}` is required")
    try:
        return model.read(document, model.java_name)
    except _Refused as error:
        raise UcError("INVALID_ARGUMENT", str(error)) from error


def string(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    raise _Refused(f"Cannot deserialize value of type `java.lang.String` from {_json_kind(value)} value "
                   f"(through reference chain: {where})")


def integer(value: Any, where: str) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value)
    raise _Refused(f"Cannot deserialize value of type `java.lang.Integer` from {_json_kind(value)} value "
                   f"(through reference chain: {where})")


def boolean(value: Any, where: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise _Refused(f"Cannot deserialize value of type `java.lang.Boolean` from {_json_kind(value)} value "
                   f"(through reference chain: {where})")


def enum(java_name: str, values: tuple[str, ...]) -> Reader:
    def read(value: Any, where: str) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str) or value not in values:
            raise _Refused(f"Cannot construct instance of `io.unitycatalog.server.model.{java_name}`, "
                           f"problem: Unexpected value '{value}' (through reference chain: {where})")
        return value
    return read


def string_map(value: Any, where: str) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _Refused(f"Cannot deserialize value of type `java.util.Map` from {_json_kind(value)} value "
                       f"(through reference chain: {where})")
    return {key: string(item, f"{where}[\"{key}\"]") for key, item in value.items()}


def list_of(model: Model) -> Reader:
    def read(value: Any, where: str) -> list | None:
        if value is None:
            return None
        if not isinstance(value, list):
            raise _Refused(f"Cannot deserialize value of type `java.util.List` from {_json_kind(value)} value "
                           f"(through reference chain: {where})")
        return [None if item is None else model.read(item, f"{where}[{index}]")
                for index, item in enumerate(value)]
    return read


def nested(model: Model) -> Reader:
    def read(value: Any, where: str) -> dict | None:
        return None if value is None else model.read(value, where)
    return read


def _fresh(default: Any) -> Any:
    """A new copy of a container default, as every Java model instance gets its own."""
    return type(default)() if isinstance(default, (dict, list)) else default


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "Object"
    if isinstance(value, list):
        return "Array"
    if isinstance(value, str):
        return "String"
    if isinstance(value, bool):
        return "Boolean"
    return "Number"


_PROPERTIES = Field(string_map, default={})

CREATE_CATALOG = Model("CreateCatalog", {
    "name": Field(string), "comment": Field(string), "properties": _PROPERTIES,
    "storage_root": Field(string),
})
UPDATE_CATALOG = Model("UpdateCatalog", {
    "comment": Field(string), "properties": _PROPERTIES, "new_name": Field(string),
})
CREATE_SCHEMA = Model("CreateSchema", {
    "name": Field(string), "catalog_name": Field(string), "comment": Field(string),
    "properties": _PROPERTIES, "storage_root": Field(string),
})
UPDATE_SCHEMA = Model("UpdateSchema", {
    "comment": Field(string), "properties": _PROPERTIES, "new_name": Field(string),
})
COLUMN_INFO = Model("ColumnInfo", {
    "name": Field(string), "type_text": Field(string), "type_json": Field(string),
    "type_name": Field(enum("ColumnTypeName", COLUMN_TYPE_NAMES)),
    "type_precision": Field(integer), "type_scale": Field(integer),
    "type_interval_type": Field(string), "position": Field(integer), "comment": Field(string),
    "nullable": Field(boolean, default=True), "partition_index": Field(integer),
})
_DEPENDENCY = Model("Dependency", {
    "table": Field(nested(Model("TableDependency", {"table_full_name": Field(string)}))),
    "function": Field(nested(Model("FunctionDependency", {"function_full_name": Field(string)}))),
})
DEPENDENCY_LIST = Model("DependencyList", {"dependencies": Field(list_of(_DEPENDENCY), default=[])})
CREATE_TABLE = Model("CreateTable", {
    "name": Field(string), "catalog_name": Field(string), "schema_name": Field(string),
    "table_type": Field(enum("TableType", TABLE_TYPES)),
    "data_source_format": Field(enum("DataSourceFormat", DATA_SOURCE_FORMATS)),
    "columns": Field(list_of(COLUMN_INFO), default=[]), "storage_location": Field(string),
    "comment": Field(string), "properties": _PROPERTIES, "view_definition": Field(string),
    "view_dependencies": Field(nested(DEPENDENCY_LIST)),
})

#: UC's Privilege enum (api/all.yaml): the values, with spaces, are what the wire carries.
#: OWNER exists only inside the server and cannot be sent.
PRIVILEGES = (
    "CREATE CATALOG", "USE CATALOG", "CREATE SCHEMA", "USE SCHEMA", "CREATE TABLE", "SELECT", "MODIFY",
    "CREATE FUNCTION", "EXECUTE", "CREATE VOLUME", "READ VOLUME", "CREATE MODEL",
    "CREATE EXTERNAL LOCATION", "READ FILES", "WRITE FILES", "CREATE EXTERNAL TABLE",
    "CREATE EXTERNAL VOLUME", "CREATE MANAGED STORAGE", "CREATE STORAGE CREDENTIAL",
)


def list_of_values(reader: Reader) -> Reader:
    def read(value: Any, where: str) -> list | None:
        if value is None:
            return None
        if not isinstance(value, list):
            raise _Refused(f"Cannot deserialize value of type `java.util.List` from {_json_kind(value)} value "
                           f"(through reference chain: {where})")
        return [reader(item, f"{where}[{index}]") for index, item in enumerate(value)]
    return read


_PRIVILEGE_LIST = Field(list_of_values(enum("Privilege", PRIVILEGES)), default=[])
PERMISSIONS_CHANGE = Model("PermissionsChange", {
    "principal": Field(string), "add": _PRIVILEGE_LIST, "remove": _PRIVILEGE_LIST,
})
UPDATE_PERMISSIONS = Model("UpdatePermissions", {
    "changes": Field(list_of(PERMISSIONS_CHANGE), default=[]),
})
