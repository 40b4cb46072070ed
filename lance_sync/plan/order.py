"""The order of a plan's actions: how they run and how they are shown.

Phase first (namespaces, data, registrations, removals: `Action.phase`), then depth (parents
before children; children first when namespaces are deleted), then backend and id.
"""

from __future__ import annotations

from operator import attrgetter

from lance_sync.model.action_rows import Actions, TableCreate
from lance_sync.model.actions import Action, Kind, Verb, operation_phase


def action_order(action: Action) -> tuple:
    """Execution and display order: phase, parents before children (children first on delete)."""
    return (*_rank(action), action.id, action.display_id)


def sort_actions(actions: Actions) -> None:
    """Sort `actions` in place by `action_order`. A first plan of a large estate has a million
    actions, and a key tuple for each would be the plan's largest allocation: this sorts by
    each part of the order in turn instead, the least significant first (each sort is stable),
    on values the actions hold or share."""
    actions.sort(key=attrgetter("display_id"))
    actions.sort(key=attrgetter("id"))
    actions.sort(key=_rank)


def item_order(item: Action | TableCreate) -> tuple:
    """`action_order` of an action, or of a create kept as a row as of its action (not made)."""
    if isinstance(item, Action):
        return action_order(item)
    return (*_row_rank(item), list(item.id), item.shape.format_id(item.id))


def sort_rows(rows: list[TableCreate]) -> None:
    """Sort creates kept as rows in place by `item_order`, on values they hold or share. The
    display id, last in the order, never decides: an id is created once in a backend."""
    rows.sort(key=attrgetter("id"))
    rows.sort(key=_row_rank)


#: the distinct ranks seen (few: phases, depths, backends), so that actions share them
_RANKS: dict[tuple[int, int, str], tuple[int, int, str]] = {}


def _rank(action: Action) -> tuple[int, int, str]:
    """The order's first part: phase, depth (parents first; children first on delete), backend."""
    depth = -len(action.id) if action.kind == Kind.NAMESPACE and action.verb == Verb.DELETE else len(action.id)
    rank = (action.phase, depth, action.backend)
    return _RANKS.setdefault(rank, rank)


def _row_rank(row: TableCreate) -> tuple[int, int, str]:
    rank = (operation_phase(Kind.TABLE, Verb.CREATE), len(row.id), row.shape.backend)
    return _RANKS.setdefault(rank, rank)
