"""resolve_spark_settings precedence, and that importing the data package starts no Spark."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from lance_sync.data import spark_session as spark_module
from lance_sync.data.spark_session import (
    ENV_VARIABLE,
    SparkSettings,
    SparkUnavailableError,
    get_spark,
    resolve_spark_settings,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
MANIFEST_BLOCK = {"master": "spark://manifest:7077", "conf": {"spark.executor.memory": "2g"}}


@pytest.fixture(autouse=True)
def no_environment_master(monkeypatch):
    monkeypatch.delenv(ENV_VARIABLE, raising=False)


def test_cli_wins_over_environment_and_manifest(monkeypatch):
    monkeypatch.setenv(ENV_VARIABLE, "sc://env:15002")
    settings = resolve_spark_settings("local[2]", MANIFEST_BLOCK)
    assert settings == SparkSettings("local[2]", {"spark.executor.memory": "2g"})


def test_environment_wins_over_manifest(monkeypatch):
    monkeypatch.setenv(ENV_VARIABLE, "sc://env:15002")
    settings = resolve_spark_settings(None, MANIFEST_BLOCK)
    assert (settings.master, settings.is_connect) == ("sc://env:15002", True)


def test_manifest_then_embedded_default():
    assert resolve_spark_settings(None, MANIFEST_BLOCK).master == "spark://manifest:7077"
    default = resolve_spark_settings(None, None)
    assert (default.effective_master, default.is_local, default.is_connect) == (
        "local[*]",
        True,
        False,
    )


def test_conf_values_become_spark_strings():
    settings = resolve_spark_settings(None, {"conf": {"a": True, "b": 4, "c": "x"}})
    assert settings.conf == {"a": "true", "b": "4", "c": "x"}


def test_unknown_keys_are_refused():
    with pytest.raises(ValueError, match="unknown key.*mastr"):
        resolve_spark_settings(None, {"mastr": "local"})


def test_importing_the_data_package_does_not_import_pyspark(subprocesses: None):
    code = "import sys, lance_sync.data; print('pyspark' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_missing_java_is_explained(monkeypatch):
    pytest.importorskip("pyspark")
    monkeypatch.setattr(spark_module, "_sessions", {})
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(SparkUnavailableError, match="Java 17"):
        get_spark(SparkSettings("local[1]"))


def test_missing_pyspark_names_the_extra_to_install(monkeypatch):
    monkeypatch.setattr(spark_module, "_sessions", {})
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)
    with pytest.raises(SparkUnavailableError, match=r"lance-sync\[spark\]"):
        get_spark(SparkSettings("local[1]"))
    with pytest.raises(SparkUnavailableError, match=r"lance-sync\[connect\]"):
        get_spark(SparkSettings("sc://127.0.0.1:15002"))


@pytest.mark.parametrize(("master", "expected"), [
    ("spark://127.0.0.1:7077", True),
    ("spark://localhost:7077", True),
    ("spark://127.0.0.1:7077,localhost:7078", True),
    ("spark://[::1]:7077", True),
    ("spark://10.0.0.5:7077", False),
    ("spark://127.0.0.1:7077,spark-master:7077", False),
    ("yarn", False),
    ("k8s://https://127.0.0.1:6443", False),
])
def test_a_standalone_master_on_loopback_is_recognised(master: str, expected: bool):
    assert spark_module.is_loopback_master(master) is expected


def test_the_driver_binds_to_loopback_when_the_master_is_there_unless_the_conf_says_otherwise():
    loopback = spark_module.session_conf(SparkSettings("spark://127.0.0.1:7077"), environ={})
    assert (loopback["spark.driver.host"], loopback["spark.driver.bindAddress"]) == ("127.0.0.1", "127.0.0.1")
    own = spark_module.session_conf(SparkSettings("spark://localhost:7077", {"spark.driver.host": "10.0.0.2"}),
                                    environ={})
    assert (own["spark.driver.host"], own["spark.driver.bindAddress"]) == ("10.0.0.2", "127.0.0.1")
    remote = spark_module.session_conf(SparkSettings("spark://10.0.0.5:7077"), environ={})
    assert "spark.driver.host" not in remote and "spark.driver.bindAddress" not in remote
    assert "spark.ui.enabled" not in remote  # the local-mode settings stay local


def test_python_workers_run_the_configured_interpreter_else_this_one():
    cluster = SparkSettings("spark://10.0.0.5:7077")
    assert spark_module.worker_python(cluster, environ={}) == sys.executable
    assert spark_module.worker_python(cluster, environ={"PYSPARK_PYTHON": "/opt/env/bin/python"}) == \
        "/opt/env/bin/python"
    configured = SparkSettings("spark://10.0.0.5:7077", {"spark.pyspark.python": "./env/bin/python"})
    assert spark_module.worker_python(configured, environ={"PYSPARK_PYTHON": "/opt/env/bin/python"}) == \
        "./env/bin/python"
    assert spark_module.session_conf(configured, environ={})["spark.pyspark.python"] == "./env/bin/python"
    # local workers run where lance-sync runs: this interpreter unless the conf names another
    assert spark_module.worker_python(SparkSettings("local[2]"), environ={"PYSPARK_PYTHON": "python3"}) == \
        sys.executable


def test_the_package_is_shipped_to_a_cluster_unless_the_conf_says_how_executors_import_it():
    assert spark_module.ships_package(SparkSettings("spark://10.0.0.5:7077"))
    assert spark_module.ships_package(SparkSettings("yarn"))
    assert not spark_module.ships_package(SparkSettings("local[2]"))
    for key in spark_module.IMPORT_CONF:
        assert not spark_module.ships_package(SparkSettings("yarn", {key: "x"}))


def test_the_shipped_zip_is_the_whole_package_this_process_runs(tmp_path: Path, subprocesses: None):
    """Imported from the zip alone (no PYTHONPATH, the working directory elsewhere), as a
    cluster's Python worker imports it."""
    archive = spark_module.package_zip(tmp_path / spark_module.PACKAGE_ZIP)
    code = ("import sys; sys.path.insert(1, sys.argv[1]); import lance_sync.data.file_source, "
            "lance_sync.data.lance_source, lance_sync.data.inspection, lance_sync.data.find_datasets; "
            "print(lance_sync.__file__)")
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-c", code, str(archive)], capture_output=True, text=True,
                            cwd=tmp_path, env=environment, check=True)
    assert result.stdout.strip() == str(archive / "lance_sync" / "__init__.py")
    names = set(zipfile.ZipFile(archive).namelist())
    assert "lance_sync/data/spark_session.py" in names and not any("__pycache__" in name for name in names)


@pytest.mark.spark
def test_threads_asking_at_once_share_the_session_the_first_one_starts(tmp_path: Path):
    """apply's workers materialize several tables at once; in a process of its own (one
    classic session per process), with no session yet."""
    script = (
        "import sys, threading\n"
        "from lance_sync.data.spark_session import SparkSettings, get_spark\n"
        "settings = SparkSettings('local[1]', log_file=sys.argv[1])\n"
        "sessions, errors = [], []\n"
        "def ask():\n"
        "    try:\n"
        "        sessions.append(get_spark(settings))\n"
        "    except Exception as error:\n"
        "        errors.append(repr(error))\n"
        "threads = [threading.Thread(target=ask) for _ in range(3)]\n"
        "[thread.start() for thread in threads]\n"
        "[thread.join() for thread in threads]\n"
        "print(len(sessions), len({id(session) for session in sessions}), errors)\n"
    )
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "spark.log")], capture_output=True,
                            text=True, env=environment, stdin=subprocess.DEVNULL)
    assert result.stdout.strip() == "3 1 []", result.stdout + result.stderr
