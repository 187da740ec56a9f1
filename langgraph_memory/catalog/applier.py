"""Who applies a collection's change log to a shared Chroma server: one process at a time.

With the catalog on a PostgreSQL server, every process that writes asks
for the index to catch up after its commit. Without a claim each of them
reads the same pending rows and upserts the same vectors into the one
Chroma server (measured: 8 processes applied each change several times
over). `claim()` takes a session-level advisory lock named after the
collection (waiting, inside a transaction, up to its ``lock_timeout``): one
process applies everything pending while the others wait for their turn,
and then usually find nothing left to apply. The server drops the lock with
its connection, so a process that dies never leaves the log unapplied.

A SQLite catalog lives on one machine, where the index already has a lock
of its own: there every claim succeeds at once.

    with catalog.write(ordered=False) as conn:
        claim(conn, "memories")
    try:
        ...  # apply the pending rows
    finally:
        with catalog.read() as conn:
            release(conn, "memories")
"""

from __future__ import annotations

import sqlite3

from langgraph_memory.catalog.postgres.dialect import POSTGRESQL, dialect_of

__all__ = ["APPLY_LOCK_CLASS", "claim", "try_claim", "release"]

#: The first half of the two-part advisory lock key ("lgma"); the second is the collection name's hash.
APPLY_LOCK_CLASS = 0x6C676D61


def claim(conn: sqlite3.Connection, collection: str) -> None:
    """Wait for the claim on ``collection``'s log (in a transaction: its ``lock_timeout`` bounds the wait).

    The claim outlives the transaction; `release()` gives it up.
    """
    if dialect_of(conn) == POSTGRESQL:
        conn.execute("SELECT pg_advisory_lock(?, hashtext(?))", (APPLY_LOCK_CLASS, collection)).fetchone()


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
