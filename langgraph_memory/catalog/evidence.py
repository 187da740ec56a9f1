"""Evidence ends: the last market date each item's evidence used, kept current as lineage grows.

A row of ``evidence_ends`` says that the item with this uid drew on data up
to ``evidence_end`` (an ISO date). The catalog does not decide what an
item's own date is (the research layer does: a backtest's ``period_end``,
say); it keeps one rule: an item's evidence ends no earlier than that of
anything it derives from through lineage. `note()` (called by
`lineage.register`) records a new item's own date together with its
parents' latest, and `follow()` (called by every later lineage edge) moves
a child and all its descendants forward when the edge brings a later date.
Dates only move forward: lineage only grows.

``item_id`` is the item's lineage id (its key), so the statements join the
lineage tables; ``seq`` orders the changes, so that a process keeps the
dates in memory and reads only what changed since (`EvidenceEnds`). Every
writer holds the catalog's write lock (SQLite's ``BEGIN IMMEDIATE``, the
PostgreSQL catalog's advisory lock), so ``seq`` grows in commit order.

    >>> import tempfile, pathlib
    >>> from datetime import date
    >>> from langgraph_memory.catalog import Catalog
    >>> from langgraph_memory.catalog import lineage
    >>> cat = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> with cat.write() as conn:
    ...     _ = lineage.register(conn, "b1", "backtest_results", ("backtests",), evidence_end=date(2020, 12, 31))
    ...     _ = lineage.register(conn, "l1", "lessons_learned", ("lessons",), parents=[("b1", "learned_from")])
    >>> with cat.read() as conn:
    ...     ends(conn, [(("lessons",), "l1")])
    {'l1': datetime.date(2020, 12, 31)}
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Any, TypedDict

import numpy as np

from langgraph_memory.catalog.connection import Sql, both
from langgraph_memory.catalog.item_rows import chunked, item_uid
from langgraph_memory.errors import InvalidArgumentError

__all__ = [
    "CutoffArgs",
    "EndsAfter",
    "EvidenceEnds",
    "note",
    "follow",
    "forget",
    "raise_ends",
    "ends",
    "ends_by_uid",
    "check_cutoff",
    "cutoff_of",
]

_NEXT_SEQ = "(SELECT COALESCE(MAX(seq), 0) + 1 FROM evidence_ends)"
# A row moves forward only: a later date, or a date where there was none (a forgotten item's NULL).
_FORWARD = (
    " ON CONFLICT(uid) DO UPDATE SET evidence_end = excluded.evidence_end, seq = excluded.seq"
    " WHERE evidence_ends.evidence_end IS NULL OR evidence_ends.evidence_end < excluded.evidence_end"
)
# The new item's date: the latest of its own and its parents' (the parents' edges are in this transaction).
# One statement, which a PostgreSQL write sends with the item's own (it needs no answer).
_NOTE = Sql.both(
    "INSERT INTO evidence_ends(uid, item_id, evidence_end, seq)"
    f" SELECT ?, ?, m.d, {_NEXT_SEQ} FROM (SELECT MAX(x.d) AS d FROM ("
    "SELECT CAST(? AS TEXT) AS d UNION ALL SELECT ev.evidence_end FROM lineage_edges e"
    " JOIN evidence_ends ev ON ev.item_id = e.parent_id WHERE e.child_id = ?) x) m"
    f" WHERE m.d IS NOT NULL{_FORWARD}"
)
_SET = Sql.both(f"INSERT INTO evidence_ends(uid, item_id, evidence_end, seq) VALUES (?, ?, ?, {_NEXT_SEQ}){_FORWARD}")
_FORGET = Sql.both(
    f"UPDATE evidence_ends SET evidence_end = NULL, seq = {_NEXT_SEQ} WHERE item_id = ? AND evidence_end IS NOT NULL"
)
# What changed after a seq, and always the newest row: a newest seq below the one a process has seen
# means the table was replaced (a restored or copied catalog), and the process reads it all again.
# Each with the catalog id of its item (None: not in the store), so a search can skip failing items unread.
_READ = "SELECT e.uid, e.evidence_end, e.seq, i.id FROM evidence_ends e LEFT JOIN items i ON i.uid = e.uid"
_CHANGED = Sql.both(f"{_READ} WHERE e.seq > ? OR e.seq = (SELECT MAX(seq) FROM evidence_ends)")
_ALL = Sql.both(_READ)


def _iso(day: date | None) -> str | None:
    return None if day is None else day.isoformat()[:10]


def _uid_of(item_id: str, namespace_json: str) -> str:
    return item_uid(tuple(json.loads(namespace_json)), item_id)


def note(conn: sqlite3.Connection, namespace: Sequence[str], item_id: str, own: date | None) -> None:
    """Record a new item's evidence end: the latest of ``own`` and its parents'; inside its write transaction.

    For an item registered in this transaction (it has no children yet, so
    nothing below it moves). An item with neither its own date nor a dated
    parent gets no row: its evidence end is unknown.
    """
    conn.execute(_NOTE.of(conn), (item_uid(namespace, item_id), item_id, _iso(own), item_id))


def follow(conn: sqlite3.Connection, child_id: str, parent_id: str) -> None:
    """After a new edge ``child_id -> parent_id``: move the child and its descendants up to the parent's date."""
    rows = conn.execute(
        both(conn, "SELECT id, namespace FROM lineage_nodes WHERE id IN (?, ?)"), (child_id, parent_id)
    ).fetchall()
    uids = {rid: _uid_of(rid, ns) for rid, ns in rows}
    if child_id not in uids or parent_id not in uids:
        return
    known = ends_by_uid(conn, uids.values())
    end = known.get(uids[parent_id])
    if end is None or (known.get(uids[child_id]) or date.min) >= end:
        return
    conn.execute(_SET.of(conn), (uids[child_id], child_id, _iso(end)))
    _spread(conn, [child_id], end)


def _spread(conn: sqlite3.Connection, frontier: list[str], end: date) -> None:
    """Move every descendant of ``frontier`` up to ``end``; a level at a time, stopping where a date is already later.

    Below an item whose date is at least ``end``, every date is too (each item's is at least its parents'), so
    the walk visits only what moves.
    """
    seen = set(frontier)
    while frontier:
        children: dict[str, str] = {}
        for chunk in chunked(frontier):
            marks = ",".join("?" * len(chunk))
            for cid, ns in conn.execute(
                both(
                    conn,
                    "SELECT DISTINCT e.child_id, n.namespace FROM lineage_edges e JOIN lineage_nodes n"
                    f" ON n.id = e.child_id WHERE e.parent_id IN ({marks})",
                ),
                tuple(chunk),
            ):
                if cid not in seen:
                    children[_uid_of(cid, ns)] = cid
        known = ends_by_uid(conn, children)
        frontier = []
        for uid, cid in children.items():
            seen.add(cid)
            if (known.get(uid) or date.min) < end:
                conn.execute(_SET.of(conn), (uid, cid, _iso(end)))
                frontier.append(cid)


def raise_ends(conn: sqlite3.Connection, dated: Iterable[tuple[Sequence[str], str, date]]) -> None:
    """Move each ``(namespace, item_id, end)`` item's evidence end forward to ``end``, and its descendants' with it.

    For evidence ends that come from elsewhere (an imported bundle's), inside the write transaction that
    adds the items' lineage. A later date already here stands: dates only move forward.
    """
    for namespace, item_id, end in dated:
        uid = item_uid(namespace, item_id)
        if (ends_by_uid(conn, [uid]).get(uid) or date.min) >= end:
            continue
        conn.execute(_SET.of(conn), (uid, item_id, _iso(end)))
        _spread(conn, [item_id], end)


def forget(conn: sqlite3.Connection, item_ids: Iterable[str]) -> None:
    """Forget the dates of hard-deleted items (their rows say "unknown", so every process's copy learns it)."""
    for item_id in item_ids:
        conn.execute(_FORGET.of(conn), (item_id,))


def ends_by_uid(conn: sqlite3.Connection, uids: Iterable[str]) -> dict[str, date]:
    """The known evidence ends of ``uids`` (unknown ones left out)."""
    out: dict[str, date] = {}
    for chunk in chunked(list(dict.fromkeys(uids))):
        marks = ",".join("?" * len(chunk))
        for uid, end in conn.execute(
            both(conn, f"SELECT uid, evidence_end FROM evidence_ends WHERE uid IN ({marks})"), tuple(chunk)
        ):
            if end is not None:
                out[uid] = date.fromisoformat(end)
    return out


def ends(conn: sqlite3.Connection, items: Iterable[tuple[Sequence[str], str]]) -> dict[str, date]:
    """The known evidence ends of ``(namespace, key)`` items, by key (unknown ones left out)."""
    by_uid = {item_uid(ns, key): key for ns, key in items}
    return {by_uid[uid]: end for uid, end in ends_by_uid(conn, by_uid).items()}


class EvidenceEnds:
    """The evidence ends of one catalog, kept in memory and brought up to date from ``seq`` at each `snapshot()`.

    A search with a data cut-off reads only the rows changed since the last
    one (usually none: one indexed lookup), never the whole table again.
    """

    def __init__(self) -> None:
        self._seq = 0
        self._ends: dict[str, int] = {}
        # The same dates by catalog item id (0: none known), for `after()`. Ids only grow and an item keeps
        # its id and uid while it lives, so an id read once stays right or names an item gone; 4 bytes per
        # item ever stored.
        self._by_id = np.zeros(0, dtype=np.int32)
        self._lock = threading.Lock()
        self._sorted: np.ndarray | None = None  # the dates, sorted, for `share()`; None after a change

    def share(self, cutoff: int, include_undated: bool) -> float:
        """The share of dated items whose evidence ends by ``cutoff`` (an ordinal), as of the last `snapshot()`.

        The planner's estimate of the share of a search's candidates that pass the cut-off (0: none can,
        unless ``include_undated``). The dates are sorted once per change, then bisected.
        """
        with self._lock:
            if self._sorted is None:
                self._sorted = np.sort(np.fromiter(self._ends.values(), dtype=np.int64, count=len(self._ends)))
            dates = self._sorted
        if not len(dates):
            return 1.0 if include_undated else 0.0
        passing = int(np.searchsorted(dates, cutoff, side="right")) / len(dates)
        # Undated items count as dated ones do: they fail a cut-off, or (included) pass it, in unknown number.
        return passing if passing or not include_undated else 1e-3

    def snapshot(self, conn: sqlite3.Connection) -> dict[str, int]:
        """``{uid: date ordinal}`` of every item with a known evidence end, as of ``conn``'s transaction.

        The dict is updated in place by later snapshots; dates only move forward, so a search that
        reads a date newer than its own snapshot reads what is also true when it returns.
        """
        with self._lock:
            rows = conn.execute(_CHANGED.of(conn), (self._seq,)).fetchall()
            top = max((int(r[2]) for r in rows), default=0)
            if top < self._seq:  # the table was replaced (or emptied): read it all
                rows = conn.execute(_ALL.of(conn)).fetchall()
                self._ends = {}
                self._by_id = np.zeros(0, dtype=np.int32)
            if top != self._seq:  # something changed: the sorted dates are made again when next asked for
                self._sorted = None
            known = [int(r[3]) for r in rows if r[3] is not None]
            if known and max(known) >= len(self._by_id):  # a new array: an `after()` in use keeps the old one
                grown = np.zeros(max(max(known) + 1, 2 * len(self._by_id)), dtype=np.int32)
                grown[: len(self._by_id)] = self._by_id
                self._by_id = grown
            for uid, end, _seq, item_id in rows:
                day = 0 if end is None else date.fromisoformat(end).toordinal()
                if day:
                    self._ends[uid] = day
                else:
                    self._ends.pop(uid, None)
                if item_id is not None:
                    self._by_id[int(item_id)] = day
            self._seq = top
            return self._ends

    def after(self, cutoff: int) -> EndsAfter:
        """The catalog ids of the items known, as of the last `snapshot()`, to end after ``cutoff`` (an ordinal).

        A search skips them without reading them (the planner's ``skip_ids``). Dates only move forward, so
        what ends after the cut-off at the snapshot still does when the search returns.
        """
        with self._lock:
            return EndsAfter(self._by_id, cutoff)


class EndsAfter:
    """A container of the catalog item ids whose evidence ends after ``cutoff``: ``item_id in after``.

    Items whose date is unknown here (undated, or stored since the snapshot) are not in it: a search reads
    them and checks them by uid.
    """

    __slots__ = ("by_id", "cutoff")

    def __init__(self, by_id: np.ndarray, cutoff: int) -> None:
        self.by_id = by_id
        self.cutoff = cutoff

    def __contains__(self, item_id: object) -> bool:
        i = int(item_id)  # type: ignore[call-overload]  # an int or a numpy integer
        return 0 <= i < len(self.by_id) and bool(self.by_id[i] > self.cutoff)

    def __bool__(self) -> bool:
        return bool(len(self.by_id))


def check_cutoff(value: object) -> date | None:
    """``value`` as a cut-off date: a ``datetime.date`` (a ``datetime`` counts by its date), or None.

    Raises:
        InvalidArgumentError: anything else, an ISO string included: a cut-off is a market date, and a
            string that failed to parse would silently let everything through.

    Examples:
        >>> check_cutoff(date(2019, 12, 31))
        datetime.date(2019, 12, 31)
        >>> check_cutoff("2019-12-31")
        Traceback (most recent call last):
        ...
        langgraph_memory.errors.InvalidArgumentError: data_cutoff must be a datetime.date, got str '2019-12-31': pass date.fromisoformat('2019-12-31')
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    hint = f": pass date.fromisoformat({value!r})" if isinstance(value, str) else ""
    raise InvalidArgumentError(f"data_cutoff must be a datetime.date, got {type(value).__name__} {value!r}{hint}")


class CutoffArgs(TypedDict, total=False):
    """The data cut-off arguments, declared once for every read that returns memories.

    The store's searches, the typed research queries and `Memory.as_of()`'s take them as
    ``**cutoff: Unpack[CutoffArgs]``; the MCP tools and the ``research`` CLI command derive theirs from it.

    Attributes:
        data_cutoff: a ``datetime.date``: keep only memories whose evidence ends on or before it (the last
            market date of the data behind them, through lineage). None or absent: no cut-off.
        include_undated: with a cut-off, also keep memories whose evidence end is unknown (left out by
            default: what cannot be shown to predate the cut-off might not).
    """

    data_cutoff: date | None
    include_undated: bool


def cutoff_of(args: dict[str, Any]) -> tuple[date | None, bool]:
    """The checked cut-off of ``**cutoff`` arguments: ``(day or None, include_undated)``.

    A misspelt argument would silently let everything through, so any name but the two is refused.

    Examples:
        >>> cutoff_of({"data_cutoff": date(2019, 12, 31)})
        (datetime.date(2019, 12, 31), False)
        >>> cutoff_of({"data_cutof": date(2019, 12, 31)})
        Traceback (most recent call last):
        ...
        langgraph_memory.errors.InvalidArgumentError: unexpected argument data_cutof: a read takes data_cutoff and include_undated
    """
    unknown = set(args) - set(CutoffArgs.__annotations__)
    if unknown:
        raise InvalidArgumentError(
            f"unexpected argument {', '.join(sorted(unknown))}: a read takes data_cutoff and include_undated"
        )
    include = args.get("include_undated", False)
    if not isinstance(include, bool):
        raise InvalidArgumentError(f"include_undated must be True or False, got {include!r}")
    return check_cutoff(args.get("data_cutoff")), include
