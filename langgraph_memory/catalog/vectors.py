"""Vector rows: reads for exact scoring, the in-memory vector cache and the Chroma index, and re-embedding.

Each item's vectors sit in ``vectors`` as float32 bytes with the index path
whose text they embed and the model that made them (see
`langgraph_memory.catalog._schema`). Writes that come with a put or a
delete are in `langgraph_memory.catalog.items`; here are the reads the
store's search, cache and index need, and the in-place rewrite a
re-embedding does. Results are plain tuples of ints and bytes, so a second
catalog backend returns the same.

    >>> import tempfile, pathlib
    >>> from langgraph_memory.catalog import Catalog
    >>> cat = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> with cat.read() as conn:
    ...     has_vectors(conn), vector_counts(conn)
    (False, {})
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from langgraph_memory.catalog.connection import Sql, both
from langgraph_memory.catalog.item_rows import VECTOR_RUN_BITS, chunked

__all__ = [
    "has_vectors",
    "vector_counts",
    "count_vectors",
    "vectors_of",
    "records_of",
    "vectors_with_namespaces",
    "collection_vectors",
    "vector_at_or_after",
    "record_keys",
    "vectors_after",
    "forget_model",
    "count_not_made_by",
    "texts_not_made_by",
    "set_vectors",
    "move_into_runs",
]

_HAS_VECTORS = Sql.both("SELECT count(*) FROM (SELECT 1 FROM vectors LIMIT 1) AS one")
_COUNTS_BY_COLLECTION = Sql.both(
    "SELECT n.collection, count(*) FROM vectors v JOIN items i ON i.id = v.item_id "
    "JOIN namespaces n ON n.id = i.ns_id GROUP BY n.collection"
)
_COUNT_IN_COLLECTION = (
    "SELECT count(*) FROM vectors v JOIN items i ON i.id = v.item_id JOIN namespaces n ON n.id = i.ns_id "
    "WHERE n.collection = ?"
)
# A status row hides the item it was set on (same uid and created_at), as in searches.
_SHOWN_ONLY = " AND NOT EXISTS (SELECT 1 FROM item_status s WHERE s.uid = i.uid AND s.item_created_at = i.created_at)"
_COUNT_ALL = Sql.both(_COUNT_IN_COLLECTION)
_COUNT_SHOWN = Sql.both(_COUNT_IN_COLLECTION + _SHOWN_ONLY)
_IN_COLLECTION_WITH_NS = Sql.both(
    "SELECT v.item_id, i.ns_id, v.vec FROM vectors v JOIN items i ON i.id = v.item_id "
    "JOIN namespaces n ON n.id = i.ns_id WHERE n.collection = ?"
)
# Items the outer loop, walked from the drawn id by its primary key: SQLite's CROSS JOIN fixes that order
# (PostgreSQL's planner picks it, and its CROSS JOIN takes no ON).
_AT_OR_AFTER = Sql(
    "SELECT v.item_id, v.idx, v.vec FROM items i CROSS JOIN namespaces n ON n.id = i.ns_id "
    "CROSS JOIN vectors v ON v.item_id = i.id WHERE i.id >= ? AND n.collection = ? ORDER BY i.id LIMIT 1",
    "SELECT v.item_id, v.idx, v.vec FROM items i JOIN namespaces n ON n.id = i.ns_id "
    "JOIN vectors v ON v.item_id = i.id WHERE i.id >= %s AND n.collection = %s ORDER BY i.id LIMIT 1",
)
_RECORD_KEYS = Sql.both(
    "SELECT v.item_id, v.idx FROM vectors v JOIN items i ON i.id = v.item_id "
    "JOIN namespaces n ON n.id = i.ns_id WHERE n.collection = ?"
)
_AFTER = Sql.both(
    "SELECT v.id, v.item_id, v.idx, v.vec FROM vectors v JOIN items i ON i.id = v.item_id "
    "JOIN namespaces n ON n.id = i.ns_id WHERE n.collection = ? AND v.id > ? ORDER BY v.id LIMIT ?"
)
_FORGET_MODEL = Sql.both("UPDATE vectors SET model_id = -1 WHERE model_id = ?")
_COUNT_NOT_MADE_BY = Sql.both("SELECT count(*) FROM vectors WHERE model_id != ?")
_TEXTS_NOT_MADE_BY = Sql.both(
    "SELECT v.id, v.path, i.value FROM vectors v JOIN items i ON i.id = v.item_id "
    "WHERE v.model_id != ? AND v.id > ? ORDER BY v.id LIMIT ?"
)
_SET_VECTOR = Sql.both("UPDATE vectors SET vec = ?, model_id = ? WHERE id = ?")


def has_vectors(conn: sqlite3.Connection) -> bool:
    """Whether the catalog holds any vector."""
    (n,) = conn.execute(_HAS_VECTORS.of(conn)).fetchone()
    return bool(n)


def vector_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """``{collection: vectors}`` counted from the vector rows (the truth the index is checked against)."""
    return {name: int(c) for name, c in conn.execute(_COUNTS_BY_COLLECTION.of(conn)).fetchall()}


def count_vectors(conn: sqlite3.Connection, collection: str, *, shown_only: bool = False) -> int:
    """Vectors of ``collection`` (``shown_only``: leaving out those of retired and superseded items)."""
    (n,) = conn.execute((_COUNT_SHOWN if shown_only else _COUNT_ALL).of(conn), (collection,)).fetchone()
    return int(n)


def vectors_of(conn: sqlite3.Connection, item_ids: Sequence[int] | np.ndarray) -> list[tuple[int, bytes]]:
    """``(item id, float32 bytes)`` of every vector of these items (ids from the catalog, at most a few hundred)."""
    if len(item_ids) == 0:  # "IN ()" is an empty set on SQLite and a syntax error on PostgreSQL
        return []
    ids = ",".join(str(int(i)) for i in item_ids)
    return conn.execute(both(conn, f"SELECT item_id, vec FROM vectors WHERE item_id IN ({ids})")).fetchall()


def records_of(conn: sqlite3.Connection, item_ids: Sequence[int]) -> Iterator[tuple[int, int, bytes]]:
    """``(item id, vector index, float32 bytes)`` of every vector of these items."""
    for chunk in chunked(item_ids):
        marks = ",".join("?" * len(chunk))
        yield from conn.execute(
            both(conn, f"SELECT item_id, idx, vec FROM vectors WHERE item_id IN ({marks})"), tuple(chunk)
        )


def vectors_with_namespaces(
    conn: sqlite3.Connection, item_ids: Sequence[int]
) -> Iterator[list[tuple[int, int, bytes]]]:
    """``(item id, namespace id, float32 bytes)`` of every vector of these items, a batch per chunk of ids."""
    for chunk in chunked(item_ids):
        marks = ",".join("?" * len(chunk))
        yield conn.execute(
            both(
                conn,
                f"SELECT v.item_id, i.ns_id, v.vec FROM vectors v JOIN items i ON i.id = v.item_id WHERE v.item_id IN ({marks})",
            ),
            tuple(chunk),
        ).fetchall()


def collection_vectors(
    conn: sqlite3.Connection, collection: str, *, batch: int = 5000
) -> Iterator[list[tuple[int, int, bytes]]]:
    """``(item id, namespace id, float32 bytes)`` of every vector of ``collection``, in batches."""
    cur = conn.execute(_IN_COLLECTION_WITH_NS.of(conn), (collection,))
    while rows := cur.fetchmany(batch):
        yield rows


def vector_at_or_after(conn: sqlite3.Connection, item_id: int, collection: str) -> tuple[int, int, bytes] | None:
    """``(item id, vector index, float32 bytes)`` of a vector of the first item of ``collection`` from ``item_id`` on.

    Drawn by item id: vector row ids come in one run per namespace
    (`items.vector_run()`), far from uniform, where item ids are not.
    """
    return conn.execute(_AT_OR_AFTER.of(conn), (item_id, collection)).fetchone()


def record_keys(conn: sqlite3.Connection, collection: str) -> Iterator[tuple[int, int]]:
    """``(item id, vector index)`` of every vector of ``collection``."""
    yield from conn.execute(_RECORD_KEYS.of(conn), (collection,))


def vectors_after(
    conn: sqlite3.Connection, collection: str, after: int, limit: int
) -> list[tuple[int, int, int, bytes]]:
    """``(vector row id, item id, vector index, float32 bytes)`` of ``collection`` past row ``after``, in order."""
    return conn.execute(_AFTER.of(conn), (collection, after, limit)).fetchall()


def forget_model(conn: sqlite3.Connection, model_id: int) -> None:
    """Mark every vector made by ``model_id`` as made by no known model (so it is made again)."""
    conn.execute(_FORGET_MODEL.of(conn), (model_id,))


def count_not_made_by(conn: sqlite3.Connection, model_id: int) -> int:
    """Vectors made by another model than ``model_id``."""
    (n,) = conn.execute(_COUNT_NOT_MADE_BY.of(conn), (model_id,)).fetchone()
    return int(n)


def texts_not_made_by(conn: sqlite3.Connection, model_id: int, after: int, limit: int) -> list[tuple[int, str, str]]:
    """``(vector row id, record path, item value JSON)`` of vectors made by another model, past row ``after``."""
    return conn.execute(_TEXTS_NOT_MADE_BY.of(conn), (model_id, after, limit)).fetchall()


def set_vectors(conn: sqlite3.Connection, model_id: int, rows: Sequence[tuple[int, Any]]) -> None:
    """Replace vectors in place: ``(vector row id, vector)`` pairs, now made by ``model_id``."""
    conn.executemany(
        _SET_VECTOR.of(conn),
        [(np.asarray(vec).astype(np.float32).tobytes(), model_id, vector_id) for vector_id, vec in rows],
    )


def move_into_runs(conn: sqlite3.Connection) -> int:
    """Give every vector the row id its namespace's run would (`items.vector_run()`), in namespace order.

    For a SQLite file whose vectors were written before the runs (or copied
    from a catalog that had none): the table is written again, sorted, so
    each namespace's vectors are neighbours in the file. Returns how many
    rows moved. Takes about as long as copying the vectors once. SQLite's only (a migration of its file).
    """
    conn.execute(
        "CREATE TEMP TABLE vectors_in_runs AS SELECT "
        f"(i.ns_id << {VECTOR_RUN_BITS}) + row_number() OVER (PARTITION BY i.ns_id ORDER BY v.id) - 1 AS id, "
        "v.item_id, v.idx, v.path, v.model_id, v.vec FROM vectors v JOIN items i ON i.id = v.item_id"
    )
    try:
        conn.execute("DELETE FROM vectors")
        cur = conn.execute(
            "INSERT INTO vectors(id, item_id, idx, path, model_id, vec) "
            "SELECT id, item_id, idx, path, model_id, vec FROM temp.vectors_in_runs ORDER BY id"
        )
        return int(cur.rowcount)
    finally:
        conn.execute("DROP TABLE temp.vectors_in_runs")
