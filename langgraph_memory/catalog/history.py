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
so a search as of its time scores it exactly.

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

import dataclasses
import json
import sqlite3
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from langgraph_memory.catalog.connection import POSTGRESQL, both, dialect_of
from langgraph_memory.catalog.keyword_cache import STAMP_SQL

__all__ = [
    "CHANGES",
    "NEVER",
    "Change",
    "PastVersion",
    "origin",
    "record",
    "versions",
    "records",
    "adopt",
    "version_at",
    "Moment",
    "moment_stamp",
    "PRUNED_KEY",
    "PastVersions",
    "Versions",
    "IdSet",
    "KeywordLengths",
    "keyword_lengths",
    "keyword_stamp",
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
_WRITE_COLS = f"{_COLS}, vec"
# The versions the items of ``{marks}`` have now, with the status applying to them (a status row of an earlier
# item under the key has another created_at and does not apply).
_SELECT_CURRENT = (
    "SELECT i.id, i.uid, n.ns, i.key, n.collection, i.value, i.created_at, i.updated_at, i.expires_at,"
    " (SELECT s.status FROM item_status s WHERE s.uid = i.uid AND s.item_created_at = i.created_at),"
    " coalesce(i.valid_from, i.updated_at), ?, ?, ?, ?, i.n_vectors,"
    " CASE WHEN i.n_vectors = 1 THEN (SELECT v.vec FROM vectors v WHERE v.item_id = i.id) END"
    " FROM items i JOIN namespaces n ON n.id = i.ns_id WHERE i.id IN ({marks})"
)
# A version ended at the instant it began (two changes in one transaction) was never visible: not kept.
_RECORD_SQLITE = (
    f"INSERT INTO item_history({_WRITE_COLS}) {_SELECT_CURRENT} AND coalesce(i.valid_from, i.updated_at) < ?"
    " RETURNING id, n_vectors"
)
_COPY_VECTORS = (
    "INSERT INTO history_vectors(history_id, idx, path, vec) SELECT h.id, v.idx, v.path, v.vec"
    " FROM item_history h JOIN vectors v ON v.item_id = h.item_id WHERE h.id IN ({marks})"
)
# PostgreSQL: one statement (one round trip) writes both.
_RECORD_PG = (
    f"WITH h AS (INSERT INTO item_history({_WRITE_COLS}) {_SELECT_CURRENT} AND coalesce(i.valid_from, i.updated_at) < ?"
    " RETURNING id, item_id, n_vectors) INSERT INTO history_vectors(history_id, idx, path, vec)"
    " SELECT h.id, v.idx, v.path, v.vec FROM h JOIN vectors v ON v.item_id = h.item_id WHERE h.n_vectors > 1"
)


def origin() -> tuple[str | None, str | None]:
    """``(thread_id, run_id)`` of the LangGraph run this code runs in, from its config; ``(None, None)`` outside one.

    A node's config carries the thread; the run's id is there when the LangGraph server runs the graph (it puts
    ``run_id`` in the run's metadata) or the caller put one in ``configurable`` or ``metadata`` (a local
    ``invoke(..., {"run_id": ...})`` names the callbacks' root run only, which nodes do not see).
    """
    try:
        from langgraph.config import get_config

        config = get_config()
    except (RuntimeError, ImportError):
        return None, None
    conf = config.get("configurable") or {}
    meta = config.get("metadata") or {}
    thread = conf.get("thread_id") or meta.get("thread_id")
    run = conf.get("run_id") or meta.get("run_id")
    return (None if thread is None else str(thread)), (None if run is None else str(run))


def record(conn: sqlite3.Connection, item_ids: Sequence[int], change: Change, now: float) -> None:
    """Copy the current versions of ``item_ids`` (rows of ``items``) into the history, ended at ``now`` by ``change``.

    Call inside the write transaction that makes the change, before it changes the rows.
    """
    ids = list(dict.fromkeys(int(i) for i in item_ids))
    if not ids:
        return
    thread, run = origin()
    pg = dialect_of(conn) == POSTGRESQL
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        params = (now, change, thread, run, *chunk, now)
        if pg:
            conn.execute(both(conn, _RECORD_PG.format(marks=marks)), params)
            continue
        made = [int(r[0]) for r in conn.execute(_RECORD_SQLITE.format(marks=marks), params).fetchall() if r[1] > 1]
        if made:
            conn.execute(_COPY_VECTORS.format(marks=",".join("?" * len(made))), made)


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


def versions(conn: sqlite3.Connection, uid: str) -> list[PastVersion]:
    """The past versions of the item ``uid`` (every incarnation of its key), newest first."""
    rows = conn.execute(both(conn, f"{_READ} WHERE uid = ? ORDER BY valid_to DESC, id DESC"), (uid,))
    return [_version(r) for r in rows]


def version_at(conn: sqlite3.Connection, uid: str, at: float) -> PastVersion | None:
    """The past version of the item ``uid`` that was current at ``at``, if one was."""
    row = conn.execute(
        both(conn, f"{_READ} WHERE uid = ? AND valid_to > ? AND valid_from <= ? ORDER BY valid_to DESC, id DESC"),
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
    Its item id is 0: it was never a row of this catalog. Returns how many were written.
    """
    held = {(v.valid_from, v.valid_to, v.change) for v in versions(conn, uid)}
    written = 0
    for r in rows:
        if (float(r["valid_from"]), float(r["valid_to"]), r["change"]) in held:
            continue
        vecs: list[bytes] = list(r.get("vectors") or [])
        cur = conn.execute(
            both(
                conn,
                f"INSERT INTO item_history({_WRITE_COLS}) VALUES ({', '.join('?' * 17)}) RETURNING id",
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
            ),
        )
        hid = int(cur.fetchone()[0])
        if len(vecs) > 1:
            conn.executemany(
                both(conn, "INSERT INTO history_vectors(history_id, idx, path, vec) VALUES (?, ?, '', ?)"),
                [(hid, i, v) for i, v in enumerate(vecs)],
            )
        written += 1
    return written


#: ``meta`` key given a new random value by every `prune()` that drops versions.
PRUNED_KEY = "history_pruned"
# The history changes only by rows added (a higher id: ids only grow, and writers are serialised, so they commit
# in id order) and by `prune()`, which marks ``meta``: two lookups tell whether the arrays are current.
_STAMP = f"SELECT (SELECT max(id) FROM item_history), (SELECT value FROM meta WHERE key = '{PRUNED_KEY}')"
_SCAN = (
    "SELECT id, item_id, valid_from, valid_to, updated_at, expires_at, status IS NULL, ns, n_vectors, vec"
    " FROM item_history WHERE id > ? AND id <= ? ORDER BY id"
)
_SCAN_VECTORS = (
    "SELECT v.history_id, v.vec FROM history_vectors v JOIN item_history h ON h.id = v.history_id"
    " WHERE h.id > ? AND h.id <= ? AND h.n_vectors > 1 ORDER BY v.history_id, v.idx"
)


def moment_stamp(conn: sqlite3.Connection) -> tuple[Any, ...]:
    """What changes whenever the history changes: its last id and the mark of its last prune."""
    return tuple(conn.execute(both(conn, _STAMP)).fetchone())


@dataclass(frozen=True)
class Versions:
    """Every past version's scan data, as arrays in history id order (what a search as of any moment scans).

    Replaced whole, never changed in place, so a search keeps reading the arrays it started with.
    """

    #: history ids (increasing), item ids, ``valid_from``, ``valid_to``, ``updated_at``, ``expires_at`` (NaN:
    #: none), whether each had no status (neither retired nor superseded), its namespace's position in `names`.
    ids: np.ndarray
    item_ids: np.ndarray
    valid_from: np.ndarray
    valid_to: np.ndarray
    updated: np.ndarray
    expires: np.ndarray
    live: np.ndarray
    ns: np.ndarray
    #: the namespaces, as stored (labels joined by ``\x1f``).
    names: tuple[str, ...]
    #: every vector (float32 rows), its norm, and the position of the version owning it.
    vectors: np.ndarray
    norms: np.ndarray
    owner: np.ndarray
    #: a new value whenever the arrays are reloaded from the start (a prune): positions change meaning.
    epoch: int = 0

    def at(self, at: float) -> Moment:
        """The versions valid at ``at`` (``valid_from <= at < valid_to``)."""
        valid = (self.valid_from <= at) & (at < self.valid_to)
        pos = np.flatnonzero(valid)
        index = np.cumsum(valid) - 1
        vmask = valid[self.owner]
        owner = index[self.owner[vmask]]
        later = self.item_ids[self.valid_to > at]
        one_each = not bool(np.any(np.diff(owner) == 0))  # owners never decrease (`_extend`)
        vector_of = np.full(len(pos), -1, dtype=np.int64)
        if one_each:
            vector_of[owner] = np.arange(len(owner))
        return Moment(
            versions=self,
            pos=pos,
            valid=valid,
            ids=self.ids[pos],
            item_ids=self.item_ids[pos],
            updated=self.updated[pos],
            expires=self.expires[pos],
            live=self.live[pos],
            vectors=self.vectors[np.flatnonzero(vmask)],
            norms=self.norms[vmask],
            owner=owner,
            one_each=one_each,
            vector_of=vector_of,
            changed=IdSet(later),
        )

    def nbytes(self) -> int:
        """The memory the arrays take."""
        return sum(
            int(getattr(self, f.name).nbytes) for f in dataclasses.fields(self) if f.name not in ("names", "epoch")
        )


class IdSet:
    """A set of item ids as a mask by id: a membership test without making a Python set of thousands."""

    def __init__(self, ids: np.ndarray) -> None:
        self._mask = np.zeros(int(ids.max()) + 1 if len(ids) else 0, dtype=bool)
        self._mask[ids] = True
        self._n = int(np.count_nonzero(self._mask))

    def __contains__(self, item_id: object) -> bool:
        return bool(isinstance(item_id, (int, np.integer)) and 0 <= item_id < len(self._mask) and self._mask[item_id])

    def __len__(self) -> int:
        return self._n


@dataclass(frozen=True)
class Moment:
    """The past versions valid at one moment (positions in `versions`) and the items a later change ended."""

    versions: Versions
    #: positions of the versions valid then (increasing), and the same as a mask over every version.
    pos: np.ndarray
    valid: np.ndarray
    #: their history ids, item ids, ``updated_at``, ``expires_at`` (NaN: none), and whether each had no status.
    ids: np.ndarray
    item_ids: np.ndarray
    updated: np.ndarray
    expires: np.ndarray
    live: np.ndarray
    #: their vectors, norms and owners (positions in `pos`); whether every version has one vector at most.
    vectors: np.ndarray
    norms: np.ndarray
    owner: np.ndarray
    one_each: bool
    #: with one vector each at most: each version's vector (its row in `vectors`; -1: none).
    vector_of: np.ndarray
    #: the items (rows of ``items``) whose version current at the moment a later change ended.
    changed: IdSet

    def in_prefix(self, prefix: Sequence[str]) -> np.ndarray:
        """A mask over `pos`: the versions under ``prefix``."""
        if not prefix:
            return np.ones(len(self.pos), dtype=bool)
        joined = "\x1f".join(prefix)
        under = np.array(
            [n == joined or n.startswith(joined + "\x1f") for n in self.versions.names] or [False], dtype=bool
        )
        return under[self.versions.ns[self.pos]]


_NO_VECTORS = np.zeros((0, 0), dtype=np.float32)


class PastVersions:
    """The history's `Versions` of one catalog, read once and then only the rows added since (all again after a prune).

    A search as of a moment takes `current()` and masks it (`Versions.at()`):
    no moment reads the catalog's history again. The arrays hold about
    60 bytes per version beside its vectors (4 bytes per dimension).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stamp: tuple[Any, ...] | None = None
        self._versions: Versions | None = None

    def current(self, conn: sqlite3.Connection) -> Versions:
        """The arrays as of the history ``conn`` reads (read in a snapshot: the stamp and the rows agree)."""
        stamp = moment_stamp(conn)
        held = self._versions
        if held is not None and stamp == self._stamp:
            return held
        with self._lock:
            held = self._versions
            if held is None or self._stamp is None or stamp[1] != self._stamp[1] or (stamp[0] or 0) < self._stamp[0]:
                held = _empty(0 if held is None else held.epoch + 1)
                last = 0
            else:
                last = int(self._stamp[0] or 0)
            top = int(stamp[0] or 0)
            if top > last:
                held = _extend(held, conn, last, top)
            self._versions, self._stamp = held, (top, stamp[1])
        return held


def _empty(epoch: int) -> Versions:
    ints, floats = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    return Versions(
        ints, ints, floats, floats, floats, floats, np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int32), (),
        _NO_VECTORS, np.zeros(0, dtype=np.float32), ints, epoch,
    )  # fmt: skip


def _extend(old: Versions, conn: sqlite3.Connection, after: int, upto: int) -> Versions:
    """``old`` with the history rows of ids ``after < id <= upto`` appended."""
    rows = conn.execute(both(conn, _SCAN), (after, upto)).fetchall()
    n = len(rows)
    names = list(old.names)
    code = {name: k for k, name in enumerate(names)}
    ns = np.empty(n, dtype=np.int32)
    for k, r in enumerate(rows):
        c = code.get(r[7])
        if c is None:
            c = code[r[7]] = len(names)
            names.append(r[7])
        ns[k] = c
    base = len(old.ids)
    blobs = [bytes(r[9]) for r in rows if r[8] == 1 and r[9] is not None]
    owner = [base + k for k, r in enumerate(rows) if r[8] == 1 and r[9] is not None]
    if any(r[8] > 1 for r in rows):
        pos = {int(r[0]): base + k for k, r in enumerate(rows)}
        for hid, vec in conn.execute(both(conn, _SCAN_VECTORS), (after, upto)):
            blobs.append(bytes(vec))
            owner.append(pos[int(hid)])
    new_owner = np.asarray(owner, dtype=np.int64)
    if blobs:
        vecs = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
        order = np.argsort(new_owner, kind="stable")  # vectors grouped by version, as the versions are ordered
        vecs, new_owner = vecs[order], new_owner[order]
        vectors = np.concatenate([old.vectors, vecs]) if len(old.vectors) else vecs
        norms = np.concatenate([old.norms, np.linalg.norm(vecs, axis=1)])
    else:
        vectors, norms = old.vectors, old.norms

    def col(k: int, dtype: Any, fill: float | None = None) -> np.ndarray:
        got = np.fromiter((fill if r[k] is None else r[k] for r in rows), dtype=dtype, count=n)
        return np.concatenate([getattr(old, _FIELDS[k]), got])

    return Versions(
        ids=col(0, np.int64),
        item_ids=col(1, np.int64),
        valid_from=col(2, np.float64),
        valid_to=col(3, np.float64),
        updated=col(4, np.float64),
        expires=col(5, np.float64, np.nan),
        live=col(6, bool),
        ns=np.concatenate([old.ns, ns]),
        names=tuple(names),
        vectors=vectors,
        norms=norms,
        owner=np.concatenate([old.owner, new_owner]),
        epoch=old.epoch,
    )


# The `Versions` field each column of `_SCAN` fills.
_FIELDS = {0: "ids", 1: "item_ids", 2: "valid_from", 3: "valid_to", 4: "updated", 5: "expires", 6: "live"}


_KEYWORD_TOTALS = "SELECT docs, tokens FROM keyword_stats WHERE id = 1"
_KEYWORD_LENGTHS = (
    "SELECT l.item_id, l.n_tokens, coalesce(i.valid_from, i.updated_at) FROM keyword_lengths l"
    " JOIN items i ON i.id = l.item_id"
)


@dataclass(frozen=True)
class KeywordLengths:
    """The keyword index now: its totals, and each indexed item's id, length in words and since when it is current
    (what a search as of any moment takes the items indexed after it out of)."""

    stamp: tuple[Any, ...]
    docs: int
    tokens: int
    item_ids: np.ndarray
    n_tokens: np.ndarray
    since: np.ndarray


def keyword_lengths(conn: sqlite3.Connection) -> KeywordLengths:
    """`KeywordLengths` of the index ``conn`` reads (call in a snapshot: the stamp, totals and rows agree)."""
    stamp = keyword_stamp(conn)
    docs, tokens = conn.execute(both(conn, _KEYWORD_TOTALS)).fetchone()
    rows = conn.execute(both(conn, _KEYWORD_LENGTHS)).fetchall()
    n = len(rows)
    return KeywordLengths(
        stamp,
        int(docs),
        int(tokens),
        np.fromiter((r[0] for r in rows), dtype=np.int64, count=n),
        np.fromiter((r[1] for r in rows), dtype=np.int64, count=n),
        np.fromiter((r[2] for r in rows), dtype=np.float64, count=n),
    )


def keyword_stamp(conn: sqlite3.Connection) -> tuple[Any, ...]:
    """What changes whenever the keyword index changes."""
    return tuple(conn.execute(STAMP_SQL.of(conn)).fetchone())


def read(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, PastVersion]:
    """Past versions by history id."""
    out: dict[int, PastVersion] = {}
    for start in range(0, len(ids), _CHUNK):
        chunk = list(ids[start : start + _CHUNK])
        for r in conn.execute(both(conn, f"{_READ} WHERE id IN ({','.join('?' * len(chunk))})"), tuple(chunk)):
            out[int(r[0])] = _version(r)
    return out


def namespaces_at(conn: sqlite3.Connection, at: float) -> set[tuple[str, ...]]:
    """Namespaces that held at least one item at ``at`` (current versions since then, and past versions)."""
    rows = conn.execute(
        both(
            conn,
            "SELECT n.ns FROM namespaces n WHERE n.n_items > 0 AND EXISTS (SELECT 1 FROM items i WHERE i.ns_id = n.id"
            " AND coalesce(i.valid_from, i.updated_at) <= ?)"
            " UNION SELECT ns FROM item_history WHERE valid_to > ? AND valid_from <= ?",
        ),
        (at, at, at),
    )
    return {tuple(r[0].split("\x1f")) for r in rows}


def prune(
    conn: sqlite3.Connection, *, keep: int | None = None, older_than: float | None = None, dry_run: bool = False
) -> int:
    """Drop past versions beyond the ``keep`` newest of each item, and those that ended before ``older_than``.

    Returns how many versions went (``dry_run``: would go). Either rule may be None (not applied).
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
    if ids:  # a random value, not a counter: see `moment_stamp()` (and keywords' own version mark)
        conn.execute(
            both(
                conn,
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            ),
            (PRUNED_KEY, uuid.uuid4().hex),
        )
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        conn.execute(both(conn, f"DELETE FROM history_vectors WHERE history_id IN ({marks})"), tuple(chunk))
        conn.execute(both(conn, f"DELETE FROM item_history WHERE id IN ({marks})"), tuple(chunk))
    return len(ids)


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
