"""Loading some of a manifest's tables: a plan of what changed since a revision
(`--changed-since`) builds the tables whose entries changed, not all 100,000.

The others stay as written. The checks that span entries still cover every table, over the
entries as written: each name once, each registration once, one table per location. A check
that might fail, or an entry these checks cannot read (a name that is not text, an unknown
backend, a `renamed_from`, whose checks need every table built), sends the load down the
full road, which builds and checks every table and names the file and line of each problem.
An unchanged entry is not checked on its own: `lance-sync validate` checks every entry.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from lance_sync.manifest.history import IdReader
from lance_sync.model.backend_config import Identifier
from lance_sync.model.locations import nested, normalize_location

RegistrationKey = tuple[str, Identifier]


class NotPartial(Exception):
    """A check across entries may fail, or cannot be made as written: build every table."""


def split_tables(data: dict[str, Any], wanted: Collection[str], base_dir: str
                 ) -> tuple[list[Any], dict[str, Any], dict[RegistrationKey, str]]:
    """The raw entries of the `wanted` tables (in manifest order), every other entry by name,
    and the others' registrations; NotPartial unless the checks across all entries pass."""
    raw_tables = data.get("tables", [])
    backends = data.get("backends")
    if not isinstance(raw_tables, list) or not isinstance(backends, dict):
        raise NotPartial
    key_of = _RegistrationKeys(backends)
    others: dict[str, Any] = {}
    registered: dict[RegistrationKey, str] = {}  # every table's, then the chosen ones' taken out
    locations: list[str] = []
    for entry in raw_tables:
        if type(entry) is not dict or entry.get("renamed_from") is not None:
            raise NotPartial
        name, location, register = entry.get("name"), entry.get("location"), entry.get("register")
        if type(name) is not str or name in others or type(location) is not str:
            raise NotPartial
        others[name] = entry
        try:
            locations.append(normalize_location(location, base_dir))
        except ValueError:
            raise NotPartial from None
        for item in _list(register):
            key = key_of(item, name)
            if key in registered:
                raise NotPartial
            registered[key] = name
    if next(nested(locations), None) is not None:
        raise NotPartial
    chosen = [entry for entry in raw_tables if entry["name"] in wanted] if wanted else []
    for entry in chosen:
        del others[entry["name"]]
        for item in entry.get("register") or []:
            del registered[key_of(item, entry["name"])]
    return chosen, others, registered


def _list(value: Any) -> list[Any]:
    """A `register` list as written: none is empty, anything but a list cannot be read."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise NotPartial
    return value


class _RegistrationKeys:
    """A registration's (backend, table id) as the desired state will have it."""

    def __init__(self, backends: dict[str, Any]):
        self.ids = IdReader(backends)

    def __call__(self, item: Any, table: str) -> RegistrationKey:
        if not isinstance(item, dict):
            raise NotPartial
        name = item.get("name") or table
        namespace = self.ids(item.get("backend"), item.get("namespace"))
        if namespace is None or not isinstance(name, str):  # not a known backend, or not a name
            raise NotPartial
        backend, parts = namespace
        if not parts or not all(parts):
            raise NotPartial
        return backend, (*parts, name)
