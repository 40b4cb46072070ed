"""Offline checks of a table's own state (`indexes:`, `maintenance:`, `tags:`, `retention:`)
and its desired form: each problem names the file and line of the value (see
lance_sync.model.table_state for the vocabulary)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import Any

from lance_sync.manifest.loader import DataPath
from lance_sync.manifest.schema_models import IndexEntry, Table
from lance_sync.model.table_state import (
    INDEX_TYPES,
    METRICS,
    REQUIRED_PARAMS,
    SCALAR_TYPES,
    VECTOR_TYPES,
    canonical_type,
    duration_seconds,
    index_definition,
)

#: reports a problem at a path; `key`: at the key rather than its value
Fail = Callable[..., None]
#: parameters that count something: whole numbers of at least 1
_COUNTS = frozenset({"num_partitions", "num_sub_vectors", "num_bits", "sample_rate", "max_iterations", "m",
                     "ef_construction", "zone_size", "rows_per_zone", "number_of_items", "max_token_length"})


def desired_table_state(entry: Table, path: DataPath, fail: Fail) -> dict[str, Any] | None:
    """The table's declared own state as the planner reads it, or None when it declares none:
    {"indexes": [{name, column, type, params}], "maintenance": {...}, "tags": {tag: version},
    "retention": {"keep_versions": N, "older_than": seconds}}."""
    state: dict[str, Any] = {}
    if entry.indexes is not None:
        state["indexes"] = _indexes(entry, path, fail)
    if entry.maintenance is not None:
        state["maintenance"] = entry.maintenance.model_dump()
    if entry.tags is not None:
        state["tags"] = dict(entry.tags)
    if entry.retention is not None:
        retention = entry.retention
        if retention.keep_versions is None and retention.older_than is None:
            fail("retention states keep_versions, older_than or both", (*path, "retention"))
        state["retention"] = {"keep_versions": retention.keep_versions,
                              "older_than": duration_seconds(retention.older_than) if retention.older_than else None}
    return state or None


def _indexes(entry: Table, path: DataPath, fail: Fail) -> list[dict[str, Any]]:
    declared: list[dict[str, Any]] = []
    seen: set[str] = set()
    columns = {column.name for column in entry.columns} if entry.columns else None
    for position, index in enumerate(entry.indexes or []):
        at = (*path, "indexes", position)
        if index.name in seen:
            fail(f"index '{index.name}' is declared twice", (*at, "name"))
        seen.add(index.name)
        if columns is not None and index.column not in columns:
            fail(f"index '{index.name}': column '{index.column}' is not in the table's schema{_close(index.column, columns)}",
                 (*at, "column"))
        index_type = canonical_type(index.type)
        if index_type not in SCALAR_TYPES and index_type not in VECTOR_TYPES:
            fail(f"index '{index.name}': unknown index type '{index.type}'{_close(index.type.upper(), INDEX_TYPES)}; "
                 f"Lance's types are {', '.join(INDEX_TYPES)}", (*at, "type"))
            continue
        _check_params(index, index_type, at, fail)
        declared.append({"name": index.name, **index_definition(index.column, index_type, index.params)})
    return declared


def _check_params(index: IndexEntry, index_type: str, at: DataPath, fail: Fail) -> None:
    allowed = SCALAR_TYPES[index_type] if index_type in SCALAR_TYPES else VECTOR_TYPES[index_type]
    for name, value in index.params.items():
        where = (*at, "params", name)
        if name not in allowed:
            takes = f"it takes {', '.join(sorted(allowed))}" if allowed else "it takes none"
            fail(f"index '{index.name}': {index_type} has no parameter '{name}'{_close(name, allowed)}; {takes}",
                 where, key=True)
        elif name in _COUNTS and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            fail(f"index '{index.name}': {name} is a whole number of at least 1", where)
        elif name == "metric" and str(value).lower() not in METRICS:
            fail(f"index '{index.name}': metric '{value}' is not one of {', '.join(METRICS)}"
                 f"{_close(str(value).lower(), METRICS)}", where)
    missing = [name for name in REQUIRED_PARAMS.get(index_type, ()) if name not in index.params]
    if missing:
        fail(f"index '{index.name}': {index_type} needs {' and '.join(missing)} in params", (*at, "type"))


def _close(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
