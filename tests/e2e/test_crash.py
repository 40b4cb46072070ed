"""kill -9 in the middle of an apply, then apply again: not blocked, and exactly the manifest.

A 500-table apply into an Iceberg REST catalog (one POST per table) runs as a subprocess
whose Iceberg driver counts the declares it has finished; at the KILL_AT-th the process kills
itself with SIGKILL: a point the test chooses, whatever the machine's speed (other declares in
flight may land too). Its lease
(the lease table of a namespace in the warehouse, naming its pid on this host) stays held. A
re-run with the default `--lock-timeout 0` must take that lease over (its holder is dead), exit
0, and leave exactly the manifest: 500 tables, each once, with its location, properties and
owner mark, read with pyiceberg; `plan --detailed-exitcode` then exits 0 and no lease is held
(the lease table stays, marked released).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from tests.servers.base import RunningServer
from tests.support.catalogs import (
    OWNER_KEY,
    iceberg_backend,
    iceberg_lance_tables,
    iceberg_leases_held,
    plain_path,
    pyiceberg,
)
from tests.support.cli import cli_env, describe, run_cli_process

pytestmark = pytest.mark.servers

TABLES = 500
#: kill once this many tables exist on the server
KILL_AT = TABLES // 3
PARALLELISM = "4"
APPLY_TIMEOUT_SECONDS = 300
#: `lance-sync ARGS` whose Iceberg declares are counted; SIGKILL after the LS_KILL_AT-th
KILLED_APPLY = r"""
import os, signal, sys, threading
import lance_sync.cli.app
from lance_sync.drivers.iceberg.driver import IcebergNamespace

kill_at, lock, done = int(os.environ["LS_KILL_AT"]), threading.Lock(), [0]
declare = IcebergNamespace.declare_table

def counted(self, request):
    answer = declare(self, request)
    with lock:
        done[0] += 1
        if done[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
    return answer

IcebergNamespace.declare_table = counted
sys.argv[0] = "lance-sync"
lance_sync.cli.app.main()
"""


def test_a_killed_apply_is_taken_over_and_a_rerun_converges(iceberg_server: RunningServer, tmp_path: Path):
    owner = f"crash-{uuid.uuid4().hex[:8]}"
    namespace = f"crash_{uuid.uuid4().hex[:8]}"
    warehouse = iceberg_server.extra["warehouse"]
    data = tmp_path / "data"
    tables = [{"name": f"t{i:03d}", "location": str(data / f"t{i:03d}.lance"),
               "properties": {"idx": str(i), "tier": "gold" if i % 2 else "silver"},
               "register": [{"backend": "ice", "namespace": [warehouse, namespace]}]} for i in range(TABLES)]
    manifest = {"version": 1, "owner": owner, "backends": {"ice": iceberg_backend(iceberg_server, tmp_path)},
                "namespaces": [{"backend": "ice", "id": [warehouse, namespace], "properties": {"team": "crash"}}],
                "tables": tables}
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    catalog = pyiceberg(iceberg_server)

    with (tmp_path / "killed.out").open("w") as out, (tmp_path / "killed.err").open("w") as err:
        process = subprocess.run([sys.executable, "-c", KILLED_APPLY, "apply", "-f", str(path), "--auto-approve",
                                  "--parallelism", PARALLELISM], stdout=out, stderr=err, cwd=tmp_path,
                                 env=cli_env(LS_KILL_AT=str(KILL_AT)), timeout=APPLY_TIMEOUT_SECONDS)
    assert process.returncode == -signal.SIGKILL
    at_kill = len(catalog.list_tables(namespace))
    assert KILL_AT <= at_kill < TABLES, f"{at_kill} tables when the apply was killed"
    assert iceberg_leases_held(iceberg_server, owner), "the killed apply's lease is not held in the warehouse"
    print(f"\nkilled at {at_kill} of {TABLES} tables; its lease stayed behind")

    rerun = run_cli_process(path, "apply", "--auto-approve", env=cli_env())
    assert rerun.returncode == 0, describe(rerun)

    names, found = iceberg_lance_tables(iceberg_server, namespace)
    assert len(names) == len(set(names)) == TABLES, f"{len(names)} listed, {len(set(names))} distinct"
    assert sorted(names) == [t["name"] for t in tables]
    for table in tables:
        location, properties = found[table["name"]]
        assert plain_path(location) == table["location"], table["name"]
        expected = {**table["properties"], OWNER_KEY: owner, "table_type": "lance"}
        assert {k: properties.get(k) for k in expected} == expected, (table["name"], properties)
    namespace_properties = catalog.load_namespace_properties(namespace)
    assert namespace_properties.get(OWNER_KEY) == owner and namespace_properties.get("team") == "crash"

    plan = run_cli_process(path, "plan", "--detailed-exitcode", env=cli_env())
    assert plan.returncode == 0, describe(plan)
    left = iceberg_leases_held(iceberg_server, owner)
    assert not left, f"leases left held after the re-run: {left}"
