"""What the catalog holds, counted in SQL: items, vectors, bytes and dates per collection.

The raw numbers behind [`langgraph_memory.memory.Memory.stats()`][langgraph_memory.Memory.stats] (which
adds the archive and the checkpointer). Each function is one or two
aggregate queries over a read connection.

    >>> import tempfile, pathlib
    >>> from langgraph_memory.catalog import Catalog
    >>> cat = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> with cat.read() as conn:
    ...     collection_totals(conn), distinct_strings(conn, "session_id")
    ({}, 0)
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from langgraph_memory.catalog.connection import Sql, both
from langgraph_memory.catalog.fields import KIND_STR

__all__ = ["CollectionTotals", "collection_totals", "distinct_strings", "namespace_count", "server_bytes"]

# A value's size in bytes: SQLite counts a text's bytes once it is read as a blob.
_TOTALS = Sql(
    "SELECT n.collection, count(*), sum(i.n_vectors > 0), sum(i.n_vectors), sum(length(CAST(i.value AS BLOB))), "
    "min(i.created_at), max(i.created_at) FROM items i JOIN namespaces n ON n.id = i.ns_id GROUP BY n.collection",
    "SELECT n.collection, count(*), count(*) FILTER (WHERE i.n_vectors > 0), sum(i.n_vectors), "
    "sum(octet_length(i.value)), min(i.created_at), max(i.created_at) "
    "FROM items i JOIN namespaces n ON n.id = i.ns_id GROUP BY n.collection",
)


@dataclass(frozen=True)
class CollectionTotals:
    """One collection's items: how many, how many have vectors, their bytes, oldest and newest ``created_at``."""

    items: int
    with_vectors: int
    vectors: int
    value_bytes: int
    vector_bytes: int
    oldest: float | None
    newest: float | None


def collection_totals(conn: sqlite3.Connection) -> dict[str, CollectionTotals]:
    """`CollectionTotals` of every collection that holds items, by collection name."""
    vector_bytes = {
        coll: int(n or 0)
        for coll, n in conn.execute(
            both(
                conn,
                "SELECT n.collection, sum(length(v.vec)) FROM vectors v JOIN items i ON i.id = v.item_id "
                "JOIN namespaces n ON n.id = i.ns_id GROUP BY n.collection",
            )
        )
    }
    out: dict[str, CollectionTotals] = {}
    for coll, n, with_vec, vecs, vbytes, oldest, newest in conn.execute(_TOTALS.of(conn)):
        out[coll] = CollectionTotals(
            items=int(n),
            with_vectors=int(with_vec or 0),
            vectors=int(vecs or 0),
            value_bytes=int(vbytes or 0),
            vector_bytes=vector_bytes.get(coll, 0),
            oldest=oldest,
            newest=newest,
        )
    return out


def distinct_strings(conn: sqlite3.Connection, path: str) -> int:
    """How many different string values the top-level field ``path`` takes across all items (by the filter index)."""
    row = conn.execute(
        both(conn, "SELECT count(DISTINCT val) FROM fields WHERE path = ? AND kind = ?"), (path, KIND_STR)
    ).fetchone()
    return int(row[0])


def namespace_count(conn: sqlite3.Connection) -> int:
    """How many namespaces hold items now."""
    return int(conn.execute(both(conn, "SELECT count(*) FROM namespaces WHERE n_items > 0")).fetchone()[0])


def server_bytes(conn: sqlite3.Connection) -> int:
    """Bytes the catalog's tables (with their indexes and TOAST) take on a PostgreSQL server.

    Only for the PostgreSQL catalog: the SQLite catalog's size is its file's.
    """
    row = conn.execute(
        both(
            conn,
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'",
        )
    ).fetchone()
    return int(row[0]) if row else 0
