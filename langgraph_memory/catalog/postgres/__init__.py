"""The catalog on PostgreSQL: the same tables and named queries as the SQLite catalog, for a shared memory.

`PgCatalog` (in `langgraph_memory.catalog.postgres.catalog`) needs the
``postgres`` extra (psycopg 3). The catalog's modules keep each backend's
statements themselves and pick one by the connection's backend
(`langgraph_memory.catalog.connection`), without importing the driver.
"""
