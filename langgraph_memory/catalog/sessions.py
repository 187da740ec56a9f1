"""Session memory in the catalog: sessions, their turns, and the mark that they were promoted.

Functions over a connection, so [`SessionMemory`][langgraph_memory.SessionMemory]
decides a session boundary and records a turn in one transaction, and marks a
session promoted in the same transaction as the episodic memories made from
it. A session goes through three states:

``active``
    turns arrive; a channel (the namespace its memories go to, and its
    thread) has at most one active session, its *current* one;
``ended``
    a boundary closed it (``end_reason``: ``inactivity``, ``topic_change``,
    ``max_turns``, ``max_duration``, ``forced`` or ``closed``);
``promoted``
    the transaction holding its episodic memories committed (``n_promoted``
    turns became memories; every turn has its ``importance`` recorded).

Session rows stay (they are lineage nodes of the memories promoted from them,
and the stats count them); cleanup forgets the turns of promoted sessions
once they are old enough (``purged_at``): their text and embeddings go, and
only the ``source`` of turns recorded with one stays, so that recording the
same source again stays a no-op (the conversation node relies on it).

    >>> import tempfile, pathlib
    >>> from langgraph_memory.catalog import Catalog
    >>> cat = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> with cat.write() as conn:
    ...     s = create(conn, "s1", ("episodes",), "t1", now=100.0)
    ...     _ = add_turn(conn, s, "hi", "hello", at=100.0)
    ...     [(t.index, t.user, t.thread_id) for t in turns(conn, "s1")]
    [(0, 'hi', 't1')]
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph_memory.catalog.connection import Sql, both
from langgraph_memory.catalog.fields import KIND_STR
from langgraph_memory.catalog.item_rows import chunked, join_ns, split_ns

__all__ = [
    "Session",
    "SessionTurn",
    "SessionCounts",
    "Decision",
    "channel_of",
    "create",
    "get",
    "get_many",
    "current",
    "latest",
    "end",
    "add_turn",
    "find_source",
    "known_sources",
    "turns",
    "channel_turns",
    "recent_turns",
    "expired",
    "in_state",
    "mark_promoted",
    "purge",
    "counts",
]

SessionState = Literal["active", "ended", "promoted"]

_SESSION_COLS = (
    "id, namespace, thread_id, state, started_at, last_turn_at, n_turns, end_reason, ended_at, promoted_at, "
    "n_promoted, purged_at"
)
_TURN_COLS = (
    "t.session_id, t.idx, t.user_text, t.assistant, t.at, s.thread_id, t.source, t.pinned, t.importance, "
    "t.memory_key, t.signals"
)


@dataclass(frozen=True)
class Session:
    """One conversation session: its channel, state, times and counts (times in seconds since the epoch)."""

    id: str
    namespace: tuple[str, ...]
    thread_id: str | None
    state: SessionState
    started_at: float
    last_turn_at: float
    n_turns: int
    end_reason: str | None = None
    ended_at: float | None = None
    promoted_at: float | None = None
    n_promoted: int = 0
    purged_at: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return {
            "id": self.id,
            "namespace": list(self.namespace),
            "thread_id": self.thread_id,
            "state": self.state,
            "started_at": self.started_at,
            "last_turn_at": self.last_turn_at,
            "n_turns": self.n_turns,
            "end_reason": self.end_reason,
            "ended_at": self.ended_at,
            "promoted_at": self.promoted_at,
            "n_promoted": self.n_promoted,
            "purged_at": self.purged_at,
        }


@dataclass(frozen=True)
class SessionTurn:
    """One turn held in session memory (the session record).

    ``at`` is when it was recorded (seconds since the epoch). After its
    session was promoted, ``importance`` holds its score and ``memory_key``
    the key of the episodic memory made from it (None: not important enough).
    ``pinned`` is the importance the caller gave when recording it, if any.
    """

    session_id: str
    index: int
    user: str
    assistant: str
    at: float
    thread_id: str | None = None
    source: str | None = None
    pinned: float | None = None
    importance: float | None = None
    memory_key: str | None = None
    signals: dict[str, float] | None = None
    vector: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def content(self) -> str:
        """The turn as one text: the user's side, then the assistant's (either may be empty)."""
        return "\n".join(part for part in (self.user, self.assistant) if part)

    @property
    def promoted(self) -> bool:
        return self.memory_key is not None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (without the vector)."""
        return {
            "session_id": self.session_id,
            "index": self.index,
            "user": self.user,
            "assistant": self.assistant,
            "at": self.at,
            "thread_id": self.thread_id,
            "source": self.source,
            "pinned": self.pinned,
            "importance": self.importance,
            "memory_key": self.memory_key,
            "signals": self.signals,
        }


@dataclass(frozen=True)
class Decision:
    """What promotion decided for one turn: its score, the signals behind it, its memory key (None: not kept)."""

    index: int
    importance: float
    signals: dict[str, float]
    memory_key: str | None


@dataclass(frozen=True)
class SessionCounts:
    """Session memory in numbers (for ``Memory.stats()``)."""

    sessions: int = 0
    active: int = 0
    turns: int = 0
    promoted_turns: int = 0
    promoted_sessions: int = 0
    held_turns: int = 0
    #: distinct session ids: session memory's, and ``session_id`` values recorded on items.
    known_session_ids: int = 0


def channel_of(namespace: Sequence[str], thread_id: str | None) -> str:
    """The channel key of a namespace and thread: sessions of one channel follow each other."""
    return join_ns(namespace) + "\x1e" + (thread_id or "")


def _session(row: Sequence[Any]) -> Session:
    return Session(
        id=row[0],
        namespace=split_ns(row[1]),
        thread_id=row[2],
        state=row[3],
        started_at=float(row[4]),
        last_turn_at=float(row[5]),
        n_turns=int(row[6]),
        end_reason=row[7],
        ended_at=row[8],
        promoted_at=row[9],
        n_promoted=int(row[10]),
        purged_at=row[11],
    )


def _turn(row: Sequence[Any], vec: bytes | None = None) -> SessionTurn:
    return SessionTurn(
        session_id=row[0],
        index=int(row[1]),
        user=row[2],
        assistant=row[3],
        at=float(row[4]),
        thread_id=row[5],
        source=row[6],
        pinned=row[7],
        importance=row[8],
        memory_key=row[9],
        signals=json.loads(row[10]) if row[10] else None,
        vector=vec,
    )


# ---------------------------------------------------------------- sessions


def create(
    conn: sqlite3.Connection, session_id: str, namespace: Sequence[str], thread_id: str | None, *, now: float
) -> Session:
    """A new active session of ``(namespace, thread_id)``, with no turns yet."""
    conn.execute(
        both(
            conn,
            "INSERT INTO sessions(id, channel, namespace, thread_id, state, started_at, last_turn_at) "
            "VALUES (?, ?, ?, ?, 'active', ?, ?)",
        ),
        (session_id, channel_of(namespace, thread_id), join_ns(namespace), thread_id, now, now),
    )
    return Session(session_id, tuple(namespace), thread_id, "active", now, now, 0)


def get(conn: sqlite3.Connection, session_id: str) -> Session | None:
    row = conn.execute(both(conn, f"SELECT {_SESSION_COLS} FROM sessions WHERE id = ?"), (session_id,)).fetchone()
    return _session(row) if row else None


def get_many(conn: sqlite3.Connection, session_ids: Iterable[str]) -> dict[str, Session]:
    out: dict[str, Session] = {}
    for chunk in chunked(list(dict.fromkeys(session_ids))):
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            both(conn, f"SELECT {_SESSION_COLS} FROM sessions WHERE id IN ({marks})"), tuple(chunk)
        ):
            out[row[0]] = _session(row)
    return out


def current(conn: sqlite3.Connection, namespace: Sequence[str], thread_id: str | None) -> Session | None:
    """The active session of ``(namespace, thread_id)``, if any."""
    row = conn.execute(
        both(
            conn,
            f"SELECT {_SESSION_COLS} FROM sessions WHERE channel = ? AND state = 'active' "
            "ORDER BY last_turn_at DESC LIMIT 1",
        ),
        (channel_of(namespace, thread_id),),
    ).fetchone()
    return _session(row) if row else None


def latest(conn: sqlite3.Connection, namespace: Sequence[str], thread_id: str | None) -> Session | None:
    """The most recent session of ``(namespace, thread_id)`` whatever its state."""
    row = conn.execute(
        both(
            conn,
            f"SELECT {_SESSION_COLS} FROM sessions WHERE channel = ? ORDER BY last_turn_at DESC, started_at DESC LIMIT 1",
        ),
        (channel_of(namespace, thread_id),),
    ).fetchone()
    return _session(row) if row else None


def end(conn: sqlite3.Connection, session_id: str, reason: str, *, ended_at: float) -> bool:
    """End an active session; False if it was not active (ended by someone else meanwhile)."""
    cur = conn.execute(
        both(
            conn, "UPDATE sessions SET state = 'ended', end_reason = ?, ended_at = ? WHERE id = ? AND state = 'active'"
        ),
        (reason, ended_at, session_id),
    )
    return cur.rowcount > 0


def expired(
    conn: sqlite3.Connection, namespace: Sequence[str], *, idle_before: float, started_before: float
) -> list[tuple[Session, str]]:
    """Active sessions of ``namespace`` whose time is up, each with why: ``inactivity`` or ``max_duration``."""
    out = []
    for row in conn.execute(
        both(
            conn,
            f"SELECT {_SESSION_COLS} FROM sessions WHERE namespace = ? AND state = 'active' "
            "AND (last_turn_at <= ? OR started_at <= ?) ORDER BY last_turn_at",
        ),
        (join_ns(namespace), idle_before, started_before),
    ):
        s = _session(row)
        out.append((s, "inactivity" if s.last_turn_at <= idle_before else "max_duration"))
    return out


def in_state(
    conn: sqlite3.Connection, namespace: Sequence[str], state: SessionState, *, limit: int | None = None
) -> list[Session]:
    """Sessions of ``namespace`` in ``state``, oldest activity first."""
    return [
        _session(row)
        for row in conn.execute(
            both(
                conn,
                f"SELECT {_SESSION_COLS} FROM sessions WHERE namespace = ? AND state = ? ORDER BY last_turn_at"
                + ("" if limit is None or limit < 0 else " LIMIT ?"),
            ),
            (join_ns(namespace), state) + (() if limit is None or limit < 0 else (limit,)),
        )
    ]


# ------------------------------------------------------------------- turns


_COUNT_TURN = Sql(
    "UPDATE sessions SET n_turns = n_turns + 1, last_turn_at = max(last_turn_at, ?) WHERE id = ?",
    "UPDATE sessions SET n_turns = n_turns + 1, last_turn_at = GREATEST(last_turn_at, %s) WHERE id = %s",
)


def add_turn(
    conn: sqlite3.Connection,
    session: Session,
    user: str,
    assistant: str,
    *,
    at: float,
    vec: bytes | None = None,
    source: str | None = None,
    pinned: float | None = None,
) -> SessionTurn:
    """Append a turn to ``session`` (which must be active) and move its counters."""
    row = conn.execute(both(conn, "SELECT n_turns FROM sessions WHERE id = ?"), (session.id,)).fetchone()
    idx = int(row[0]) if row else 0
    conn.execute(
        both(
            conn,
            "INSERT INTO session_turns(session_id, idx, user_text, assistant, at, vec, source, pinned) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        ),
        (session.id, idx, user, assistant, at, vec, source, pinned),
    )
    conn.execute(_COUNT_TURN.of(conn), (at, session.id))
    return SessionTurn(session.id, idx, user, assistant, at, session.thread_id, source, pinned, vector=vec)


def find_source(conn: sqlite3.Connection, source: str) -> tuple[str, int] | None:
    """The ``(session id, turn index)`` recorded with ``source``, if any."""
    row = conn.execute(both(conn, "SELECT session_id, idx FROM session_turns WHERE source = ?"), (source,)).fetchone()
    return (row[0], int(row[1])) if row else None


def known_sources(conn: sqlite3.Connection, sources: Sequence[str]) -> set[str]:
    """Which of ``sources`` were recorded (forgotten turns keep their source)."""
    found: set[str] = set()
    for chunk in chunked(list(sources)):
        marks = ",".join("?" * len(chunk))
        found.update(
            r[0]
            for r in conn.execute(
                both(conn, f"SELECT source FROM session_turns WHERE source IN ({marks})"), tuple(chunk)
            )
        )
    return found


def turns(
    conn: sqlite3.Connection, session_id: str, *, limit: int | None = None, with_vectors: bool = False
) -> list[SessionTurn]:
    """The last ``limit`` turns of a session (all without a limit), oldest first."""
    vec = ", t.vec" if with_vectors else ""
    rows = conn.execute(
        both(
            conn,
            f"SELECT {_TURN_COLS}{vec} FROM session_turns t JOIN sessions s ON s.id = t.session_id "
            f"WHERE t.session_id = ? AND s.purged_at IS NULL ORDER BY t.idx DESC{'' if limit is None else ' LIMIT ?'}",
        ),
        (session_id,) if limit is None else (session_id, limit),
    ).fetchall()
    return [_turn(r, r[11] if with_vectors else None) for r in reversed(rows)]


def channel_turns(
    conn: sqlite3.Connection, namespace: Sequence[str], thread_id: str | None, *, limit: int
) -> list[SessionTurn]:
    """The last ``limit`` turns held for ``(namespace, thread_id)``, across its sessions, oldest first."""
    rows = conn.execute(
        both(
            conn,
            f"SELECT {_TURN_COLS} FROM session_turns t JOIN sessions s ON s.id = t.session_id "
            "WHERE s.channel = ? AND s.purged_at IS NULL ORDER BY t.at DESC, s.started_at DESC, t.idx DESC LIMIT ?",
        ),
        (channel_of(namespace, thread_id), limit),
    ).fetchall()
    return [_turn(r) for r in reversed(rows)]


def recent_turns(conn: sqlite3.Connection, namespace: Sequence[str], *, since: float, limit: int) -> list[SessionTurn]:
    """The last ``limit`` turns of ``namespace`` recorded at or after ``since``, across sessions and threads, oldest first."""
    rows = conn.execute(
        both(
            conn,
            f"SELECT {_TURN_COLS} FROM session_turns t JOIN sessions s ON s.id = t.session_id "
            "WHERE t.at >= ? AND s.namespace = ? AND s.purged_at IS NULL "
            "ORDER BY t.at DESC, s.started_at DESC, t.idx DESC LIMIT ?",
        ),
        (since, join_ns(namespace), limit),
    ).fetchall()
    return [_turn(r) for r in reversed(rows)]


# --------------------------------------------------------------- promotion


def mark_promoted(conn: sqlite3.Connection, session_id: str, decisions: Sequence[Decision], *, now: float) -> bool:
    """Record each turn's decision and make the session ``promoted``; False (nothing written) if it is not ``ended``.

    Call it in the transaction that writes the memories, so that the
    memories and the mark commit together: a session is promoted once.
    """
    cur = conn.execute(
        both(
            conn,
            "UPDATE sessions SET state = 'promoted', promoted_at = ?, n_promoted = ? WHERE id = ? AND state = 'ended'",
        ),
        (now, sum(d.memory_key is not None for d in decisions), session_id),
    )
    if cur.rowcount == 0:
        return False
    conn.executemany(
        both(
            conn,
            "UPDATE session_turns SET importance = ?, signals = ?, memory_key = ? WHERE session_id = ? AND idx = ?",
        ),
        [(d.importance, json.dumps(d.signals, sort_keys=True), d.memory_key, session_id, d.index) for d in decisions],
    )
    return True


def purge(conn: sqlite3.Connection, namespace: Sequence[str], *, ended_before: float, now: float) -> int:
    """Forget the turns of promoted sessions of ``namespace`` that ended before ``ended_before``; return how many.

    A turn's text, embedding and signals go; a turn recorded with a
    ``source`` keeps that row (and its decision), so the source stays known.
    """
    ids = [
        r[0]
        for r in conn.execute(
            both(
                conn,
                "SELECT id FROM sessions WHERE namespace = ? AND state = 'promoted' AND purged_at IS NULL AND ended_at < ?",
            ),
            (join_ns(namespace), ended_before),
        )
    ]
    deleted = 0
    for chunk in chunked(ids):
        marks = ",".join("?" * len(chunk))
        deleted += conn.execute(
            both(conn, f"DELETE FROM session_turns WHERE session_id IN ({marks}) AND source IS NULL"), tuple(chunk)
        ).rowcount
        deleted += conn.execute(
            both(
                conn,
                f"UPDATE session_turns SET user_text = '', assistant = '', vec = NULL, signals = NULL "
                f"WHERE session_id IN ({marks})",
            ),
            tuple(chunk),
        ).rowcount
        conn.execute(both(conn, f"UPDATE sessions SET purged_at = ? WHERE id IN ({marks})"), (now, *chunk))
    return deleted


# ------------------------------------------------------------------- stats


_COUNTS = Sql.both(
    "SELECT count(*), count(*) FILTER (WHERE state = 'active'), coalesce(sum(n_turns), 0), "
    "coalesce(sum(n_promoted), 0), count(*) FILTER (WHERE state = 'promoted') FROM sessions"
)
# Session ids, recorded or stamped on stored items: the filter index keeps the values as JSONB on PostgreSQL.
_KNOWN_IDS = Sql(
    "SELECT count(*) FROM (SELECT id FROM sessions "
    "UNION SELECT val FROM fields WHERE path = 'session_id' AND kind = ?) AS known",
    "SELECT count(*) FROM (SELECT id FROM sessions "
    "UNION SELECT val #>> '{}' FROM fields WHERE path = 'session_id' AND kind = %s) AS known",
)


def counts(conn: sqlite3.Connection) -> SessionCounts:
    """Sessions, active ones, turns recorded and promoted (all time), turns held now, distinct session ids."""
    n, active, n_turns, promoted, promoted_sessions = conn.execute(_COUNTS.of(conn)).fetchone()
    held = conn.execute(
        both(
            conn,
            "SELECT count(*) FROM session_turns t JOIN sessions s ON s.id = t.session_id WHERE s.purged_at IS NULL",
        )
    ).fetchone()[0]
    known = conn.execute(_KNOWN_IDS.of(conn), (KIND_STR,)).fetchone()[0]
    return SessionCounts(
        int(n), int(active), int(n_turns), int(promoted), int(promoted_sessions), int(held), int(known)
    )
