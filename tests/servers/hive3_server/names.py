"""How Hive Metastore 3.x reads names: catalog prefixes, identifiers, patterns, locations."""

from __future__ import annotations

import os
import re

DEFAULT_CATALOG = "hive"
DEFAULT_DATABASE = "default"

_CATALOG_MARKER = "@"
_CATALOG_SEPARATOR = "#"
_EMPTY_DATABASE_MARKER = "!"
_VALID_NAME = re.compile(r"[A-Za-z0-9_]+")
_VALID_TABLE_NAME = re.compile(r"[A-Za-z0-9_/]+")  # HMS 3 allows '/' in table names by default
_URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*):(?://(?P<authority>[^/]*))?(?P<path>.*)$")


def parse_db_name(name: str | None) -> tuple[str, str | None]:
    """Split "@cat#db" into (catalog, database) the way HMS 3's parseDbName does.

    An unprefixed name belongs to the default catalog; "@cat#" means every database of
    the catalog (database None); "@cat#!" is the empty database name.
    """
    if name is None:
        return DEFAULT_CATALOG, None
    if not (name.startswith(_CATALOG_MARKER) and _CATALOG_SEPARATOR in name):
        return DEFAULT_CATALOG, name
    catalog, database = name[1:].split(_CATALOG_SEPARATOR, 1)
    if database == "":
        return catalog, None
    if database == _EMPTY_DATABASE_MARKER:
        return catalog, ""
    return catalog, database


def normalize(identifier: str) -> str:
    """HMS stores catalog, database and table names trimmed and lower-case."""
    return identifier.strip().lower()


def is_valid_name(name: str | None) -> bool:
    return name is not None and _VALID_NAME.fullmatch(name) is not None


def is_valid_table_name(name: str | None) -> bool:
    return name is not None and _VALID_TABLE_NAME.fullmatch(name) is not None


def matches_pattern(name: str, pattern: str | None) -> bool:
    """Hive's listing patterns: '|' separates alternatives, '*' is any text, case-insensitive."""
    if pattern is None:
        return True
    alternatives = (normalize(part).replace("*", ".*") for part in pattern.strip().split("|"))
    return any(re.fullmatch(alternative, name, re.IGNORECASE) for alternative in alternatives)


def qualify_location(location: str) -> str:
    """Normalize a location as HMS does through Hadoop's Path.

    `file:///x/` becomes `file:/x`, repeated slashes collapse, a path without a
    scheme is a local file. Other schemes keep their authority (`s3://bucket/key`).
    """
    match = _URI.match(location)
    if match is None:
        return "file:" + _clean_path(os.path.abspath(location))
    scheme, authority, path = match.group("scheme", "authority", "path")
    if authority:
        return f"{scheme}://{authority}{_clean_path(path)}"
    return f"{scheme}:{_clean_path(path)}"


def local_path(location: str | None) -> str | None:
    """The local directory behind a `file:` location, or None for other file systems."""
    if location is None:
        return None
    match = _URI.match(location)
    if match is None or match.group("scheme") != "file" or match.group("authority"):
        return None
    return match.group("path")


def _clean_path(path: str) -> str:
    path = re.sub("/+", "/", path)
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    return path
