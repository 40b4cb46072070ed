"""Plans to render as reports: a small one with an action of each sort a reviewer meets (the
README's screenshot), and a large first plan of many tables."""

from __future__ import annotations

from typing import Any

from lance_sync.model.actions import (
    Action,
    Address,
    DatasetStatus,
    Kind,
    ObjectState,
    Plan,
    Reason,
    Verb,
    fingerprint,
)

#: a property value that is markup: every report shows it as text
HOSTILE_VALUE = "<img src=x onerror=alert(1)>"
BASE_DIR = "/srv/catalog"
OWNER_PROPS = {"lance_sync.owner": "platform"}


def action(verb: Verb, kind: Kind, backend: str, id: list[str], display_id: str, *, reason: Reason = Reason.ABSENT,
           detail: str = "declared in the manifest, absent", before: ObjectState | None = None,
           after: ObjectState | None = None, **more: Any) -> Action:
    keys = sorted({*(before.properties if before else {}), *(after.properties if after else {})})
    return Action(verb=verb, kind=kind, reason=reason, backend=backend, id=id, display_id=display_id, detail=detail,
                  before=before, after=after, compared_keys=keys, fingerprint=fingerprint(before, keys), **more)


def plan_of(actions: list[Action], **more: Any) -> Plan:
    return Plan(tool_version="0.9.0", created_at="2026-12-05T12:00:00+00:00", owner="platform",
                manifest_files=["lance-sync.yaml"], base_dir=BASE_DIR,
                backends={"lake": {"type": "dir"}, "unity": {"type": "unity"}}, actions=actions, **more)


def new_table(i: int, backend: str = "unity") -> Action:
    location = f"{BASE_DIR}/lakehouse/sales/table_{i:05d}.lance"
    return action(Verb.CREATE, Kind.TABLE, backend, ["main", "sales", f"table_{i:05d}"], f"main.sales.table_{i:05d}",
                  after=ObjectState(location=location, properties={**OWNER_PROPS, "team": "sales"}))


def first_plan(tables: int) -> Plan:
    """A first plan that registers `tables` tables in one catalog."""
    return plan_of([new_table(i) for i in range(tables)])


def sample_plan() -> Plan:
    """A plan with a change of each sort: a namespace, a dataset to write, a table to register,
    a table whose properties changed (one of them markup), a column and an index of a dataset,
    a grant, and a dataset to delete."""
    orders = f"{BASE_DIR}/lakehouse/sales/orders.lance"
    part: dict[str, Any] = {"registrations": [Address(backend="unity", id=["main", "sales", "orders"], display_id="main.sales.orders")]}
    return plan_of([
        action(Verb.CREATE, Kind.NAMESPACE, "unity", ["main", "sales"], "main.sales",
               after=ObjectState(properties={**OWNER_PROPS, "comment": "Sales data"})),
        action(Verb.CREATE, Kind.DATASET, "lake", [], orders, detail="no dataset at the location: write it",
               after=ObjectState(location=orders, columns=[{"name": "order_id", "type": "int64", "nullable": False},
                                                            {"name": "amount", "type": "double", "nullable": True}],
                                 source={"format": "parquet", "path": "./data/orders.parquet"}),
               dataset=DatasetStatus(status="missing")),
        action(Verb.CREATE, Kind.TABLE, "unity", ["main", "sales", "orders"], "main.sales.orders",
               after=ObjectState(location=orders, properties={**OWNER_PROPS, "tier": "gold"})),
        action(Verb.UPDATE, Kind.TABLE, "unity", ["main", "sales", "customers"], "main.sales.customers",
               reason=Reason.CHANGED, detail="declared properties differ from the live ones",
               before=ObjectState(location=f"{BASE_DIR}/lakehouse/sales/customers.lance",
                                  properties={**OWNER_PROPS, "tier": "silver", "note": "old"}),
               after=ObjectState(location=f"{BASE_DIR}/lakehouse/sales/customers.lance",
                                 properties={**OWNER_PROPS, "tier": "gold", "note": HOSTILE_VALUE})),
        action(Verb.CREATE, Kind.COLUMN, "lake", [], orders, part="discount", detail="a declared column is missing",
               after=ObjectState(location=orders, version=3,
                                 definition={"name": "discount", "type": "double", "nullable": True}), **part),
        action(Verb.REPLACE, Kind.INDEX, "lake", [], orders, part="order_id_idx", reason=Reason.CHANGED,
               detail="the index's type differs from the declared one",
               before=ObjectState(location=orders, version=3, definition={"column": "order_id", "type": "BTREE"}),
               after=ObjectState(location=orders, version=3, definition={"column": "order_id", "type": "BITMAP"}),
               **part),
        action(Verb.GRANT, Kind.TABLE, "unity", ["main", "sales", "orders"], "main.sales.orders",
               detail="a declared privilege is missing", principal="analysts", privileges=["SELECT"],
               before=ObjectState(privileges=[]), after=ObjectState(privileges=["SELECT"])),
        action(Verb.DELETE, Kind.DATASET, "lake", [], f"{BASE_DIR}/lakehouse/sales/returns_2019.lance",
               reason=Reason.LEFT_MANIFEST, detail="owned by 'platform' and no longer in the manifest",
               before=ObjectState(location=f"{BASE_DIR}/lakehouse/sales/returns_2019.lance", version=12)),
    ], warnings=["backend 'unity': 2 namespaces were not listed (no permission)"])
