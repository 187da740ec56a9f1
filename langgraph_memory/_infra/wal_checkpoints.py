"""WAL checkpoints of a SQLite file in a thread of their own, off the writer's commit.

In WAL mode SQLite copies the log back into the database file (a
checkpoint) inside the commit that takes the log past
``wal_autocheckpoint`` pages (1,000 by default). A batch of a thousand
puts writes several thousand pages, so every such commit also copied them
into the database and synced it: a fifth of a bulk load's time in
``batch()`` (measured: 70-90 ms of a 1,000-item batch of about 370 ms). The
commit alone is what makes a write durable (the log holds it; a crash
replays it), so the copy can run beside the next batch instead: its I/O
releases the GIL.

`WalCheckpoints` runs a ``PASSIVE`` checkpoint (it never waits for readers
or writers, and copies only what no reader still needs) on a connection of
its own, when asked, at most once per ``interval`` seconds. Only large
commits hand their checkpoint over (`deferred()`): for the commit, the
writer's autocheckpoint is raised to `BACKSTOP_PAGES` (so the log stays
bounded should this thread fall behind), then restored. Small writes keep
SQLite's own checkpoints, as before.

    >>> import sqlite3, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "db.sqlite"
    >>> conn = sqlite3.connect(path, isolation_level=None)
    >>> conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    'wal'
    >>> checkpoints = WalCheckpoints(path)
    >>> _ = conn.execute("BEGIN")
    >>> _ = conn.execute("CREATE TABLE t(x)")
    >>> with checkpoints.deferred(conn):
    ...     _ = conn.execute("COMMIT")
    >>> checkpoints.close()
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator

__all__ = ["BACKSTOP_PAGES", "WalCheckpoints"]

logger = logging.getLogger(__name__)

#: The writer's ``wal_autocheckpoint`` during a deferred commit: the log's bound should the thread fall behind.
BACKSTOP_PAGES = 16_384


class WalCheckpoints:
    """Checkpoints ``path``'s WAL from a daemon thread whenever `request()` is called (rate-limited).

    Args:
        path: the SQLite file (in WAL mode, opened by its writer already).
        interval: the least time between two checkpoints, in seconds.
    """

    def __init__(self, path: str | os.PathLike[str], *, interval: float = 0.5, idle: float = 10.0) -> None:
        self.path = str(path)
        self.interval = interval
        # The thread and its connection end after this long without a request (an unclosed owner leaks neither).
        self.idle = idle
        self._cv = threading.Condition()
        self._wanted = False
        self._stopped = False
        self._resting = False  # between two checkpoints: requests need not wake the thread
        self._thread: threading.Thread | None = None
        #: Checkpoints run so far (for tests and diagnostics).
        self.runs = 0

    def request(self) -> None:
        """Checkpoint soon (after a commit); returns at once."""
        with self._cv:
            if self._stopped:
                return
            self._wanted = True
            if self._thread is None or not self._thread.is_alive():  # not started, idle, or a fork's copy
                thread = threading.Thread(target=self._loop, name="lgm-wal-checkpoint", daemon=True)
                try:
                    thread.start()
                except RuntimeError:  # no thread to be had: the writer's backstop checkpoints instead
                    logger.debug("could not start the WAL checkpoint thread of %s", self.path, exc_info=True)
                    return
                self._thread = thread
            if not self._resting:  # a resting thread finds the request when its rest ends (see IndexCatchUp)
                self._cv.notify_all()

    @contextlib.contextmanager
    def deferred(self, conn: sqlite3.Connection) -> Iterator[None]:
        """Commit inside this block: the checkpoint SQLite would run in it is left to the thread."""
        pages = int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
        conn.execute(f"PRAGMA wal_autocheckpoint = {max(pages, BACKSTOP_PAGES)}")
        try:
            yield
        finally:
            conn.execute(f"PRAGMA wal_autocheckpoint = {pages}")
        self.request()

    def close(self, timeout: float | None = 30.0) -> None:
        """End the thread (a checkpoint under way finishes first); later requests are ignored."""
        with self._cv:
            self._stopped = True
            self._cv.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _loop(self) -> None:
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:  # the writer's own autocheckpoint (BACKSTOP_PAGES) still bounds the log
            logger.debug("could not open %s for WAL checkpoints", self.path, exc_info=True)
            return
        try:
            while True:
                with self._cv:
                    self._cv.wait_for(lambda: self._wanted or self._stopped, self.idle)
                    if self._stopped or not self._wanted:
                        self._thread = None  # the next request starts another
                        return
                    self._wanted = False
                started = time.monotonic()
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    self.runs += 1
                except sqlite3.Error:  # e.g. another connection checkpointing: the next request tries again
                    logger.debug("WAL checkpoint of %s failed", self.path, exc_info=True)
                with self._cv:
                    self._resting = True
                    self._cv.wait_for(lambda: self._stopped, self.interval - (time.monotonic() - started))
                    self._resting = False
        finally:
            conn.close()
