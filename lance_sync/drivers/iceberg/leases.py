"""Apply leases on an Iceberg REST catalog: a small table whose every change is a conditional commit."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from lance_namespace import CreateNamespaceRequest
from lance_namespace.errors import (
    ConcurrentModificationError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

from lance_sync.drivers.base import Identifier
from lance_sync.drivers.iceberg.answers import LeaseTableAnswer
from lance_sync.drivers.iceberg.client import IcebergClient
from lance_sync.drivers.iceberg.errors import ErrorMeanings
from lance_sync.drivers.iceberg.identifiers import display, split_namespace
from lance_sync.drivers.leases import (
    PREVIOUS_FORMAT,
    LeaseRecord,
    StoredLease,
    TableLeaseRegister,
    not_a_lease,
)
from lance_sync.drivers.support.retry import with_retries

if TYPE_CHECKING:
    from lance_sync.drivers.iceberg.driver import IcebergNamespace

#: the Iceberg table that holds an apply lease, in the lease namespace
LEASE_TABLE = "lease"
#: every lease swap is a commit: keep only the current metadata file of the lease table
LEASE_TABLE_PROPERTIES = {"write.metadata.delete-after-commit.enabled": "true",
                          "write.metadata.previous-versions-max": "1"}


class IcebergLeaseRegister(TableLeaseRegister):
    """An apply lease as the table `lease` of the lease namespace, its properties the record.

    Every swap is one commit with the requirements `assert-table-uuid` (the same table, not one
    dropped and created again) and `assert-current-schema-id` (no commit since the lease was
    read): each swap adds a new schema (ids only grow), makes it current and removes the old
    one, so the catalog answers 409 CommitFailed to any commit made against an older read. The
    version is the table uuid and current schema id. A released lease stays, marked released
    (dropping a table is not conditional in the REST API).

    A namespace of that name holding a record in its properties is a lease of lance-sync before
    this register (no table): it is read as the lease, and replacing it creates the table.
    """

    driver: IcebergNamespace

    def __init__(self, client: IcebergClient, driver: IcebergNamespace, namespace: Identifier):
        """Every call of the register goes out through `client`; `driver` is the namespace
        contract the lease protocol uses besides (creating the lease namespace, the lease of
        before this register)."""
        self.client = client
        self.table = (*namespace, LEASE_TABLE)
        super().__init__(driver, namespace, f"{driver.namespace_id()} {list(self.table)}", display(self.table))

    def create(self, record: LeaseRecord) -> StoredLease | None:
        warehouse, levels = split_namespace(self.namespace)
        body = {"name": LEASE_TABLE, "schema": _lease_schema(0), "stage-create": False,
                "properties": {**LEASE_TABLE_PROPERTIES, **record.to_properties()}}
        tables = self.client.namespace_path(warehouse, levels) + "/tables"
        meanings: ErrorMeanings = {404: NamespaceNotFoundError, 409: TableAlreadyExistsError}
        for _ in range(2):
            try:
                # sent again after a lost answer: a create that landed then answers 409, and the
                # lease protocol reads the lease back and finds its own record
                created = self.client.send("POST", tables, json=body, expect=LeaseTableAnswer,
                                           meanings=meanings, retry_safe=True)
            except TableAlreadyExistsError:
                return None
            except NamespaceNotFoundError:  # the first lease of this owner here
                request = CreateNamespaceRequest(id=list(self.namespace), mode="ExistOk")
                with_retries(functools.partial(self.driver.create_namespace, request), self.driver.config.max_retries)
                continue
            return StoredLease(record, created.metadata.version())
        raise NamespaceNotFoundError(f"iceberg: the lease namespace {display(self.namespace)} "
                                     "was dropped each time its table was created")

    def read(self) -> StoredLease | None:
        try:
            loaded = self.client.send("GET", self.client.table_path(self.table), expect=LeaseTableAnswer,
                                      meanings={404: TableNotFoundError})
        except TableNotFoundError:
            return self.previous_format()
        record = LeaseRecord.from_properties(loaded.metadata.properties)
        if record is None:
            raise not_a_lease(self.label)
        return StoredLease(record, loaded.metadata.version())

    def swap(self, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        if expected.version == PREVIOUS_FORMAT:
            return self.replace_previous_format(expected, record)
        table_uuid, _, schema_id = expected.version.rpartition("/")
        current = int(schema_id)
        properties = record.to_properties()
        updates: list[dict[str, Any]] = [
            {"action": "add-schema", "schema": _lease_schema(current + 1)},
            {"action": "set-current-schema", "schema-id": -1},
            {"action": "remove-schemas", "schema-ids": [current]},
            {"action": "set-properties", "updates": properties},
        ]
        gone = [key for key in expected.record.to_properties() if key not in properties]
        if gone:
            updates.append({"action": "remove-properties", "removals": gone})
        commit = {"requirements": [{"type": "assert-table-uuid", "uuid": table_uuid},
                                   {"type": "assert-current-schema-id", "current-schema-id": current}],
                  "updates": updates}
        try:
            # conditional, so sending it again is safe: a resend after it landed fails the requirements
            committed = self.client.send("POST", self.client.table_path(self.table), json=commit,
                                         expect=LeaseTableAnswer, retry_safe=True,
                                         meanings={404: TableNotFoundError, 409: ConcurrentModificationError})
        except (TableNotFoundError, ConcurrentModificationError):
            return None
        return StoredLease(record, committed.metadata.version())


def _lease_schema(schema_id: int) -> dict[str, Any]:
    """The lease table's schema number `schema_id`: one optional string column named after it, so
    that each schema differs from the one before (an equal schema would be reused, not added)."""
    return {"type": "struct", "schema-id": schema_id,
            "fields": [{"id": 1, "name": f"lease_{schema_id}", "type": "string", "required": False}]}
