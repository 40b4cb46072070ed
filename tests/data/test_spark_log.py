"""Spark's log (`.lance-sync/spark.log`) and Spark's errors hold no registered secret.

The JVM writes into a pipe whose lines a thread copies, masked, to the log
(`lance_sync.data.spark_session.masked_log_pipe`): proven here with a process of our own writing
to that pipe, which ends when the process does, so the test reads the log once the copy is
done rather than after some time. The suite's Spark session shows that Spark is told to
redact secret-looking options and settings, and that a failed Spark job's error is one line,
masked, naming its root cause.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lance_sync.data.materialize import source_schema
from lance_sync.data.spark_session import (
    REDACTION_CONF,
    SparkJobError,
    SparkSettings,
    is_connect_session,
    masked_log_pipe,
    root_cause,
    spark_errors,
)
from lance_sync.model.secrets import MASK, register

SECRET = "spark-log-secret-5Qv8/Lm+2="


def test_what_the_jvm_writes_reaches_the_log_masked(tmp_path: Path, subprocesses: None):
    register(SECRET)
    log = tmp_path / "spark.log"
    log.write_text("--- lance-sync starts Spark (local[2])\n")
    output, copier = masked_log_pipe(log)
    script = ("import sys\n"
              f"print('INFO reading with aws_secret_access_key={SECRET}', flush=True)\n"
              f"sys.stderr.write('WARN {SECRET[:7]}')\n"
              f"sys.stderr.write('{SECRET[7:]} again\\n')\n"
              "sys.stderr.write('a last line without a newline')\n")
    try:
        process = subprocess.run([sys.executable, "-c", script], stdout=output, stderr=output, check=True)
    finally:
        os.close(output)
    copier.join(timeout=60)  # the pipe ended with the process: the copy is complete
    assert process.returncode == 0 and not copier.is_alive()
    assert log.read_text() == ("--- lance-sync starts Spark (local[2])\n"
                               f"INFO reading with aws_secret_access_key={MASK}\n"
                               f"WARN {MASK} again\n"
                               "a last line without a newline")


@pytest.mark.spark
def test_spark_redacts_secret_looking_options_and_settings(spark):
    if is_connect_session(spark):
        pytest.skip("a Spark Connect server has its own redaction settings")
    for key, value in REDACTION_CONF.items():
        assert spark.conf.get(key) == value
    assert spark.sparkContext.getConf().get("spark.redaction.regex") == REDACTION_CONF["spark.redaction.regex"]


def test_a_spark_error_is_masked(tmp_path: Path):
    """What a failed Spark job raises is one line of Spark's error, masked."""
    register(SECRET)

    class AnalysisException(Exception):
        """Stands for pyspark's: spark_errors tells Spark's errors by their module."""

    AnalysisException.__module__ = "pyspark.errors.exceptions.captured"
    settings = SparkSettings(log_file=str(tmp_path / "spark.log"))
    with pytest.raises(SparkJobError) as raised, spark_errors(settings, "cannot read the source"):
        raise AnalysisException(f"[PATH_NOT_FOUND] Path does not exist: s3://lake/{SECRET}/orders\nat ...")
    assert str(raised.value).startswith(f"cannot read the source: [PATH_NOT_FOUND] Path does not exist: "
                                        f"s3://lake/{MASK}/orders (Spark's log: ")


@pytest.mark.spark
def test_a_failed_spark_job_names_its_root_cause(spark, spark_settings):
    """Spark's reader fails deep in Hadoop: the one line says why, not which Py4J call failed."""
    if is_connect_session(spark):
        pytest.skip("a Spark Connect server's errors carry no Java cause chain")
    register(SECRET)
    source = {"format": "parquet", "path": f"nosuch://lake/{SECRET}/orders/*.parquet"}
    with pytest.raises(SparkJobError) as raised:
        source_schema(source, spark_settings)
    message = str(raised.value)
    assert message.startswith(f"cannot read the parquet source nosuch://lake/{MASK}/orders/*.parquet: "
                              'UnsupportedFileSystemException: No FileSystem for scheme "nosuch" (Spark\'s log: ')
    assert SECRET not in message and "\n" not in message


def fail_in_python_worker(batches):
    for _ in batches:
        raise ValueError("the task's own error")
    yield from ()


@pytest.mark.spark
def test_a_failed_python_task_names_the_python_exception(spark, spark_settings):
    with pytest.raises(SparkJobError) as raised, spark_errors(spark_settings, "cannot count"):
        spark.range(2).mapInArrow(fail_in_python_worker, "id long").collect()
    assert str(raised.value).startswith("cannot count: ValueError: the task's own error (Spark's log: ")


@pytest.mark.parametrize(("text", "cause"), [
    ("[PYTHON_DATA_SOURCE_ERROR] Failed to initialize Python data source writer: Traceback (most recent "
     "call last):\n  File \"x.py\", line 1, in <module>\n    import lance_sync\nModuleNotFoundError: No "
     "module named 'lance_sync'\n SQLSTATE: 38000", "ModuleNotFoundError: No module named 'lance_sync'"),
    ("Traceback (most recent call last):\n  File \"a.py\", line 1\nKeyError: 'a'\n\nDuring handling of the "
     "above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"a.py\", "
     "line 3\n    raise ValueError('b')\n    ^^^^^^^^\nValueError: b", "ValueError: b"),
    ("[PATH_NOT_FOUND] Path does not exist: file:/x. SQLSTATE: 42K03", "[PATH_NOT_FOUND] Path does not exist: file:/x."),
    ("", "SparkRuntimeError"),
])
def test_the_root_cause_of_an_error_without_java_causes_is_its_own_summary(text: str, cause: str):
    class SparkRuntimeError(Exception):
        pass

    assert root_cause(SparkRuntimeError(text)) == cause
