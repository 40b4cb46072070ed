"""Column `type_json` checks of UC OSS 0.5+ (ColumnUtils.validateTypeJson).

Every column must carry `type_json`: a Spark StructField as JSON (`name`,
`type`, `nullable`, `metadata`, nothing else) whose name and nullability match
the column's. For DELTA tables the type itself is checked against Delta's
primitive types; other formats get only the shallow check.
"""

from __future__ import annotations

import json
import re

from tests.servers.unity_server.errors import UcError

DELTA_PRIMITIVES = frozenset({
    "boolean", "byte", "short", "integer", "long", "float", "double", "date",
    "timestamp", "timestamp_ntz", "string", "binary", "variant",
})
_DECIMAL = re.compile(r"decimal\(\s*(-?\d+)\s*,\s*(-?\d+)\s*\)")
_FIELD_KEYS = {"name", "type", "nullable", "metadata"}
_COMPLEX_TYPE_KEYS = {
    "struct": {"type", "fields"},
    "array": {"type", "elementType", "containsNull"},
    "map": {"type", "keyType", "valueType", "valueContainsNull"},
}


class _Unparsable(Exception):
    """type_json does not deserialize into a StructField."""


def validate_column(column: dict, data_source_format: str | None) -> None:
    """Raise UcError(INVALID_ARGUMENT) with UC's message when `column` is refused."""
    field = _parse_field(column)
    if data_source_format == "DELTA":
        try:
            _check_field(field, "type_json")
        except UcError as error:
            raise _invalid(column, error.message) from error
    else:
        for key in ("name", "type", "nullable", "metadata"):
            _require(field.get(key), f"type_json.{key}")
    if field["name"] != column.get("name"):
        raise _invalid(column, f"field name {field['name']} does not match column name {column.get('name')}")
    nullable = column.get("nullable")
    if nullable is not None and field["nullable"] != nullable:
        raise _invalid(
            column,
            f"field nullable {_java_bool(field['nullable'])} does not match column nullable {_java_bool(nullable)}",
        )


def _parse_field(column: dict) -> dict:
    name = column.get("name")
    text = column.get("type_json")
    if not text:
        raise _invalid(column, f"Column {name} has null/empty typeJson")
    try:
        field = json.loads(text)
        _check_struct_field_shape(field)
    except (ValueError, _Unparsable) as error:
        raise _invalid(column, f"Failed to parse typeJson for column {name}: {text}") from error
    return field


def _check_struct_field_shape(field: object) -> None:
    if not isinstance(field, dict) or set(field) - _FIELD_KEYS:
        raise _Unparsable
    if field.get("metadata") is not None and not isinstance(field["metadata"], dict):
        raise _Unparsable
    if field.get("nullable") is not None and not isinstance(field["nullable"], bool):
        raise _Unparsable
    _check_type_shape(field.get("type"))


def _check_type_shape(data_type: object) -> None:
    if data_type is None or isinstance(data_type, str):
        return
    if not isinstance(data_type, dict):
        raise _Unparsable
    allowed = _COMPLEX_TYPE_KEYS.get(data_type.get("type"))
    if allowed is None or set(data_type) - allowed:
        raise _Unparsable
    for key in ("elementType", "keyType", "valueType"):
        _check_type_shape(data_type.get(key))
    fields = data_type.get("fields")
    if fields is not None:
        if not isinstance(fields, list):
            raise _Unparsable
        for nested in fields:
            _check_struct_field_shape(nested)


def _check_field(field: dict, path: str) -> None:
    name = field.get("name")
    if not isinstance(name, str) or not name.strip():
        raise UcError("INVALID_ARGUMENT", f"{path}.name is required.")
    for key in ("type", "nullable", "metadata"):
        _require(field.get(key), f"{path}.{key}")
    _check_type(field["type"], f"{path}.type")


def _check_type(data_type: str | dict, path: str) -> None:
    if isinstance(data_type, str):
        _check_primitive(data_type, path)
    elif data_type["type"] == "struct":
        _check_struct(data_type, path)
    elif data_type["type"] == "array":
        _require(data_type.get("elementType"), f"{path}.element-type")
        _require(data_type.get("containsNull"), f"{path}.contains-null")
        _check_type(data_type["elementType"], f"{path}.element-type")
    else:
        for key, label in (("keyType", "key-type"), ("valueType", "value-type"),
                           ("valueContainsNull", "value-contains-null")):
            _require(data_type.get(key), f"{path}.{label}")
        _check_type(data_type["keyType"], f"{path}.key-type")
        _check_type(data_type["valueType"], f"{path}.value-type")


def _check_struct(struct: dict, path: str) -> None:
    fields = struct.get("fields")
    _require(fields, f"{path}.fields")
    if not fields:
        raise UcError("INVALID_ARGUMENT", f"{path}.fields must contain at least one field.")
    seen: set[str] = set()
    for index, nested in enumerate(fields):
        nested_path = f"{path}.fields[{index}]"
        _require(nested, nested_path)
        _check_field(nested, nested_path)
        if nested["name"].lower() in seen:
            raise UcError(
                "INVALID_ARGUMENT",
                f"Duplicate field name (case-insensitive) in {nested_path}: {nested['name']}",
            )
        seen.add(nested["name"].lower())


def _check_primitive(type_name: str, path: str) -> None:
    decimal = _DECIMAL.fullmatch(type_name)
    if decimal:
        precision, scale = int(decimal.group(1)), int(decimal.group(2))
        if not 0 <= precision <= 38:
            raise UcError("INVALID_ARGUMENT", f"{path}.precision must be in [0, 38], got {precision}.")
        if not 0 <= scale <= precision:
            raise UcError(
                "INVALID_ARGUMENT",
                f"{path}.scale must be in [0, precision={precision}], got {scale}.",
            )
    elif type_name not in DELTA_PRIMITIVES:
        raise UcError("INVALID_ARGUMENT", f"{path}: Unsupported Delta primitive type: {type_name}")


def _require(value: object, path: str) -> None:
    if value is None:
        raise UcError("INVALID_ARGUMENT", f"{path} is required.")


def _invalid(column: dict, message: str) -> UcError:
    name = column.get("name") or "<unknown>"
    return UcError("INVALID_ARGUMENT", f"Invalid type_json for column {name}: {message}")


def _java_bool(value: bool) -> str:
    return "true" if value else "false"
