"""The background thread behind the TTL sweeper and the access flusher."""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable

__all__ = ["Sweeper", "SweeperFuture"]

logger = logging.getLogger(__name__)


class SweeperFuture(concurrent.futures.Future[None]):
    """The handle of a running sweeper: cancel it to stop the sweeper.

    Also awaitable, so async code written for LangGraph's async stores
    (``task = await store.start_ttl_sweeper()``) works: awaiting returns the
    handle at once, with the sweeper running; it does not wait for it to stop.
    """

    def __await__(self):
        return self._started().__await__()

    async def _started(self) -> SweeperFuture:
        return self


class Sweeper:
    """A daemon thread that calls ``work`` every ``interval`` seconds until stopped."""

    def __init__(self, name: str, work: Callable[[], object], interval: float) -> None:
        self._name = name
        self._work = work
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.future: SweeperFuture = SweeperFuture()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> SweeperFuture:
        if self.running:
            return self.future
        self._stop.clear()
        self.future = SweeperFuture()
        future = self.future

        def loop() -> None:
            try:
                while not self._stop.wait(self.interval):
                    try:
                        self._work()
                    except Exception:  # keep sweeping; one bad pass must not stop the thread
                        logger.exception("%s pass failed", self._name)
                if not future.done():  # a cancelled handle (how a caller stops it) is already done
                    future.set_result(None)
            except BaseException as exc:  # pragma: no cover - defensive
                if not future.done():
                    future.set_exception(exc)

        # Cancelling the returned future stops the thread, as in SqliteStore.
        future.add_done_callback(lambda f: self._stop.set() if f.cancelled() else None)
        self._thread = threading.Thread(target=loop, name=self._name, daemon=True)
        self._thread.start()
        return future

    def stop(self, timeout: float | None = None) -> bool:
        if not self.running:
            return True
        self._stop.set()
        assert self._thread is not None
        self._thread.join(timeout)
        stopped = not self._thread.is_alive()
        if stopped:
            self._thread = None
        return stopped
