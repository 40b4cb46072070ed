"""A rename (`renamed_from`) applied through a FaultProxy in front of the suite's Iceberg REST
server (upstream Iceberg's CatalogHandlers), with a fault on the rename request only.

A manifest registers one Lance table; `lance-sync apply` makes it. The manifest then renames it
(`renamed_from`, with a property change that comes with the rename), or moves it into another
namespace of the warehouse (a former name that is a whole id), and the proxy is set to
fault the first `POST .../tables/rename` and nothing else, at rate 1.0: the fault is where the
test puts it, never a matter of timing, and the seed is fixed.

- After forwarding (`dropped`, `truncated`): the catalog renames, the client sees its answer
  lost. The HTTP client does not send a POST again once it may have reached the server; the
  apply's runner tries the action again, the driver meets TableNotFound loading the source,
  and the runner recognises the rename as done (old id gone, new id holds this owner's table
  at the planned location), then makes the property change. The rename reaches the catalog
  once.
- Before forwarding: the catalog never saw the request, and the retry renames. After `reset`
  (the connection cut before anything is forwarded) the client cannot tell it from a lost
  answer: the runner tries again, the source is still there, the POST is sent again. After a
  `503` the HTTP client sends the POST again itself (a 503 says it was not carried out).

Either way apply exits 0 in one run, a plan then finds nothing to do, and the catalog, read
straight from the server with pyiceberg, holds exactly the new name: the same table (its
Iceberg UUID, location and metadata kept: never declared again), with the new property and
this owner's mark; no second registration, none missing, no create or drop ever sent.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.servers.base import RunningServer
from tests.servers.faults import FORWARDING_KINDS, FaultProxy, proxy_fixture
from tests.support.catalogs import OWNER_KEY, iceberg_backend, plain_path, pyiceberg
from tests.support.cli import cli_env, describe, run_cli

pytestmark = pytest.mark.servers

iceberg_proxy = proxy_fixture("iceberg_server")

SEED = 20261125
RENAME_PATH = r"/tables/rename$"


def write_manifest(path: Path, owner: str, server: RunningServer, root: Path,
                   namespaces: list[list[str]], table: dict[str, Any], namespace: list[str]) -> None:
    path.write_text(yaml.safe_dump({
        "version": 1, "owner": owner, "backends": {"ice": iceberg_backend(server, root)},
        "namespaces": [{"backend": "ice", "id": id} for id in namespaces],
        "tables": [{**table, "register": [{"backend": "ice", "namespace": namespace}]}],
    }, sort_keys=False))


def apply(manifest: Path, env: dict[str, str]) -> dict[str, Any]:
    result = run_cli(manifest, "apply", "--auto-approve", "--format", "json", env=env)
    assert result.returncode == 0, describe(result)
    return json.loads(result.stdout)


@pytest.mark.parametrize(("kind", "move"), [("dropped", False), ("truncated", False), ("reset", False),
                                            ("503", False), ("dropped", True), ("reset", True)],
                         ids=["dropped", "truncated", "reset", "503", "move-dropped", "move-reset"])
def test_a_rename_converges_when_its_request_or_its_answer_is_lost(
        iceberg_server: RunningServer, iceberg_proxy: FaultProxy, tmp_path: Path, kind: str, move: bool):
    owner = f"rename-faults-{uuid.uuid4().hex[:8]}"
    source = f"rename_faults_{uuid.uuid4().hex[:8]}"
    destination = f"{source}_archive" if move else source
    warehouse = iceberg_server.extra["warehouse"]
    namespaces = [[warehouse, source], [warehouse, f"{source}_archive"]]
    location = tmp_path / "data" / "orders.lance"
    manifest = tmp_path / "lance-sync.yaml"
    table: dict[str, Any] = {"name": "orders", "location": str(location), "properties": {"tier": "gold"}}
    write_manifest(manifest, owner, iceberg_proxy.server, tmp_path, namespaces, table, [warehouse, source])
    env = cli_env()
    apply(manifest, env)
    catalog = pyiceberg(iceberg_server)
    before = catalog.load_table((source, "orders")).metadata

    # renamed, or moved (a former name that is a whole id), with a property change that comes with it
    table.update(name="orders_v2", renamed_from=f"{warehouse}.{source}.orders" if move else "orders",
                 properties={"tier": "platinum"})
    write_manifest(manifest, owner, iceberg_proxy.server, tmp_path, namespaces, table, [warehouse, destination])
    iceberg_proxy.configure(rate=1.0, seed=SEED, kinds=[kind], only=RENAME_PATH, methods=["POST"],
                            max_faults_per_request=1)
    iceberg_proxy.reset_stats()
    document = apply(manifest, env)

    assert [(o["verb"], o["status"]) for o in document["outcomes"]] == [("rename", "succeeded")], document
    renames = [e.outcome for e in iceberg_proxy.events() if e.method == "POST" and e.path.endswith("/tables/rename")]
    # the catalog got the rename once: after a forwarded one, the retry recognised it as done
    assert renames == ([kind] if kind in FORWARDING_KINDS else [kind, "forwarded"]), renames
    writes = [(e.method, e.path.rpartition("/namespaces/")[2]) for e in iceberg_proxy.events()
              if e.method in ("POST", "DELETE") and f"/namespaces/{source}" in e.path]
    # one write in the namespaces: the property change, a commit on the new id; no declare, no drop
    assert writes == [("POST", f"{destination}/tables/orders_v2")], writes

    iceberg_proxy.configure(rate=0.0)
    plan = run_cli(manifest, "plan", "--detailed-exitcode", env=env)
    assert plan.returncode == 0, describe(plan)
    listed = [identifier for ns in (source, f"{source}_archive") for identifier in catalog.list_tables(ns)]
    assert listed == [(destination, "orders_v2")], listed  # one registration: not two, not none
    after = catalog.load_table((destination, "orders_v2")).metadata
    assert after.table_uuid == before.table_uuid  # the same table, renamed; never declared again
    assert plain_path(after.location) == plain_path(before.location) == str(location)
    assert after.properties["tier"] == "platinum" and after.properties[OWNER_KEY] == owner
    assert {k: v for k, v in after.properties.items() if k != "tier"} == \
        {k: v for k, v in before.properties.items() if k != "tier"}
