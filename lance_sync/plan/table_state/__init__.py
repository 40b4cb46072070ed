"""The planning of a dataset's own state: its columns, indexes, tags and old versions, each
compared with what the manifest declares in a module of its own, called from `Comparer`
(columns: `columns.plan_columns`; indexes, their maintenance, tags and retention:
`plan_table_state`, once, after the tables' data is planned).

Only tables that declare some state are looked at, and only what lance-sync made is moved or
removed: an index it recorded in the dataset's config, a tag whose metadata names this owner,
old versions of a dataset that carries this owner's record. Everything else is listed as left
alone."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from lance_sync.model.actions import Action, Address, DatasetStatus, Kind, dataset_key
from lance_sync.model.desired import DesiredState
from lance_sync.model.table_state import LiveTableState
from lance_sync.plan.table_state import indexes, retention, tags
from lance_sync.plan.table_state.context import PartsPlan, TableContext

__all__ = ["PartsPlan", "plan_table_state"]


def plan_table_state(desired: DesiredState, datasets: Mapping[str, DatasetStatus],
                     live: Mapping[str, LiveTableState], planned: Sequence[Action]) -> PartsPlan:
    """The part actions, notes, left-alone parts and conflicts of every table that declares
    its own state; `planned`: the comparison's actions so far (a dataset written by the plan,
    the column changes its part actions follow)."""
    out = PartsPlan()
    writes = {a.key: a for a in planned if a.kind == Kind.DATASET and a.after is not None}
    columns: dict[str | None, list[Action]] = defaultdict(list)
    for action in planned:
        if action.kind == Kind.COLUMN:
            columns[action.location].append(action)
    for table in desired.tables:
        if not table.table_state or not table.registrations:
            continue
        context = TableContext(table=table, owner=desired.owner, status=datasets.get(table.location),
                               live=live.get(table.location), write=writes.get(dataset_key(table.location)),
                               out=out, registrations=[
                                   Address(backend=r.backend, id=list(r.id),
                                           display_id=desired.backends[r.backend].format_id(r.id))
                                   for r in table.registrations])
        if context.live is not None and context.live.error:
            out.warnings.append(f"table '{table.name}': cannot read the state of {table.location}: "
                                f"{context.live.error}")
            continue
        made = len(out.actions)
        indexes.plan(context)
        tags.plan(context)
        retention.plan(context)
        _one_at_a_time([*columns.get(table.location, ()), *out.actions[made:]])
    return out


def _one_at_a_time(actions: list[Action]) -> None:
    """A dataset's column and part actions run in turn, in phase order (the columns' own order
    is one already): each is a commit to the same dataset, and concurrent ones preempt each
    other."""
    ordered = sorted(actions, key=lambda action: action.phase)
    for before, after in zip(ordered, ordered[1:], strict=False):
        after.depends_on = sorted({*after.depends_on, before.key})
