"""Opening the data directory's SQLite files so several processes can start at once.

Every side file of a data directory (the embedding cache, the access table,
lineage, the archive manifest) is SQLite in WAL mode, opened by every process
that uses the directory. Switching a file to WAL needs an exclusive lock, and
SQLite answers ``database is locked`` at once, without calling its busy
handler, when two processes try it together on a new file (measured here: 4
processes opening a new file together failed 5-9% of the time). `connect()`
retries that switch until ``timeout``; `retry_locked()` does the same for
any statement.
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, TypeVar

from langgraph_memory.errors import (
    CorruptFileError,
    DiskFullError,
    LangGraphMemoryError,
    LockTimeoutError,
    ReadOnlyError,
    StorageError,
)

__all__ = ["connect", "is_lock_error", "retry_locked", "translate", "guarded"]

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

    Past the timeout a [`LockTimeoutError`][langgraph_memory.errors.LockTimeoutError]
    names ``what`` and ends with ``advice``; any other error goes through unchanged.

    Examples:
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
                    f"could not {what}: the file stayed locked by another process for more than {timeout:g} s. {advice}"
                ) from exc
            logger.debug("could not %s yet (%s); retrying in %.3f s", what, exc, delay)
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.1)


def connect(
    path: str | os.PathLike[str],
    *,
    timeout: float = 30.0,
    synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
    page_size: int | None = None,
) -> sqlite3.Connection:
    """An autocommit connection to ``path`` in WAL mode, usable from any thread.

    Creates the file's folder when missing. Waits up to ``timeout`` seconds
    for other processes, both in SQLite's busy handler and while switching
    the file to WAL. ``page_size`` applies to a new file only (an existing one keeps its pages).

    Examples:
        >>> import tempfile, pathlib
        >>> conn = connect(pathlib.Path(tempfile.mkdtemp()) / "side.sqlite")
        >>> conn.execute("PRAGMA journal_mode").fetchone()[0]
        'wal'
    """
    with guarded(path, "open"):
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise translate(exc, path, "create the folder of") from exc
        conn = sqlite3.connect(str(path), timeout=timeout, check_same_thread=False, isolation_level=None)
        try:
            if page_size is not None:
                conn.execute(f"PRAGMA page_size={int(page_size)}")
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


# SQLite's primary result codes (the low byte of an extended code).
_CORRUPT = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
_FULL = {sqlite3.SQLITE_FULL}
_READONLY = {sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_AUTH}
_IOERR = {sqlite3.SQLITE_IOERR}
# errno values that mean "no room": the disk is full, or a quota or file size limit was hit.
_NO_ROOM_ERRNO = {28, 27, 122}  # ENOSPC, EFBIG, EDQUOT
_NO_PERMISSION_ERRNO = {1, 13, 30}  # EPERM, EACCES, EROFS


def translate(exc: BaseException, path: str | os.PathLike[str], what: str = "use") -> LangGraphMemoryError:
    """The typed error for an exception raised while using the file ``path``.

    SQLite's and the operating system's codes for a full disk, a read-only
    file and a damaged file become [`DiskFullError`][langgraph_memory.errors.DiskFullError],
    [`ReadOnlyError`][langgraph_memory.errors.ReadOnlyError] and
    [`CorruptFileError`][langgraph_memory.errors.CorruptFileError], each naming the file
    and what to do. A lock that outlasted the timeout is already typed and is
    returned as it is; anything else becomes a plain
    [`StorageError`][langgraph_memory.errors.StorageError].

    Examples:
        >>> import sqlite3
        >>> err = sqlite3.DatabaseError("file is not a database")
        >>> err.sqlite_errorcode = sqlite3.SQLITE_NOTADB
        >>> type(translate(err, "/tmp/x.sqlite")).__name__
        'CorruptFileError'
    """
    if isinstance(exc, LangGraphMemoryError):
        return exc
    where = str(path)
    if isinstance(exc, sqlite3.Error):
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        text = str(exc)
        low = text.lower()
        if code in _CORRUPT or "malformed" in low or "not a database" in low:
            return CorruptFileError(
                f"{where} is damaged ({text}); could not {what} it. Restore it from a backup, or move it "
                "aside to start afresh (see the README, 'Damaged files, full disks').",
                path,
            )
        if code in _FULL or "disk is full" in low:
            return DiskFullError(
                f"the disk holding {where} is full; could not {what} it and nothing of this call was "
                "stored. Free some space and retry.",
                path,
            )
        if code in _READONLY or "readonly" in low or "unable to open" in low:
            return ReadOnlyError(
                f"{where} cannot be written ({text}); could not {what} it. Check the permissions of the "
                "data directory, or give the store a writable data_dir (or open it read-only: read_only=True, "
                "--read-only).",
                path,
            )
        if code in _IOERR or "disk i/o error" in low:
            return StorageError(
                f"I/O error on {where} ({text}); could not {what} it and nothing of this call was stored. "
                "The disk may be full (or a file size limit reached) or failing: free space, check the disk, "
                "and retry.",
                path,
            )
        return StorageError(f"could not {what} {where}: {text}", path)
    if isinstance(exc, OSError):
        if exc.errno in _NO_ROOM_ERRNO:
            return DiskFullError(
                f"no room to write {where} ({exc.strerror or exc}); nothing of this call was stored. "
                "Free some space (or raise the file size limit) and retry.",
                path,
            )
        if exc.errno in _NO_PERMISSION_ERRNO:
            return ReadOnlyError(
                f"{where} cannot be written ({exc.strerror or exc}); check the permissions of the data "
                "directory, or choose a writable one.",
                path,
            )
        return StorageError(f"could not {what} {where}: {exc}", path)
    return StorageError(f"could not {what} {where}: {exc}", path)


@contextmanager
def guarded(path: str | os.PathLike[str], what: str = "use") -> Iterator[None]:
    """Raise SQLite and OS errors met inside the block as typed errors naming ``path``.

    Errors the package already typed (a lock timeout, a validation error)
    pass through unchanged.

    Examples:
        >>> import sqlite3, tempfile, pathlib
        >>> bad = pathlib.Path(tempfile.mkdtemp()) / "bad.sqlite"
        >>> _ = bad.write_bytes(b"not a database, just text" * 100)
        >>> try:
        ...     with guarded(bad, "read"):
        ...         sqlite3.connect(bad).execute("SELECT 1 FROM sqlite_master").fetchall()
        ... except CorruptFileError as exc:
        ...     print(type(exc).__name__)
        CorruptFileError
    """
    try:
        yield
    except LangGraphMemoryError:
        raise
    except (sqlite3.Error, OSError) as exc:
        raise translate(exc, path, what) from exc
