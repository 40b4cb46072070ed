"""A large manifest's tables are built in two processes at once, into the same desired state
and the same errors as in one (lance_sync.manifest.semantic: `_tables_in_two`).

Each case loads a manifest twice in a fresh interpreter, one process building all tables and
then a forked child building the second half: the loader forks only a process that runs no
other thread, and the test session runs servers in threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from lance_sync.manifest.parsing import CACHE_ENV
from tests.servers.base import is_running, wait_until
from tests.support.manifests import table

#: every test here starts Python processes: the slow lane (tests/support/lanes.py)
pytestmark = pytest.mark.usefixtures("subprocesses")

TABLES = 40


def manifest(changes: dict[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    """TABLES tables in two backends, of every kind a table can be; `changes` replaces fields
    of the tables at those indices."""
    tables = [table(index) for index in range(TABLES)]
    tables[3] = table(3, schema=[{"name": "id", "type": "int64"}], on_remove="drop", protect=True)
    tables[25] = table(25, source={"path": "./in/t25.parquet", "format": "parquet"}, properties={})
    tables[31] = table(31, register=[{"backend": "d", "namespace": "ns1", "name": "other"},
                                     {"backend": "h", "namespace": "hive$sales"}])
    tables[33] = table(33, renamed_from=["t33_old", "ns9$t33_older"])
    for index, fields in (changes or {}).items():
        tables[index] = {**tables[index], **fields}
    return {"version": 1, "owner": "o",
            "backends": {"d": {"type": "dir", "root": "./lake"}, "h": {"type": "hive3", "uri": "thrift://127.0.0.1:1"}},
            "tables": tables}


def loaded_twice(tmp_path: Path, data: dict[str, Any], child: str = "") -> dict[str, Any]:
    """The tables (or the error) of `data` built in one process and in two, and whether this
    process took the child's rows; `child` replaces what the child runs."""
    (tmp_path / "lance-sync.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    script = textwrap.dedent("""
        import json, os
        from lance_sync.manifest import load_manifest, semantic
        from lance_sync.manifest.validate import StrictTables
        from lance_sync.model.errors import ManifestError, ManifestErrors
        taken = []
        let_go = StrictTables.let_go
        def counting(*args):  # this process lets go of the raw half whose rows it takes
            taken.append(True)
            return let_go(*args)
        StrictTables.let_go = counting
        """) + textwrap.dedent(child) + textwrap.dedent("""
        def load():
            try:
                return [repr(t) for t in load_manifest(["lance-sync.yaml"]).tables]
            except (ManifestError, ManifestErrors) as error:
                return str(error)
        semantic.FORK_TABLES = 10 ** 9
        alone = load()
        assert taken == []
        semantic.FORK_TABLES = 0
        semantic.ROWS_CHUNK = 3  # the child's rows in several chunks
        print(json.dumps({"alone": alone, "in_two": load(), "taken": taken}))
        """)
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, CACHE_ENV: "off"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_two_processes_build_what_one_does(tmp_path: Path):
    out = loaded_twice(tmp_path, manifest())
    assert out["taken"] == [True]  # the child's half came from its rows
    assert out["in_two"] == out["alone"] and len(out["alone"]) == TABLES
    renamed = next(t for t in out["in_two"] if "name='t33'" in t)
    assert "renamed_from=(('ns1', 't33_old'), ('ns9', 't33_older'))" in renamed


@pytest.mark.parametrize("changes", [
    {30: {"properties": {"lance_sync.table_type": "x"}}},  # a problem in the child's half
    {30: {"name": "t2"}},  # the name of a table of this process's half
    {36: {"name": "t30"}},  # a name twice in the child's half
    {30: {"register": [{"backend": "d", "namespace": "ns$"}]}},
], ids=["reserved-property", "name-of-the-first-half", "name-twice-in-the-second-half", "bad-namespace"])
def test_a_problem_in_the_second_half_is_reported_as_by_one_process(tmp_path: Path, changes: dict[int, Any]):
    out = loaded_twice(tmp_path, manifest(changes))
    assert isinstance(out["alone"], str) and "tables[" in out["alone"]
    assert out["in_two"] == out["alone"]
    assert out["taken"] == []  # the child refused its half, or this process refused it


def test_grants_in_the_second_half_are_built_here(tmp_path: Path):
    grants = {"register": [{"backend": "h", "namespace": "hive$sales", "grants": {"user:alice": ["SELECT"]}}]}
    out = loaded_twice(tmp_path, manifest({35: grants}))
    assert out["taken"] == [] and out["in_two"] == out["alone"]
    assert any("user:alice" in t for t in out["in_two"])


def test_a_table_that_fails_the_strict_models_in_the_second_half_takes_the_full_road(tmp_path: Path):
    out = loaded_twice(tmp_path, manifest({30: {"protect": "yes"}}))
    assert "tables[30].protect" in out["alone"] and out["in_two"] == out["alone"]


def test_a_child_that_dies_leaves_its_half_to_this_process(tmp_path: Path):
    out = loaded_twice(tmp_path, manifest(), child="""
        def die(*args):
            os._exit(3)
        semantic._rows = die
        """)
    assert out["taken"] == [] and out["in_two"] == out["alone"]


def test_no_child_beside_another_thread(tmp_path: Path):
    out = loaded_twice(tmp_path, manifest(), child="""
        import threading
        threading.Thread(target=threading.Event().wait, daemon=True).start()
        """)
    assert out["taken"] == [] and out["in_two"] == out["alone"]


def test_a_child_whose_parent_is_gone_does_not_wait_to_write(tmp_path: Path):
    """The parent forks a child that answers more than a pipe holds once `go` exists, and
    ends without reading it; the child then ends too, instead of waiting forever."""
    script = textwrap.dedent("""
        import os, time
        from lance_sync.manifest.workers import Workers
        def work():
            with open("pid.tmp", "w") as pid:
                pid.write(str(os.getpid()))
            os.rename("pid.tmp", "pid")
            while not os.path.exists("go"):
                time.sleep(0.01)
            return b"x" * (1 << 22)
        child = Workers([work])
        while not os.path.exists("pid"):
            time.sleep(0.01)
        os._exit(0)
        """)
    with open(tmp_path / "out", "w") as out:  # a file: the child keeps the parent's output open
        done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, stdout=out, stderr=out, timeout=60)
    assert done.returncode == 0, (tmp_path / "out").read_text()
    pid = int((tmp_path / "pid").read_text())
    (tmp_path / "go").touch()
    wait_until(lambda: not is_running(pid), timeout=60, what=f"exit of orphaned child {pid}")
