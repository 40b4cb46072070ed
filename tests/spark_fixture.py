"""One SparkSession for the whole test run, created through lance_sync.data.spark_session.get_spark.

local[2] unless LANCE_SYNC_SPARK names another master (a cluster or an sc:// Connect server
that can import lance_sync). Tests that need it are marked @pytest.mark.spark.
"""

from __future__ import annotations

import pytest

from lance_sync.data.spark_session import (
    SparkSettings,
    SparkUnavailableError,
    get_spark,
    resolve_spark_settings,
)

TEST_SPARK_BLOCK = {"master": "local[2]", "conf": {"spark.sql.shuffle.partitions": "4"}}


@pytest.fixture(scope="session")
def spark_settings(tmp_path_factory: pytest.TempPathFactory) -> SparkSettings:
    log_file = tmp_path_factory.mktemp("spark") / "spark.log"
    return resolve_spark_settings(None, TEST_SPARK_BLOCK, log_file=log_file)


@pytest.fixture(scope="session")
def spark(spark_settings: SparkSettings):
    try:
        return get_spark(spark_settings)
    except SparkUnavailableError as e:
        pytest.skip(f"Spark is not available: {e}")
