"""scripts/ci_extras.py: the extras the GitHub Action installs with `extras: auto`, for each kind
of manifest and run (a plan never needs Spark; an apply needs it only for a table with a
source, Spark Connect for an sc:// master)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@pytest.fixture(scope="module")
def ci_extras() -> ModuleType:
    sys.path.insert(0, str(SCRIPTS))  # the script imports ci_action beside it, as when run
    try:
        return importlib.import_module("ci_extras")
    finally:
        sys.path.remove(str(SCRIPTS))


def manifest(*types: str, source: bool = False, master: str | None = None) -> dict:
    table = {"name": "t", "location": "./t.lance", **({"source": {"format": "csv", "path": "x.csv"}} if source else {})}
    return {"version": 1, "owner": "o", "backends": {f"b{i}": {"type": t} for i, t in enumerate(types)},
            "tables": [table], **({"spark": {"master": master}} if master else {})}


@pytest.mark.parametrize("types, extras", [
    (("dir",), []), (("unity",), []), (("iceberg",), []), (("glue",), ["glue"]), (("hive3",), ["hive"]),
    (("glue", "hive3", "dir"), ["glue", "hive"]),
])
def test_each_backend_type_brings_its_extra(ci_extras: ModuleType, types: tuple[str, ...], extras: list[str]):
    assert ci_extras.extras_for(manifest(*types), applies=True) == extras


def test_spark_only_when_the_run_applies_a_table_with_a_source(ci_extras: ModuleType):
    assert ci_extras.extras_for(manifest("dir", source=True), applies=False) == []
    assert ci_extras.extras_for(manifest("dir", source=False), applies=True) == []
    assert ci_extras.extras_for(manifest("dir", source=True), applies=True) == ["spark"]
    assert ci_extras.extras_for(manifest("glue", source=True, master="spark://h:7077"), applies=True) == [
        "glue", "spark"]


def test_connect_for_an_sc_master_from_the_manifest_or_args(ci_extras: ModuleType):
    assert ci_extras.extras_for(manifest("dir", source=True, master="sc://spark:15002"), applies=True) == ["connect"]
    assert ci_extras.extras_for(manifest("dir", source=True, master="sc://spark:15002"), applies=False) == []
    assert ci_extras.extras_for(manifest("dir", source=True), True, ci_extras.spark_option(
        ["--parallelism", "4", "--spark", "sc://h:15002"])) == ["connect"]
    assert ci_extras.spark_option(["--spark=local[2]"]) == "local[2]" and ci_extras.spark_option([]) is None


def run(ci_extras: ModuleType, folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        event: str = "pull_request", ref: str = "refs/pull/7/merge", **environ: str) -> str:
    event_path = folder / "event.json"
    event_path.write_text('{"repository": {"default_branch": "main"}, "pull_request": {"number": 7}}')
    monkeypatch.chdir(folder)
    ci_extras.main({"GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": str(event_path), "GITHUB_REF": ref, **environ})
    return capsys.readouterr().out.strip()


def test_main_reads_the_files_merged_and_the_run_from_github(ci_extras: ModuleType, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch):
    """The base has a dir backend and a sourced table; an overlay adds a glue backend and points
    Spark at ${SPARK_REMOTE}, unset here (as on a fork): read as written, not an error."""
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(manifest("dir", source=True)))
    (tmp_path / "prod.overlay.yaml").write_text(yaml.safe_dump(
        {"backends": {"cat": {"type": "glue", "region": "${AWS_REGION}"}}, "spark": {"master": "${SPARK_REMOTE}"}}))
    files = {"LANCE_SYNC_FILES": "base.yaml prod.overlay.yaml"}
    assert run(ci_extras, tmp_path, capsys, monkeypatch, **files) == "glue"  # a pull request plans
    assert run(ci_extras, tmp_path, capsys, monkeypatch, "push", "refs/heads/feature", **files) == "glue"
    assert run(ci_extras, tmp_path, capsys, monkeypatch, "push", "refs/heads/main", **files) == "glue,spark"
    assert run(ci_extras, tmp_path, capsys, monkeypatch, LANCE_SYNC_MODE="apply", **files) == "glue,spark"
    assert run(ci_extras, tmp_path, capsys, monkeypatch, "push", "refs/heads/main", LANCE_SYNC_MODE="plan",
               **files) == "glue"
    assert run(ci_extras, tmp_path, capsys, monkeypatch, LANCE_SYNC_MODE="apply", SPARK_REMOTE="sc://s:15002",
               **files) == "connect,glue"


def test_a_manifest_that_cannot_be_read_gets_no_extras_and_a_warning(ci_extras: ModuleType, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "lance-sync.yaml").write_text("backends: [unclosed\n")
    event_path = tmp_path / "event.json"
    event_path.write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert ci_extras.main({"GITHUB_EVENT_PATH": str(event_path), "LANCE_SYNC_MODE": "apply"}) == 0
    out, err = capsys.readouterr()
    assert out == "\n" and "::warning::installing no extras: could not read lance-sync.yaml" in err
