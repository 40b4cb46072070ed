"""MaxResults / NextToken paging over a listing sorted by name.

A token records the listing it belongs to and the last key returned, so a page
stays correct when objects are created or deleted between calls. Glue rejects
MaxResults above the operation's cap with a ValidationException (see
validation.py); without MaxResults a page holds at most DEFAULT_PAGE_SIZE items.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from typing import TypeVar

from tests.servers.glue_server.errors import invalid_input

Item = TypeVar("Item")
DEFAULT_PAGE_SIZE = 100


def page(
    items: Sequence[Item],
    key: Callable[[Item], str],
    listing: str,
    max_results: int | None,
    next_token: str | None,
) -> tuple[list[Item], str | None]:
    """One page of `items` in key order, and the token for the next page (None at the end)."""
    ordered = sorted(items, key=key)
    if next_token:
        after = _decode(next_token, listing)
        ordered = [item for item in ordered if key(item) > after]
    size = max_results or DEFAULT_PAGE_SIZE
    selected = ordered[:size]
    more = len(ordered) > size
    return selected, _encode(listing, key(selected[-1])) if more else None


def _encode(listing: str, after: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([listing, after]).encode()).decode()


def _decode(token: str, listing: str) -> str:
    try:
        token_listing, after = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, TypeError, binascii.Error) as error:
        raise invalid_input("Invalid NextToken.") from error
    if token_listing != listing or not isinstance(after, str):
        raise invalid_input("NextToken does not belong to this request.")
    return after
