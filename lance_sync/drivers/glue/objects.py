"""Glue's objects as the driver reads and writes them: a database's address, a namespace
found, a Lance table's input and what is read back from a table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from botocore.model import Shape
from lance_namespace.errors import InvalidInputError

from lance_sync.drivers.base import Identifier
from lance_sync.model.marks import is_lance_table

EXTERNAL_TABLE = "EXTERNAL_TABLE"


@dataclass(frozen=True)
class DatabaseRef:
    catalog_id: str
    name: str


@dataclass(frozen=True)
class FoundNamespace:
    """A namespace found in Glue: a database (`database` set) or a catalog."""

    catalog_id: str
    database: str | None
    #: the Glue Database or Catalog object
    described: dict[str, Any]

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.described.get("Parameters") or {})


def checked_id(id: Sequence[str] | None, root_ok: bool = False) -> Identifier:
    parts = tuple(id or ())
    if not parts and not root_ok:
        raise InvalidInputError("glue: an empty identifier names the root catalog, not an object")
    if any(not isinstance(name, str) or not name for name in parts):
        raise InvalidInputError(f"glue: identifier names must be non-empty strings: {list(parts)}")
    return parts


def is_lance(table: dict[str, Any]) -> bool:
    return (str(table.get("TableType", "")).upper() == EXTERNAL_TABLE
            and is_lance_table(table.get("Parameters") or {}))


def parameters_of(described: dict[str, Any]) -> dict[str, str]:
    return dict(described.get("Parameters") or {})


def location_of(table: dict[str, Any]) -> str | None:
    return (table.get("StorageDescriptor") or {}).get("Location")


def lance_table_input(name: str, location: str, parameters: dict[str, str]) -> dict[str, Any]:
    return {"Name": name, "TableType": EXTERNAL_TABLE, "Parameters": parameters,
            "StorageDescriptor": {"Location": location}}


def projected(value: Any, shape: Shape) -> Any:
    """`value` with every structure reduced to the members `shape` declares."""
    if shape.type_name == "structure":
        return {key: projected(item, shape.members[key])
                for key, item in value.items() if key in shape.members}
    if shape.type_name == "list":
        return [projected(item, shape.member) for item in value]
    if shape.type_name == "map":
        return {key: projected(item, shape.value) for key, item in value.items()}
    return value
