"""What a promoted turn becomes: an episodic memory cut into contextual chunks, with its lineage.

Each promoted turn is one item of the general collection (memory type
episodic) in the session memory's namespace, ``("episodes",)`` by default,
keyed ``{session_id}:{turn index}`` (so promoting twice can only write the
same item twice, never two items). Its value holds:

    kind="turn", content (the whole turn), user, assistant,
    chunks (the contextual chunks: each one embedded), chunk_spans ([start, end] of each in content),
    session_id, thread_id, turn_index, source, occurred_at (ISO 8601), occurred_ts,
    importance, signals (what the importance was made from)

One item with a vector per chunk (index path ``chunks[*]``) rather than an
item per chunk: a search scores a turn by its best chunk and returns the
turn once, with its whole text (as ``include_parents`` does for files), and a turn
never fills several of the ``k`` places. The chunks are cut by the ingestion's
contextual chunker at ``SessionConfig.chunking``'s size; a turn that would
need more than ``max_chunks_per_turn`` chunks (10) is cut into
larger ones instead, so nothing of it is left out.

Lineage: the memory is registered under its session (relation
``promoted_from``), the session under its checkpointer thread (``in_thread``),
in the transaction that writes the memories. Sessions and threads are
lineage nodes of their own collections, ``sessions`` and ``threads``; a
thread's node id is ``thread:{thread_id}``.
"""

from __future__ import annotations

import dataclasses
import math
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from langgraph_memory.catalog import sessions as _s
from langgraph_memory.catalog.lineage import ItemRef
from langgraph_memory.catalog.sessions import Session, SessionTurn
from langgraph_memory.ingest.chunkers import make_chunker
from langgraph_memory.ingest.records import Chunk
from langgraph_memory.research.lineage import LineageStore, NodeSummary
from langgraph_memory.sessions.config import SessionConfig

__all__ = [
    "SESSIONS_COLLECTION",
    "THREADS_COLLECTION",
    "memory_key",
    "thread_node_id",
    "chunk_turn",
    "memory_value",
    "register_lineage",
    "session_summaries",
]

#: The lineage collections of session and thread nodes (they are not store collections).
SESSIONS_COLLECTION = "sessions"
THREADS_COLLECTION = "threads"


def memory_key(session_id: str, index: int) -> str:
    """The key of the episodic memory made from turn ``index`` of ``session_id``."""
    return f"{session_id}:{index}"


def thread_node_id(thread_id: str) -> str:
    """The lineage id of a checkpointer thread."""
    return f"thread:{thread_id}"


def chunk_turn(text: str, config: SessionConfig) -> list[Chunk]:
    """The contextual chunks of a turn, at most ``config.max_chunks_per_turn`` (larger chunks if needed).

    Examples:
        >>> len(chunk_turn("word " * 2000, SessionConfig())) <= 10
        True
    """
    cfg = config.chunking
    while True:
        chunks = [c for p in make_chunker(cfg).chunk_text(text, "text") for c in p.chunks]
        if len(chunks) <= config.max_chunks_per_turn:
            return chunks
        # The overlap repeats a share of each chunk: size the next try so the cap holds with room to spare.
        size = math.ceil(len(text) / (config.max_chunks_per_turn * (1.0 - cfg.overlap_ratio)) * 1.25)
        cfg = dataclasses.replace(cfg, chunk_size=max(size, cfg.chunk_size * 2))


def memory_value(
    turn: SessionTurn, session: Session, chunks: Sequence[Chunk], score: float, signals: dict[str, float]
) -> dict[str, Any]:
    """The stored value of a promoted turn (see the module docstring)."""
    text = turn.content
    return {
        "kind": "turn",
        "content": text,
        "user": turn.user,
        "assistant": turn.assistant,
        "chunks": [c.content for c in chunks] or [text],
        "chunk_spans": [[c.metadata.start_char, c.metadata.end_char] for c in chunks] or [[0, len(text)]],
        "session_id": session.id,
        "thread_id": session.thread_id,
        "turn_index": turn.index,
        "source": turn.source,
        "occurred_at": datetime.fromtimestamp(turn.at, tz=UTC).isoformat(),
        "occurred_ts": turn.at,
        "importance": round(float(score), 4),
        "signals": signals,
    }


def register_lineage(
    conn: sqlite3.Connection, session: Session, collection: str, namespace: Sequence[str], keys: Sequence[str]
) -> None:
    """Register the session (under its thread) and each promoted memory (under the session); in a write transaction."""
    parents: list[tuple[str, str]] = []
    if session.thread_id:
        tid = thread_node_id(session.thread_id)
        LineageStore.register_in(conn, tid, THREADS_COLLECTION, ("threads",), name=session.thread_id)
        parents.append((tid, "in_thread"))
    LineageStore.register_in(conn, session.id, SESSIONS_COLLECTION, ("sessions",), parents=parents)
    for key in keys:
        LineageStore.register_in(conn, key, collection, namespace, parents=[(session.id, "promoted_from")])


def session_summaries(conn: sqlite3.Connection, refs: Sequence[ItemRef]) -> dict[str, NodeSummary]:
    """Lineage summaries of session nodes: ``session 3f2a9c1e (12 turns, 4 promoted; thread t1, ended: inactivity)``.

    A session whose row is gone (not expected: rows are kept) shows as unknown.
    """
    found = _s.get_many(conn, [r.id for r in refs if r.collection == SESSIONS_COLLECTION])
    out: dict[str, NodeSummary] = {}
    for ref in refs:
        if ref.collection != SESSIONS_COLLECTION:
            continue
        s = found.get(ref.id)
        if s is None:
            out[ref.id] = NodeSummary(f"session {ref.id[:8]} (forgotten)", "unknown")
            continue
        where = f"thread {s.thread_id}, " if s.thread_id else ""
        state = s.state if s.end_reason is None else f"{s.state}: {s.end_reason}"
        out[ref.id] = NodeSummary(
            f"session {s.id[:8]} ({s.n_turns} turns, {s.n_promoted} promoted; {where}{state})", "live"
        )
    return out
