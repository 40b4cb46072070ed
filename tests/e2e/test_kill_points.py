"""kill -9 at every write seam of an apply with data, then apply again: nothing broken, lost or
duplicated (issue 16, observation 2).

Every table declares a schema, so the apply writes its datasets (each behind an intent record)
and registers them. The apply runs in a subprocess whose write seams are wrapped: writing and
clearing intent records, Lance's dataset write, the catalog's writes (namespaces, declares; for
Iceberg each POST). Each call is two events, before and after, named by the seam. One counted
apply finds which seams an apply passes and how often; then, for each of them, an apply is
killed with SIGKILL at a seeded occurrence of it ("the 7th before write_dataset"), which is the
same point whatever the threads' timing. At a "before write_dataset" event it first writes
uncommitted Lance fragments (and, at odd occurrences, the empty `_versions/` of a commit cut off
inside; both are among the kill points), so the kill leaves what a write cut off between its
data files and its commit leaves; at a "before write_intent" event it first writes half the
record, as a kill inside the record's own write leaves it. After each kill a plain `apply` runs
and must exit 0; then every table is registered exactly once at its location (read with
pylance's own DirectoryNamespace, or pyiceberg), every location opens with pylance with the
declared columns and this owner's record, no intent record or stray directory is left, and a
plan is empty.

Two more tables hold data before the apply (this owner's datasets) and declare what an apply
changes inside a dataset: `grown` a new column and an index, `trimmed` a retention cleanup. Their
seams (Lance's add_columns, create_scalar_index, cleanup_old_versions) are killed at too, and
after the re-run each has its declared column, its index built and recorded, only its newest
version, and every row it held.

Sizes: TABLES tables are enough for the data seams to be passed many times in one apply, with
writes in flight on every worker; a kill at every seam, not 20 random points among 200 tables,
is what makes each case fail on the code it guards. Checked by taking each rule out of
lance_sync/data/inspection.py: without "an empty `_versions/` beside an intent record is an
unfinished write" (10bcb77), or without "a half-written record alone is a write that never
began" (d73a36b), the re-run after the first kill fails.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
import yaml
from lance.namespace import DirectoryNamespace
from lance_namespace import DescribeTableRequest, ListTablesRequest

from lance_sync import api
from lance_sync.model.table_state import INDEX_RECORD_PREFIX
from tests.servers.base import RunningServer
from tests.support.catalogs import iceberg_backend, pyiceberg
from tests.support.cli import cli_env, describe, run_cli_process

#: every test here starts Python processes: the slow lane (tests/support/lanes.py)
pytestmark = pytest.mark.usefixtures("subprocesses")

TABLES = 24
SEED = int(os.environ.get("LANCE_SYNC_TEST_KILL_SEED", "20261125"))
INTENT_FILE = "_lance_sync_intent.json"
SCHEMA = [{"name": "id", "type": "int64"}, {"name": "name", "type": "string"}]
KILL_TIMEOUT_SECONDS = 300
#: killed applies and their re-runs at once: the processes are the cost, and CI has 2 cores
KILL_WORKERS = 2
#: the rows of each version of the datasets that exist before the apply, and `trimmed`'s versions
PART_ROWS, TRIMMED_VERSIONS = 10, 4
OWNER_KEY = b"lance_sync.owner"
#: the seams an apply passes once per table it writes
PER_TABLE = ("write_intent", "write_dataset", "clear_intent")
#: a retention cleanup deletes data: every apply here allows it
APPLY = ("apply", "--auto-approve", "--allow-drop")

#: runs `lance-sync ARGS` with the write seams wrapped; kills itself at LS_KILL_AT ("EVENT#N", the
#: N-th time EVENT happens; empty: never) and, when it ends normally, writes how often each event
#: happened to LS_EVENT_COUNT (JSON)
KILL_RUNNER = r"""
import atexit, collections, functools, json, os, signal, sys, threading
import lance, pyarrow as pa
from lance.fragment import write_fragments
import lance_sync.cli.app, lance_sync.data.datasets as datasets
from lance_sync.data.intents import intent_path
from lance_sync.drivers.dir.driver import DirNamespace
from lance_sync.drivers.iceberg.driver import IcebergNamespace
from lance_sync.drivers.support.http import HttpClient

kill_event, _, kill_at = os.environ["LS_KILL_AT"].partition("#")
lock, seen = threading.Lock(), collections.Counter()

def event(name, before_kill=None):
    with lock:
        seen[name] += 1
        number = seen[name]
    if name == kill_event and str(number) == kill_at:
        if before_kill is not None:
            before_kill()
        os.kill(os.getpid(), signal.SIGKILL)

def uncommitted(data, uri, *args, **kwargs):
    # what a write cut off before its commit leaves: data files and no manifest; at an odd
    # occurrence also the _versions folder of a commit cut off inside
    row = pa.Table.from_pylist([{field.name: None for field in data.schema}], schema=data.schema)
    write_fragments(row, uri, schema=data.schema)
    if int(kill_at) % 2:
        os.makedirs(os.path.join(str(uri), "_versions"), exist_ok=True)

def wrap(owner, name, before_kill=None, when=lambda *a, **k: True, seam=None):
    original = getattr(owner, name)
    seam = seam or name
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        counted = when(*args, **kwargs)
        if counted:
            event(f"before {seam}", before_kill and functools.partial(before_kill, *args, **kwargs))
        result = original(*args, **kwargs)
        if counted:
            event(f"after {seam}")
        return result
    setattr(owner, name, wrapper)

def half_written(storage, path, intent):
    # what a kill inside the intent record's own write leaves: the record cut short
    text = intent.model_dump_json().encode()
    storage.filesystem.create_dir(path, recursive=True)
    with storage.filesystem.open_output_stream(intent_path(path)) as stream:
        stream.write(text[: len(text) // 2])

wrap(lance, "write_dataset", before_kill=uncommitted)
# the changes inside a dataset: an index build, a column add, a retention cleanup
for name in ("create_scalar_index", "add_columns", "cleanup_old_versions"):
    wrap(lance.LanceDataset, name)
wrap(datasets, "write_intent", before_kill=half_written)
for name in ("clear_intent", "clean_interrupted"):
    wrap(datasets, name)
for driver in (DirNamespace, IcebergNamespace):
    # one seam for both: whether a unit of declares goes one by one or in bulk depends on timing
    for name, seam in (("create_namespace", None), ("declare_table", "declare"), ("declare_tables", "declare")):
        if name in vars(driver):
            wrap(driver, name, seam=seam)
wrap(HttpClient, "request", when=lambda self, method, *a, **k: method == "POST")

if os.environ.get("LS_EVENT_COUNT"):
    atexit.register(lambda: open(os.environ["LS_EVENT_COUNT"], "w").write(json.dumps(seen)))
sys.argv = ["lance-sync", *sys.argv[1:]]
lance_sync.cli.app.main()
"""


def apply_with_kill(manifest: Path, kill_at: str, env: dict[str, str],
                    count_file: Path | None = None) -> subprocess.CompletedProcess[str]:
    extra = {"LS_KILL_AT": kill_at, **({"LS_EVENT_COUNT": str(count_file)} if count_file else {})}
    return subprocess.run([sys.executable, "-c", KILL_RUNNER, *APPLY, "-f", str(manifest)],
                          capture_output=True, text=True, env={**env, **extra}, cwd=manifest.parent,
                          stdin=subprocess.DEVNULL, timeout=KILL_TIMEOUT_SECONDS)


class Estate:
    """One fresh manifest of TABLES tables with data, in its own folder (and namespace, owner);
    with `parts`, also the tables `grown` and `trimmed`, whose datasets exist before the apply."""

    def __init__(self, base: Path, tag: str, backend: dict[str, Any], namespace: list[str], parts: bool = False):
        self.folder = base / tag
        self.folder.mkdir()
        self.owner = f"kill-{tag}"
        self.namespace = namespace
        self.data = self.folder / "lh" / "data"
        self.written = {f"t{i:03d}": self.data / f"t{i:03d}.lance" for i in range(TABLES)}
        self.parts = {name: self.data / f"{name}.lance" for name in ("grown", "trimmed")} if parts else {}
        self.locations = {**self.written, **self.parts}
        register = [{"backend": "b", "namespace": namespace}]
        tables = [{"name": name, "location": str(location), "schema": SCHEMA, "register": register}
                  for name, location in self.written.items()]
        if parts:
            self._write_parts()
            tables += [{"name": "grown", "location": str(self.parts["grown"]), "register": register,
                        "schema": [*SCHEMA, {"name": "score", "type": "float64"}],
                        "indexes": [{"name": "id_idx", "column": "id", "type": "BTREE"}]},
                       {"name": "trimmed", "location": str(self.parts["trimmed"]), "register": register,
                        "schema": SCHEMA, "retention": {"keep_versions": 1}}]
        manifest = {"version": 1, "owner": self.owner, "backends": {"b": backend},
                    "namespaces": [{"backend": "b", "id": namespace}], "tables": tables}
        self.manifest = self.folder / "lance-sync.yaml"
        self.manifest.write_text(yaml.safe_dump(manifest, sort_keys=False))

    def _write_parts(self) -> None:
        """This owner's datasets, as an earlier apply created them: `trimmed` with old versions."""
        schema = pa.schema([("id", pa.int64()), ("name", pa.string())], metadata={OWNER_KEY: self.owner.encode()})
        for name, versions in (("grown", 1), ("trimmed", TRIMMED_VERSIONS)):
            for version in range(versions):
                rows = pa.table({"id": range(version * PART_ROWS, (version + 1) * PART_ROWS),
                                 "name": [f"row {i}" for i in range(PART_ROWS)]}, schema=schema)
                lance.write_dataset(rows, str(self.parts[name]), mode="append" if version else "create")

    def check_converged(self, registered: dict[str, list[str]]) -> None:
        """Nothing broken, lost or duplicated: `registered` maps table name -> locations registered."""
        duplicated = {name: where for name, where in registered.items() if len(where) != 1}
        assert not duplicated, f"registered more than once: {duplicated}"
        assert sorted(registered) == sorted(self.locations), "lost or foreign registrations"
        for name, location in self.locations.items():
            assert os.path.normpath(registered[name][0].removeprefix("file:").replace("///", "/")) \
                == str(location), name
            dataset = lance.dataset(str(location))  # raises for a broken one
            if name in self.written:
                assert dataset.schema.names == [c["name"] for c in SCHEMA], name
            assert dataset.schema.metadata == {OWNER_KEY: self.owner.encode()}, name
            assert not (location / INTENT_FILE).exists(), f"{name}: intent record left"
        if self.parts:
            self._check_parts()
        strays = sorted(p.name for p in self.data.iterdir() if p.name not in {f"{n}.lance" for n in self.locations})
        assert not strays, f"directories nobody registers: {strays}"
        plan = api.plan(api.load(self.manifest))
        assert not plan.has_changes, api.render(plan)

    def _check_parts(self) -> None:
        grown = lance.dataset(str(self.parts["grown"]))
        assert grown.schema.names == ["id", "name", "score"] and grown.count_rows() == PART_ROWS
        assert [index.name for index in grown.describe_indices()] == ["id_idx"]
        assert json.loads(grown.config()[INDEX_RECORD_PREFIX + "id_idx"])["built"] is True
        trimmed = lance.dataset(str(self.parts["trimmed"]))
        assert len(trimmed.versions()) == 1 and trimmed.version == TRIMMED_VERSIONS
        assert trimmed.count_rows() == PART_ROWS * TRIMMED_VERSIONS


def kill_points(first: Estate, env: dict[str, str]) -> list[str]:
    """One seeded occurrence of every event a whole apply makes (from one counted apply)."""
    count_file = first.folder / "events"
    counted = apply_with_kill(first.manifest, "", env, count_file)
    assert counted.returncode == 0, describe(counted)
    events: dict[str, int] = json.loads(count_file.read_text())
    assert events.get("before write_dataset") == TABLES, f"not every table written once: {events}"
    for seam in ("create_scalar_index", "add_columns", "cleanup_old_versions"):
        assert events.get(f"before {seam}") == 1, f"the apply passed no {seam}: {events}"
    chance = random.Random(SEED)
    # a Lance write cut off with an empty _versions/ (odd occurrences) and without (even)
    points = [f"before write_dataset#{chance.randrange(1, TABLES, 2)}",
              f"before write_dataset#{chance.randrange(2, TABLES, 2)}"]
    for name, count in sorted(events.items()):
        if name != "before write_dataset":
            # a seam of each table's write at a seeded table; the others at their first pass:
            # declares go in units of the tables ready so far, whose number depends on timing
            # (it may come to TABLES too), and a dataset's own changes happen once
            seeded = count == TABLES and name.split(" ", 1)[1] in PER_TABLE
            points.append(f"{name}#{chance.randint(1, TABLES) if seeded else 1}")
    return points


def kill_then_rerun(estate: Estate, point: str, env: dict[str, str]) -> None:
    """The apply killed at `point`, then a plain apply that must succeed (two processes)."""
    killed = apply_with_kill(estate.manifest, point, env)
    assert killed.returncode == -signal.SIGKILL, f"{point}: not killed\n{describe(killed)}"
    rerun = run_cli_process(estate.manifest, *APPLY, env=env)
    assert rerun.returncode == 0, f"after a kill at {point}:\n{describe(rerun)}"


def converge_after_each_kill(make_estate, registrations, env: dict[str, str]) -> None:
    first = make_estate("count")
    points = kill_points(first, env)
    first.check_converged(registrations(first))
    estates = [make_estate(f"k{index:02d}") for index in range(len(points))]
    # each estate is its own folder, owner and namespace, so their processes run side by side
    # (the kill point is an event count, not a time); the checks then run here, one by one
    with ThreadPoolExecutor(KILL_WORKERS) as pool:
        list(pool.map(kill_then_rerun, estates, points, [env] * len(points)))
    for estate in estates:
        estate.check_converged(registrations(estate))
    print(f"\nkilled at {points} (seed {SEED}); each re-run converged")


def test_kill_points_on_a_dir_root(tmp_path: Path):
    def make_estate(tag: str) -> Estate:
        return Estate(tmp_path, tag, {"type": "dir", "root": "./lh"}, ["ns"], parts=True)

    def registrations(estate: Estate) -> dict[str, list[str]]:
        native = DirectoryNamespace(root=str(estate.folder / "lh"))
        found: dict[str, list[str]] = {}
        for name in native.list_tables(ListTablesRequest(id=["ns"])).tables:
            found.setdefault(name, []).append(native.describe_table(DescribeTableRequest(id=["ns", name])).location)
        return found

    converge_after_each_kill(make_estate, registrations, cli_env())


@pytest.mark.servers
def test_kill_points_on_an_iceberg_catalog(iceberg_server: RunningServer, tmp_path: Path):
    warehouse = iceberg_server.extra["warehouse"]
    catalog = pyiceberg(iceberg_server)

    def make_estate(tag: str) -> Estate:
        return Estate(tmp_path, tag, iceberg_backend(iceberg_server, tmp_path),
                      [warehouse, f"kill_{tag}_{uuid.uuid4().hex[:6]}"], parts=True)

    def registrations(estate: Estate) -> dict[str, list[str]]:
        namespace = estate.namespace[1]
        found: dict[str, list[str]] = {}
        for identifier in catalog.list_tables(namespace):
            found.setdefault(identifier[-1], []).append(catalog.load_table(identifier).location())
        return found

    converge_after_each_kill(make_estate, registrations, cli_env())


def test_a_location_left_without_versions_is_never_registered(tmp_path: Path):
    """Observation 2 without a kill: data files and no _versions where a table declares a schema."""
    estate = Estate(tmp_path, "junk", {"type": "dir", "root": "./lh"}, ["ns"])
    junk = estate.locations["t007"] / "data"
    junk.mkdir(parents=True)
    (junk / "part-0.lance").write_bytes(b"not committed")
    plan = run_cli_process(estate.manifest, "plan", env=cli_env())
    assert plan.returncode == 1 and "./lh/data/t007.lance holds data that is not a Lance dataset" \
        in plan.stderr, describe(plan)  # relative to the manifest's folder, as plan shows paths
    applied = run_cli_process(estate.manifest, "apply", "--auto-approve", env=cli_env())
    assert applied.returncode == 1, describe(applied)
    assert not (estate.folder / "lh" / "__manifest").exists()  # the plan stopped before any change
    assert (junk / "part-0.lance").read_bytes() == b"not committed"  # never deleted
    (junk / "part-0.lance").unlink()
    junk.rmdir()
    estate.locations["t007"].rmdir()
    assert run_cli_process(estate.manifest, "apply", "--auto-approve", env=cli_env()).returncode == 0
    estate.check_converged({name: [str(location)] for name, location in estate.locations.items()})

