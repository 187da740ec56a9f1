"""Was the Chroma folder left whole? Sessions, seals, and the fingerprint of the files.

Opening a damaged Chroma folder can kill the process (SIGSEGV in the first
``count()`` of a garbled HNSW segment, measured here), so a store must know,
before it lets Chroma touch the folder, whether the folder is as the last
user left it. Every process that opens a data directory holds a shared
``flock`` on ``<chroma>/lgm-sessions`` for as long as it has it open:

* The first process to open (it can take the lock exclusively) compares the
  folder's `fingerprint()` (name, size and mtime of every file) with the
  *seal* the catalog holds. Equal: the folder is exactly as a clean close left
  it. Different or missing: a process died while the folder was open, or
  something changed the files since, and the store probes the folder in a
  subprocess before opening it (`langgraph_memory.store._probe`). Then
  it removes the seal: from now on a crash leaves none.
* The last process to close (it can take the lock exclusively again) writes
  a new seal once Chroma holds everything the catalog does.

The kernel releases the ``flock`` of a killed process, so a crash never
blocks the next open, and leaves no seal behind.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from langgraph_memory.errors import LockTimeoutError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no probe protection
    fcntl = None  # type: ignore[assignment]

__all__ = ["SessionLock", "fingerprint"]

_SESSIONS_FILE = "lgm-sessions"


def fingerprint(folder: Path) -> str:
    """A digest of every file's relative name, size and modification time under ``folder``."""
    h = hashlib.sha256()
    if not folder.is_dir():
        return "missing"
    entries: list[tuple[str, int, int]] = []
    for root, _dirs, files in os.walk(folder):
        for name in files:
            full = os.path.join(root, name)
            try:
                st = os.stat(full)
            except OSError:
                continue
            entries.append((os.path.relpath(full, folder), st.st_size, st.st_mtime_ns))
    for rel, size, mtime in sorted(entries):
        h.update(f"{rel}\0{size}\0{mtime}\n".encode())
    return h.hexdigest()


class SessionLock:
    """This process's shared hold on a Chroma folder; tells the first opener and the last closer.

    Examples:
        >>> import tempfile, pathlib
        >>> lock = SessionLock(pathlib.Path(tempfile.mkdtemp()))
        >>> lock.enter()          # nobody else has the folder open
        True
        >>> lock.leave()          # and nobody else has it open now
        True
    """

    def __init__(self, root: Path) -> None:
        self.path = root / _SESSIONS_FILE
        self._fd: int | None = None

    def enter(self) -> bool:
        """Take the shared hold; return whether no other session had the folder open."""
        if fcntl is None:  # pragma: no cover
            return False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(str(self.path), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            first = True
        except BlockingIOError:
            first = False
        return first

    def share(self, timeout: float) -> None:
        """Turn the hold into a shared one, waiting up to ``timeout`` s for a first opener's check.

        Raises:
            LockTimeoutError: another process kept checking or rebuilding the index for longer.
        """
        if fcntl is None or self._fd is None:  # pragma: no cover
            return
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(self._fd)
                    self._fd = None
                    raise LockTimeoutError(
                        f"another process kept checking or rebuilding the Chroma index in {self.path.parent} for "
                        f"more than {timeout:g} s; wait for it to finish (a rebuild logs its progress) and retry"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    def leave(self) -> bool:
        """Release the hold; return whether this was the last session (the caller may seal first)."""
        if fcntl is None or self._fd is None:  # pragma: no cover
            return False
        fd, self._fd = self._fd, None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                return False
        finally:
            os.close(fd)

    def try_last(self) -> bool:
        """Upgrade to an exclusive hold if no other session is open (the caller then seals and leaves)."""
        if fcntl is None or self._fd is None:  # pragma: no cover
            return False
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    @property
    def held(self) -> bool:
        return self._fd is not None
