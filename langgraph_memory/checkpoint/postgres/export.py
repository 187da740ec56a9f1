"""Threads out of `PostgresCheckpointer` into a ``checkpoints.sqlite``: the reverse of `copy_from_sqlite`.

::

    from langgraph_memory.checkpoint.postgres.export import copy_to_sqlite

    report = copy_to_sqlite("postgresql://postgres@127.0.0.1:5432/postgres", "exported/checkpoints.sqlite")

Both checkpointers store the same rows (a checkpoint without its channel
values, one blob per channel version, pending writes, the hidden ancestors a
DeltaChannel needs), so rows are copied as they are and the counts verified.
Rows the file already holds are kept; running it again is harmless.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from pathlib import Path
from typing import Any

from psycopg import Connection
from psycopg.rows import tuple_row

from langgraph_memory.checkpoint.postgres.saver import PostgresCheckpointer
from langgraph_memory.checkpoint.postgres.transfer import Progress, TransferReport
from langgraph_memory.errors import CheckpointError

__all__ = ["copy_to_sqlite"]

logger = logging.getLogger(__name__)

_COLUMNS = {
    "checkpoints": (
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "parent_checkpoint_id",
        "type",
        "checkpoint",
        "metadata",
        "run_id",
        "created_at",
        "delta_channels",
        "hidden",
    ),
    "blobs": ("thread_id", "checkpoint_ns", "channel", "version", "type", "blob"),
    "writes": (
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "task_id",
        "task_path",
        "idx",
        "channel",
        "type",
        "value",
    ),
}


def _plain(table: str, row: tuple[Any, ...]) -> tuple[Any, ...]:
    out = [bytes(v) if isinstance(v, memoryview) else v for v in row]
    if table == "checkpoints":
        meta = out[6]
        out[6] = meta if isinstance(meta, str) or meta is None else json.dumps(meta)  # JSONB comes back parsed
    return tuple(out)


def copy_to_sqlite(
    source: PostgresCheckpointer | str, target: str | os.PathLike[str], *, progress: Progress | None = None
) -> TransferReport:
    """Copy every thread of ``source`` into the SQLite file ``target`` (created if missing), then verify the counts.

    Raises:
        CheckpointError: the file holds other rows under the same keys, so its counts differ afterwards.
    """
    from langgraph_memory.checkpoint import SqliteCheckpointer

    path = Path(target).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    SqliteCheckpointer(path).close()  # creates (or migrates) the tables
    saver = source if isinstance(source, PostgresCheckpointer) else PostgresCheckpointer(source, check_conflicts=False)
    s = f'"{saver.schema}"'

    def read(conn: Connection[Any]) -> dict[str, list[tuple[Any, ...]]]:
        with conn.cursor(row_factory=tuple_row) as cur:
            out = {}
            for table, cols in _COLUMNS.items():
                cur.execute(f"SELECT {', '.join(cols)} FROM {s}.{table}")
                out[table] = [_plain(table, r) for r in cur.fetchall()]
            return out

    try:
        saver.setup()
        rows = saver.database.run(read, "export checkpoints")
    finally:
        if saver is not source:
            saver.close()
    dst = sqlite3.connect(path, timeout=30)
    try:
        with dst:
            for table, cols in _COLUMNS.items():
                marks = ", ".join("?" * len(cols))
                dst.executemany(f"INSERT OR IGNORE INTO {table} ({', '.join(cols)}) VALUES ({marks})", rows[table])
                if progress is not None:
                    progress(table, len(rows[table]), len(rows[table]))
        found = {table: dst.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in _COLUMNS}
    finally:
        dst.close()
    expected = {table: len(r) for table, r in rows.items()}
    if found != expected:
        raise CheckpointError(
            f"the exported threads do not match their source: expected rows {expected}, found {found} in {path}. "
            "Export into a file that holds no other checkpoints."
        )
    threads = len({r[0] for r in rows["checkpoints"]})
    report = TransferReport(threads, expected["checkpoints"], expected["blobs"], expected["writes"])
    logger.info("exported %s into %s", report, path)
    return report
