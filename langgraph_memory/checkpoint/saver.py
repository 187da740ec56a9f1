"""``SqliteCheckpointer``: one LangGraph checkpointer for ``invoke`` and ``ainvoke``."""

from __future__ import annotations

import asyncio
import builtins
import functools
import logging
import os
import random
import sqlite3
import time
import warnings
from collections.abc import (
    AsyncIterator,
    Callable,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar

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

from langgraph_memory._infra.sqlite import translate
from langgraph_memory.checkpoint import _delta, _maintenance, _query, _writes
from langgraph_memory.checkpoint._maintenance import ThreadInfo
from langgraph_memory.checkpoint._pool import Statement, _ConnectionPool
from langgraph_memory.checkpoint._worker import _Worker
from langgraph_memory.checkpoint.schema import Durability
from langgraph_memory.config import Settings, resolve_lock_timeout
from langgraph_memory.errors import ConfigError

__all__ = ["PruneStrategy", "SqliteCheckpointer", "ThreadInfo"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
PruneStrategy = Literal["keep_latest", "delete"]

_LIST_PAGE = 100  # rows fetched per round trip when list() has no small limit
_PageArgs = tuple[list[str], list[Any], "tuple[str, str, str] | None", int]


class SqliteCheckpointer(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer on one SQLite file, for sync and async graphs alike.

    One instance serves ``invoke``/``stream`` and ``ainvoke``/``astream``: the
    async methods run the same SQLite work on a worker thread, in call order,
    so they never block the event loop (the LangGraph server's blockbuster
    check passes); back-to-back async writes share one commit.
    Many threads and several processes may share the file (WAL mode); a busy
    file is waited for up to ``lock_timeout`` seconds, then
    [`LockTimeoutError`][langgraph_memory.errors.LockTimeoutError] is raised.

    No method, sync or async, raises a raw ``sqlite3`` error: a damaged file,
    a read-only file or folder, a full disk raise ``CorruptFileError``,
    ``ReadOnlyError``, ``DiskFullError`` (or ``StorageError``) from
    `langgraph_memory.errors`, naming the file and the fix; anything
    else, such as using a closed saver, ``CheckpointError``.

    Beyond LangGraph's interface: ``prune``, ``delete_for_runs`` and
    ``copy_thread`` (all DeltaChannel-safe), ``list_threads`` and
    ``prune_inactive`` for archiving idle threads.

    Args:
        path: The SQLite file. Default: ``<data_dir>/checkpoints.sqlite``.
        data_dir: Data directory used when ``path`` is None (resolved by
            [`Settings`][langgraph_memory.Settings]: argument, then
            ``$LANGGRAPH_MEMORY_DIR``, then config file, then ``./memory``).
        serde: Serializer; default LangGraph's ``JsonPlusSerializer``. Pass an
            ``EncryptedSerializer`` to encrypt checkpoints and writes at rest
            (metadata stays plain JSON so it can be filtered).
        lock_timeout: Seconds to wait for another writer before giving up
            (argument > ``LANGGRAPH_MEMORY_LOCK_TIMEOUT`` > config file > 30;
            ``busy_timeout=`` is its deprecated old name).
        durability: ``"normal"`` (default): a committed checkpoint survives
            any process crash. ``"full"``: it also survives power loss, at
            the cost of an fsync per write.
        read_only: read an existing file without writing anything beside it
            (a folder this process cannot write, a copy of a live folder); a
            missing file reads as empty. Every write raises ``ReadOnlyError``.

    Examples:
        ```python
        import tempfile

        from langgraph.graph import StateGraph

        from langgraph_memory.checkpoint import SqliteCheckpointer

        builder = StateGraph(int)
        builder.add_node("add_one", lambda x: x + 1)
        builder.set_entry_point("add_one")
        builder.set_finish_point("add_one")

        with SqliteCheckpointer(data_dir=tempfile.mkdtemp()) as saver:
            graph = builder.compile(checkpointer=saver)
            config = {"configurable": {"thread_id": "t1"}}
            assert graph.invoke(1, config) == 2
            assert graph.get_state(config).values == 2
        ```
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        serde: SerializerProtocol | None = None,
        lock_timeout: float | None = None,
        durability: Durability = "normal",
        busy_timeout: float | None = None,
        read_only: bool = False,
    ) -> None:
        super().__init__(serde=serde)
        if busy_timeout is not None:
            warnings.warn(
                "SqliteCheckpointer(busy_timeout=) is now lock_timeout=, the name every part of langgraph_memory uses",
                DeprecationWarning,
                stacklevel=2,
            )
            lock_timeout = busy_timeout if lock_timeout is None else lock_timeout
        if isinstance(path, sqlite3.Connection):
            raise ConfigError(_connection_refusal(path))
        if path is None:
            settings = Settings.resolve(data_dir, lock_timeout=lock_timeout)
            resolved, busy = settings.checkpoints_path, settings.lock_timeout
        elif str(path) == ":memory:" or str(path).startswith("file:"):
            raise ConfigError(
                "SqliteCheckpointer needs a file path; use a temporary file, or "
                "langgraph's InMemorySaver for throwaway state."
            )
        else:
            resolved, busy = Path(path).expanduser(), resolve_lock_timeout(lock_timeout)
        if resolved.is_dir():
            raise ConfigError(
                f"{resolved} is a folder; SqliteCheckpointer needs the path of a database file in it, "
                f"such as {resolved / 'checkpoints.sqlite'}"
            )
        if not read_only:
            try:
                resolved.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise translate(exc, resolved, "create the folder of") from exc
        self.path: Path = resolved
        #: Opened with ``read_only=True``: reads only; every write raises ``ReadOnlyError``.
        self.read_only = read_only
        self._pool = _ConnectionPool(
            resolved, durability=durability, busy_timeout=busy, serde=self.serde, read_only=read_only
        )
        # Async calls run their SQLite work on this thread, in call order.
        self._worker = _Worker(f"lgm-checkpoint:{resolved.name}", self._pool)
        # The temporary folder of from_conn_string(":memory:"), removed on close.
        self._tempdir: Any = None
        logger.debug("opened checkpoint file %s", resolved)

    @classmethod
    def from_conn_string(cls, conn_string: str | os.PathLike[str], **kwargs: Any) -> SqliteCheckpointer:
        """Open the SQLite file ``conn_string`` names, as ``SqliteSaver.from_conn_string`` does.

        ``":memory:"`` gives a file in a temporary folder, removed on close.
        The result is the checkpointer itself, a context manager for ``with``
        and ``async with``, so code written for ``SqliteSaver`` and
        ``AsyncSqliteSaver`` runs unchanged.

        Examples:
            >>> with SqliteCheckpointer.from_conn_string(":memory:") as saver:
            ...     saver.setup()
            ...     saver.list_threads()
            []
        """
        from langgraph_memory._infra.conn_string import open_conn_string

        saver: SqliteCheckpointer
        saver, saver._tempdir = open_conn_string(
            conn_string, lambda path, tmp: cls(path / "checkpoints.sqlite" if tmp else path, **kwargs)
        )
        return saver

    def setup(self) -> None:
        """Nothing left to do: opening created (or migrated) the tables.

        Kept so code written for ``SqliteSaver`` and ``PostgresSaver``, which
        call ``saver.setup()`` first, runs unchanged.
        """

    async def asetup(self) -> None:
        """Async `setup()` (``AsyncPostgresSaver`` and ``AsyncSqliteSaver`` code calls it)."""

    @classmethod
    def from_data_dir(cls, data_dir: str | os.PathLike[str] | None = None, **kwargs: Any) -> SqliteCheckpointer:
        """Open ``<data_dir>/checkpoints.sqlite``, the file beside the store."""
        return cls(None, data_dir=data_dir, **kwargs)

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        """Finish queued async work and close every connection."""
        self._worker.close()
        self._pool.close()
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    def __enter__(self) -> SqliteCheckpointer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> SqliteCheckpointer:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    async def _arun(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await self._worker.run(functools.partial(fn, *args, **kwargs))

    # -- reading -----------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the thread's latest; None if absent."""
        return self._pool.read(self._get_tuple_reader(config), what="read a checkpoint")

    def _get_tuple_reader(self, config: RunnableConfig) -> Callable[[sqlite3.Connection], CheckpointTuple | None]:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        checkpoint_id = get_checkpoint_id(config)

        def read(conn: sqlite3.Connection) -> CheckpointTuple | None:
            if checkpoint_id:
                row = conn.execute(
                    f"SELECT {_query.CHECKPOINT_COLUMNS} FROM checkpoints WHERE thread_id = ? "
                    "AND checkpoint_ns = ? AND checkpoint_id = ? AND hidden = 0",
                    (thread_id, checkpoint_ns, checkpoint_id),
                ).fetchone()
            else:
                row = conn.execute(
                    f"SELECT {_query.CHECKPOINT_COLUMNS} FROM checkpoints WHERE thread_id = ? "
                    "AND checkpoint_ns = ? AND hidden = 0 ORDER BY checkpoint_id DESC LIMIT 1",
                    (thread_id, checkpoint_ns),
                ).fetchone()
            if row is None:
                return None
            writes = _query.load_writes(conn, self.serde, thread_id, checkpoint_ns, [row[2]])
            (checkpoint,) = _query.load_checkpoints(conn, self.serde, [row])
            return _query.to_tuple(row, checkpoint, writes[row[2]])

        return read

    def _list_page(
        self,
        wheres: list[str],
        params: list[Any],
        after: tuple[str, str, str] | None,
        size: int,
    ) -> list[CheckpointTuple]:
        clauses = list(wheres)
        values = list(params)
        if after is not None:
            clauses.append("(checkpoint_id, thread_id, checkpoint_ns) < (?, ?, ?)")
            values.extend(after)
        sql = (
            f"SELECT {_query.CHECKPOINT_COLUMNS} FROM checkpoints WHERE {' AND '.join(clauses)} "
            "ORDER BY checkpoint_id DESC, thread_id DESC, checkpoint_ns DESC LIMIT ?"
        )

        def read(conn: sqlite3.Connection) -> list[CheckpointTuple]:
            rows = conn.execute(sql, (*values, size)).fetchall()
            return _query.fetch_tuples(conn, self.serde, rows)

        return self._pool.read(read, what="list checkpoints")

    def _pages(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Generator[_PageArgs, list[CheckpointTuple], None]:
        """Arguments of successive ``_list_page`` calls; the caller sends back each page."""
        wheres, params = _query.list_where(config, filter, before)
        remaining = limit
        after: tuple[str, str, str] | None = None
        while remaining is None or remaining > 0:
            size = _LIST_PAGE if remaining is None else min(remaining, _LIST_PAGE * 10)
            page = yield wheres, params, after, size
            if remaining is not None:
                remaining -= len(page)
            if len(page) < size:
                return
            last = page[-1].config["configurable"]
            after = (last["checkpoint_id"], last["thread_id"], last["checkpoint_ns"])

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints matching ``config``, metadata ``filter`` and ``before``, newest first.

        Rows are fetched in pages, so breaking out of the loop early is cheap
        and no connection is held between pages.
        """
        pages = self._pages(config, filter, before, limit)
        try:
            args = next(pages)
            while True:
                page = self._list_page(*args)
                yield from page
                args = pages.send(page)
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
        """Async ``list``: each page is read on the worker thread."""
        pages = self._pages(config, filter, before, limit)
        try:
            args = next(pages)
            while True:
                page = await self._arun(self._list_page, *args)
                for item in page:
                    yield item
                args = pages.send(page)
        except StopIteration:
            return

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async ``get_tuple``, read on the worker thread after every async call queued before it."""
        reader = self._get_tuple_reader(config)
        return await self._worker.run(functools.partial(self._pool.read, reader, what="read a checkpoint"))

    # -- writing -----------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint as a child of the one ``config`` names; return its config.

        Only the values of channels in ``new_versions`` are serialized and
        written; the others are already stored under their unchanged version.
        """
        statements, saved = _writes.put_statements(self.serde, config, checkpoint, metadata, new_versions)
        self._pool.write_statements(statements, what="save a checkpoint")
        return saved

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes against a checkpoint.

        Idempotent per (task, index): a regular write already stored is kept
        as is; special writes (error, interrupt, resume, scheduled) use fixed
        negative indices and replace the previous one, as in LangGraph's savers.
        """
        statements = _writes.put_writes_statements(self.serde, config, writes, task_id, task_path)
        self._pool.write_statements(statements, what="save pending writes")

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async ``put``: serialized here, committed on the worker thread before the await returns.

        The event loop never runs SQLite: a COMMIT can wait for another
        writer's lock, restart the WAL (an fsync) or run a WAL checkpoint,
        and the LangGraph server fails any run that blocks its loop. Writes
        queued back to back (a step's ``aput_writes`` and the next ``aput``,
        or several threads' steps) are committed together in one
        transaction (group commit); each await returns only after the COMMIT
        that holds its write.
        """
        statements, saved = _writes.put_statements(self.serde, config, checkpoint, metadata, new_versions)
        await self._awrite(statements, "save a checkpoint")
        return saved

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async ``put_writes``: serialized here, committed on the worker thread (see `aput()`)."""
        statements = _writes.put_writes_statements(self.serde, config, writes, task_id, task_path)
        if statements:
            await self._awrite(statements, "save pending writes")

    async def _awrite(self, statements: Sequence[Statement], what: str) -> None:
        await self._worker.write(statements, what)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Next channel version: a zero-padded counter plus a random tie-breaker."""
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"

    # -- DeltaChannel history ----------------------------------------------

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Writes and seed per delta channel, read with two queries, not a walk of get_tuple."""
        if not channels:
            return {}
        channels = list(channels)
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        checkpoint_id = get_checkpoint_id(config)

        def read(conn: sqlite3.Connection) -> Mapping[str, DeltaChannelHistory]:
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

        return self._pool.read(read, what="read delta channel history")

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async ``get_delta_channel_history``."""
        return await self._arun(self.get_delta_channel_history, config=config, channels=channels)

    # -- deleting, pruning, copying ------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread, in all namespaces."""

        def write(conn: sqlite3.Connection) -> None:
            _maintenance.delete_threads(conn, [str(thread_id)])

        self._pool.write(write, what="delete a thread")

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) created by the given runs.

        A deleted checkpoint that a surviving checkpoint's DeltaChannel
        history runs through is hidden instead: it disappears from ``list``
        and ``get_tuple`` but the survivor still reconstructs.
        """
        run_ids = [str(r) for r in run_ids]
        if not run_ids:
            return

        self._pool.write(
            lambda conn: _maintenance.delete_for_runs(conn, self.serde, run_ids),
            what="delete checkpoints of runs",
        )

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Shrink threads: ``"keep_latest"`` keeps the newest checkpoint per namespace, ``"delete"`` all.

        With ``"keep_latest"`` the older checkpoints a DeltaChannel of the kept
        one still needs (back to its nearest snapshot) are kept hidden, so the
        kept state is reconstructed exactly.
        """
        thread_ids = [str(t) for t in thread_ids]
        self._check_strategy(strategy)
        if not thread_ids:
            return
        self._pool.write(lambda conn: _maintenance.prune(conn, self.serde, thread_ids, strategy), what="prune threads")

    @staticmethod
    def _check_strategy(strategy: str) -> None:
        if strategy not in ("keep_latest", "delete"):
            raise ConfigError(f"prune strategy must be 'keep_latest' or 'delete', got {strategy!r}")

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's whole history (all namespaces, writes, hidden ancestors).

        Copied checkpoints keep their ids, order and metadata; their activity
        time is the time of the copy. Checkpoints already on the target with
        the same id are replaced.
        """
        source, target = str(source_thread_id), str(target_thread_id)
        if source == target:
            return

        self._pool.write(
            lambda conn: _maintenance.copy_thread(conn, source, target, time.time()),
            what="copy a thread",
        )

    async def adelete_thread(self, thread_id: str) -> None:
        """Async ``delete_thread``."""
        await self._arun(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async ``delete_for_runs``."""
        await self._arun(self.delete_for_runs, run_ids)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async ``prune``."""
        await self._arun(self.prune, thread_ids, strategy=strategy)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async ``copy_thread``."""
        await self._arun(self.copy_thread, source_thread_id, target_thread_id)

    # -- thread activity, for the archive job ---------------------------------

    def list_threads(self) -> builtins.list[ThreadInfo]:
        """Every thread with its last activity time (UTC), most recently active first."""

        return self._pool.read(_maintenance.list_threads, what="list threads")

    def thread_sizes(self, thread_ids: Sequence[str]) -> dict[str, int]:
        """Bytes each of ``thread_ids`` holds in the file (checkpoints, channel values, pending writes)."""
        return self._pool.read(lambda conn: _maintenance.thread_sizes(conn, thread_ids), what="measure threads")

    def prune_inactive(self, older_than: timedelta, *, strategy: PruneStrategy = "keep_latest") -> builtins.list[str]:
        """Prune (or delete) threads with no checkpoint written for ``older_than``.

        Returns the ids of the threads pruned, oldest activity first. Choosing
        and pruning happen in one transaction, so a thread that becomes active
        meanwhile is not touched.
        """
        self._check_strategy(strategy)
        if older_than.total_seconds() < 0:
            raise ConfigError(f"older_than must not be negative, got {older_than}")
        cutoff = time.time() - older_than.total_seconds()

        def write(conn: sqlite3.Connection) -> list[str]:
            ids = [
                thread_id
                for (thread_id,) in conn.execute(
                    "SELECT thread_id FROM checkpoints GROUP BY thread_id "
                    "HAVING MAX(created_at) < ? ORDER BY MAX(created_at), thread_id",
                    (cutoff,),
                )
            ]
            _maintenance.prune(conn, self.serde, ids, strategy)
            return ids

        thread_ids = self._pool.write(write, what="prune inactive threads")
        logger.info("pruned %d inactive threads (%s)", len(thread_ids), strategy)
        return thread_ids

    async def alist_threads(self) -> builtins.list[ThreadInfo]:
        """Async ``list_threads``."""
        return await self._arun(self.list_threads)

    async def aprune_inactive(
        self, older_than: timedelta, *, strategy: PruneStrategy = "keep_latest"
    ) -> builtins.list[str]:
        """Async ``prune_inactive``."""
        return await self._arun(self.prune_inactive, older_than, strategy=strategy)


def _connection_refusal(conn: sqlite3.Connection) -> str:
    # LangGraph's SqliteSaver(conn) habit: say what to pass instead, naming the connection's file.
    try:
        file = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    except sqlite3.Error:
        file = ""
    where = repr(file) if file else "'checkpoints.sqlite'"
    return (
        "SqliteCheckpointer takes a file path, not a sqlite3.Connection: it opens its own connections "
        f"(a writer and readers, for sync and async use). Pass the path, SqliteCheckpointer({where}), "
        f"or use SqliteCheckpointer.from_conn_string({where})."
    )
