"""Reads that refresh: access tracking, TTL refresh, and the background sweeper.

A read (``get``/``search`` with refresh on) must not pay for a Chroma write,
or search would cost twice a bare Chroma query. Reads therefore note the
access in an :class:`AccessLog`; the log is applied in one metadata update per
collection by a background flusher (every ``flush_interval`` seconds), before
every TTL sweep and archive run, and on ``close()``. A crash can lose at most
the last interval of access counts and TTL refreshes, never a user's write.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["AccessLog", "Sweeper"]

logger = logging.getLogger(__name__)


@dataclass
class _Access:
    at: float
    count: int


class AccessLog:
    """Pending reads per collection: ``{collection: {uid: (last time, count)}}``."""

    def __init__(self) -> None:
        self._pending: dict[str, dict[str, _Access]] = {}
        self._lock = threading.Lock()

    def note(self, collection: str, uids: list[str], at: float) -> None:
        if not uids:
            return
        with self._lock:
            bucket = self._pending.setdefault(collection, {})
            for uid in uids:
                seen = bucket.get(uid)
                if seen is None:
                    bucket[uid] = _Access(at, 1)
                else:
                    seen.at = max(seen.at, at)
                    seen.count += 1

    def take(self) -> dict[str, dict[str, _Access]]:
        """Remove and return everything pending."""
        with self._lock:
            pending, self._pending = self._pending, {}
        return pending

    def give_back(self, pending: dict[str, dict[str, _Access]]) -> None:
        """Re-queue accesses whose flush failed, merging with newer ones."""
        with self._lock:
            for collection, bucket in pending.items():
                mine = self._pending.setdefault(collection, {})
                for uid, acc in bucket.items():
                    cur = mine.get(uid)
                    if cur is None:
                        mine[uid] = acc
                    else:
                        cur.at = max(cur.at, acc.at)
                        cur.count += acc.count

    def __bool__(self) -> bool:
        with self._lock:
            return any(self._pending.values())


class Sweeper:
    """A daemon thread that calls ``work`` every ``interval`` seconds until stopped."""

    def __init__(self, name: str, work: Callable[[], object], interval: float) -> None:
        self._name = name
        self._work = work
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.future: concurrent.futures.Future[None] = concurrent.futures.Future()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> concurrent.futures.Future[None]:
        if self.running:
            return self.future
        self._stop.clear()
        self.future = concurrent.futures.Future()
        future = self.future

        def loop() -> None:
            try:
                while not self._stop.wait(self.interval):
                    try:
                        self._work()
                    except Exception:  # keep sweeping; one bad pass must not stop the thread
                        logger.exception("%s pass failed", self._name)
                future.set_result(None)
            except BaseException as exc:  # pragma: no cover - defensive
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
