"""The catalog: the source of truth of a memory, in a SQLite file (WAL) or a PostgreSQL schema.

It holds every item (namespace, key, value, timestamps, TTL, access data),
its vectors and the model that made them, an index of the values' scalar
fields for filters, lineage edges and strategy versions, and the queue of
changes the Chroma index has still to apply. Chroma is derived from it and
can be rebuilt from it at any time (`langgraph_memory.index.chroma`).

    from langgraph_memory.catalog import Catalog

    with Catalog("/tmp/lgm-demo/catalog.sqlite") as cat:
        with cat.read() as conn:
            print(conn.execute("SELECT count(*) FROM items").fetchone())

The modules: `catalog` (the SQLite file, transactions, settings; `postgres` is the same interface on a
PostgreSQL server),
`items` (items, vectors, namespaces), `fields` (the filter
index), `queue` (Chroma's outbox), `lineage` (edges and versions),
`scope` (what a search reads to plan and run), `vectors` (vector
rows for scoring, the vector cache, the index and re-embedding).

Every SQL statement on the catalog's tables lives in this package, as named
functions that take a connection (`connection.Connection`) and return
plain data; the store calls them and holds no SQL.
"""

from langgraph_memory.catalog.catalog import Catalog, read_meta
from langgraph_memory.catalog.item_rows import StoredItem, item_uid

__all__ = ["Catalog", "StoredItem", "item_uid", "read_meta"]
