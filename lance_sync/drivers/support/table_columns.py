"""A table's columns through the Lance Namespace spec (see `table_ops`): Lance schema evolution
on the dataset with pylance. Each operation answers the dataset version it committed.

- AlterTableAddColumns: each new column is an SQL expression over the existing ones
  (`id * 2`, `CAST(NULL AS DOUBLE)`), as pylance's `add_columns` computes it. An entry without
  an expression is InvalidInput: the spec's entry has no type to add an empty column with.
- AlterTableAlterColumns: a rename, a nullability change and a new data type, the latter in the
  spec's JSON form (`{"type": "int64"}`) for the primitive types Lance casts in place.
- AlterTableDropColumns: the columns leave the schema; their data stays in older versions.

Virtual (UDF) columns and maintained computed columns (`computed`, filled by a backfill) are
UnsupportedOperation: they need a job runner that backfills them, which pylance does not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from lance_namespace.errors import InvalidInputError, UnsupportedOperationError
from lance_namespace_urllib3_client.models import (
    AddColumnsEntry,
    AlterColumnsEntry,
    JsonArrowDataType,
)
from pydantic import ValidationError

if TYPE_CHECKING:
    from lance import LanceDataset

#: the spec's JSON type names (lower-cased) -> Arrow types, for the casts Lance performs in place
JSON_TYPES: dict[str, pa.DataType] = {
    "bool": pa.bool_(), "boolean": pa.bool_(),
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64(),
    "float16": pa.float16(), "float32": pa.float32(), "float64": pa.float64(),
    "utf8": pa.string(), "large_utf8": pa.large_string(),
    "binary": pa.binary(), "large_binary": pa.large_binary(),
    "date32": pa.date32(), "date64": pa.date64(),
}


def add(dataset: LanceDataset, entries: Sequence[AddColumnsEntry]) -> int:
    if not entries:
        raise InvalidInputError("new_columns is empty: nothing to add")
    expressions = {}
    for entry in entries:
        if entry.virtual_column is not None or entry.computed is not None:
            raise UnsupportedOperationError(f"column {entry.name!r}: virtual and maintained computed "
                                            "columns are not supported (give an expression)")
        if not entry.expression:
            raise InvalidInputError(f"column {entry.name!r} needs an SQL expression that computes it")
        expressions[entry.name] = entry.expression
    dataset.add_columns(expressions)
    return dataset.version


def alter(dataset: LanceDataset, entries: Sequence[AlterColumnsEntry]) -> int:
    if not entries:
        raise InvalidInputError("alterations is empty: nothing to alter")
    # pylance's annotation takes each alteration for an iterable of them; it reads dicts
    alterations: list[Any] = [_alteration(entry) for entry in entries]
    dataset.alter_columns(*alterations)
    return dataset.version


def _alteration(entry: AlterColumnsEntry) -> dict[str, Any]:
    if entry.virtual_column is not None:
        raise UnsupportedOperationError(f"column {entry.path!r}: virtual columns are not supported")
    alteration: dict[str, Any] = {"path": entry.path}
    if entry.rename is not None:
        alteration["name"] = entry.rename
    if entry.nullable is not None:
        alteration["nullable"] = entry.nullable
    if entry.data_type is not None:
        alteration["data_type"] = arrow_type(entry.data_type)
    if len(alteration) == 1:
        raise InvalidInputError(f"column {entry.path!r}: the alteration changes nothing "
                                "(give rename, nullable or data_type)")
    return alteration


def arrow_type(data_type: dict[str, Any]) -> pa.DataType:
    """The Arrow type of the spec's JSON data type (`{"type": "int64"}`); InvalidInput for one
    that is malformed or not a primitive type."""
    try:
        name = JsonArrowDataType.model_validate(data_type).type.lower()
    except ValidationError as error:
        raise InvalidInputError(f"data_type {data_type!r} is not a JSON Arrow data type: "
                                f"{error.errors()[0]['msg']}") from None
    if name not in JSON_TYPES:
        raise InvalidInputError(f"data_type {name!r}: a column can change to one of "
                                f"{', '.join(sorted(JSON_TYPES))}")
    return JSON_TYPES[name]


def drop(dataset: LanceDataset, columns: Sequence[str]) -> int:
    if not columns:
        raise InvalidInputError("columns is empty: nothing to drop")
    dataset.drop_columns(list(columns))
    return dataset.version
