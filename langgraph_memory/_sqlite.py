"""Opening the data directory's SQLite files so several processes can start at once.

Every side file of a data directory (the embedding cache, the access table,
lineage, the archive manifest) is SQLite in WAL mode, opened by every process
that uses the directory. Switching a file to WAL needs an exclusive lock, and
SQLite answers ``database is locked`` at once, without calling its busy
handler, when two processes try it together on a new file (measured here: 4
processes opening a new file together failed 5-9% of the time). :func:`connect`
retries that switch until ``timeout``; :func:`retry_locked` does the same for
any statement.
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal, TypeVar

from langgraph_memory.errors import LockTimeoutError

__all__ = ["connect", "is_lock_error", "retry_locked"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_LOCKED_MARKERS = ("database is locked", "database table is locked", "database is busy")


def is_lock_error(exc: sqlite3.OperationalError) -> bool:
    """Whether ``exc`` means another connection holds a lock (worth waiting for)."""
    text = str(exc).lower()
    return any(marker in text for marker in _LOCKED_MARKERS)


def retry_locked(
    fn: Callable[[], T],
    *,
    timeout: float,
    what: str,
    advice: str = "Find the process holding a long transaction, or raise the timeout.",
) -> T:
    """Run ``fn``, retrying while SQLite says the file is locked, for up to ``timeout`` seconds.

    Past the timeout a :class:`~langgraph_memory.errors.LockTimeoutError`
    names ``what`` and ends with ``advice``; any other error goes through unchanged.

    Example:
        >>> import sqlite3
        >>> conn = sqlite3.connect(":memory:")
        >>> retry_locked(lambda: conn.execute("SELECT 1").fetchone()[0], timeout=1, what="select")
        1
    """
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not is_lock_error(exc):
                raise
            if time.monotonic() >= deadline:
                raise LockTimeoutError(
                    f"could not {what}: the file stayed locked by another process for more than "
                    f"{timeout:g} s. {advice}"
                ) from exc
            logger.debug("could not %s yet (%s); retrying in %.3f s", what, exc, delay)
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.1)


def connect(
    path: str | os.PathLike[str],
    *,
    timeout: float = 30.0,
    synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
) -> sqlite3.Connection:
    """An autocommit connection to ``path`` in WAL mode, usable from any thread.

    Creates the file's folder when missing. Waits up to ``timeout`` seconds
    for other processes, both in SQLite's busy handler and while switching
    the file to WAL.

    Example:
        >>> import tempfile, pathlib
        >>> conn = connect(pathlib.Path(tempfile.mkdtemp()) / "side.sqlite")
        >>> conn.execute("PRAGMA journal_mode").fetchone()[0]
        'wal'
    """
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=timeout, check_same_thread=False, isolation_level=None)
    try:
        retry_locked(
            lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone(),
            timeout=timeout,
            what=f"switch {path} to WAL",
        )
        conn.execute(f"PRAGMA synchronous={synchronous}")
    except BaseException:
        conn.close()
        raise
    return conn
