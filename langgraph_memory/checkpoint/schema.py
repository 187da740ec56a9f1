"""Tables, pragmas and migrations of the checkpoint file.

The schema version lives in SQLite's ``PRAGMA user_version`` so any tool can
read it without our code:

    import sqlite3

    from langgraph_memory.checkpoint.schema import SCHEMA_VERSION, read_schema_version

    conn = sqlite3.connect(":memory:")
    assert read_schema_version(conn) == 0   # a new file has no schema yet
    assert SCHEMA_VERSION >= 1

A file written by a newer release (higher version) is refused with
[`CheckpointError`][langgraph_memory.errors.CheckpointError] instead of being guessed at.
Upgrades run the steps in `MIGRATIONS` in order, inside one write
transaction, so a file is never left half migrated.

Version 2 stores channel values apart from checkpoints, one row per
``(thread_id, checkpoint_ns, channel, version)`` in ``blobs``, as LangGraph's
``InMemorySaver`` and ``PostgresSaver`` do: a ``put`` serializes and writes
only the channels whose version changed, and a checkpoint row holds the
small rest (versions, versions seen, and the rare value that has no version).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import Any, Literal

from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph_memory.errors import CheckpointError

__all__ = [
    "MIGRATIONS",
    "PUT_ROWS_SQL",
    "SCHEMA_VERSION",
    "Durability",
    "configure_connection",
    "ensure_schema",
    "install_put_rows",
    "read_schema_version",
]

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 2
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

# Version 2: channel values move to ``blobs``. The checkpoints table is
# rebuilt WITHOUT ROWID (its rows are now small, and the primary key then is
# the table: one B-tree less to write per put) and loses the
# (thread_id, created_at) index: thread activity is read by scanning the
# primary key, a maintenance query, instead of costing every put an index write.
_V2 = """
CREATE TABLE checkpoints_v2 (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    parent_checkpoint_id TEXT,
    type TEXT,
    -- the checkpoint without channel_values (values are in blobs), except
    -- values whose channel has no version, which stay here
    checkpoint BLOB,
    metadata TEXT,
    run_id TEXT,
    created_at REAL NOT NULL,
    delta_channels TEXT,
    hidden INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blobs (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL,
    -- str() of the channel version
    version TEXT NOT NULL,
    type TEXT NOT NULL,
    blob BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
)
"""

_V2_INDEXES = """
CREATE INDEX checkpoints_run_id ON checkpoints (run_id) WHERE run_id IS NOT NULL
"""

_CHECKPOINT_COLUMNS = (
    "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, "
    "metadata, run_id, created_at, delta_channels, hidden"
)


def _migrate_to_v2(conn: sqlite3.Connection, serde: SerializerProtocol) -> None:
    """Split each v1 checkpoint into its row and one blob per versioned channel value."""
    _run_statements(conn, _V2)
    keys = conn.execute("SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints").fetchall()
    stored: set[tuple[str, str, str, str]] = set()
    for key in keys:
        row = list(
            conn.execute(
                f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE thread_id = ? "
                "AND checkpoint_ns = ? AND checkpoint_id = ?",
                key,
            ).fetchone()
        )
        thread_id, checkpoint_ns = row[0], row[1]
        try:
            checkpoint: dict[str, Any] = serde.loads_typed((row[4], row[5]))
        except Exception as exc:
            raise CheckpointError(
                f"cannot migrate checkpoint {key}: it does not deserialize ({exc!r}). "
                "Open the file with the serde (e.g. the EncryptedSerializer key) that wrote it."
            ) from exc
        values = checkpoint.pop("channel_values", None) or {}
        versions = checkpoint.get("channel_versions") or {}
        inline = {ch: v for ch, v in values.items() if ch not in versions}
        if inline:
            checkpoint["channel_values"] = inline
        for ch, value in values.items():
            if ch in inline:
                continue
            blob_key = (thread_id, checkpoint_ns, ch, str(versions[ch]))
            if blob_key in stored:  # the same version under an earlier checkpoint
                continue
            stored.add(blob_key)
            conn.execute(
                "INSERT OR IGNORE INTO blobs (thread_id, checkpoint_ns, channel, version, "
                "type, blob) VALUES (?, ?, ?, ?, ?, ?)",
                (*blob_key, *serde.dumps_typed(value)),
            )
        row[4], row[5] = serde.dumps_typed(checkpoint)
        conn.execute(
            f"INSERT INTO checkpoints_v2 ({_CHECKPOINT_COLUMNS}) VALUES ({', '.join('?' * 11)})",
            row,
        )
    conn.execute("DROP TABLE checkpoints")  # its indexes go with it
    conn.execute("ALTER TABLE checkpoints_v2 RENAME TO checkpoints")
    _run_statements(conn, _V2_INDEXES)
    (logger.info if keys else logger.debug)("migrated %d checkpoints to schema version 2", len(keys))


Migration = Callable[[sqlite3.Connection, SerializerProtocol], None]

MIGRATIONS: dict[int, Migration] = {
    # version reached -> step that brings a file from version - 1 to it
    1: lambda conn, serde: _run_statements(conn, _V1),
    2: _migrate_to_v2,
}


def _run_statements(conn: sqlite3.Connection, script: str) -> None:
    # Not executescript: it commits first, which would end our BEGIN IMMEDIATE.
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


# A put writes one checkpoint row and a blob per new channel version. As two
# statements they need BEGIN ... COMMIT: four calls into SQLite, each giving
# up the GIL and waiting to get it back from a thread busy running the graph
# (up to the 5 ms switch interval each). Inserted through this view they are
# one statement, atomic by itself: a row with a NULL ``channel`` is the
# checkpoint, the others are blobs (version in ``checkpoint_id``, type and
# value in ``type`` and ``checkpoint``). TEMP, per connection: the file's
# schema stays plain tables.
_PUT_ROWS = (
    """CREATE TEMP VIEW IF NOT EXISTS put_rows (thread_id, checkpoint_ns, checkpoint_id,
        parent_checkpoint_id, type, checkpoint, metadata, run_id, created_at,
        delta_channels, channel) AS
        SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL WHERE 0""",
    """CREATE TEMP TRIGGER IF NOT EXISTS put_rows_checkpoint INSTEAD OF INSERT ON put_rows
        WHEN NEW.channel IS NULL BEGIN
        INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id,
            parent_checkpoint_id, type, checkpoint, metadata, run_id, created_at,
            delta_channels, hidden)
        VALUES (NEW.thread_id, NEW.checkpoint_ns, NEW.checkpoint_id, NEW.parent_checkpoint_id,
            NEW.type, NEW.checkpoint, NEW.metadata, NEW.run_id, NEW.created_at,
            NEW.delta_channels, 0);
    END""",
    """CREATE TEMP TRIGGER IF NOT EXISTS put_rows_blob INSTEAD OF INSERT ON put_rows
        WHEN NEW.channel IS NOT NULL BEGIN
        INSERT OR REPLACE INTO blobs (thread_id, checkpoint_ns, channel, version, type, blob)
        VALUES (NEW.thread_id, NEW.checkpoint_ns, NEW.channel, NEW.checkpoint_id, NEW.type,
            NEW.checkpoint);
    END""",
)

PUT_ROWS_SQL = "INSERT INTO put_rows VALUES {marks}"
"""Insert checkpoint and blob rows (11 values each, see ``_PUT_ROWS``) in one statement."""


def install_put_rows(conn: sqlite3.Connection) -> None:
    """Create the connection's ``put_rows`` view (after the schema is in place)."""
    for statement in _PUT_ROWS:
        conn.execute(statement)


def read_schema_version(conn: sqlite3.Connection) -> int:
    """The ``user_version`` of the open file (0 for a new file)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def configure_connection(conn: sqlite3.Connection, *, durability: Durability) -> None:
    """Apply the per-connection pragmas every connection of the saver needs.

    The busy timeout is not among them: ``sqlite3.connect(timeout=...)`` sets it.
    """
    if durability not in ("normal", "full"):
        from langgraph_memory.errors import ConfigError

        raise ConfigError(f"durability must be 'normal' or 'full', got {durability!r}")
    conn.execute(f"PRAGMA synchronous = {durability.upper()}")
    # The TEMP put_rows view and its triggers (and any sort) stay in memory.
    conn.execute("PRAGMA temp_store = MEMORY")
    # The pool checkpoints the WAL itself (see _pool).
    conn.execute("PRAGMA wal_autocheckpoint = 0")


def ensure_schema(conn: sqlite3.Connection, serde: SerializerProtocol) -> int:
    """Switch the file to WAL, create or migrate the tables; return the version.

    ``serde`` reads and rewrites stored checkpoints when a migration needs
    to (v1 to v2 does). The caller retries on ``database is locked``. The
    connection must be in autocommit mode (``isolation_level=None``).
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
        # A new file is created, not migrated: worth a line only when an existing file changes.
        log = logger.info if version else logger.debug
        for target in range(version + 1, SCHEMA_VERSION + 1):
            log("migrating checkpoint schema to version %d", target)
            MIGRATIONS[target](conn, serde)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:  # SQLite rolled back itself (disk full): keep the first error
                pass
        raise
    return SCHEMA_VERSION
