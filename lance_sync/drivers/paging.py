"""Following page tokens to the end, for every driver."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

from lance_namespace.errors import InternalError

T = TypeVar("T")


def follow_pages(fetch: Callable[[str | None], tuple[list[T], str | None]]) -> Iterator[T]:
    """Items of every page: `fetch(token)` returns (items, next token or None/'' at the end)."""
    token: str | None = None
    seen: set[str] = set()
    while True:
        items, token = fetch(token)
        yield from items
        if not token:
            return
        if token in seen:
            raise InternalError(f"the server repeated page token {token!r}; refusing to loop")
        seen.add(token)
