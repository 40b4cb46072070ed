"""The `__manifest` table's rows as the directory driver reads and writes them, and what its
failed commits mean.

pylance keeps every namespace and table of a root as a row of the `__manifest` Lance table:
its object id (the names joined with DELIMITER), its type, its location relative to the root
and its properties as JSON metadata. A commit that lost against another writer's commit
(`is_commit_conflict`) is worth trying again on a fresh read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

import lance
from lance_namespace.errors import (
    ConcurrentModificationError,
    ErrorCode,
    InvalidInputError,
    LanceNamespaceError,
    NamespaceNotFoundError,
    TableNotFoundError,
)

from lance_sync.drivers.dir.config import DELIMITER

MANIFEST_TABLE = "__manifest"
ROW_COLUMNS = ("object_id", "object_type", "location", "metadata")
MANIFEST_COLUMNS = frozenset(ROW_COLUMNS)
#: manifest rows as columns (pyarrow's to_pydict), the ROW_COLUMNS of each row at one index
Rows = dict[str, list[Any]]

#: how Lance (pylance 14) words a commit that lost against another writer's commit:
#: "Incompatible transaction: This Update transaction is incompatible with concurrent
#: transaction Overwrite at version 64.", "Too many concurrent writers. Attempted 0
#: retries.", "Retryable commit conflict for version 7: ... was preempted by concurrent
#: transaction ...", "Commit conflict for version 7: ..."
_CONFLICT_WORDING = re.compile(
    r"\bconflict|incompatible transaction|concurrent transaction|"
    r"too many concurrent writ|preempted|please retry", re.IGNORECASE)
#: Lance appends the Rust source locations to its messages
_SOURCE_LOCATION = re.compile(r",\s*/\S+?\.rs:\d+:\d+")


class Raced(Exception):
    """Another writer changed what an attempt read before the attempt could commit."""


def metadata_of(dataset: lance.LanceDataset, object_type: str, id: list[str]) -> str | None:
    """A row's metadata text in this version of the manifest ("" when null); None without the row."""
    rows = dataset.to_table(columns=["metadata"], filter=row_filter(object_type, id)).to_pylist()
    return (rows[0]["metadata"] or "") if rows else None


def is_commit_conflict(error: BaseException) -> bool:
    """A commit that lost against another writer's: worth trying again on a fresh read."""
    if isinstance(error, Raced | ConcurrentModificationError):
        return True
    if isinstance(error, LanceNamespaceError) and error.code != ErrorCode.INTERNAL:
        return False  # not found, already exists, invalid, ...: final answers
    return bool(_CONFLICT_WORDING.search(str(error)))


def short_message(error: BaseException | None) -> str:
    """An error's message on one line, without the Rust source locations Lance appends."""
    text = _SOURCE_LOCATION.sub("", str(error)) if error is not None else ""
    return " ".join(text.split()) or type(error).__name__


def missing_error(object_type: str, id: list[str]) -> LanceNamespaceError:
    missing = NamespaceNotFoundError if object_type == "namespace" else TableNotFoundError
    return missing(f"{object_type} not found: {DELIMITER.join(id)}")


def row_filter(object_type: str, id: list[str]) -> str:
    return (f"object_id = {sql_string(DELIMITER.join(id))} "
            f"AND object_type = {sql_string(object_type)}")


def checked_id(id: Sequence[str] | None) -> list[str]:
    """`id` as a list; InvalidInput unless it has names, each non-empty and without the delimiter."""
    if not id or any(not name or DELIMITER in name for name in id):
        raise InvalidInputError(f"dir: names must be non-empty and cannot contain '{DELIMITER}': {id}")
    return list(id)


def id_text(id: Sequence[str] | None) -> str:
    return DELIMITER.join(id or [])


class RowParser:
    """Each row's object id, type, location and properties (`rows`), one batch of rows after
    the other. Many rows carry the same metadata text (the same properties and owner mark) and
    the same namespace: each distinct text is parsed once, and the rows that carry it share its
    properties dict (which nobody changes in place: a TableInfo is read, never edited) and its
    namespace's names."""

    def __init__(self) -> None:
        self._properties: dict[str | None, dict[str, str]] = {}
        self._parents: dict[str, tuple[str, ...]] = {}

    def rows(self, rows: Rows) -> Iterator[tuple[tuple[str, ...], str, str | None, dict[str, str]]]:
        properties, parents = self._properties, self._parents
        for object_id, object_type, location, metadata in zip(*(rows[c] for c in ROW_COLUMNS), strict=True):
            found = properties.get(metadata)
            if found is None:
                found = properties[metadata] = properties_of(metadata)
            parent, _, name = object_id.rpartition(DELIMITER)
            names = parents.get(parent)
            if names is None:
                names = parents[parent] = tuple(parent.split(DELIMITER)) if parent else ()
            yield (*names, name), object_type, location, found


def properties_of(metadata: str | None) -> dict[str, str]:
    """A manifest row's properties, from its metadata column (JSON text)."""
    return dict(json.loads(metadata)) if metadata else {}


def sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
