"""SIGKILL a real archive run in a subprocess; the next run leaves every item live or archived, once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from langgraph_memory.archive import Archiver
from langgraph_memory.store import ChromaStore
from tests.helpers.archive_data import all_uids, make_lessons

HELPER = Path(__file__).parent / "helpers" / "archive_kill.py"
N = 2000


def _forget_chroma_clients() -> None:
    # The child process writes the folder; drop this process's cached Chroma system
    # so the next store reads what is on disk.
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()


@pytest.mark.slow
@pytest.mark.parametrize("step", ["write_chunk:4", "after_write", "after_verify", "during_delete"])
def test_sigkill_mid_run_then_next_run_settles(data_dir, fake_embeddings, tmp_path, step):
    store = ChromaStore(data_dir=data_dir, index={"dims": 16, "embed": fake_embeddings})
    original = {it.uid for it in make_lessons(store, fake_embeddings, N)}
    store.close()
    _forget_chroma_clients()

    marker = tmp_path / "marker"
    proc = subprocess.Popen([sys.executable, str(HELPER), str(data_dir), str(marker), step], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists() and marker.read_text() == step.split(":")[0], "child never reached the step"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    store = ChromaStore(data_dir=data_dir, index={"dims": 16, "embed": fake_embeddings})
    archiver = Archiver(store)
    try:
        live_before = store.items.count("lessons")
        if step == "during_delete":
            assert 0 < live_before < N
        report = archiver.run()
        assert report.ok
        live, archived = all_uids(store, archiver, "lessons")
        assert len(archived) == len(set(archived)) and len(live) == len(set(live))
        assert not set(live) & set(archived)
        assert len(live) + len(archived) == N and set(live) | set(archived) == original
        assert live == []  # every item was stale, so all are archived, exactly once
        assert archiver.verify() and all(p is None for p in archiver.verify().values())
    finally:
        archiver.close()
        store.close()
