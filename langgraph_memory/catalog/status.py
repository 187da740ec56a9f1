"""Retired and superseded items in the catalog (``deleted_at`` and ``superseded_by``, for every item).

A retired item (a soft delete) or a superseded one (replaced by a newer item)
stays in the catalog, readable by key, but searches hide it unless asked to
include it, and the archive job may move it out early. The status is a row
of ``item_status`` keyed by the item's uid and its ``created_at``: it holds
through updates of the item and through an archive-and-restore round trip
(both keep ``created_at``), and stops applying when the key is deleted and
put again (a new item, with a new ``created_at``).

Every change bumps ``meta.status_version`` in the same transaction, so a
process can keep the hidden set in memory and reread it only after a change
(`HiddenItems`), from any process.

    >>> import tempfile, pathlib
    >>> from langgraph_memory.catalog import Catalog
    >>> cat = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> ref = StatusTarget(("research",), "f1", "research_findings", created_at=1.0)
    >>> with cat.write() as conn:
    ...     _ = mark(conn, [ref], "retired", reason="wrong data", now=2.0)
    >>> with cat.read() as conn:
    ...     get(conn, [ref.uid])[ref.uid].status
    'retired'
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from langgraph_memory.catalog import history as _history
from langgraph_memory.catalog.connection import Sql, both
from langgraph_memory.catalog.item_rows import chunked, get_items, item_uid, join_ns, rows_in, split_ns

__all__ = [
    "VERSION_KEY",
    "Status",
    "ItemStatus",
    "StatusTarget",
    "HiddenItems",
    "targets",
    "mark",
    "clear",
    "get",
    "ensure",
    "adopt",
    "hidden",
    "of_collection",
    "live_counts",
    "version",
]

Status = Literal["retired", "superseded"]
STATUSES: tuple[str, ...] = ("retired", "superseded")
_VERSION_KEY = "status_version"
#: The meta key of `version()` (read with other heads by `scope.planning_read()`).
VERSION_KEY = _VERSION_KEY
_COLS = "uid, collection, ns, key, item_created_at, status, reason, superseded_by, superseded_by_ns, changed_at"
_MARKS = ", ".join(["?"] * 10)
# One status per item (its uid): a new one replaces it.
_PUT = Sql(
    f"INSERT OR REPLACE INTO item_status({_COLS}) VALUES ({_MARKS})",
    f"INSERT INTO item_status({_COLS}) VALUES ({_MARKS.replace('?', '%s')}) ON CONFLICT (uid) DO UPDATE SET "
    "collection = excluded.collection, ns = excluded.ns, key = excluded.key, "
    "item_created_at = excluded.item_created_at, status = excluded.status, reason = excluded.reason, "
    "superseded_by = excluded.superseded_by, superseded_by_ns = excluded.superseded_by_ns, "
    "changed_at = excluded.changed_at",
)
# The version after a status change: from the change's instant, or from the version it ends if that began later.
_NEXT_VERSION = Sql(
    f"UPDATE items SET valid_from = {_history.START_AFTER.sqlite} WHERE id = ?",
    f"UPDATE items SET valid_from = {_history.START_AFTER.pg} WHERE id = %s",
)
_ADD = Sql(
    f"INSERT OR IGNORE INTO item_status({_COLS}) VALUES ({_MARKS})",
    f"INSERT INTO item_status({_COLS}) VALUES ({_MARKS.replace('?', '%s')}) ON CONFLICT DO NOTHING",
)


@dataclass(frozen=True)
class ItemStatus:
    """Why an item is hidden from searches: ``retired`` (soft-deleted) or ``superseded``.

    ``superseded_by`` is the key (id) of the item that replaced it, in
    ``superseded_by_namespace``; a retired item that had been superseded
    keeps both. ``changed_at`` is when the status was set.
    """

    status: Status
    reason: str | None
    namespace: tuple[str, ...]
    key: str
    collection: str
    changed_at: datetime
    superseded_by: str | None = None
    superseded_by_namespace: tuple[str, ...] | None = None
    #: the ``created_at`` of the item the status applies to (epoch seconds).
    item_created_at: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (the archive stores it in the item's line)."""
        return {
            "status": self.status,
            "reason": self.reason,
            "superseded_by": self.superseded_by,
            "superseded_by_namespace": list(self.superseded_by_namespace) if self.superseded_by_namespace else None,
            "changed_at": self.changed_at.timestamp(),
            "item_created_at": self.item_created_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], namespace: tuple[str, ...], key: str, collection: str) -> ItemStatus:
        """The inverse of `as_dict()`, for the item ``(namespace, key)`` of ``collection``."""
        by_ns = data.get("superseded_by_namespace")
        return cls(
            status=data["status"],
            reason=data.get("reason"),
            namespace=tuple(namespace),
            key=key,
            collection=collection,
            changed_at=datetime.fromtimestamp(float(data.get("changed_at") or 0.0), tz=UTC),
            superseded_by=data.get("superseded_by"),
            superseded_by_namespace=tuple(by_ns) if by_ns else None,
            item_created_at=float(data.get("item_created_at") or 0.0),
        )


@dataclass(frozen=True)
class StatusTarget:
    """An item whose status is set: where it lives and the ``created_at`` that identifies this incarnation."""

    namespace: tuple[str, ...]
    key: str
    collection: str
    created_at: float

    @property
    def uid(self) -> str:
        return item_uid(self.namespace, self.key)


def _row(row: Sequence[Any]) -> ItemStatus:
    return ItemStatus(
        status=row[5],
        reason=row[6],
        namespace=split_ns(row[2]),
        key=row[3],
        collection=row[1],
        changed_at=datetime.fromtimestamp(float(row[9]), tz=UTC),
        superseded_by=row[7],
        superseded_by_namespace=split_ns(row[8]) if row[8] is not None else None,
        item_created_at=float(row[4]),
    )


def _bump(conn: sqlite3.Connection) -> None:
    conn.execute(
        both(
            conn,
            "INSERT INTO meta(key, value) VALUES (?, '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)",
        ),
        (_VERSION_KEY,),
    )


def version(conn: sqlite3.Connection) -> int:
    """How many status changes the catalog has seen (0 for none)."""
    row = conn.execute(both(conn, "SELECT value FROM meta WHERE key = ?"), (_VERSION_KEY,)).fetchone()
    return int(row[0]) if row else 0


def targets(
    conn: sqlite3.Connection,
    keys: Sequence[tuple[tuple[str, ...], str]],
    collection_of: Callable[[tuple[str, ...]], str],
) -> dict[tuple[tuple[str, ...], str], StatusTarget]:
    """The live items among ``keys`` as status targets (keys not live are left out).

    ``collection_of`` names the collection of a namespace (the store's registry decides).
    """
    found = get_items(conn, keys)
    return {
        k: StatusTarget(it.namespace, it.key, collection_of(it.namespace), it.created_at) for k, it in found.items()
    }


# ---------------------------------------------------------------------- writes


def mark(
    conn: sqlite3.Connection,
    targets: Iterable[StatusTarget],
    status: Status,
    *,
    reason: str | None,
    now: float,
    superseded_by: tuple[tuple[str, ...], str] | None = None,
) -> list[ItemStatus]:
    """Set ``status`` on each target, inside the caller's write transaction; return the new statuses.

    Retiring keeps a recorded ``superseded_by``; superseding a retired item
    records the replacement and leaves it retired (retired is the stronger
    state: the item is gone, not merely outdated).
    """
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    targets = list(targets)
    old = get(conn, [t.uid for t in targets])
    by_ns, by_key = (join_ns(superseded_by[0]), superseded_by[1]) if superseded_by else (None, None)
    rows = []
    for t in targets:
        prev = old.get(t.uid)
        if prev is not None and prev.item_created_at != t.created_at:
            prev = None  # a row left by an earlier item under this key
        new_status = "retired" if prev is not None and prev.status == "retired" else status
        keep_by = prev is not None and by_key is None and prev.superseded_by is not None
        rows.append(
            (
                t.uid,
                t.collection,
                join_ns(t.namespace),
                t.key,
                t.created_at,
                new_status,
                reason if reason is not None or prev is None else prev.reason,
                prev.superseded_by if keep_by else by_key,  # type: ignore[union-attr]
                join_ns(prev.superseded_by_namespace or ()) if keep_by else by_ns,  # type: ignore[union-attr]
                now,
            )
        )
    if rows:
        _new_versions(
            conn, [(t.uid, t.created_at) for t in targets], "retire" if status == "retired" else "supersede", now
        )
        conn.executemany(_PUT.of(conn), rows)
        _bump(conn)
    return [_row(r) for r in rows]


def _new_versions(
    conn: sqlite3.Connection,
    items: Sequence[tuple[str, float]],
    change: _history.Change,
    now: float,
    *,
    deleting: bool = False,
) -> None:
    """A status change ends the version of each live item ``(uid, created_at)``: keep it, start the next at ``now``.

    A version that began after ``now`` (stamped by a clock ahead of this one) is not kept, and the next one begins
    when it began (`history.START_AFTER`), never before its value was written nor inside a kept version.
    ``deleting``: the items are deleted later in the transaction; their next version starts after every instant,
    so the delete keeps no second copy (`history.record` keeps only versions that began before their end).
    """
    ids = [
        int(r[0])
        for uid, created in items
        for r in conn.execute(both(conn, "SELECT id FROM items WHERE uid = ? AND created_at = ?"), (uid, created))
    ]
    if ids:
        _history.record(conn, ids, change, now)
        start = _history.NEVER if deleting else now
        conn.executemany(_NEXT_VERSION.of(conn), [(start, i) for i in ids])


def _rows(statuses: Iterable[ItemStatus]) -> list[tuple[Any, ...]]:
    return [
        (
            item_uid(s.namespace, s.key),
            s.collection,
            join_ns(s.namespace),
            s.key,
            s.item_created_at,
            s.status,
            s.reason,
            s.superseded_by,
            join_ns(s.superseded_by_namespace) if s.superseded_by_namespace is not None else None,
            s.changed_at.timestamp(),
        )
        for s in statuses
    ]


def ensure(conn: sqlite3.Connection, statuses: Iterable[ItemStatus]) -> int:
    """Write statuses the catalog does not hold yet (restoring an archive into another catalog); return how many."""
    rows = _rows(statuses)
    if not rows:
        return 0
    cur = conn.executemany(_ADD.of(conn), rows)
    added = max(cur.rowcount, 0)
    if added:
        _bump(conn)
    return added


def adopt(conn: sqlite3.Connection, statuses: Iterable[ItemStatus], *, dry_run: bool = False) -> list[ItemStatus]:
    """Write statuses brought from another catalog (a share bundle); return those written (or, ``dry_run``, to write).

    Each status names the item it applies to (uid and ``created_at``). It is
    written unless this catalog already holds a status for that same item:
    the catalog's own word stands, so adopting never clears or changes a
    status here. A row left by an earlier item under the key (another
    ``created_at``) is replaced.
    """
    statuses = list(statuses)
    held = get(conn, [item_uid(s.namespace, s.key) for s in statuses])
    fresh = []
    for s in statuses:
        here = held.get(item_uid(s.namespace, s.key))
        if here is None or here.item_created_at != s.item_created_at:
            fresh.append(s)
    if fresh and not dry_run:
        conn.executemany(_PUT.of(conn), _rows(fresh))
        _bump(conn)
    return fresh


def clear(conn: sqlite3.Connection, uids: Sequence[str], *, record: bool = True, now: float | None = None) -> int:
    """Remove the status of ``uids`` (reinstate, or a hard delete); return how many rows went.

    A reinstated live item gets a new version from ``now`` (default: the clock) on; the history keeps the retired
    or superseded one. A hard delete passes ``record=False`` and deletes the items in the same transaction: their
    versions are kept here, with the status they had, as ended by the delete (which then finds nothing left to keep).
    """
    held = get(conn, list(uids))
    if held:
        live = [(u, st.item_created_at) for u, st in held.items()]
        at = time.time() if now is None else now
        _new_versions(conn, live, "restore" if record else "delete", at, deleting=not record)
    removed = 0
    for chunk in chunked(list(uids)):
        marks = ",".join("?" * len(chunk))
        removed += conn.execute(both(conn, f"DELETE FROM item_status WHERE uid IN ({marks})"), tuple(chunk)).rowcount
    if removed:
        _bump(conn)
    return removed


# ----------------------------------------------------------------------- reads


def get(conn: sqlite3.Connection, uids: Sequence[str]) -> dict[str, ItemStatus]:
    """The status rows of ``uids`` (whichever item incarnation they were set on)."""
    return {
        row[0]: _row(row) for row in rows_in(conn, f"SELECT {_COLS} FROM item_status WHERE uid IN ({{marks}})", uids)
    }


def hidden(conn: sqlite3.Connection) -> dict[str, float]:
    """Every status row as ``{uid: created_at of the item it applies to}``."""
    return {
        uid: float(created) for uid, created in conn.execute(both(conn, "SELECT uid, item_created_at FROM item_status"))
    }


def of_collection(conn: sqlite3.Connection, collection: str) -> dict[str, ItemStatus]:
    """The statuses of one collection's live items, by uid (rows of archived or deleted items left out)."""
    cols = ", ".join(f"s.{c.strip()}" for c in _COLS.split(","))
    return {
        row[0]: _row(row)
        for row in conn.execute(
            both(
                conn,
                f"SELECT {cols} FROM item_status s JOIN items i ON i.uid = s.uid AND i.created_at = s.item_created_at "
                "WHERE s.collection = ?",
            ),
            (collection,),
        )
    }


def live_counts(conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
    """``{collection: {status: n}}`` over items still in the catalog (the row applying to them)."""
    out: dict[str, dict[str, int]] = {}
    for coll, status, n in conn.execute(
        both(
            conn,
            "SELECT s.collection, s.status, count(*) FROM item_status s "
            "JOIN items i ON i.uid = s.uid AND i.created_at = s.item_created_at GROUP BY s.collection, s.status",
        )
    ):
        out.setdefault(coll, {})[status] = int(n)
    return out


class HiddenItems:
    """The hidden set of one catalog, cached per process and reread only after a status change.

    ``is_hidden(item)`` is true for a retired or superseded item. The cache
    is checked against ``meta.status_version`` once per `snapshot()`, so
    a status set by another process is seen by the next search.
    """

    def __init__(self) -> None:
        self._version = -1
        self._uids: dict[str, float] = {}

    def snapshot(self, conn: sqlite3.Connection, known_version: int | None = None) -> dict[str, float]:
        """``{uid: created_at}`` of hidden items, current as of this call.

        ``known_version``: `version()` as just read in the same transaction (saves reading it again).
        """
        v = version(conn) if known_version is None else known_version
        if v != self._version:
            self._uids = hidden(conn)
            self._version = v
        return self._uids
