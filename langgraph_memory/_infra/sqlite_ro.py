"""Opening a WAL-mode SQLite file for reading without writing anything beside it.

A read-only memory (``Memory.open(path, read_only=True)``) must read a folder
it cannot write (permissions, a read-only mount) and a snapshot copied from a
live folder, and must leave both exactly as they were. SQLite's usual
read-only open (``mode=ro``) still writes: it rebuilds the ``-shm`` index of
the write-ahead log, and creates ``-wal`` and ``-shm`` files when missing.
``immutable=1`` writes nothing but ignores the ``-wal`` file, so it would miss
every commit not yet checkpointed into the main file (measured here: a table
created in the WAL was "no such table"). So `connect_read_only()` picks, by
what lies beside the file:

* no ``-wal`` file, or an empty one: every commit is in the main file, and
  ``immutable=1`` reads it with no lock and no side file;
* a ``-wal`` and a ``-shm`` file: ``mode=ro&readonly_shm=1``, which reads the
  WAL and opens the ``-shm`` read-only (SQLite falls back to a private copy
  of the index when the file's is stale, as in a copy taken mid-write);
* a ``-wal`` without its ``-shm``: SQLite cannot read such a WAL without
  creating the ``-shm``, so the file and its WAL are copied into a private
  temporary folder and read there (the WAL is recovered in the copy).
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import tempfile
import urllib.parse
from pathlib import Path

from langgraph_memory._infra.sqlite import guarded
from langgraph_memory.errors import NotFoundError

__all__ = ["ReadOnlyConnection", "connect_read_only"]

logger = logging.getLogger(__name__)


class ReadOnlyConnection:
    """A connection opened by `connect_read_only()`, and the private copy to remove once it is closed."""

    def __init__(self, conn: sqlite3.Connection, how: str, tempdir: Path | None = None) -> None:
        self.conn = conn
        #: ``"immutable"``, ``"readonly-shm"`` or ``"private-copy"``: how the file was opened.
        self.how = how
        self._tempdir = tempdir

    def close(self) -> None:
        try:
            self.conn.close()
        finally:
            if self._tempdir is not None:
                shutil.rmtree(self._tempdir, ignore_errors=True)
                self._tempdir = None


def _uri(path: Path, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"file:{urllib.parse.quote(str(path))}?{query}"


def connect_read_only(path: str | os.PathLike[str], *, timeout: float = 30.0) -> ReadOnlyConnection:
    """Open ``path`` for reading only, writing nothing in its folder (see the module docstring).

    Raises:
        NotFoundError: ``path`` does not exist.
        StorageError: it cannot be read (``CorruptFileError`` when damaged).

    Examples:
        >>> import sqlite3, tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "db.sqlite"
        >>> w = sqlite3.connect(p); _ = w.execute("CREATE TABLE t(x)"); w.commit(); w.close()
        >>> ro = connect_read_only(p)
        >>> ro.how, ro.conn.execute("SELECT count(*) FROM t").fetchone()[0]
        ('immutable', 0)
        >>> ro.close()
    """
    path = Path(path)
    if not path.is_file():
        raise NotFoundError(f"{path} does not exist; nothing to open read-only")
    wal = Path(f"{path}-wal")
    shm = Path(f"{path}-shm")
    with guarded(path, "open read-only"):
        has_wal = wal.exists() and wal.stat().st_size > 0
        tempdir: Path | None = None
        if not has_wal:
            how, uri = "immutable", _uri(path, immutable="1")
        elif shm.exists():
            how, uri = "readonly-shm", _uri(path, mode="ro", readonly_shm="1")
        else:
            tempdir = Path(tempfile.mkdtemp(prefix="lgm-readonly-"))
            copy = tempdir / path.name
            shutil.copyfile(path, copy)
            shutil.copyfile(wal, Path(f"{copy}-wal"))
            how, uri = "private-copy", _uri(copy, mode="rwc")
            logger.info("%s has a write-ahead log without its -shm file: reading a private copy in %s", path, tempdir)
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=timeout, check_same_thread=False, isolation_level=None)
            try:
                conn.execute("PRAGMA query_only = ON")
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except BaseException:
                conn.close()
                raise
        except BaseException:
            if tempdir is not None:
                shutil.rmtree(tempdir, ignore_errors=True)
            raise
    logger.debug("opened %s read-only (%s)", path, how)
    return ReadOnlyConnection(conn, how, tempdir)
