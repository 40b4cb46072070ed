"""Two applies at once: one manifest's state in the end, never a mix.

Two manifests of the same owner declare the same namespace and tables, with different
properties and locations (variant "a" and variant "b"). Both applies start at the same
moment (each process has imported lance-sync and waits for a barrier file), once with
`--lock-timeout 0` and once with `--lock-timeout 60`. Either one refuses with exit 4 naming
the lease holder (its pid) while the other applies, or both apply one after the other; in
the end every table and the namespace, on every backend, hold exactly one variant (location
AND properties), the same on every backend, read with each catalog's own client (pylance's
DirectoryNamespace and the `__manifest` rows, pyiceberg, boto3).

Applies of different owners into one directory root take different leases and run truly
at once: both must succeed, every table registered once with its own owner mark, and no raw
Lance error (a commit conflict) may reach the user.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pytest
import yaml
from lance.namespace import DirectoryNamespace

from tests.servers.base import RunningServer
from tests.servers.glue import glue_client
from tests.support.catalogs import (
    GLUE_CATALOG,
    ensure_glue_catalog,
    glue_backend,
    glue_catalog_id,
    glue_env,
    glue_tables,
    iceberg_backend,
    iceberg_lance_tables,
    plain_path,
    pyiceberg,
)
from tests.support.cli import cli_env, describe, run_cli_process

#: every test here starts Python processes: the slow lane (tests/support/lanes.py)
pytestmark = pytest.mark.usefixtures("subprocesses")

TABLES = 40
OWNER_KEY = "lance_sync.owner"
APPLY_TIMEOUT_SECONDS = 240
#: imports lance-sync (and the drivers), says it is ready, waits for the barrier, then runs the CLI
BARRIER_RUNNER = """
import os, sys, time
import lance_sync, lance_sync.cli.app, lance_sync.apply.session, lance_sync.apply.lease, lance_sync.plan.observe
import lance_sync.plan.planner, lance_sync.drivers.dir.driver, lance_sync.drivers.iceberg.driver, lance_sync.drivers.glue.driver
ready, barrier = sys.argv[1], sys.argv[2]
open(ready, "w").close()
while not os.path.exists(barrier):
    time.sleep(0.001)
sys.argv = ["lance-sync", *sys.argv[3:]]
lance_sync.cli.app.main()
"""
#: what a raw Lance error looks like when it reaches the user (its Rust source paths, its names)
RAW_LANCE_ERROR = ("commit conflict", "retryable commit", "rust/lance", "lance-table/src", "LanceError",
                   "lance error")


@dataclass
class Finished:
    name: str
    pid: int
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return (f"apply {self.name} (pid {self.pid}) exit {self.returncode}\n--- stdout (tail)\n"
                f"{self.stdout[-3000:]}\n--- stderr (tail)\n{self.stderr[-3000:]}")


def start_together(runs: dict[str, tuple[Path, list[str]]], directory: Path,
                   env: dict[str, str]) -> dict[str, Finished]:
    """Start `lance-sync apply -f MANIFEST ARGS` for each run, release them at one moment, wait."""
    barrier = directory / f"go-{uuid.uuid4().hex[:6]}"
    processes = {}
    outputs = {}
    for name, (manifest, args) in runs.items():
        tag = f"{name}-{uuid.uuid4().hex[:6]}"
        ready = directory / f"ready-{tag}"
        command = [sys.executable, "-c", BARRIER_RUNNER, str(ready), str(barrier),
                   "apply", "-f", str(manifest), *args]
        # files, not pipes: an apply whose unread pipe is full would block holding its lease
        outputs[name] = (directory / f"stdout-{tag}.txt", directory / f"stderr-{tag}.txt")
        with outputs[name][0].open("w") as stdout, outputs[name][1].open("w") as stderr:
            process = subprocess.Popen(command, stdout=stdout, stderr=stderr, text=True, env=env,
                                       cwd=manifest.parent)
        processes[name] = (process, ready)
    try:
        deadline = time.monotonic() + 60
        while not all(ready.exists() for _, ready in processes.values()):
            assert time.monotonic() < deadline, "the applies did not get ready"
            assert all(p.poll() is None for p, _ in processes.values()), "an apply ended before the barrier"
            time.sleep(0.01)
        barrier.touch()
        finished = {}
        for name, (process, _) in processes.items():
            process.wait(timeout=APPLY_TIMEOUT_SECONDS)
            stdout, stderr = (path.read_text() for path in outputs[name])
            finished[name] = Finished(name, process.pid, process.returncode, stdout, stderr)
    finally:
        for process, _ in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
    for result in finished.values():
        assert "Traceback" not in result.stdout + result.stderr, result.describe()
    return finished


# --- manifests ---------------------------------------------------------------------------------


@dataclass
class Backend:
    """One backend of the test manifests: its entry, where the namespace goes, how to read it."""

    name: str
    entry: dict[str, Any]
    parent: list[str]
    #: data directory of the table locations
    data: Path


def conflicting_manifests(directory: Path, owner: str, namespace: str, backends: list[Backend]) -> dict[str, Path]:
    """Manifests "a" and "b": same owner, namespace and tables; other properties and locations."""
    paths = {}
    for variant in ("a", "b"):
        tables = []
        for i in range(TABLES):
            name = f"t{i:02d}"
            tables.append({
                "name": name,
                "location": str(backends[0].data / variant / f"{name}.lance"),
                "properties": {"variant": variant, "tier": f"{variant}-{i}"},
                "register": [{"backend": b.name, "namespace": [*b.parent, namespace]} for b in backends]})
        manifest = {"version": 1, "owner": owner, "backends": {b.name: b.entry for b in backends},
                    "namespaces": [{"backend": b.name, "id": [*b.parent, namespace],
                                    "properties": {"variant": variant}} for b in backends],
                    "tables": tables}
        paths[variant] = directory / f"manifest-{variant}.yaml"
        paths[variant].write_text(yaml.safe_dump(manifest, sort_keys=False))
    return paths


# --- the live state, read with each catalog's own client ----------------------------------------


def variant_of(table: str, location: str, properties: dict[str, str], owner: str, data: Path) -> str:
    """"a" or "b" when location and properties both are that variant's; else what is wrong."""
    variant = properties.get("variant")
    expected = {"variant": variant, "tier": f"{variant}-{int(table[1:])}", OWNER_KEY: owner}
    if {k: properties.get(k) for k in expected} != expected:
        return f"mixed properties {properties}"
    if plain_path(location) != str(data / str(variant) / f"{table}.lance"):
        return f"variant {variant} properties with location {location}"
    return str(variant)


def dir_state(root: Path, namespace: str, owner: str, data: Path) -> dict[str, str]:
    """{object: variant} through pylance's own DirectoryNamespace; rows counted in `__manifest`."""
    rows = lance.dataset(str(root / "__manifest")).to_table(columns=["object_id"]).column("object_id").to_pylist()
    duplicated = [object_id for object_id, n in Counter(rows).items() if n > 1]
    assert not duplicated, f"rows registered more than once in {root}/__manifest: {duplicated}"
    directory = DirectoryNamespace(root=str(root))
    names = directory.list_tables(ln.ListTablesRequest(id=[namespace])).tables
    assert sorted(names) == [f"t{i:02d}" for i in range(TABLES)], names
    state = {}
    for name in names:
        described = directory.describe_table(ln.DescribeTableRequest(id=[namespace, name]))
        state[name] = variant_of(name, described.location, described.properties or {}, owner, data)
    properties = directory.describe_namespace(ln.DescribeNamespaceRequest(id=[namespace])).properties or {}
    state["(namespace)"] = str(properties.get("variant"))
    return state


def iceberg_state(server: RunningServer, namespace: str, owner: str, data: Path) -> dict[str, str]:
    names, tables = iceberg_lance_tables(server, namespace)
    assert sorted(names) == [f"t{i:02d}" for i in range(TABLES)] and len(names) == len(set(names)), names
    state = {name: variant_of(name, *tables[name], owner, data) for name in names}
    state["(namespace)"] = str(pyiceberg(server).load_namespace_properties(namespace).get("variant"))
    return state


def glue_state(server: RunningServer, namespace: str, owner: str, data: Path) -> dict[str, str]:
    names, tables = glue_tables(server, glue_catalog_id(server), namespace)
    assert sorted(names) == [f"t{i:02d}" for i in range(TABLES)] and len(names) == len(set(names)), names
    state = {name: variant_of(name, tables[name]["StorageDescriptor"]["Location"],
                              tables[name].get("Parameters", {}), owner, data) for name in names}
    database = glue_client(server).get_database(CatalogId=glue_catalog_id(server), Name=namespace)["Database"]
    state["(namespace)"] = str(database.get("Parameters", {}).get("variant"))
    return state


def journals(directory: Path) -> dict[int, tuple[str, str | None]]:
    """{pid: (start, end)} of every apply journal under `directory` (ISO times; end None when
    the journal has no end)."""
    found = {}
    for path in (directory / ".lance-sync" / "journal").glob("apply-*.jsonl"):
        events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        start = next(e for e in events if e["event"] == "start")
        end = next((e["time"] for e in events if e["event"] == "end"), None)
        found[start["pid"]] = (start["time"], end)
    return found


def check_outcome(finished: dict[str, Finished], lock_timeout: str, states: dict[str, dict[str, str]],
                  directory: Path) -> str:
    """The exit codes are allowed ones, a refusal names the holder, the applies that ran did
    not overlap (their journals), one variant everywhere, the last one's. Returns that variant."""
    a, b = finished["a"], finished["b"]
    codes = sorted([a.returncode, b.returncode])
    assert codes in ([0, 0], [0, 4]), f"{a.describe()}\n{b.describe()}"
    if lock_timeout != "0":
        assert codes == [0, 0], f"the second apply did not wait for the lease:\n{a.describe()}\n{b.describe()}"
    refused = [r for r in (a, b) if r.returncode == 4]
    ran = journals(directory)
    if refused:
        loser = refused[0]
        holder = b if loser is a else a
        assert "lease" in loser.stderr and f"pid {holder.pid}" in loser.stderr, (
            f"the refusal does not name the holder (pid {holder.pid}):\n{loser.describe()}")
        assert loser.pid not in ran, f"the refused apply {loser.name} carried out actions: {ran}"
        winner = holder.name
    else:
        assert {a.pid, b.pid} <= set(ran), f"journals {ran}, pids a={a.pid} b={b.pid}"
        first, last = sorted((a, b), key=lambda r: ran[r.pid][0])
        assert ran[first.pid][1] is not None and ran[first.pid][1] <= ran[last.pid][0], (
            f"the applies overlapped: {first.name} ran {ran[first.pid]}, {last.name} ran {ran[last.pid]}")
        winner = last.name
    everything = {f"{backend}: {obj}": variant for backend, state in states.items() for obj, variant in state.items()}
    variants = set(everything.values())
    assert len(variants) == 1 and variants <= {"a", "b"}, (
        f"not one manifest's state: {sorted(everything.items())}\n{a.describe()}\n{b.describe()}")
    final = variants.pop()
    assert final == winner, f"{winner} applied last, but the state is {final}'s"
    return final


def apply_args(lock_timeout: str) -> list[str]:
    return ["--auto-approve", "--allow-replace", "--lock-timeout", lock_timeout, "--format", "json"]


# --- (a) one backend ---------------------------------------------------------------------------


@pytest.mark.parametrize("lock_timeout", ["0", "60"])
def test_conflicting_applies_on_one_dir_root(lock_timeout: str, tmp_path: Path):
    root = tmp_path / "lake"
    data = root / "data"
    owner = f"conc-dir-{uuid.uuid4().hex[:8]}"
    namespace = "sales"
    backend = Backend("lake", {"type": "dir", "root": str(root)}, [], data)
    manifests = conflicting_manifests(tmp_path, owner, namespace, [backend])
    finished = start_together({v: (p, apply_args(lock_timeout)) for v, p in manifests.items()}, tmp_path,
                              cli_env())
    state = dir_state(root, namespace, owner, data)
    final = check_outcome(finished, lock_timeout, {"dir": state}, tmp_path)
    print(f"\ndir, --lock-timeout {lock_timeout}: exits a={finished['a'].returncode} "
          f"b={finished['b'].returncode}, final state {final}")
    assert not list((root / "_lance_sync_leases").glob("*.json")), "a lease was left behind"


@pytest.mark.servers
@pytest.mark.parametrize("lock_timeout", ["0", "60"])
def test_conflicting_applies_on_one_iceberg_warehouse(lock_timeout: str, iceberg_server: RunningServer,
                                                      tmp_path: Path):
    data = tmp_path / "data"
    owner = f"conc-ice-{uuid.uuid4().hex[:8]}"
    namespace = f"conc_{uuid.uuid4().hex[:8]}"
    backend = Backend("ice", iceberg_backend(iceberg_server, tmp_path), [iceberg_server.extra["warehouse"]], data)
    manifests = conflicting_manifests(tmp_path, owner, namespace, [backend])
    finished = start_together({v: (p, apply_args(lock_timeout)) for v, p in manifests.items()}, tmp_path,
                              cli_env())
    state = iceberg_state(iceberg_server, namespace, owner, data)
    final = check_outcome(finished, lock_timeout, {"ice": state}, tmp_path)
    print(f"\niceberg, --lock-timeout {lock_timeout}: exits a={finished['a'].returncode} "
          f"b={finished['b'].returncode}, final state {final}")


# --- (b) across two backends -------------------------------------------------------------------


@pytest.mark.servers
@pytest.mark.parametrize("lock_timeout", ["0", "60"])
def test_conflicting_applies_across_iceberg_and_glue(lock_timeout: str, iceberg_server: RunningServer,
                                                     glue_server: RunningServer, tmp_path: Path):
    ensure_glue_catalog(glue_server)
    data = tmp_path / "data"
    owner = f"conc-two-{uuid.uuid4().hex[:8]}"
    namespace = f"conc_{uuid.uuid4().hex[:8]}"
    backends = [Backend("ice", iceberg_backend(iceberg_server, tmp_path), [iceberg_server.extra["warehouse"]], data),
                Backend("glue", glue_backend(glue_server), [GLUE_CATALOG], data)]
    manifests = conflicting_manifests(tmp_path, owner, namespace, backends)
    finished = start_together({v: (p, apply_args(lock_timeout)) for v, p in manifests.items()}, tmp_path,
                              cli_env(**glue_env(glue_server)))
    final = check_outcome(finished, lock_timeout, {
        "ice": iceberg_state(iceberg_server, namespace, owner, data),
        "glue": glue_state(glue_server, namespace, owner, data)}, tmp_path)
    print(f"\niceberg+glue, --lock-timeout {lock_timeout}: exits a={finished['a'].returncode} "
          f"b={finished['b'].returncode}, final state {final}")


# --- (c) different owners, one dir root ------------------------------------------------------------

OWN_TABLES = 20
SHARED_TABLES = 10


def test_applies_of_different_owners_into_one_dir_root_both_succeed(tmp_path: Path):
    """Each owner: its own namespace with 20 tables, and 10 tables in a namespace both use."""
    root = tmp_path / "lake"
    DirectoryNamespace(root=str(root)).create_namespace(ln.CreateNamespaceRequest(id=["shared"]))
    suffix = uuid.uuid4().hex[:6]
    owners = {"one": f"conc-one-{suffix}", "two": f"conc-two-{suffix}"}
    manifests, expected = {}, {}
    for name, owner in owners.items():
        tables = []
        for i in range(OWN_TABLES + SHARED_TABLES):
            namespace = name if i < OWN_TABLES else "shared"
            table = f"{name}_{i:02d}"
            location = root / "data" / name / f"{table}.lance"
            tables.append({"name": table, "location": str(location), "properties": {"by": name},
                           "register": [{"backend": "lake", "namespace": namespace}]})
            expected[(namespace, table)] = (str(location), {"by": name, OWNER_KEY: owner})
        manifest = {"version": 1, "owner": owner, "backends": {"lake": {"type": "dir", "root": str(root)}},
                    "namespaces": [{"backend": "lake", "id": name, "properties": {"by": name}}],
                    "tables": tables}
        manifests[name] = tmp_path / f"manifest-{name}.yaml"
        manifests[name].write_text(yaml.safe_dump(manifest, sort_keys=False))

    finished = start_together({name: (path, ["--auto-approve", "--format", "json"])
                               for name, path in manifests.items()}, tmp_path, cli_env())
    for result in finished.values():
        output = (result.stdout + result.stderr).lower()
        raw = [marker for marker in RAW_LANCE_ERROR if marker.lower() in output]
        assert not raw, f"a raw Lance error reached the user ({raw}):\n{result.describe()}"
        assert result.returncode == 0, result.describe()
        document = json.loads(result.stdout)
        assert document["status"] == "applied", result.describe()

    rows = lance.dataset(str(root / "__manifest")).to_table(columns=["object_id"]).column("object_id").to_pylist()
    assert not [object_id for object_id, n in Counter(rows).items() if n > 1], "a row registered twice"
    directory = DirectoryNamespace(root=str(root))
    for namespace in ("one", "two", "shared"):
        names = directory.list_tables(ln.ListTablesRequest(id=[namespace])).tables
        assert sorted(names) == sorted(t for ns, t in expected if ns == namespace), (namespace, names)
    for (namespace, table), (location, properties) in expected.items():
        described = directory.describe_table(ln.DescribeTableRequest(id=[namespace, table]))
        assert plain_path(described.location) == location, (namespace, table, described.location)
        assert {k: (described.properties or {}).get(k) for k in properties} == properties, (namespace, table)
    for name, owner in owners.items():
        properties = directory.describe_namespace(ln.DescribeNamespaceRequest(id=[name])).properties or {}
        assert properties.get(OWNER_KEY) == owner and properties.get("by") == name
    for path in manifests.values():
        again = run_cli_process(path, "plan", "--detailed-exitcode", env=cli_env())
        assert again.returncode == 0, describe(again)
