"""A Unity Catalog OSS REST server for tests: catalogs, schemas and tables in SQLite.

Faithful to the UC OSS server (0.7.0-SNAPSHOT, the code behind
unitycatalog-client 0.7.0) for what lance-sync uses; see
tests/servers/docs/unity.md for what it does and does not do.
`tests.servers.unity.start` runs it as a subprocess.
"""
