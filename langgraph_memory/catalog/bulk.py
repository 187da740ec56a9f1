"""The bulk path of `write_items()` on SQLite: a large batch's item rows in a few statements.

A put of one item costs the catalog a lookup of the key and an insert (or
an update and the removal of its old filter and vector rows): two to four
statements, each a trip through SQLite's parser and B-trees from Python. A
batch of many puts (an import, a bundle, an ingestion, ``batch()`` with a
thousand ``PutOp``) pays that per item. `BulkWrites` reads every key of the
batch with one statement per namespace, gives the new items their ids
itself (the writer holds SQLite's write lock, so the next ids are known:
the same ones single puts would get) and writes the item rows with one
``executemany`` each for inserts and updates. The filter, vector, keyword
and queue rows already go in one statement each (`write_items()`), so the
rows a bulk batch leaves are exactly those of the same puts one by one.

It takes batches of at least `BULK_MIN` writes whose keys are distinct
(the store keeps the last put of a key in a batch before it writes; other
callers with repeated keys take the item-by-item path).

    >>> import tempfile, pathlib
    >>> from langgraph_memory.catalog import Catalog
    >>> from langgraph_memory.catalog.items import ItemWrite, NamespaceIds, write_items
    >>> from langgraph_memory.catalog.item_rows import count_items
    >>> cat = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> writes = [ItemWrite(("notes",), f"k{i}", "memories", '{"n": %d}' % i) for i in range(BULK_MIN)]
    >>> takes(writes)
    True
    >>> with cat.write() as conn:
    ...     ids = write_items(conn, writes, NamespaceIds(), now=1.0)
    >>> with cat.read() as conn:
    ...     ids[:3], count_items(conn, "memories")
    ([1, 2, 3], 64)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from langgraph_memory.catalog import history as _history

# The writes are `items.ItemWrite`s and ``names`` an `items.NamespaceIds`; items imports this module,
# so they are typed loosely here rather than imported back (the layout allows no cycle).
ItemWrite = Any
NamespaceIds = Any

__all__ = ["BULK_MIN", "BulkWrites", "item_row", "takes"]

#: A batch of at least this many writes takes the bulk path (below it, the per-item statements cost little).
BULK_MIN = 64
# SQLite's default limit on host parameters is 32766; stay well under it.
_CHUNK = 900

_INSERT = (
    "INSERT INTO items(id, ns_id, key, uid, value, created_at, updated_at, last_accessed_at, access_count,"
    " expires_at, ttl_minutes, n_vectors, valid_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)"
)
_UPDATE = (
    "UPDATE items SET value = ?, updated_at = ?, last_accessed_at = ?, expires_at = ?, ttl_minutes = ?,"
    f" n_vectors = ?, valid_from = {_history.START_AFTER.sqlite} WHERE id = ?"
)
# One namespace's items among a list of keys (given as JSON): the UNIQUE (ns_id, key) index answers each.
# CROSS JOIN keeps the keys outside: with a plain JOIN SQLite walked the namespace's items and scanned the key
# list for each (the batch's cost grew with the store).
_LOOKUP = "SELECT i.key, i.id, i.n_vectors FROM json_each(?) k CROSS JOIN items i ON i.ns_id = ? AND i.key = k.value"
# The next id AUTOINCREMENT would give: above every id ever used, which sqlite_sequence records.
_LAST_ID = (
    "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'items'), 0),"
    " coalesce((SELECT max(id) FROM items), 0))"
)


def item_row(w: ItemWrite, nid: int, uid: str, now: float, expires: float | None) -> tuple[Any, ...]:
    """A new item's row after its id, in the column order of the inserts here and in `items` (``access_count`` is a literal 0)."""
    return (nid, w.key, uid, w.value_json, now, now, now, expires, w.ttl_minutes, len(w.vectors), now)


def takes(writes: Sequence[ItemWrite]) -> bool:
    """Whether ``writes`` take the bulk path: at least `BULK_MIN` of them, each key once."""
    if len(writes) < BULK_MIN:
        return False
    return len({(w.namespace, w.key) for w in writes}) == len(writes)


class BulkWrites:
    """A bulk batch's items as the catalog holds them, and its item rows, written together by `flush()`.

    The same interface as the PostgreSQL path's lookups (``lookup``,
    ``insert``, ``state``), plus ``update``; the caller's transaction must
    hold the write lock (SQLite's ``BEGIN IMMEDIATE``) from before this is made.
    """

    def __init__(
        self, conn: Any, writes: Sequence[ItemWrite], names: NamespaceIds, uid: Callable[[Sequence[str], str], str]
    ) -> None:
        self.writes = list(writes)
        self._uid = uid
        self.nids = [
            names.get(conn, w.namespace) if w.value_json is None else names.ensure(conn, w.namespace, w.collection)
            for w in self.writes
        ]
        by_ns: dict[int, list[str]] = {}
        for nid, w in zip(self.nids, self.writes, strict=True):
            if nid is not None:
                by_ns.setdefault(nid, []).append(w.key)
        self.state: dict[tuple[int, str], tuple[int, int] | None] = {}
        for nid, keys in by_ns.items():
            for key, item_id, n in conn.execute(_LOOKUP, (json.dumps(keys), nid)):
                self.state[(nid, key)] = (int(item_id), int(n))
        self._next = int(conn.execute(_LAST_ID).fetchone()[0]) + 1
        self._at = 0
        self._inserts: list[tuple[Any, ...]] = []
        self._updates: list[tuple[Any, ...]] = []
        self._cleared: list[int] = []
        self._had_vectors: list[int] = []

    def lookup(self, w: ItemWrite) -> tuple[int | None, tuple[int, int] | None]:
        nid = self.nids[self._at]
        self._at += 1
        return nid, (self.state.get((nid, w.key)) if nid is not None else None)

    def insert(self, conn: Any, w: ItemWrite, nid: int, now: float, expires: float | None) -> tuple[int, int]:
        item_id, self._next = self._next, self._next + 1
        self._inserts.append((item_id, *item_row(w, nid, self._uid(w.namespace, w.key), now, expires)))
        self.state[(nid, w.key)] = (item_id, len(w.vectors))
        return item_id, 0

    def update(self, w: ItemWrite, item_id: int, now: float, expires: float | None, *, had_vectors: bool) -> None:
        """Replace ``item_id``'s value; its old filter rows (and vectors, if it had any) go at `flush()`."""
        self._updates.append((w.value_json, now, now, expires, w.ttl_minutes, len(w.vectors), now, item_id))
        self._cleared.append(item_id)
        if had_vectors:
            self._had_vectors.append(item_id)

    def flush(self, conn: Any, record: Callable[[Any, list[int]], None] | None = None) -> None:
        """Write the item rows gathered so far, before their filter, vector and keyword rows go in.

        ``record(conn, item ids)`` keeps the versions the updates end (the history), before they change.
        """
        if record is not None and self._updates:
            record(conn, [u[-1] for u in self._updates])
        if self._inserts:
            conn.executemany(_INSERT, self._inserts)
            self._inserts = []
        if self._updates:
            conn.executemany(_UPDATE, self._updates)
            self._updates = []
        for table, ids in (("fields", self._cleared), ("vectors", self._had_vectors)):
            for start in range(0, len(ids), _CHUNK):
                chunk = tuple(ids[start : start + _CHUNK])
                conn.execute(f"DELETE FROM {table} WHERE item_id IN ({','.join('?' * len(chunk))})", chunk)
        self._cleared = []
        self._had_vectors = []
