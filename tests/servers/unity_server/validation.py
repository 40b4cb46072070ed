"""UC OSS input rules: object names, dotted full names, page sizes, column widths."""

from __future__ import annotations

import re

from tests.servers.unity_server.errors import UcError

_VALID_NAME = re.compile(r"[a-zA-Z0-9_@-]+")
MAX_NAME_LENGTH = 255

#: UC's PagedListingHelper.DEFAULT_PAGE_SIZE: the default and the cap of every list page.
MAX_PAGE_SIZE = 100


def validate_name(name: str | None) -> None:
    """UC's ValidationUtils.validateSqlObjectName, for catalogs, schemas and tables."""
    if not name:
        raise UcError("INVALID_ARGUMENT", "Name cannot be empty")
    if len(name) > MAX_NAME_LENGTH:
        raise UcError("INVALID_ARGUMENT", f"Name cannot be longer than {MAX_NAME_LENGTH} characters")
    if not _VALID_NAME.fullmatch(name):
        raise UcError(
            "INVALID_ARGUMENT",
            "Name cannot contain a period, space, forward-slash, or control characters",
        )


def java_split_on_dots(full_name: str) -> list[str]:
    """`fullName.split("\\\\.")` as Java does it: trailing empty parts are dropped."""
    parts = full_name.split(".")
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def split_schema_full_name(full_name: str) -> tuple[str, str]:
    parts = java_split_on_dots(full_name)
    if len(parts) != 2:
        raise UcError("INVALID_ARGUMENT", f"Invalid schema full name: {full_name}")
    return parts[0], parts[1]


def split_table_full_name(full_name: str) -> tuple[str, str, str]:
    parts = java_split_on_dots(full_name)
    if len(parts) != 3:
        raise UcError("INVALID_ARGUMENT", f"Invalid table name: {full_name}")
    return parts[0], parts[1], parts[2]


#: the Unity Catalog OpenAPI document's `maximum` of each listing's max_results (api/all.yaml,
#: v0.6.0). UC OSS itself takes larger values and caps them; this server refuses them, so that a
#: client that breaks the document fails here (the official client refuses them too).
DOCUMENT_MAXIMUM = {"catalogs": 1000, "schemas": 1000, "tables": 50}


def page_size(max_results: int | None, listing: str = "catalogs") -> int:
    """Negative is refused, and more than the document's maximum; 0 or absent means the cap;
    larger values are capped."""
    if max_results is not None and max_results < 0:
        raise UcError("INVALID_ARGUMENT", "maxResults must be greater than or equal to 0")
    if max_results is not None and max_results > DOCUMENT_MAXIMUM[listing]:
        raise UcError("INVALID_ARGUMENT", f"max_results must be at most {DOCUMENT_MAXIMUM[listing]} (the API "
                                          f"document's maximum for list {listing})")
    if max_results is None or max_results == 0:
        return MAX_PAGE_SIZE
    return min(max_results, MAX_PAGE_SIZE)


class ValueTooLong(Exception):
    """A value wider than its UC database column (UC answers 500 INTERNAL)."""


def check_width(value: str | None, column: str, width: int) -> None:
    """Refuse what UC's database refuses: Hibernate sizes String columns at 255 by default.

    Widths are counted in UTF-16 units, as the JVM and H2 count them.
    """
    if value is not None and len(value.encode("utf-16-le")) // 2 > width:
        raise ValueTooLong(
            f'could not execute statement [Value too long for column "{column.upper()} '
            f'CHARACTER VARYING({width})"]'
        )
