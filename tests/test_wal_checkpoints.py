"""WAL checkpoints run beside the catalog's writes, not inside their commits (`_infra.wal_checkpoints`)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from langgraph_memory._infra.wal_checkpoints import BACKSTOP_PAGES, WalCheckpoints
from langgraph_memory.catalog import Catalog

pytestmark = pytest.mark.sqlite_only("a SQLite catalog file opened by its path: the same in both passes")


def _wait(predicate, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _copied(path: Path) -> int:
    """Bytes of the database file: pages a checkpoint copied there from the WAL (a commit alone adds none)."""
    return path.stat().st_size


def test_a_large_commit_leaves_its_checkpoint_to_the_thread(tmp_path: Path) -> None:
    cat = Catalog(tmp_path / "catalog.sqlite")
    try:
        assert cat._checkpoints is not None
        runs = cat._checkpoints.runs
        cat._checkpoints.interval = 60.0  # one run per test: the one after the large commit below
        with cat.write() as conn:  # some 2,500 pages: past SQLite's default autocheckpoint of 1,000
            conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", [(f"k{i}", "x" * 4000) for i in range(2500)])
        assert _wait(lambda: cat._checkpoints is not None and cat._checkpoints.runs > runs)
        with cat.read() as conn:  # the commit's own setting is back (small writes checkpoint as SQLite does)
            assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
            assert conn.execute("SELECT count(*) FROM meta WHERE key LIKE 'k%'").fetchone()[0] == 2500
    finally:
        cat.close()
    assert not any(t.name == "lgm-wal-checkpoint" and t.is_alive() for t in threading.enumerate())


def test_a_deferred_commit_leaves_the_copy_into_the_file_to_the_thread(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("CREATE TABLE t(x)")
    checkpoints = WalCheckpoints(path, interval=60.0)
    checkpoints._stopped = True  # requests ignored: what the commit leaves stays in the log
    try:
        writer.execute("BEGIN")
        writer.executemany("INSERT INTO t VALUES (?)", [("y" * 3000,) for _ in range(1500)])
        with checkpoints.deferred(writer):
            assert writer.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == BACKSTOP_PAGES
            writer.execute("COMMIT")
        assert writer.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        assert _copied(path) < 1_000_000  # the 4.5 MB committed are in the log only
    finally:
        checkpoints.close()
        writer.close()


def test_the_thread_checkpoints_on_request_and_ends_when_idle(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE t(x)")
    checkpoints = WalCheckpoints(path, interval=0.0, idle=0.2)
    try:
        writer.executemany("INSERT INTO t VALUES (?)", [("y" * 2000,) for _ in range(1000)])
        assert _copied(path) < 1_000_000
        checkpoints.request()
        assert _wait(lambda: checkpoints.runs == 1 and checkpoints._thread is None)
        assert _copied(path) > 1_000_000
        writer.execute("INSERT INTO t VALUES ('z')")
        checkpoints.request()  # a request after the idle end starts the thread again
        assert _wait(lambda: checkpoints.runs == 2)
    finally:
        checkpoints.close()
        writer.close()
