"""The data plane on a Spark standalone cluster, where executors are processes of their own.

The session's loopback cluster (a master and two workers, tests/servers/spark_cluster.py) and
moto's S3 server: `lance-sync apply`, `verify --engine spark` and `discover --engine spark`
run as a user runs them, each in its own process (its own driver: one classic session per
process) with `--spark spark://127.0.0.1:PORT`. The store is given through the standard AWS
environment only, which the driver has and the workers do not: the executors reach it with
the storage options lance-sync resolves and ships. The driver's interpreter, Spark's local IP
and PYTHONPATH settings of this test process are not passed on: lance-sync must choose them.

What ran where is read from the workers' executor logs (`<work dir>/<application>/<n>/stderr`)
of the one application each command started: its Python tasks ran in executor processes, the
executors fetched the lance_sync package from the driver, and the driver was on loopback.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from tests.data.tables import TYPED_SCHEMA, typed_table
from tests.servers import s3
from tests.servers.base import RunningServer, wait_until
from tests.servers.spark_cluster import SparkCluster, describe

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
#: what the process running the tests sets for its own local session, and a user's master
DRIVER_SETTINGS = ("SPARK_LOCAL_IP", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "LANCE_SYNC_SPARK")
#: Spark's executor log lines that say a Python task ran in that executor, and where it
#: fetched the package lance-sync ships from (the driver's file server)
PYTHON_TASK = "Starting Python task execution"
SHIPPED_FROM_LOOPBACK = "Fetching spark://127.0.0.1:"
EXECUTOR_LOG_SECONDS = 60
CLI_TIMEOUT_SECONDS = 900
PEOPLE_CSV = "id,name,score\n1,a,0.5\n2,b,1.5\n3,c,2.5\n"


@dataclass
class Project:
    directory: Path
    bucket: str
    environment: dict[str, str]
    secret: str

    @property
    def manifest(self) -> Path:
        return self.directory / "lance-sync.yaml"

    def location(self, name: str) -> str:
        return f"s3://{self.bucket}/lake/data/{name}.lance"

    def storage_options(self) -> dict[str, str]:
        return {**s3.storage_options(self.environment["AWS_ENDPOINT_URL"]),
                "aws_access_key_id": self.environment["AWS_ACCESS_KEY_ID"], "aws_secret_access_key": self.secret}


@dataclass
class Run:
    result: subprocess.CompletedProcess
    application: str
    executor_log: str


def manifest(bucket: str) -> dict:
    register = [{"backend": "lake", "namespace": "raw"}]
    return {
        "version": 1, "owner": "cluster-test",
        "backends": {"lake": {"type": "dir", "root": f"s3://{bucket}/lake"}},
        "namespaces": [{"backend": "lake", "id": "raw"}],
        "tables": [
            {"name": "customers", "location": f"s3://{bucket}/lake/data/customers.lance", "register": register,
             "source": {"format": "parquet", "path": f"s3://{bucket}/raw/customers/*.parquet"}},
            {"name": "people", "location": f"s3://{bucket}/lake/data/people.lance", "register": register,
             "source": {"format": "csv", "path": "./src/people.csv", "options": {"header": True}},
             "schema": [{"name": "id", "type": "int64"}, {"name": "name", "type": "string"},
                        {"name": "score", "type": "float64"}]},
        ],
    }


def cli_environment(endpoint: str, secret: str) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if k not in DRIVER_SETTINGS and not k.startswith("AWS_")}
    return {**environment, **s3.aws_environment(endpoint), "AWS_ACCESS_KEY_ID": f"cluster-{uuid.uuid4().hex[:8]}",
            "AWS_SECRET_ACCESS_KEY": secret, "PYTHONPATH": str(ROOT)}


def parquet_bytes(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, s3_server: RunningServer) -> Project:
    """A manifest on a `dir` backend rooted in a bucket of its own: one table from Parquet
    files in the bucket, one from a local CSV file."""
    bucket = s3.new_bucket(s3_server.endpoint, f"cluster-{uuid.uuid4().hex[:12]}")
    client = s3.s3_client(s3_server.endpoint)
    client.put_object(Bucket=bucket, Key="raw/customers/part-0.parquet", Body=parquet_bytes(typed_table(30)))
    client.put_object(Bucket=bucket, Key="raw/customers/part-1.parquet",
                      Body=parquet_bytes(typed_table(20, first_id=30)))
    directory = tmp_path_factory.mktemp("cluster-project")
    (directory / "src").mkdir()
    (directory / "src" / "people.csv").write_text(PEOPLE_CSV)
    (directory / "lance-sync.yaml").write_text(yaml.safe_dump(manifest(bucket), sort_keys=False))
    secret = f"cluster-secret-{uuid.uuid4().hex}"
    return Project(directory, bucket, cli_environment(s3_server.endpoint, secret), secret)


def run_on_cluster(project: Project, cluster: SparkCluster, *args: str) -> Run:
    """`lance-sync ARGS --spark <the cluster>` in a process of its own, and the one
    application it ran on the cluster with its executors' logs (once they show a Python task)."""
    before = set(cluster.applications())
    result = subprocess.run([sys.executable, "-m", "lance_sync", *args, "--spark", cluster.master_url],
                            cwd=project.directory, env=project.environment, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=CLI_TIMEOUT_SECONDS)
    started = set(cluster.applications()) - before
    assert len(started) == 1, f"{result.stdout}{result.stderr}\n{describe(cluster)}"
    application = started.pop()

    def executor_log() -> str:
        return "\n".join(path.read_text(errors="replace") for path in cluster.executor_logs()
                         if path.parent.parent.name == application)

    # an executor's output reaches its file through the worker, which copies it as it comes
    wait_until(lambda: PYTHON_TASK in executor_log(), EXECUTOR_LOG_SECONDS,
               f"a Python task in the executor logs of {application}")
    return Run(result, application, executor_log())


def assert_ran_on_executors(run: Run, project: Project) -> None:
    assert PYTHON_TASK in run.executor_log
    assert SHIPPED_FROM_LOOPBACK in run.executor_log and "files/lance_sync.zip" in run.executor_log
    spark_log = (project.directory / ".lance-sync" / "spark.log").read_text(errors="replace")
    for text in (run.result.stdout, run.result.stderr, spark_log, run.executor_log):
        assert project.secret not in text


@pytest.fixture(scope="module")
def applied(project: Project, spark_cluster: SparkCluster) -> Run:
    run = run_on_cluster(project, spark_cluster, "apply", "-f", "lance-sync.yaml", "--auto-approve")
    assert run.result.returncode == 0, run.result.stdout + run.result.stderr
    return run


def test_apply_writes_both_tables_from_the_executors(applied: Run, project: Project):
    assert "Apply complete: " in applied.result.stdout and " 0 failed" in applied.result.stdout
    assert_ran_on_executors(applied, project)
    assert "DataWritingSparkTask: Committed partition" in applied.executor_log  # the Lance writes' tasks
    options = project.storage_options()
    customers = lance.dataset(project.location("customers"), storage_options=options)
    assert customers.schema.remove_metadata() == TYPED_SCHEMA  # Parquet's own types, through Spark
    assert customers.to_table().sort_by("id").equals(typed_table(50))
    people = lance.dataset(project.location("people"), storage_options=options).to_table().sort_by("id")
    assert people.to_pydict() == {"id": [1, 2, 3], "name": ["a", "b", "c"], "score": [0.5, 1.5, 2.5]}


def test_verify_with_spark_inspects_on_the_executors(applied: Run, project: Project, spark_cluster: SparkCluster):
    run = run_on_cluster(project, spark_cluster, "verify", "-f", "lance-sync.yaml", "--engine", "spark")
    assert run.result.returncode == 0, run.result.stdout + run.result.stderr
    assert "engine spark" in run.result.stdout and "0 broken, 2 ok." in run.result.stdout
    assert f"ok  {project.location('customers')}  (version 1, 50 rows)" in run.result.stdout
    assert_ran_on_executors(run, project)


def test_discover_with_spark_walks_on_the_executors(applied: Run, project: Project, spark_cluster: SparkCluster):
    stray = f"s3://{project.bucket}/lake/stray/orders.lance"
    lance.write_dataset(pa.table({"id": [1]}), stray, storage_options=project.storage_options(), mode="overwrite")
    run = run_on_cluster(project, spark_cluster, "discover", "-f", "lance-sync.yaml", "--engine", "spark",
                         f"s3://{project.bucket}/lake")
    assert run.result.returncode == 0, run.result.stdout + run.result.stderr
    assert stray in run.result.stdout
    assert project.location("customers") not in run.result.stdout  # the manifest's tables are known
    assert_ran_on_executors(run, project)
