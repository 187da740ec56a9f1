"""Past versions of items: every value, status and vector an item had before a change ended it.

A change to an item (a put over it, a delete, retire, supersede, reinstate,
TTL expiry, an archive move, a bundle import replacing it) first copies the
version it ends into ``item_history``, in the same transaction as the change,
so the catalog never holds a change without its history row nor a history row
without its change. The current version stays in ``items``; its
``valid_from`` says since when it is current (NULL for an item last written
before the catalog kept history: it counts from its ``updated_at``).

A version row holds what a read as of its time needs: the value, the
item's ``created_at``/``updated_at``, its status then (NULL, ``retired`` or
``superseded``), ``valid_from`` <= t < ``valid_to``, what ended it
(`CHANGES`), and the thread and run of the LangGraph run that made the change
(`origin()`; None outside a graph). Its vectors (float32 bytes, as
``vectors``) stay in its row when it has one, else go to ``history_vectors``,
so a search as of its time scores it exactly. The versions of a key form a
chain, each naming the one before it (``prev_id``) from the newest (the item's
``history_id``; once its item is deleted, ``history_heads``), so keeping a
version inserts into no index.

    >>> import tempfile, pathlib
    >>> from langgraph_memory.catalog import Catalog
    >>> from langgraph_memory.catalog.items import ItemWrite, NamespaceIds, write_items, item_uid
    >>> cat = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> names = NamespaceIds()
    >>> for at, text in ((1.0, "first"), (2.0, "second")):
    ...     with cat.write() as conn:
    ...         _ = write_items(conn, [ItemWrite(("notes",), "k", "memories", '{"t": "%s"}' % text)], names, now=at)
    >>> with cat.read() as conn:
    ...     [(v.value, v.valid_from, v.valid_to, v.change) for v in versions(conn, item_uid(("notes",), "k"))]
    [({'t': 'first'}, 1.0, 2.0, 'put')]
"""

from __future__ import annotations

import functools
import json
import sqlite3
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langgraph_memory.catalog.connection import POSTGRESQL, Sql, both, dialect_of

try:
    from langchain_core.runnables.config import var_child_runnable_config as _RUN_CONFIG
except ImportError:  # no LangChain: no run to come from
    _RUN_CONFIG = None  # type: ignore[assignment]

__all__ = [
    "CHANGES",
    "NEVER",
    "Change",
    "PastVersion",
    "origin",
    "record",
    "POINT",
    "START_AFTER",
    "KEEP_VERSION_PROCEDURE",
    "keep_heads",
    "link_chains",
    "versions",
    "records",
    "adopt",
    "version_at",
    "PRUNED_KEY",
    "read",
    "namespaces_at",
    "prune",
    "count",
]

Change = Literal["put", "delete", "retire", "supersede", "restore", "ttl", "archive"]
#: What may end a version: a put over it (or a bundle import replacing it), a delete, a retire, a supersede, a
#: reinstate (``restore``: the status cleared), TTL expiry, or the archive job moving the item out.
CHANGES: tuple[str, ...] = ("put", "delete", "retire", "supersede", "restore", "ttl", "archive")

#: A ``valid_from`` after every instant: an item about to be deleted in the same transaction, whose version
#: was kept already (`status.clear`).
NEVER = 1e300
# SQLite's default limit on host parameters is 32766; stay well under it.
_CHUNK = 900

_COLS = (
    "item_id, uid, ns, key, collection, value, created_at, updated_at, expires_at, status, valid_from, valid_to,"
    " change, thread_id, run_id, n_vectors"
)
# An item with one vector (most) keeps it in its version's row: one statement per change on SQLite, where a
# second statement copying it to history_vectors made a put replacing a value ~20% slower, against ~11% (median
# of 5 interleaved runs, 3,000 items, 2 loaded cores).
_WRITE_COLS = f"{_COLS}, vec, prev_id"
# The newest past version of an item's key, where the chain of its versions starts (see `versions()`): the
# item's ``history_id``, else the head its key kept when its last item went (`keep_heads()`, and the migration).
_HEAD_OF_ITEM = "coalesce(i.history_id, (SELECT hh.history_id FROM history_heads hh WHERE hh.uid = i.uid))"
# The versions the items of ``{marks}`` have now, with the status applying to them (a status row of an earlier
# item under the key has another created_at and does not apply), each linked to the version before it.
_SELECT_CURRENT = (
    "SELECT i.id, i.uid, n.ns, i.key, n.collection, i.value, i.created_at, i.updated_at, i.expires_at,"
    " (SELECT s.status FROM item_status s WHERE s.uid = i.uid AND s.item_created_at = i.created_at),"
    " coalesce(i.valid_from, i.updated_at), {ended}, i.n_vectors,"
    f" CASE WHEN i.n_vectors = 1 THEN (SELECT v.vec FROM vectors v WHERE v.item_id = i.id) END, {_HEAD_OF_ITEM}"
    " FROM items i JOIN namespaces n ON n.id = i.ns_id WHERE i.id IN ({marks})"
)
# A version ended at the instant it began (two changes in one transaction) was never visible: not kept. Nor is one
# that began after the change ending it (stamped by a clock behind the one that began it): see `START_AFTER`.
_KEPT = "coalesce(i.valid_from, i.updated_at) < ?"
#: ``valid_from`` of the version a change stamped ``?`` begins on a live item (in an UPDATE of ``items``): the
#: change's instant, or the start of the version it ends when that is later (a clock behind the one that wrote
#: it), so that versions of a key never overlap nor begin before their value was written.
START_AFTER = Sql("max(?, coalesce(valid_from, updated_at))", "greatest(%s, coalesce(valid_from, updated_at))")
_RECORD = f"INSERT INTO item_history({_WRITE_COLS}) {_SELECT_CURRENT} AND {_KEPT}"
# Each item then points at the version just kept. SQLite gave the rows of one statement consecutive ids (one
# writer; the next id is the highest plus one) and says the last; on PostgreSQL `KEEP_VERSION_PROCEDURE` points one
# item at its version, and the statement keeping several returns theirs.
_NEW_HEAD = "UPDATE items SET history_id = ? WHERE id = ?"
_NEW_HEADS = (
    "UPDATE items SET history_id = h.id FROM item_history h WHERE h.id BETWEEN ? AND ? AND items.id = h.item_id"
)
#: ``history_id``'s new value in an item's own UPDATE after `record(..., point=False)` (its parameter: what that
#: returned). On PostgreSQL the UPDATE sees the row as it was, so the INSERT's guard says whether it kept a version,
#: and the session's sequence gives the id it kept.
#: A second UPDATE of the row just for the pointer cost each put a second row version (about 150 of the ~800
#: bytes of WAL that keeping its version added, PostgreSQL, 10,000 items).
POINT = Sql(
    "coalesce(?, history_id)",
    "CASE WHEN coalesce(valid_from, updated_at) < %s THEN currval(pg_get_serial_sequence('item_history', 'id'))"
    " ELSE history_id END",
)
#: PostgreSQL keeps one item's version with this procedure (created by the catalog's schema, version 13): sent as
#: text, the ``INSERT ... SELECT`` (a join, three subqueries) was planned anew for every change, and planning it
#: was most of what keeping a version cost a put (0.15-0.23 ms planned against 0.06-0.10 ms run). PL/pgSQL keeps
#: its statements' plans for the server session, with nothing the client tracks, so it works behind a
#: transaction-mode pooler, where a session's prepared statements do not follow the client. Its names resolve
#: through the caller's ``search_path``, as the catalog's other statements do. ``p_point``: the item then points
#: at the version kept (else the caller's own UPDATE of the item does, with `POINT`).
KEEP_VERSION_PROCEDURE = (
    "CREATE OR REPLACE PROCEDURE lgm_keep_version(p_item BIGINT, p_ended DOUBLE PRECISION, p_change TEXT,"
    " p_thread TEXT, p_run TEXT, p_point BOOLEAN) LANGUAGE plpgsql AS $lgm$ DECLARE kept BIGINT; BEGIN"
    f" INSERT INTO item_history({_WRITE_COLS})"
    f" {_SELECT_CURRENT.format(ended='p_ended, p_change, p_thread, p_run', marks='p_item')}"
    f" AND {_KEPT.replace('?', 'p_ended')} RETURNING id INTO kept;"
    " IF p_point AND kept IS NOT NULL THEN UPDATE items SET history_id = kept WHERE id = p_item; END IF;"
    " END $lgm$"
)
# No RETURNING: the connection sends it with the transaction's next statement (no round trip of its own). A bound
# True is 1 on this connection (flags are integers), hence the cast.
_KEEP_VERSION = "CALL lgm_keep_version(%s, %s, %s, %s, %s, %s::boolean)"
_RECORD_AND_HEADS_PG = (
    "WITH kept AS ({record} RETURNING id, item_id)"
    " UPDATE items SET history_id = kept.id FROM kept WHERE items.id = kept.item_id"
)
# The vectors of a version with several: the item points at it now, unless an earlier change of the same
# transaction at the same instant kept the version (then its vectors are there already).
_COPY_VECTORS = (
    "INSERT INTO history_vectors(history_id, idx, path, vec) SELECT h.id, v.idx, v.path, v.vec"
    " FROM items i JOIN item_history h ON h.id = i.history_id AND h.valid_to = ?"
    " JOIN vectors v ON v.item_id = i.id"
    " WHERE i.id IN ({marks}) AND h.n_vectors > 1"
    " AND NOT EXISTS (SELECT 1 FROM history_vectors x WHERE x.history_id = h.id)"
)


@functools.lru_cache(maxsize=64)
def _statements(n: int) -> tuple[Sql, Sql, str]:
    """`_RECORD`, `_COPY_VECTORS` and PostgreSQL's record-and-point for ``n`` item ids, written once per size: most
    changes are of one item, and formatting and translating the statement anew for each took about 6 of
    `record()`'s 22 us (loaded machine)."""
    marks = ",".join("?" * n)
    keep = Sql.both(_RECORD.format(ended="?, ?, ?, ?", marks=marks))
    return keep, Sql.both(_COPY_VECTORS.format(marks=marks)), _RECORD_AND_HEADS_PG.format(record=keep.pg)


def origin() -> tuple[str | None, str | None]:
    """``(thread_id, run_id)`` of the LangGraph run this code runs in, from its config; ``(None, None)`` outside one.

    A node's config carries the thread; the run's id is there when the LangGraph server runs the graph (it puts
    ``run_id`` in the run's metadata) or the caller put one in ``configurable`` or ``metadata`` (a local
    ``invoke(..., {"run_id": ...})`` names the callbacks' root run only, which nodes do not see).
    """
    # LangGraph's get_config() reads this variable and raises outside a run: read it directly, since raising and
    # catching cost every change outside a graph 2-7 us (of a put's ~500).
    config = _RUN_CONFIG.get() if _RUN_CONFIG is not None else None
    if not config:
        return None, None
    conf = config.get("configurable") or {}
    meta = config.get("metadata") or {}
    thread = conf.get("thread_id") or meta.get("thread_id")
    run = conf.get("run_id") or meta.get("run_id")
    return (None if thread is None else str(thread)), (None if run is None else str(run))


def record(
    conn: sqlite3.Connection,
    item_ids: Sequence[int],
    change: Change,
    now: float,
    *,
    several: bool = True,
    point: bool = True,
) -> Any:
    """Copy the current versions of ``item_ids`` (rows of ``items``) into the history, ended at ``now`` by ``change``.

    Call inside the write transaction that makes the change, before it changes the rows. Each version is linked
    to the one before it, and the item points at it (``items.history_id``). ``several=False`` says that none of
    them has more than one vector (a caller that read their rows knows): their vectors then go with their rows
    alone, and the statement copying the others' is not run. ``point=False`` (one item) leaves the pointer to
    the caller's own UPDATE of the item, run next: it sets ``history_id`` to `POINT` with the value returned.
    """
    ids = list(dict.fromkeys(map(int, item_ids)))
    if not ids:
        return None
    thread, run = origin()
    pg = dialect_of(conn) == POSTGRESQL
    point = point or several or len(ids) > 1  # the vectors' copy finds the version through the pointer
    head: Any = now if pg else None
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        keep, copy_vectors, keep_and_point = _statements(len(chunk))
        params = (now, change, thread, run, *chunk, now)
        if not pg:
            cur = conn.execute(keep.sqlite, params)
            last, n = int(cur.lastrowid or 0), cur.rowcount
            if n == 1 and len(chunk) == 1:
                head = last
                if point:
                    conn.execute(_NEW_HEAD, (last, chunk[0]))
            elif n > 0:
                conn.execute(_NEW_HEADS, (last - n + 1, last))
        elif len(chunk) == 1:
            conn.execute(_KEEP_VERSION, (chunk[0], now, change, thread, run, point))
        else:
            conn.execute(keep_and_point, params)
        if several:
            conn.execute(copy_vectors.of(conn), (now, *chunk))
    return head


# Each version's predecessor under its key, and each key's newest version (the items' pointers stay NULL: a NULL
# points at the key's head): the chains of a catalog that kept history before them (schema version 12).
_LINK_CHAINS = (
    "UPDATE item_history SET prev_id = l.prev FROM (SELECT id, lag(id) OVER (PARTITION BY uid ORDER BY valid_to, id)"
    " AS prev FROM item_history) AS l WHERE l.id = item_history.id AND l.prev IS NOT NULL",
    "INSERT INTO history_heads(uid, history_id) SELECT uid, id FROM (SELECT uid, id, row_number() OVER"
    " (PARTITION BY uid ORDER BY valid_to DESC, id DESC) AS n FROM item_history) AS r WHERE n = 1"
    " ON CONFLICT(uid) DO UPDATE SET history_id = excluded.history_id",
)


def link_chains(conn: Any) -> None:
    """Link the versions a catalog kept before schema version 12 into chains (run by both catalogs' migrations)."""
    for stmt in _LINK_CHAINS:
        conn.execute(stmt)


def keep_heads(conn: sqlite3.Connection, item_ids: Sequence[int]) -> None:
    """Before the rows of ``item_ids`` are deleted: their keys keep where their chains of versions start.

    A key put again later gets a new item row, whose first kept version links to this head (`record()`).
    """
    for start in range(0, len(item_ids), _CHUNK):
        chunk = tuple(item_ids[start : start + _CHUNK])
        conn.execute(
            both(
                conn,
                "INSERT INTO history_heads(uid, history_id) SELECT uid, history_id FROM items"
                f" WHERE id IN ({','.join('?' * len(chunk))}) AND history_id IS NOT NULL"
                " ON CONFLICT(uid) DO UPDATE SET history_id = excluded.history_id",
            ),
            chunk,
        )


@dataclass
class PastVersion:
    """One past version of an item as the history holds it (epoch seconds)."""

    item_id: int
    uid: str
    namespace: tuple[str, ...]
    key: str
    collection: str
    value: dict[str, Any]
    created_at: float
    updated_at: float
    expires_at: float | None
    status: str | None
    valid_from: float
    valid_to: float
    change: str
    thread_id: str | None
    run_id: str | None
    n_vectors: int
    #: the history row's id (its order among versions ended at the same instant).
    id: int = 0


def _version(row: Sequence[Any]) -> PastVersion:
    ns = row[3]
    return PastVersion(
        item_id=int(row[1]),
        uid=row[2],
        namespace=tuple(ns.split("\x1f")) if ns else (),
        key=row[4],
        collection=row[5],
        value=json.loads(row[6]),
        created_at=float(row[7]),
        updated_at=float(row[8]),
        expires_at=None if row[9] is None else float(row[9]),
        status=row[10],
        valid_from=float(row[11]),
        valid_to=float(row[12]),
        change=row[13],
        thread_id=row[14],
        run_id=row[15],
        n_vectors=int(row[16]),
        id=int(row[0]),
    )


_READ = f"SELECT id, {_COLS} FROM item_history"
# An item's versions without an index of the history by item (which cost every change a B-tree insert at a random
# place: 1.5 of the 2.7 pages the history added to a put's commit): each version names the one before it
# (``prev_id``), and the newest is the item's ``history_id``, else its key's head (as in `_HEAD_OF_ITEM`); the
# walk reads one row per version.
_CHAIN = (
    "WITH RECURSIVE chain(id) AS ("
    " SELECT coalesce(i.history_id, (SELECT hh.history_id FROM history_heads hh WHERE hh.uid = k.uid))"
    " FROM (SELECT CAST(? AS TEXT) AS uid) AS k LEFT JOIN items i ON i.uid = k.uid"
    " UNION SELECT h.prev_id FROM item_history h JOIN chain c ON h.id = c.id WHERE h.prev_id IS NOT NULL)"
    f" {_READ} WHERE id IN (SELECT id FROM chain)"
)


def versions(conn: sqlite3.Connection, uid: str) -> list[PastVersion]:
    """The past versions of the item ``uid`` (every incarnation of its key), newest first."""
    rows = conn.execute(both(conn, f"{_CHAIN} ORDER BY valid_to DESC, id DESC"), (uid,))
    return [_version(r) for r in rows]


def version_at(conn: sqlite3.Connection, uid: str, at: float) -> PastVersion | None:
    """The past version of the item ``uid`` that was current at ``at``, if one was."""
    row = conn.execute(
        both(conn, f"{_CHAIN} AND valid_to > ? AND valid_from <= ? ORDER BY valid_to DESC, id DESC"),
        (uid, at, at),
    ).fetchone()
    return None if row is None else _version(row)


def records(conn: sqlite3.Connection, uid: str) -> list[dict[str, Any]]:
    """The past versions of ``uid`` as plain data with their vectors (float32 bytes), oldest first, to carry elsewhere.

    The inverse of `adopt()`.
    """
    out: list[dict[str, Any]] = []
    for v in reversed(versions(conn, uid)):
        rec = {
            "value": v.value,
            "created_at": v.created_at,
            "updated_at": v.updated_at,
            "expires_at": v.expires_at,
            "status": v.status,
            "valid_from": v.valid_from,
            "valid_to": v.valid_to,
            "change": v.change,
            "thread_id": v.thread_id,
            "run_id": v.run_id,
            "vectors": [],
        }
        if v.n_vectors == 1:
            row = conn.execute(both(conn, "SELECT vec FROM item_history WHERE id = ?"), (v.id,)).fetchone()
            rec["vectors"] = [bytes(row[0])] if row and row[0] is not None else []
        elif v.n_vectors > 1:
            rec["vectors"] = [
                bytes(r[0])
                for r in conn.execute(
                    both(conn, "SELECT vec FROM history_vectors WHERE history_id = ? ORDER BY idx"), (v.id,)
                )
            ]
        out.append(rec)
    return out


def adopt(
    conn: sqlite3.Connection, uid: str, ns: str, key: str, collection: str, rows: Sequence[dict[str, Any]]
) -> int:
    """Write past versions of the item ``uid`` (``key`` in the namespace ``ns``, joined as stored) from elsewhere.

    ``rows`` as `records()` gives them. A version this history holds already
    (same start, end and change) is skipped, so importing twice adds nothing.
    Its item id is 0: it was never a row of this catalog. The versions join the chain of the key's versions
    (where they are in it does not matter: a read orders them by time). Returns how many were written.
    """
    held = {(v.valid_from, v.valid_to, v.change) for v in versions(conn, uid)}
    live = conn.execute(both(conn, "SELECT history_id FROM items WHERE uid = ?"), (uid,)).fetchone()
    head = live[0] if live is not None else None
    if head is None:
        row = conn.execute(both(conn, "SELECT history_id FROM history_heads WHERE uid = ?"), (uid,)).fetchone()
        head = None if row is None else row[0]
    written = 0
    for r in rows:
        if (float(r["valid_from"]), float(r["valid_to"]), r["change"]) in held:
            continue
        vecs: list[bytes] = list(r.get("vectors") or [])
        cur = conn.execute(
            both(
                conn,
                f"INSERT INTO item_history({_WRITE_COLS}) VALUES ({', '.join('?' * 18)}) RETURNING id",
            ),
            (
                0,
                uid,
                ns,
                key,
                collection,
                json.dumps(r["value"], ensure_ascii=False, separators=(",", ":")),
                float(r["created_at"]),
                float(r["updated_at"]),
                r.get("expires_at"),
                r.get("status"),
                float(r["valid_from"]),
                float(r["valid_to"]),
                r["change"],
                r.get("thread_id"),
                r.get("run_id"),
                len(vecs),
                vecs[0] if len(vecs) == 1 else None,
                head,
            ),
        )
        hid = head = int(cur.fetchone()[0])
        if len(vecs) > 1:
            conn.executemany(
                both(conn, "INSERT INTO history_vectors(history_id, idx, path, vec) VALUES (?, ?, '', ?)"),
                [(hid, i, v) for i, v in enumerate(vecs)],
            )
        written += 1
    if written and live is not None:
        conn.execute(both(conn, "UPDATE items SET history_id = ? WHERE uid = ?"), (head, uid))
    elif written:
        conn.execute(
            both(
                conn,
                "INSERT INTO history_heads(uid, history_id) VALUES (?, ?)"
                " ON CONFLICT(uid) DO UPDATE SET history_id = excluded.history_id",
            ),
            (uid, head),
        )
    return written


#: ``meta`` key given a new random value by every `prune()` that drops versions.
PRUNED_KEY = "history_pruned"


def read(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, PastVersion]:
    """Past versions by history id."""
    out: dict[int, PastVersion] = {}
    for start in range(0, len(ids), _CHUNK):
        chunk = list(ids[start : start + _CHUNK])
        for r in conn.execute(both(conn, f"{_READ} WHERE id IN ({','.join('?' * len(chunk))})"), tuple(chunk)):
            out[int(r[0])] = _version(r)
    return out


def namespaces_at(conn: sqlite3.Connection, at: float, past: Iterable[str]) -> set[tuple[str, ...]]:
    """Namespaces that held at least one item at ``at``: those of ``past`` and those of items current since then.

    ``past`` are the namespaces (as stored, labels joined by ``\x1f``) of the past versions valid at ``at``, which
    the caller has in memory (`past_versions.Moment`): no index of the history serves this read, so that keeping a
    version costs its puts no B-tree insert for it.
    """
    rows = conn.execute(
        both(
            conn,
            "SELECT n.ns FROM namespaces n WHERE n.n_items > 0 AND EXISTS (SELECT 1 FROM items i WHERE i.ns_id = n.id"
            " AND coalesce(i.valid_from, i.updated_at) <= ?)",
        ),
        (at,),
    )
    return {tuple(ns.split("\x1f")) for ns in {r[0] for r in rows}.union(past)}


def prune(
    conn: sqlite3.Connection, *, keep: int | None = None, older_than: float | None = None, dry_run: bool = False
) -> int:
    """Drop past versions beyond the ``keep`` newest of each item, and those that ended before ``older_than``.

    Returns how many versions went (``dry_run``: would go). Either rule may be None (not applied). Each rule reads
    the whole history (no index by end: it would cost every change a B-tree insert; pruning is a maintenance job).
    """
    doomed: list[int] = []
    if older_than is not None:
        doomed.extend(
            int(r[0]) for r in conn.execute(both(conn, "SELECT id FROM item_history WHERE valid_to < ?"), (older_than,))
        )
    if keep is not None:
        # A live item's current version counts as one of the ``keep``: it keeps ``keep - 1`` past versions beside it.
        doomed.extend(
            int(r[0])
            for r in conn.execute(
                both(
                    conn,
                    "SELECT id FROM (SELECT id, uid, row_number() OVER (PARTITION BY uid ORDER BY valid_to DESC, id DESC)"
                    " AS n FROM item_history) AS ranked"
                    " WHERE n > ? - (CASE WHEN EXISTS (SELECT 1 FROM items i WHERE i.uid = ranked.uid) THEN 1 ELSE 0 END)",
                ),
                (int(keep),),
            )
        )
    ids = list(dict.fromkeys(doomed))
    if dry_run:
        return len(ids)
    if ids:  # a random value, not a counter: see `past_versions.moment_stamp()` (and keywords' own version mark)
        conn.execute(
            both(
                conn,
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            ),
            (PRUNED_KEY, uuid.uuid4().hex),
        )
        _relink(conn, set(ids))
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        conn.execute(both(conn, f"DELETE FROM history_vectors WHERE history_id IN ({marks})"), tuple(chunk))
        conn.execute(both(conn, f"DELETE FROM item_history WHERE id IN ({marks})"), tuple(chunk))
    return len(ids)


def _relink(conn: sqlite3.Connection, doomed: set[int]) -> None:
    """Before the versions ``doomed`` go: whatever points at one of them points at its nearest older survivor.

    Reads the whole history, the items' and the heads' pointers (pruning is a maintenance job; no index serves it).
    """
    prev = {int(r[0]): r[1] for r in conn.execute("SELECT id, prev_id FROM item_history")}

    def survivor(hid: int | None) -> int | None:
        while hid is not None and hid in doomed:
            hid = prev.get(hid)
        return hid

    conn.executemany(
        both(conn, "UPDATE item_history SET prev_id = ? WHERE id = ?"),
        [(survivor(p), hid) for hid, p in prev.items() if p in doomed and hid not in doomed],
    )
    for table, key in (("items", "id"), ("history_heads", "uid")):
        moved = [
            (survivor(int(r[1])), r[0])
            for r in conn.execute(f"SELECT {key}, history_id FROM {table} WHERE history_id IS NOT NULL")
            if int(r[1]) in doomed
        ]
        if table == "history_heads":  # a key whose versions all go keeps no head
            gone = [(k,) for hid, k in moved if hid is None]
            conn.executemany(both(conn, "DELETE FROM history_heads WHERE uid = ?"), gone)
            moved = [m for m in moved if m[0] is not None]
        conn.executemany(both(conn, f"UPDATE {table} SET history_id = ? WHERE {key} = ?"), moved)


def count(conn: sqlite3.Connection) -> tuple[int, int]:
    """``(past versions, their vectors)`` the history holds."""
    n = conn.execute(both(conn, "SELECT count(*) FROM item_history")).fetchone()[0]
    v = conn.execute(
        both(
            conn,
            "SELECT (SELECT count(*) FROM history_vectors)"
            " + (SELECT count(*) FROM item_history WHERE n_vectors = 1 AND vec IS NOT NULL)",
        )
    ).fetchone()[0]
    return int(n), int(v)
