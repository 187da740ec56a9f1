"""``SqliteCheckpointer``: one LangGraph checkpointer for ``invoke`` and ``ainvoke``."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph_memory._infra.sqlite import translate
from langgraph_memory.checkpoint import _query
from langgraph_memory.checkpoint._base import CheckpointerBase, PruneStrategy, Queries, ThreadInfo
from langgraph_memory.checkpoint._pool import Statement, _ConnectionPool
from langgraph_memory.checkpoint.schema import Durability
from langgraph_memory.config import Settings, resolve_lock_timeout
from langgraph_memory.errors import ConfigError

__all__ = ["PruneStrategy", "SqliteCheckpointer", "ThreadInfo"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class SqliteCheckpointer(CheckpointerBase):
    """A LangGraph checkpointer on one SQLite file, for sync and async graphs alike.

    One instance serves ``invoke``/``stream`` and ``ainvoke``/``astream``: the
    async methods run the same SQLite work in a thread (``asyncio.to_thread``),
    so they never block the event loop (the LangGraph server's blockbuster
    check passes).
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
            (argument > ``LANGGRAPH_MEMORY_LOCK_TIMEOUT`` > config file > 30).
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

    queries: Queries = _query.QUERIES

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        serde: SerializerProtocol | None = None,
        lock_timeout: float | None = None,
        durability: Durability = "normal",
        read_only: bool = False,
    ) -> None:
        super().__init__(serde=serde)
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
        """Close every connection (one still in use closes when its call returns)."""
        self._pool.close()
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    # -- connections, for the shared core (see _base) ---------------------------

    def _read(self, fn: Callable[[sqlite3.Connection], T], what: str) -> T:
        return self._pool.read(fn, what=what)

    def _write(self, fn: Callable[[sqlite3.Connection], T], what: str) -> T:
        return self._pool.write(fn, what=what)

    async def _aread(self, fn: Callable[[sqlite3.Connection], T], what: str) -> T:
        return await asyncio.to_thread(self._pool.read, fn, what=what)

    async def _awrite(self, fn: Callable[[sqlite3.Connection], T], what: str) -> T:
        return await asyncio.to_thread(self._pool.write, fn, what=what)

    # -- reading, for the shared core ---------------------------------------

    def _rows_reader(self, sql: str, params: Sequence[Any]) -> Callable[[sqlite3.Connection], list[CheckpointTuple]]:
        return lambda conn: _query.fetch_tuples(conn, self.serde, conn.execute(sql, params).fetchall())

    def _tuples(self, sql: str, params: Sequence[Any], what: str) -> list[CheckpointTuple]:
        return self._read(self._rows_reader(sql, params), what)

    async def _atuples(self, sql: str, params: Sequence[Any], what: str) -> list[CheckpointTuple]:
        return await self._aread(self._rows_reader(sql, params), what)

    _metadata_filter = staticmethod(_query.metadata_filter)

    # -- writing, for the shared core ---------------------------------------

    def _put_statement(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, versions: ChannelVersions
    ) -> tuple[list[Statement], RunnableConfig]:
        return _query.put_statements(self.serde, config, checkpoint, metadata, versions)

    def _writes_statement(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> list[Statement] | None:
        return _query.put_writes_statements(self.serde, config, writes, task_id, task_path) or None

    def _commit(self, statement: list[Statement], what: str) -> None:
        self._pool.write_statements(statement, what=what)

    async def _acommit(self, statement: list[Statement], what: str) -> None:
        # The event loop never runs SQLite: a COMMIT can wait for another writer's lock, restart the WAL
        # (an fsync) or run a WAL checkpoint, and the LangGraph server fails any run that blocks its loop.
        await asyncio.to_thread(self._pool.write_statements, statement, what=what)


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
