"""`Queries`: the statements of the shared core (``_delta``, ``_maintenance``), named once.

Each backend writes them out in its own dialect, as constants beside its
other SQL: SQLite's in ``checkpoint/_query.py``, PostgreSQL's in
``checkpoint/postgres/_sql.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Queries"]


@dataclass(frozen=True)
class Queries:
    """The statements ``_delta`` and ``_maintenance`` run, written out once per backend.

    Each takes the parameters its comment names; a list parameter is bound
    as one value through ``array`` (a JSON text that SQLite's ``json_each``
    reads, a PostgreSQL array), so no statement is built from a list's length.
    """

    array: Callable[[Sequence[Any]], Any]
    latest_id: str  # (thread, ns) -> checkpoint_id of the newest visible checkpoint
    ancestors: str  # (thread, ns, id, thread, ns) -> checkpoint_id, type, checkpoint; target first
    has_blob: str  # (thread, ns, channel, version)
    blob: str  # (thread, ns, channel, version) -> type, blob
    delta_writes: str  # (thread, ns, ids[], channels[]) -> id, channel, task_path, task_id, idx, type, value
    namespace_rows: str  # (thread, ns) -> checkpoint_id, delta_channels, hidden
    delete_writes_of: str  # (thread, ns, ids[])
    delete_checkpoints_of: str  # (thread, ns, ids[])
    hide: str  # (thread, ns, ids[])
    blob_refs: str  # (thread, ns) -> type, checkpoint, hidden, delta_channels
    blob_keys: str  # (thread, ns) -> channel, version
    delete_blobs: str  # (thread, ns, channels[], versions[]): the pairs of the two lists
    delete_thread: tuple[str, ...]  # each (thread,)
    checkpoints_of_runs: str  # (run_ids[]) -> thread, ns, id
    namespaces: str  # (thread,) -> checkpoint_ns
    visible_ids: str  # (thread, ns) -> checkpoint_id, newest first
    delete_orphan_writes: str  # (thread,)
    copy_thread: tuple[str, str, str]  # checkpoints (target, now, source), writes and blobs (target, source)
    list_threads: str  # () -> thread, last created_at, visible checkpoints
    thread_size: str  # (thread, thread, thread) -> bytes of checkpoints, blobs, writes
    inactive_threads: str  # (cutoff,) -> thread, oldest activity first
