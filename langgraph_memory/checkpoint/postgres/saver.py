"""``PostgresCheckpointer``: LangGraph state on a PostgreSQL server, for ``invoke`` and ``ainvoke``."""

from __future__ import annotations

import builtins
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping, Sequence
from datetime import timedelta
from types import TracebackType
from typing import Any

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
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from langgraph_memory.checkpoint import _delta, _maintenance
from langgraph_memory.checkpoint._maintenance import ThreadInfo
from langgraph_memory.checkpoint.postgres import _schema, _sql
from langgraph_memory.checkpoint.postgres._database import Database
from langgraph_memory.errors import ConfigError

__all__ = ["PostgresCheckpointer"]

logger = logging.getLogger(__name__)

_LIST_PAGE = 100  # rows per round trip when list() has no small limit
_HEADS_TRACKED = 10_000  # empty (thread, namespace) reads remembered for their first put
_LATEST = "__lgm_latest__"  # see "conflict detection" below; "__" keys never reach metadata


class PostgresCheckpointer(BaseCheckpointSaver[str]):
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

        return self._tuple_of(self._db.run(read, "read a checkpoint"), latest)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async ``get_tuple``."""
        sql, params, latest = self._get_query(config)

        async def read(conn: AsyncConnection[Any]) -> Sequence[Any] | None:
            async with conn.cursor(row_factory=tuple_row, binary=True) as cur:
                await cur.execute(sql, params)
                return await cur.fetchone()

        return self._tuple_of(await self._db.arun(read, "read a checkpoint"), latest)

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
    ) -> Generator[tuple[str, builtins.list[Any], int], builtins.list[Any], None]:
        """(sql, params, size) of successive pages; the caller sends back each page's last row."""
        where, params, order = _sql.list_query(self._sql, config, filter, before)
        remaining = limit
        after: tuple[Any, ...] | None = None
        while remaining is None or remaining > 0:
            size = _LIST_PAGE if remaining is None else min(remaining, _LIST_PAGE * 10)
            sql = self._page_sql(where, order, after)
            rows = yield sql, [*params, *(after or ()), size], size
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

                rows = self._db.run(read, "list checkpoints")
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

                async def read(conn: AsyncConnection[Any], sql: str = sql, params: list[Any] = params) -> list[Any]:
                    async with conn.cursor(row_factory=tuple_row, binary=True) as cur:
                        await cur.execute(sql, params)
                        return await cur.fetchall()

                rows = await self._db.arun(read, "list checkpoints")
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
            >>> print(saver.explain_list({"configurable": {"thread_id": "t"}}, limit=10))  # needs a PostgreSQL server  # doctest: +SKIP
            Limit  ->  Index Scan Backward using checkpoints_pkey on checkpoints c ...
        """
        sql, params, _size = next(self._list_plan(config, filter, before, limit))
        verb = "EXPLAIN (ANALYZE, BUFFERS)" if analyze else "EXPLAIN"

        def read(conn: Connection[Any]) -> str:
            with conn.cursor(row_factory=tuple_row) as cur:
                cur.execute(f"{verb} {sql}", params)
                return "\n".join(str(row[0]) for row in cur.fetchall())

        return self._db.run(read, "explain list")

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
        self._db.write((self._sql.put, params, "save a checkpoint"), urgent=True)
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
        await self._db.awrite((self._sql.put, params, "save a checkpoint"), urgent=True)
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
    ) -> tuple[str, builtins.list[Any]] | None:
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
            self._db.write((*statement, "save pending writes"))

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
            await self._db.awrite((*statement, "save pending writes"))

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
        self, config: RunnableConfig, channels: builtins.list[str]
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
        return self._db.run_compat(self._delta_history(config, list(channels)), "read delta channel history")

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async ``get_delta_channel_history``."""
        if not channels:
            return {}
        return await self._db.arun_compat(self._delta_history(config, list(channels)), "read delta channel history")

    # -- deleting, pruning, copying ------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, blob and write of a thread, in all namespaces."""
        params = (str(thread_id),) * 3
        self._db.run(lambda conn: conn.execute(self._sql.delete_thread, params), "delete a thread")

    async def adelete_thread(self, thread_id: str) -> None:
        """Async ``delete_thread``."""
        params = (str(thread_id),) * 3

        async def write(conn: AsyncConnection[Any]) -> None:
            await conn.execute(self._sql.delete_thread, params)

        await self._db.arun(write, "delete a thread")

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and writes) of the given runs; DeltaChannel-safe (see SqliteCheckpointer)."""
        ids = [str(r) for r in run_ids]
        if ids:
            self._db.run_compat(
                lambda conn: _maintenance.delete_for_runs(conn, self.serde, ids), "delete checkpoints of runs"
            )

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async ``delete_for_runs``."""
        ids = [str(r) for r in run_ids]
        if ids:
            await self._db.arun_compat(
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
            self._db.run_compat(lambda conn: _maintenance.prune(conn, self.serde, ids, strategy), "prune threads")

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async ``prune``."""
        ids = [str(t) for t in thread_ids]
        self._check_strategy(strategy)
        if ids:
            await self._db.arun_compat(
                lambda conn: _maintenance.prune(conn, self.serde, ids, strategy), "prune threads"
            )

    def _copy_statements(self, source: str, target: str) -> builtins.list[tuple[str, tuple[Any, ...]]]:
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

        self._db.run(write, "copy a thread", transaction=True)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async ``copy_thread``."""
        source, target = str(source_thread_id), str(target_thread_id)
        if source == target:
            return

        async def write(conn: AsyncConnection[Any]) -> None:
            for sql, params in self._copy_statements(source, target):
                await conn.execute(sql, params)

        await self._db.arun(write, "copy a thread", transaction=True)

    # -- thread activity, for the archive job ---------------------------------

    def size_bytes(self) -> int:
        """Bytes the checkpointer's tables (with their indexes and TOAST) take on the server."""

        def size(conn: Any) -> int:
            row = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
                (self._db.schema,),
            ).fetchone()
            return int(row[0]) if row else 0

        return self._db.run(size, "measure the checkpoint tables")

    def list_threads(self) -> builtins.list[ThreadInfo]:
        """Every thread with its last activity time (UTC), most recently active first."""
        return self._db.run_compat(_maintenance.list_threads, "list threads")

    async def alist_threads(self) -> builtins.list[ThreadInfo]:
        """Async ``list_threads``."""
        return await self._db.arun_compat(_maintenance.list_threads, "list threads")

    def _prune_inactive(self, older_than: timedelta, strategy: str) -> Callable[[Any], builtins.list[str]]:
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

    def prune_inactive(self, older_than: timedelta, *, strategy: str = "keep_latest") -> builtins.list[str]:
        """Prune (or delete) threads with no checkpoint written for ``older_than``; return their ids.

        Choosing and pruning happen in one transaction.
        """
        return self._db.run_compat(self._prune_inactive(older_than, strategy), "prune inactive threads")

    async def aprune_inactive(self, older_than: timedelta, *, strategy: str = "keep_latest") -> builtins.list[str]:
        """Async ``prune_inactive``."""
        return await self._db.arun_compat(self._prune_inactive(older_than, strategy), "prune inactive threads")
