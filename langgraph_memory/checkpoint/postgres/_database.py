"""Connections to the checkpoint database: pools, typed errors, retries, reconnection.

`Database` is what `langgraph_memory.checkpoint.postgres.PostgresCheckpointer`
runs its SQL through. It owns (or borrows) a psycopg ``ConnectionPool``
for sync calls and an ``AsyncConnectionPool`` per event loop for async
ones, turns every psycopg error into a type from
`langgraph_memory.errors`, retries while the server is unreachable
(up to ``timeout`` seconds), replaces a pool stuck in backoff once the
server answers again, and creates or migrates the schema on first use.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import psycopg
from psycopg import AsyncConnection, Connection
from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolClosed, PoolTimeout

from langgraph_memory.checkpoint.postgres import _schema
from langgraph_memory.errors import (
    CheckpointConflictError,
    CheckpointError,
    CheckpointUnavailableError,
    ConfigError,
)

__all__ = ["ConnectionSource", "Database"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

ConnectionSource = "str | Connection[Any] | ConnectionPool[Any] | AsyncConnection[Any] | AsyncConnectionPool[Any]"

# Longest wait for a pooled connection before asking whether the server is back.
_SLICE = 1.0
# How long a pool closed at loop shutdown waits for its workers to stop.
_GUARD_CLOSE_SECONDS = 5.0
# SQLSTATE classes that mean "the server is not there (now)": connection
# exceptions, and the server shutting down or starting up.
_UNAVAILABLE_STATES = ("08", "57P01", "57P02", "57P03")
CONFLICT_STATE = "LGM01"  # raised by put_checkpoint (see _schema)


def _redacted(conninfo: str) -> str:
    """Host, port and database of an address: never its password."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        params = conninfo_to_dict(conninfo)
    except psycopg.Error:
        return "<unparsable address>"
    return f"{params.get('host', 'localhost')}:{params.get('port', 5432)}/{params.get('dbname', '')}"


async def _close_when_cancelled(pool: AsyncConnectionPool[Any]) -> None:
    """Wait until cancelled, then close *pool*.

    ``asyncio.run`` ends by cancelling every task once and waiting for them.
    A pool worker that is connecting at that moment catches the cancellation
    (psycopg_pool keeps its pool consistent that way) and goes back to its
    queue, so the loop would wait forever. Closing the pool sends the workers
    their stop message.
    """
    try:
        await asyncio.get_running_loop().create_future()
    finally:
        with contextlib.suppress(Exception):
            await pool.close(timeout=_GUARD_CLOSE_SECONDS)


class Database:
    """One checkpoint database, reached through a connection string, or a caller's connection or pool."""

    def __init__(self, conn: Any, *, schema: str, timeout: float, pool_size: int) -> None:
        if timeout <= 0:
            raise ConfigError(f"timeout must be positive, got {timeout}")
        self.schema = _schema.check_schema_name(schema)
        self.timeout = float(timeout)
        self.pool_size = int(pool_size)
        self._conninfo: str | None = None
        self._conn: Connection[Any] | None = None
        self._pool: ConnectionPool[Any] | None = None
        self._aconn: AsyncConnection[Any] | None = None
        self._apool: AsyncConnectionPool[Any] | None = None
        self._owns_pools = False
        if isinstance(conn, str):
            self._conninfo = conn
            self._owns_pools = True
        elif isinstance(conn, Connection):
            self._conn = conn
        elif isinstance(conn, ConnectionPool):
            self._pool = conn
        elif isinstance(conn, AsyncConnection):
            self._aconn = conn
        elif isinstance(conn, AsyncConnectionPool):
            self._apool = conn
        else:
            raise ConfigError(
                "PostgresCheckpointer needs a connection string or a psycopg connection or pool, "
                f"got {type(conn).__name__}"
            )
        self._lock = threading.Lock()  # one caller at a time on a caller's single Connection
        self._alocks: dict[int, asyncio.Lock] = {}  # the same for an AsyncConnection, per loop
        self._apool_loop: asyncio.AbstractEventLoop | None = None
        self._ready = False
        self._closed = False
        self._count_lock = threading.Lock()
        self._inflight = 0  # connections of the sync pool in use by this saver
        self._ainflight = 0
        self._retired: list[Any] = []  # old async pools being closed
        self._apool_guard: asyncio.Task[None] | None = None
        self._where = _redacted(self._conninfo) if self._conninfo else "the server"

    @property
    def conninfo(self) -> str | None:
        """The connection string this database was opened with (None for a caller's connection or pool)."""
        return self._conninfo

    # -- lifecycle ---------------------------------------------------------

    def _pool_options(self, name: str) -> dict[str, Any]:
        connection = {"autocommit": True, "prepare_threshold": 0, "connect_timeout": max(1, int(self.timeout))}
        return {"min_size": 1, "max_size": self.pool_size, "kwargs": connection, "timeout": self.timeout, "name": name}

    def _sync_pool(self) -> ConnectionPool[Any]:
        if self._closed:
            raise CheckpointError("the checkpointer is closed; open a new PostgresCheckpointer")
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    if self._conninfo is None:
                        raise ConfigError(
                            "this PostgresCheckpointer was given an async connection; call its "
                            "async methods (ainvoke), or give it a connection string or pool"
                        )
                    pool: ConnectionPool[Any] = ConnectionPool(
                        self._conninfo, open=False, **self._pool_options("lgm-checkpoint")
                    )
                    pool.open(wait=False)
                    self._pool = pool
        return self._pool

    async def _async_pool(self) -> AsyncConnectionPool[Any]:
        if self._closed:
            raise CheckpointError("the checkpointer is closed; open a new PostgresCheckpointer")
        loop = asyncio.get_running_loop()
        if self._apool is not None and (not self._owns_pools or (self._apool_loop is loop and not self._apool.closed)):
            return self._apool
        if self._conninfo is None:
            raise ConfigError(
                "this PostgresCheckpointer was given a sync connection; call its sync methods "
                "(invoke), or give it a connection string or an async pool"
            )
        # A pool belongs to the loop that opened it: a new loop (asyncio.run
        # again) gets its own, the old one is dropped with its loop.
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self._conninfo, open=False, **self._pool_options("lgm-checkpoint-async")
        )
        self._apool, self._apool_loop = pool, loop
        await pool.open(wait=False)
        self._apool_guard = loop.create_task(_close_when_cancelled(pool), name="lgm-checkpoint-pool-guard")
        return pool

    def close(self) -> None:
        """Close the connections this checkpointer opened (never a caller's own)."""
        self._closed = True
        if self._owns_pools:
            if self._pool is not None:
                self._pool.close()
            guard, loop = self._apool_guard, self._apool_loop
            if guard is not None and loop is not None and not loop.is_closed() and not loop.is_running():
                guard.cancel()  # it closes the pool
                with contextlib.suppress(BaseException):
                    loop.run_until_complete(guard)

    async def aclose(self) -> None:
        """Async `close()`."""
        self._closed = True
        if self._owns_pools:
            if self._apool is not None and self._apool_loop is asyncio.get_running_loop():
                await self._apool.close()
                if self._apool_guard is not None:
                    self._apool_guard.cancel()  # its own close of the pool is then a no-op
            if self._pool is not None:
                await asyncio.to_thread(self._pool.close)

    # -- running statements, with typed errors and reconnection --------------

    def _translate(self, exc: BaseException, what: str) -> CheckpointError:
        if isinstance(exc, CheckpointError):
            return exc
        if isinstance(exc, PoolTimeout):
            return CheckpointUnavailableError(
                f"could not {what}: no connection to the checkpoint server ({self._where}) within "
                f"{self.timeout:g} s. Is PostgreSQL running? Nothing was written."
            )
        if isinstance(exc, PoolClosed):
            return CheckpointError(f"could not {what}: the connection pool is closed")
        sqlstate = getattr(exc, "sqlstate", None)
        if sqlstate == CONFLICT_STATE:
            diag = getattr(exc, "diag", None)
            detail = getattr(diag, "message_primary", None) or str(exc)
            return CheckpointConflictError(
                f"could not {what}: another writer moved the thread on ({detail}). Read the thread "
                "again and retry; nothing was written."
            )
        if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)) and (
            sqlstate is None or sqlstate.startswith(_UNAVAILABLE_STATES)
        ):
            return CheckpointUnavailableError(
                f"could not {what}: the checkpoint server ({self._where}) is unreachable "
                f"({type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''})"
            )
        return CheckpointError(f"could not {what}: {type(exc).__name__}: {exc}")

    def _gives_up(self, exc: BaseException, what: str, deadline: float) -> CheckpointError | None:
        """The error to raise for ``exc``, or None to retry: the server is away (or the pool a call waited
        on was replaced by a fresh one, see "reconnecting"), there is time left, and the connection comes
        from a pool (a caller's single connection cannot be replaced)."""
        error = self._translate(exc, what)
        replaced = isinstance(exc, PoolClosed) and self._owns_pools and not self._closed
        if (isinstance(error, CheckpointUnavailableError) or replaced) and self._conn is None and self._aconn is None:
            if deadline > time.monotonic():
                logger.debug("retrying to %s after %r", what, exc)
                return None
        return error

    @contextlib.contextmanager
    def _connection(self, remaining: float) -> Iterator[Connection[Any]]:
        if self._conn is not None:
            with self._lock:
                yield self._conn
            return
        with self._sync_pool().connection(timeout=max(min(remaining, _SLICE), 0.001)) as conn:
            with self._count_lock:
                self._inflight += 1
            try:
                yield conn
            finally:
                with self._count_lock:
                    self._inflight -= 1

    @contextlib.asynccontextmanager
    async def _aconnection(self, remaining: float) -> AsyncIterator[AsyncConnection[Any]]:
        if self._aconn is not None:
            lock = self._alocks.setdefault(id(asyncio.get_running_loop()), asyncio.Lock())
            async with lock:
                yield self._aconn
            return
        pool = await self._async_pool()
        async with pool.connection(timeout=max(min(remaining, _SLICE), 0.001)) as conn:
            self._ainflight += 1
            try:
                yield conn
            finally:
                self._ainflight -= 1

    @staticmethod
    def _txn(conn: Connection[Any], always: bool) -> contextlib.AbstractContextManager[Any]:
        return conn.transaction() if always or not conn.autocommit else contextlib.nullcontext()

    @staticmethod
    def _atxn(conn: AsyncConnection[Any], always: bool) -> contextlib.AbstractAsyncContextManager[Any]:
        return conn.transaction() if always or not conn.autocommit else contextlib.nullcontext()

    def run(self, fn: Callable[[Connection[Any]], T], what: str, *, transaction: bool = False) -> T:
        deadline = time.monotonic() + self.timeout
        delay = 0.05
        while True:
            try:
                with self._connection(deadline - time.monotonic()) as conn:
                    if not self._ready:
                        self._setup_on(conn)
                    with self._txn(conn, transaction):
                        return fn(conn)
            except (psycopg.Error, PoolTimeout, PoolClosed) as exc:
                if (error := self._gives_up(exc, what, deadline)) is not None:
                    raise error from exc
                if isinstance(exc, PoolTimeout) and self._server_is_back(deadline - time.monotonic()):
                    continue
                time.sleep(min(delay, max(deadline - time.monotonic(), 0)))
                delay = min(delay * 2, 0.5)

    async def arun(
        self, fn: Callable[[AsyncConnection[Any]], Awaitable[T]], what: str, *, transaction: bool = False
    ) -> T:
        deadline = time.monotonic() + self.timeout
        delay = 0.05
        while True:
            try:
                async with self._aconnection(deadline - time.monotonic()) as conn:
                    if not self._ready:
                        await self._asetup_on(conn)
                    async with self._atxn(conn, transaction):
                        return await fn(conn)
            except (psycopg.Error, PoolTimeout, PoolClosed) as exc:
                if (error := self._gives_up(exc, what, deadline)) is not None:
                    raise error from exc
                if isinstance(exc, PoolTimeout) and await self._aserver_is_back(deadline - time.monotonic()):
                    continue
                await asyncio.sleep(min(delay, max(deadline - time.monotonic(), 0)))
                delay = min(delay * 2, 0.5)

    # -- reconnecting ----------------------------------------------------------
    #
    # psycopg_pool retries a lost server with exponential backoff (1, 2, 4,
    # 8 s ...), so after an outage of a few seconds its next attempt can come
    # long after the server is back. When a pool of ours has no free
    # connection, this saver is not using all of them (so the pool is not
    # merely busy) and a direct connection succeeds, the pool is replaced by a
    # fresh one, which connects at once.

    def _probe_timeout(self, remaining: float) -> int:
        return max(1, int(min(remaining, 2.0)))

    def _server_is_back(self, remaining: float) -> bool:
        if not self._owns_pools or self._conninfo is None or self._pool is None:
            return False
        with self._count_lock:
            if self._inflight >= self.pool_size:
                return False
        try:
            psycopg.connect(self._conninfo, connect_timeout=self._probe_timeout(remaining)).close()
        except psycopg.Error:
            return False
        with self._lock:
            old, self._pool = self._pool, None
        logger.info("checkpoint server %s is back: opening a new connection pool", self._where)
        if old is not None:
            threading.Thread(target=old.close, name="lgm-pool-close", daemon=True).start()
        return True

    async def _aserver_is_back(self, remaining: float) -> bool:
        if not self._owns_pools or self._conninfo is None or self._apool is None:
            return False
        if self._ainflight >= self.pool_size:
            return False
        try:
            conn = await psycopg.AsyncConnection.connect(self._conninfo, connect_timeout=self._probe_timeout(remaining))
            await conn.close()
        except psycopg.Error:
            return False
        old, self._apool, self._apool_loop = self._apool, None, None
        logger.info("checkpoint server %s is back: opening a new connection pool", self._where)
        if old is not None:
            task = asyncio.get_running_loop().create_task(old.close())
            self._retired.append(task)
            task.add_done_callback(self._retired.remove)
        return True

    # -- schema ------------------------------------------------------------

    def _setup_on(self, conn: Connection[Any]) -> None:
        with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
            for statement in _schema.preamble(self.schema):
                cur.execute(statement)
            cur.execute(_schema.version_query(self.schema))
            row = cur.fetchone()
            for statement in _schema.migration_script(self.schema, int(row[0]) if row else 0):
                cur.execute(statement)
        self._ready = True

    async def _asetup_on(self, conn: AsyncConnection[Any]) -> None:
        async with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
            for statement in _schema.preamble(self.schema):
                await cur.execute(statement)
            await cur.execute(_schema.version_query(self.schema))
            row = await cur.fetchone()
            for statement in _schema.migration_script(self.schema, int(row[0]) if row else 0):
                await cur.execute(statement)
        self._ready = True

    def setup(self) -> None:
        """Create or migrate the tables (idempotent; safe from several machines at once).

        Any first call does this too; call it to fail early on a bad address.
        """
        self._ready = False
        self.run(lambda conn: None, "set up the checkpoint tables")

    async def asetup(self) -> None:
        """Async `setup()`."""
        self._ready = False
        await self.arun(self._anothing, "set up the checkpoint tables")

    @staticmethod
    async def _anothing(conn: AsyncConnection[Any]) -> None:
        return None

    def schema_version(self) -> int:
        """The version of the tables in the database (0 before `setup()`)."""

        def read(conn: Connection[Any]) -> int:
            with conn.cursor(row_factory=tuple_row) as cur:
                row = cur.execute("SELECT to_regclass(%s)", (f'"{self.schema}".schema_version',)).fetchone()
                if row is None or row[0] is None:
                    return 0
                found = cur.execute(_schema.version_query(self.schema)).fetchone()
                return int(found[0]) if found else 0

        return self.run(read, "read the schema version")

    # -- single statements ----------------------------------------------------------

    def fetch(self, sql: str, params: Any, what: str, *, binary: bool = True) -> list[tuple[Any, ...]]:
        """The rows of one statement, as tuples whatever the connection's row factory."""

        def read(conn: Connection[Any]) -> list[tuple[Any, ...]]:
            with conn.cursor(row_factory=tuple_row, binary=binary) as cur:
                cur.execute(sql, params)
                return cur.fetchall()

        return self.run(read, what)

    async def afetch(self, sql: str, params: Any, what: str) -> list[tuple[Any, ...]]:
        """Async `fetch()`."""

        async def read(conn: AsyncConnection[Any]) -> list[tuple[Any, ...]]:
            async with conn.cursor(row_factory=tuple_row, binary=True) as cur:
                await cur.execute(sql, params)
                return await cur.fetchall()

        return await self.arun(read, what)

    def execute(self, sql: str, params: Any, what: str) -> None:
        """Run one write statement, atomic by itself, committed before this returns."""
        self.run(lambda conn: conn.execute(sql, params), what)

    async def aexecute(self, sql: str, params: Any, what: str) -> None:
        """Async `execute()`.

        Each write commits by itself. Grouping the writes that arrive
        together into one commit measured within noise of this on graph runs
        (1.04x and 1.07x steps/s, against 1.08x and 1.01x between two runs of
        the same sync code in the same rounds), so it was removed.
        """

        async def write(conn: AsyncConnection[Any]) -> None:
            await conn.execute(sql, params)

        await self.arun(write, what)
