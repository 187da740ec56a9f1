"""Pages of the catalog for people looking at it: items by collection, lessons open first, sessions, strategies.

Every function reads one page (``limit`` rows from ``offset``) through the
catalog's indexes, so a page costs about the same at 100 items as at
100,000; the counts that go with a page come from the kept counts
(``collection_counts``) or an index, never from reading every value.
The browser UI (`langgraph_memory.ui`) reads the catalog only through
this module, the store and the lineage.

    >>> import tempfile, pathlib
    >>> from langgraph_memory.catalog import Catalog
    >>> cat = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> with cat.read() as conn:
    ...     items_page(conn, "lessons_learned", limit=10), strategy_names(conn)
    ([], [])
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from langgraph_memory.catalog.fields import KIND_BOOL, KIND_STR
from langgraph_memory.catalog.items import (
    ITEM_COLUMNS_BY_ID,
    StoredItem,
    get_by_ids,
    item_from_row,
    rows_in,
)
from langgraph_memory.catalog.postgres.dialect import POSTGRESQL, dialect_of
from langgraph_memory.catalog.sessions import _SESSION_COLS, Session, _session

__all__ = [
    "StrategyName",
    "items_page",
    "items_per_day",
    "lessons_page",
    "open_lessons",
    "sessions_page",
    "session_count",
    "strategy_names",
    "strategy_count",
    "items_with_field",
    "index_backlog",
    "vector_counts",
    "change_token",
]


@dataclass(frozen=True)
class StrategyName:
    """A named strategy: how many versions it has and when the first and last were made."""

    name: str
    versions: int
    latest_version: int
    first_at: float
    last_at: float


# ``+i.ns_id`` keeps SQLite from the (ns_id, updated_at) index: walking the primary key backwards and
# stopping at the page's last row reads ~(offset + limit) / share rows, where the index would sort the
# whole collection first (40 ms at 30,000 lessons).
_IN_COLLECTION = "+i.ns_id IN (SELECT id FROM namespaces WHERE collection = ?)"


def _by_ids(conn: sqlite3.Connection, sql: str, params: Sequence[object]) -> list[StoredItem]:
    """The items whose ids ``sql`` selects, in its order. Paging selects ids only: rows skipped by
    ``OFFSET`` are still computed, and an item's value is most of its row."""
    ids = [row[0] for row in conn.execute(sql, tuple(params))]
    found = get_by_ids(conn, ids)
    return [found[i] for i in ids if i in found]


def items_page(conn: sqlite3.Connection, collection: str | None, *, limit: int, offset: int = 0) -> list[StoredItem]:
    """Items of ``collection`` (or all), newest first (by insertion: the primary key, no sort)."""
    if collection is None:
        return _by_ids(conn, "SELECT i.id FROM items i ORDER BY i.id DESC LIMIT ? OFFSET ?", (limit, offset))
    return _by_ids(
        conn,
        f"SELECT i.id FROM items i WHERE {_IN_COLLECTION} ORDER BY i.id DESC LIMIT ? OFFSET ?",
        (collection, limit, offset),
    )


def items_per_day(conn: sqlite3.Connection) -> list[tuple[int, int]]:
    """``(day, items)`` of the items now live by the UTC day they were created (day = epoch seconds // 86400)."""
    rows = conn.execute("SELECT CAST(created_at / 86400 AS INTEGER) AS d, count(*) FROM items GROUP BY d ORDER BY d")
    return [(int(d), int(n)) for d, n in rows]


_RESOLVED = (
    "EXISTS (SELECT 1 FROM fields f WHERE f.path = 'resolved' AND f.kind = ? AND f.val = 1 AND f.item_id = i.id)"
)


def open_lessons(conn: sqlite3.Connection, collection: str = "lessons_learned") -> tuple[int, int]:
    """``(open, resolved)`` lessons of ``collection`` (a lesson without ``resolved`` is open)."""
    total = conn.execute(
        "SELECT coalesce(sum(n_items), 0) FROM collection_counts WHERE collection = ?", (collection,)
    ).fetchone()[0]
    resolved = conn.execute(
        "SELECT count(*) FROM fields f JOIN items i ON i.id = f.item_id WHERE f.path = 'resolved' AND f.kind = ? "
        "AND f.val = 1 AND i.ns_id IN (SELECT id FROM namespaces WHERE collection = ?)",
        (KIND_BOOL, collection),
    ).fetchone()[0]
    return int(total) - int(resolved), int(resolved)


def lessons_page(
    conn: sqlite3.Connection,
    *,
    limit: int,
    offset: int = 0,
    collection: str = "lessons_learned",
    counts: tuple[int, int] | None = None,
) -> list[StoredItem]:
    """Lessons, unresolved first, each group newest first (``counts``: `open_lessons`, if known)."""
    n_open, _ = counts if counts is not None else open_lessons(conn, collection)
    out: list[StoredItem] = []
    if offset < n_open:
        out = _by_ids(
            conn,
            f"SELECT i.id FROM items i WHERE {_IN_COLLECTION} AND NOT {_RESOLVED} ORDER BY i.id DESC LIMIT ? OFFSET ?",
            (collection, KIND_BOOL, limit, offset),
        )
    if len(out) < limit:
        out.extend(
            _by_ids(
                conn,
                "SELECT f.item_id FROM fields f JOIN items i ON i.id = f.item_id WHERE f.path = 'resolved' AND f.kind = ? "
                "AND f.val = 1 AND i.ns_id IN (SELECT id FROM namespaces WHERE collection = ?) "
                "ORDER BY f.item_id DESC LIMIT ? OFFSET ?",
                (KIND_BOOL, collection, limit - len(out), max(0, offset - n_open)),
            )
        )
    return out


def _text_val(conn: sqlite3.Connection) -> str:
    # PostgreSQL keeps the filter index's values as JSONB; a string leaf reads back as its text.
    return "val #>> ARRAY[]::text[]" if dialect_of(conn) == POSTGRESQL else "val"


def items_with_field(conn: sqlite3.Connection, path: str, values: Sequence[str]) -> list[StoredItem]:
    """Items whose top-level string field ``path`` is one of ``values`` (by the filter index), oldest first."""
    ids = (
        [
            row[0]
            for row in rows_in(
                conn,
                f"SELECT item_id FROM fields WHERE path = '{path}' AND kind = {KIND_STR} AND {_text_val(conn)} IN ({{marks}})",
                values,
            )
        ]
        if path.isidentifier()
        else []
    )
    items = [
        item_from_row(r)
        for r in rows_in(conn, f"SELECT {ITEM_COLUMNS_BY_ID} FROM items i WHERE i.id IN ({{marks}})", ids)
    ]
    return sorted(items, key=lambda it: it.id or 0)


def strategy_count(conn: sqlite3.Connection) -> int:
    """How many named strategies have versions."""
    return int(conn.execute("SELECT count(DISTINCT name) FROM versions").fetchone()[0])


def strategy_names(conn: sqlite3.Connection, *, limit: int = 50, offset: int = 0) -> list[StrategyName]:
    """Named strategies, the most recently versioned first."""
    rows = conn.execute(
        "SELECT name, count(*), max(version), min(created_at), max(created_at) FROM versions GROUP BY name "
        "ORDER BY max(created_at) DESC, name LIMIT ? OFFSET ?",
        (limit, offset),
    )
    return [StrategyName(r[0], int(r[1]), int(r[2]), float(r[3]), float(r[4])) for r in rows]


def session_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])


def sessions_page(conn: sqlite3.Connection, *, limit: int, offset: int = 0) -> list[Session]:
    """Sessions of session memory, the most recently active first."""
    rows = conn.execute(
        f"SELECT {_SESSION_COLS} FROM sessions ORDER BY last_turn_at DESC, id LIMIT ? OFFSET ?", (limit, offset)
    )
    return [_session(r) for r in rows]


def index_backlog(conn: sqlite3.Connection) -> dict[str, int]:
    """Changes each collection's Chroma index has not applied yet, by collection name (one index range each)."""
    out: dict[str, int] = {}
    for collection, applied in conn.execute("SELECT collection, applied_seq FROM index_state").fetchall():
        n = conn.execute(
            "SELECT count(*) FROM index_queue WHERE collection = ? AND seq > ?", (collection, applied)
        ).fetchone()[0]
        if n:
            out[collection] = int(n)
    return out


def vector_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Vectors the catalog holds per collection (the kept counts)."""
    return {c: int(n) for c, n in conn.execute("SELECT collection, n_vectors FROM collection_counts")}


def change_token(conn: sqlite3.Connection) -> tuple[object, ...]:
    """A value that changes when items are added, removed, re-indexed or change status (a few rows read).

    An in-place update of a value that keeps its size does not change it: callers that cache
    aggregates over values also expire them by age.
    """
    if dialect_of(conn) == POSTGRESQL:  # the newest ids, committed (sequences are not transactional)
        seq = conn.execute(
            "SELECT 'items', (SELECT max(id) FROM items) UNION ALL SELECT 'index_queue', (SELECT max(seq) FROM index_queue)"
        ).fetchall()
    else:
        seq = conn.execute("SELECT name, seq FROM sqlite_sequence WHERE name IN ('items', 'index_queue')").fetchall()
    counts = conn.execute("SELECT sum(n_items), sum(n_vectors) FROM collection_counts").fetchone()
    status = conn.execute("SELECT value FROM meta WHERE key = 'status_version'").fetchone()
    return (tuple(sorted(seq)), tuple(counts), status)
