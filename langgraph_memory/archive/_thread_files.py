"""Checkpointer threads in archive files, for ``thread_strategy="archive"``.

A thread file is a gzip JSON Lines file like a memory file, but each line is
one checkpoint of an idle thread, serialised with the checkpointer's own
``serde`` so it can be loaded back by the same saver:

    {"v": 1, "thread_id": "t1", "last_activity": 1.7e9, "config": {...},
     "parent_config": {...}, "checkpoint": [type, base64], "metadata": [type, base64],
     "pending_writes": [[task_id, channel, [type, base64]], ...],
     "archived_at": 1.7e9, "run_id": "..."}

The archiver runs these files through the same reserve, write, verify and
delete steps as memory files; this module holds only what differs for
threads: the line format and the manifest index (one row per checkpoint,
keyed by thread id).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langgraph_memory.archive.format import ArchiveWriter, read_lines
from langgraph_memory.archive.manifest import Manifest
from langgraph_memory.errors import ArchiveIntegrityError

__all__ = ["index_threads", "write_threads"]


def write_threads(
    cp: Any, idle: Sequence[tuple[Any, float]], writer: ArchiveWriter, *, archived_at: float, run_id: str
) -> list[tuple[str, str]]:
    """Write every checkpoint of each idle thread as one line; return ``(thread_id, checkpoint_id)`` per line.

    ``idle`` holds ``(thread, last activity in epoch seconds)`` pairs.
    """

    def typed(obj: Any) -> list[str]:
        kind, data = cp.serde.dumps_typed(obj)
        return [kind, base64.b64encode(data).decode("ascii")]

    rows: list[tuple[str, str]] = []
    for t, act in idle:
        for tup in cp.list({"configurable": {"thread_id": t.thread_id}}):
            line = {
                "v": 1,
                "thread_id": t.thread_id,
                "last_activity": act,
                "config": tup.config,
                "parent_config": tup.parent_config,
                "checkpoint": typed(tup.checkpoint),
                "metadata": typed(tup.metadata),
                "pending_writes": [[tid, ch, typed(v)] for tid, ch, v in (tup.pending_writes or [])],
                "archived_at": archived_at,
                "run_id": run_id,
            }
            writer.write_line(json.dumps(line, default=str).encode("utf-8") + b"\n")
            rows.append((t.thread_id, tup.config["configurable"].get("checkpoint_id", "")))
    return rows


def index_threads(
    manifest: Manifest, path: Path, writer: ArchiveWriter, rows: Sequence[tuple[str, str]], acts: Sequence[float]
) -> None:
    """Re-read the new thread file; in one transaction, index its lines and mark it verified.

    On a checksum or count mismatch the file is marked corrupt and the
    [`ArchiveIntegrityError`][langgraph_memory.errors.ArchiveIntegrityError] propagates, so no thread is deleted.
    """
    name = path.name
    try:
        with manifest.transaction() as c:
            for line_no, _ in read_lines(path, expected_sha256=writer.sha256, expected_count=writer.count):
                tid, cid = rows[line_no]
                c.execute(
                    "INSERT INTO items VALUES (?, ?, ?, ?, ?, 'archived', ?)",
                    (name, line_no, f"{tid}:{cid}", tid, "", time.time()),
                )
            manifest.mark_verified(
                c,
                name,
                items=writer.count,
                size=writer.size,
                sha256=writer.sha256,
                min_activity=min(acts),
                max_activity=max(acts),
            )
    except ArchiveIntegrityError as exc:
        manifest.set_state(name, "corrupt", note=str(exc))
        raise
