"""A dataset's columns changed in place (Lance schema evolution): add, alter, drop.

Each change is idempotent against the live dataset, so an apply cut off during one converges
on the next: a column already added (altered, dropped) as planned is done, never an error.
pylance keeps the schema's metadata through `add_columns`, `alter_columns` and `drop_columns`
(this owner's record included); each change checks that it did.
"""

from __future__ import annotations

from typing import Any

import lance
import pyarrow as pa

from lance_sync.model.arrow_types import format_type, parse_type
from lance_sync.model.evolution import definition
from lance_sync.model.locations import normalize_location
from lance_sync.model.marks import dataset_owner, describe_dataset_owner


class ColumnChangeError(RuntimeError):
    """The live dataset does not allow the planned column change."""


def live_column(location: str, name: str,
                storage_options: dict[str, str] | None = None) -> tuple[int, dict[str, Any] | None]:
    """The dataset's version and the column's definition ({name, type, nullable}; None: no such column)."""
    dataset = _open(location, storage_options)
    return dataset.version, _definition(dataset, name)


def add_column(location: str, want: dict[str, Any], storage_options: dict[str, str] | None = None) -> int:
    """Add a nullable column (null in every row, no data file rewritten); the new version."""
    dataset = _open(location, storage_options)
    have = _definition(dataset, want["name"])
    if have == want:
        return dataset.version
    if have is not None:
        raise ColumnChangeError(f"{location}: column '{want['name']}' exists as {have['type']}"
                                f"{'' if have['nullable'] else ' not null'}, not as planned")
    record = dataset_owner(dataset.schema.metadata)
    dataset.add_columns(pa.field(want["name"], parse_type(want["type"]), nullable=True))
    return _committed(location, storage_options, record)


def alter_column(location: str, have: dict[str, Any], want: dict[str, Any],
                 storage_options: dict[str, str] | None = None) -> int:
    """Rename, relax or widen a column as planned (`have` -> `want`); the new version."""
    dataset = _open(location, storage_options)
    if _definition(dataset, want["name"]) == want:
        return dataset.version
    if _definition(dataset, have["name"]) != have:
        raise ColumnChangeError(f"{location}: column '{have['name']}' is no longer {have['type']}"
                                f"{'' if have['nullable'] else ' not null'} as planned")
    change: dict[str, Any] = {"path": have["name"]}  # a key left out leaves that part as it is
    if want["name"] != have["name"]:
        change["name"] = want["name"]
    if want["nullable"] and not have["nullable"]:
        change["nullable"] = True
    if want["type"] != have["type"]:
        change["data_type"] = parse_type(want["type"])
    record = dataset_owner(dataset.schema.metadata)
    dataset.alter_columns(change)  # type: ignore[arg-type]  # pylance types each alteration as an iterable
    return _committed(location, storage_options, record)


def drop_column(location: str, name: str, owner: str, storage_options: dict[str, str] | None = None) -> int:
    """Drop a column from a dataset that carries `owner`'s record; the new version."""
    dataset = _open(location, storage_options)
    recorded = dataset_owner(dataset.schema.metadata)
    if recorded != owner:
        raise ColumnChangeError(f"refusing to drop column '{name}' of {location}: the dataset "
                                f"{describe_dataset_owner(recorded)}; lance-sync drops columns only from the "
                                f"datasets it created for '{owner}'")
    if name not in dataset.schema.names:
        return dataset.version
    dataset.drop_columns([name])
    return _committed(location, storage_options, recorded)


def _open(location: str, storage_options: dict[str, str] | None) -> lance.LanceDataset:
    return lance.dataset(normalize_location(location), storage_options=storage_options)


def _definition(dataset: lance.LanceDataset, name: str) -> dict[str, Any] | None:
    schema = dataset.schema
    if name not in schema.names:
        return None
    found = schema.field(name)
    return definition(found.name, format_type(found.type), found.nullable)


def _committed(location: str, storage_options: dict[str, str] | None, record: str | None) -> int:
    """The version a change committed, once the dataset still carries the owner record it had."""
    dataset = _open(location, storage_options)
    if dataset_owner(dataset.schema.metadata) != record:
        raise ColumnChangeError(f"{location}: the column change lost the dataset's owner record "
                                f"({describe_dataset_owner(record)} before)")
    return dataset.version
