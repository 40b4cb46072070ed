"""A table's `schema:` entries checked and put in the form the planner compares."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lance_sync.manifest.loader import DataPath
from lance_sync.manifest.schema_models import Column

#: a problem with an entry: the message, and where it is (for file:line)
Problem = tuple[str, DataPath]


def declared_columns(entries: Sequence[Column] | None,
                     path: DataPath) -> tuple[list[dict[str, Any]] | None, tuple[str, ...], list[Problem]]:
    """The declared columns ({name, type}, with `nullable` and `renamed_from` where the manifest
    sets them: only a nullability the manifest states is compared), the names of those declared
    removed, and the entries' problems. Each name, current or former, appears once; a column has
    a type unless it is removed; a schema keeps at least one column."""
    if not entries:
        return None, (), []
    seen: set[str] = set()
    columns: list[dict[str, Any]] = []
    removed: list[str] = []
    problems: list[Problem] = []
    for index, column in enumerate(entries):
        at = (*path, index)
        for name, key in ((column.name, "name"), (column.renamed_from, "renamed_from")):
            if name in seen:
                problems.append((f"column '{name}' appears twice", (*at, key)))
            if name is not None:
                seen.add(name)
        if column.removed:
            if column.renamed_from is not None:
                problems.append((f"column '{column.name}' is removed: it has no renamed_from", (*at, "renamed_from")))
            removed.append(column.name)
        elif column.type is None:
            problems.append(("missing required field 'type' (only a removed column may leave it out)", at))
        else:
            columns.append(_declared(column))
    if all(column.removed for column in entries):
        problems.append(("the schema declares no column that is not removed", path))
    return columns or None, tuple(removed), problems


def _declared(column: Column) -> dict[str, Any]:
    declared: dict[str, Any] = {"name": column.name, "type": column.type}
    if "nullable" in column.model_fields_set:
        declared["nullable"] = column.nullable
    if column.renamed_from is not None:
        declared["renamed_from"] = column.renamed_from
    return declared
