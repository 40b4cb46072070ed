"""What the planning of one table's own state shares: the table, what its dataset is and
holds, and where its actions and findings go."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lance_sync.model.actions import (
    Action,
    Address,
    DatasetStatus,
    Kind,
    LeftAlone,
    ObjectState,
    Reason,
    Verb,
    fingerprint,
)
from lance_sync.model.desired import DesiredTable
from lance_sync.model.table_state import LiveTableState


@dataclass
class PartsPlan:
    actions: list[Action] = field(default_factory=list)
    left_alone: list[LeftAlone] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: (message, table): what no action can fix (a tag naming a version that does not exist)
    conflicts: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class TableContext:
    table: DesiredTable
    owner: str
    status: DatasetStatus | None
    #: the dataset's state as read; None when it was not read (no dataset yet)
    live: LiveTableState | None
    #: the plan's write of the dataset (create or rewrite), if it has one
    write: Action | None
    out: PartsPlan
    #: the table's registrations: a part action is targeted (--target) by them too
    registrations: list[Address] = field(default_factory=list)

    @property
    def declared(self) -> dict[str, Any]:
        return self.table.table_state or {}

    @property
    def location(self) -> str:
        return self.table.location

    @property
    def backend(self) -> str:
        return self.table.registrations[0].backend

    @property
    def readable(self) -> bool:
        """The dataset is there, read, and not rewritten by this plan."""
        return self.live is not None and self.write is None and self.status is not None \
            and self.status.status == "valid"

    def state(self, definition: dict[str, Any] | None, version: int | None = None) -> ObjectState | None:
        if definition is None:
            return None
        return ObjectState(location=self.location, version=version, definition=definition)

    def action(self, verb: Verb, kind: Kind, reason: Reason, part: str | None, *, before: ObjectState | None,
               after: ObjectState | None, detail: str) -> Action:
        """A part action as every part's is made: addressed by location and part, run with the
        storage options of the table's first registration, after the plan's write of the dataset."""
        display = f"{self.location}#{part}" if part is not None else self.location
        action = Action(verb=verb, kind=kind, reason=reason, backend=self.backend, id=[], display_id=display,
                        detail=detail, before=before, after=after, fingerprint=fingerprint(before, []),
                        table=self.table.name, part=part, registrations=self.registrations,
                        depends_on=[self.write.key] if self.write is not None else [])
        self.out.actions.append(action)
        return action

    def left_alone(self, kind: Kind, part: str | None, reason: str) -> None:
        display = f"{self.location}#{part}" if part is not None else self.location
        self.out.left_alone.append(LeftAlone(kind=kind, backend=self.backend, id=[], display_id=display,
                                             reason=reason))

    def note(self, text: str) -> None:
        self.out.notes.append(f"table '{self.table.name}': {text}")
