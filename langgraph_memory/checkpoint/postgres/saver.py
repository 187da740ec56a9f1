"""``PostgresCheckpointer``: LangGraph state on a PostgreSQL server, for ``invoke`` and ``ainvoke``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from datetime import timedelta
from types import TracebackType
from typing import Any, TypeVar

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_id,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from psycopg import AsyncConnection, Connection
from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolClosed, PoolTimeout

from langgraph_memory.checkpoint import _delta, _maintenance
from langgraph_memory.checkpoint._maintenance import ThreadInfo
from langgraph_memory.checkpoint.postgres import _schema, _sql
from langgraph_memory.checkpoint.postgres._compat import LoopConnection, SyncConnection
from langgraph_memory.checkpoint.postgres._group import AsyncGroupCommit, GroupCommit
from langgraph_memory.errors import (
    CheckpointConflictError,
    CheckpointError,
    CheckpointUnavailableError,
    ConfigError,
)

__all__ = ["PostgresCheckpointer"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_LIST_PAGE = 100  # rows per round trip when list() has no small limit
# Longest wait for a pooled connection before asking whether the server is back.
_SLICE = 1.0
_HEADS_TRACKED = 10_000  # empty (thread, namespace) reads remembered for their first put
# SQLSTATE classes that mean "the server is not there (now)": connection
# exceptions, and the server shutting down or starting up.
_UNAVAILABLE_STATES = ("08", "57P01", "57P02", "57P03")
_CONFLICT_STATE = "LGM01"
_LATEST = "__lgm_latest__"  # see "conflict detection" below; "__" keys never reach metadata


def _redacted(conninfo: str) -> str:
    try:
        from psycopg.conninfo import conninfo_to_dict

        params = conninfo_to_dict(conninfo)
    except psycopg.Error:
        return "<unparsable address>"
    return f"{params.get('host', 'localhost')}:{params.get('port', 5432)}/{params.get('dbname', '')}"


class PostgresCheckpointer(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer on PostgreSQL, for sync and async graphs alike.

    One instance serves ``invoke``/``stream`` and ``ainvoke``/``astream``:
    the sync methods use a psycopg ``ConnectionPool``, the async ones an
    ``AsyncConnectionPool`` (the async driver: nothing blocks the event loop).
    Several processes and machines may share one database.

    * **Two writers on one thread never fork it.** When a writer stores a
      child of the checkpoint it read as the thread's newest, and another
      writer has stored a newer one meanwhile, the put raises
      :class:`~langgraph_memory.errors.CheckpointConflictError` instead of
      adding a second branch. Replays and forks from an older checkpoint (a
      ``checkpoint_id`` in the config) are not affected.
    * **Faults are typed and bounded.** While the server is unreachable a
      call retries for ``timeout`` seconds, then raises
      :class:`~langgraph_memory.errors.CheckpointUnavailableError`; when the
      server is back the pool reconnects by itself. A call returns only after
      PostgreSQL committed its write.
    * **Small tables.** Only channels whose version changed are written
      (blobs keyed by channel and version), DeltaChannels store their value
      only at snapshots, and ``prune``/``prune_inactive`` shrink old threads
      exactly as :class:`~langgraph_memory.checkpoint.SqliteCheckpointer` does.

    The tables live in their own PostgreSQL schema (``langgraph_memory``),
    created and migrated by :meth:`setup`, which the first call also runs.

    Args:
        conn: A connection string (``postgresql://user@host:5432/db``), or a
            psycopg ``Connection``, ``ConnectionPool``, ``AsyncConnection`` or
            ``AsyncConnectionPool`` of the caller (its connections should be
            ``autocommit=True``, as LangGraph's ``PostgresSaver`` requires;
            otherwise each call runs in its own transaction).
        serde: Serializer; default LangGraph's ``JsonPlusSerializer``.
        schema: PostgreSQL schema that holds the tables.
        timeout: Seconds a call waits for the server before raising
            ``CheckpointUnavailableError``.
        pool_size: Most connections each pool (sync, async) opens.
        check_conflicts: Refuse a second child of a thread's newest checkpoint
            (see above). ``False`` stores whatever it is given.

    Example:
        ```python
        from langgraph.graph import StateGraph

        from langgraph_memory.checkpoint.postgres import PostgresCheckpointer

        builder = StateGraph(int)
        builder.add_node("add_one", lambda x: x + 1)
        builder.set_entry_point("add_one")
        builder.set_finish_point("add_one")

        with PostgresCheckpointer.from_conn_string("postgresql://postgres@127.0.0.1:5432/postgres") as saver:
            saver.setup()
            graph = builder.compile(checkpointer=saver)
            config = {"configurable": {"thread_id": "t1"}}
            graph.invoke(1, config)
        ```
    """

    def __init__(
        self,
        conn: str | Connection[Any] | ConnectionPool[Any] | AsyncConnection[Any] | AsyncConnectionPool[Any],
        *,
        serde: SerializerProtocol | None = None,
        schema: str = _schema.DEFAULT_SCHEMA,
        timeout: float = 10.0,
        pool_size: int = 5,
        check_conflicts: bool = True,
    ) -> None:
        super().__init__(serde=serde)
        if timeout <= 0:
            raise ConfigError(f"timeout must be positive, got {timeout}")
        self.schema = _schema.check_schema_name(schema)
        self.timeout = float(timeout)
        self.pool_size = int(pool_size)
        self.check_conflicts = check_conflicts
        self._sql = _sql.Statements.for_schema(self.schema)
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
        self._empty: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._inflight = 0  # connections of the sync pool in use by this saver
        self._ainflight = 0
        self._retired: list[Any] = []  # old async pools being closed
        # put and put_writes share commits when they arrive together (see _group).
        self._group = GroupCommit(self._flush)
        self._agroups: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncGroupCommit] = (
            weakref.WeakKeyDictionary()
        )
        self._heads_lock = threading.Lock()
        self._where = _redacted(self._conninfo) if self._conninfo else "the server"

    @classmethod
    def from_conn_string(cls, conn_string: str, **kwargs: Any) -> PostgresCheckpointer:
        """A checkpointer on ``conn_string``, usable in ``with`` and ``async with``.

        Code written for ``PostgresSaver.from_conn_string`` and
        ``AsyncPostgresSaver.from_conn_string`` runs unchanged; connections
        are opened on first use and closed when the block ends.
        """
        return cls(conn_string, **kwargs)

    # -- lifecycle ---------------------------------------------------------

    def _new_pool_kwargs(self) -> dict[str, Any]:
        return {
            "autocommit": True,
            "prepare_threshold": 0,
            "connect_timeout": max(1, int(self.timeout)),
        }

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
                        self._conninfo,
                        min_size=1,
                        max_size=self.pool_size,
                        kwargs=self._new_pool_kwargs(),
                        timeout=self.timeout,
                        open=False,
                        name="lgm-checkpoint",
                    )
                    pool.open(wait=False)
                    self._pool = pool
        return self._pool

    async def _async_pool(self) -> AsyncConnectionPool[Any]:
        if self._closed:
            raise CheckpointError("the checkpointer is closed; open a new PostgresCheckpointer")
        loop = asyncio.get_running_loop()
        if self._apool is not None and (not self._owns_pools or self._apool_loop is loop):
            return self._apool
        if self._conninfo is None:
            raise ConfigError(
                "this PostgresCheckpointer was given a sync connection; call its sync methods "
                "(invoke), or give it a connection string or an async pool"
            )
        # A pool belongs to the loop that opened it: a new loop (asyncio.run
        # again) gets its own, the old one is dropped with its loop.
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self._conninfo,
            min_size=1,
            max_size=self.pool_size,
            kwargs=self._new_pool_kwargs(),
            timeout=self.timeout,
            open=False,
            name="lgm-checkpoint-async",
        )
        self._apool, self._apool_loop = pool, loop
        await pool.open(wait=False)
        return pool

    def close(self) -> None:
        """Close the connections this checkpointer opened (never a caller's own)."""
        self._closed = True
        if self._owns_pools:
            if self._pool is not None:
                self._pool.close()
            apool, loop = self._apool, self._apool_loop
            if apool is not None and loop is not None and not loop.is_closed() and not loop.is_running():
                with contextlib.suppress(Exception):
                    loop.run_until_complete(apool.close())

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        self._closed = True
        if self._owns_pools:
            if self._apool is not None and self._apool_loop is asyncio.get_running_loop():
                await self._apool.close()
            if self._pool is not None:
                await asyncio.to_thread(self._pool.close)

    def __enter__(self) -> PostgresCheckpointer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> PostgresCheckpointer:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

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
        if sqlstate == _CONFLICT_STATE:
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

    def _retry_allowed(self) -> bool:
        # A caller's single connection cannot be replaced; pools can.
        return self._conn is None and self._aconn is None

    @contextlib.contextmanager
    def _connection(self, remaining: float) -> Iterator[Connection[Any]]:
        if self._conn is not None:
            with self._lock:
                yield self._conn
            return
        with self._sync_pool().connection(timeout=max(min(remaining, _SLICE), 0.001)) as conn:
            with self._heads_lock:
                self._inflight += 1
            try:
                yield conn
            finally:
                with self._heads_lock:
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

    def _run(self, fn: Callable[[Connection[Any]], T], what: str, *, transaction: bool = False) -> T:
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
                error = self._translate(exc, what)
                remaining = deadline - time.monotonic()
                if isinstance(error, CheckpointUnavailableError) and self._retry_allowed() and remaining > 0:
                    logger.debug("retrying to %s after %r", what, exc)
                    if isinstance(exc, PoolTimeout) and self._server_is_back(remaining):
                        continue
                    time.sleep(min(delay, max(deadline - time.monotonic(), 0)))
                    delay = min(delay * 2, 0.5)
                    continue
                raise error from exc

    async def _arun(
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
                error = self._translate(exc, what)
                remaining = deadline - time.monotonic()
                if isinstance(error, CheckpointUnavailableError) and self._retry_allowed() and remaining > 0:
                    logger.debug("retrying to %s after %r", what, exc)
                    if isinstance(exc, PoolTimeout) and await self._aserver_is_back(remaining):
                        continue
                    await asyncio.sleep(min(delay, max(deadline - time.monotonic(), 0)))
                    delay = min(delay * 2, 0.5)
                    continue
                raise error from exc

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
        with self._heads_lock:
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
            conn = await psycopg.AsyncConnection.connect(
                self._conninfo, connect_timeout=self._probe_timeout(remaining)
            )
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

    def _run_compat(self, fn: Callable[[SyncConnection], T], what: str) -> T:
        """Run shared SQLite-dialect code (delta, retention) in one transaction."""
        return self._run(lambda conn: fn(SyncConnection(conn, self.schema)), what, transaction=True)

    async def _arun_compat(self, fn: Callable[[LoopConnection], T], what: str) -> T:
        """Async :meth:`_run_compat`: the code runs on a worker thread, its SQL on this loop."""
        loop = asyncio.get_running_loop()

        async def run(conn: AsyncConnection[Any]) -> T:
            return await asyncio.to_thread(fn, LoopConnection(conn, self.schema, loop))

        return await self._arun(run, what, transaction=True)

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
        self._run(lambda conn: None, "set up the checkpoint tables")

    async def asetup(self) -> None:
        """Async :meth:`setup`."""
        self._ready = False
        await self._arun(self._anothing, "set up the checkpoint tables")

    @staticmethod
    async def _anothing(conn: AsyncConnection[Any]) -> None:
        return None

    def schema_version(self) -> int:
        """The version of the tables in the database (0 before :meth:`setup`)."""

        def read(conn: Connection[Any]) -> int:
            with conn.cursor(row_factory=tuple_row) as cur:
                row = cur.execute("SELECT to_regclass(%s)", (f'"{self.schema}".schema_version',)).fetchone()
                if row is None or row[0] is None:
                    return 0
                found = cur.execute(_schema.version_query(self.schema)).fetchone()
                return int(found[0]) if found else 0

        return self._run(read, "read the schema version")

    # -- conflict detection -------------------------------------------------
    #
    # A graph run starts with get_tuple; LangGraph passes the configurable
    # keys of the tuple it read on to every put of the run. A read of the
    # thread's latest checkpoint marks its config with _LATEST, so the puts
    # of that run (and only those: a replay or fork names its checkpoint_id
    # and is read without the mark) ask the server to check that the parent
    # is still the newest. A read that found an empty thread is remembered
    # here, for the run's first, parentless put.

    def _saw_empty(self, thread_id: str, checkpoint_ns: str) -> None:
        if self.check_conflicts:
            with self._heads_lock:
                self._empty[(thread_id, checkpoint_ns)] = None
                if len(self._empty) > _HEADS_TRACKED:
                    self._empty.popitem(last=False)

    def _expects_head(self, config: RunnableConfig, args: _sql.PutArgs) -> bool:
        if not self.check_conflicts:
            return False
        if args.parent_id is not None:
            return config["configurable"].get(_LATEST) is True
        with self._heads_lock:
            return self._empty.pop((args.thread_id, args.checkpoint_ns), False) is None

    # -- reading -----------------------------------------------------------

    def _get_query(self, config: RunnableConfig) -> tuple[str, tuple[Any, ...], tuple[str, str] | None]:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id:
            return self._sql.get_by_id, (thread_id, checkpoint_ns, checkpoint_id), None
        return self._sql.get_latest, (thread_id, checkpoint_ns), (thread_id, checkpoint_ns)

    def _tuple_of(self, row: Sequence[Any] | None, latest: tuple[str, str] | None) -> CheckpointTuple | None:
        if row is None:
            if latest is not None:
                self._saw_empty(*latest)
            return None
        found = _sql.row_to_tuple(self.serde, row)
        if latest is not None and self.check_conflicts:
            found.config["configurable"][_LATEST] = True
        return found

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the thread's latest; None if absent."""
        sql, params, latest = self._get_query(config)

        def read(conn: Connection[Any]) -> Sequence[Any] | None:
            with conn.cursor(row_factory=tuple_row, binary=True) as cur:
                cur.execute(sql, params)
                return cur.fetchone()

        return self._tuple_of(self._run(read, "read a checkpoint"), latest)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async ``get_tuple``."""
        sql, params, latest = self._get_query(config)

        async def read(conn: AsyncConnection[Any]) -> Sequence[Any] | None:
            async with conn.cursor(row_factory=tuple_row, binary=True) as cur:
                await cur.execute(sql, params)
                return await cur.fetchone()

        return self._tuple_of(await self._arun(read, "read a checkpoint"), latest)

    def _page_sql(self, where: str, order: list[str], after: tuple[Any, ...] | None) -> str:
        clause = where
        if after is not None:
            columns = ", ".join(f"c.{name}" for name in order)
            marks = ", ".join(["%s"] * len(order))
            clause += f" AND ({columns}) < ({marks})" if len(order) > 1 else " AND c.checkpoint_id < %s"
        ordering = ", ".join(f"c.{name} DESC" for name in order)
        return f"{self._sql.select} WHERE {clause} ORDER BY {ordering} LIMIT %s"

    def _list_plan(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Iterator[tuple[str, list[Any], int]]:
        """(sql, params, size) of successive pages; the caller sends back each page's last row."""
        where, params, order = _sql.list_query(self._sql, config, filter, before)
        remaining = limit
        after: tuple[Any, ...] | None = None
        while remaining is None or remaining > 0:
            size = _LIST_PAGE if remaining is None else min(remaining, _LIST_PAGE * 10)
            sql = self._page_sql(where, order, after)
            rows = yield sql, [*params, *(after or ()), size], size  # type: ignore[misc]
            if remaining is not None:
                remaining -= len(rows)
            if len(rows) < size:
                return
            last = rows[-1]
            by_name = {"thread_id": last[0], "checkpoint_ns": last[1], "checkpoint_id": last[2]}
            after = tuple(by_name[name] for name in order)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints matching ``config``, metadata ``filter`` and ``before``, newest first.

        Read in pages along an index: breaking out early is cheap, and no
        connection is held between pages.
        """
        plan = self._list_plan(config, filter, before, limit)
        try:
            sql, params, _size = next(plan)
            while True:

                def read(conn: Connection[Any], sql: str = sql, params: list[Any] = params) -> list[Any]:
                    with conn.cursor(row_factory=tuple_row, binary=True) as cur:
                        cur.execute(sql, params)
                        return cur.fetchall()

                rows = self._run(read, "list checkpoints")
                for row in rows:
                    yield _sql.row_to_tuple(self.serde, row)
                sql, params, _size = plan.send(rows)
        except StopIteration:
            return

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async ``list``."""
        plan = self._list_plan(config, filter, before, limit)
        try:
            sql, params, _size = next(plan)
            while True:

                async def read(
                    conn: AsyncConnection[Any], sql: str = sql, params: list[Any] = params
                ) -> list[Any]:
                    async with conn.cursor(row_factory=tuple_row, binary=True) as cur:
                        await cur.execute(sql, params)
                        return await cur.fetchall()

                rows = await self._arun(read, "list checkpoints")
                for row in rows:
                    yield _sql.row_to_tuple(self.serde, row)
                sql, params, _size = plan.send(rows)
        except StopIteration:
            return

    def explain_list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
        analyze: bool = False,
    ) -> str:
        """PostgreSQL's plan for the first page ``list`` would read (``EXPLAIN``), as text.

        Example:
            >>> print(saver.explain_list({"configurable": {"thread_id": "t"}}, limit=10))  # doctest: +SKIP
            Limit  ->  Index Scan Backward using checkpoints_pkey on checkpoints c ...
        """
        sql, params, _size = next(self._list_plan(config, filter, before, limit))
        verb = "EXPLAIN (ANALYZE, BUFFERS)" if analyze else "EXPLAIN"

        def read(conn: Connection[Any]) -> str:
            with conn.cursor(row_factory=tuple_row) as cur:
                cur.execute(f"{verb} {sql}", params)
                return "\n".join(str(row[0]) for row in cur.fetchall())

        return self._run(read, "explain list")

    # -- writing -----------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint as a child of the one ``config`` names; return its config.

        Committed when this returns. Raises ``CheckpointConflictError`` if
        the parent was read as the thread's newest checkpoint and another
        writer has stored a newer one since.
        """
        args = _sql.put_args(self.serde, config, checkpoint, metadata, new_versions)
        params = args.with_expect_head(self._expects_head(config, args))
        self._group.submit((self._sql.put, params, "save a checkpoint"))
        return self._saved_config(args)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async ``put``: committed before the await returns."""
        args = _sql.put_args(self.serde, config, checkpoint, metadata, new_versions)
        params = args.with_expect_head(self._expects_head(config, args))
        await self._agroup().submit((self._sql.put, params, "save a checkpoint"))
        return self._saved_config(args)

    @staticmethod
    def _saved_config(args: _sql.PutArgs) -> RunnableConfig:
        return {
            "configurable": {
                "thread_id": args.thread_id,
                "checkpoint_ns": args.checkpoint_ns,
                "checkpoint_id": args.checkpoint_id,
            }
        }

    def _writes_statement(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> tuple[str, list[Any]] | None:
        found = _sql.writes_args(self.serde, config, writes, task_id, task_path)
        if found is None:
            return None
        kind, params = found
        sql = {"regular": self._sql.writes_regular, "special": self._sql.writes_special}.get(
            kind, self._sql.writes_both
        )
        return sql, params

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes against a checkpoint, in one statement.

        Idempotent per (task, index): a regular write already stored is kept;
        special writes (error, interrupt, resume, scheduled) replace the
        previous one, as in LangGraph's savers.
        """
        statement = self._writes_statement(config, writes, task_id, task_path)
        if statement is not None:
            self._group.submit((*statement, "save pending writes"))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async ``put_writes``."""
        statement = self._writes_statement(config, writes, task_id, task_path)
        if statement is not None:
            await self._agroup().submit((*statement, "save pending writes"))

    # -- group commit ------------------------------------------------------------

    def _agroup(self) -> AsyncGroupCommit:
        loop = asyncio.get_running_loop()
        group = self._agroups.get(loop)
        if group is None:
            group = self._agroups[loop] = AsyncGroupCommit(self._aflush)
        return group

    def _flush(self, batch: list[tuple[str, Any, str]]) -> list[BaseException | None]:
        """Commit writes in one transaction; one error (or None) per write."""
        if len(batch) == 1:
            sql, params, what = batch[0]
            try:
                self._run(lambda conn: conn.execute(sql, params), what)
            except Exception as exc:
                return [exc]
            return [None]

        def write_all(conn: Connection[Any]) -> None:
            if not conn.autocommit:
                with conn.transaction():
                    for sql, params, _what in batch:
                        conn.execute(sql, params)
                return
            # BEGIN and COMMIT as statements of the pipeline: the whole batch is
            # one round trip (transaction() would add a sync before and after).
            try:
                with conn.pipeline():
                    conn.execute("BEGIN")
                    for sql, params, _what in batch:
                        conn.execute(sql, params)
                    conn.execute("COMMIT")
            except BaseException:
                if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    conn.rollback()
                raise

        try:
            self._run(write_all, "save checkpoints")
        except CheckpointUnavailableError as exc:
            return [exc] * len(batch)
        except Exception:
            # One write failed (a conflict, a deadlock between two batches):
            # commit each alone, so only the failing one reports it.
            return [self._flush([member])[0] for member in batch]
        return [None] * len(batch)

    async def _aflush(self, batch: list[tuple[str, Any, str]]) -> list[BaseException | None]:
        """Async :meth:`_flush`."""
        if len(batch) == 1:
            sql, params, what = batch[0]

            async def write(conn: AsyncConnection[Any]) -> None:
                await conn.execute(sql, params)

            try:
                await self._arun(write, what)
            except Exception as exc:
                return [exc]
            return [None]

        async def write_all(conn: AsyncConnection[Any]) -> None:
            if not conn.autocommit:
                async with conn.transaction():
                    for sql, params, _what in batch:
                        await conn.execute(sql, params)
                return
            try:
                async with conn.pipeline():
                    await conn.execute("BEGIN")
                    for sql, params, _what in batch:
                        await conn.execute(sql, params)
                    await conn.execute("COMMIT")
            except BaseException:
                if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    await conn.rollback()
                raise

        try:
            await self._arun(write_all, "save checkpoints")
        except CheckpointUnavailableError as exc:
            return [exc] * len(batch)
        except Exception:
            return [(await self._aflush([member]))[0] for member in batch]
        return [None] * len(batch)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Next channel version: a zero-padded counter plus a random tie-breaker."""
        import random

        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"

    # -- DeltaChannel history ----------------------------------------------

    def _delta_history(
        self, config: RunnableConfig, channels: list[str]
    ) -> Callable[[Any], Mapping[str, DeltaChannelHistory]]:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        checkpoint_id = get_checkpoint_id(config)

        def read(conn: Any) -> Mapping[str, DeltaChannelHistory]:
            target = checkpoint_id
            if not target:
                found = conn.execute(
                    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND "
                    "checkpoint_ns = ? AND hidden = 0 ORDER BY checkpoint_id DESC LIMIT 1",
                    (thread_id, checkpoint_ns),
                ).fetchone()
                if found is None:
                    return {ch: {"writes": []} for ch in channels}
                target = found[0]
            return _delta.delta_channel_history(conn, self.serde, thread_id, checkpoint_ns, target, channels)

        return read

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Writes and seed per delta channel (the SQLite checkpointer's walk, on PostgreSQL)."""
        if not channels:
            return {}
        return self._run_compat(self._delta_history(config, list(channels)), "read delta channel history")

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async ``get_delta_channel_history``."""
        if not channels:
            return {}
        return await self._arun_compat(
            self._delta_history(config, list(channels)), "read delta channel history"
        )

    # -- deleting, pruning, copying ------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, blob and write of a thread, in all namespaces."""
        params = (str(thread_id),) * 3
        self._run(lambda conn: conn.execute(self._sql.delete_thread, params), "delete a thread")

    async def adelete_thread(self, thread_id: str) -> None:
        """Async ``delete_thread``."""
        params = (str(thread_id),) * 3

        async def write(conn: AsyncConnection[Any]) -> None:
            await conn.execute(self._sql.delete_thread, params)

        await self._arun(write, "delete a thread")

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and writes) of the given runs; DeltaChannel-safe (see SqliteCheckpointer)."""
        ids = [str(r) for r in run_ids]
        if ids:
            self._run_compat(
                lambda conn: _maintenance.delete_for_runs(conn, self.serde, ids), "delete checkpoints of runs"
            )

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async ``delete_for_runs``."""
        ids = [str(r) for r in run_ids]
        if ids:
            await self._arun_compat(
                lambda conn: _maintenance.delete_for_runs(conn, self.serde, ids), "delete checkpoints of runs"
            )

    @staticmethod
    def _check_strategy(strategy: str) -> None:
        if strategy not in ("keep_latest", "delete"):
            raise ConfigError(f"prune strategy must be 'keep_latest' or 'delete', got {strategy!r}")

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Shrink threads: ``"keep_latest"`` keeps the newest checkpoint per namespace, ``"delete"`` all."""
        ids = [str(t) for t in thread_ids]
        self._check_strategy(strategy)
        if ids:
            self._run_compat(lambda conn: _maintenance.prune(conn, self.serde, ids, strategy), "prune threads")

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async ``prune``."""
        ids = [str(t) for t in thread_ids]
        self._check_strategy(strategy)
        if ids:
            await self._arun_compat(
                lambda conn: _maintenance.prune(conn, self.serde, ids, strategy), "prune threads"
            )

    def _copy_statements(self, source: str, target: str) -> list[tuple[str, tuple[Any, ...]]]:
        s = f'"{self.schema}"'
        now = time.time()
        return [
            (
                f"INSERT INTO {s}.checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
                "type, checkpoint, channel_versions, metadata, run_id, created_at, delta_channels, hidden) "
                "SELECT %s, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, "
                f"channel_versions, metadata, run_id, %s, delta_channels, hidden FROM {s}.checkpoints "
                "WHERE thread_id = %s ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET "
                "parent_checkpoint_id = EXCLUDED.parent_checkpoint_id, type = EXCLUDED.type, "
                "checkpoint = EXCLUDED.checkpoint, channel_versions = EXCLUDED.channel_versions, "
                "metadata = EXCLUDED.metadata, run_id = EXCLUDED.run_id, created_at = EXCLUDED.created_at, "
                "delta_channels = EXCLUDED.delta_channels, hidden = EXCLUDED.hidden",
                (target, now, source),
            ),
            (
                f"INSERT INTO {s}.writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, "
                "channel, type, value) SELECT %s, checkpoint_ns, checkpoint_id, task_id, task_path, idx, "
                f"channel, type, value FROM {s}.writes WHERE thread_id = %s "
                "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET "
                "task_path = EXCLUDED.task_path, channel = EXCLUDED.channel, type = EXCLUDED.type, "
                "value = EXCLUDED.value",
                (target, source),
            ),
            (
                f"INSERT INTO {s}.blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
                f"SELECT %s, checkpoint_ns, channel, version, type, blob FROM {s}.blobs WHERE thread_id = %s "
                "ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO UPDATE SET "
                "type = EXCLUDED.type, blob = EXCLUDED.blob",
                (target, source),
            ),
        ]

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's whole history (all namespaces, writes, hidden ancestors) to another id."""
        source, target = str(source_thread_id), str(target_thread_id)
        if source == target:
            return

        def write(conn: Connection[Any]) -> None:
            for sql, params in self._copy_statements(source, target):
                conn.execute(sql, params)

        self._run(write, "copy a thread", transaction=True)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async ``copy_thread``."""
        source, target = str(source_thread_id), str(target_thread_id)
        if source == target:
            return

        async def write(conn: AsyncConnection[Any]) -> None:
            for sql, params in self._copy_statements(source, target):
                await conn.execute(sql, params)

        await self._arun(write, "copy a thread", transaction=True)

    # -- thread activity, for the archive job ---------------------------------

    def list_threads(self) -> list[ThreadInfo]:
        """Every thread with its last activity time (UTC), most recently active first."""
        return self._run_compat(_maintenance.list_threads, "list threads")

    async def alist_threads(self) -> list[ThreadInfo]:
        """Async ``list_threads``."""
        return await self._arun_compat(_maintenance.list_threads, "list threads")

    def _prune_inactive(self, older_than: timedelta, strategy: str) -> Callable[[Any], list[str]]:
        self._check_strategy(strategy)
        if older_than.total_seconds() < 0:
            raise ConfigError(f"older_than must not be negative, got {older_than}")
        cutoff = time.time() - older_than.total_seconds()

        def write(conn: Any) -> list[str]:
            ids = [
                thread_id
                for (thread_id,) in conn.execute(
                    "SELECT thread_id FROM checkpoints GROUP BY thread_id "
                    "HAVING MAX(created_at) < ? ORDER BY MAX(created_at), thread_id",
                    (cutoff,),
                )
            ]
            _maintenance.prune(conn, self.serde, ids, strategy)
            logger.info("pruned %d inactive threads (%s)", len(ids), strategy)
            return ids

        return write

    def prune_inactive(self, older_than: timedelta, *, strategy: str = "keep_latest") -> list[str]:
        """Prune (or delete) threads with no checkpoint written for ``older_than``; return their ids.

        Choosing and pruning happen in one transaction.
        """
        return self._run_compat(self._prune_inactive(older_than, strategy), "prune inactive threads")

    async def aprune_inactive(self, older_than: timedelta, *, strategy: str = "keep_latest") -> list[str]:
        """Async ``prune_inactive``."""
        return await self._arun_compat(self._prune_inactive(older_than, strategy), "prune inactive threads")
