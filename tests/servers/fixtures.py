"""Session-scoped fixtures: one of each catalog server per test session.

Each server module under tests/servers/ exposes `start(workdir: Path) -> RunningServer`.
Set the environment variable named below to use an external server instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import pytest

from tests.servers.base import STARTED, RunningServer, external_endpoint, log_tail
from tests.servers.spark_cluster import SparkCluster
from tests.servers.spark_cluster import start as start_spark_cluster

#: fixture name -> (server module under tests/servers, environment variable for an external server)
SERVERS = {
    "hms_server": ("hms", "LANCE_SYNC_TEST_HMS_URI"),
    "hms_server_without_txn": ("hms", "LANCE_SYNC_TEST_HMS_WITHOUT_TXN_URI"),
    "hive3_server": ("hive3", "LANCE_SYNC_TEST_HIVE3_URI"),
    "iceberg_server": ("iceberg_rest", "LANCE_SYNC_TEST_ICEBERG_ENDPOINT"),
    "iceberg_s3_server": ("iceberg_rest", "LANCE_SYNC_TEST_ICEBERG_ENDPOINT"),
    "glue_server": ("glue", "LANCE_SYNC_TEST_GLUE_ENDPOINT"),
    "unity_server": ("unity", "LANCE_SYNC_TEST_UNITY_ENDPOINT"),
    "s3_server": ("s3", "LANCE_SYNC_TEST_S3_ENDPOINT"),
}


def _serve(fixture_name: str, tmp_path_factory: pytest.TempPathFactory,
           **options: str | bool | None) -> Iterator[RunningServer]:
    module_name, variable = SERVERS[fixture_name]
    endpoint = external_endpoint(variable)
    if endpoint:
        yield RunningServer(name=module_name, endpoint=endpoint, startup_seconds=0.0, external=True)
        return
    module = importlib.import_module(f"tests.servers.{module_name}")
    server = module.start(tmp_path_factory.mktemp(module_name), **options)
    STARTED.append(server)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def hms_server(tmp_path_factory: pytest.TempPathFactory, s3_server: RunningServer) -> Iterator[RunningServer]:
    """Real Hive Metastore 2.3 from the pyspark jars; its s3:// locations are on `s3_server`."""
    yield from _serve("hms_server", tmp_path_factory, s3_endpoint=s3_server.endpoint)


@pytest.fixture(scope="session")
def hms_server_without_txn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A second real Hive Metastore 2.3 whose schema DataNucleus' autoCreateAll alone made, as in
    many quick set-ups: no transaction tables, so every call of its lock API fails. Started only
    by the tests that take it."""
    yield from _serve("hms_server_without_txn", tmp_path_factory, transaction_tables=False)


@pytest.fixture(scope="session")
def hive3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """The project's Hive 3.x catalog-level Thrift server."""
    yield from _serve("hive3_server", tmp_path_factory)


@pytest.fixture(scope="session")
def iceberg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """Iceberg REST catalog served by upstream Iceberg's RESTCatalogAdapter."""
    yield from _serve("iceberg_server", tmp_path_factory)


@pytest.fixture(scope="session")
def iceberg_s3_server(tmp_path_factory: pytest.TempPathFactory, s3_server: RunningServer) -> Iterator[RunningServer]:
    """The same server on upstream's JdbcCatalog (SQLite), writing the metadata files of s3://
    tables to `s3_server` as a deployment with S3FileIO does; skipped without the SQLite JDBC jar."""
    from tests.servers.iceberg_rest import sqlite_jdbc_available

    if not external_endpoint(SERVERS["iceberg_s3_server"][1]) and not sqlite_jdbc_available():
        pytest.skip("the JDBC catalog needs libxerial-sqlite-jdbc-java (scripts/install.sh)")
    yield from _serve("iceberg_s3_server", tmp_path_factory, catalog="jdbc", s3_endpoint=s3_server.endpoint)


@pytest.fixture(scope="session")
def glue_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """moto's Glue server with the catalog hierarchy and paging added."""
    yield from _serve("glue_server", tmp_path_factory)


@pytest.fixture(scope="session")
def unity_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """The project's Unity Catalog OSS API server."""
    yield from _serve("unity_server", tmp_path_factory)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """moto's S3 server (tests/servers/s3.py); each test makes its own buckets."""
    yield from _serve("s3_server", tmp_path_factory)


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    """A Spark standalone master and two workers on 127.0.0.1 (tests/servers/spark_cluster.py)."""
    cluster = start_spark_cluster(tmp_path_factory.mktemp("spark-cluster"), workers=2)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Attach the log tail of every server a failing test used to its report."""
    report = yield
    if report.failed:
        for name in SERVERS:
            server = item.funcargs.get(name) if hasattr(item, "funcargs") else None
            if isinstance(server, RunningServer) and server.log_path:
                report.sections.append((f"{server.name} log ({server.log_path})", log_tail(server.log_path)))
    return report


def pytest_terminal_summary(terminalreporter) -> None:
    if STARTED:
        terminalreporter.section("catalog server start-up")
        for server in STARTED:
            terminalreporter.write_line(f"{server.name:<14} {server.startup_seconds:6.2f}s  {server.endpoint}")
