"""Checkpointer threads in archive files, for ``thread_strategy="archive"``.

A thread file is a gzip JSON Lines file like a memory file, one checkpoint of an idle thread a line, serialised
with the checkpointer's own ``serde`` so the same saver can load it back; the archiver runs it through the same
reserve, write, verify and delete steps. A line:

    {"v": 1, "thread_id": "t1", "last_activity": 1.7e9, "config": {...},
     "parent_config": {...}, "checkpoint": [type, base64], "metadata": [type, base64],
     "pending_writes": [[task_id, channel, [type, base64]], ...],
     "archived_at": 1.7e9, "run_id": "..."}
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from langgraph_memory.archive.format import ArchiveWriter


def write_threads(
    cp: Any, idle: Sequence[tuple[Any, float]], writer: ArchiveWriter, *, archived_at: float, run_id: str
) -> list[tuple[str, str, str]]:
    """Write every checkpoint of each idle thread (``(thread, last activity)`` pairs) as one line.

    Returns what the manifest indexes each line by: ``("{thread_id}:{checkpoint_id}", thread_id, "")``.
    """

    def typed(obj: Any) -> list[str]:
        kind, data = cp.serde.dumps_typed(obj)
        return [kind, base64.b64encode(data).decode("ascii")]

    rows: list[tuple[str, str, str]] = []
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
            writer.write(json.dumps(line, default=str).encode("utf-8") + b"\n")
            rows.append((f"{t.thread_id}:{tup.config['configurable'].get('checkpoint_id', '')}", t.thread_id, ""))
    return rows
