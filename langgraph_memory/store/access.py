"""Reads that count: access tracking and TTL refresh without a Chroma write per read.

Every ``get``/``search`` with refresh on notes the items it returned in an
:class:`AccessLog` (in memory, no I/O). A background flusher applies the log
every couple of seconds, and always before a TTL sweep, an archive run and on
``close()``:

* for an embedded data directory, into :class:`AccessTable`, a small SQLite
  file beside the Chroma folder (thousands of rows per transaction). Chroma
  keeps each item's access data as of its last write; readers merge the two
  (latest access, summed counts, latest expiry). A Chroma metadata update costs
  about a millisecond per item here, which a read-heavy agent cannot afford;
* for a Chroma server, into the items' Chroma metadata, so every machine
  using the server sees the same access data.

A crash can lose the last interval of access counts and TTL refreshes, never
a user's write.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from langgraph_memory import _sqlite
from langgraph_memory.store.records import StoredItem

__all__ = ["AccessLog", "AccessTable", "Access"]


@dataclass
class Access:
    """Reads of one item not yet applied: latest time, how many, refreshed expiry."""

    at: float
    count: int
    expires_at: float | None = None

    def merge(self, other: Access) -> None:
        self.at = max(self.at, other.at)
        self.count += other.count
        if other.expires_at is not None:
            self.expires_at = max(self.expires_at or 0.0, other.expires_at)


Pending = dict[str, dict[str, Access]]


class AccessLog:
    """Pending reads per collection: ``{collection: {uid: Access}}``."""

    def __init__(self) -> None:
        self._pending: Pending = {}
        self._lock = threading.Lock()

    def note(self, collection: str, items: Iterable[StoredItem], at: float) -> None:
        """Record one read of each item at ``at`` (refreshing its TTL, if it has one)."""
        with self._lock:
            bucket = self._pending.setdefault(collection, {})
            for it in items:
                acc = Access(at, 1, at + it.ttl_minutes * 60.0 if it.ttl_minutes else None)
                uid = it.uid  # a hash, computed on each access of the property
                seen = bucket.get(uid)
                if seen is None:
                    bucket[uid] = acc
                else:
                    seen.merge(acc)

    def take(self) -> Pending:
        """Remove and return everything pending."""
        with self._lock:
            pending, self._pending = self._pending, {}
        return pending

    def give_back(self, pending: Pending) -> None:
        """Re-queue reads whose flush failed, merged with newer ones."""
        with self._lock:
            for collection, bucket in pending.items():
                mine = self._pending.setdefault(collection, {})
                for uid, acc in bucket.items():
                    if uid in mine:
                        mine[uid].merge(acc)
                    else:
                        mine[uid] = acc

    def __bool__(self) -> bool:
        with self._lock:
            return any(self._pending.values())


class AccessTable:
    """Applied reads of an embedded data directory, in SQLite (WAL; safe across processes)."""

    def __init__(self, path: Path, *, timeout: float = 30.0) -> None:
        self._conn = _sqlite.connect(path, timeout=timeout)
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS access ("
            " collection TEXT NOT NULL, uid TEXT NOT NULL, last_accessed REAL NOT NULL,"
            " count INTEGER NOT NULL, expires_at REAL, PRIMARY KEY (collection, uid)) WITHOUT ROWID"
        )
        self._lock = threading.Lock()

    def apply(self, pending: Pending) -> int:
        """Add pending reads; return how many items were touched."""
        rows = [
            (collection, uid, acc.at, acc.count, acc.expires_at)
            for collection, bucket in pending.items()
            for uid, acc in bucket.items()
        ]
        if not rows:
            return 0
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "INSERT INTO access (collection, uid, last_accessed, count, expires_at) VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT (collection, uid) DO UPDATE SET"
                    " last_accessed = max(last_accessed, excluded.last_accessed),"
                    " count = count + excluded.count,"
                    " expires_at = CASE WHEN excluded.expires_at IS NULL THEN expires_at"
                    "   ELSE max(coalesce(expires_at, 0), excluded.expires_at) END",
                    rows,
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return len(rows)

    def merge_into(self, collection: str, items: list[StoredItem]) -> None:
        """Fold applied reads into items decoded from Chroma (in place)."""
        if not items:
            return
        by_uid = {it.uid: it for it in items}
        uids = list(by_uid)
        with self._lock:
            for start in range(0, len(uids), 500):
                chunk = uids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for uid, last, count, expires in self._conn.execute(
                    f"SELECT uid, last_accessed, count, expires_at FROM access WHERE collection = ? AND uid IN ({marks})",
                    (collection, *chunk),
                ):
                    it = by_uid[uid]
                    it.last_accessed_at = max(it.last_accessed_at, last)
                    it.access_count += count
                    if expires is not None and it.expires_at is not None:
                        it.expires_at = max(it.expires_at, expires)

    def forget(self, collection: str, uids: Iterable[str]) -> None:
        """Drop the reads of deleted items, so a later item with the same key starts afresh."""
        ids = list(uids)
        if not ids:
            return
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for start in range(0, len(ids), 500):
                    chunk = ids[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    self._conn.execute(f"DELETE FROM access WHERE collection = ? AND uid IN ({marks})", (collection, *chunk))
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self._lock:
            self._conn.close()
