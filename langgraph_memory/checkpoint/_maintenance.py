"""Whole-thread operations: delete, prune, copy, and thread activity."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph_memory.checkpoint import _delta

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


def delete_threads(conn: sqlite3.Connection, thread_ids: Sequence[str]) -> None:
    """Delete every row of the given threads."""
    for thread_id in thread_ids:
        conn.execute("DELETE FROM checkpoints WHERE thread_id = ?", (thread_id,))
        conn.execute("DELETE FROM writes WHERE thread_id = ?", (thread_id,))
        conn.execute("DELETE FROM blobs WHERE thread_id = ?", (thread_id,))


def delete_for_runs(conn: sqlite3.Connection, serde: SerializerProtocol, run_ids: Sequence[str]) -> None:
    """Remove the runs' checkpoints, hiding those a survivor's delta history needs."""
    targets: dict[tuple[str, str], set[str]] = {}
    for start in range(0, len(run_ids), 500):
        chunk = list(run_ids[start : start + 500])
        for thread_id, checkpoint_ns, checkpoint_id in conn.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
            f"WHERE run_id IN ({','.join('?' * len(chunk))}) AND hidden = 0",
            chunk,
        ):
            targets.setdefault((thread_id, checkpoint_ns), set()).add(checkpoint_id)
    for (thread_id, checkpoint_ns), remove in targets.items():
        delete, hide = _delta.plan_removal(conn, serde, thread_id, checkpoint_ns, remove)
        _delta.apply_removal(conn, serde, thread_id, checkpoint_ns, delete, hide)


def prune(conn: sqlite3.Connection, serde: SerializerProtocol, thread_ids: Sequence[str], strategy: str) -> None:
    """``delete`` whole threads, or ``keep_latest`` visible checkpoint per namespace."""
    if strategy == "delete":
        delete_threads(conn, thread_ids)
        return
    for thread_id in thread_ids:
        namespaces = [
            ns
            for (ns,) in conn.execute(
                "SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = ?", (thread_id,)
            )
        ]
        for ns in namespaces:
            ids = [
                cid
                for (cid,) in conn.execute(
                    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND "
                    "checkpoint_ns = ? AND hidden = 0 ORDER BY checkpoint_id DESC",
                    (thread_id, ns),
                )
            ]
            delete, hide = _delta.plan_removal(conn, serde, thread_id, ns, set(ids[1:]))
            _delta.apply_removal(conn, serde, thread_id, ns, delete, hide)
        # Writes whose checkpoint no longer exists can never be read.
        conn.execute(
            "DELETE FROM writes WHERE thread_id = ? AND NOT EXISTS (SELECT 1 FROM "
            "checkpoints c WHERE c.thread_id = writes.thread_id AND c.checkpoint_ns = "
            "writes.checkpoint_ns AND c.checkpoint_id = writes.checkpoint_id)",
            (thread_id,),
        )


def copy_thread(conn: sqlite3.Connection, source: str, target: str, now: float) -> None:
    """Copy every checkpoint (hidden ones too), blob and write of ``source`` to ``target``."""
    conn.execute(
        "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
        "parent_checkpoint_id, type, checkpoint, metadata, run_id, created_at, "
        "delta_channels, hidden) SELECT ?, checkpoint_ns, checkpoint_id, "
        "parent_checkpoint_id, type, checkpoint, metadata, run_id, ?, delta_channels, "
        "hidden FROM checkpoints WHERE thread_id = ?",
        (target, now, source),
    )
    conn.execute(
        "INSERT OR REPLACE INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, "
        "task_path, idx, channel, type, value) SELECT ?, checkpoint_ns, checkpoint_id, "
        "task_id, task_path, idx, channel, type, value FROM writes WHERE thread_id = ?",
        (target, source),
    )
    conn.execute(
        "INSERT OR REPLACE INTO blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
        "SELECT ?, checkpoint_ns, channel, version, type, blob FROM blobs WHERE thread_id = ?",
        (target, source),
    )


def list_threads(conn: sqlite3.Connection) -> list[ThreadInfo]:
    """Every thread, most recently active first."""
    rows = conn.execute(
        "SELECT thread_id, MAX(created_at), SUM(hidden = 0) FROM checkpoints GROUP BY thread_id ORDER BY 2 DESC, 1"
    ).fetchall()
    return [
        ThreadInfo(
            thread_id=thread_id,
            last_activity=datetime.fromtimestamp(last, tz=UTC),
            checkpoints=int(count),
        )
        for thread_id, last, count in rows
    ]


def thread_sizes(conn: sqlite3.Connection, thread_ids: Sequence[str]) -> dict[str, int]:
    """Bytes each thread's rows hold (checkpoints, metadata, channel values, pending writes), by thread id."""
    out: dict[str, int] = {}
    for thread_id in dict.fromkeys(thread_ids):
        row = conn.execute(
            "SELECT (SELECT coalesce(sum(length(checkpoint) + coalesce(length(metadata), 0)), 0) FROM checkpoints "
            "WHERE thread_id = ?), (SELECT coalesce(sum(length(blob)), 0) FROM blobs WHERE thread_id = ?), "
            "(SELECT coalesce(sum(length(value)), 0) FROM writes WHERE thread_id = ?)",
            (thread_id, thread_id, thread_id),
        ).fetchone()
        out[thread_id] = int(sum(row))
    return out
