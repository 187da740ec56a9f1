"""A search's HNSW query, started while the search plans.

A search that plans HNSW waits twice on something other than this process:
its planning read (on a PostgreSQL server, a round trip of about 2 ms) and
then Chroma's query (about 3 ms at 100,000 vectors; Chroma releases the GIL
while it searches). Both can run at once: a search whose last run with the
same scope, filter and depth asked Chroma for ``n`` records starts the same
query on a worker thread as soon as its snapshot is taken, plans meanwhile,
and takes the answer if its plan asks for at most ``n`` records of that
collection. Otherwise the early answer is dropped and the search queries as
it would have.

The query starts after the search's snapshot, as the planned one would, so
it sees what Chroma had applied by then: a change applied later is either in
the snapshot's list of unapplied changes (scored exactly) or not in the
snapshot at all.

    >>> early = EarlyQueries()
    >>> early.remember(("memories",), "memories", 50)
    >>> early.guess(("memories",))
    ('memories', 50)
    >>> query = early.start("memories", 50, lambda: [(7, 0, 0.1)])
    >>> query.take("memories", 50)
    [(7, 0, 0.1)]
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["EarlyQueries", "EarlyQuery"]

Records = list[tuple[int, int, float]]


class EarlyQuery:
    """One query on its way: ``n`` records of ``collection``."""

    def __init__(self, collection: str, n: int, future: Future[Records | None]) -> None:
        self.collection = collection
        self.n = n
        self._future = future

    @property
    def running(self) -> bool:
        """Whether Chroma has not answered yet (waiting now would be waiting for it)."""
        return not self._future.done()

    def take(self, collection: str, n: int) -> Records | None:
        """The answer, if it is for ``collection`` and at least ``n`` records; else None (query again)."""
        if collection != self.collection or n > self.n:
            return None
        # The worker started it at once (never queued, see `EarlyQueries.start`), and it takes no lock
        # this search holds: waiting for it is waiting for Chroma.
        return self._future.result()


class EarlyQueries:
    """Which searches query HNSW, and the workers that start those queries early.

    ``workers`` bounds the queries under way at once: past it, a search
    queries in its own thread, as without this class. ``remember`` bounds the
    searches kept (least recently used dropped first).
    """

    def __init__(self, workers: int = 2, remember: int = 512) -> None:
        self.workers = workers
        self._limit = remember
        self._seen: OrderedDict[Hashable, tuple[str, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._busy = 0
        self._pool: ThreadPoolExecutor | None = None
        self._pid = 0

    def guess(self, key: Hashable) -> tuple[str, int] | None:
        """``(collection, n)`` that the last search of ``key`` asked Chroma for first, or None."""
        self._after_fork()
        with self._lock:
            got = self._seen.get(key)
            if got is not None:
                self._seen.move_to_end(key)
            return got

    def remember(self, key: Hashable, collection: str, n: int) -> None:
        """That a search of ``key`` asked Chroma for ``n`` records of ``collection`` first."""
        with self._lock:
            self._seen[key] = (collection, n)
            self._seen.move_to_end(key)
            while len(self._seen) > self._limit:
                self._seen.popitem(last=False)

    def forget(self, key: Hashable) -> None:
        """That a search of ``key`` did not query Chroma (it will not be started early next time)."""
        with self._lock:
            self._seen.pop(key, None)

    def start(self, collection: str, n: int, query: Callable[[], Records | None]) -> EarlyQuery | None:
        """Run ``query`` on a worker now; None when every worker is busy."""
        self._after_fork()
        with self._lock:
            if self._busy >= self.workers:
                return None
            self._busy += 1
            pool = self._pool_here()
        try:
            future = pool.submit(self._run, query)
        except RuntimeError:  # shut down at interpreter exit
            self._done()
            return None
        return EarlyQuery(collection, n, future)

    def close(self) -> None:
        """Stop the workers (a later `start` makes new ones)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _after_fork(self) -> None:
        # A forked child inherits the pool without its threads (work queued there would never run), and maybe
        # the lock held or queries counted that will never end.
        if self._pid and self._pid != os.getpid():
            self._lock = threading.Lock()
            self._busy = 0
            self._pool = None
            self._pid = 0

    def _pool_here(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="lgm-early-query")
            self._pid = os.getpid()
        return self._pool

    def _run(self, query: Callable[[], Records | None]) -> Records | None:
        try:
            return query()
        finally:
            self._done()

    def _done(self) -> None:
        with self._lock:
            self._busy -= 1
