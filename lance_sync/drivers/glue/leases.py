"""Apply leases on Glue: a table in the lease database, changed by conditional UpdateTable."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from lance_namespace import CreateNamespaceRequest
from lance_namespace.errors import (
    ConcurrentModificationError,
    InvalidInputError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

from lance_sync.drivers.base import Identifier, SyncNamespace
from lance_sync.drivers.glue.objects import DatabaseRef, parameters_of
from lance_sync.drivers.glue.transport import MAX_RETRIES
from lance_sync.drivers.leases import (
    PREVIOUS_FORMAT,
    LeaseRecord,
    StoredLease,
    TableLeaseRegister,
    not_a_lease,
)
from lance_sync.drivers.support.retry import BadAnswerError, with_retries

if TYPE_CHECKING:
    from lance_sync.drivers.glue.client import GlueClient

#: the Glue table that holds an apply lease, in the lease database
LEASE_TABLE = "lease"


class GlueLeaseRegister(TableLeaseRegister):
    """An apply lease as the table `lease` of the lease database, its Parameters the record.

    Every swap is one UpdateTable with the VersionId that was read: Glue refuses it with
    ConcurrentModificationException when the table changed since (optimistic locking, as
    Iceberg's GlueCatalog commits). SkipArchive keeps the table's archived versions, which Glue
    limits per table, from growing with every renewal. UpdateTable does not answer the new
    VersionId, so a swap is preceded by a GetTable unless the lease was just read. A released
    lease stays, marked released (DeleteTable is not conditional).

    A lease database whose Parameters hold a record is a lease of lance-sync before this
    register (no table): it is read as the lease, and replacing it creates the table.
    """

    def __init__(self, driver: SyncNamespace, client: GlueClient, database_id: Identifier):
        """`client` sends the lease's Glue calls; `driver` creates the lease database (the first
        lease there) and reads and clears a lease of the previous format."""
        self.client = client
        self.table_id = (*database_id, LEASE_TABLE)
        super().__init__(driver, database_id, f"{driver.namespace_id()} {list(self.table_id)}",
                         driver.format_identifier(self.table_id))

    def create(self, record: LeaseRecord) -> StoredLease | None:
        database = self._database()
        for _ in range(2):
            try:
                # sent again after a lost answer: a create that landed then meets AlreadyExists,
                # and the lease protocol reads the lease back and finds its own record
                self.client.call("CreateTable", self.label, missing=NamespaceNotFoundError,
                                 duplicate=TableAlreadyExistsError, retry_safe=True, CatalogId=database.catalog_id,
                                 DatabaseName=database.name,
                                 TableInput={"Name": LEASE_TABLE, "Parameters": record.to_properties()})
            except TableAlreadyExistsError:
                return None
            except NamespaceNotFoundError:  # the first lease of this owner here
                request = CreateNamespaceRequest(id=list(self.namespace), mode="ExistOk")
                with_retries(functools.partial(self.driver.create_namespace, request), MAX_RETRIES)
                continue
            return StoredLease(record, "")  # its VersionId is read before the first swap
        raise NamespaceNotFoundError(f"glue: the lease database of {self.label} was dropped each time "
                                     "its table was created")

    def read(self) -> StoredLease | None:
        database = self._database()
        found = self.client.call("GetTable", self.label, missing=None, CatalogId=database.catalog_id,
                                 DatabaseName=database.name, Name=LEASE_TABLE)
        if found is None:
            return self.previous_format()
        table = found["Table"]
        record = LeaseRecord.from_properties(parameters_of(table))
        if record is None:
            raise not_a_lease(self.label)
        if not table.get("VersionId"):
            raise BadAnswerError(f"glue: GetTable on {self.label} answered a table without VersionId, "
                                 "which the lease needs for its conditional updates")
        return StoredLease(record, table["VersionId"])

    def swap(self, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        if expected.version == PREVIOUS_FORMAT:
            return self.replace_previous_format(expected, record)
        version = self.version_to_swap(expected)
        if version is None:
            return None
        database = self._database()
        try:
            self.client.call("UpdateTable", self.label, missing=TableNotFoundError,
                             CatalogId=database.catalog_id, DatabaseName=database.name,
                             TableInput={"Name": LEASE_TABLE, "Parameters": record.to_properties()},
                             VersionId=version, SkipArchive=True)
        except (ConcurrentModificationError, TableNotFoundError):
            return None
        return StoredLease(record, "")

    def _database(self) -> DatabaseRef:
        database = self.client.namespace_refs(self.namespace)[0]
        if database is None:
            raise InvalidInputError(f"glue: {self.label} cannot hold a lease: its parent is not a catalog")
        return database


