"""Paging for every driver: following page tokens to the end, and serving pages of names.

Drivers whose backend returns a whole listing at once (Glue's filtered tables, Hive) serve
Lance's `page_token`/`limit` themselves: a page is the sorted names after the token, and the
token is the last name of the page.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from lance_namespace.errors import InternalError, InvalidInputError

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


def check_page_limit(limit: int | None) -> int | None:
    """A Lance page limit: None for no limit, else a positive number."""
    if limit is not None and limit < 1:
        raise InvalidInputError(f"limit must be positive (got {limit})")
    return limit


def names_after(names: Iterable[str], token: str | None) -> list[str]:
    """The sorted, distinct names that come after `token` (all of them without one)."""
    ordered = sorted(set(names))
    return ordered[bisect_right(ordered, token):] if token else ordered


def page_of_names(names: Iterable[str], token: str | None, limit: int | None) -> tuple[list[str], str | None]:
    """One page of sorted names after `token`, and the next token (None on the last page)."""
    remaining = names_after(names, token)
    limit = check_page_limit(limit) or len(remaining)
    page = remaining[:limit]
    return page, (page[-1] if len(remaining) > len(page) else None)
