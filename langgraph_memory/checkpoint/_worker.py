"""The thread that runs the async methods' SQLite work off the event loop."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Item = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[[], Any]]


def _settle(fut: asyncio.Future[Any], ok: bool, result: Any) -> None:
    if fut.cancelled():
        return
    if ok:
        fut.set_result(result)
    else:
        fut.set_exception(result)


class _Worker:
    """One daemon thread fed by a queue.

    Cheaper per call than ``run_in_executor`` (no executor bookkeeping, one
    wake-up each way), which matters when every graph step makes two calls.
    Calls run in submission order, the order LangGraph issues them.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    async def run(self, fn: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._name} is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            self._queue.put((loop, fut, fn))
        return await fut

    def _loop(self) -> None:
        while (item := self._queue.get()) is not None:
            loop, fut, fn = item
            try:
                result, ok = fn(), True
            except BaseException as exc:  # handed to the awaiting coroutine
                result, ok = exc, False
            try:
                loop.call_soon_threadsafe(_settle, fut, ok, result)
            except RuntimeError:  # the caller's event loop has closed meanwhile
                pass
            del item, fut, fn, result

    def close(self) -> None:
        """Finish queued calls, then stop the thread."""
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
            if thread is not None:
                self._queue.put(None)
        if thread is not None and thread is not threading.current_thread():
            thread.join()
