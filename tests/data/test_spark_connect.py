"""The same data code over Spark Connect: a local Connect server started as a subprocess.

PySpark's in-process `remote("local")` cannot start while the suite's classic session exists,
so the server runs as its own JVM (spark-submit SparkConnectServer), like a remote cluster
would: its Python workers import lance_sync from this checkout. The client runs in its own
process too (tests/data/connect_client.py): PySpark's Connect mode is process-wide.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lance_sync.model.arrow_types import columns_from_schema
from tests.data.tables import TYPED_SCHEMA, typed_table

pytestmark = pytest.mark.spark

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
STARTUP_DEADLINE_SECONDS = 240


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _accepts_connections(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _spark_submit() -> Path:
    pyspark = pytest.importorskip("pyspark")
    spark_home = os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)
    return Path(spark_home) / "bin" / "spark-submit"


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("pyspark.sql.connect.session", reason="needs pyspark[connect]")
    port = _free_port()
    log = tmp_path_factory.mktemp("connect") / "server.log"
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    command = [
        str(_spark_submit()), "--class", SERVER_CLASS, "--master", "local[2]",
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", "spark.ui.enabled=false",
    ]  # fmt: skip
    with log.open("wb") as output:
        server = subprocess.Popen(
            command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + STARTUP_DEADLINE_SECONDS
        while not _accepts_connections(port):
            if server.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:]
                pytest.skip(f"a local Spark Connect server did not start here:\n{tail}")
            time.sleep(1)
        yield f"sc://127.0.0.1:{port}"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


def test_materialize_inspect_and_read_over_connect(connect_url, tmp_path):
    (tmp_path / "source").mkdir()
    pq.write_table(typed_table(40), tmp_path / "source" / "part-0.parquet")
    location = str(tmp_path / "t.lance")
    client = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.data.connect_client",
            connect_url,
            str(tmp_path / "source"),
            location,
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
    )
    assert client.returncode == 0, client.stderr[-3000:]
    outcome = json.loads(client.stdout.strip().splitlines()[-1])
    assert outcome == {
        "session": "pyspark.sql.connect.session",
        "version": 1,
        "row_count": 40,
        "columns": columns_from_schema(TYPED_SCHEMA),
        "read_count": 40,
        "statuses": ["valid", "missing"],
        "save_modes": {"default_refused": True, "ignore_count": 40},
    }
