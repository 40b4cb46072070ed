"""What a plan says about the dataset at a table's location: why it is not this owner's, what
it is written from, and the warnings a location that holds no valid dataset gives."""

from __future__ import annotations

from lance_sync.model.actions import DatasetStatus
from lance_sync.model.arrow_types import columns_from_schema, schema_from_columns
from lance_sync.model.desired import DesiredTable
from lance_sync.model.marks import describe_dataset_owner

#: what a location may hold for a table to be registered there
NOT_A_DATASET = ("not_lance", "corrupt", "interrupted")
#: a declared table's warning while its location holds nothing: one text for every such table of
#: a large first plan (the action shows its location beside it)
NO_DATASET_YET = "no Lance dataset at its location yet (declare only: the table is registered before its data exists)"


def not_created_here(location: str, status: DatasetStatus, owner: str) -> str:
    """Why a dataset is not this owner's to delete or rewrite."""
    return (f"the dataset at {location} {describe_dataset_owner(status.owner)}, so lance-sync did not create "
            f"it for '{owner}' (lance-sync deletes and rewrites only the datasets it created)")


def declared_columns(table: DesiredTable) -> list[dict] | None:
    """The declared schema in its canonical spelling, or None when the manifest declares none."""
    if table.columns:
        return columns_from_schema(schema_from_columns(table.columns))
    return None


def source_origin(table: DesiredTable) -> str:
    if table.source:
        return f"from {table.source['format']} source {table.source['path']}"
    return "empty, with the declared schema"


def dataset_warnings(table: DesiredTable, status: DatasetStatus | None) -> list[str]:
    if status is None or status.status == "valid":
        return []
    if status.status == "missing":
        return [NO_DATASET_YET]
    if status.status in NOT_A_DATASET:
        return []  # a registration is never made there (a conflict says why)
    if status.status == "unreachable":
        return [f"could not look at {table.location}: {status.error}"]
    return [f"the Lance dataset at {table.location} looks corrupt: {status.error or 'unreadable'}"]
