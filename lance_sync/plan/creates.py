"""The creates of tables a comparer keeps as rows (lance_sync.model.actions.Actions): a first
plan of a large estate is a million of them, alike but for their id, location and name."""

from __future__ import annotations

from typing import Any

from lance_sync.model.action_rows import Actions, CreateShape, TableCreate
from lance_sync.model.actions import DatasetStatus
from lance_sync.model.backend_config import Identifier
from lance_sync.model.desired import BackendSpec, DesiredTable
from lance_sync.plan.order import item_order, sort_rows


class CreateRows:
    def __init__(self) -> None:
        self.rows: list[TableCreate] = []
        #: what creates share -> the one shape of it their rows share
        self._shapes: dict[tuple[Any, ...], CreateShape] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, spec: BackendSpec, table: DesiredTable, table_id: Identifier, properties: dict[str, str],
            keys: list[str], status: DatasetStatus | None, blocked: str | None, warnings: tuple[str, ...],
            depends_on: tuple[str, ...]) -> None:
        """A create of `table` under `table_id` in `spec`'s backend, to have `properties`
        (`keys`, `status`: objects many creates share, read only)."""
        shared = (spec.name, id(properties), id(keys), id(status), blocked, warnings, depends_on)
        shape = self._shapes.get(shared)
        if shape is None:
            shape = self._shapes[shared] = CreateShape(spec.name, spec.format_id, properties, keys, status, blocked,
                                                       warnings, depends_on)
        self.rows.append(TableCreate(shape, table_id, table.location, table.name))

    def join(self, actions: Actions) -> None:
        """Put the rows among `actions`, which are in action order, each where its action goes."""
        sort_rows(self.rows)
        actions.with_rows(self.rows, item_order)
