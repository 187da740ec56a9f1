"""``PostgresCheckpointer``: LangGraph state on a PostgreSQL server, for ``invoke`` and ``ainvoke``."""

from __future__ import annotations

import asyncio
import builtins
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from psycopg import AsyncConnection, Connection
from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from langgraph_memory.checkpoint import _rows
from langgraph_memory.checkpoint._base import CheckpointerBase
from langgraph_memory.checkpoint.postgres import _schema, _sql
from langgraph_memory.checkpoint.postgres._database import Database

__all__ = ["PostgresCheckpointer"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
_HEADS_TRACKED = 10_000  # empty (thread, namespace) reads remembered for their first put
_LATEST = "__lgm_latest__"  # see "conflict detection" below; "__" keys never reach metadata


class PostgresCheckpointer(CheckpointerBase):
    """A LangGraph checkpointer on PostgreSQL, for sync and async graphs alike.

    One instance serves ``invoke``/``stream`` and ``ainvoke``/``astream``:
    the sync methods use a psycopg ``ConnectionPool``, the async ones an
    ``AsyncConnectionPool`` (the async driver: nothing blocks the event loop).
    Several processes and machines may share one database.

    * **Two writers on one thread never fork it.** When a writer stores a
      child of the checkpoint it read as the thread's newest, and another
      writer has stored a newer one meanwhile, the put raises
      `langgraph_memory.errors.CheckpointConflictError` instead of
      adding a second branch. Replays and forks from an older checkpoint (a
      ``checkpoint_id`` in the config) are not affected.
    * **Faults are typed and bounded.** While the server is unreachable a
      call retries for ``timeout`` seconds, then raises
      `langgraph_memory.errors.CheckpointUnavailableError`; when the
      server is back the pool reconnects by itself. A call returns only after
      PostgreSQL committed its write.
    * **Small tables.** Only channels whose version changed are written
      (blobs keyed by channel and version), DeltaChannels store their value
      only at snapshots, and ``prune``/``prune_inactive`` shrink old threads
      exactly as `langgraph_memory.checkpoint.SqliteCheckpointer` does.

    The tables live in their own PostgreSQL schema (``langgraph_memory``),
    created and migrated by `setup()`, which the first call also runs.

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
        self._db = Database(conn, schema=schema, timeout=timeout, pool_size=pool_size)
        self.schema = self._db.schema
        self.timeout = self._db.timeout
        self.pool_size = self._db.pool_size
        self.check_conflicts = check_conflicts
        self._sql = _sql.Statements.for_schema(self.schema)
        self.queries = _sql.queries(self.schema)
        self._empty: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._heads_lock = threading.Lock()

    @classmethod
    def from_conn_string(cls, conn_string: str, **kwargs: Any) -> PostgresCheckpointer:
        """A checkpointer on ``conn_string``, usable in ``with`` and ``async with``.

        Code written for ``PostgresSaver.from_conn_string`` and
        ``AsyncPostgresSaver.from_conn_string`` runs unchanged; connections
        are opened on first use and closed when the block ends.
        """
        return cls(conn_string, **kwargs)

    # -- lifecycle ---------------------------------------------------------

    @property
    def database(self) -> Database:
        """The connection layer: pools, typed errors, retries (for tools such as ``transfer``)."""
        return self._db

    def setup(self) -> None:
        """Create or migrate the tables (idempotent; safe from several machines at once).

        Any first call does this too; call it to fail early on a bad address.
        """
        self._db.setup()

    async def asetup(self) -> None:
        """Async `setup()`."""
        await self._db.asetup()

    def schema_version(self) -> int:
        """The version of the tables in the database (0 before `setup()`)."""
        return self._db.schema_version()

    def close(self) -> None:
        """Close the connections this checkpointer opened (never a caller's own)."""
        self._db.close()

    async def aclose(self) -> None:
        """Async `close()`."""
        await self._db.aclose()

    # -- connections, for the shared core (see checkpoint/_base) ----------------

    def _read(self, fn: Callable[[Any], T], what: str) -> T:
        return self._db.run(fn, what, transaction=True)

    _write = _read  # every call on PostgreSQL runs in a transaction of its own

    async def _aread(self, fn: Callable[[Any], T], what: str) -> T:
        # The shared code is synchronous: it runs on a worker thread, and each of
        # its statements runs on this loop's async connection.
        loop = asyncio.get_running_loop()

        async def run(conn: AsyncConnection[Any]) -> T:
            return await asyncio.to_thread(fn, _LoopConnection(conn, loop))

        return await self._db.arun(run, what, transaction=True)

    _awrite = _aread

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

    def _put_params(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, versions: ChannelVersions
    ) -> tuple[tuple[str, builtins.list[Any]], RunnableConfig]:
        row = _sql.put_row(self.serde, config, checkpoint, metadata, versions)
        if not self.check_conflicts:
            expect_head = False
        elif row.parent_id is not None:
            expect_head = config["configurable"].get(_LATEST) is True
        else:
            with self._heads_lock:
                expect_head = self._empty.pop((row.thread_id, row.checkpoint_ns), False) is None
        return (self._sql.put, _sql.put_params(row, checkpoint, expect_head)), row.config

    # -- reading, for the shared core ---------------------------------------

    def _found(self, found: builtins.list[CheckpointTuple], latest: tuple[str, str] | None) -> CheckpointTuple | None:
        if not found:
            if latest is not None:
                self._saw_empty(*latest)
            return None
        if latest is not None and self.check_conflicts:
            found[0].config["configurable"][_LATEST] = True
        return found[0]

    def _tuples(self, sql: str, params: Sequence[Any], what: str) -> builtins.list[CheckpointTuple]:
        return [_sql.row_to_tuple(self.serde, row) for row in self._db.fetch(sql, params, what)]

    async def _atuples(self, sql: str, params: Sequence[Any], what: str) -> builtins.list[CheckpointTuple]:
        return [_sql.row_to_tuple(self.serde, row) for row in await self._db.afetch(sql, params, what)]

    @staticmethod
    def _metadata_filter(filter: dict[str, Any]) -> tuple[builtins.list[str], builtins.list[Any]]:
        return ["c.metadata @> %s::jsonb"], [_rows.metadata_json(filter).replace("\\u0000", "")]

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
            >>> print(saver.explain_list({"configurable": {"thread_id": "t"}}, limit=10))  # needs a PostgreSQL server  # doctest: +SKIP
            Limit  ->  Index Scan Backward using checkpoints_pkey on checkpoints c ...
        """
        sql, params = self._page_query(config, filter, before, None, 100 if limit is None else min(limit, 1000))
        verb = "EXPLAIN (ANALYZE, BUFFERS)" if analyze else "EXPLAIN"
        return "\n".join(str(row[0]) for row in self._db.fetch(f"{verb} {sql}", params, "explain list", binary=False))

    # -- writing, for the shared core ---------------------------------------

    _put_statement = _put_params

    def _writes_statement(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> tuple[str, builtins.list[Any]] | None:
        return _sql.writes_statement(self._sql, self.serde, config, writes, task_id, task_path)

    def _commit(self, statement: tuple[str, builtins.list[Any]], what: str) -> None:
        self._db.execute(*statement, what)

    async def _acommit(self, statement: tuple[str, builtins.list[Any]], what: str) -> None:
        await self._db.aexecute(*statement, what)

    # -- thread activity, for the archive job ---------------------------------

    def size_bytes(self) -> int:
        """Bytes the checkpointer's tables (with their indexes and TOAST) take on the server."""

        rows = self._db.fetch(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (self.schema,),
            "measure the checkpoint tables",
        )
        return int(rows[0][0])


class _Rows(builtins.list[tuple[Any, ...]]):
    """The part of a DB-API cursor the shared code uses, over rows already fetched."""

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.pop(0) if self else None

    def fetchall(self) -> builtins.list[tuple[Any, ...]]:
        rows = builtins.list(self)
        self.clear()
        return rows

    def close(self) -> None:
        self.clear()


class _LoopConnection:
    """``execute`` for the shared code on a worker thread, run on ``loop``'s async connection."""

    def __init__(self, conn: AsyncConnection[Any], loop: asyncio.AbstractEventLoop) -> None:
        self._conn = conn
        self._loop = loop

    async def _execute(self, sql: str, params: Sequence[Any]) -> _Rows:
        async with self._conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(sql, params)
            return _Rows(await cur.fetchall() if cur.description else ())

    def execute(self, sql: str, params: Sequence[Any] = ()) -> _Rows:
        return asyncio.run_coroutine_threadsafe(self._execute(sql, params), self._loop).result()
