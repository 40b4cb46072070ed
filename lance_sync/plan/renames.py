"""Renames: which live registration a table's `renamed_from` names, and which removals and
creates of a plan look like a rename nobody declared.

A declared registration whose id is free is paired with a former id (`Registration.renamed_from`)
when exactly one of them is registered live in the same backend as a Lance table with this
owner's mark, at the table's own location. The comparison then plans one rename (or, where the
backend cannot rename, one replace) instead of a create and a forget. Anything else is planned
as without `renamed_from`, with a note saying why a former id that is there was not taken:
never a rename on a guess.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from lance_sync.drivers.base import Identifier, TableInfo
from lance_sync.model.action_rows import Actions
from lance_sync.model.actions import Action, Kind, Verb
from lance_sync.model.desired import DesiredState, DesiredTable, Registration
from lance_sync.model.marks import owner_of
from lance_sync.plan.observe import LiveState, ObjectKey


@dataclass(frozen=True)
class Pairing:
    """The live registration a declared one is renamed from."""

    former: Identifier
    info: TableInfo


@dataclass
class Renames:
    #: (backend, declared id) -> the live registration renamed to it
    pairs: dict[ObjectKey, Pairing] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def vacated(self) -> set[ObjectKey]:
        """The former registrations the plan renames: not removed, whatever the manifest says."""
        return {(backend, pairing.former) for (backend, _id), pairing in self.pairs.items()}


def pair_renames(desired: DesiredState, live: LiveState) -> Renames:
    """Each declared registration that is absent and was registered under exactly one of its
    former ids (this owner's, at the table's location), and notes on the former ids left."""
    renames = Renames()
    for table in desired.tables:
        for registration in table.registrations:
            if registration.renamed_from and (registration.backend, registration.id) not in live.tables:
                _pair(renames, desired, live, table, registration)
    return renames


def _pair(renames: Renames, desired: DesiredState, live: LiveState, table: DesiredTable,
          registration: Registration) -> None:
    backend = registration.backend
    format_id = desired.backends[backend].format_id
    usable = []
    for former in registration.renamed_from:
        info = live.tables.get((backend, former))
        if info is None:
            continue
        why_not = _why_not_renamed(info, table, desired.owner)
        if why_not is None:
            usable.append(Pairing(former, info))
        else:
            renames.notes.append(f"table '{table.name}': {backend}: {format_id(former)} (renamed_from) is not "
                                 f"renamed to {format_id(registration.id)}: it {why_not}")
    if len(usable) == 1:
        renames.pairs[(backend, registration.id)] = usable[0]
    elif usable:
        found = ", ".join(format_id(p.former) for p in usable)
        renames.warnings.append(
            f"table '{table.name}': {backend}: several former ids are registered ({found}); none is renamed to "
            f"{format_id(registration.id)}, which is declared again, and the others are removed as having left "
            "the manifest. Remove all but one by hand, or drop the others from renamed_from")


def _why_not_renamed(info: TableInfo, table: DesiredTable, owner: str) -> str | None:
    """Why a live registration under a former id is not the one to rename; None when it is."""
    if not info.is_lance:
        return "is not a Lance table"
    live_owner = owner_of(info.properties)
    if live_owner is None:
        return "has no lance-sync owner mark (only this owner's registrations are renamed)"
    if live_owner != owner:
        return f"is owned by '{live_owner}'"
    if info.location != table.location:
        return f"points at {info.location}, not at the table's location {table.location}"
    return None


def rename_hints(actions: Actions, format_id: Callable[[str, Identifier], str]) -> list[str]:
    """A note for each declared registration that is created while a registration of the same
    location in the same backend is forgotten: probably a rename that `renamed_from` should say."""
    forgotten: dict[tuple[str, str | None], Action] = {
        (a.backend, a.location): a for a in actions.kept() if a.kind == Kind.TABLE and a.verb == Verb.FORGET
        and a.location}
    hints: list[str] = []
    for action in actions if forgotten else ():  # a first plan forgets nothing: its creates are not made
        old = forgotten.get((action.backend, action.location))
        if action.kind != Kind.TABLE or action.verb != Verb.CREATE or old is None:
            continue
        same_namespace = old.id[:-1] == action.id[:-1]
        name = old.id[-1] if same_namespace else format_id(old.backend, tuple(old.id))
        hints.append(f"{action.backend}: {action.display_id} looks like a rename of {old.display_id}: add "
                     f"renamed_from: {name} to table '{action.table}' to rename it in place (same table id) "
                     "instead of declaring it again and forgetting the old registration")
    return hints
