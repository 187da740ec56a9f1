"""The catalog on a PostgreSQL server: the truth of a memory that several machines share.

`PgCatalog` has the interface of the SQLite `Catalog`
(`read()`, `snapshot()`, `write()`, `get_meta()`/`set_meta()`, ``names``,
``catalog_id``), so the store, the typed API, sessions and ingestion run on
either. Writes go through one connection behind a lock; each read takes a
connection of its own from a small pool (`READERS`, opened as reads need
them), so a put never waits for another thread's search, nor a search for a
put; a read inside a write transaction of the same thread uses that
transaction's connection (as the SQLite catalog does). Each is a
`PgConnection`, which runs the catalog's named queries.

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

import contextlib
import logging
import threading
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
#: Read connections per catalog object at most: a search, the index catching up and a reader or two beside the
#: writer's one. Each is a server process; a read beyond these waits for one (up to ``timeout``).
READERS = 4

#: Items added since PostgreSQL last counted the catalog's tables, at which those tables are analyzed again:
#: at least this many, and at least as many as it counted (so a load analyzes them O(log n) times).
ANALYZE_AFTER = 1_000
# Until its tables are analyzed, PostgreSQL guesses their sizes and selectivities: measured at 100,000 items
# loaded into a new catalog before autovacuum had come by (80 s after the load began), a lookup of three
# items' vectors took a parallel hash join over every item (25-40 ms against 0.1), and searches at rest 3-10x
# their time once analyzed. Autovacuum analyzes on its own schedule; a bulk load should not wait for it.
_ANALYZE = "ANALYZE items, vectors, fields, keyword_postings, keyword_lengths, index_queue, item_history, namespaces"
_ITEMS_COUNTED = "SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'items'::regclass"


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
        #: The writer's connection and its transaction (reads of other threads never take it).
        self._lock = threading.RLock()
        self._depth = 0
        #: The thread inside `write()` (its reads see the open transaction), or None.
        self._writer: int | None = None
        self.names = NamespaceIds()
        self._conn: PgConnection | None = None
        self._closed = False
        #: Read connections not in use; a thread's read in progress holds its own in ``_held.conn``.
        self._readers: list[PgConnection] = []
        self._readers_lock = threading.Lock()
        self._reader_slots = threading.BoundedSemaphore(READERS)
        self._held = threading.local()
        #: Items PostgreSQL counted when it last analyzed the tables (read at the first bulk write), and added since.
        self._counted: int | None = None
        self._added = 0
        self._analyzing = False
        self._stats_lock = threading.Lock()
        #: This open made the catalog (a new memory): nothing before it could have shut down uncleanly.
        self.created = False
        try:
            with self.write(migrating=True) as conn:  # read in the write: no read connection opened yet
                found = self.get_meta(conn, "catalog_id")
                if found is None:
                    self.created = True
                    found = uuid.uuid4().hex
                    self.set_meta(conn, "catalog_id", found)
            self.catalog_id: str = str(found)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ plumbing

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise StoreBackendError(f"the catalog {self.path} is closed; open the store again")

    def _connect(self) -> PgConnection:
        """The writer's connection, opened if need be."""
        self._check_open()
        if self._conn is None or self._conn.closed:
            self._conn = self._open()
        return self._conn

    def _open(self) -> PgConnection:
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
        return PgConnection(raw)

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
    def _guarded(self, what: str, reader: PgConnection | None = None) -> Iterator[None]:
        """Errors typed; a connection that broke is dropped (the writer's, or ``reader``)."""
        try:
            yield
        except LangGraphMemoryError:
            raise
        except (psycopg.Error, OSError) as exc:
            conn = self._conn if reader is None else reader
            if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)) or (
                conn is not None and conn.closed
            ):
                if reader is None:
                    self._drop_connection()
                else:
                    self._drop_readers(reader)
            raise self._translate(exc, what) from None

    def _drop_readers(self, broken: PgConnection) -> None:
        """Close ``broken`` and the idle readers: when one lost the server, the others did too (a restart), and
        each would fail its next read instead of connecting again."""
        with self._readers_lock:
            idle, self._readers = self._readers, []
        for conn in [broken, *idle]:
            with contextlib.suppress(Exception):  # already broken: nothing to release
                conn.close()

    def _idle_reader(self) -> PgConnection | None:
        """A pooled read connection that still reaches the server (those that do not are closed), or None."""
        while True:
            with self._readers_lock:
                if not self._readers:
                    return None
                conn = self._readers.pop()
            if conn.alive():
                return conn
            with contextlib.suppress(Exception):
                conn.close()

    def _writes_here(self) -> bool:
        """Whether this thread is inside `write()`: its reads must see that transaction, on its connection."""
        return self._writer == threading.get_ident()

    @contextmanager
    def _reader(self) -> Iterator[PgConnection]:
        """A read connection for this thread (the one it holds already, in a nested read)."""
        held: PgConnection | None = getattr(self._held, "conn", None)
        if held is not None:
            yield held
            return
        self._check_open()
        if not self._reader_slots.acquire(timeout=self.timeout):
            raise LockTimeoutError(
                f"could not read the catalog {self.path}: its {READERS} read connections were all in use for "
                f"{self.timeout:g} s. Look for reads left open (a generator not run to its end), or raise lock_timeout."
            )
        try:
            conn = self._idle_reader() or self._open()
            self._held.conn = conn
            try:
                yield conn
            finally:
                self._held.conn = None
                with self._readers_lock:
                    if self._closed or conn.closed:
                        keep = False
                    else:
                        self._readers.append(conn)
                        keep = True
                if not keep:
                    with contextlib.suppress(Exception):
                        conn.close()
        finally:
            self._reader_slots.release()

    @contextmanager
    def read(self) -> Iterator[PgConnection]:
        """A connection for reads (inside a write transaction of this thread, that transaction's view).

        Does not wait for another thread's write: it reads the last commit.
        """
        if self._writes_here():
            with self._lock, self._guarded("read"):
                yield self._connect()
            return
        with self._reader() as conn, self._guarded("read", conn):
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[PgConnection]:
        """A connection inside one read-only repeatable-read transaction: every statement sees one commit.

        Inside a write transaction of this thread, that transaction's view;
        nested in a snapshot of this thread, that snapshot's.
        """
        if self._writes_here():
            with self._lock, self._guarded("read"):
                yield self._connect()
            return
        with self._reader() as conn:
            with self._guarded("read", conn):
                nested = conn.in_transaction  # reads the answer of the last COMMIT sent: may find the server gone
            if nested:
                with self._guarded("read", conn):
                    yield conn
                return
            # BEGIN goes to the server with the first statement, and the COMMIT without waiting for its answer.
            conn.defer("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                with self._guarded("read", conn):
                    yield conn
            finally:
                try:
                    conn.end_read()
                except psycopg.Error:  # a read transaction has nothing to lose; the next read reconnects
                    self._drop_readers(conn)

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
        held: PgConnection | None = getattr(self._held, "conn", None)
        if held is not None:
            with self._guarded("read", held):
                if held.in_transaction:
                    raise RuntimeError("a catalog write cannot start inside a read snapshot")
        added = 0
        with self._lock:
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
            self._writer = threading.get_ident()
            conn.batching = True
            try:
                yield conn
                with self._guarded("write to"):
                    if ordered and not migrating:
                        conn.commit_durably()
                    else:
                        conn.execute("COMMIT")
                added = conn.items_added
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
                self._writer = None
                conn.batching = False
                conn.order_lock = None
                conn.guessed_new = False
                conn.items_added = 0
        if added:
            self._keep_statistics(added)

    def _keep_statistics(self, added: int) -> None:
        """Analyze the catalog's tables once the items added since PostgreSQL last counted them reach its count.

        Runs after the commit, on a read connection: other threads' writes do
        not wait for it, only the thread whose write made the tables grow
        (0.35 s at 100,000 items). A failure is logged, not raised: the write
        it follows is committed.
        """
        with self._stats_lock:
            self._added += added
            if self._analyzing or (self._counted is not None and self._added < max(ANALYZE_AFTER, self._counted)):
                return
            self._analyzing = True  # the lock is not held while it runs: a put adding an item takes it
        try:
            counted = self._counted
            if counted is None:  # the first write adding items since the catalog opened
                with self.read() as conn:
                    counted = int(conn.execute(_ITEMS_COUNTED).fetchone()[0])
            if self._added >= max(ANALYZE_AFTER, counted):
                self.analyze()
            else:
                with self._stats_lock:
                    self._counted = counted
        except LangGraphMemoryError as exc:
            logger.warning("could not analyze the catalog's tables after a bulk write: %s", exc)
        finally:
            self._analyzing = False

    def analyze(self) -> None:
        """Have PostgreSQL count the catalog's tables now (the planner's statistics), as after a bulk copy.

        `langgraph_memory.catalog.transfer` runs it once a copy into this catalog is written: rows it inserts
        are not puts, so nothing else would until autovacuum came by.
        """
        with self.read() as conn:
            conn.execute(_ANALYZE)
            counted = int(conn.execute(_ITEMS_COUNTED).fetchone()[0])
        with self._stats_lock:
            self._counted = counted
            self._added = 0

    def _rollback(self, conn: PgConnection) -> None:
        try:
            if not conn.closed and conn.in_transaction:
                conn.execute("ROLLBACK")
        except psycopg.Error:  # the original error is the one to report
            self._drop_connection()

    def close(self) -> None:
        """Close the connections; further calls raise [`StoreBackendError`][langgraph_memory.errors.StoreBackendError].

        A read in progress in another thread keeps its connection until it ends, then closes it.
        """
        with self._lock:
            self._closed = True
            self._drop_connection()
        with self._readers_lock:
            idle, self._readers = self._readers, []
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.close()

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
