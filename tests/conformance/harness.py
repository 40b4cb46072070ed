"""What the backend-independent conformance suite needs to know about one backend.

Each backend supplies a `Harness` subclass (tests/conformance/harness_<type>.py). The
suite (tests/conformance/test_*.py) is the same for all backends: it only talks to the
driver, except where it asks the harness to look through an independent client.
"""

from __future__ import annotations

import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
from lance_namespace import (
    CreateNamespaceRequest,
)

from lance_sync.drivers.base import Identifier, SyncNamespace
from lance_sync.model.grants import GrantMap, Securable
from tests.servers.base import RunningServer


@dataclass
class SpecBehaviour:
    """Where the backend specs differ; the suite asserts each backend's own spec."""

    #: DropNamespace of a missing namespace succeeds (Iceberg) instead of NamespaceNotFound
    drop_missing_namespace_succeeds: bool = False
    #: DropNamespace behavior Cascade is in the spec (Unity's force delete, Hive); elsewhere
    #: it is UnsupportedOperation
    drop_cascade: bool = False
    #: DescribeTable of a non-Lance table raises InvalidInput (13); False where no foreign table can be made
    foreign_table_is_invalid_input: bool = True
    #: DropTable deletes the table's data (dir, as pylance's DirectoryNamespace); the catalog
    #: specs have DeregisterTable only, so DropTable is UnsupportedOperation there
    drop_table: bool = False
    #: names the backend stores lower-cased (Glue, Hive): round-trip tests use lower-case names
    lower_case_names: bool = False
    #: characters the backend accepts in names, of " ", "%", ".", "$", unicode
    name_characters: tuple[str, ...] = (" ", "%", ".", "$", "é")
    extra: dict[str, Any] = field(default_factory=dict)


class Harness(ABC):
    backend_type: str
    #: the session fixture (tests/servers/fixtures.py) this backend runs against
    server_fixture: str
    behaviour = SpecBehaviour()
    #: how coarse `table_identity` is when it is a time (HMS keeps seconds): tests that compare
    #: it wait this long first, so that an identity made anew would differ
    identity_resolution_seconds: float = 0.0

    def __init__(self, server: RunningServer, data_root: Path):
        self.server = server
        self.data_root = data_root

    @abstractmethod
    def config(self) -> dict[str, Any]:
        """Manifest-style backend configuration (without `type`), for this server."""

    def driver(self) -> SyncNamespace:
        from lance_sync.drivers import connect

        return connect(self.backend_type, self.config())

    @abstractmethod
    def parent_namespace(self) -> Identifier:
        """A namespace that exists (or is the catalog) and under which test namespaces are created."""

    def unique(self, prefix: str = "t") -> str:
        """A fresh name, valid in every backend (lower-case letters, digits and '_')."""
        return f"{prefix}_{uuid.uuid4().hex[:10]}"

    def new_namespace_id(self, name: str | None = None) -> Identifier:
        """An id for a namespace that can hold tables (not created)."""
        return (*self.parent_namespace(), name or self.unique("ns"))

    def location(self, name: str) -> str:
        return str(self.data_root / f"{name}.lance")

    @abstractmethod
    def create_foreign_table(self, namespace: Identifier, name: str) -> None:
        """Create a table that is NOT a Lance table, with the backend's own independent client."""

    @abstractmethod
    def check_lance_table(self, table_id: Identifier, location: str, properties: dict[str, str]) -> None:
        """Assert, through the independent client, that the table is registered as the spec says."""

    def table_identity(self, table_id: Identifier) -> Any:
        """What, through the independent client, tells this table from another registered in
        its place (an Iceberg table's UUID, a Hive table's create time): a rename or a location
        change in place keeps it, a replace does not. None where the client shows nothing."""
        return None

    # --- grants (tests/conformance/test_grants.py), where `capabilities().grants` says so ----

    def wait_out_identity_resolution(self) -> None:
        """Wait until a table registered anew would get another `table_identity`: only where the
        identity is a time (`identity_resolution_seconds`); elsewhere a wait would prove nothing."""
        if self.identity_resolution_seconds:
            time.sleep(self.identity_resolution_seconds + 0.1)

    def grant_principals(self) -> list[str]:
        """Three principals that can hold grants on this server, as a manifest names them
        (created on the server first where it needs that), of the kinds the backend has."""
        raise NotImplementedError(f"{self.backend_type} has no grants")

    def grant_examples(self, kind: Securable) -> list[str]:
        """Three privileges a grant on a `kind` may name, in canonical spelling."""
        raise NotImplementedError(f"{self.backend_type} has no grants")

    def read_grants(self, kind: Securable, id: Identifier) -> GrantMap:
        """Every principal's privileges on the object, read through the independent client."""
        raise NotImplementedError(f"{self.backend_type} has no grants")

    def grant_out_of_band(self, kind: Securable, id: Identifier, principal: str, privileges: list[str]) -> None:
        """Grant through the independent client, as another tool or a person would."""
        raise NotImplementedError(f"{self.backend_type} has no grants")

    def requests_served(self) -> int:
        return self.server.requests_served()

    def reset_requests(self) -> None:
        self.server.reset_request_count()


def new_namespace(harness: Harness, driver, name: str | None = None, **properties: str) -> tuple[str, ...]:
    namespace = harness.new_namespace_id(name)
    driver.create_namespace(CreateNamespaceRequest(id=list(namespace), properties=properties or None))
    return namespace


def write_dataset(location: str) -> None:
    lance.write_dataset(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), location)
