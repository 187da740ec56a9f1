"""Tables and migrations of the checkpointer on PostgreSQL.

Everything lives in one PostgreSQL schema (``langgraph_memory`` unless told
otherwise), so the tables never collide with LangGraph's ``PostgresSaver``
(``public.checkpoints`` ...) in the same database: a user switching keeps
both side by side until the import is done.

``schema_version`` holds the version reached. `migrate()` runs the
missing steps of `MIGRATIONS` in order, in one transaction, under a
transaction-scoped advisory lock: two machines setting up at once run them
once, the second waits and then finds nothing to do. A database written by a
newer release is refused, never guessed at.
"""

from __future__ import annotations

import logging
import re

from langgraph_memory.errors import CheckpointError, ConfigError

__all__ = ["DEFAULT_SCHEMA", "MIGRATIONS", "SCHEMA_VERSION", "check_schema_name", "migration_script"]

logger = logging.getLogger(__name__)

DEFAULT_SCHEMA = "langgraph_memory"

# Held while migrating; any constant that other applications are unlikely to use.
ADVISORY_LOCK_KEY = 0x6C676D5F63707431  # "lgm_cpt1"

_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

# {s} is the quoted schema name. Columns match the SQLite checkpointer's
# (checkpoint/schema.py), so the shared delta and retention code runs on
# both, each with its own statements (`Queries` in checkpoint/_base.py),
# plus ``channel_versions`` as JSONB: a read joins a checkpoint's blobs in
# the same query instead of a second round trip.
_V1 = (
    """CREATE TABLE {s}.checkpoints (
        thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL DEFAULT '',
        checkpoint_id TEXT NOT NULL,
        parent_checkpoint_id TEXT,
        type TEXT,
        -- the checkpoint without channel_values (those are in blobs), except
        -- values whose channel has no version
        checkpoint BYTEA,
        channel_versions JSONB NOT NULL DEFAULT '{{}}',
        metadata JSONB NOT NULL DEFAULT '{{}}',
        run_id TEXT,
        -- wall-clock time of the write (unix seconds), for inactivity queries
        created_at DOUBLE PRECISION NOT NULL,
        -- JSON list of DeltaChannel names rebuilt from ancestors, usually NULL
        delta_channels TEXT,
        -- 1 = removed by prune/delete_for_runs but kept for a survivor's DeltaChannel history
        hidden SMALLINT NOT NULL DEFAULT 0,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
    )""",
    "CREATE INDEX checkpoints_run_id ON {s}.checkpoints (run_id) WHERE run_id IS NOT NULL",
    """CREATE TABLE {s}.blobs (
        thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL DEFAULT '',
        channel TEXT NOT NULL,
        version TEXT NOT NULL,
        type TEXT NOT NULL,
        blob BYTEA,
        PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
    )""",
    """CREATE TABLE {s}.writes (
        thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL DEFAULT '',
        checkpoint_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        task_path TEXT NOT NULL DEFAULT '',
        idx INTEGER NOT NULL,
        channel TEXT NOT NULL,
        type TEXT,
        value BYTEA,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
    )""",
    # One round trip per put: blobs and the checkpoint row in one statement,
    # and, when the caller read the parent as the thread's newest checkpoint,
    # a check under a per-thread lock that nobody stored a newer one since.
    # Two writers resuming one thread then never fork its history: the
    # later one gets SQLSTATE LGM01 (CheckpointConflictError).
    """CREATE FUNCTION {s}.put_checkpoint(
        p_thread TEXT, p_ns TEXT, p_id TEXT, p_parent TEXT, p_type TEXT, p_checkpoint BYTEA,
        p_versions JSONB, p_metadata JSONB, p_run_id TEXT, p_created DOUBLE PRECISION,
        p_delta TEXT, p_channels TEXT[], p_bversions TEXT[], p_btypes TEXT[], p_blobs BYTEA[],
        p_expect_head BOOLEAN
    ) RETURNS VOID LANGUAGE plpgsql AS $fn$
    BEGIN
        IF p_expect_head THEN
            PERFORM pg_advisory_xact_lock(hashtextextended(p_thread || chr(31) || p_ns, 0));
            IF EXISTS (
                SELECT 1 FROM {s}.checkpoints
                WHERE thread_id = p_thread AND checkpoint_ns = p_ns AND checkpoint_id <> p_id
                  AND hidden = 0 AND (p_parent IS NULL OR checkpoint_id > p_parent)
            ) THEN
                RAISE EXCEPTION 'thread % (namespace %) has a checkpoint newer than %',
                    p_thread, quote_literal(p_ns), coalesce(p_parent, 'none')
                    USING ERRCODE = 'LGM01';
            END IF;
        END IF;
        IF p_channels IS NOT NULL AND cardinality(p_channels) > 0 THEN
            INSERT INTO {s}.blobs (thread_id, checkpoint_ns, channel, version, type, blob)
            SELECT p_thread, p_ns, c, v, t, b FROM unnest(p_channels, p_bversions, p_btypes, p_blobs) AS u(c, v, t, b)
            ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING;
        END IF;
        INSERT INTO {s}.checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
            type, checkpoint, channel_versions, metadata, run_id, created_at, delta_channels, hidden)
        VALUES (p_thread, p_ns, p_id, p_parent, p_type, p_checkpoint, p_versions, p_metadata,
            p_run_id, p_created, p_delta, 0)
        ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
            parent_checkpoint_id = EXCLUDED.parent_checkpoint_id, type = EXCLUDED.type,
            checkpoint = EXCLUDED.checkpoint, channel_versions = EXCLUDED.channel_versions,
            metadata = EXCLUDED.metadata, run_id = EXCLUDED.run_id, created_at = EXCLUDED.created_at,
            delta_channels = EXCLUDED.delta_channels, hidden = 0;
    END
    $fn$""",
)

MIGRATIONS: dict[int, tuple[str, ...]] = {
    # version reached -> statements that bring a database from version - 1 to it
    1: _V1,
}

SCHEMA_VERSION = max(MIGRATIONS)
"""The version this release writes."""


def check_schema_name(name: str) -> str:
    """``name`` if it is a plain lower-case identifier, else `ConfigError`."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(
            f"schema name {name!r} is not allowed: use lower-case letters, digits and '_' "
            "(at most 63, not starting with a digit)."
        )
    return name


def _quoted(schema: str) -> str:
    return f'"{schema}"'


def preamble(schema: str) -> list[str]:
    """Statements run first in the migration transaction (the lock, then the version table)."""
    s = _quoted(schema)
    return [
        f"SELECT pg_advisory_xact_lock({ADVISORY_LOCK_KEY})",
        f"CREATE SCHEMA IF NOT EXISTS {s}",
        f"CREATE TABLE IF NOT EXISTS {s}.schema_version (version INTEGER NOT NULL)",
    ]


def version_query(schema: str) -> str:
    return f"SELECT coalesce(max(version), 0) FROM {_quoted(schema)}.schema_version"


def migration_script(schema: str, current: int) -> list[str]:
    """The statements that bring a database at version ``current`` up to `SCHEMA_VERSION`."""
    if current > SCHEMA_VERSION:
        raise CheckpointError(
            f"the checkpoint tables in schema {schema!r} have version {current}, newer than this "
            f"release understands ({SCHEMA_VERSION}); upgrade langgraph-chroma-memory or use "
            "another schema."
        )
    s = _quoted(schema)
    statements: list[str] = []
    for target in range(current + 1, SCHEMA_VERSION + 1):
        logger.info("migrating checkpoint schema %s to version %d", schema, target)
        statements.extend(statement.format(s=s) for statement in MIGRATIONS[target])
        statements.append(f"INSERT INTO {s}.schema_version (version) VALUES ({target})")
    return statements
