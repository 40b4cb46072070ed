"""Large split manifests parse in worker processes, and `--changed-since` parses a file once
(lance_sync.manifest.parsing: Parsing).

The worker tests run in a fresh interpreter: the loader forks only a process that runs no
other thread, and the test session runs servers in threads."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from lance_sync import api
from lance_sync.manifest import merge as merge_module
from lance_sync.manifest.parsing import CACHE_ENV

#: every test here starts Python processes: the slow lane (tests/support/lanes.py)
pytestmark = pytest.mark.usefixtures("subprocesses")

BASE: dict[str, Any] = {
    "version": 1, "owner": "o",
    "backends": {"a": {"type": "dir", "root": "./a"}},
    "namespaces": [{"backend": "a", "id": "sales"}],
    "tables": [{"name": f"t{i}", "location": f"./a/t{i}.lance", "register": [{"backend": "a", "namespace": "sales"}]}
               for i in range(3)],
}

#: three files: a base with a variable, an overlay of new tables, one with a value marshal
#: cannot carry (a LeadingZero) and a key twice across files
FILES = {
    "base.yaml": "version: 1\nowner: o\nbackends:\n  a: {type: dir, root: '${ROOT:-./a}'}\n"
                 "namespaces: [{backend: a, id: sales, properties: {n: 010}}]\n"
                 "tables: [{name: t0, location: ./a/t0.lance, register: [{backend: a, namespace: sales}]}]\n",
    "more.yaml": "tables:\n" + "".join(f"  - {{name: t{i}, location: ./a/t{i}.lance, properties: {{tier: gold}}, "
                                       f"register: [{{backend: a, namespace: sales}}]}}\n" for i in range(1, 50)),
    "odd.yaml": "tables: [{name: t0, protect: 010}]\n",
}


def run_fresh(tmp_path: Path, body: str) -> str:
    """`body` in a new interpreter, in `tmp_path` holding FILES; its stdout."""
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    script = textwrap.dedent("""
        import os, sys
        from lance_sync.manifest import loader, parsing
        from lance_sync.manifest.strategy import FastPathUnavailable
        parsed_here = []
        parse = loader.parse_plain
        def counting(name, *args):
            parsed_here.append(os.path.basename(name))
            return parse(name, *args)
        loader.parse_plain = counting  # a worker counts in its own copy
        paths = ["base.yaml", "more.yaml", "odd.yaml"]
        """) + textwrap.dedent(body)
    environ = {**os.environ, CACHE_ENV: "off"}  # every file parsed in this run
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=environ)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_workers_parse_what_this_process_would(tmp_path: Path):
    out = run_fresh(tmp_path, """
        serial = parsing.load_plain_documents(paths, {"ROOT": "/r"})
        assert sorted(parsed_here) == sorted(paths), parsed_here
        parsed_here.clear()
        parsing.PARALLEL_BYTES = 0
        parallel = parsing.load_plain_documents(paths, {"ROOT": "/r"})
        assert parsed_here == [], parsed_here  # every file parsed by a worker
        for one, other in zip(serial, parallel, strict=True):
            assert (one.data, one.templates, one.files) == (other.data, other.templates, other.files)
        print(parallel[0].data["backends"]["a"]["root"], repr(parallel[0].data["namespaces"][0]["properties"]["n"]))
        """)
    assert out.split() == ["/r", "'010'"]


def test_a_file_that_is_not_plain_is_left_to_the_full_road(tmp_path: Path):
    (tmp_path / "anchors.yaml").write_text("tables: &t [{name: t9, location: ./a/t9.lance}]\n")
    run_fresh(tmp_path, """
        parsing.PARALLEL_BYTES = 0
        try:
            parsing.load_plain_documents(paths + ["anchors.yaml"], {})
        except FastPathUnavailable:
            pass
        else:
            raise AssertionError("anchors are not plain")
        assert parsed_here == ["anchors.yaml"], parsed_here  # the others came from the workers
        """)


def test_a_worker_that_dies_leaves_the_files_to_this_process(tmp_path: Path):
    run_fresh(tmp_path, """
        def die(*args):
            os._exit(3)
        parsing._parse_in_worker = die
        parsing.PARALLEL_BYTES = 0
        documents = parsing.load_plain_documents(paths, {})
        assert sorted(parsed_here) == sorted(paths) and len(documents) == 3, parsed_here
        """)


def test_no_workers_beside_other_threads(tmp_path: Path):
    run_fresh(tmp_path, """
        import threading
        stop = threading.Event()
        threading.Thread(target=stop.wait).start()
        parsing.PARALLEL_BYTES = 0
        parsing.load_plain_documents(paths, {})
        stop.set()
        assert sorted(parsed_here) == sorted(paths), parsed_here
        """)


def test_a_worker_parses_the_changed_file_while_the_others_come_from_the_cache(tmp_path: Path):
    out = run_fresh(tmp_path, """
        parsing.MIN_BYTES = 0
        os.environ[parsing.CACHE_ENV] = os.path.join(os.getcwd(), "cache")
        first = parsing.load_plain_documents(paths, {})
        assert sorted(parsed_here) == sorted(paths), parsed_here  # small files: no workers
        with open("more.yaml", "a") as more:
            more.write("  - {name: t99, location: ./a/t99.lance}\\n")
        parsed_here.clear()
        parsing.PARALLEL_BYTES = 0
        again = parsing.load_plain_documents(paths, {})
        assert parsed_here == [], parsed_here  # the changed file by a worker, the others read back
        assert [d.data for d in again] != [d.data for d in first] and again[0].data == first[0].data
        print(again[1].data["tables"][-1]["name"])
        """)
    assert out.split() == ["t99"]


def test_this_process_does_its_next_work_while_a_worker_parses(tmp_path: Path):
    run_fresh(tmp_path, """
        import time
        in_worker = parsing._parse_in_worker
        def after_go(*args):  # the workers wait for what this process does meanwhile
            while not os.path.exists("go"):
                time.sleep(0.01)
            return in_worker(*args)
        parsing._parse_in_worker = after_go
        parsing.PARALLEL_BYTES = 0
        meanwhile = []
        def go():
            meanwhile.append("go")
            open("go", "w").close()
        documents = parsing.load_plain_documents(paths, {}, meanwhile=go)
        assert meanwhile == ["go"] and parsed_here == [] and len(documents) == 3, (meanwhile, parsed_here)
        """)


def git(folder: Path, *args: str) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", *args], cwd=folder, check=True, env=env, capture_output=True)


def test_changed_since_parses_and_merges_each_version_of_a_file_once(tmp_path: Path, parsed: list[str],
                                                                     monkeypatch: pytest.MonkeyPatch):
    merges = []
    merge = merge_module.merge_documents
    monkeypatch.setattr(merge_module, "merge_documents", lambda documents: merges.append(1) or merge(documents))
    base, overlay = tmp_path / "m.yaml", tmp_path / "overlay.yaml"
    base.write_text(yaml.safe_dump(BASE))
    overlay.write_text(yaml.safe_dump({"tables": [{"name": "t1", "properties": {"o": "v"}}]}))
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "m")
    changed = copy.deepcopy(BASE)
    changed["tables"][0]["properties"] = {"k": "v"}
    base.write_text(yaml.safe_dump(changed))
    state, baseline = api.load_changed([str(base), str(overlay)], "HEAD")
    # the base as committed and as it is now; the overlay, the same in both, once
    assert sorted(parsed) == ["m.yaml", "m.yaml", "overlay.yaml"]
    assert len(merges) == 2  # the revision's files; the working tree's, for the comparison and the load
    assert baseline.then is not None and "properties" not in baseline.then.tables["t0"]
    assert baseline.now.tables["t0"]["properties"] == {"k": "v"}
    # only the changed table is built; the others wait as written
    assert [(t.name, t.properties) for t in state.tables] == [("t0", {"k": "v"})] and state.unbuilt is not None
    # and the documents were not changed by the load: a second load reads the same
    again = api.load([str(base), str(overlay)])
    assert [t.name for t in again.tables] == [t["name"] for t in BASE["tables"]]
    assert [t for t in again.tables if t.name == "t0"] == state.tables


def test_a_worker_parses_the_revision_of_a_changed_file_and_reads_the_change_from_it(tmp_path: Path):
    """`--changed-since` with an empty cache: the worker that parses a changed file's committed
    version reads the working tree's from that parse (lance_sync.manifest.parsing: reparse) instead of
    parsing it whole too; the baseline is the one this process makes without workers."""
    out = run_fresh(tmp_path, """
        import subprocess
        from lance_sync.manifest import history
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
        for argv in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "estate"]):
            subprocess.run([*git, *argv], check=True, capture_output=True)
        with open("more.yaml") as more:
            text = more.read()
        with open("more.yaml", "w") as more:
            more.write(text.replace("name: t7, location: ./a/t7.lance, properties: {tier: gold}",
                                    "name: t7, location: ./a/t7.lance, properties: {tier: silver}"))
        serial = history.load_baseline("HEAD", paths, environ={"ROOT": "/r"})
        assert sorted(parsed_here) == ["base.yaml", "more.yaml", "odd.yaml"], parsed_here  # more.yaml's revision

        reparsed = parsing.reparse
        def noting(name, *args):  # a worker notes in a file what it read from the earlier parse
            document = reparsed(name, *args)
            with open("reparsed", "a") as notes:
                notes.write(f"{os.getpid()} {os.path.basename(name)} {document is not None}\\n")
            return document
        parsing.reparse = noting
        parsed_here.clear()
        parsing.PARALLEL_BYTES = 0
        parallel = history.load_baseline("HEAD", paths, environ={"ROOT": "/r"})
        assert parsed_here == [], parsed_here  # every version parsed by a worker
        assert parallel == serial
        with open("reparsed") as notes:
            noted = notes.read().split()
        assert noted[1:] == ["more.yaml", "True"] and int(noted[0]) != os.getpid(), noted
        print(parallel.now.tables["t7"]["properties"]["tier"], parallel.then.tables["t7"]["properties"]["tier"])
        """)
    assert out.split() == ["silver", "gold"]


def test_one_large_file_goes_to_a_worker_when_this_process_has_work_meanwhile(tmp_path: Path):
    """A plan's load (`api.load(plan_next=True)`): the planner is imported while a worker
    parses a large manifest file; a file alone with nothing else to do parses here."""
    run_fresh(tmp_path, """
        parsing.MEANWHILE_BYTES = 0
        alone = parsing.load_plain_documents(["more.yaml"], {})
        assert parsed_here == ["more.yaml"], parsed_here  # no work meanwhile: no worker
        parsed_here.clear()
        done = []
        meanwhile = parsing.load_plain_documents(["more.yaml"], {}, meanwhile=lambda: done.append("imported"))
        assert parsed_here == [] and done == ["imported"], (parsed_here, done)
        assert [d.data for d in meanwhile] == [d.data for d in alone]
        """)
