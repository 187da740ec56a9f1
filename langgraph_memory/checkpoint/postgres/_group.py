"""Group commit: writes that arrive while another commits share the next COMMIT.

With ``synchronous_commit=on`` every COMMIT waits for PostgreSQL to flush
its WAL to disk (about 3 ms on these machines, far more than the statement).
LangGraph stores a step's checkpoint and the step's task writes from
different threads (or tasks) at the same time; queued here, writes that
arrive while one commit is in flight go together in the next transaction:
one flush for all of them, and each caller still returns only after the
commit that holds its write.

Two kinds of write:

* **Ordinary** writes (``put_writes``) take turns: the first caller to find
  no ordinary commit in flight commits the queue; the others wait and go
  together in the next one.
* **Urgent** writes (``put``) never wait for a commit in flight. LangGraph
  calls the next ``put`` only once the previous one returned, so a put that
  queued behind a batch of task writes would add a whole commit to every
  step. An urgent caller commits at once, on a connection of its own, and
  takes the ordinary writes still queued along in the same transaction.
  PostgreSQL flushes the WAL of commits that overlap together, so running
  beside an ordinary commit costs little.

Ordinary writes that arrive while a put commits wait for the next put
instead of committing beside it: LangGraph runs a step's tasks while the previous
checkpoint is being stored, so their writes arrive during a put, and the
next put follows as soon as that one returns. Riding along with it, they
cost no commit of their own, and the put never shares the disk with a
second flush. If no put comes within `LINGER` seconds of the last one
finishing, they commit by themselves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["AsyncGroupCommit"]

MAX_BATCH = 64  # writes per transaction
LINGER = 0.002  # seconds ordinary writes wait, after a put, for the next put to take them along

AsyncFlush = Callable[[list[Any]], Awaitable["list[BaseException | None]"]]


class _Item:
    __slots__ = ("done", "error", "finished", "payload", "rides", "taken")

    def __init__(self, payload: Any, done: Any = None, rides: bool = False) -> None:
        self.payload = payload
        self.rides = rides  # arrived while a put was committing: waits for the next put
        self.error: BaseException | None = None
        self.taken = False  # in a batch being committed
        self.finished = False  # its batch is committed (or failed)
        self.done = done


def _take(queue: list[_Item], own: _Item) -> tuple[list[_Item], list[_Item]]:
    """(batch, rest): ``own`` first, then the oldest others, at most `MAX_BATCH`."""
    others = [i for i in queue if i is not own]
    batch = [own, *others[: MAX_BATCH - 1]]
    for item in batch:
        item.taken = True
    return batch, others[MAX_BATCH - 1 :]


class AsyncGroupCommit:
    """Group commit on one event loop (one per loop).

    A write that commits alone is committed by its own caller, at once.
    A batch that holds other callers' writes is committed by a task of its
    own, so a caller cancelled while waiting never strands the others (its
    write may still be committed).
    """

    def __init__(self, flush: AsyncFlush, *, linger: float = LINGER) -> None:
        self._flush = flush
        self._linger = linger
        self._queue: list[_Item] = []
        self._ordinary_busy = False
        self._urgent = 0
        self._linger_until = 0.0  # loop time
        self._timer: asyncio.TimerHandle | None = None

    def _ordinary_may_start(self, rides: bool) -> bool:
        loop = asyncio.get_running_loop()
        if self._ordinary_busy or (rides and self._urgent):
            return False
        if not rides:
            return True
        remaining = self._linger_until - loop.time()
        if remaining > 0:
            if self._timer is None:
                self._timer = loop.call_later(remaining, self._lingered)
            return False
        return True

    def _lingered(self) -> None:
        self._timer = None
        self._next_ordinary()

    async def submit(self, payload: Any, *, urgent: bool = False) -> None:
        rides = self._urgent > 0
        if not self._queue and (urgent or self._ordinary_may_start(rides)):
            await self._commit_alone(payload, urgent=urgent)
            return
        item = _Item(payload, asyncio.get_running_loop().create_future(), rides)
        self._queue.append(item)
        if urgent:
            self._start(item, urgent=True)
        else:
            self._next_ordinary()
        await asyncio.shield(item.done)
        if item.error is not None:
            raise item.error

    def _begin(self, urgent: bool) -> None:
        if urgent:
            self._urgent += 1
        else:
            self._ordinary_busy = True

    def _end(self, urgent: bool) -> None:
        if urgent:
            self._urgent -= 1
            self._linger_until = asyncio.get_running_loop().time() + self._linger
        else:
            self._ordinary_busy = False
        self._next_ordinary()

    async def _commit_alone(self, payload: Any, *, urgent: bool) -> None:
        self._begin(urgent)
        try:
            (error,) = await self._flush([payload])
        finally:
            self._end(urgent)
        if error is not None:
            raise error

    def _start(self, own: _Item, *, urgent: bool) -> None:
        batch, self._queue = _take(self._queue, own)
        self._begin(urgent)
        asyncio.get_running_loop().create_task(self._commit(batch, urgent=urgent))

    def _next_ordinary(self) -> None:
        # Writes that queued while a batch was in flight go now, together.
        if self._queue and self._ordinary_may_start(all(i.rides for i in self._queue)):
            self._start(self._queue[0], urgent=False)

    async def _commit(self, batch: list[_Item], *, urgent: bool) -> None:
        try:
            errors = await self._flush([i.payload for i in batch])
        except BaseException as exc:  # flush reports errors; this is a bug or a cancellation
            errors = [exc] * len(batch)
        for member, error in zip(batch, errors, strict=True):
            member.error = error
            member.finished = True
            if not member.done.done():
                member.done.set_result(None)
        self._end(urgent)
