"""The catalog's log of vector changes: Chroma's outbox, and the feed of in-memory vector caches.

Every put or delete that changes an item's vectors adds ``(collection,
item_id, n_old)`` to ``index_queue`` in the same transaction as the item
(``n_old``: how many vector records the item may have in Chroma, so extra
ones can be deleted). `ChromaIndex`
applies the queue after the commit, idempotently (it upserts what the
catalog holds now and deletes what it no longer holds), then records how far
it got in ``index_state``. A crash between the commit and Chroma leaves the
rows for the next writer or the next open.

Applied rows stay a while (the last `RETAIN` positions): a process's
`VectorCache` reads the items changed
since it last looked from them, whichever process changed them. A cache
further behind than the log reaches (`pruned_upto()`), or one that saw
an older `vectors_epoch()` (vectors rewritten in place by a
re-embedding), loads its collection again.

    >>> import tempfile, pathlib
    >>> from langgraph_memory.catalog import Catalog
    >>> cat = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> with cat.write() as conn:
    ...     enqueue(conn, "memories", [(1, 1), (2, 1)])
    ...     [(item, n) for _, item, n in pending(conn, "memories")]
    [(1, 1), (2, 1)]
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from langgraph_memory.catalog.connection import POSTGRESQL, Rows, Sql, dialect_of

__all__ = [
    "EPOCH_KEY",
    "RETAIN",
    "enqueue",
    "pending",
    "last_seq",
    "applied",
    "mark_applied",
    "chroma_name",
    "set_chroma_name",
    "model_id",
    "pruned_upto",
    "log_head",
    "pending_items",
    "vectors_epoch",
    "bump_vectors_epoch",
    "changed_since",
    "recently_changed",
]

#: Applied log positions kept for vector caches to catch up from.
RETAIN = 100_000
_EPOCH_KEY = "vectors_epoch"
#: The meta key of the vectors' epoch in `log_head()` (read with other heads by `scope.planning_read()`).
EPOCH_KEY = _EPOCH_KEY
_PRUNED_KEY = "queue_pruned:"
# How far Chroma applied one collection's changes (``{0}``: the collection, a placeholder or a column).
_APPLIED = "coalesce((SELECT s.applied_seq FROM index_state s WHERE s.collection = {0}), 0)"
# The newest position of one collection, read from the end of its run in the (collection, seq) index. As
# max(seq), or with ``collection = x`` (which makes the order by collection void), PostgreSQL may walk the
# whole queue backwards by seq instead, until a row of the collection (measured: 11 ms past 23,000 newer rows
# of another collection); a range of one collection keeps the order only that index gives.
_NEWEST = (
    "coalesce((SELECT q.seq FROM index_queue q WHERE q.collection >= {0} AND q.collection <= {0} "
    "ORDER BY q.collection DESC, q.seq DESC LIMIT 1), 0)"
)
# The rows of one collection (every parameter its name) that Chroma has not applied. Its newest position
# gates the scan: PostgreSQL estimates ``seq > applied`` from the whole queue and walks it by ``seq``, through
# every other collection's newer rows (measured: 25 ms for a collection 100,000 positions behind another one,
# with nothing pending; 0.3 ms gated).
_UNAPPLIED = f"collection = ? AND seq > {_APPLIED.format('?')} AND {_NEWEST.format('?')} > {_APPLIED.format('?')}"
_UNAPPLIED_PARAMS = _UNAPPLIED.count("?")
_PENDING = Sql.both(f"SELECT seq, item_id, n_old FROM index_queue WHERE {_UNAPPLIED} ORDER BY seq")
_PENDING_LIMITED = Sql.both(f"SELECT seq, item_id, n_old FROM index_queue WHERE {_UNAPPLIED} ORDER BY seq LIMIT ?")
_PENDING_ITEMS = Sql.both(f"SELECT DISTINCT item_id FROM index_queue WHERE {_UNAPPLIED}")
_ENQUEUE = Rows.both("INSERT INTO index_queue(collection, item_id, n_old)", "(?, ?, ?)")
# The newest position handed out: SQLite keeps it in a table of its own (it never goes back, even past deleted
# rows); PostgreSQL's sequence is not transactional, so the newest committed row's (applied rows are kept).
_LAST_SEQ = Sql(
    "SELECT seq FROM sqlite_sequence WHERE name = 'index_queue'",
    "SELECT max(seq) FROM index_queue HAVING max(seq) IS NOT NULL",
)
_LOG_HEAD = Sql(
    "SELECT (SELECT seq FROM sqlite_sequence WHERE name = 'index_queue'), (SELECT value FROM meta WHERE key = ?)",
    "SELECT (SELECT max(seq) FROM index_queue), (SELECT value FROM meta WHERE key = %s)",
)
_APPLIED_SEQ = Sql.both("SELECT applied_seq FROM index_state WHERE collection = ?")
_MARK_APPLIED = Sql(
    "UPDATE index_state SET applied_seq = max(applied_seq, ?) WHERE collection = ?",
    "UPDATE index_state SET applied_seq = GREATEST(applied_seq, %s) WHERE collection = %s",
)
_PRUNE = Sql.both("DELETE FROM index_queue WHERE collection = ? AND seq <= ?")
_SET_META = Sql.both("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
_META = Sql.both("SELECT value FROM meta WHERE key = ?")
_BUMP_EPOCH = Sql.both(
    "INSERT INTO meta(key, value) VALUES (?, '1') "
    "ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)"
)
_CHROMA_NAME = Sql.both("SELECT chroma_name FROM index_state WHERE collection = ?")
_SET_CHROMA_NAME = Sql.both(
    "INSERT INTO index_state(collection, chroma_name, applied_seq) VALUES (?, ?, ?) "
    "ON CONFLICT(collection) DO UPDATE SET chroma_name = excluded.chroma_name, applied_seq = excluded.applied_seq"
)
_MODEL = Sql.both("SELECT id FROM models WHERE name = ? AND dims = ?")
_ADD_MODEL = Sql.both("INSERT INTO models(name, dims) VALUES (?, ?) RETURNING id")
_CHANGED_SINCE = Sql.both("SELECT DISTINCT item_id FROM index_queue WHERE collection = ? AND seq > ?")
# Each item once, by its latest change (PostgreSQL refuses DISTINCT ordered by a column not selected).
_RECENTLY_CHANGED = Sql.both(
    "SELECT item_id FROM index_queue WHERE collection = ? AND seq > ? AND seq <= ? "
    "GROUP BY item_id ORDER BY max(seq) DESC LIMIT ?"
)

#: The changes Chroma applied, summed over the collections (a query of one value, for other statements to embed).
APPLIED_TOTAL = "SELECT coalesce(sum(applied_seq), 0) FROM index_state"
#: The collections with changes Chroma has not applied (a query of one column, for other statements to embed).
UNAPPLIED_COLLECTIONS = (
    "SELECT c.collection FROM collection_counts c "
    f"WHERE {_NEWEST.format('c.collection')} > {_APPLIED.format('c.collection')}"
)


def enqueue(conn: sqlite3.Connection, collection: str, entries: Sequence[tuple[int, int]]) -> None:
    """Record that the items ``(item_id, n_old)`` of ``collection`` changed their vectors."""
    if entries:
        _ENQUEUE.insert(conn, [(collection, item_id, n_old) for item_id, n_old in entries])


def pending(conn: sqlite3.Connection, collection: str, limit: int | None = None) -> list[tuple[int, int, int]]:
    """Queued changes of ``collection`` not applied yet: ``(seq, item_id, n_old)``, oldest first."""
    # One statement (on a server, one round trip): the position applied is read with the rows.
    sql = _PENDING.of(conn)
    params: tuple[object, ...] = (collection,) * _UNAPPLIED_PARAMS
    if limit is not None:
        sql = _PENDING_LIMITED.of(conn)
        params = (*params, limit)
    return [(int(s), int(i), int(n)) for s, i, n in conn.execute(sql, params)]


def last_seq(conn: sqlite3.Connection) -> int:
    """The newest queue position handed out (0 when nothing was ever queued)."""
    row = conn.execute(_LAST_SEQ.of(conn)).fetchone()
    return int(row[0]) if row else 0


def applied(conn: sqlite3.Connection, collection: str) -> int:
    """How far Chroma applied the queue of ``collection``."""
    row = conn.execute(_APPLIED_SEQ.of(conn), (collection,)).fetchone()
    return int(row[0]) if row else 0


def mark_applied(conn: sqlite3.Connection, collection: str, seq: int) -> None:
    """Chroma applied every change of ``collection`` up to ``seq`` (in a write transaction)."""
    if dialect_of(conn) == POSTGRESQL:
        # Bookkeeping of derived state: lost in a server crash, the changes are applied again (upserts).
        # Not waiting for the WAL flush keeps the catalog's connection free for the writes it serves.
        conn.defer("SET LOCAL synchronous_commit = off")  # type: ignore[attr-defined]
    conn.execute(_MARK_APPLIED.of(conn), (seq, collection))
    _prune(conn, collection, seq)


def _prune(conn: sqlite3.Connection, collection: str, applied_seq: int) -> None:
    """Drop applied rows of ``collection`` older than the last `RETAIN` positions."""
    upto = min(applied_seq, last_seq(conn) - RETAIN)
    if upto <= pruned_upto(conn, collection):
        return
    conn.execute(_PRUNE.of(conn), (collection, upto))
    conn.execute(_SET_META.of(conn), (_PRUNED_KEY + collection, str(upto)))


def log_head(conn: sqlite3.Connection) -> tuple[int, str | None]:
    """``(last_seq, vectors_epoch)`` in one statement: what a vector cache compares with what it saw."""
    seq, epoch = conn.execute(_LOG_HEAD.of(conn), (_EPOCH_KEY,)).fetchone()
    return int(seq or 0), None if epoch is None else str(epoch)


def pending_items(conn: sqlite3.Connection, collection: str) -> list[int]:
    """The items of ``collection`` with changes Chroma has not applied yet (one statement)."""
    return [int(r[0]) for r in conn.execute(_PENDING_ITEMS.of(conn), (collection,) * _UNAPPLIED_PARAMS)]


def pruned_upto(conn: sqlite3.Connection, collection: str) -> int:
    """The log of ``collection`` holds every change after this position."""
    row = conn.execute(_META.of(conn), (_PRUNED_KEY + collection,)).fetchone()
    return int(row[0]) if row else 0


def vectors_epoch(conn: sqlite3.Connection) -> str | None:
    """Changes whenever vectors are rewritten without the log (a re-embedding)."""
    row = conn.execute(_META.of(conn), (_EPOCH_KEY,)).fetchone()
    return None if row is None else str(row[0])


def bump_vectors_epoch(conn: sqlite3.Connection) -> None:
    """Tell every vector cache to reload (in the write transaction that rewrote vectors)."""
    conn.execute(_BUMP_EPOCH.of(conn), (_EPOCH_KEY,))


def chroma_name(conn: sqlite3.Connection, collection: str) -> str | None:
    """The Chroma collection that indexes ``collection`` now, if there is one."""
    row = conn.execute(_CHROMA_NAME.of(conn), (collection,)).fetchone()
    return None if row is None else str(row[0])


def set_chroma_name(conn: sqlite3.Connection, collection: str, name: str, applied_seq: int) -> None:
    """Switch ``collection`` to the Chroma collection ``name``, which holds the queue up to ``applied_seq``."""
    conn.execute(_SET_CHROMA_NAME.of(conn), (collection, name, applied_seq))
    _prune(conn, collection, applied_seq)


def model_id(conn: sqlite3.Connection, name: str, dims: int) -> int:
    """The id of the embedding model ``name`` at ``dims`` (registered on first use, in a write transaction)."""
    row = conn.execute(_MODEL.of(conn), (name, dims)).fetchone()
    if row is None:
        row = conn.execute(_ADD_MODEL.of(conn), (name, dims)).fetchone()
    return int(row[0])


def changed_since(conn: sqlite3.Connection, collection: str, after: int) -> list[int]:
    """Ids of the items of ``collection`` whose vectors changed after log position ``after`` (each once)."""
    rows = conn.execute(_CHANGED_SINCE.of(conn), (collection, after))
    return [r[0] for r in rows]


def recently_changed(conn: sqlite3.Connection, collection: str, after: int, upto: int, limit: int) -> list[int]:
    """Ids of the items of ``collection`` changed in log positions ``(after, upto]``, newest first, at most ``limit``."""
    rows = conn.execute(_RECENTLY_CHANGED.of(conn), (collection, after, upto, limit)).fetchall()
    return [int(r[0]) for r in rows]
