"""Several processes on one data directory: nothing lost, the vector index intact, bounded waits."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.errors import LockTimeoutError
from langgraph_memory.store import ChromaStore
from tests.helpers.store_writer import release_together

HELPER = Path(__file__).parent / "helpers" / "store_writer.py"
DIMS = 32


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.slow
def test_two_processes_writing_at_once_lose_nothing_and_keep_the_index_intact(data_dir: Path, tmp_path: Path) -> None:
    n = 1200  # above Chroma's HNSW sync threshold (1,000), where stale writers corrupted the index
    flag = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, str(HELPER), str(data_dir), name, str(n), str(DIMS), str(flag)],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("alpha", "beta")
    ]
    release_together(procs, ["alpha", "beta"], flag)  # both have opened the store
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        assert "locked" not in err.lower()

    emb = DeterministicFakeEmbedding(size=DIMS)
    store = ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": emb})
    assert store.items.count("research") == 2 * n
    assert store.list_namespaces() == [("research", "alpha"), ("research", "beta")]
    col = store.collection("research")
    got = col.get(include=["embeddings", "metadatas"])
    assert len(got["ids"]) == 2 * n
    # Index integrity (PITFALLS): every stored vector must find its own item first.
    for start in range(0, len(got["ids"]), 50):
        ids = got["ids"][start : start + 50]
        vecs = [list(v) for v in got["embeddings"][start : start + 50]]
        res = col.query(query_embeddings=vecs, n_results=1, include=[])
        assert [r[0] for r in res["ids"]] == ids
    for name in ("alpha", "beta"):
        for i in range(n):
            item = store.get(("research", name), f"{name}-{i}")
            assert item is not None and item.value["n"] == i
    store.close()


def test_a_held_catalog_lock_times_out_with_a_clear_error(data_dir: Path) -> None:
    store = ChromaStore(
        data_dir=data_dir,
        index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)},
        lock_timeout=1.0,
    )
    store.put(("research",), "before", {"content": "written before the lock was taken"})
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
            "c.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(30)",
            str(store.settings.catalog_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(LockTimeoutError, match="catalog"):
            store.put(("research",), "blocked", {"content": "cannot be written while locked"})
        assert time.monotonic() - started < 20  # bounded, not a hang
        # Readers never wait for a writer (WAL): the catalog answers reads meanwhile.
        assert store.get(("research",), "before") is not None
    finally:
        holder.kill()
        holder.wait()
    store.put(("research",), "after", {"content": "written once the lock is free"})
    assert store.get(("research",), "after") is not None
    assert store.get(("research",), "blocked") is None  # reported failed, and not there
    store.close()


def test_a_held_chroma_lock_delays_only_the_index(data_dir: Path) -> None:
    """Chroma is an index: a put is acknowledged by the catalog and found while Chroma is busy elsewhere."""
    emb = DeterministicFakeEmbedding(size=DIMS)
    store = ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": emb}, lock_timeout=1.0)
    store.put(("research",), "before", {"content": "written before the lock was taken"})
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time, filelock; l = filelock.FileLock(sys.argv[1]); l.acquire(); "
            "print('held', flush=True); time.sleep(30)",
            str(store.settings.lock_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        store.put(("research",), "during", {"content": "written while Chroma was locked"})
        hits = store.search(("research",), query="written while Chroma was locked", limit=1)
        assert [h.key for h in hits] == ["during"]
    finally:
        holder.kill()
        holder.wait()
    store.put(("research",), "after", {"content": "written once the lock is free"})
    assert store.wait_for_index(timeout=120)  # the index's thread applies the whole queue
    assert store.vector_index.count("research_findings") == 3
    store.close()
