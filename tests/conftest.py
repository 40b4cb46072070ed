"""Shared fixtures: catalog servers (tests/servers) and one Spark session for the whole run."""

pytest_plugins = ["tests.servers.fixtures", "tests.spark_fixture"]
