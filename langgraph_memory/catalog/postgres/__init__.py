"""The catalog on PostgreSQL: the same tables and named queries as the SQLite catalog, for a shared memory.

`PgCatalog` (in `langgraph_memory.catalog.postgres.catalog`) needs the
``postgres`` extra (psycopg 3); this package's ``dialect`` module does not,
so the catalog's modules can ask which dialect a connection speaks without
importing the driver.
"""
