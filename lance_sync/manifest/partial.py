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
from lance_sync.model.locations import normalize_location, overlapping

RegistrationKey = tuple[str, Identifier]


class NotPartial(Exception):
    """A check across entries may fail, or cannot be made as written: build every table."""


def split_tables(data: dict[str, Any], wanted: Collection[str], base_dir: str
                 ) -> tuple[list[Any], dict[str, Any], dict[RegistrationKey, str]]:
    """The raw entries of the `wanted` tables (in manifest order), every other entry by name,
    and the others' registrations; NotPartial unless the checks across all entries pass."""
    raw_tables = data.get("tables", [])
    backends = data.get("backends")
    if not isinstance(raw_tables, list) or not isinstance(backends, dict) or not set(map(type, raw_tables)) <= {dict}:
        raise NotPartial
    # each check reads one field of every entry in one pass: a million entries in a large manifest
    names = [entry.get("name") for entry in raw_tables]
    written = [entry.get("location") for entry in raw_tables]
    if not set(map(type, names)) <= {str} or not set(map(type, written)) <= {str} \
            or any(entry.get("renamed_from") is not None for entry in raw_tables):
        raise NotPartial
    others = dict(zip(names, raw_tables, strict=True))
    if len(others) < len(names):  # a name twice
        raise NotPartial
    key_of = _RegistrationKeys(backends)
    registered = _registrations(raw_tables, names, key_of)
    try:
        locations = [normalize_location(location, base_dir) for location in written]
    except ValueError:
        raise NotPartial from None
    if overlapping(locations):
        raise NotPartial
    chosen = [entry for entry in raw_tables if entry["name"] in wanted] if wanted else []
    for entry in chosen:
        del others[entry["name"]]
    for key in _registrations(chosen, [entry["name"] for entry in chosen], key_of):
        del registered[key]
    return chosen, others, registered


def _registrations(entries: list[dict[str, Any]], names: list[str], key_of: _RegistrationKeys
                   ) -> dict[RegistrationKey, str]:
    """Each registration of the entries, to its table's name; NotPartial for one twice."""
    registered: dict[RegistrationKey, str] = {}
    for name, entry in zip(names, entries, strict=True):
        for item in _list(entry.get("register")):
            key = key_of(item, name)
            if key in registered:
                raise NotPartial
            registered[key] = name
    return registered


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
        #: (backend, namespace) as written -> (backend, names), checked once for all its tables
        self.namespaces: dict[tuple[Any, Any], tuple[str, Identifier]] = {}

    def __call__(self, item: Any, table: str) -> RegistrationKey:
        if not isinstance(item, dict):
            raise NotPartial
        name = item.get("name") or table
        if not isinstance(name, str):
            raise NotPartial
        where = (item.get("backend"), item.get("namespace"))
        try:
            backend, parts = self.namespaces[where]
        except KeyError:
            backend, parts = self.namespaces[where] = self._namespace(*where)
        except TypeError:  # a namespace written as a list
            backend, parts = self._namespace(*where)
        return backend, (*parts, name)

    def _namespace(self, backend: Any, raw_id: Any) -> tuple[str, Identifier]:
        namespace = self.ids(backend, raw_id)
        if namespace is None or not namespace[1] or not all(namespace[1]):  # not a known backend, or no id
            raise NotPartial
        return namespace
