"""What both checkpointers share: list paging, DeltaChannel history, retention, thread activity.

`CheckpointerBase` builds on LangGraph's ``BaseCheckpointSaver``, as
``SqliteSaver`` and ``PostgresSaver`` do. A backend supplies its connections
(`CheckpointerBase._read`, ``_write`` and their async twins, each running a
function of one DB-API connection) and its SQL: the hot paths (get, put,
list pages) in its own statements, everything else through one `Queries`
of constants that ``_delta`` and ``_maintenance`` run on either database.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import random
import re
import time
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from datetime import timedelta
from types import TracebackType
from typing import Any, Literal, Self, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
)

from langgraph_memory.checkpoint import _delta, _maintenance
from langgraph_memory.checkpoint._maintenance import ThreadInfo
from langgraph_memory.checkpoint._shared_sql import Queries
from langgraph_memory.errors import ConfigError, FilterError

__all__ = ["CheckpointerBase", "PruneStrategy", "Queries", "ThreadInfo"]

T = TypeVar("T")
PruneStrategy = Literal["keep_latest", "delete"]

_LIST_PAGE = 100  # rows per round trip when list() has no small limit
_FILTER_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")


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
    def _list_page(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        after: tuple[str, str, str] | None,
        size: int,
    ) -> builtins.list[CheckpointTuple]:
        """Up to ``size`` matching checkpoints older than ``after`` (id, thread, namespace), newest first."""

    @abstractmethod
    async def _alist_page(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        after: tuple[str, str, str] | None,
        size: int,
    ) -> builtins.list[CheckpointTuple]:
        """Async `_list_page()`."""

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
            page = self._list_page(config, filter, before, after, size)
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
            page = await self._alist_page(config, filter, before, after, size)
            for item in page:
                yield item
            if len(page) < size:
                return
            remaining, after = _next_page(remaining, page)

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

    def _delete_thread(self, thread_id: str) -> Callable[[Any], None]:
        return lambda conn: _maintenance.delete_threads(conn, self.queries, [str(thread_id)])

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, blob and write of a thread, in all namespaces."""
        self._write(self._delete_thread(thread_id), "delete a thread")

    async def adelete_thread(self, thread_id: str) -> None:
        """Async ``delete_thread``."""
        await self._awrite(self._delete_thread(thread_id), "delete a thread")

    def _delete_for_runs(self, run_ids: Sequence[str]) -> Callable[[Any], None] | None:
        ids = [str(r) for r in run_ids]
        if not ids:
            return None
        return lambda conn: _maintenance.delete_for_runs(conn, self.queries, self.serde, ids)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) created by the given runs.

        A deleted checkpoint that a surviving checkpoint's DeltaChannel
        history runs through is hidden instead: it disappears from ``list``
        and ``get_tuple`` but the survivor still reconstructs.
        """
        if (fn := self._delete_for_runs(run_ids)) is not None:
            self._write(fn, "delete checkpoints of runs")

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async ``delete_for_runs``."""
        if (fn := self._delete_for_runs(run_ids)) is not None:
            await self._awrite(fn, "delete checkpoints of runs")

    @staticmethod
    def _check_strategy(strategy: str) -> None:
        if strategy not in ("keep_latest", "delete"):
            raise ConfigError(f"prune strategy must be 'keep_latest' or 'delete', got {strategy!r}")

    def _prune(self, thread_ids: Sequence[str], strategy: str) -> Callable[[Any], None] | None:
        ids = [str(t) for t in thread_ids]
        self._check_strategy(strategy)
        if not ids:
            return None
        return lambda conn: _maintenance.prune(conn, self.queries, self.serde, ids, strategy)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Shrink threads: ``"keep_latest"`` keeps the newest checkpoint per namespace, ``"delete"`` all.

        With ``"keep_latest"`` the older checkpoints a DeltaChannel of the kept
        one still needs (back to its nearest snapshot) are kept hidden, so the
        kept state is reconstructed exactly.
        """
        if (fn := self._prune(thread_ids, strategy)) is not None:
            self._write(fn, "prune threads")

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async ``prune``."""
        if (fn := self._prune(thread_ids, strategy)) is not None:
            await self._awrite(fn, "prune threads")

    def _copy_thread(self, source_thread_id: str, target_thread_id: str) -> Callable[[Any], None] | None:
        source, target = str(source_thread_id), str(target_thread_id)
        if source == target:
            return None
        now = time.time()
        return lambda conn: _maintenance.copy_thread(conn, self.queries, source, target, now)

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

    def list_threads(self) -> builtins.list[ThreadInfo]:
        """Every thread with its last activity time (UTC), most recently active first."""
        return self._read(lambda conn: _maintenance.list_threads(conn, self.queries), "list threads")

    async def alist_threads(self) -> builtins.list[ThreadInfo]:
        """Async ``list_threads``."""
        return await self._aread(lambda conn: _maintenance.list_threads(conn, self.queries), "list threads")

    def thread_sizes(self, thread_ids: Sequence[str]) -> dict[str, int]:
        """Bytes each of ``thread_ids`` holds (checkpoints, channel values, pending writes)."""
        return self._read(lambda conn: _maintenance.thread_sizes(conn, self.queries, thread_ids), "measure threads")

    def _prune_inactive(self, older_than: timedelta, strategy: str) -> Callable[[Any], builtins.list[str]]:
        self._check_strategy(strategy)
        if older_than.total_seconds() < 0:
            raise ConfigError(f"older_than must not be negative, got {older_than}")
        cutoff = time.time() - older_than.total_seconds()

        def write(conn: Any) -> builtins.list[str]:
            ids = [thread_id for (thread_id,) in conn.execute(self.queries.inactive_threads, (cutoff,)).fetchall()]
            _maintenance.prune(conn, self.queries, self.serde, ids, strategy)
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


def metadata_json(metadata: Mapping[str, Any]) -> str:
    """Metadata as JSON text, so ``list(filter=...)`` can query it on either backend.

    What JSON cannot hold (rare: LangGraph writes str/int/float/bool) becomes
    text.
    """

    def default(value: Any) -> Any:
        return list(value) if isinstance(value, (set, frozenset, tuple)) else str(value)

    return json.dumps(metadata, ensure_ascii=False, default=default)


def check_filter_keys(filter: Mapping[str, Any] | None) -> None:
    """`FilterError` unless every key of a metadata filter is safe to put in a JSON path."""
    for key in filter or {}:
        if not isinstance(key, str) or not _FILTER_KEY.match(key):
            raise FilterError(
                f"metadata filter key {key!r} is not allowed: use letters, digits, '_', '.' and '-' only."
            )


def checkpoint_tuple(
    key: tuple[str, str, str],
    parent_id: str | None,
    checkpoint: Checkpoint,
    metadata: Mapping[str, Any] | None,
    pending_writes: builtins.list[PendingWrite],
) -> CheckpointTuple:
    """The ``CheckpointTuple`` of a stored checkpoint, ``key`` being (thread, namespace, id)."""
    thread_id, checkpoint_ns, checkpoint_id = key
    return CheckpointTuple(
        config={
            "configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}
        },
        checkpoint=checkpoint,
        metadata=cast(CheckpointMetadata, metadata or {}),
        parent_config=(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": parent_id}}
            if parent_id
            else None
        ),
        pending_writes=pending_writes,
    )


def _next_page(remaining: int | None, page: builtins.list[CheckpointTuple]) -> tuple[int | None, tuple[str, str, str]]:
    last = page[-1].config["configurable"]
    return (
        None if remaining is None else remaining - len(page),
        (last["checkpoint_id"], last["thread_id"], last["checkpoint_ns"]),
    )
