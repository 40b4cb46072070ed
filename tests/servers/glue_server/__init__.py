"""A Glue Data Catalog test server: moto's Glue backend plus what moto lacks.

moto stores databases and tables; this package adds the multi-level catalog
hierarchy (CreateCatalog, GetCatalog, GetCatalogs, UpdateCatalog,
DeleteCatalog), CatalogId scoping, paging with Glue's page caps, lower-case
name folding, Glue's input constraints (ValidationException) and test-only
controls (request counts, injected faults, seeded child catalogs). On the same
port it answers Lake Formation's permission calls (lakeformation.py).

Run it with `python -m tests.servers.glue_server --help`; tests start it
through `tests/servers/glue.py`. See `tests/servers/docs/glue.md`.
"""

#: Path prefix of the test-only control API (see app.py); never a Glue call.
CONTROL_PREFIX = "/_lance_sync"
