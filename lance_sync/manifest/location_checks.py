"""The manifest's checks of its tables' locations: one asset per path (no two tables at one
location or one inside another), and no table at or inside a location a backend keeps for
itself (a `dir` root's catalog table, its apply leases). Local locations are compared as the
filesystem resolves them: a symbolic link is not a second place (docs/integrity.md)."""

from __future__ import annotations

from collections.abc import Iterator
from operator import methodcaller

from lance_sync.model.desired import BackendSpec, DesiredTable
from lance_sync.model.locations import (
    is_within,
    nested,
    resolution_note,
    resolved_location,
    resolved_locations,
)


def location_problems(tables: list[DesiredTable], backends: dict[str, BackendSpec]) -> Iterator[tuple[int, str]]:
    """(index in `tables`, problem) for each table whose location breaks a rule; `backends`
    are those whose own locations can be worked out (no setting left to an unset variable)."""
    resolved = resolved_locations([table.location for table in tables])
    for index, other_index in nested(resolved):
        table, other = tables[index], tables[other_index]
        same = resolved[other_index] == resolved[index]
        relation = "the same location as" if same else "a location inside that of"
        note = resolution_note((table.location, resolved[index]), (other.location, resolved[other_index]))
        yield index, (f"table '{table.name}' has {relation} table '{other.name}' ({other.location}){note}; "
                      "each location holds one table")
    yield from _in_own_locations(tables, backends, resolved)


def _in_own_locations(tables: list[DesiredTable], backends: dict[str, BackendSpec],
                      resolved: list[str]) -> Iterator[tuple[int, str]]:
    """Tables at or inside a location a backend keeps for itself: registering, writing or
    deleting data there breaks the backend, whichever backend registers the table."""
    own = {resolved_location(location): f"the {what} of backend '{name}'"
           for name, spec in backends.items() for location, what in spec.rules.own_locations(spec.config).items()}
    if not own:
        return
    inside = tuple(location.rstrip("/") + "/" for location in own)
    if own.keys().isdisjoint(resolved) and not any(map(methodcaller("startswith", inside), resolved)):
        return  # the usual answer, found without a Python step per table
    for index in [i for i, location in enumerate(resolved) if location in own or location.startswith(inside)]:
        table = tables[index]
        folder = next(location for location in own if is_within(resolved[index], location))
        where = "is " if resolved[index] == folder else f"lies inside {folder}, "
        note = resolution_note((table.location, resolved[index]))
        yield index, (f"table '{table.name}': its location {table.location}{note} {where}{own[folder]}; "
                      "a table cannot live there")
