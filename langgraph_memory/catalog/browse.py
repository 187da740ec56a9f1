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
    ...     lessons_page(conn, limit=10), strategy_names(conn)
    ([], [])
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from langgraph_memory.catalog.connection import Sql, both, of
from langgraph_memory.catalog.fields import KIND_BOOL, KIND_STR
from langgraph_memory.catalog.item_rows import ITEM_COLUMNS_BY_ID, StoredItem, get_by_ids, item_from_row, rows_in
from langgraph_memory.catalog.sessions import _SESSION_COLS, Session, _session

__all__ = [
    "StrategyName",
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
# A lesson is resolved by a filter-index row: ``true`` is 1 on SQLite and the JSON number 1 (JSONB) on PostgreSQL.
_OPEN_PAGE = Sql(
    "SELECT i.id FROM items i WHERE +i.ns_id IN (SELECT id FROM namespaces WHERE collection = ?) "
    "AND NOT EXISTS (SELECT 1 FROM fields f WHERE f.path = 'resolved' AND f.kind = ? AND f.val = 1 "
    "AND f.item_id = i.id) ORDER BY i.id DESC LIMIT ? OFFSET ?",
    "SELECT i.id FROM items i WHERE +i.ns_id IN (SELECT id FROM namespaces WHERE collection = %s) "
    "AND NOT EXISTS (SELECT 1 FROM fields f WHERE f.path = 'resolved' AND f.kind = %s AND f.val = '1'::jsonb "
    "AND f.item_id = i.id) ORDER BY i.id DESC LIMIT %s OFFSET %s",
)
_RESOLVED_ROWS = (
    "FROM fields f JOIN items i ON i.id = f.item_id WHERE f.path = 'resolved' AND f.kind = {p} "
    "AND f.val = {one} AND i.ns_id IN (SELECT id FROM namespaces WHERE collection = {p})"
)
_RESOLVED_COUNT = Sql(
    "SELECT count(*) " + _RESOLVED_ROWS.format(p="?", one="1"),
    "SELECT count(*) " + _RESOLVED_ROWS.format(p="%s", one="'1'::jsonb"),
)
_RESOLVED_PAGE = Sql(
    "SELECT f.item_id " + _RESOLVED_ROWS.format(p="?", one="1") + " ORDER BY f.item_id DESC LIMIT ? OFFSET ?",
    "SELECT f.item_id "
    + _RESOLVED_ROWS.format(p="%s", one="'1'::jsonb")
    + " ORDER BY f.item_id DESC LIMIT %s OFFSET %s",
)
# The UTC day of each item: PostgreSQL's CAST rounds where SQLite's truncates.
_PER_DAY = Sql(
    "SELECT CAST(created_at / 86400 AS INTEGER) AS d, count(*) FROM items GROUP BY d ORDER BY d",
    "SELECT CAST(floor(created_at / 86400) AS BIGINT) AS d, count(*) FROM items GROUP BY d ORDER BY d",
)
_STRATEGIES = Sql.both(
    "SELECT name, count(*), max(version), min(created_at), max(created_at) FROM versions GROUP BY name "
    "ORDER BY max(created_at) DESC, name LIMIT ? OFFSET ?"
)
# The newest ids handed out: SQLite's own table; on PostgreSQL the newest committed (sequences are not
# transactional).
_NEWEST_IDS = Sql(
    "SELECT name, seq FROM sqlite_sequence WHERE name IN ('items', 'index_queue')",
    "SELECT 'items', (SELECT max(id) FROM items) UNION ALL SELECT 'index_queue', (SELECT max(seq) FROM index_queue)",
)


def _by_ids(conn: sqlite3.Connection, sql: Sql, params: Sequence[object]) -> list[StoredItem]:
    """The items whose ids ``sql`` selects, in its order. Paging selects ids only: rows skipped by
    ``OFFSET`` are still computed, and an item's value is most of its row."""
    ids = [row[0] for row in conn.execute(sql.of(conn), tuple(params))]
    found = get_by_ids(conn, ids)
    return [found[i] for i in ids if i in found]


def items_per_day(conn: sqlite3.Connection) -> list[tuple[int, int]]:
    """``(day, items)`` of the items now live by the UTC day they were created (day = epoch seconds // 86400)."""
    rows = conn.execute(_PER_DAY.of(conn))
    return [(int(d), int(n)) for d, n in rows]


def open_lessons(conn: sqlite3.Connection, collection: str = "lessons_learned") -> tuple[int, int]:
    """``(open, resolved)`` lessons of ``collection`` (a lesson without ``resolved`` is open)."""
    total = conn.execute(
        both(conn, "SELECT coalesce(sum(n_items), 0) FROM collection_counts WHERE collection = ?"), (collection,)
    ).fetchone()[0]
    resolved = conn.execute(_RESOLVED_COUNT.of(conn), (KIND_BOOL, collection)).fetchone()[0]
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
        out = _by_ids(conn, _OPEN_PAGE, (collection, KIND_BOOL, limit, offset))
    if len(out) < limit:
        out.extend(
            _by_ids(
                conn,
                _RESOLVED_PAGE,
                (KIND_BOOL, collection, limit - len(out), max(0, offset - n_open)),
            )
        )
    return out


def _text_val(conn: sqlite3.Connection) -> str:
    # PostgreSQL keeps the filter index's values as JSONB; a string leaf reads back as its text.
    return of(conn, "val", "val #>> ARRAY[]::text[]")


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
    return int(conn.execute(both(conn, "SELECT count(DISTINCT name) FROM versions")).fetchone()[0])


def strategy_names(conn: sqlite3.Connection, *, limit: int = 50, offset: int = 0) -> list[StrategyName]:
    """Named strategies, the most recently versioned first."""
    rows = conn.execute(_STRATEGIES.of(conn), (limit, offset))
    return [StrategyName(r[0], int(r[1]), int(r[2]), float(r[3]), float(r[4])) for r in rows]


def session_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute(both(conn, "SELECT count(*) FROM sessions")).fetchone()[0])


def sessions_page(conn: sqlite3.Connection, *, limit: int, offset: int = 0) -> list[Session]:
    """Sessions of session memory, the most recently active first."""
    rows = conn.execute(
        both(conn, f"SELECT {_SESSION_COLS} FROM sessions ORDER BY last_turn_at DESC, id LIMIT ? OFFSET ?"),
        (limit, offset),
    )
    return [_session(r) for r in rows]


def index_backlog(conn: sqlite3.Connection) -> dict[str, int]:
    """Changes each collection's Chroma index has not applied yet, by collection name (one index range each)."""
    out: dict[str, int] = {}
    for collection, applied in conn.execute(both(conn, "SELECT collection, applied_seq FROM index_state")).fetchall():
        n = conn.execute(
            both(conn, "SELECT count(*) FROM index_queue WHERE collection = ? AND seq > ?"), (collection, applied)
        ).fetchone()[0]
        if n:
            out[collection] = int(n)
    return out


def vector_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Vectors the catalog holds per collection (the kept counts)."""
    return {c: int(n) for c, n in conn.execute(both(conn, "SELECT collection, n_vectors FROM collection_counts"))}


def change_token(conn: sqlite3.Connection) -> tuple[object, ...]:
    """A value that changes when items are added, removed, re-indexed or change status (a few rows read).

    An in-place update of a value that keeps its size does not change it: callers that cache
    aggregates over values also expire them by age.
    """
    seq = conn.execute(_NEWEST_IDS.of(conn)).fetchall()
    counts = conn.execute(both(conn, "SELECT sum(n_items), sum(n_vectors) FROM collection_counts")).fetchone()
    status = conn.execute(both(conn, "SELECT value FROM meta WHERE key = 'status_version'")).fetchone()
    return (tuple(sorted(seq)), tuple(counts), status)
