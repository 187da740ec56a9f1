"""Several processes on one checkpoint file: crashes and concurrent writers."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from langgraph_memory.checkpoint import SqliteCheckpointer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.sqlite_only("SqliteCheckpointer on a file of its own: no catalog involved, the same in both passes"),
]

_REPO = Path(__file__).resolve().parents[1]
_WORKER = Path(__file__).resolve().parent / "_checkpoint_helpers" / "worker.py"


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen(
        [sys.executable, str(_WORKER), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _checkpoint_count(db: Path, thread_id: str) -> int:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    except sqlite3.OperationalError:
        return 0
    try:
        return conn.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", (thread_id,)).fetchone()[0]
    except sqlite3.OperationalError:  # schema not created yet
        return 0
    finally:
        conn.close()


@pytest.mark.parametrize("mode", ["count", "acount"], ids=["invoke", "ainvoke"])
def test_sigkill_mid_run_leaves_last_checkpoint_resumable(tmp_path: Path, mode: str) -> None:
    """Killed mid-run, every acknowledged checkpoint survives: sync, and async (committed in a thread)."""
    sys.path.insert(0, str(_WORKER.parent))
    from worker import count_graph  # type: ignore[import-not-found]

    db = tmp_path / "crash.sqlite"
    target = 40
    proc = _spawn(mode, str(db), "run", str(target), "0.02")
    try:
        deadline = time.monotonic() + 60
        while _checkpoint_count(db, "run") < 10:
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "worker made no progress"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()

    with SqliteCheckpointer(db) as saver:
        graph = count_graph(saver, target, 0.0)
        config = {"configurable": {"thread_id": "run"}, "recursion_limit": 10_000}
        state = graph.get_state(config)
        reached = state.values["count"]
        assert 0 < reached < target, "killed in the middle of the run"
        assert state.values["trail"] == list(range(1, reached + 1))
        assert state.next == ("inc",)
        # Every committed checkpoint reads back whole, in order.
        history = list(graph.get_state_history(config))
        counts = [h.values.get("count") for h in history if h.values]
        assert counts == sorted(counts, reverse=True)
        assert counts[0] == reached

        final = graph.invoke(None, config)
    assert final["count"] == target
    assert final["trail"] == list(range(1, target + 1))


def test_two_processes_write_different_threads_at_once(tmp_path: Path) -> None:
    db = tmp_path / "shared.sqlite"
    go = tmp_path / "go"
    SqliteCheckpointer(db).close()  # create the schema before the race
    invokes = 40
    procs = [_spawn("chat", str(db), prefix, str(invokes), str(go)) for prefix in ("p0", "p1")]
    deadline = time.monotonic() + 60
    while not all(Path(f"{go}.ready-{prefix}").exists() for prefix in ("p0", "p1")):
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        assert time.monotonic() < deadline, "writers did not start"
        time.sleep(0.01)
    go.touch()  # both have the file open: release them together
    results = [p.communicate(timeout=120) for p in procs]
    for proc, (_out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert "locked" not in err.lower()

    with SqliteCheckpointer(db) as saver:
        threads = {info.thread_id: info for info in saver.list_threads()}
        assert set(threads) == {f"p{p}-{t}" for p in range(2) for t in range(4)}
        for info in threads.values():
            # 10 invokes per thread, 4 checkpoints per invoke (input + 3 steps).
            assert info.checkpoints == 10 * 4
            latest = saver.get_tuple({"configurable": {"thread_id": info.thread_id}})
            assert latest is not None
            assert latest.checkpoint["channel_values"]["turns"] == 10
            assert len(latest.checkpoint["channel_values"]["messages"]) == 10 * 3
