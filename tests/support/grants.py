"""The grants life cycle through the CLI on a backend with grants: shared by the life cycle
itself (tests/e2e/test_grants_cli.py), the same cycle under faults (test_grant_faults.py) and
principals leaving the manifest (test_grants_left_manifest.py)."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
import yaml

from lance_sync.model.grants import GrantMap
from tests.conformance.conftest import harness_class
from tests.conformance.harness import Harness
from tests.support.catalogs import GLUE_KEY_VARIABLE, GLUE_SECRET_VARIABLE, glue_env
from tests.support.cli import LANCE_SYNC, cli_env, describe, run_cli

#: every backend with grants
BACKENDS = ["unity", "hive3", "hms", "glue"]


def harness_fixture() -> Callable[..., Harness]:
    """A `harness` fixture for a test module: one harness per backend with grants."""
    @pytest.fixture(params=BACKENDS)
    def harness(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Harness:
        cls = harness_class(request.param)
        server = request.getfixturevalue(cls.server_fixture)
        return cls(server, tmp_path_factory.mktemp(f"grants_{request.param}"))

    return harness


def ours(grants: GrantMap, principals: list[str]) -> dict[str, set[str]]:
    return {p: set(privileges) for p, privileges in grants.items() if p in principals and privileges}


class Lifecycle:
    """A manifest of one namespace and one table with grants, for one backend."""

    def __init__(self, harness: Harness, tmp_path: Path):
        self.harness = harness
        self.path = tmp_path / "lance-sync.yaml"
        self.owner = f"grants-{uuid.uuid4().hex[:8]}"
        self.namespace = list(harness.new_namespace_id())
        self.table = [*self.namespace, "orders"]
        self.location = tmp_path / "orders.lance"
        lance.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64())}), str(self.location))
        self.env = cli_env()
        self.backend: dict[str, Any] = {"type": harness.backend_type, **harness.config()}
        if harness.backend_type == "glue" and "access_key_id" in self.backend:
            self.backend.update(access_key_id=f"${{{GLUE_KEY_VARIABLE}}}",
                                secret_access_key=f"${{{GLUE_SECRET_VARIABLE}}}")
            self.env.update(glue_env(harness.server))

    def write(self, namespace_grants: dict[str, list[str]], table_grants: dict[str, list[str]],
              table_mode: str | None = None, policy: dict[str, Any] | None = None) -> None:
        registration: dict[str, Any] = {"backend": "b", "namespace": self.namespace, "grants": table_grants}
        if table_mode:
            registration["grants_mode"] = table_mode
        document: dict[str, Any] = {
            "version": 1, "owner": self.owner, "backends": {"b": self.backend},
            "namespaces": [{"backend": "b", "id": self.namespace, "grants": namespace_grants}],
            "tables": [{"name": "orders", "location": str(self.location), "register": [registration]}]}
        if policy:
            document["policy"] = policy
        self.path.write_text(yaml.safe_dump(document, sort_keys=False))

    def run(self, command: str, *args: str, expect: int | None = 0) -> str:
        """The command's stdout; its exit code must be `expect` (None: any, kept in `last_exit`)."""
        result = run_cli(self.path, command, *args, env=self.env)
        self.last_exit = result.returncode
        assert expect is None or result.returncode == expect, describe(result)
        return result.stdout

    def table_grants(self, principals: list[str]) -> dict[str, set[str]]:
        return ours(self.harness.read_grants("table", tuple(self.table)), principals)

    def namespace_grants(self, principals: list[str]) -> dict[str, set[str]]:
        return ours(self.harness.read_grants("namespace", tuple(self.namespace)), principals)


def apply_plan(life: Lifecycle, plan: Path, *flags: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    """`lance-sync apply PLAN` (no manifest): a saved or rollback plan."""
    result = subprocess.run([LANCE_SYNC, "apply", str(plan), "--auto-approve", *flags], capture_output=True,
                            text=True, env=life.env, cwd=life.path.parent, timeout=300)
    assert result.returncode == expect, describe(result)
    assert "Traceback" not in result.stdout + result.stderr, describe(result)
    return result
