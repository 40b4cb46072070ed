"""The embedded directory backend: no server; pylance reads the manifest directly."""

from __future__ import annotations

from typing import Any

import lance
import pyarrow as pa

from lance_sync.drivers.base import Identifier
from lance_sync.model.locations import join_location, normalize_location
from tests.conformance.harness import Harness, SpecBehaviour


class DirHarness(Harness):
    backend_type = "dir"
    server_fixture = None
    behaviour = SpecBehaviour(name_characters=(" ", "%", ".", "é"), foreign_table_is_invalid_input=False,
                              drop_table=True)

    def config(self) -> dict[str, Any]:
        return {"root": str(self.data_root)}

    def parent_namespace(self) -> Identifier:
        return ()

    def create_foreign_table(self, namespace: Identifier, name: str) -> None:
        raise NotImplementedError("every table of a directory namespace is a Lance table")

    def check_lance_table(self, table_id: Identifier, location: str, properties: dict[str, str]) -> None:
        """pylance itself opens the manifest and finds the row, pointing at `location`."""
        rows = lance.dataset(str(self.data_root / "__manifest")).to_table(
            filter=pa.compute.field("object_id") == "$".join(table_id)).to_pylist()
        assert len(rows) == 1 and rows[0]["object_type"] == "table"
        found = join_location(normalize_location(str(self.data_root)), rows[0]["location"])
        assert found == normalize_location(location), (found, location)

    def table_identity(self, table_id: Identifier) -> Any:
        """The manifest row but its id and location: its properties (a directory catalog keeps
        no table id; a rename rewrites the row's id, a location change its location)."""
        rows = lance.dataset(str(self.data_root / "__manifest")).to_table(
            filter=pa.compute.field("object_id") == "$".join(table_id)).to_pylist()
        return {k: v for k, v in rows[0].items() if k not in ("object_id", "location")} if rows else None

    def requests_served(self) -> int:
        raise NotImplementedError("the dir backend has no server")

    def reset_requests(self) -> None:
        pass
