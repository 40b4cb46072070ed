"""Long work says what it waits for (issue 49): the apply's progress line names the Spark start
a `source:` table waits for, and a `source:` table where Spark cannot start is named by `plan`
with what to install while apply still carries out everything else."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from lance_sync.data import spark_session
from lance_sync.drivers import connect
from lance_sync.model import engines
from tests.support.cli import cli_env, run_cli

MANIFEST = {
    "version": 1, "owner": "waits",
    "backends": {"lake": {"type": "dir", "root": "./lake"}},
    "namespaces": [{"backend": "lake", "id": "sales"}],
    "tables": [{"name": "orders", "location": "./lake/orders.lance",
                "register": [{"backend": "lake", "namespace": "sales"}], "schema": [{"name": "id", "type": "int64"}]},
               {"name": "customers", "location": "./lake/customers.lance",
                "register": [{"backend": "lake", "namespace": "sales"}],
                "source": {"format": "csv", "path": "./customers.csv", "options": {"header": "true"}},
                "schema": [{"name": "id", "type": "int64"}]}],
}


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    (tmp_path / "customers.csv").write_text("id\n1\n")
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(MANIFEST, sort_keys=False))
    return path


@pytest.fixture
def without_java(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(shutil, "which", lambda name, *args, **kwargs: None)


def test_the_progress_line_names_the_spark_start(manifest: Path, monkeypatch: pytest.MonkeyPatch):
    """Spark is not started here (a write that fails at once stands for it): what the progress
    line says while the write runs is what is checked."""
    monkeypatch.setattr(engines, "missing_engine", lambda master: None)
    monkeypatch.setattr(spark_session, "spark_started", lambda settings: False)

    def materialize(source: dict, at: str, target: Any, mode: str, settings: Any, **options: Any) -> None:
        raise RuntimeError("no Spark in this test")

    monkeypatch.setattr("lance_sync.data.materialize.materialize", materialize)
    result = run_cli(manifest, "apply", "--auto-approve", env=cli_env())
    assert result.returncode == 3 and "no Spark in this test" in result.stderr, result.stderr
    assert "; starting Spark local[*] for customers (first start takes ~20 s)" in result.stderr, result.stderr


def test_plan_names_a_table_spark_cannot_write_here(manifest: Path, without_java: None):
    plan = run_cli(manifest, "plan", env=cli_env())
    assert plan.returncode == 0, plan.stderr
    assert ("Warning: table 'customers' is written from its source by Spark, which cannot start here: Spark needs "
            "Java 17 or newer, which is not installed here: install a JRE") in plan.stdout
    assert "openjdk-17-jre-headless" in plan.stdout


def test_apply_runs_the_rest_and_fails_that_write_with_what_to_install(manifest: Path, without_java: None,
                                                                        tmp_path: Path):
    result = run_cli(manifest, "apply", "--auto-approve", "--format", "json", env=cli_env())
    assert result.returncode == 3, result.stderr
    outcomes = {(o["verb"], o["kind"], o["display_id"]): o for o in json.loads(result.stdout)["outcomes"]}
    write = outcomes["create", "dataset", str(tmp_path / "lake" / "customers.lance")]
    assert write["status"] == "failed" and "Spark needs Java 17 or newer" in write["error"]
    assert outcomes["create", "table", "sales$customers"]["status"] == "skipped"
    assert outcomes["create", "table", "sales$orders"]["status"] == "succeeded"
    assert connect("dir", {"root": str(tmp_path / "lake")}).get_table_info(("sales", "orders")) is not None


def test_a_java_home_without_java_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert f"JAVA_HOME is {tmp_path}, which has no bin/java" in (engines.missing_java() or "")


def test_a_pyspark_without_py4j_is_named(monkeypatch: pytest.MonkeyPatch):
    """`import pyspark` fails without py4j: a bare ImportError at apply before."""
    monkeypatch.setitem(__import__("sys").modules, "py4j", None)
    assert "(py4j missing): pip install 'lance-sync[spark]'" in (engines.missing_engine(None) or "")

