"""What both checkpointers share: get, put, list paging, DeltaChannel history, retention, thread activity.

`CheckpointerBase` builds on LangGraph's ``BaseCheckpointSaver``, as
``SqliteSaver`` and ``PostgresSaver`` do, and writes every LangGraph method
once for sync and async. A backend supplies its connections
(`CheckpointerBase._read`, ``_write`` and their async twins, each running a
function of one DB-API connection), how it turns rows into tuples and
commits a put, and its SQL: one `Queries` of constants (SQLite's in
``checkpoint/_query.py``, PostgreSQL's in ``checkpoint/postgres/_sql.py``)
that ``_delta`` and the methods here run on either database. What a
checkpoint is serialized to is in ``_rows``.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import random
import re
import time
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Literal, Self, TypeVar

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

from langgraph_memory.checkpoint import _delta
from langgraph_memory.checkpoint._delta import Queries
from langgraph_memory.errors import ConfigError, FilterError

__all__ = ["CheckpointerBase", "PruneStrategy", "Queries", "ThreadInfo"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
PruneStrategy = Literal["keep_latest", "delete"]

_LIST_PAGE = 100  # rows per round trip when list() has no small limit
_FILTER_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class ThreadInfo:
    """One thread of the checkpointer and when it was last written.

    ``last_activity`` is the wall-clock UTC time of the newest checkpoint
    write; ``checkpoints`` counts the checkpoints ``list`` would return.
    """

    thread_id: str
    last_activity: datetime
    checkpoints: int


class CheckpointerBase(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer whose sync and async methods share one object and one SQL per backend."""

    queries: Queries

    # -- what a backend provides -------------------------------------------

    @abstractmethod
    def _read(self, fn: Callable[[Any], T], what: str) -> T:
        """``fn(conn)`` on a connection; typed errors name ``what``."""

    @abstractmethod
    def _write(self, fn: Callable[[Any], T], what: str) -> T:
        """``fn(conn)`` in one transaction, committed before this returns."""

    @abstractmethod
    async def _aread(self, fn: Callable[[Any], T], what: str) -> T:
        """Async `_read()`: never blocks the event loop."""

    @abstractmethod
    async def _awrite(self, fn: Callable[[Any], T], what: str) -> T:
        """Async `_write()`: never blocks the event loop."""

    @abstractmethod
    def _tuples(self, sql: str, params: Sequence[Any], what: str) -> builtins.list[CheckpointTuple]:
        """The checkpoints of the rows ``sql`` (a ``queries.select``) returns."""

    @abstractmethod
    async def _atuples(self, sql: str, params: Sequence[Any], what: str) -> builtins.list[CheckpointTuple]:
        """Async `_tuples()`."""

    @abstractmethod
    def _metadata_filter(self, filter: dict[str, Any]) -> tuple[builtins.list[str], builtins.list[Any]]:
        """The predicates (on ``c.metadata``) and parameters of a metadata filter `check_filter_keys` accepted."""

    @abstractmethod
    def _put_statement(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, versions: ChannelVersions
    ) -> tuple[Any, RunnableConfig]:
        """What `put()` commits (serialized here, outside any lock), and the config it returns."""

    @abstractmethod
    def _writes_statement(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> Any | None:
        """What `put_writes()` commits; None when there are no writes."""

    @abstractmethod
    def _commit(self, statement: Any, what: str) -> None:
        """Commit a statement of `_put_statement()` or `_writes_statement()`."""

    @abstractmethod
    async def _acommit(self, statement: Any, what: str) -> None:
        """Async `_commit()`: never blocks the event loop."""

    @abstractmethod
    def close(self) -> None:
        """Close the connections this checkpointer opened."""

    async def aclose(self) -> None:
        """Async `close()`."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- reading ---------------------------------------------------------------

    def _get_query(self, config: RunnableConfig) -> tuple[str, tuple[Any, ...], tuple[str, str] | None]:
        """The statement of `get_tuple()`, its parameters, and the (thread, namespace) when it reads the latest."""
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        if checkpoint_id := get_checkpoint_id(config):
            return self.queries.get_by_id, (thread_id, checkpoint_ns, checkpoint_id), None
        return self.queries.get_latest, (thread_id, checkpoint_ns), (thread_id, checkpoint_ns)

    def _found(self, found: builtins.list[CheckpointTuple], latest: tuple[str, str] | None) -> CheckpointTuple | None:
        """What `get_tuple()` returns of what it read (a backend may note what it saw)."""
        return found[0] if found else None

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the thread's latest; None if absent."""
        sql, params, latest = self._get_query(config)
        return self._found(self._tuples(sql, params, "read a checkpoint"), latest)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async ``get_tuple``."""
        sql, params, latest = self._get_query(config)
        return self._found(await self._atuples(sql, params, "read a checkpoint"), latest)

    # -- versions and listing --------------------------------------------------

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Next channel version: a zero-padded counter plus a random tie-breaker."""
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"

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
        remaining, after = limit, None
        while remaining is None or remaining > 0:
            size = _LIST_PAGE if remaining is None else min(remaining, _LIST_PAGE * 10)
            page = self._tuples(*self._page_query(config, filter, before, after, size), "list checkpoints")
            yield from page
            if len(page) < size:
                return
            remaining, after = _next_page(remaining, page)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async ``list``."""
        remaining, after = limit, None
        while remaining is None or remaining > 0:
            size = _LIST_PAGE if remaining is None else min(remaining, _LIST_PAGE * 10)
            page = await self._atuples(*self._page_query(config, filter, before, after, size), "list checkpoints")
            for item in page:
                yield item
            if len(page) < size:
                return
            remaining, after = _next_page(remaining, page)

    # -- writing ---------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint as a child of the one ``config`` names; return its config.

        Committed when this returns. Only the values of channels in
        ``new_versions`` are serialized and written; the others are already
        stored under their unchanged version. On PostgreSQL, raises
        ``CheckpointConflictError`` if the parent was read as the thread's
        newest checkpoint and another writer has stored a newer one since.
        """
        statement, saved = self._put_statement(config, checkpoint, metadata, new_versions)
        self._commit(statement, "save a checkpoint")
        return saved

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async ``put``: committed before the await returns."""
        statement, saved = self._put_statement(config, checkpoint, metadata, new_versions)
        await self._acommit(statement, "save a checkpoint")
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
        if (statement := self._writes_statement(config, writes, task_id, task_path)) is not None:
            self._commit(statement, "save pending writes")

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async ``put_writes``."""
        if (statement := self._writes_statement(config, writes, task_id, task_path)) is not None:
            await self._acommit(statement, "save pending writes")

    def _page_query(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        after: tuple[str, str, str] | None,
        size: int,
    ) -> tuple[str, builtins.list[Any]]:
        """One page of ``list``: ``queries.select`` with its WHERE, ORDER BY and LIMIT, and parameters.

        ``after`` is the (id, thread, namespace) of the last row of the previous
        page. With the thread and namespace given (as LangGraph always passes
        them) the order is the primary key's, ``(thread_id, checkpoint_ns,
        checkpoint_id)``: a page reads the index backwards and stops after the
        rows it returns (plus those a metadata filter skips).
        """
        mark = self.queries.mark
        wheres = ["c.hidden = 0"]
        params: builtins.list[Any] = []
        order = ["checkpoint_id", "thread_id", "checkpoint_ns"]
        if config is not None:
            configurable = config.get("configurable", {})
            wheres.append(f"c.thread_id = {mark}")
            params.append(str(configurable["thread_id"]))
            order = ["checkpoint_id", "checkpoint_ns"]
            if (checkpoint_ns := configurable.get("checkpoint_ns")) is not None:
                wheres.append(f"c.checkpoint_ns = {mark}")
                params.append(checkpoint_ns)
                order = ["checkpoint_id"]
            if checkpoint_id := get_checkpoint_id(config):
                wheres.append(f"c.checkpoint_id = {mark}")
                params.append(checkpoint_id)
        if filter:
            check_filter_keys(filter)
            predicates, values = self._metadata_filter(filter)
            wheres += predicates
            params += values
        if before is not None and (before_id := get_checkpoint_id(before)):
            wheres.append(f"c.checkpoint_id < {mark}")
            params.append(before_id)
        if after is not None:
            by_name = dict(zip(("checkpoint_id", "thread_id", "checkpoint_ns"), after, strict=True))
            wheres.append(f"({', '.join(f'c.{name}' for name in order)}) < ({', '.join([mark] * len(order))})")
            params.extend(by_name[name] for name in order)
        ordering = ", ".join(f"c.{name} DESC" for name in order)
        return f"{self.queries.select} WHERE {' AND '.join(wheres)} ORDER BY {ordering} LIMIT {mark}", [*params, size]

    # -- DeltaChannel history ----------------------------------------------

    def _history(self, config: RunnableConfig, channels: Sequence[str]) -> Callable[[Any], dict[str, Any]]:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        checkpoint_id = get_checkpoint_id(config)
        wanted = builtins.list(channels)

        def read(conn: Any) -> dict[str, Any]:
            target = checkpoint_id
            if not target:
                found = conn.execute(self.queries.latest_id, (thread_id, checkpoint_ns)).fetchone()
                if found is None:
                    return {ch: {"writes": []} for ch in wanted}
                target = found[0]
            return _delta.delta_channel_history(
                conn, self.queries, self.serde, thread_id, checkpoint_ns, target, wanted
            )

        return read

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Writes and seed per delta channel, read with two queries, not a walk of get_tuple."""
        if not channels:
            return {}
        return self._read(self._history(config, channels), "read delta channel history")

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async ``get_delta_channel_history``."""
        if not channels:
            return {}
        return await self._aread(self._history(config, channels), "read delta channel history")

    # -- deleting, pruning, copying ------------------------------------------

    def _delete_threads(self, conn: Any, thread_ids: Sequence[str]) -> None:
        for thread_id in thread_ids:
            for statement in self.queries.delete_thread:
                conn.execute(statement, (thread_id,))

    def _remove(self, conn: Any, thread_id: str, checkpoint_ns: str, remove: set[str]) -> None:
        """Remove checkpoints of one namespace, hiding those a survivor's delta history needs."""
        delete, hide = _delta.plan_removal(conn, self.queries, self.serde, thread_id, checkpoint_ns, remove)
        _delta.apply_removal(conn, self.queries, self.serde, thread_id, checkpoint_ns, delete, hide)

    def _prune_on(self, conn: Any, thread_ids: Sequence[str], strategy: str) -> None:
        if strategy == "delete":
            self._delete_threads(conn, thread_ids)
            return
        q = self.queries
        for thread_id in thread_ids:
            for (ns,) in conn.execute(q.namespaces, (thread_id,)).fetchall():
                ids = [cid for (cid,) in conn.execute(q.visible_ids, (thread_id, ns)).fetchall()]
                self._remove(conn, thread_id, ns, set(ids[1:]))
            # Writes whose checkpoint no longer exists can never be read.
            conn.execute(q.delete_orphan_writes, (thread_id,))

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, blob and write of a thread, in all namespaces."""
        self._write(lambda conn: self._delete_threads(conn, [str(thread_id)]), "delete a thread")

    async def adelete_thread(self, thread_id: str) -> None:
        """Async ``delete_thread``."""
        await self._awrite(lambda conn: self._delete_threads(conn, [str(thread_id)]), "delete a thread")

    def _delete_for_runs(self, conn: Any, run_ids: Sequence[str]) -> None:
        targets: dict[tuple[str, str], set[str]] = {}
        rows = conn.execute(self.queries.checkpoints_of_runs, (self.queries.array(run_ids),)).fetchall()
        for thread_id, checkpoint_ns, checkpoint_id in rows:
            targets.setdefault((thread_id, checkpoint_ns), set()).add(checkpoint_id)
        for (thread_id, checkpoint_ns), remove in targets.items():
            self._remove(conn, thread_id, checkpoint_ns, remove)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) created by the given runs.

        A deleted checkpoint that a surviving checkpoint's DeltaChannel
        history runs through is hidden instead: it disappears from ``list``
        and ``get_tuple`` but the survivor still reconstructs.
        """
        if ids := [str(r) for r in run_ids]:
            self._write(lambda conn: self._delete_for_runs(conn, ids), "delete checkpoints of runs")

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async ``delete_for_runs``."""
        if ids := [str(r) for r in run_ids]:
            await self._awrite(lambda conn: self._delete_for_runs(conn, ids), "delete checkpoints of runs")

    @staticmethod
    def _check_strategy(strategy: str) -> None:
        if strategy not in ("keep_latest", "delete"):
            raise ConfigError(f"prune strategy must be 'keep_latest' or 'delete', got {strategy!r}")

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Shrink threads: ``"keep_latest"`` keeps the newest checkpoint per namespace, ``"delete"`` all.

        With ``"keep_latest"`` the older checkpoints a DeltaChannel of the kept
        one still needs (back to its nearest snapshot) are kept hidden, so the
        kept state is reconstructed exactly.
        """
        self._check_strategy(strategy)
        if ids := [str(t) for t in thread_ids]:
            self._write(lambda conn: self._prune_on(conn, ids, strategy), "prune threads")

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async ``prune``."""
        self._check_strategy(strategy)
        if ids := [str(t) for t in thread_ids]:
            await self._awrite(lambda conn: self._prune_on(conn, ids, strategy), "prune threads")

    def _copy_thread(self, source_thread_id: str, target_thread_id: str) -> Callable[[Any], None] | None:
        source, target = str(source_thread_id), str(target_thread_id)
        if source == target:
            return None
        now = time.time()

        def copy(conn: Any) -> None:
            checkpoints, writes, blobs = self.queries.copy_thread
            conn.execute(checkpoints, (target, now, source))
            conn.execute(writes, (target, source))
            conn.execute(blobs, (target, source))

        return copy

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's whole history (all namespaces, writes, hidden ancestors).

        Copied checkpoints keep their ids, order and metadata; their activity
        time is the time of the copy. Checkpoints already on the target with
        the same id are replaced.
        """
        if (fn := self._copy_thread(source_thread_id, target_thread_id)) is not None:
            self._write(fn, "copy a thread")

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async ``copy_thread``."""
        if (fn := self._copy_thread(source_thread_id, target_thread_id)) is not None:
            await self._awrite(fn, "copy a thread")

    # -- thread activity, for the archive job ---------------------------------

    def _list_threads(self, conn: Any) -> builtins.list[ThreadInfo]:
        return [
            ThreadInfo(thread_id=thread_id, last_activity=datetime.fromtimestamp(last, tz=UTC), checkpoints=int(count))
            for thread_id, last, count in conn.execute(self.queries.list_threads).fetchall()
        ]

    def list_threads(self) -> builtins.list[ThreadInfo]:
        """Every thread with its last activity time (UTC), most recently active first."""
        return self._read(self._list_threads, "list threads")

    async def alist_threads(self) -> builtins.list[ThreadInfo]:
        """Async ``list_threads``."""
        return await self._aread(self._list_threads, "list threads")

    def thread_sizes(self, thread_ids: Sequence[str]) -> dict[str, int]:
        """Bytes each of ``thread_ids`` holds (checkpoints, channel values, pending writes)."""

        def measure(conn: Any) -> dict[str, int]:
            return {
                t: int(sum(conn.execute(self.queries.thread_size, (t, t, t)).fetchone()))
                for t in dict.fromkeys(thread_ids)
            }

        return self._read(measure, "measure threads")

    def _prune_inactive(self, older_than: timedelta, strategy: str) -> Callable[[Any], builtins.list[str]]:
        self._check_strategy(strategy)
        if older_than.total_seconds() < 0:
            raise ConfigError(f"older_than must not be negative, got {older_than}")
        cutoff = time.time() - older_than.total_seconds()

        def write(conn: Any) -> builtins.list[str]:
            ids = [thread_id for (thread_id,) in conn.execute(self.queries.inactive_threads, (cutoff,)).fetchall()]
            self._prune_on(conn, ids, strategy)
            logger.info("pruned %d inactive threads (%s)", len(ids), strategy)
            return ids

        return write

    def prune_inactive(self, older_than: timedelta, *, strategy: PruneStrategy = "keep_latest") -> builtins.list[str]:
        """Prune (or delete) threads with no checkpoint written for ``older_than``.

        Returns the ids of the threads pruned, oldest activity first. Choosing
        and pruning happen in one transaction, so a thread that becomes active
        meanwhile is not touched.
        """
        return self._write(self._prune_inactive(older_than, strategy), "prune inactive threads")

    async def aprune_inactive(
        self, older_than: timedelta, *, strategy: PruneStrategy = "keep_latest"
    ) -> builtins.list[str]:
        """Async ``prune_inactive``."""
        return await self._awrite(self._prune_inactive(older_than, strategy), "prune inactive threads")


def check_filter_keys(filter: Mapping[str, Any] | None) -> None:
    """`FilterError` unless every key of a metadata filter is safe to put in a JSON path."""
    for key in filter or {}:
        if not isinstance(key, str) or not _FILTER_KEY.match(key):
            raise FilterError(
                f"metadata filter key {key!r} is not allowed: use letters, digits, '_', '.' and '-' only."
            )


def _next_page(remaining: int | None, page: builtins.list[CheckpointTuple]) -> tuple[int | None, tuple[str, str, str]]:
    last = page[-1].config["configurable"]
    return (
        None if remaining is None else remaining - len(page),
        (last["checkpoint_id"], last["thread_id"], last["checkpoint_ns"]),
    )
