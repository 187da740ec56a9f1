"""An archive run that finds no room to write: a typed DiskFullError, nothing lost, the next run finishes.

Real files and real limits, no mocks: a child process with ``RLIMIT_FSIZE``
(writes past the limit fail with ``EFBIG``, as on a full disk), and a small
tmpfs that really fills up (when this process may mount one; else skipped).
Only the public Archiver API and the BaseStore API are used, so the tests do
not depend on how the store keeps its items.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.archive import Archiver
from langgraph_memory.errors import DiskFullError
from langgraph_memory.store import ChromaStore
from tests.helpers.tmpfs import fill, tmpfs

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
HELPER = Path(__file__).parent / "helpers" / "archive_fsize.py"
NS = ("lessons", "desk")
N = 200
DIMS = 512  # ~2.2 KB per archived line: the archive file is ~440 KB
FUTURE = time.time() + 400 * 86400.0  # every item is stale, measured from here


def _open_store(data_dir: Path) -> ChromaStore:
    return ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)})


def _fill(data_dir: Path) -> list[str]:
    keys = [f"l{i}" for i in range(N)]
    store = _open_store(data_dir)
    for i, key in enumerate(keys):
        store.put(NS, key, {"lesson": f"lesson {i}: size positions by volatility, not by conviction"})
    store.close()
    return keys


def _run_child(data_dir: Path, *, limit: int, when: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, str(HELPER), str(data_dir), str(DIMS), str(limit), when, repr(FUTURE)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _states(archiver: Archiver) -> Counter[str]:
    return Counter(f.state for f in archiver.list_archives(all_states=True))


def _next_run_archives_everything(data_dir: Path, keys: list[str]) -> list[str]:
    """In a normal process: every item is still live, then one run archives them all; return what it recovered."""
    store = _open_store(data_dir)
    archiver = Archiver(store)
    try:
        assert all(store.get(NS, k) is not None for k in keys), "an item left the live store"
        report = archiver.run(now=FUTURE)
        assert report.ok, report.errors
        assert report.total_archived == len(keys)
        assert all(store.get(NS, k) is None for k in keys)
        assert sorted(a.key for a in archiver.iter_archived("lessons")) == sorted(keys)
        assert set(archiver.verify().values()) == {None}
        states = _states(archiver)
        assert states["writing"] == 0 and states["verified"] == 0 and states["complete"] == 1
        listed = {f.name for f in archiver.list_archives(all_states=True) if f.state == "complete"}
        assert {p.name for p in archiver.archive_dir.glob("*.jsonl.gz")} == listed  # no partial file left
        assert archiver.run(now=FUTURE).total_archived == 0
        return report.recovered
    finally:
        archiver.close()
        store.close()


def test_file_size_limit_raises_disk_full_and_cleans_up(data_dir: Path) -> None:
    keys = _fill(data_dir)
    out = _run_child(data_dir, limit=256 * 1024, when="start")
    assert out["error"] == "DiskFullError", out
    assert "StorageError" in out["classes"] and "OSError" in out["classes"]
    assert out["path"].endswith(".jsonl.gz")
    assert "no room" in out["message"] and "Free some space" in out["message"]
    # The failing run removed its partial file and recorded that in the manifest.
    store = _open_store(data_dir)
    archiver = Archiver(store)
    assert _states(archiver) == Counter({"discarded": 1})
    assert not list(archiver.archive_dir.glob("*.jsonl.gz"))
    archiver.close()
    store.close()
    assert _next_run_archives_everything(data_dir, keys) == []


def test_when_the_manifest_cannot_record_the_cleanup_the_next_run_does(data_dir: Path) -> None:
    keys = _fill(data_dir)
    out = _run_child(data_dir, limit=1, when="mid")
    # The archive file's own error comes out, not the manifest's failure while cleaning up.
    assert out["error"] == "DiskFullError", out
    assert out["path"].endswith(".jsonl.gz")
    store = _open_store(data_dir)
    archiver = Archiver(store)
    assert _states(archiver) == Counter({"writing": 1})  # the manifest write failed too
    assert not list(archiver.archive_dir.glob("*.jsonl.gz"))  # removing the file needed no room
    archiver.close()
    store.close()
    recovered = _next_run_archives_everything(data_dir, keys)
    assert len(recovered) == 1 and recovered[0].startswith("discarded unverified")


# ------------------------------------------------------------- a real full disk


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 5 MB tmpfs, mounted for this test (needs the right to mount: root, here)."""
    with tmpfs(tmp_path, "5m") as mnt:
        yield mnt


def test_a_full_disk_under_the_archive_folder(data_dir: Path, small_tmpfs: Path) -> None:
    keys = _fill(data_dir)
    store = _open_store(data_dir)
    archiver = Archiver(store, archive_dir=small_tmpfs / "archive", chunk_size=20)
    try:
        archiver.list_archives()  # the manifest exists before the disk fills
        filler = fill(small_tmpfs, leave=48 * 1024)
        with pytest.raises(DiskFullError) as caught:
            archiver.run(now=FUTURE)
        err = caught.value
        assert str(err.path).endswith(".jsonl.gz") and str(err.path) in str(err)  # the archive file's own error
        assert "Free some space" in str(err)
        assert all(store.get(NS, k) is not None for k in keys), "an item left the live store"
        assert _states(archiver)["verified"] == 0 and _states(archiver)["complete"] == 0
        assert not list(archiver.archive_dir.glob("*.jsonl.gz"))
        filler.unlink()
        report = archiver.run(now=FUTURE)  # the same archiver: its manifest connection survived
        assert report.ok and report.total_archived == N
        assert all(store.get(NS, k) is None for k in keys)
        assert set(archiver.verify().values()) == {None}
        assert _states(archiver)["writing"] == 0
    finally:
        archiver.close()
        store.close()
