"""The compact form of a large plan's actions: a first plan of a large estate is a million
creates of tables, alike but for their id, location and name. `Actions` keeps each such create
as a row (`TableCreate`) of those three and the part it shares with others (`CreateShape`),
and makes its `Action` when it is read; the other actions are kept as they are.

An action made of a row is a new object on each read: to change one, store it back
(`actions[i] = action`, as lance_sync.model.policy.enforce does).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple, TypeVar, overload

from lance_sync.model.actions import ABSENT, Action, DatasetStatus, Kind, ObjectState, Reason, Verb

#: a create of a table's `detail`
ABSENT_DETAIL: Final = "declared in the manifest, absent"

Validated = TypeVar("Validated", Action, ObjectState)


@dataclass(frozen=True, slots=True)
class CreateShape:
    """What the creates of many tables share: all but the id, location and table name (one
    shape for a million creates of a first plan). Read only, as the actions made of it share
    its properties and keys."""

    backend: str
    #: the backend's display id of a table id (BackendSpec.format_id)
    format_id: Callable[[tuple[str, ...]], str]
    properties: dict[str, str]
    keys: list[str]
    dataset: DatasetStatus | None
    blocked: str | None
    warnings: tuple[str, ...]
    depends_on: tuple[str, ...]
    #: a create of this shape and the state it creates, validated once: each row's action is a
    #: copy of them (`TableCreate.made`)
    prototype: Action = field(init=False, repr=False, compare=False)
    state: ObjectState = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "state", ObjectState(location="-", properties=self.properties))
        object.__setattr__(self, "prototype", Action(
            verb=Verb.CREATE, kind=Kind.TABLE, reason=Reason.ABSENT, backend=self.backend, id=["-"],
            display_id="-", detail=ABSENT_DETAIL, after=self.state,
            compared_keys=self.keys, fingerprint=ABSENT, depends_on=list(self.depends_on),
            warnings=list(self.warnings), dataset=self.dataset, blocked=self.blocked))


class TableCreate(NamedTuple):
    """A create of a table kept as a row: a tuple of 4, where its `Action` with its states and
    lists takes ten times as much (`made` makes it)."""

    shape: CreateShape
    id: tuple[str, ...]
    location: str
    table: str

    def made(self) -> Action:
        shape = self.shape
        prototype = shape.prototype
        return _copy(prototype, id=list(self.id), display_id=shape.format_id(self.id),
                     after=_copy(shape.state, location=self.location), depends_on=list(shape.depends_on),
                     warnings=list(shape.warnings), registrations=[], privileges=[], table=self.table)


def _copy(validated: Validated, **changes: Any) -> Validated:
    """A copy of a validated slotted dataclass (`Action`, `ObjectState`) with `changes`, not
    validated again: the rows of a plan are made into actions on every read (a plan of a
    million creates is shown, saved and run), and validating each again took twice as long
    (10 µs an action, against 5).
    `changes` are of the types their fields hold, and give each made action lists of its own."""
    copied = object.__new__(type(validated))
    for name in type(validated).__slots__:
        object.__setattr__(copied, name, changes[name] if name in changes else getattr(validated, name))
    return copied


def _made(item: Action | TableCreate) -> Action:
    return item.made() if isinstance(item, TableCreate) else item


class Actions(Sequence[Action]):
    """A plan's actions, the creates of tables among them kept as rows and made `Action`
    objects one at a time as they are read: a first plan of a million tables holds a tenth of
    what a million actions take."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[Action | TableCreate] = ()):
        self._items: list[Action | TableCreate] = list(items)

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Action: ...

    @overload
    def __getitem__(self, index: slice) -> list[Action]: ...

    def __getitem__(self, index: int | slice) -> Action | list[Action]:
        if isinstance(index, slice):
            return [_made(item) for item in self._items[index]]
        return _made(self._items[index])

    def __setitem__(self, index: int, action: Action) -> None:
        self._items[index] = action

    def __iter__(self) -> Iterator[Action]:
        return map(_made, self._items)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Actions({len(self._items)} actions)"

    def append(self, action: Action) -> None:
        self._items.append(action)

    def __iadd__(self, actions: Iterable[Action]) -> Actions:
        self._items += actions
        return self

    def blocked(self) -> list[Action]:
        """The blocked actions (Plan.blocked), a row's made only when its shape is blocked."""
        return [_made(item) for item in self._items
                if (item.shape.blocked if isinstance(item, TableCreate) else item.blocked)]

    def kept(self) -> Iterator[Action]:
        """The actions that are not rows: all but the creates kept as rows, without making any."""
        return (item for item in self._items if isinstance(item, Action))

    def sort(self, key: Callable[[Action], Any]) -> None:
        """Sort by `key`, stably. The rows keep their order among themselves: `key` must agree
        with it (`action_order` does, and a key that begins with it); each row's action is made
        once to place it."""
        kept: list[Action | TableCreate] = [*sorted(self.kept(), key=key)]
        rows = [item for item in self._items if isinstance(item, TableCreate)]

        def placed(item: Action | TableCreate) -> Any:
            return key(_made(item))
        self._items = list(heapq.merge(kept, rows, key=placed)) if rows else kept

    def with_rows(self, rows: list[TableCreate], key: Callable[[Action | TableCreate], Any]) -> None:
        """Add creates kept as rows to the actions, both in the order `key` gives (of an
        action, and of a row as of its action): each goes where its action would."""
        if rows:
            self._items = list(heapq.merge(self._items, rows, key=key))
