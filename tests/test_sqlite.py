"""The data directory's SQLite side files open cleanly when several processes start at once."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from langgraph_memory._infra import sqlite as _sqlite
from langgraph_memory.errors import LockTimeoutError

HELPER = Path(__file__).parent / "helpers" / "sqlite_open_race.py"

# SQLite files opened on paths of their own (the catalog's SQLite class too): the same in both passes.
pytestmark = pytest.mark.sqlite_only("SQLite files opened on their own paths: no data directory's catalog")


@pytest.mark.parametrize("kind", ["embedding-cache", "catalog", "manifest"])
def test_processes_opening_a_new_side_file_together_all_succeed_and_leave_it_in_wal(kind: str, tmp_path: Path) -> None:
    # Before connect() retried the switch to WAL, 4 processes opening one new
    # file failed about 5 times in 80 opens (the CI failure of test_store_processes).
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, str(HELPER), kind, str(tmp_path), "20", "4"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert out.stdout.strip() == ""
    assert len(list(tmp_path.glob(f"{kind}-*.sqlite"))) == 20


def test_connect_waits_for_a_writer_and_then_times_out_with_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "side.sqlite"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")  # a rollback-journal file held exclusively: no one may switch it
    with pytest.raises(LockTimeoutError, match="switch .* to WAL"):
        _sqlite.connect(path, timeout=0.3)

    released = threading.Timer(0.2, lambda: holder.execute("ROLLBACK"))
    released.start()
    conn = _sqlite.connect(path, timeout=10)  # waits out the holder, then switches
    released.join()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    holder.close()


def test_retry_locked_passes_other_errors_through_at_once(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "x.sqlite")
    calls = []

    def bad() -> None:
        calls.append(1)
        conn.execute("SELECT * FROM no_such_table")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        _sqlite.retry_locked(bad, timeout=5, what="read")
    assert calls == [1]
