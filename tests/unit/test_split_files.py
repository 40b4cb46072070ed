"""A manifest split over files of tables is built a file per worker process, into the same
desired state and the same errors as the usual road (lance_sync.manifest.strategy: split_road).

Each case loads the files twice in a fresh interpreter, by the usual road and by the split
one: the loader forks only a process that runs no other thread, and the test session runs
servers in threads."""

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
from tests.support.manifests import table

#: every test here starts Python processes: the slow lane (tests/support/lanes.py)
pytestmark = pytest.mark.usefixtures("subprocesses")

FILES = 3
PER_FILE = 12


def files(changes: dict[int, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """A base file (backends, namespaces, tables) and FILES - 1 files of tables only, tables of
    every kind among them; `changes` replaces fields of the tables at those indices."""
    tables = [table(index) for index in range(FILES * PER_FILE)]
    tables[15] = table(15, schema=[{"name": "id", "type": "int64"}], on_remove="drop", protect=True)
    tables[20] = table(20, source={"path": "./in/t20.parquet", "format": "parquet"}, properties={})
    tables[26] = table(26, register=[{"backend": "d", "namespace": "ns1", "name": "other"},
                                     {"backend": "h", "namespace": "hive$sales"}])
    tables[30] = table(30, renamed_from=["t30_old", "ns9$t30_older"])
    for index, fields in (changes or {}).items():
        tables[index] = {**tables[index], **fields}
    base = {"version": 1, "owner": "o",
            "backends": {"d": {"type": "dir", "root": "./lake"}, "h": {"type": "hive3", "uri": "thrift://127.0.0.1:1"}},
            "namespaces": [{"backend": "d", "id": "ns0"}], "tables": tables[:PER_FILE]}
    return [base] + [{"tables": tables[n * PER_FILE:(n + 1) * PER_FILE]} for n in range(1, FILES)]


def loaded_both_ways(tmp_path: Path, documents: list[dict[str, Any]], worker: str = "",
                     as_json: bool = False) -> dict[str, Any]:
    """The tables (or the error) of the files loaded by the usual road and by the split one,
    and whether the split one built them; `worker` runs first (a worker inherits it)."""
    names = []
    for index, document in enumerate(documents):
        name = f"part{index}.{'json' if as_json else 'yaml'}"
        text = json.dumps(document) if as_json else yaml.safe_dump(document, sort_keys=False)
        (tmp_path / name).write_text(text)
        names.append(name)
    script = textwrap.dedent(f"""
        import json, os
        from lance_sync.manifest import load_manifest, parsing, semantic, strategy
        from lance_sync.model.errors import ManifestError, ManifestErrors
        paths = {names!r}
        built = []
        of_files = semantic._tables_of_files
        def counting(*args):
            tables = of_files(*args)
            built.append(len(tables))  # not reached when the split road gives up
            return tables
        semantic._tables_of_files = counting
        """) + textwrap.dedent(worker) + textwrap.dedent("""
        def load():
            try:
                state = load_manifest(paths, {"ROOT": "/r"})
                return [repr(t) for t in state.tables] + [repr(state.namespaces), repr(state.files)]
            except (ManifestError, ManifestErrors) as error:
                return str(error)
        parsing.PARALLEL_BYTES = 10 ** 12
        usual = load()
        assert built == []
        parsing.PARALLEL_BYTES = 0
        semantic.ROWS_CHUNK = 5  # a worker's rows in several chunks
        print(json.dumps({"usual": usual, "split": load(), "built": built}))
        """)
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, CACHE_ENV: "off"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("as_json", [False, True], ids=["yaml", "json"])
def test_workers_build_what_the_usual_road_does(tmp_path: Path, as_json: bool):
    out = loaded_both_ways(tmp_path, files(), as_json=as_json)
    assert out["built"] == [FILES * PER_FILE]  # the split road built every table
    assert out["split"] == out["usual"] and len(out["usual"]) == FILES * PER_FILE + 2
    renamed = next(t for t in out["split"] if "name='t30'" in t)
    assert "renamed_from=(('ns2', 't30_old'), ('ns9', 't30_older'))" in renamed


def test_a_variable_in_a_file_of_tables_is_read(tmp_path: Path):
    out = loaded_both_ways(tmp_path, files({30: {"properties": {"root": "${ROOT}"}}}))
    assert out["built"] == [FILES * PER_FILE] and out["split"] == out["usual"]
    assert any("properties={'root': '/r'}" in t for t in out["split"])


def test_a_secret_from_the_environment_in_the_first_file_leaves_the_tables_to_workers(tmp_path: Path):
    """A backend whose secret is written ${VAR} (as a Glue or Unity estate writes it): the first
    file's templates go with it, so its check passes and the workers build the tables."""
    documents = files()
    documents[0]["backends"]["u"] = {"type": "unity", "endpoint": "http://127.0.0.1:1", "catalog": "main",
                                     "auth_token": "${ROOT}"}
    out = loaded_both_ways(tmp_path, documents)
    assert out["built"] == [FILES * PER_FILE] and out["split"] == out["usual"]


@pytest.mark.parametrize("change", [
    lambda documents: documents[2]["tables"].append({"name": "t3", "properties": {"tier": "x"}}),
    lambda documents: documents[2]["tables"].append(table(14)),
    lambda documents: documents[1].update(owner="someone-else"),
    lambda documents: documents[2].update(backends={"e": {"type": "dir", "root": "./lake"}}),
    lambda documents: documents[1].update(namespaces=[{"backend": "d", "id": "ns1"}]),
], ids=["overlay-of-the-base", "overlay-of-another-file", "owner", "backend", "namespaces"])
def test_a_file_that_is_more_than_new_tables_is_merged_the_usual_way(tmp_path: Path, change: Any):
    documents = files()
    change(documents)
    out = loaded_both_ways(tmp_path, documents)
    assert out["built"] == [] and out["split"] == out["usual"]
    assert not isinstance(out["usual"], str), out["usual"]


@pytest.mark.parametrize("changes", [
    {30: {"properties": {"lance_sync.table_type": "x"}}},
    {30: {"register": [{"backend": "d", "namespace": "ns$"}]}},
    {30: {"protect": "yes"}},
    {30: {"renamed_from": "t2"}},
    {30: {"location": "./lake/t2.lance"}},
    {30: {"register": [{"backend": "d", "namespace": "ns2", "name": "t2"}]}},
], ids=["reserved-property", "bad-namespace", "not-strict", "renamed-from-a-declared-table",
        "location-of-another-file", "id-of-another-file"])
def test_a_problem_in_a_file_of_tables_is_reported_as_by_the_usual_road(tmp_path: Path, changes: dict[int, Any]):
    out = loaded_both_ways(tmp_path, files(changes))
    assert isinstance(out["usual"], str) and "tables[" in out["usual"], out["usual"]
    assert out["split"] == out["usual"]


def test_grants_in_a_file_of_tables_are_built_the_usual_way(tmp_path: Path):
    grants = {"register": [{"backend": "h", "namespace": "hive$sales", "grants": {"user:alice": ["SELECT"]}}]}
    out = loaded_both_ways(tmp_path, files({27: grants}))
    assert out["built"] == [] and out["split"] == out["usual"]
    assert any("user:alice" in t for t in out["split"])


def test_a_worker_that_dies_leaves_the_files_to_the_usual_road(tmp_path: Path):
    out = loaded_both_ways(tmp_path, files(), worker="""
        def die(*args):
            os._exit(3)
        strategy._file_rows = die
        """)
    assert out["built"] == [] and out["split"] == out["usual"]


def test_no_workers_beside_another_thread(tmp_path: Path):
    out = loaded_both_ways(tmp_path, files(), worker="""
        import threading
        threading.Thread(target=threading.Event().wait, daemon=True).start()
        """)
    assert out["built"] == [] and out["split"] == out["usual"]
