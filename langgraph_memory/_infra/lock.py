"""The data directory's lock: one Chroma user at a time, across threads and processes.

Two processes writing one embedded Chroma folder corrupt its vector index
(both exit cleanly, yet up to 18% of items no longer find themselves; measured
with Chroma 1.5.9), so every Chroma call on an embedded data directory goes
through `WriteLock`. Waiting is bounded: past the timeout the caller
gets a [`LockTimeoutError`][langgraph_memory.errors.LockTimeoutError], never a hang or a
raw locking error.

Every search takes this lock, so it is built for speed: the lock file stays
open, the file lock is taken with one ``flock`` call when it is free, and a
thread that already holds the lock re-enters without touching the file.
(``filelock`` reopens the file on every acquire; it is the fallback where
``fcntl`` does not exist.)
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from langgraph_memory.errors import LockTimeoutError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["WriteLock"]


class WriteLock:
    """A re-entrant lock that is also a file lock when ``path`` is given.

    Examples:
        >>> import tempfile, pathlib
        >>> lock = WriteLock(pathlib.Path(tempfile.mkdtemp()) / "LOCK", timeout=5)
        >>> with lock.hold():
        ...     with lock.hold():      # re-entrant in the holding thread
        ...         pass
    """

    def __init__(self, path: str | os.PathLike[str] | None, timeout: float) -> None:
        self.path = Path(path) if path is not None else None
        self.timeout = timeout
        self._thread_lock = threading.RLock()
        self._depth = 0  # only the thread holding _thread_lock touches it
        self._fd: int | None = None
        self._fd_pid = 0
        self._fallback = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if fcntl is None:  # pragma: no cover - Windows
                import filelock

                self._fallback = filelock.FileLock(str(self.path), timeout=timeout, thread_local=False)

    @contextmanager
    def hold(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the lock for the duration of the ``with`` block (waiting ``timeout`` s, default ``self.timeout``)."""
        wait = self.timeout if timeout is None else timeout
        if not self._thread_lock.acquire(timeout=wait):
            raise LockTimeoutError(
                f"another thread held the memory lock for more than {wait:.0f}s; retry, or raise lock_timeout"
            )
        try:
            if self._depth == 0 and self.path is not None:
                self._acquire_file(wait)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self.path is not None:
                    self._release_file()
        finally:
            self._thread_lock.release()

    def _timeout_error(self, wait: float) -> LockTimeoutError:
        return LockTimeoutError(
            f"another process held the lock {self.path} for more than {wait:.0f}s. "
            "Another program is using this data directory; retry later, raise lock_timeout, "
            "or run a Chroma server (`chroma run`) for many concurrent writers."
        )

    def _acquire_file(self, wait: float) -> None:
        if self._fallback is not None:  # pragma: no cover - Windows
            import filelock

            try:
                self._fallback.acquire(timeout=wait)
            except filelock.Timeout:
                raise self._timeout_error(wait) from None
            return
        if self._fd is None or self._fd_pid != os.getpid():
            # A forked child must not share the parent's open file description
            # (flock locks belong to it): open the lock file anew.
            self._fd = os.open(str(self.path), os.O_RDWR | os.O_CREAT, 0o644)
            self._fd_pid = os.getpid()
        deadline = time.monotonic() + wait
        delay = 0.0005
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise self._timeout_error(wait) from None
                time.sleep(delay)
                # Short polls: an index catching up frees the lock for a few ms between chunks
                # (`_HANDOVER` in langgraph_memory.index._core); a waiter polling every 50 ms missed those
                # windows, and with four writer processes one gave up after 30 s.
                delay = min(delay * 2, 0.002)

    def _release_file(self) -> None:
        if self._fallback is not None:  # pragma: no cover - Windows
            self._fallback.release()
            return
        assert self._fd is not None
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def fileno(self) -> int | None:
        """The open lock file's descriptor (None without ``fcntl``), for a child process to keep open.

        ``flock`` locks belong to the open file description: a child holding
        the descriptor keeps the lock held, if it is, after this process dies.
        """
        if self.path is None or fcntl is None:
            return None
        if self._fd is None or self._fd_pid != os.getpid():
            self._fd = os.open(str(self.path), os.O_RDWR | os.O_CREAT, 0o644)
            self._fd_pid = os.getpid()
        return self._fd

    @property
    def depth(self) -> int:
        """How many times the calling thread holds the lock (call only while holding it)."""
        return self._depth
