"""Items in the catalog: rows, vectors, namespaces, and the writes that keep them in step.

Every function takes an open connection, so a caller composes several of
them in one `write()` transaction (an
item, its lineage and its version commit together). `write_items()`
does everything a put needs: the namespace row and its item count, the item
row (``created_at`` kept on update), its vectors, its filter-index rows, its
keyword-index row (`langgraph_memory.catalog.keywords`) and the change
Chroma has to apply (`langgraph_memory.catalog.queue`).

    >>> import tempfile, pathlib
    >>> from langgraph_memory.catalog import Catalog
    >>> cat = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> names = NamespaceIds()
    >>> with cat.write() as conn:
    ...     _ = write_items(conn, [ItemWrite(("notes",), "k1", "memories", '{"text": "hi"}')], names, now=1.0)
    >>> with cat.read() as conn:
    ...     get_items(conn, [(("notes",), "k1")])[(("notes",), "k1")].value
    {'text': 'hi'}
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from langgraph_memory.catalog import bulk as _bulk
from langgraph_memory.catalog import history as _history
from langgraph_memory.catalog import keywords as _keywords
from langgraph_memory.catalog import queue as _queue
from langgraph_memory.catalog.bulk import BulkWrites
from langgraph_memory.catalog.connection import POSTGRESQL, Rows, Sql, both, dialect_of
from langgraph_memory.catalog.fields import field_rows
from langgraph_memory.catalog.fields import insert_rows as insert_field_rows
from langgraph_memory.catalog.item_rows import (
    _CHUNK,
    _LOWEST_RUN,
    StoredItem,
    chunked,
    get_items,
    item_uid,
    join_ns,
    split_ns,
    vector_run,
)

__all__ = [
    "ItemWrite",
    "NamespaceIds",
    "item_uid",
    "write_items",
    "look_up",
    "delete_items",
    "restore_items",
    "get_items",
    "apply_access",
    "prefixes",
    "prefix_count_rows",
]

# Each row takes the id after the highest in its namespace's run, computed as it is inserted (so the
# rows of one statement follow each other); a full run (2**32 vectors written to one namespace) goes on
# below every run, where ids copied from a catalog written before the runs also sit.
_INSERT_VECTOR = Sql.both(
    "INSERT INTO vectors(id, item_id, idx, path, model_id, vec) "
    "SELECT CASE WHEN t.top IS NULL THEN ? WHEN t.top < ? THEN t.top + 1 "
    "ELSE (SELECT coalesce(max(id), 0) + 1 FROM vectors WHERE id < ?) END, ?, ?, ?, ?, ? "
    "FROM (SELECT max(id) AS top FROM vectors WHERE id BETWEEN ? AND ?) AS t"
)

# A put replacing a value; the item points at the version it ended (`history.record`, ``point=False``).
_UPDATE_ITEM = Sql(
    "UPDATE items SET value = ?, updated_at = ?, last_accessed_at = ?, expires_at = ?, ttl_minutes = ?, n_vectors = ?,"
    f" history_id = {_history.POINT.sqlite}, valid_from = {_history.START_AFTER.sqlite} WHERE id = ?",
    "UPDATE items SET value = %s, updated_at = %s, last_accessed_at = %s, expires_at = %s, ttl_minutes = %s,"
    f" n_vectors = %s, history_id = {_history.POINT.pg}, valid_from = {_history.START_AFTER.pg} WHERE id = %s",
)

_PG_INSERT_VECTORS = Rows.both("INSERT INTO vectors(item_id, idx, path, model_id, vec)", "(?, ?, ?, ?, ?)")


def _insert_vectors(conn: sqlite3.Connection, rows: Sequence[tuple[int, int, int, str, int, bytes]]) -> None:
    """Insert ``(namespace id, item id, index, path, model id, float32 bytes)`` rows, each in its namespace's run.

    On SQLite. PostgreSQL's heap keeps rows in no id order, so there the ids
    stay its sequence's, below every run (`langgraph_memory.catalog.transfer`
    keeps the sequence there), and its rows go in one multi-row statement.
    """
    if not rows:
        return
    if dialect_of(conn) == POSTGRESQL:
        _PG_INSERT_VECTORS.insert(conn, [r[1:] for r in rows])
        return
    params = []
    for nid, *rest in rows:
        first, last = vector_run(nid)
        params.append((first, last, _LOWEST_RUN, *rest, first, last))
    conn.executemany(_INSERT_VECTOR.of(conn), params)


class NamespaceIds:
    """Namespace ids by namespace, cached: rows are never deleted, so a cached id never goes stale."""

    def __init__(self) -> None:
        self._ids: dict[tuple[str, ...], int] = {}
        self._lock = threading.Lock()
        #: Item ids drawn ahead for new items, and the keys this process put lately (PostgreSQL's write path).
        self.new_items = NewItemIds()

    def cached(self, namespace: tuple[str, ...]) -> int | None:
        """The id of ``namespace`` if this process knows it already (no statement)."""
        return self._ids.get(namespace)

    def get(self, conn: sqlite3.Connection, namespace: tuple[str, ...]) -> int | None:
        nid = self._ids.get(namespace)
        if nid is not None:
            return nid
        row = conn.execute(both(conn, "SELECT id FROM namespaces WHERE ns = ?"), (join_ns(namespace),)).fetchone()
        if row is None:
            return None
        with self._lock:
            self._ids[namespace] = int(row[0])
        return int(row[0])

    def ensure(self, conn: sqlite3.Connection, namespace: tuple[str, ...], collection: str) -> int:
        """The id of ``namespace``, creating its row (inside the caller's write transaction)."""
        nid = self.get(conn, namespace)
        if nid is not None:
            return nid
        if dialect_of(conn) == POSTGRESQL:
            # Read before the write lock (a late write): another machine may create the row meanwhile.
            conn.check_when_ordered(both(conn, "SELECT 1 FROM namespaces WHERE ns = ?"), (join_ns(namespace),))  # type: ignore[attr-defined]
        cur = conn.execute(
            both(conn, "INSERT INTO namespaces(ns, collection, depth) VALUES (?, ?, ?) RETURNING id"),
            (join_ns(namespace), collection, len(namespace)),
        )
        # Not cached until the transaction commits: a rollback would leave a dangling id.
        return int(cur.fetchone()[0])

    def forget_uncommitted(self) -> None:
        """Drop everything (after a rollback the cache may name rows that were never committed)."""
        with self._lock:
            self._ids.clear()


class NewItemIds:
    """Ids drawn ahead from the items' sequence, and the keys this process put lately.

    A put of keys this process has not put lately is sent as new, with ids
    from here: no lookup, and the whole transaction is one round trip. That
    is a guess, not knowledge (another machine may have put the key, or
    deleted it), so the server checks it: a key that exists fails the insert
    on the items' UNIQUE (ns_id, key), the transaction changes nothing, and
    the put runs again the usual way. An id
    drawn and never used is a gap in the sequence, as a rollback leaves.
    """

    #: Ids drawn ahead with a lookup that finds the pool short.
    DRAW = 64
    #: Keys remembered as put lately (a hint only: forgetting one costs a lookup, never a wrong write).
    RECENT = 4096

    def __init__(self) -> None:
        self.spare: list[int] = []
        self._recent: dict[tuple[int, str], None] = {}

    def short(self, n: int) -> int:
        """How many ids to draw with a lookup of ``n`` puts (0 when the pool holds enough for the next one)."""
        return 0 if len(self.spare) > n else self.DRAW

    def noted(self, nid: int, key: str) -> bool:
        return (nid, key) in self._recent

    def note(self, nid: int, key: str) -> None:
        self._recent[(nid, key)] = None
        if len(self._recent) > self.RECENT:
            del self._recent[next(iter(self._recent))]


@dataclass
class ItemWrite:
    """One put (``value_json`` set) or delete (``value_json`` None) of the item ``(namespace, key)``.

    ``vectors`` are ``(record path, float32 bytes)`` made by the model
    ``model_id`` (`model_id()`); ``ttl_minutes`` sets a TTL from ``now``.
    """

    namespace: tuple[str, ...]
    key: str
    collection: str
    value_json: str | None
    ttl_minutes: float | None = None
    vectors: list[tuple[str, bytes]] = field(default_factory=list)
    model_id: int | None = None
    #: the value ``value_json`` encodes, when the caller has it (saves parsing it again).
    value: dict[str, Any] | None = None
    #: the text each of ``vectors`` embeds, in their order, when the caller has them (the keyword index then
    #: takes them instead of reading each record path of ``value`` again); must match ``value``.
    texts: list[str] | None = None


def look_up(conn: sqlite3.Connection, writes: Sequence[ItemWrite], names: NamespaceIds) -> object | None:
    """The items ``writes`` replace, read ahead for `write_items` (PostgreSQL; None on SQLite, which reads them there).

    In a write opened with ``late=True`` this read is made before the write
    lock and checked again once it is taken.
    """
    return _Known(conn, writes, names) if dialect_of(conn) == POSTGRESQL else None


def write_items(
    conn: sqlite3.Connection,
    writes: Iterable[ItemWrite],
    names: NamespaceIds,
    *,
    now: float,
    looked_up: object | None = None,
) -> list[int | None]:
    """Apply puts and deletes inside the caller's transaction; return each item's row id (None if deleted).

    On update the item keeps its row id, ``created_at`` and access data;
    ``updated_at`` and ``last_accessed_at`` move to ``now``. ``looked_up`` is
    what `look_up()` read of the same ``writes``.
    """
    out: list[int | None] = []
    queued: dict[str, list[tuple[int, int]]] = {}
    counts = _Counts()
    field_batch: list[tuple[str, int, Any, int]] = []
    vector_batch: list[tuple[int, int, int, str, int, bytes]] = []
    updated: list[int] = []
    keyword_batch: dict[int, str | None] = {}
    # On a server each statement is a round trip: the batch's items are looked up in one statement and
    # new ones get ids from one, so that the rest of the batch goes to the server with its commit.
    known: _Known | BulkWrites | None = None
    if dialect_of(conn) == POSTGRESQL:
        known = looked_up if isinstance(looked_up, _Known) else _Known(conn, writes, names)
    else:
        writes = writes if isinstance(writes, Sequence) else list(writes)
        # A large batch reads its keys and writes its item rows in a few statements (see catalog.bulk).
        known = BulkWrites(conn, writes, names, item_uid) if _bulk.takes(writes) else None
    bulk = known if isinstance(known, BulkWrites) else None
    added = 0
    for w in writes if known is None else known.writes:
        if known is not None:
            nid, old = known.lookup(w)
        else:
            nid = (
                names.get(conn, w.namespace) if w.value_json is None else names.ensure(conn, w.namespace, w.collection)
            )
            old = (
                conn.execute(
                    both(conn, "SELECT id, n_vectors FROM items WHERE ns_id = ? AND key = ?"), (nid, w.key)
                ).fetchone()
                if nid is not None
                else None
            )
        if w.value_json is None:
            if old is not None:
                item_id, n_old = int(old[0]), int(old[1])
                _history.record(conn, [item_id], "delete", now, several=n_old > 1)
                _delete_rows(conn, [item_id])
                if known is not None and nid is not None:
                    known.state[(nid, w.key)] = None
                counts.add(nid, w.namespace, w.collection, -1, -n_old)  # type: ignore[arg-type]
                if n_old:
                    queued.setdefault(w.collection, []).append((item_id, n_old))
            out.append(None)
            continue
        assert nid is not None
        expires = now + w.ttl_minutes * 60.0 if w.ttl_minutes else None
        if old is None and known is not None:
            item_id, n_old = known.insert(conn, w, nid, now, expires)
            counts.add(nid, w.namespace, w.collection, 1, len(w.vectors))
            added += 1
        elif old is None:
            item_id, n_old = _insert_item(conn, w, nid, now, expires), 0
            counts.add(nid, w.namespace, w.collection, 1, len(w.vectors))
        else:
            item_id, n_old = int(old[0]), int(old[1])
            if bulk is not None:
                bulk.update(w, item_id, now, expires, had_vectors=bool(n_old))
            else:
                head = _history.record(conn, [item_id], "put", now, several=n_old > 1, point=False)
                conn.execute(
                    _UPDATE_ITEM.of(conn),
                    (w.value_json, now, now, expires, w.ttl_minutes, len(w.vectors), head, now, item_id),
                )
                conn.execute(both(conn, "DELETE FROM fields WHERE item_id = ?"), (item_id,))
                if n_old:
                    conn.execute(both(conn, "DELETE FROM vectors WHERE item_id = ?"), (item_id,))
            if n_old:
                updated.append(item_id)
            counts.add(nid, w.namespace, w.collection, 0, len(w.vectors) - n_old)
            if known is not None:
                known.state[(nid, w.key)] = (item_id, len(w.vectors))
                if isinstance(known, _Known):
                    known.note(nid, w.key)
        value = w.value if w.value is not None else json.loads(w.value_json)
        field_batch.extend((p, k, v, item_id) for p, k, v in field_rows(value))
        if w.vectors:
            keyword_batch[item_id] = _keywords.indexed_text(value, [path for path, _ in w.vectors], w.texts)
        vector_batch.extend((nid, item_id, i, path, w.model_id or 0, vec) for i, (path, vec) in enumerate(w.vectors))
        if n_old or w.vectors:
            queued.setdefault(w.collection, []).append((item_id, max(n_old, len(w.vectors))))
        out.append(item_id)
    if bulk is not None:
        bulk.flush(conn, lambda c, ids: _history.record(c, ids, "put", now))
    # One statement each for the whole batch: the per-item rows were deleted above, so order does not matter.
    if field_batch:
        insert_field_rows(conn, field_batch)
    _insert_vectors(conn, vector_batch)
    # An item with no vectors before had no keyword row, so only updates of indexed items unindex.
    _keywords.unindex_items(conn, updated)
    _keywords.index_items(conn, keyword_batch.items())
    counts.apply(conn)
    for collection, entries in queued.items():
        _queue.enqueue(conn, collection, entries)
    if added and dialect_of(conn) == POSTGRESQL:
        pg: Any = conn  # a PgConnection (the postgres package is not imported on SQLite)
        pg.items_added += added
    return out


def _insert_item(
    conn: Any, w: ItemWrite, nid: int, now: float, expires: float | None, *, item_id: int | None = None
) -> int:
    """Insert a new item row for ``w``; return its id (``item_id`` when given, else the one the row got)."""
    cols = (
        "ns_id, key, uid, value, created_at, updated_at, last_accessed_at, access_count, expires_at, ttl_minutes,"
        " n_vectors, valid_from"
    )
    row = _bulk.item_row(w, nid, item_uid(w.namespace, w.key), now, expires)
    if item_id is not None:
        conn.execute(
            both(conn, f"INSERT INTO items(id, {cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)"), (item_id, *row)
        )
        return item_id
    cur = conn.execute(
        both(conn, f"INSERT INTO items({cols}) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?) RETURNING id"), row
    )
    return int(cur.fetchone()[0])


# Items of a batch whose row (id, vector count, since when its version is current) is not what the batch read
# before the write lock: another machine's put between the read and the lock began a version that this write
# would end without keeping it (its history row copies the row as read at the lock, and only a version that began
# before this write's instant).
_CHANGED_SINCE_READ = (
    "SELECT 1 FROM (VALUES {rows}) AS v(ns_id, key, id, n, since) LEFT JOIN items i"
    " ON i.ns_id = v.ns_id AND i.key = v.key WHERE i.id IS DISTINCT FROM v.id OR i.n_vectors IS DISTINCT FROM v.n"
    " OR coalesce(i.valid_from, i.updated_at) IS DISTINCT FROM v.since"
)


class _Known:
    """A batch's items as the catalog holds them, read in one statement (the PostgreSQL catalog's write path).

    ``state`` follows the batch as it is applied (a key put twice, or put
    and deleted, sees its own earlier write); new items take ids drawn from
    the items' sequence in one statement, in the batch's order.
    """

    def __init__(self, conn: Any, writes: Iterable[ItemWrite], names: NamespaceIds) -> None:
        self.writes = list(writes)
        self.state: dict[tuple[int, str], tuple[int, int] | None] = {}
        #: since when each item read is current (see `_CHANGED_SINCE_READ`).
        self._since: dict[tuple[int, str], float] = {}
        self._at = 0
        self._pool = names.new_items
        if self._sent_as_new(conn, names):
            return
        self.nids = [
            names.get(conn, w.namespace) if w.value_json is None else names.ensure(conn, w.namespace, w.collection)
            for w in self.writes
        ]
        pairs = list(
            dict.fromkeys((nid, w.key) for nid, w in zip(self.nids, self.writes, strict=True) if nid is not None)
        )
        # One id per put, drawn with the first lookup (ids of puts that turn out to be updates are skipped:
        # an identity may have gaps), so a batch of up to _CHUNK // 2 items costs one round trip here; and
        # ids ahead for the next puts sent as new, when the pool runs short.
        puts = sum(1 for w in self.writes if w.value_json is not None)
        ahead = self._pool.short(puts) if puts else 0
        puts += ahead
        self._ids: list[int] = []
        chunks: list[Sequence[tuple[int, str]]] = list(chunked(pairs, _CHUNK // 2)) or [[]]
        for n, chunk in enumerate(chunks):
            lookup = (
                "SELECT 0, ns_id, key, id, n_vectors, coalesce(valid_from, updated_at) FROM items"
                " WHERE (ns_id, key) IN (VALUES " + ", ".join(["(?, ?)"] * len(chunk)) + ")"
                if chunk
                else "SELECT 0, 0, '', 0, 0, 0.0 WHERE FALSE"
            )
            params: tuple[Any, ...] = tuple(x for pair in chunk for x in pair)
            if n == 0 and puts:
                lookup += (
                    " UNION ALL SELECT 1, 0, '', nextval(pg_get_serial_sequence('items', 'id')), 0, 0.0"
                    " FROM generate_series(1, ?)"
                )
                params += (puts,)
            for r in conn.execute(both(conn, lookup), params).fetchall():
                if r[0]:
                    self._ids.append(int(r[3]))
                else:
                    self.state[(int(r[1]), str(r[2]))] = (int(r[3]), int(r[4]))
                    self._since[(int(r[1]), str(r[2]))] = float(r[5])
        self._ids.sort(reverse=True)
        if ahead:
            self._pool.spare = self._ids[:ahead] + self._pool.spare
            del self._ids[:ahead]
        self._check_when_ordered(conn, pairs)

    def _sent_as_new(self, conn: Any, names: NamespaceIds) -> bool:
        """Take every write as a new item, with ids from the pool, if that is likely and will be checked.

        Only for puts of keys this process did not put lately, in namespaces
        it knows, in a write whose lock is still to be taken. A key that
        exists after all fails the insert on the items' UNIQUE (ns_id, key),
        before the transaction changed anything that stays, and the catalog
        reports a write conflict (the put runs again with its lookup).
        Returns False, having read nothing, when it does not apply.
        """
        if getattr(conn, "order_lock", None) is None or len(self._pool.spare) < len(self.writes):
            return False
        nids = [names.cached(w.namespace) for w in self.writes]
        if any(w.value_json is None for w in self.writes) or any(nid is None for nid in nids):
            return False
        pairs = list(dict.fromkeys((nid, w.key) for nid, w in zip(nids, self.writes, strict=True)))
        if len(pairs) != len(self.writes) or any(self._pool.noted(nid, key) for nid, key in pairs):  # type: ignore[arg-type]
            return False
        self.nids = nids
        self._ids = sorted((self._pool.spare.pop() for _ in self.writes), reverse=True)
        # No check statement: the items' UNIQUE (ns_id, key) refuses a key that exists (a plpgsql check
        # compiled per put cost a quarter of a millisecond on the server).
        conn.guessed_new = True
        return True

    def _check_when_ordered(self, conn: Any, pairs: list[tuple[int, str]]) -> None:
        """A put that read before the write lock (``late``) fails at the lock if another writer changed that."""
        if pairs:
            rows = [
                (nid, key, *(self.state.get((nid, key)) or (None, None)), self._since.get((nid, key)))
                for nid, key in pairs
            ]
            marks = ", ".join(
                [
                    "(CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT),"
                    " CAST(? AS DOUBLE PRECISION))"
                ]
                * len(rows)
            )
            if not conn.check_when_ordered(
                both(conn, _CHANGED_SINCE_READ.format(rows=marks)), [x for r in rows for x in r]
            ):
                return
        gone = [join_ns(w.namespace) for nid, w in zip(self.nids, self.writes, strict=True) if nid is None]
        if gone:
            conn.check_when_ordered(
                both(conn, f"SELECT 1 FROM namespaces WHERE ns IN ({', '.join('?' * len(gone))})"), gone
            )

    def lookup(self, w: ItemWrite) -> tuple[int | None, tuple[int, int] | None]:
        nid = self.nids[self._at]
        self._at += 1
        return nid, (self.state.get((nid, w.key)) if nid is not None else None)

    def insert(self, conn: Any, w: ItemWrite, nid: int, now: float, expires: float | None) -> tuple[int, int]:
        item_id = _insert_item(conn, w, nid, now, expires, item_id=self._ids.pop())
        self.state[(nid, w.key)] = (item_id, len(w.vectors))
        self.note(nid, w.key)
        return item_id, 0

    def note(self, nid: int, key: str) -> None:
        """This process put ``key``: its next put looks it up first (it most likely exists)."""
        self._pool.note(nid, key)


def _insert_fields(conn: sqlite3.Connection, item_id: int, value: dict[str, Any]) -> None:
    rows = field_rows(value)
    if rows:
        insert_field_rows(conn, [(p, k, v, item_id) for p, k, v in rows])


def prefixes(namespace: Sequence[str]) -> list[str]:
    """Every prefix of ``namespace`` that `prefix_counts` keeps, as stored: its first label, ..., itself."""
    return [join_ns(namespace[:depth]) for depth in range(1, len(namespace) + 1)]


def prefix_count_rows(namespaces: Iterable[tuple[str, str, int, int]]) -> list[tuple[str, str, int, int]]:
    """``(collection, prefix, items, vectors)`` summed over ``(ns, collection, items, vectors)`` rows of namespaces.

    What the ``prefix_counts`` table holds, computed from the ``namespaces``
    table (to fill it when a catalog gets it, and to check it).
    """
    sums: dict[tuple[str, str], list[int]] = {}
    for ns, collection, n_items, n_vectors in namespaces:
        for prefix in prefixes(split_ns(ns)):
            d = sums.setdefault((collection, prefix), [0, 0])
            d[0] += int(n_items)
            d[1] += int(n_vectors)
    return [(collection, prefix, d[0], d[1]) for (collection, prefix), d in sorted(sums.items())]


class _Counts:
    """Changes to the item and vector counts of namespaces, their prefixes and collections, applied in one go.

    A search under a prefix reads its counts in one row of ``prefix_counts``,
    so a put updates a row for each of its namespace's prefixes (a few), not
    the search a sum over every namespace under the prefix.
    """

    def __init__(self) -> None:
        self.by_ns: dict[int, list[int]] = {}
        self.by_prefix: dict[tuple[str, str], list[int]] = {}
        self.by_collection: dict[str, list[int]] = {}

    def add(self, ns_id: int, namespace: tuple[str, ...], collection: str, items: int, vectors: int) -> None:
        keys: list[tuple[dict[Any, list[int]], Any]] = [(self.by_ns, ns_id), (self.by_collection, collection)]
        keys.extend((self.by_prefix, (collection, prefix)) for prefix in prefixes(namespace))
        for table, key in keys:
            d = table.setdefault(key, [0, 0])
            d[0] += items
            d[1] += vectors

    def apply(self, conn: sqlite3.Connection) -> None:
        ns_rows = [(d[0], d[1], nid) for nid, d in self.by_ns.items() if d[0] or d[1]]
        if ns_rows:
            conn.executemany(
                both(conn, "UPDATE namespaces SET n_items = n_items + ?, n_vectors = n_vectors + ? WHERE id = ?"),
                ns_rows,
            )
        prefix_rows = [(c, p, d[0], d[1]) for (c, p), d in sorted(self.by_prefix.items()) if d[0] or d[1]]
        if prefix_rows:
            conn.executemany(
                both(
                    conn,
                    "INSERT INTO prefix_counts(collection, prefix, n_items, n_vectors) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(collection, prefix) DO UPDATE SET n_items = prefix_counts.n_items + excluded.n_items,"
                    " n_vectors = prefix_counts.n_vectors + excluded.n_vectors",
                ),
                prefix_rows,
            )
        coll_rows = [(name, d[0], d[1]) for name, d in self.by_collection.items() if d[0] or d[1]]
        if coll_rows:
            conn.executemany(
                both(
                    conn,
                    "INSERT INTO collection_counts(collection, n_items, n_vectors) VALUES (?, ?, ?) "
                    "ON CONFLICT(collection) DO UPDATE SET n_items = collection_counts.n_items + excluded.n_items,"
                    " n_vectors = collection_counts.n_vectors + excluded.n_vectors",
                ),
                coll_rows,
            )


def _delete_rows(conn: sqlite3.Connection, item_ids: Sequence[int]) -> None:
    _history.keep_heads(conn, item_ids)
    for chunk in chunked(list(item_ids)):
        marks = ",".join("?" * len(chunk))
        conn.execute(both(conn, f"DELETE FROM fields WHERE item_id IN ({marks})"), tuple(chunk))
        conn.execute(both(conn, f"DELETE FROM vectors WHERE item_id IN ({marks})"), tuple(chunk))
        conn.execute(both(conn, f"DELETE FROM items WHERE id IN ({marks})"), tuple(chunk))
    _keywords.unindex_items(conn, item_ids)


def delete_items(
    conn: sqlite3.Connection,
    items: Sequence[StoredItem],
    collection: str,
    *,
    change: _history.Change = "delete",
    now: float | None = None,
) -> int:
    """Delete items read from the catalog (they carry their row id); return how many rows went.

    Their versions go to the history, ended at ``now`` (default: the clock) by ``change``.
    """
    ids = [it.id for it in items if it.id is not None]
    if not ids:
        return 0
    rows: list[tuple[int, int, int]] = []
    for chunk in chunked(ids):
        marks = ",".join("?" * len(chunk))
        rows.extend(
            conn.execute(both(conn, f"SELECT id, ns_id, n_vectors FROM items WHERE id IN ({marks})"), tuple(chunk))
        )
    _history.record(conn, [r[0] for r in rows], change, time.time() if now is None else now)
    _delete_rows(conn, [r[0] for r in rows])
    counts = _Counts()
    namespace_of = {it.id: it.namespace for it in items}
    for item_id, nid, n_vectors in rows:
        counts.add(nid, namespace_of[item_id], collection, -1, -n_vectors)
    counts.apply(conn)
    _queue.enqueue(conn, collection, [(r[0], r[2]) for r in rows if r[2]])
    return len(rows)


# When the last kept version of a key whose item is gone ended.
_KEY_ENDED = "SELECT h.valid_to FROM history_heads hh JOIN item_history h ON h.id = hh.history_id WHERE hh.uid = ?"


def restore_items(
    conn: sqlite3.Connection,
    items: Sequence[StoredItem],
    collection: str,
    names: NamespaceIds,
    *,
    model_id: int,
    now: float | None = None,
) -> list[StoredItem]:
    """Write items back exactly as they were (timestamps, access data, vectors); skip live ones.

    Each is current from ``now`` (default: the clock) on, or from its ``updated_at`` when that is later (an
    item from a store whose clock runs ahead): a version never begins before its value was written, which a
    listing as of a moment relies on (`scope.newest_items`); nor before the last version of its key ended (the
    archive move, stamped by a clock ahead of this one). Returns the items written.
    """
    now = time.time() if now is None else now
    written: list[StoredItem] = []
    counts = _Counts()
    queued: list[tuple[int, int]] = []
    for it in items:
        nid = names.ensure(conn, it.namespace, collection)
        if conn.execute(both(conn, "SELECT 1 FROM items WHERE ns_id = ? AND key = ?"), (nid, it.key)).fetchone():
            continue
        ended = conn.execute(both(conn, _KEY_ENDED), (it.uid,)).fetchone()
        vecs = it.vectors if it.indexed else []
        value_json = json.dumps(it.value, ensure_ascii=False, separators=(",", ":"))
        cur = conn.execute(
            both(
                conn,
                "INSERT INTO items(ns_id, key, uid, value, created_at, updated_at, last_accessed_at, access_count,"
                " expires_at, ttl_minutes, n_vectors, valid_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            ),
            (
                nid,
                it.key,
                it.uid,
                value_json,
                it.created_at,
                it.updated_at,
                it.last_accessed_at,
                it.access_count,
                it.expires_at,
                it.ttl_minutes,
                len(vecs),
                max(now, it.updated_at, ended[0] if ended else now),
            ),
        )
        item_id = int(cur.fetchone()[0])
        _insert_fields(conn, item_id, it.value)
        if vecs:
            _insert_vectors(
                conn,
                [
                    (
                        nid,
                        item_id,
                        i,
                        it.paths[i] if i < len(it.paths) else "",
                        model_id,
                        np.asarray(v, dtype=np.float32).tobytes(),
                    )
                    for i, v in enumerate(vecs)
                ],
            )
            queued.append((item_id, len(vecs)))
            paths = [it.paths[i] if i < len(it.paths) else "" for i in range(len(vecs))]
            _keywords.index_items(conn, [(item_id, _keywords.indexed_text(it.value, paths))])
        counts.add(nid, it.namespace, collection, 1, len(vecs))
        it.id = item_id
        it.n_vectors = len(vecs)
        written.append(it)
    counts.apply(conn)
    _queue.enqueue(conn, collection, queued)
    return written


_ACCESS = Sql(
    "UPDATE items SET last_accessed_at = max(last_accessed_at, ?), access_count = access_count + ?,"
    " expires_at = CASE WHEN ? IS NULL OR expires_at IS NULL THEN expires_at ELSE max(expires_at, ?) END"
    " WHERE id = ?",
    "UPDATE items SET last_accessed_at = GREATEST(last_accessed_at, %s), access_count = access_count + %s,"
    " expires_at = CASE WHEN %s IS NULL OR expires_at IS NULL THEN expires_at ELSE GREATEST(expires_at, %s) END"
    " WHERE id = %s",
)


def apply_access(conn: sqlite3.Connection, rows: Sequence[tuple[float, int, float | None, int]]) -> int:
    """Add noted reads ``(at, count, expires_at, item id)`` to their items; return how many items exist."""
    # One call for all (on a server: one round trip, not one per item), in id order so that two
    # processes flushing at once lock the rows they share in the same order.
    ordered = sorted(rows, key=lambda r: r[3])
    cur = conn.executemany(
        _ACCESS.of(conn),
        [(at, count, expires, expires, item_id) for at, count, expires, item_id in ordered],
    )
    return max(cur.rowcount, 0)
