"""Iceberg ids: [warehouse, namespace..., table], checked, split, and written in paths."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote

from lance_namespace.errors import InvalidInputError, UnsupportedOperationError

from lance_sync.drivers.iceberg.config import IcebergRules, name_problem


def checked_id(id: Iterable[str] | None) -> tuple[str, ...]:
    parts = tuple(id or ())
    problem = name_problem(parts)
    if problem:
        raise InvalidInputError(f"iceberg: {problem}")
    return parts


def split_namespace(id: Iterable[str] | None) -> tuple[str, tuple[str, ...]]:
    """(warehouse, namespace levels) of a namespace id."""
    parts = checked_id(id)
    if not parts:
        raise InvalidInputError("iceberg: a namespace id starts with the warehouse")
    return parts[0], parts[1:]


def split_listed_namespace(id: Iterable[str] | None) -> tuple[str, tuple[str, ...]]:
    """Like `split_namespace`, for listings: the root cannot be listed (no warehouse listing)."""
    if not id:
        raise UnsupportedOperationError("iceberg: the REST API cannot list warehouses; "
                                        "list under a warehouse, e.g. [warehouse]")
    return split_namespace(id)


def split_table(id: Iterable[str] | None) -> tuple[str, tuple[str, ...], str]:
    """(warehouse, namespace levels, table name) of a table id."""
    parts = checked_id(id)
    if len(parts) < 3:
        raise InvalidInputError(f"iceberg: a table id is [warehouse, namespace..., table], "
                                f"got {list(parts)}")
    return parts[0], parts[1:-1], parts[-1]


def encode_segment(text: str) -> str:
    """One path segment, percent-encoded once ('+' too: upstream decodes it as a space)."""
    return quote(text, safe="")


def path_part(name: str) -> str:
    return name.replace("%", "%25").replace("/", "%2F")


def display(id: Iterable[str] | None) -> str:
    return IcebergRules.format_identifier(tuple(id or ()))
