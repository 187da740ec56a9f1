"""The data directory's write lock: one writer at a time, across threads and processes.

Two processes writing one embedded Chroma folder corrupt its vector index
(see PITFALLS), so every write to an embedded data directory goes through
:class:`WriteLock`. Waiting is bounded: past the timeout the caller gets a
:class:`~langgraph_memory.errors.LockTimeoutError`, never a hang or a raw
locking error.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import filelock

from langgraph_memory.errors import LockTimeoutError

__all__ = ["WriteLock"]


class WriteLock:
    """A re-entrant lock that is also a file lock when ``path`` is given."""

    def __init__(self, path: str | os.PathLike[str] | None, timeout: float) -> None:
        self.path = Path(path) if path is not None else None
        self.timeout = timeout
        self._thread_lock = threading.RLock()
        self._file_lock = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # thread_local=False: the RLock above already serialises threads.
            self._file_lock = filelock.FileLock(str(self.path), timeout=timeout, thread_local=False)

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the lock for the duration of the ``with`` block."""
        if not self._thread_lock.acquire(timeout=self.timeout):
            raise LockTimeoutError(
                f"another thread held the memory write lock for more than {self.timeout:.0f}s; "
                "retry, or raise lock_timeout"
            )
        try:
            if self._file_lock is not None:
                try:
                    self._file_lock.acquire(timeout=self.timeout)
                except filelock.Timeout:
                    raise LockTimeoutError(
                        f"another process held the write lock {self.path} for more than {self.timeout:.0f}s. "
                        "Another program is writing to this data directory; retry later, raise lock_timeout, "
                        "or run a Chroma server (`chroma run`) for many concurrent writers."
                    ) from None
                try:
                    yield
                finally:
                    self._file_lock.release()
            else:
                yield
        finally:
            self._thread_lock.release()
