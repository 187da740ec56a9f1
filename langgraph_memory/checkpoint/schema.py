"""Tables, pragmas and migrations of the checkpoint file.

The schema version lives in SQLite's ``PRAGMA user_version`` so any tool can
read it without our code::

    import sqlite3

    from langgraph_memory.checkpoint.schema import SCHEMA_VERSION, read_schema_version

    conn = sqlite3.connect(":memory:")
    assert read_schema_version(conn) == 0   # a new file has no schema yet
    assert SCHEMA_VERSION >= 1

A file written by a newer release (higher version) is refused with
:class:`~langgraph_memory.errors.CheckpointError` instead of being guessed at.
Upgrades run the steps in :data:`MIGRATIONS` in order, inside one write
transaction, so a file is never left half migrated.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import Literal

from langgraph_memory.errors import CheckpointError

__all__ = [
    "SCHEMA_VERSION",
    "MIGRATIONS",
    "Durability",
    "configure_connection",
    "ensure_schema",
    "read_schema_version",
]

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
"""Version written to ``PRAGMA user_version`` by this release."""

Durability = Literal["normal", "full"]
"""``"normal"``: WAL + ``synchronous=NORMAL``: a committed write survives any
process crash (SIGKILL, OOM); a power cut may lose the last transactions but
never corrupts the file. ``"full"``: ``synchronous=FULL``, fsync on every
commit, also survives power loss."""

_V1 = """
CREATE TABLE IF NOT EXISTS checkpoints (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    parent_checkpoint_id TEXT,
    type TEXT,
    checkpoint BLOB,
    metadata TEXT,
    run_id TEXT,
    -- wall-clock time of the write (unix seconds), for inactivity queries
    created_at REAL NOT NULL,
    -- JSON list of DeltaChannel names whose value must be rebuilt from
    -- ancestors, NULL on the (usual) checkpoints that need no ancestor walk
    delta_channels TEXT,
    -- 1 = removed by prune/delete_for_runs but kept because a surviving
    -- checkpoint's DeltaChannel history runs through it, never listed
    hidden INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE INDEX IF NOT EXISTS checkpoints_run_id
    ON checkpoints (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS checkpoints_thread_activity
    ON checkpoints (thread_id, created_at);
CREATE TABLE IF NOT EXISTS writes (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    task_path TEXT NOT NULL DEFAULT '',
    idx INTEGER NOT NULL,
    channel TEXT NOT NULL,
    type TEXT,
    value BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
"""

MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    # version reached -> step that brings a file from version - 1 to it
    1: lambda conn: _run_statements(conn, _V1),
}


def _run_statements(conn: sqlite3.Connection, script: str) -> None:
    # Not executescript: it commits first, which would end our BEGIN IMMEDIATE.
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def read_schema_version(conn: sqlite3.Connection) -> int:
    """The ``user_version`` of the open file (0 for a new file)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def configure_connection(
    conn: sqlite3.Connection, *, durability: Durability, busy_timeout: float
) -> None:
    """Apply the per-connection pragmas every connection of the saver needs."""
    if durability not in ("normal", "full"):
        from langgraph_memory.errors import ConfigError

        raise ConfigError(f"durability must be 'normal' or 'full', got {durability!r}")
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    conn.execute(f"PRAGMA synchronous = {durability.upper()}")
    # Keeps checkpoint blobs of a few KiB in memory-mapped pages, and the
    # WAL from growing without bound under a steady write load.
    conn.execute("PRAGMA temp_store = MEMORY")


def ensure_schema(conn: sqlite3.Connection) -> int:
    """Switch the file to WAL, create or migrate the tables; return the version.

    The caller retries on ``database is locked``. The connection must be in
    autocommit mode (``isolation_level=None``).
    """
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":  # e.g. a read-only or in-memory file
        logger.debug("checkpoint file journal_mode is %s, not wal", mode)
    version = read_schema_version(conn)
    if version == SCHEMA_VERSION:
        return version
    if version > SCHEMA_VERSION:
        raise CheckpointError(
            f"checkpoint file has schema version {version}, newer than this "
            f"release understands ({SCHEMA_VERSION}); upgrade langgraph-chroma-memory "
            "or open a different file."
        )
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Re-read inside the write lock: another process may have migrated.
        version = read_schema_version(conn)
        for target in range(version + 1, SCHEMA_VERSION + 1):
            logger.info("migrating checkpoint schema to version %d", target)
            MIGRATIONS[target](conn)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return SCHEMA_VERSION
