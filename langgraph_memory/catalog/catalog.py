"""The catalog file: one SQLite database in WAL mode, the truth of a data directory.

A `Catalog` owns one connection for write transactions (`Catalog.write()`,
``BEGIN IMMEDIATE``): other processes wait up to ``timeout`` seconds for the
write lock, then get [`LockTimeoutError`][langgraph_memory.errors.LockTimeoutError].
Reads (`Catalog.read()`, `Catalog.snapshot()`) take a read-only connection of
their own, so a search scoring a whole collection never holds up a put (WAL
lets readers and the one writer work side by side); a read inside a write
transaction of the same thread uses that transaction's connection. The
commit of a write transaction is the acknowledgement of every put: with WAL
and ``synchronous=NORMAL`` a committed transaction survives the process
being killed at any instant (``durability="full"`` also survives power loss,
at an ``fsync`` per commit). A large transaction's WAL checkpoint (copying
its pages into the file) runs in a thread beside the next write, not inside
its commit (`langgraph_memory._infra.wal_checkpoints`). Every SQLite or OS
error comes out typed and naming the file (`langgraph_memory._infra.sqlite.guarded()`).

The tables and what they hold are described in `langgraph_memory.catalog._schema`;
the operations on them live beside this module (`items`, `lineage`,
`fields`, `queue`), each a set of functions over a connection
so that one transaction can span several of them.

Example:
    >>> import tempfile, pathlib
    >>> cat = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> with cat.write() as conn:
    ...     cat.set_meta(conn, "greeting", "hello")
    >>> with cat.read() as conn:
    ...     cat.get_meta(conn, "greeting")
    'hello'
    >>> cat.close()
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from langgraph_memory._infra import sqlite as _sqlite
from langgraph_memory._infra.sqlite_ro import ReadOnlyConnection, connect_read_only
from langgraph_memory._infra.wal_checkpoints import WalCheckpoints
from langgraph_memory.catalog._schema import SCHEMA_VERSION, migrate
from langgraph_memory.catalog.connection import Sql
from langgraph_memory.catalog.items import NamespaceIds
from langgraph_memory.errors import ConfigError, LangGraphMemoryError, ReadOnlyError, StoreBackendError

__all__ = ["Catalog", "read_meta"]

logger = logging.getLogger(__name__)

#: A write transaction that changed at least this many rows leaves its WAL checkpoint to `WalCheckpoints`.
LARGE_WRITE_ROWS = 2000


# The settings, on either backend (`PgCatalog` shares these).
_GET_META = Sql.both("SELECT value FROM meta WHERE key = ?")
_DELETE_META = Sql.both("DELETE FROM meta WHERE key = ?")
_SET_META = Sql.both("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")


class Catalog:
    """One catalog file, safe to share between threads and processes.

    Writes go through one connection behind a lock; each concurrent read gets
    a read-only connection from a small pool (as many as reads ever ran at
    once, reused), so reads never wait for writes or for each other.

    ``dialect`` is ``"sqlite"``; `langgraph_memory.catalog.postgres.catalog.PgCatalog`
    has the same interface on a PostgreSQL server.

    Args:
        path: the SQLite file (created with its folder if missing).
        timeout: seconds to wait for another process's write transaction.
        durability: ``"normal"`` (survives a process crash) or ``"full"``
            (also survives power loss; an fsync per commit).
        read_only: read an existing file without writing anything beside it
            (`langgraph_memory._infra.sqlite_ro`); `write()` then raises
            [`ReadOnlyError`][langgraph_memory.errors.ReadOnlyError].
    """

    dialect = "sqlite"
    #: Whether the catalog lives on a server other processes share (each statement a round trip).
    on_server = False

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 30.0,
        durability: Literal["normal", "full"] = "normal",
        read_only: bool = False,
    ) -> None:
        if durability not in ("normal", "full"):
            raise ConfigError(f"durability must be 'normal' or 'full', got {durability!r}")
        self.path = Path(path)
        self.timeout = float(timeout)
        self._lock = threading.RLock()
        self._depth = 0
        self._in_snapshot = False
        #: The thread inside `write()` (its reads see the open transaction), or None.
        self._writer: int | None = None
        #: Read connections not in use (None once closed); a thread's read in progress is in ``_held.conn``.
        self._readers: list[sqlite3.Connection] | None = []
        self._readers_lock = threading.Lock()
        self._held = threading.local()
        #: namespace ids, cached for every writer of this catalog object.
        self.names = NamespaceIds()
        #: Opened with ``read_only=True``: nothing is ever written.
        self.read_only = read_only
        self._ro: ReadOnlyConnection | None = None
        self._conn: sqlite3.Connection | None = None
        #: Copies the WAL back into the file beside the writes, not inside their commits (see `WalCheckpoints`).
        self._checkpoints: WalCheckpoints | None = None
        self.catalog_id: str = ""
        #: This open made the catalog (a new memory): nothing before it could have shut down uncleanly.
        self.created = False
        if read_only:
            self._ro = connect_read_only(self.path, timeout=self.timeout)
            self._conn = self._ro.conn
            try:
                self._check_readable_schema()
                with self.read() as conn:
                    self.catalog_id = str(self.get_meta(conn, "catalog_id"))
            except BaseException:
                self.close()
                raise
            return
        self._conn = _sqlite.connect(
            self.path, timeout=self.timeout, synchronous="FULL" if durability == "full" else "NORMAL"
        )
        try:
            with _sqlite.guarded(self.path, "open"):
                self._conn.execute("PRAGMA foreign_keys = OFF")
                self._conn.execute("PRAGMA cache_size = -32768")  # 32 MB: vectors are read in bulk
            self._checkpoints = WalCheckpoints(self.path)
            with self.write() as conn:
                self.created = migrate(conn) == 0
                if self.get_meta(conn, "catalog_id") is None:
                    self.set_meta(conn, "catalog_id", uuid.uuid4().hex)
            with self.read() as conn:
                self.catalog_id = str(self.get_meta(conn, "catalog_id"))
        except BaseException:
            self.close()
            raise

    def _check_readable_schema(self) -> None:
        with self.read() as conn:
            found = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if found != SCHEMA_VERSION:
            raise ReadOnlyError(
                f"the catalog {self.path} has schema version {found}, this package reads version {SCHEMA_VERSION}; "
                "it cannot be read without upgrading it, a write. Open it once without read_only (or upgrade "
                "langgraph-chroma-memory if its version is newer).",
                self.path,
            )

    # ------------------------------------------------------------ plumbing

    @property
    def closed(self) -> bool:
        return self._conn is None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreBackendError(f"the catalog {self.path} is closed; open the store again")
        return self._conn

    def _shares_writer(self) -> bool:
        """Whether a read of this thread goes through the writer's connection (a read-only catalog has only that)."""
        return self._ro is not None or self._writer == threading.get_ident()

    @contextmanager
    def _reader(self) -> Iterator[tuple[sqlite3.Connection, bool]]:
        """A read-only connection for this thread, and whether this block took it (False: nested in another read)."""
        held = getattr(self._held, "conn", None)
        if held is not None:
            yield held, False
            return
        self._connection()  # a closed catalog says so
        with self._readers_lock:
            conn = self._readers.pop() if self._readers else None
        if conn is None:
            conn = _sqlite.connect(self.path, timeout=self.timeout)
            try:
                with _sqlite.guarded(self.path, "open"):
                    conn.execute("PRAGMA query_only = ON")  # reads only: every write goes through `write()`
                    conn.execute("PRAGMA cache_size = -32768")  # 32 MB: vectors are read in bulk
            except BaseException:
                conn.close()
                raise
        self._held.conn = conn
        try:
            yield conn, True
        finally:
            self._held.conn = None
            if conn.in_transaction:  # an error inside a snapshot: end its read transaction
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            with self._readers_lock:
                if self._readers is None:  # closed meanwhile
                    conn.close()
                else:
                    self._readers.append(conn)

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A connection for reads (inside a write transaction of this thread, that transaction's view).

        Does not wait for another thread's write: it reads the last commit.
        """
        if not self._shares_writer():
            with self._reader() as (conn, _), _sqlite.guarded(self.path, "read"):
                yield conn
            return
        with self._lock:
            conn = self._connection()
            with _sqlite.guarded(self.path, "read"):
                yield conn

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A connection inside one read transaction: every statement of the block sees the same commit.

        Inside a write transaction of this thread, that transaction's view.
        """
        if not self._shares_writer():
            with self._reader() as (conn, _):
                if conn.in_transaction:  # nested in a snapshot of this thread: its view
                    with _sqlite.guarded(self.path, "read"):
                        yield conn
                    return
                with _sqlite.guarded(self.path, "read"):
                    conn.execute("BEGIN")
                try:
                    with _sqlite.guarded(self.path, "read"):
                        yield conn
                finally:
                    with contextlib.suppress(sqlite3.Error):  # a read transaction has nothing to lose
                        conn.execute("COMMIT")
            return
        with self._lock:
            conn = self._connection()
            if self._depth or self._in_snapshot or conn.in_transaction:
                with _sqlite.guarded(self.path, "read"):
                    yield conn
                return
            with _sqlite.guarded(self.path, "read"):
                conn.execute("BEGIN")
            self._in_snapshot = True
            try:
                with _sqlite.guarded(self.path, "read"):
                    yield conn
            finally:
                self._in_snapshot = False
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error:  # a read transaction has nothing to lose
                    logger.debug("ending a read snapshot of %s failed", self.path, exc_info=True)

    @contextmanager
    def write(self, *, ordered: bool = True, late: bool = False) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: committed when the block ends, rolled back on an error.

        ``ordered`` and ``late`` are for the PostgreSQL catalog (whose writes
        that need no place in the change log may skip its write lock, and
        whose puts may take it only at their first change); SQLite serializes
        every write.

        Nested use in the same thread joins the outer transaction.
        """
        if self.read_only:
            raise ReadOnlyError(
                f"this memory was opened read-only ({self.path}); nothing can be written. "
                "Open it without read_only=True (--read-only) to write.",
                self.path,
            )
        held = getattr(self._held, "conn", None)
        if held is not None and held.in_transaction:
            raise RuntimeError("a catalog write cannot start inside a read snapshot")
        with self._lock:
            conn = self._connection()
            if self._in_snapshot:
                raise RuntimeError("a catalog write cannot start inside a read snapshot")
            if self._depth:
                self._depth += 1
                try:
                    yield conn
                finally:
                    self._depth -= 1
                return
            with _sqlite.guarded(self.path, "write"):
                _sqlite.retry_locked(
                    lambda: conn.execute("BEGIN IMMEDIATE"),
                    timeout=self.timeout,
                    what=f"write to the catalog {self.path}",
                    advice="Another process is writing a large batch; retry, or raise lock_timeout.",
                )
            self._depth = 1
            self._writer = threading.get_ident()
            changes = conn.total_changes
            try:
                yield conn
                # A large transaction (a bulk batch: thousands of rows, thousands of pages) would copy its pages
                # into the file again in the checkpoint inside its commit; a thread does that beside the next.
                large = conn.total_changes - changes >= LARGE_WRITE_ROWS
                checkpoints = self._checkpoints if large else None
                with _sqlite.guarded(self.path, "write"):
                    with checkpoints.deferred(conn) if checkpoints is not None else contextlib.nullcontext():
                        conn.execute("COMMIT")
            except BaseException as exc:
                self.names.forget_uncommitted()
                try:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                except sqlite3.Error:  # the original error is the one to report
                    logger.debug("rollback after a failed write to %s failed", self.path, exc_info=True)
                if isinstance(exc, (sqlite3.Error, OSError)) and not isinstance(exc, LangGraphMemoryError):
                    raise _sqlite.translate(exc, self.path, "write") from exc
                raise
            finally:
                self._depth = 0
                self._writer = None

    def close(self) -> None:
        """Close the file; further calls raise [`StoreBackendError`][langgraph_memory.errors.StoreBackendError]."""
        with self._lock:
            if self._checkpoints is not None:
                self._checkpoints.close()  # first: the last connection closed copies the WAL back itself
                self._checkpoints = None
            with self._readers_lock:  # readers in use are closed when their read ends (`_reader`)
                for reader in self._readers or ():
                    reader.close()
                self._readers = None
            if self._conn is not None:
                try:
                    if self._ro is not None:
                        self._ro.close()
                    else:
                        self._conn.close()
                finally:
                    self._conn = None
                    self._ro = None

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- meta

    @staticmethod
    def get_meta(conn: Any, key: str) -> str | None:
        row = conn.execute(_GET_META.of(conn), (key,)).fetchone()
        return None if row is None else row[0]

    @staticmethod
    def set_meta(conn: Any, key: str, value: str | None) -> None:
        if value is None:
            conn.execute(_DELETE_META.of(conn), (key,))
        else:
            conn.execute(_SET_META.of(conn), (key, value))

    def meta(self, key: str) -> str | None:
        """One setting, read in its own statement."""
        with self.read() as conn:
            return self.get_meta(conn, key)

    @property
    def where(self) -> str:
        """The data directory this catalog belongs to, for messages."""
        return str(self.path.parent)

    def another(self) -> Catalog:
        """A second catalog object on the same file, with a connection of its own (for long scans)."""
        return Catalog(self.path, timeout=self.timeout)

    def peek_meta(self, key: str) -> str | None:
        """One setting, read through a short-lived connection of its own (never waits for this object's lock)."""
        return read_meta(self.path, key, timeout=self.timeout)


def read_meta(path: str | os.PathLike[str], key: str, *, timeout: float = 30.0) -> str | None:
    """One setting of the catalog file ``path``, through a short-lived connection (None if absent)."""
    with _sqlite.guarded(path, "read"):
        conn = sqlite3.connect(str(path), timeout=timeout)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return None
            raise
        finally:
            conn.close()
    return None if row is None else row[0]
