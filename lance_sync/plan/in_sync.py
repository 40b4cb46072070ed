"""Which declared tables a read shows in sync: the fast path of a plan's comparison.

Most tables of a large plan are unchanged. A table is in sync when it declares no data (no
columns, no source), and every registration of it is there as a Lance table, at the table's
location, with the properties it should have (`PropertiesInSync`), in a namespace that is
there. The comparison (lance_sync.plan.compare) plans nothing for such a table and compares
every other in full; so a plan that finds a table in sync here finds it so in full too
(tests/unit/test_in_sync.py plans many estates both ways). Where the tables of a backend share
their properties' dicts (a large estate's tables carry a few sets: the manifest and the drivers
that read in bulk share them), telling one in sync costs a few look-ups.

What is asked of the table's location is not: the comparison of an in-sync table without data
never reads it, so a plan whose catalogs are read first inspects the locations of the other
tables only (lance_sync.plan.planner.read_state).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass

from lance_sync.model.desired import DesiredState, DesiredTable
from lance_sync.model.marks import MANAGED_KEYS, marks
from lance_sync.plan.observe import LiveState, ObjectKey

logger = logging.getLogger(__name__)

#: the pairs of properties' dicts whose comparison is remembered (`PropertiesInSync.holds`)
_IN_SYNC_PAIRS = 10_000
#: tables named in the debug log of those not taken by the fast path (beyond: counted)
_LOGGED = 20


class PropertiesInSync:
    """The properties a declared table should have, and whether a live table has them; both
    remembered per dict, as tables with equal properties share one (read only)."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        #: the properties a table should have, one dict for each of its declared properties'
        #: dicts and marks
        self._wanted: dict[tuple[int, bool, str], dict[str, str]] = {}
        #: (id of the wanted properties, id of the live ones) -> whether the live ones are in
        #: sync (the dicts live as long as this object: the wanted ones are its own)
        self._in_sync: dict[tuple[int, int], bool] = {}

    def wanted(self, table: DesiredTable) -> dict[str, str]:
        """The properties `table` should have: its own and lance-sync's marks (shared: read only)."""
        cache_key = (id(table.properties), table.protect, table.on_remove)
        wanted = self._wanted.get(cache_key)
        if wanted is None:
            wanted = self._wanted[cache_key] = {**table.properties,
                                                **marks(self.owner, table.protect, table.on_remove)}
        return wanted

    def holds(self, want: dict[str, str], live: dict[str, str]) -> bool:
        """Every wanted property there, and no mark beyond the wanted ones."""
        pair = (id(want), id(live))
        known = self._in_sync.get(pair)
        if known is None:
            known = want.items() <= live.items() and live.keys() & MANAGED_KEYS <= want.keys()
            if len(self._in_sync) < _IN_SYNC_PAIRS:  # a backend whose tables share no dicts: no memo
                self._in_sync[pair] = known
        return known


@dataclass
class InSync:
    """What the fast path found of a desired state in a read."""

    #: per table of the desired state, in order: in sync
    unchanged: list[bool]
    #: live registrations the manifest declares at their own location (those of the tables in
    #: sync among them): a plan neither removes nor moves them
    matched: set[ObjectKey]


def unchanged_tables(desired: DesiredState, live: LiveState) -> list[bool]:
    """For each table of `desired` in order, whether it is in sync (see the module docstring)."""
    return in_sync(desired, live).unchanged


def unmatched(desired: DesiredState, live: LiveState) -> list[tuple[ObjectKey, str | None]]:
    """The live registrations the fast path did not match (undeclared, or declared at another
    location), in the live state's order, each with the location the manifest declares for it
    (None where it does not declare it): every removal and move of a plan is among them. None
    at all, without looking at one, where every live registration is matched."""
    found = in_sync(desired, live)
    if len(found.matched) == len(live.tables):  # each matched one is a live one: all of them
        return []
    declared = {(r.backend, r.id): t.location
                for t, same in zip(desired.tables, found.unchanged, strict=True) if not same for r in t.registrations}
    return [(key, declared.get(key)) for key in live.tables if key not in found.matched]


def in_sync(desired: DesiredState, live: LiveState) -> InSync:
    """The tables of `desired` in sync in `live`: worked out once per read and desired state (a
    plan asks before it inspects the locations, and again as it compares). The reason each
    other table is compared in full is logged at DEBUG."""
    known = live.in_sync
    if known is not None and known[0] is desired and len(known[1].unchanged) == len(desired.tables):
        return known[1]
    properties = PropertiesInSync(desired.owner)
    found = _in_sync(desired, live, properties)
    live.in_sync = (desired, found)
    if logger.isEnabledFor(logging.DEBUG):
        _log_compared_in_full(desired, live, properties, found.unchanged)
    return found


def _in_sync(desired: DesiredState, live: LiveState, properties: PropertiesInSync) -> InSync:
    tables, namespaces = live.tables, live.namespaces
    #: (id of the declared properties, protect, on_remove, id of the live ones) -> in sync: one
    #: look-up a table where the dicts are shared (each dict lives as long as `desired`, `live`)
    known: dict[tuple[int, bool, str, int], bool] = {}
    unchanged: list[bool] = []
    matched: list[ObjectKey] = []
    for table in desired.tables:
        same = not (table.columns or table.source)
        if same:
            location, declared = table.location, id(table.properties)
            for registration in table.registrations:
                key = (registration.backend, registration.id)
                info = tables.get(key)
                if info is None or info.location != location:
                    same = False
                    break
                matched.append(key)
                if not info.is_lance:
                    same = False
                    break
                pair = (declared, table.protect, table.on_remove, id(info.properties))
                holds = known.get(pair)
                if holds is None:
                    holds = properties.holds(properties.wanted(table), info.properties)
                    if len(known) < _IN_SYNC_PAIRS:
                        known[pair] = holds
                if not holds or (registration.backend, registration.id[:-1]) not in namespaces:
                    same = False
                    break
        unchanged.append(same)
    return InSync(unchanged, set(matched))


def _log_compared_in_full(desired: DesiredState, live: LiveState, properties: PropertiesInSync,
                          unchanged: list[bool]) -> None:
    reasons: Counter[str] = Counter()
    for table, same in zip(desired.tables, unchanged, strict=True):
        if same:
            continue
        why = _why_compared(table, live, properties)
        reasons[why.split(":")[0]] += 1
        if sum(reasons.values()) <= _LOGGED:
            logger.debug("table '%s' is compared in full: %s", table.name, why)
    if reasons:
        logger.debug("%d of %d tables compared in full (%s)", sum(reasons.values()), len(unchanged),
                     ", ".join(f"{count} {why}" for why, count in reasons.most_common()))


def _why_compared(table: DesiredTable, live: LiveState, properties: PropertiesInSync) -> str:
    """Why the fast path does not take `table`, in words (the first reason found)."""
    if table.columns or table.source:
        return "declares data: its dataset is compared"
    want = properties.wanted(table)
    for registration in table.registrations:
        where = f"{registration.backend}:{'.'.join(registration.id)}"
        info = live.tables.get((registration.backend, registration.id))
        if info is None:
            return f"not registered: {where}"
        if not info.is_lance:
            return f"not a Lance table: {where}"
        if info.location != table.location:
            return f"registered elsewhere: {where} at {info.location}, declared at {table.location}"
        if not properties.holds(want, info.properties):
            return f"properties differ: {where}"
        if (registration.backend, registration.id[:-1]) not in live.namespaces:
            return f"namespace not read: {where}"
    return "in sync"  # not reached: the fast path takes such a table
