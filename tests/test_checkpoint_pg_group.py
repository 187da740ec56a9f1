"""Group commit of the PostgreSQL checkpointer: a put never waits behind another commit.

LangGraph calls the next ``put`` only once the previous one returned, so the
puts of a run are its critical path. These tests drive `AsyncGroupCommit`
with a flush that records its batches and can be held open, and check the
order of events (never elapsed time):

* a put (urgent) commits while an ordinary batch is still in flight;
* task writes that arrive while a put commits ride along with the next put;
* with no next put, they commit by themselves once the linger is over;
* a write that arrives when no put is committing commits at once;
* one failing write fails only its own caller.
"""

from __future__ import annotations

import asyncio

import pytest

from langgraph_memory.checkpoint.postgres._group import AsyncGroupCommit

pytestmark = pytest.mark.timeout(60)


def _queued(group: AsyncGroupCommit) -> int:
    return len(group._queue)  # noqa: SLF001


class _AsyncFlush:
    def __init__(self, hold: set[str] | None = None) -> None:
        self.batches: list[list[str]] = []
        self.hold = hold or set()
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, batch: list[str]) -> list[BaseException | None]:
        self.batches.append(list(batch))
        if self.hold & set(batch):
            self.entered.set()
            await self.release.wait()
        return [None] * len(batch)


async def test_async_put_commits_while_an_ordinary_batch_is_in_flight() -> None:
    flush = _AsyncFlush(hold={"w1"})
    group = AsyncGroupCommit(flush)
    writer = asyncio.create_task(group.submit("w1"))
    await flush.entered.wait()
    await group.submit("p1", urgent=True)
    assert not writer.done()
    flush.release.set()
    await writer
    assert flush.batches == [["w1"], ["p1"]]


async def test_async_writes_during_a_put_ride_along_with_the_next_put() -> None:
    flush = _AsyncFlush(hold={"p1"})
    group = AsyncGroupCommit(flush, linger=60.0)
    put1 = asyncio.create_task(group.submit("p1", urgent=True))
    await flush.entered.wait()
    writers = [asyncio.create_task(group.submit(w)) for w in ("w1", "w2")]
    while _queued(group) < 2:
        await asyncio.sleep(0)
    flush.release.set()
    await put1
    await group.submit("p2", urgent=True)
    await asyncio.gather(*writers)
    assert flush.batches == [["p1"], ["p2", "w1", "w2"]]


async def test_async_writes_commit_alone_when_no_put_follows() -> None:
    flush = _AsyncFlush(hold={"p1"})
    group = AsyncGroupCommit(flush, linger=0.001)
    put1 = asyncio.create_task(group.submit("p1", urgent=True))
    await flush.entered.wait()
    writer = asyncio.create_task(group.submit("w1"))
    while _queued(group) < 1:
        await asyncio.sleep(0)
    flush.release.set()
    await put1
    await writer
    assert flush.batches == [["p1"], ["w1"]]


async def test_async_write_after_a_put_returned_does_not_wait_for_another() -> None:
    flush = _AsyncFlush()
    group = AsyncGroupCommit(flush, linger=3600.0)
    await group.submit("p1", urgent=True)
    await asyncio.wait_for(group.submit("w1"), 60)
    assert flush.batches == [["p1"], ["w1"]]


async def test_async_cancelled_waiter_does_not_strand_the_others() -> None:
    flush = _AsyncFlush(hold={"p1"})
    group = AsyncGroupCommit(flush, linger=60.0)
    put1 = asyncio.create_task(group.submit("p1", urgent=True))
    await flush.entered.wait()
    w1 = asyncio.create_task(group.submit("w1"))
    w2 = asyncio.create_task(group.submit("w2"))
    while _queued(group) < 2:
        await asyncio.sleep(0)
    flush.release.set()
    await put1
    p2 = asyncio.create_task(group.submit("p2", urgent=True))
    await asyncio.sleep(0)
    w1.cancel()
    await p2
    await w2
    assert flush.batches == [["p1"], ["p2", "w1", "w2"]]
