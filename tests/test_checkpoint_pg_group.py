"""Group commit of the PostgreSQL checkpointer: a put never waits behind another commit.

LangGraph calls the next ``put`` only once the previous one returned, so the
puts of a run are its critical path. These tests drive `GroupCommit` and
`AsyncGroupCommit` with a flush that records its batches and can be held
open, and check the order of events (never elapsed time):

* a put (urgent) commits while an ordinary batch is still in flight;
* task writes that arrive while a put commits ride along with the next put;
* with no next put, they commit by themselves once the linger is over;
* a write that arrives when no put is committing commits at once;
* one failing write fails only its own caller.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from langgraph_memory.checkpoint.postgres._group import AsyncGroupCommit, GroupCommit

pytestmark = pytest.mark.timeout(60)


class _Flush:
    """Records each batch; a batch holding a payload in ``hold`` waits until it is released."""

    def __init__(self, hold: set[str] | None = None, fail: set[str] | None = None) -> None:
        self.batches: list[list[str]] = []
        self.hold = hold or set()
        self.fail = fail or set()
        self.entered = threading.Event()
        self.release = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, batch: list[str]) -> list[BaseException | None]:
        with self.lock:
            self.batches.append(list(batch))
        if self.hold & set(batch):
            self.entered.set()
            assert self.release.wait(30)
        return [RuntimeError(p) if p in self.fail else None for p in batch]


def _until(check: Callable[[], bool]) -> None:
    """Wait until ``check()`` holds (a state appearing, never a fixed time)."""
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, "state never reached"
        time.sleep(0.001)


def _queued(group: Any) -> int:
    return len(group._queue)  # noqa: SLF001


def _in_thread(fn: Callable[[], None]) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


def test_put_commits_while_an_ordinary_batch_is_in_flight() -> None:
    flush = _Flush(hold={"w1"})
    group = GroupCommit(flush)
    writer, errors = _in_thread(lambda: group.submit("w1"))
    assert flush.entered.wait(30)
    group.submit("p1", urgent=True)  # returns although w1's commit has not finished
    assert ["p1"] in flush.batches
    flush.release.set()
    writer.join(30)
    assert not errors


def test_writes_during_a_put_ride_along_with_the_next_put() -> None:
    flush = _Flush(hold={"p1"})
    group = GroupCommit(flush, linger=60.0)
    put1, put_errors = _in_thread(lambda: group.submit("p1", urgent=True))
    assert flush.entered.wait(30)
    writers = [_in_thread(lambda w=w: group.submit(w)) for w in ("w1", "w2")]
    _until(lambda: _queued(group) == 2)
    flush.release.set()
    put1.join(30)
    group.submit("p2", urgent=True)
    for thread, errors in writers:
        thread.join(30)
        assert not errors
    assert not put_errors
    assert flush.batches == [["p1"], ["p2", "w1", "w2"]]


def test_writes_commit_alone_when_no_put_follows() -> None:
    flush = _Flush(hold={"p1"})
    group = GroupCommit(flush, linger=0.001)
    put1, _ = _in_thread(lambda: group.submit("p1", urgent=True))
    assert flush.entered.wait(30)
    writer, errors = _in_thread(lambda: group.submit("w1"))
    _until(lambda: _queued(group) == 1)
    flush.release.set()
    put1.join(30)
    writer.join(30)
    assert not errors
    assert flush.batches == [["p1"], ["w1"]]


def test_a_write_after_a_put_returned_does_not_wait_for_another() -> None:
    # As LangGraph's durability="sync" and a caller's own loop do: put, then put_writes, then the next put.
    flush = _Flush()
    group = GroupCommit(flush, linger=3600.0)
    group.submit("p1", urgent=True)
    writer, errors = _in_thread(lambda: group.submit("w1"))
    writer.join(60)
    assert not writer.is_alive() and not errors
    assert flush.batches == [["p1"], ["w1"]]


def test_a_failing_write_fails_only_its_caller() -> None:
    flush = _Flush(hold={"p1"}, fail={"w2"})
    group = GroupCommit(flush, linger=60.0)
    put1, _ = _in_thread(lambda: group.submit("p1", urgent=True))
    assert flush.entered.wait(30)
    w1, e1 = _in_thread(lambda: group.submit("w1"))
    w2, e2 = _in_thread(lambda: group.submit("w2"))
    _until(lambda: _queued(group) == 2)
    flush.release.set()
    put1.join(30)
    group.submit("p2", urgent=True)
    w1.join(30)
    w2.join(30)
    assert not e1
    assert [str(e) for e in e2] == ["w2"]


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
