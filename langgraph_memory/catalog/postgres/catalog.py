"""The catalog on a PostgreSQL server: the truth of a memory that several machines share.

`PgCatalog` has the interface of the SQLite `Catalog`
(`read()`, `snapshot()`, `write()`, `get_meta()`/`set_meta()`, ``names``,
``catalog_id``), so the store, the typed API, sessions and ingestion run on
either. It holds one connection behind a lock (the SQLite catalog reads through
connections of its own beside its writer), and hands out a `PgConnection` that runs the
catalog's named queries.

Writes are serialized across every machine by a transaction-level advisory
lock taken at ``BEGIN`` (the PostgreSQL counterpart of SQLite's ``BEGIN
IMMEDIATE``): version numbers, namespace ids and ingestion claims are
decided by one writer at a time, and the index queue's positions commit in
order, so a reader that has seen position ``n`` has seen everything before
it. A plain put (``write(late=True)``) reads the items it replaces first and
sends the lock with its changes and its ``COMMIT``, so the lock is held only
while the server runs them, never across a round trip to a client that a
busy machine has descheduled; what it read is checked again under the lock.
A write is acknowledged when PostgreSQL commits it.

When the server cannot be reached, every call raises
[`ServerUnavailableError`][langgraph_memory.errors.ServerUnavailableError] within
``timeout`` seconds; the next call connects again, so the catalog recovers
by itself once the server is back.

    cat = PgCatalog("postgresql://postgres@127.0.0.1:5432/memory")
    with cat.write() as conn:
        cat.set_meta(conn, "greeting", "hello")
    cat.close()
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import psycopg.conninfo

from langgraph_memory._infra.pg import redact, search_path_schema
from langgraph_memory.catalog.catalog import Catalog
from langgraph_memory.catalog.items import NamespaceIds
from langgraph_memory.catalog.postgres import schema
from langgraph_memory.catalog.postgres.connection import PgConnection
from langgraph_memory.errors import (
    ConfigError,
    LangGraphMemoryError,
    LockTimeoutError,
    ServerUnavailableError,
    StorageError,
    StoreBackendError,
    ValidationError,
    WriteConflictError,
)

__all__ = ["PgCatalog", "WRITE_LOCK"]

logger = logging.getLogger(__name__)

#: The advisory lock every write transaction holds until it commits ("lgm_wri").
WRITE_LOCK = 0x6C676D5F777269
# SQLSTATEs meaning the server is not there (now): connection exceptions, shutdown, start-up.
_UNAVAILABLE = ("08", "57P01", "57P02", "57P03")
_LOCK_NOT_AVAILABLE = "55P03"
_SERIALIZATION_FAILURE = "40001"
_UNIQUE_VIOLATION = "23505"
_UNTRANSLATABLE_CHARACTER = "22P05"  # "unsupported Unicode escape sequence": \u0000 in JSONB
#: Seconds a finished read transaction may wait for the next statement to carry its COMMIT.
SETTLE = 0.2


def _conninfo_keys(url: str) -> list[str]:
    """The libpq parameters ``url`` sets (none when it cannot be parsed: connecting reports that)."""
    try:
        return list(psycopg.conninfo.conninfo_to_dict(url))
    except psycopg.Error:
        return []


class PgCatalog:
    """The catalog in a PostgreSQL database, shared by every process and machine given the same address.

    Args:
        url: a ``postgresql://`` address (libpq parameters such as
            ``sslmode`` pass through).
        timeout: seconds to wait for the server (connecting) and for other
            machines' write transactions, before a typed error.
    """

    dialect = "postgresql"
    #: Whether the catalog lives on a server other processes share (each statement a round trip).
    on_server = True

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        if not isinstance(url, str) or not url:
            raise ConfigError(f"a PostgreSQL catalog needs a postgresql:// address, got {url!r}")
        self.url = url
        #: The address without its password: what messages and explain() show.
        self.path = redact(url)
        self.timeout = float(timeout)
        self._lock = threading.RLock()
        self._depth = 0
        self._in_snapshot = False
        self.names = NamespaceIds()
        self._conn: PgConnection | None = None
        self._closed = False
        self._settle = threading.Condition()
        self._settle_at: float | None = None
        self._settler: threading.Thread | None = None
        #: This open made the catalog (a new memory): nothing before it could have shut down uncleanly.
        self.created = False
        try:
            with self.write(migrating=True) as conn:
                if self.get_meta(conn, "catalog_id") is None:
                    self.created = True
                    self.set_meta(conn, "catalog_id", uuid.uuid4().hex)
            with self.read() as conn:
                self.catalog_id: str = str(self.get_meta(conn, "catalog_id"))
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ plumbing

    @property
    def closed(self) -> bool:
        return self._closed

    def _connect(self) -> PgConnection:
        if self._closed:
            raise StoreBackendError(f"the catalog {self.path} is closed; open the store again")
        if self._conn is not None and not self._conn.closed:
            return self._conn
        wait = max(1, int(round(self.timeout)))
        # The address's own libpq parameters win (application_name, sslmode...); these are defaults.
        given = set(_conninfo_keys(self.url))
        defaults: dict[str, Any] = {
            "connect_timeout": wait,
            "keepalives": 1,
            "keepalives_idle": 5,
            "keepalives_interval": 2,
            "keepalives_count": 3,
            "tcp_user_timeout": wait * 1000,
            "application_name": "langgraph-memory",
        }
        try:
            conninfo = psycopg.conninfo.make_conninfo(self.url, **{k: v for k, v in defaults.items() if k not in given})
            raw = psycopg.connect(conninfo, autocommit=True)
        except psycopg.Error as exc:
            raise self._translate(exc, "connect to") from None
        self._conn = PgConnection(raw)
        return self._conn

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # already broken: nothing to release
                logger.debug("closing a broken catalog connection failed", exc_info=True)

    def _translate(self, exc: BaseException, what: str) -> LangGraphMemoryError:
        if isinstance(exc, LangGraphMemoryError):
            return exc
        sqlstate = getattr(exc, "sqlstate", None) or ""
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        first = redact(first).replace(self.url, self.path)
        if sqlstate == _SERIALIZATION_FAILURE:
            return WriteConflictError(f"could not {what} the catalog {self.path}: {first}", self.path)
        if sqlstate == _UNIQUE_VIOLATION and self._conn is not None and self._conn.guessed_new:
            # A key sent as new exists (another machine put it): nothing was written, and the caller runs
            # the put again with its lookup, as after any conflict.
            return WriteConflictError(f"could not {what} the catalog {self.path}: a key sent as new exists", self.path)
        if sqlstate == _LOCK_NOT_AVAILABLE or "lock timeout" in first:
            return LockTimeoutError(
                f"could not {what} the catalog {self.path}: another machine held its write lock for more than "
                f"{self.timeout:g} s. Retry, or raise lock_timeout."
            )
        if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)) and (
            not sqlstate or sqlstate.startswith(_UNAVAILABLE)
        ):
            return ServerUnavailableError(
                f"could not {what} the catalog: the PostgreSQL server {self.path} is unreachable ({first}). "
                "Nothing of this call was stored; the next call reconnects.",
                self.path,
            )
        if sqlstate == _UNTRANSLATABLE_CHARACTER or "cannot contain NUL" in first:
            # The input's fault, not the storage's: PostgreSQL's TEXT and JSONB cannot hold U+0000.
            return ValidationError(
                f"could not {what} the catalog {self.path}: a text holds a NUL character (\\x00), which "
                "PostgreSQL cannot store in this field; remove it (stored values and filters may hold one)"
            )
        return StorageError(f"could not {what} the catalog {self.path}: {first}", self.path)

    @contextmanager
    def _guarded(self, what: str) -> Iterator[None]:
        try:
            yield
        except LangGraphMemoryError:
            raise
        except (psycopg.Error, OSError) as exc:
            if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)) or (
                self._conn is not None and self._conn.closed
            ):
                self._drop_connection()
            raise self._translate(exc, what) from None

    @contextmanager
    def read(self) -> Iterator[PgConnection]:
        """The connection, for reads (inside a write transaction of this thread, that transaction's view)."""
        with self._lock:
            with self._guarded("read"):
                conn = self._connect()
                yield conn

    @contextmanager
    def snapshot(self) -> Iterator[PgConnection]:
        """The connection inside one read-only repeatable-read transaction: every statement sees one commit."""
        with self._lock:
            if self._depth or self._in_snapshot:
                with self._guarded("read"):
                    yield self._connect()
                return
            with self._guarded("read"):
                conn = self._connect()
                conn.defer("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            self._in_snapshot = True
            try:
                with self._guarded("read"):
                    yield conn
            finally:
                self._in_snapshot = False
                if self._conn is conn and not conn.closed and conn.in_transaction:
                    # A read-only transaction has nothing to commit: its COMMIT goes with the next statement,
                    # or alone once the connection sat idle for SETTLE seconds (so no snapshot is held long).
                    conn.defer("COMMIT")
                    self._settle_later()

    @contextmanager
    def write(self, *, migrating: bool = False, ordered: bool = True, late: bool = False) -> Iterator[PgConnection]:
        """One transaction holding the catalog's write lock: committed when the block ends, rolled back on error.

        ``ordered=False`` skips the lock, for bookkeeping that allocates
        nothing and appends nothing to the change log (the index marking
        what it applied): it then never waits for other machines' writes.

        ``late=True`` takes the lock with the transaction's first change
        instead of at ``BEGIN``, so it is held only while the server runs the
        changes and commits, never across a round trip to this process. For
        a put, whose reads before that point are checked again under the
        lock (`PgConnection.check_when_ordered`): if another machine changed
        them, the transaction fails with
        [`WriteConflictError`][langgraph_memory.errors.WriteConflictError]
        and the caller runs it again with ``late=False``.

        Nested use in the same thread joins the outer transaction.
        """
        with self._lock:
            if self._in_snapshot:
                raise RuntimeError("a catalog write cannot start inside a read snapshot")
            if self._depth:
                self._depth += 1
                try:
                    yield self._connect()
                finally:
                    self._depth -= 1
                return
            with self._guarded("write to"):
                conn = self._connect()
                # BEGIN, the timeout and the write lock go to the server with the transaction's first statement.
                conn.defer("BEGIN")
                conn.defer(f"SET LOCAL lock_timeout = {int(self.timeout * 1000)}")
                try:
                    if migrating:
                        conn.send_deferred()
                        schema.migrate(conn.raw, schema=search_path_schema(self.url))
                    if ordered and not migrating:
                        # The lock is released when the transaction ends: its COMMIT must not wait for the disk
                        # (see PgConnection.commit_durably, which waits after the lock is gone).
                        conn.defer("SET LOCAL synchronous_commit = off")
                    if ordered and late and not migrating:
                        conn.order_lock = f"SELECT pg_advisory_xact_lock({WRITE_LOCK})"
                    elif ordered:
                        conn.defer(f"SELECT pg_advisory_xact_lock({WRITE_LOCK})")
                except BaseException:
                    self._rollback(conn)
                    raise
            self._depth = 1
            conn.batching = True
            try:
                yield conn
                with self._guarded("write to"):
                    if ordered and not migrating:
                        conn.commit_durably()
                    else:
                        conn.execute("COMMIT")
            except BaseException as exc:
                self.names.forget_uncommitted()
                self._rollback(conn)
                if isinstance(exc, (psycopg.Error, OSError)) and not isinstance(exc, LangGraphMemoryError):
                    if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
                        self._drop_connection()
                    raise self._translate(exc, "write to") from None
                raise
            finally:
                self._depth = 0
                conn.batching = False
                conn.order_lock = None
                conn.guessed_new = False

    def _settle_later(self) -> None:
        with self._settle:
            idle = self._settle_at is None
            self._settle_at = time.monotonic() + SETTLE
            if self._settler is None or not self._settler.is_alive():
                self._settler = threading.Thread(target=self._settle_loop, name="lgm-pg-settle", daemon=True)
                self._settler.start()
            if idle:
                # A settler already waiting finds the later time when its wait ends; woken by every read, it
                # took the GIL whenever the reader let go of it for a round trip.
                self._settle.notify()

    def _settle_loop(self) -> None:
        while True:
            with self._settle:
                while not self._closed and (self._settle_at is None or time.monotonic() < self._settle_at):
                    wait = None if self._settle_at is None else max(self._settle_at - time.monotonic(), 0.0)
                    self._settle.wait(wait)
                if self._closed:
                    return
                self._settle_at = None
            with self._lock:
                conn = self._conn
                if conn is None or conn.closed or self._depth or self._in_snapshot or not conn.only_ends_deferred():
                    continue
                try:
                    conn.flush()
                except psycopg.Error:  # the next call reconnects; a read transaction has nothing to lose
                    self._drop_connection()

    def _rollback(self, conn: PgConnection) -> None:
        try:
            if not conn.closed and conn.in_transaction:
                conn.execute("ROLLBACK")
        except psycopg.Error:  # the original error is the one to report
            self._drop_connection()

    def close(self) -> None:
        """Close the connection; further calls raise [`StoreBackendError`][langgraph_memory.errors.StoreBackendError]."""
        with self._lock:
            self._closed = True
            self._drop_connection()
        with self._settle:
            self._settle.notify()
            settler = self._settler
        # Closed means no thread of ours is left (the settler sees the flag and returns at once).
        if settler is not None and settler is not threading.current_thread():
            settler.join(self.timeout)

    def __enter__(self) -> PgCatalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- meta

    # The same statements as the SQLite catalog's (each picks its backend's text).
    get_meta = staticmethod(Catalog.get_meta)
    set_meta = staticmethod(Catalog.set_meta)
    meta = Catalog.meta

    @property
    def where(self) -> str:
        """The server and database of this catalog (no password), for messages."""
        return self.path

    def another(self) -> PgCatalog:
        """A second catalog object on the same database, with a connection of its own (for long scans)."""
        return PgCatalog(self.url, timeout=self.timeout)

    def peek_meta(self, key: str) -> str | None:
        """One setting, read through a short-lived connection of its own (never waits for this object's lock)."""
        wait = max(1, int(round(self.timeout)))
        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=wait) as raw:
                row = raw.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        except psycopg.Error as exc:
            raise self._translate(exc, "read") from None
        return None if row is None else str(row[0])
