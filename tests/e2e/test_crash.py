"""kill -9 in the middle of an apply, then apply again: not blocked, and exactly the manifest.

A 500-table apply into an Iceberg REST catalog (one POST per table) runs as a subprocess;
when about a third of the tables exist on the server, it is killed with SIGKILL. Its lease
(the lease table of a namespace in the warehouse, naming its pid on this host) stays held. A
re-run with the default `--lock-timeout 0` must take that lease over (its holder is dead), exit
0, and leave exactly the manifest: 500 tables, each once, with its location, properties and
owner mark, read with pyiceberg; `plan --detailed-exitcode` then exits 0 and no lease is held
(the lease table stays, marked released).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml

from tests.e2e.test_faults import (
    LANCE_SYNC,
    OWNER_KEY,
    cli_env,
    describe,
    iceberg_backend,
    iceberg_lance_tables,
    iceberg_leases_held,
    plain_path,
    pyiceberg,
    run_cli,
)
from tests.servers.base import RunningServer

pytestmark = pytest.mark.servers

TABLES = 500
#: kill once this many tables exist on the server
KILL_AT = TABLES // 3
#: fewer catalog calls in flight than the default 8, so that the kill lands mid-apply
PARALLELISM = "4"
START_TIMEOUT_SECONDS = 120


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
        process = subprocess.Popen([LANCE_SYNC, "apply", "-f", str(path), "--auto-approve",
                                    "--parallelism", PARALLELISM], stdout=out, stderr=err,
                                   env=cli_env(), cwd=tmp_path)
    existing = 0
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while existing < KILL_AT:
            assert process.poll() is None, (f"the apply ended (exit {process.returncode}) before it could "
                                            f"be killed, at {existing} tables")
            assert time.monotonic() < deadline, f"only {existing} tables after {START_TIMEOUT_SECONDS} s"
            if (namespace,) in catalog.list_namespaces():
                existing = len(catalog.list_tables(namespace))
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()  # reaped: a zombie would still look like a live process to kill(pid, 0)
    assert process.returncode == -signal.SIGKILL
    at_kill = len(catalog.list_tables(namespace))
    assert KILL_AT <= at_kill < TABLES, f"{at_kill} tables when the apply was killed"
    assert iceberg_leases_held(iceberg_server, owner), "the killed apply's lease is not held in the warehouse"
    print(f"\nkilled at {at_kill} of {TABLES} tables; its lease stayed behind")

    rerun = run_cli(path, "apply", "--auto-approve", env=cli_env())
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

    plan = run_cli(path, "plan", "--detailed-exitcode", env=cli_env())
    assert plan.returncode == 0, describe(plan)
    left = iceberg_leases_held(iceberg_server, owner)
    assert not left, f"leases left held after the re-run: {left}"
