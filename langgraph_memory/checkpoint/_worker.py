"""The thread that runs the async methods' SQLite work off the event loop.

Two kinds of work are queued, and run in submission order:

* a call (``run``): any function, run on its own;
* a write (``write``): statements for one transaction. Writes queued back to
  back (a graph step's ``aput_writes`` and the next ``aput`` usually are)
  are committed together in one transaction, and each caller's future is
  resolved only after that COMMIT returns, so an acknowledged write is as
  durable as one committed alone: group commit, not write-behind.

Nothing of SQLite runs on the event loop: a read can meet WAL recovery, a
commit another writer's lock, a WAL restart's fsync or a WAL checkpoint, and
the LangGraph server fails a run that blocks its loop.

Results go back to each event loop in one ``call_soon_threadsafe`` per group,
not one per call: every wake-up of a busy loop costs a self-pipe write and
read, and on a loaded machine a thread switch.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from langgraph_memory.checkpoint._pool import Statement, _ConnectionPool

T = TypeVar("T")

logger = logging.getLogger(__name__)

_MAX_GROUP = 64  # writes committed together at most; bounds one transaction's length


class _Call:
    __slots__ = ("loop", "fut", "fn")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        fut: asyncio.Future[Any],
        fn: Callable[[], Any],
    ):
        self.loop, self.fut, self.fn = loop, fut, fn


class _Write:
    __slots__ = ("loop", "fut", "statements", "what")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        fut: asyncio.Future[Any],
        statements: Sequence[Statement],
        what: str,
    ):
        self.loop, self.fut, self.statements, self.what = loop, fut, statements, what


_Outcome = tuple["asyncio.Future[Any]", bool, Any]


def _settle(outcomes: list[_Outcome]) -> None:
    for fut, ok, result in outcomes:
        if fut.cancelled():
            continue
        if ok:
            fut.set_result(result)
        else:
            fut.set_exception(result)


def _deliver(loop: asyncio.AbstractEventLoop, outcomes: list[_Outcome]) -> None:
    try:
        loop.call_soon_threadsafe(_settle, outcomes)
    except RuntimeError:  # the caller's event loop has closed meanwhile
        pass


class _Worker:
    """One daemon thread fed by a queue, with group commit for writes.

    Cheaper per call than ``run_in_executor`` (no executor bookkeeping, one
    wake-up each way), which matters when every graph step makes two calls.
    """

    def __init__(self, name: str, pool: _ConnectionPool) -> None:
        self._name = name
        self._pool = pool
        self._queue: queue.SimpleQueue[_Call | _Write | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _submit(self, item: _Call | _Write) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._name} is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            self._queue.put(item)

    async def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn()`` on the worker thread after everything queued before it."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        self._submit(_Call(loop, fut, fn))
        return await fut

    async def write(self, statements: Sequence[Statement], what: str) -> None:
        """Execute ``statements`` in a transaction; return once it is committed."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._submit(_Write(loop, fut, statements, what))
        await fut

    def _loop(self) -> None:
        get, get_nowait = self._queue.get, self._queue.get_nowait
        while True:
            items = [get()]
            try:  # everything already queued joins this round
                while items[-1] is not None:
                    items.append(get_nowait())
            except queue.Empty:
                pass
            start = 0
            while start < len(items):
                item = items[start]
                if item is None:
                    return
                if isinstance(item, _Write):
                    end = start + 1
                    while end < len(items) and end - start < _MAX_GROUP and isinstance(items[end], _Write):
                        end += 1
                    self._commit_group(items[start:end])  # type: ignore[arg-type]
                    start = end
                else:
                    self._call(item)
                    start += 1
            del items, item

    def _call(self, item: _Call) -> None:
        try:
            outcome: _Outcome = (item.fut, True, item.fn())
        except BaseException as exc:  # handed to the awaiting coroutine
            outcome = (item.fut, False, exc)
        _deliver(item.loop, [outcome])

    def _commit_group(self, writes: list[_Write]) -> None:
        try:
            errors = self._pool.write_group([w.statements for w in writes], [w.what for w in writes])
        except BaseException as exc:  # write_group reports per group; this is a bug guard
            errors = [exc] * len(writes)
        by_loop: dict[asyncio.AbstractEventLoop, list[_Outcome]] = {}
        for w, error in zip(writes, errors, strict=True):
            outcome = (w.fut, error is None, error)
            by_loop.setdefault(w.loop, []).append(outcome)
        for loop, outcomes in by_loop.items():
            _deliver(loop, outcomes)

    def close(self) -> None:
        """Finish queued calls, then stop the thread."""
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
            if thread is not None:
                self._queue.put(None)
        if thread is not None and thread is not threading.current_thread():
            thread.join()
