"""Connections to one checkpoint file, shared safely by threads and processes.

SQLite connections are cheap to keep and expensive to open, and one
connection must not run two statements at once. The pool hands each caller a
connection of its own for the length of one operation and takes it back
afterwards, so any number of threads (LangGraph's background executor, our
``asyncio.to_thread``) share a handful of connections without a global lock.

WAL checkpoints are ours, not SQLite's: every connection has
``wal_autocheckpoint`` off, and the pool runs a PASSIVE checkpoint every
``_COMMITS_PER_CHECKPOINT`` commits, under the write lock. Left to SQLite's
automatic checkpoint, sync graph runs measured 0.83x-0.99x of this in four
interleaved runs (bench/checkpoint/checkpoint_sqlite_ab.py).

Writes take the file's write lock up front (``BEGIN IMMEDIATE``) so two
writers never deadlock upgrading read locks; a lock that cannot be had is
retried with back-off until ``busy_timeout`` and then reported as
[`LockTimeoutError`][langgraph_memory.errors.LockTimeoutError], never as a raw
``sqlite3.OperationalError: database is locked``.

No SQLite error leaves the pool raw (`_ConnectionPool.error()`): a
problem of the file itself raises the data directory's storage errors, as
every file of it does ([`CorruptFileError`][langgraph_memory.errors.CorruptFileError],
[`ReadOnlyError`][langgraph_memory.errors.ReadOnlyError],
[`DiskFullError`][langgraph_memory.errors.DiskFullError], or a plain
[`StorageError`][langgraph_memory.errors.StorageError] for another I/O error), each
naming the file and the fix; anything else (a statement SQLite rejects) is a
[`CheckpointError`][langgraph_memory.errors.CheckpointError].
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph_memory._infra.sqlite import retry_locked, translate
from langgraph_memory._infra.sqlite_ro import ReadOnlyConnection, connect_read_only
from langgraph_memory.checkpoint.schema import (
    SCHEMA_VERSION,
    Durability,
    configure_connection,
    ensure_schema,
    install_put_rows,
    read_schema_version,
)
from langgraph_memory.errors import (
    CheckpointError,
    LangGraphMemoryError,
    LockTimeoutError,
    ReadOnlyError,
    StorageError,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

Statement = tuple[str, Sequence[Any], bool]
"""``(sql, params, many)``: one write statement; ``many`` means ``executemany``."""

_COMMITS_PER_CHECKPOINT = 200
"""Commits between WAL checkpoints: ~1,000 WAL pages (SQLite's own default
trigger) for a chat graph's puts of ~5 pages each."""


class _ConnectionPool:
    """A free list of autocommit connections to one SQLite file."""

    def __init__(
        self,
        path: Path,
        *,
        durability: Durability,
        busy_timeout: float,
        serde: SerializerProtocol,
        read_only: bool = False,
    ) -> None:
        self.path = path
        # Read-only: nothing is written beside the file (see _infra.sqlite_ro); a missing file reads as empty.
        self.read_only = read_only
        self._serde = serde
        self._ro: list[ReadOnlyConnection] = []
        self.durability: Durability = durability
        self.busy_timeout = busy_timeout
        self._free: list[sqlite3.Connection] = []
        self._commits = 0  # by any writer of this pool, for WAL checkpoints; under _write_lock
        self._lock = threading.Lock()
        # Writers of this process queue here rather than in SQLite's busy
        # handler, which polls with sleeps; other processes still wait there.
        self._write_lock = threading.Lock()
        self._closed = False
        # The first connection creates or migrates the schema; each then gets its put_rows view.
        self._schema_ready = read_only
        conn = self._open()
        if not read_only:
            try:
                self.retry(lambda: ensure_schema(conn, serde), what="open the checkpoint file")
                install_put_rows(conn)
            except BaseException:
                conn.close()
                raise
            self._schema_ready = True
        self._free.append(conn)

    def _open_read_only(self) -> sqlite3.Connection:
        if not self.path.exists():
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            ensure_schema(conn, self._serde)
            return conn
        ro = connect_read_only(self.path, timeout=self.busy_timeout)
        found = read_schema_version(ro.conn)
        if found != SCHEMA_VERSION:
            ro.close()
            raise ReadOnlyError(
                f"checkpoint file {self.path} has schema version {found}, this package reads version "
                f"{SCHEMA_VERSION}; open it once without read_only to upgrade it.",
                self.path,
            )
        with self._lock:
            self._ro.append(ro)
        return ro.conn

    def _open(self) -> sqlite3.Connection:
        if self.read_only:
            return self._open_read_only()
        busy_timeout = self.busy_timeout
        try:
            conn = sqlite3.connect(
                str(self.path),
                isolation_level=None,  # we issue BEGIN/COMMIT ourselves
                check_same_thread=False,  # a pooled connection moves between threads
                timeout=busy_timeout,
                cached_statements=256,
            )
        except sqlite3.Error as exc:
            raise self.error(exc, "open the checkpoint file") from exc
        try:
            self.retry(
                lambda: configure_connection(conn, durability=self.durability),
                what="configure the checkpoint connection",
            )
            if self._schema_ready:
                self.retry(lambda: install_put_rows(conn), what="open the checkpoint file")
        except BaseException:
            conn.close()
            raise
        return conn

    def error(self, exc: sqlite3.Error, what: str) -> LangGraphMemoryError:
        """The typed error for a SQLite error met while trying to ``what`` (see the module doc)."""
        kind = translate(exc, self.path, f"{what} in")
        if type(kind) is StorageError and (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF != sqlite3.SQLITE_IOERR:
            return CheckpointError(f"could not {what} in {self.path}: {exc}")  # not the file: the statement
        return kind

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """Borrow a connection for one operation."""
        with self._lock:
            if self._closed:
                raise CheckpointError(f"checkpointer for {self.path} is closed; open a new one.")
            conn = self._free.pop() if self._free else None
        conn = conn or self._open()
        try:
            yield conn
        finally:
            rollback(conn)  # whatever an exception left open
            with self._lock:
                if self._closed:
                    conn.close()
                else:
                    self._free.append(conn)

    def retry(self, fn: Callable[[], T], *, what: str) -> T:
        """Run ``fn``, retrying while the file is locked, up to ``busy_timeout``.

        SQLite's own busy handler covers most waits; this loop covers the
        cases where SQLite returns SQLITE_BUSY at once (WAL recovery, a
        checkpoint in progress, a snapshot that went stale).
        """
        try:
            return retry_locked(
                fn,
                timeout=self.busy_timeout,
                what=f"{what} in {self.path}",
                advice="Raise lock_timeout, or find the process holding a long transaction.",
            )
        except sqlite3.Error as exc:  # not a lock: a broken file, a full disk, a bad statement
            raise self.error(exc, what) from exc

    def read(self, fn: Callable[[sqlite3.Connection], T], *, what: str) -> T:
        """Run ``fn(conn)`` on a pooled connection, outside any write lock."""
        with self.connection() as conn:
            return self.retry(lambda: fn(conn), what=what)

    def _acquire_write_lock(self, what: str) -> None:
        if self.read_only:
            raise ReadOnlyError(
                f"could not {what}: the checkpointer of {self.path} was opened read-only. "
                "Open it without read_only=True (--read-only) to write.",
                self.path,
            )
        if not self._write_lock.acquire(timeout=self.busy_timeout):
            raise LockTimeoutError(
                f"could not {what}: another thread of this process held the write "
                f"lock on {self.path} for more than {self.busy_timeout:g} s."
            )

    def write(self, fn: Callable[[sqlite3.Connection], T], *, what: str, begin: bool = True) -> T:
        """Run ``fn(conn)`` in one ``BEGIN IMMEDIATE`` transaction, committed on return.

        Without ``begin``, ``fn`` runs in autocommit mode: for one statement,
        atomic by itself, it saves the BEGIN and COMMIT round trips.
        """

        def attempt(conn: sqlite3.Connection) -> T:
            if not begin:
                return fn(conn)
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
                conn.execute("COMMIT")
            except BaseException:
                rollback(conn)
                raise
            return result

        self._acquire_write_lock(what)
        try:
            with self.connection() as conn:
                result = self.retry(lambda: attempt(conn), what=what)
                self._commits += 1
                if self._commits % _COMMITS_PER_CHECKPOINT == 0:
                    try:  # PASSIVE: copies what no reader still needs, never waits
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    except sqlite3.Error as exc:
                        logger.debug("WAL checkpoint of %s failed: %s", self.path, exc)
                return result
        finally:
            self._write_lock.release()

    def write_statements(self, statements: Sequence[Statement], *, what: str) -> None:
        """Commit ``statements``: a lone statement by itself, several in one transaction, none not at all."""
        if statements:
            lone = len(statements) == 1 and not statements[0][2]
            self.write(lambda conn: execute_statements(conn, statements), what=what, begin=not lone)

    def close(self) -> None:
        """Close every idle connection; busy ones close when handed back."""
        with self._lock:
            self._closed = True
            free, self._free = self._free, []
            ro, self._ro = self._ro, []
        for conn in free:
            try:
                conn.close()
            except sqlite3.Error:
                logger.debug("closing a checkpoint connection failed", exc_info=True)
        for handle in ro:  # removes any private copy (closing a closed connection is harmless)
            handle.close()


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back what an error left open, keeping that error: on a full disk or an
    I/O error SQLite may have rolled back already, and a failing ROLLBACK must not
    replace the first error."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            logger.debug("rollback after failure failed", exc_info=True)


def execute_statements(conn: sqlite3.Connection, statements: Sequence[Statement]) -> None:
    for sql, params, many in statements:
        if many:
            conn.executemany(sql, params)
        else:
            conn.execute(sql, params)
