"""Group commit: writes that arrive while another commits share the next COMMIT.

With ``synchronous_commit=on`` every COMMIT waits for PostgreSQL to flush
its WAL to disk (about 5 ms on these machines, far more than the statement).
LangGraph stores a step's checkpoint and the next step's task writes from
different threads (or tasks) at the same time; queued here, the writes that
arrive while one commit is in flight go together in the next transaction:
one flush for all of them, and each caller still returns only after the
commit that holds its write.

The first caller to find no commit in flight leads: it commits the queue,
then hands the lead to the oldest waiting caller, if any. A caller alone
commits at once, as without this module.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["AsyncGroupCommit", "GroupCommit"]

MAX_BATCH = 64  # writes per transaction

Flush = Callable[[list[Any]], "list[BaseException | None]"]
AsyncFlush = Callable[[list[Any]], Awaitable["list[BaseException | None]"]]


class _Item:
    __slots__ = ("done", "error", "lead", "payload")

    def __init__(self, payload: Any, done: Any) -> None:
        self.payload = payload
        self.error: BaseException | None = None
        self.lead = False
        self.done = done


class GroupCommit:
    """Thread-side group commit; ``flush`` commits a batch and returns one error (or None) per write."""

    def __init__(self, flush: Flush) -> None:
        self._flush = flush
        self._lock = threading.Lock()
        self._queue: list[_Item] = []
        self._busy = False

    def submit(self, payload: Any) -> None:
        """Commit ``payload`` (alone or with others); raise its error, if any."""
        item = _Item(payload, threading.Event())
        with self._lock:
            self._queue.append(item)
            lead = not self._busy
            self._busy = True
        if not lead:
            item.done.wait()
            if not item.lead:
                if item.error is not None:
                    raise item.error
                return
        with self._lock:
            batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
        try:
            errors = self._flush([i.payload for i in batch])
        except BaseException as exc:  # flush reports errors; this is a bug or an interrupt
            errors = [exc] * len(batch)
        for member, error in zip(batch, errors, strict=True):
            member.error = error
            if member is not item:
                member.done.set()
        with self._lock:
            if self._queue:
                nxt = self._queue[0]
                nxt.lead = True
                nxt.done.set()
            else:
                self._busy = False
        if item.error is not None:
            raise item.error


class AsyncGroupCommit:
    """Event-loop twin of `GroupCommit` (one per loop).

    A write that finds no commit in flight is committed by its own caller,
    at once. Writes arriving meanwhile queue up and are committed together
    by a task of their own once it is done, so a caller cancelled while
    waiting never strands the others (its write may still be committed).
    """

    def __init__(self, flush: AsyncFlush) -> None:
        self._flush = flush
        self._queue: list[_Item] = []
        self._task: asyncio.Task[None] | None = None
        self._leading = False

    async def submit(self, payload: Any) -> None:
        loop = asyncio.get_running_loop()
        if self._task is None and not self._leading:
            self._leading = True
            try:
                (error,) = await self._flush([payload])
            finally:
                self._leading = False
                if self._queue and self._task is None:
                    self._task = loop.create_task(self._drain())
            if error is not None:
                raise error
            return
        item = _Item(payload, loop.create_future())
        self._queue.append(item)
        await asyncio.shield(item.done)
        if item.error is not None:
            raise item.error

    async def _drain(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                try:
                    errors = await self._flush([i.payload for i in batch])
                except BaseException as exc:  # flush reports errors; this is a bug or a cancellation
                    errors = [exc] * len(batch)
                for member, error in zip(batch, errors, strict=True):
                    member.error = error
                    if not member.done.done():
                        member.done.set_result(None)
        finally:
            self._task = None
