"""Bringing the Chroma index up to date in a thread of its own, after writes that already committed.

With the catalog on a PostgreSQL server a write is acknowledged when the
server commits it; the index is derived and catches up from the catalog's
queue (searches score queued items exactly meanwhile, so none is missed).
Applying the queue in the writer's own call cost a put about ten more round
trips to the server and a Chroma upsert, several times the write itself; with
a data directory, the upsert of one vector grows with the collection (Chroma
writes its index files on every call: 7.6 ms at 10,000 items, 34 ms at 100,000),
where the commit stays flat. `IndexCatchUp` applies the queue from a daemon
thread instead, once writes pause for ``delay`` seconds, or after ``max_wait``
seconds or ``max_pending`` queued writes of a steady stream: a burst is applied
in one upsert, and an embedded Chroma call, which holds the GIL from start to
end, rarely lands inside a write. ``close()`` applies what is left.

A bulk load (requests of ``bulk_writes`` writes or more: ``batch()`` with a
thousand puts, an import) sends its batches less than a second apart, so the
short pause and the pending bound would start a pass after every batch, and
that pass's Chroma calls would hold the GIL through the next batch (a load of
10,000 items: 2,082 items/s acknowledged with the index held back, 593 with a
pass per batch). During a bulk load a pass waits instead for a pause of
``bulk_delay`` seconds in its batches, or ``bulk_max_wait`` seconds, or
``bulk_pending`` queued writes: what a search then scores exactly stays
bounded. Single writes beside the load are no batch of it: counted as load,
puts 10 ms apart never left a pause, and after a 10,000-item load the index
idled 27 s of its 38 s catch-up (up to ``bulk_max_wait``) with every change of
the load queued.

    catch_up = IndexCatchUp(writer.sync)
    catch_up.request({"memories"})  # returns at once
    catch_up.wait(timeout=10)       # True once everything requested is applied
    catch_up.stop()
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator

from langgraph_memory._infra.closing import warn_briefly

__all__ = ["IndexCatchUp"]

logger = logging.getLogger(__name__)


class IndexCatchUp:
    """Runs ``sync(collections)`` in a daemon thread whenever collections are requested.

    ``sync`` must not raise for index failures (the writer's ``sync`` logs
    them and leaves the changes queued); anything else it raises is logged.
    """

    def __init__(
        self,
        sync: Callable[[set[str] | None], None],
        *,
        delay: float = 0.2,
        max_wait: float = 2.0,
        max_pending: int = 500,
        bulk_writes: int = 200,
        bulk_delay: float = 1.0,
        bulk_max_wait: float = 30.0,
        bulk_pending: int = 20_000,
        name: str = "lgm-index-catch-up",
    ) -> None:
        self._sync = sync
        #: A pass starts once no write was requested for this many seconds, so a burst is applied at once ...
        self.delay = delay
        #: ... or this many seconds after the first request it applies, under a steady stream of writes ...
        self.max_wait = max_wait
        #: ... or once this many writes wait (searches score them exactly meanwhile, which costs per write).
        self.max_pending = max_pending
        #: A request of this many writes marks a bulk load, whose pass waits by the bulk_ bounds instead.
        self.bulk_writes = bulk_writes
        self.bulk_delay = bulk_delay
        self.bulk_max_wait = bulk_max_wait
        self.bulk_pending = bulk_pending
        self._bulk = False
        self._hurry = False
        self._active = 0  # writes under way (see writing())
        self._pending = 0
        self._first = 0.0
        self._last = 0.0
        self._last_bulk = 0.0
        self._name = name
        self._cv = threading.Condition()
        self._wanted: set[str] = set()
        self._busy = False
        self._stopped = False
        self._thread: threading.Thread | None = None

    def request(self, collections: set[str], writes: int = 1) -> None:
        """Apply ``collections``' queued changes (``writes`` of them) soon; returns at once (inline once stopped)."""
        with self._cv:
            if not self._stopped:
                now = time.monotonic()
                idle = not self._wanted
                if idle:
                    self._first = now
                    self._bulk = False
                self._bulk = self._bulk or writes >= self.bulk_writes
                self._last = now
                if writes >= self.bulk_writes:
                    self._last_bulk = now
                self._pending += writes
                self._wanted |= collections
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                    self._thread.start()
                if idle or self._pending >= self._bounds()[2]:
                    # Otherwise the thread is waiting for the pause and finds the later request when its wait
                    # ends: woken by every put, it took the GIL each time the put let go of it (for its round
                    # trip), and the put then waited to get it back.
                    self._cv.notify_all()
                return
        self._sync(collections)

    @contextlib.contextmanager
    def writing(self, writes: int = 1) -> Iterator[None]:
        """Mark a write of ``writes`` under way: during a bulk load, no pass starts until a batch of it ends.

        A batch may take longer than the pause; a single write beside the load is no batch of it.
        """
        bulk = int(writes >= self.bulk_writes)
        with self._cv:
            self._active += bulk
        try:
            yield
        finally:
            with self._cv:
                self._active -= bulk

    def wait(self, timeout: float | None = None) -> bool:
        """Block until every requested change was applied (or failed and stays queued); False on timeout."""
        with self._cv:
            if self._wanted:  # whoever waits wants the index now: no pause to wait for
                self._hurry = True
                self._cv.notify_all()
            return self._cv.wait_for(lambda: not self._wanted and not self._busy, timeout)

    def stop(self, timeout: float | None = 30.0) -> None:
        """Apply what was requested, then end the thread; later requests run inline."""
        with self._cv:
            self._stopped = True
            self._cv.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _bounds(self) -> tuple[float, float, int]:
        """``(pause, longest wait, most pending)`` before a pass: the bulk ones while a bulk load is queued."""
        if self._bulk:
            return self.bulk_delay, self.bulk_max_wait, self.bulk_pending
        return self.delay, self.max_wait, self.max_pending

    def _loop(self) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(lambda: bool(self._wanted) or self._stopped)
                if not self._wanted:
                    return
                while self.delay > 0 and not (self._stopped or self._hurry) and self._pending < self._bounds()[2]:
                    now = time.monotonic()
                    delay, max_wait, _cap = self._bounds()
                    # A bulk batch may take longer than the pause: while one is written, the load has not paused.
                    last = (now if self._active else self._last_bulk) if self._bulk else self._last
                    due = min(last + delay, self._first + max_wait)
                    if now >= due:
                        break
                    self._cv.wait(due - now)
                names, self._wanted, self._pending, self._hurry = self._wanted, set(), 0, False
                self._busy = True
            try:
                self._sync(names)
            except Exception as exc:  # keep following: the changes stay queued for the next pass, close or open
                warn_briefly(logger, "applying committed changes to the Chroma index failed; they stay queued", exc)
            finally:
                with self._cv:
                    self._busy = False
                    self._cv.notify_all()
