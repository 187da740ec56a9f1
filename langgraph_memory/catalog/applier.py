"""Who applies a collection's change log to a shared Chroma server: one process at a time.

With the catalog on a PostgreSQL server, every process that writes asks
for the index to catch up after its commit. Without a claim each of them
reads the same pending rows and upserts the same vectors into the one
Chroma server (measured: 8 processes applied each change several times
over). `try_claim()` takes a session-level advisory lock named after the
collection, without waiting; the process that gets it applies everything
pending, the others wait for the applied position to pass what they wrote
(`applied()`), or for their own turn. The server drops the lock with its
connection, so a process that dies never leaves the log unapplied.

A SQLite catalog lives on one machine, where the index already has a lock
of its own: there every claim succeeds at once.

    if try_claim(conn, "memories"):
        try:
            ...  # apply the pending rows
        finally:
            release(conn, "memories")
"""

from __future__ import annotations

import sqlite3

from langgraph_memory.catalog.postgres.dialect import POSTGRESQL, dialect_of

__all__ = ["APPLY_LOCK_CLASS", "try_claim", "release"]

#: The first half of the two-part advisory lock key ("lgma"); the second is the collection name's hash.
APPLY_LOCK_CLASS = 0x6C676D61


def try_claim(conn: sqlite3.Connection, collection: str) -> bool:
    """Whether this connection now applies ``collection``'s log (never waits; always True on SQLite)."""
    if dialect_of(conn) != POSTGRESQL:
        return True
    row = conn.execute("SELECT pg_try_advisory_lock(?, hashtext(?))", (APPLY_LOCK_CLASS, collection)).fetchone()
    return bool(row[0])


def release(conn: sqlite3.Connection, collection: str) -> None:
    """Give up the claim on ``collection`` (a connection that was lost has given it up already)."""
    if dialect_of(conn) == POSTGRESQL:
        conn.execute("SELECT pg_advisory_unlock(?, hashtext(?))", (APPLY_LOCK_CLASS, collection)).fetchone()
