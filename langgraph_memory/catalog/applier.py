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

    with claimed(catalog, "memories"):
        ...  # apply the pending rows
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from langgraph_memory.catalog.connection import POSTGRESQL, dialect_of

if TYPE_CHECKING:
    from langgraph_memory.catalog.catalog import Catalog

__all__ = ["APPLY_LOCK_CLASS", "claim", "try_claim", "release", "claimed"]

#: The first half of the two-part advisory lock key ("lgma"); the second is the collection name's hash.
APPLY_LOCK_CLASS = 0x6C676D61

# PostgreSQL's only: a SQLite catalog needs no claim.
_LOCK = "SELECT pg_advisory_lock(%s, hashtext(%s))"
_TRY_LOCK = "SELECT pg_try_advisory_lock(%s, hashtext(%s))"
_UNLOCK = "SELECT pg_advisory_unlock(%s, hashtext(%s))"


def claim(conn: sqlite3.Connection, collection: str) -> None:
    """Wait for the claim on ``collection``'s log (in a transaction: its ``lock_timeout`` bounds the wait).

    The claim outlives the transaction; `release()` gives it up.
    """
    if dialect_of(conn) == POSTGRESQL:
        conn.execute(_LOCK, (APPLY_LOCK_CLASS, collection)).fetchone()


def try_claim(conn: sqlite3.Connection, collection: str) -> bool:
    """Whether this connection now applies ``collection``'s log (never waits; always True on SQLite)."""
    if dialect_of(conn) != POSTGRESQL:
        return True
    row = conn.execute(_TRY_LOCK, (APPLY_LOCK_CLASS, collection)).fetchone()
    return bool(row[0])


def release(conn: sqlite3.Connection, collection: str) -> None:
    """Give up the claim on ``collection`` (a connection that was lost has given it up already)."""
    if dialect_of(conn) == POSTGRESQL:
        conn.execute(_UNLOCK, (APPLY_LOCK_CLASS, collection)).fetchone()


@contextmanager
def claimed(catalog: Catalog, collection: str) -> Iterator[None]:
    """Hold the claim on ``collection``'s log for the block (at once on a catalog no other machine shares).

    The wait takes a write transaction of its own (its ``lock_timeout``
    bounds it); a SQLite catalog opens none. The claim belongs to the
    connection that took it, the writer's (reads have connections of their
    own), so the release goes through a write too.
    """
    if not catalog.on_server:
        yield
        return
    with catalog.write(ordered=False) as conn:
        claim(conn, collection)
    try:
        yield
    finally:
        with catalog.write(ordered=False) as conn:
            release(conn, collection)
