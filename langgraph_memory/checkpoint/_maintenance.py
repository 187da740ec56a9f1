"""Whole-thread operations: delete, prune, copy, and thread activity."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph_memory.checkpoint import _delta

if TYPE_CHECKING:
    from langgraph_memory.checkpoint._shared_sql import Queries

__all__ = ["ThreadInfo", "copy_thread", "delete_for_runs", "delete_threads", "list_threads", "prune"]


@dataclass(frozen=True)
class ThreadInfo:
    """One thread of the checkpoint file and when it was last written.

    ``last_activity`` is the wall-clock UTC time of the newest checkpoint
    write; ``checkpoints`` counts the checkpoints ``list`` would return.
    """

    thread_id: str
    last_activity: datetime
    checkpoints: int


def delete_threads(conn: Any, q: Queries, thread_ids: Sequence[str]) -> None:
    """Delete every row of the given threads."""
    for thread_id in thread_ids:
        for statement in q.delete_thread:
            conn.execute(statement, (thread_id,))


def delete_for_runs(conn: Any, q: Queries, serde: SerializerProtocol, run_ids: Sequence[str]) -> None:
    """Remove the runs' checkpoints, hiding those a survivor's delta history needs."""
    targets: dict[tuple[str, str], set[str]] = {}
    for thread_id, checkpoint_ns, checkpoint_id in conn.execute(q.checkpoints_of_runs, (q.array(run_ids),)).fetchall():
        targets.setdefault((thread_id, checkpoint_ns), set()).add(checkpoint_id)
    for (thread_id, checkpoint_ns), remove in targets.items():
        delete, hide = _delta.plan_removal(conn, q, serde, thread_id, checkpoint_ns, remove)
        _delta.apply_removal(conn, q, serde, thread_id, checkpoint_ns, delete, hide)


def prune(conn: Any, q: Queries, serde: SerializerProtocol, thread_ids: Sequence[str], strategy: str) -> None:
    """``delete`` whole threads, or ``keep_latest`` visible checkpoint per namespace."""
    if strategy == "delete":
        delete_threads(conn, q, thread_ids)
        return
    for thread_id in thread_ids:
        for (ns,) in conn.execute(q.namespaces, (thread_id,)).fetchall():
            ids = [cid for (cid,) in conn.execute(q.visible_ids, (thread_id, ns)).fetchall()]
            delete, hide = _delta.plan_removal(conn, q, serde, thread_id, ns, set(ids[1:]))
            _delta.apply_removal(conn, q, serde, thread_id, ns, delete, hide)
        # Writes whose checkpoint no longer exists can never be read.
        conn.execute(q.delete_orphan_writes, (thread_id,))


def copy_thread(conn: Any, q: Queries, source: str, target: str, now: float) -> None:
    """Copy every checkpoint (hidden ones too), blob and write of ``source`` to ``target``."""
    checkpoints, writes, blobs = q.copy_thread
    conn.execute(checkpoints, (target, now, source))
    conn.execute(writes, (target, source))
    conn.execute(blobs, (target, source))


def list_threads(conn: Any, q: Queries) -> list[ThreadInfo]:
    """Every thread, most recently active first."""
    return [
        ThreadInfo(
            thread_id=thread_id,
            last_activity=datetime.fromtimestamp(last, tz=UTC),
            checkpoints=int(count),
        )
        for thread_id, last, count in conn.execute(q.list_threads).fetchall()
    ]


def thread_sizes(conn: Any, q: Queries, thread_ids: Sequence[str]) -> dict[str, int]:
    """Bytes each thread's rows hold (checkpoints, metadata, channel values, pending writes), by thread id."""
    out: dict[str, int] = {}
    for thread_id in dict.fromkeys(thread_ids):
        row = conn.execute(q.thread_size, (thread_id, thread_id, thread_id)).fetchone()
        out[thread_id] = int(sum(row))
    return out
