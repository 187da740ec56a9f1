"""``index_process=True``: the embedded Chroma index driven from a child process.

Chroma's embedded client holds the GIL for the whole of each write; from a
child process it cannot stop this process's threads (the event loop among
them: ``tests/test_loop_stall.py``). These tests check that nothing else
changes: the index is the same folder under the same lock, several processes
still keep it intact, and the child never outlives its parent in a way that
lets another writer in.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory._infra.chroma_process import RemoteClient
from langgraph_memory.errors import IndexProcessError
from langgraph_memory.store import ChromaStore
from tests.helpers.store_writer import release_together

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

HELPERS = Path(__file__).parent / "helpers"
DIMS = 16


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie waiting for its new parent to reap it counts)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in {"Z", "X"}
    except FileNotFoundError:
        return True


def _wait_for(condition: Any, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.05)


def _lock_is_free(path: str) -> bool:
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


@pytest.fixture
def pstore(data_dir: Path, fake_embeddings: DeterministicFakeEmbedding) -> Any:
    s = ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": fake_embeddings}, index_process=True)
    yield s
    s.close()


def test_the_index_lives_in_a_child_and_answers_as_the_embedded_one(pstore: ChromaStore) -> None:
    for i in range(20):
        pstore.put(("memories",), f"k{i}", {"text": f"lesson number {i}"})
    assert pstore.wait_for_index(timeout=120)  # a catalog on a server feeds the index in a thread
    handle = pstore.vector_index.handle
    assert handle.process is not None and handle.process.pid not in (None, os.getpid())
    assert isinstance(handle.client, RemoteClient)
    assert pstore.vector_index.count("memories") == 20
    # Each stored vector finds its own record through the child's HNSW index.
    got = pstore.vector_index.chroma_collection("memories").get(include=["embeddings"])
    assert len(got["ids"]) == 20
    for rid, vec in zip(got["ids"], got["embeddings"], strict=True):
        (item_id, idx, dist), *_ = pstore.vector_index.query("memories", np.asarray(vec, dtype=np.float32), 1)
        assert (str(item_id) if idx == 0 else f"{item_id}:{idx}") == rid and dist < 1e-5
    assert len(pstore.search(("memories",), query="lesson number 7", limit=50)) == 20
    # Chroma's own errors come back as themselves.
    with pytest.raises(Exception, match="does not exist|not found|NotFound"):
        handle.client.get_collection("no-such-collection", embedding_function=None)
    pid = handle.process.pid
    pstore.close()
    assert pid is not None and _gone(pid)  # closing the store ends its child


def test_a_killed_child_is_replaced_and_nothing_is_lost(pstore: ChromaStore) -> None:
    pstore.put(("memories",), "a", {"text": "before the child died"})
    assert pstore.wait_for_index(timeout=120)
    handle = pstore.vector_index.handle
    assert handle.process is not None
    col = pstore.vector_index.chroma_collection("memories")
    pid = handle.process.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    _wait_for(lambda: not handle.process.running, "the child to die")  # type: ignore[union-attr]
    with pytest.raises(IndexProcessError):
        col.count()  # a collection of the dead child is a typed error, not a hang or a KeyError
    pstore.put(("memories",), "b", {"text": "after the child died"})
    assert pstore.wait_for_index(timeout=120)
    assert handle.process.pid not in (None, pid)
    assert pstore.vector_index.count("memories") == 2
    assert not pstore.vector_index.broken
    assert {h.key for h in pstore.search(("memories",), query="the child died", limit=5)} == {"a", "b"}
    # A rebuild fills its new folder in the child as well, and the store goes on from it.
    assert pstore.rebuild_index().total == 2
    assert pstore.vector_index.count("memories") == 2
    assert handle.folder is not None and handle.folder.name == "index-2"


@pytest.mark.skipif(fcntl is None or not sys.platform.startswith("linux"), reason="flock and /proc")
def test_a_parent_killed_holding_the_lock_leaves_it_held_until_its_child_is_done(data_dir: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, str(HELPERS / "index_process_holder.py"), str(data_dir)],
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    child = 0
    try:
        assert holder.stdout is not None and holder.stdin is not None
        _, pid, lock_path = holder.stdout.readline().split()
        child = int(pid)
        os.kill(child, signal.SIGSTOP)  # the child cannot answer: the parent's next call stays in flight
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "calling"
        assert not _lock_is_free(lock_path)
        holder.kill()
        holder.wait()
        # The parent is dead mid-call, yet nobody else may touch the folder before the child is done.
        assert not _lock_is_free(lock_path)
        os.kill(child, signal.SIGCONT)
        _wait_for(lambda: _gone(child), "the orphaned child to finish and exit")
        _wait_for(lambda: _lock_is_free(lock_path), "the lock to be released")
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        if child and not _gone(child):
            os.kill(child, signal.SIGKILL)
    store = ChromaStore(data_dir=data_dir, index={"dims": 8, "embed": DeterministicFakeEmbedding(size=8)})
    try:
        assert store.get(("memories",), "a") is not None
        assert store.vector_index.count("memories") == 1
    finally:
        store.close()


@pytest.mark.slow
def test_an_index_process_and_an_embedded_writer_keep_one_index_intact(data_dir: Path, tmp_path: Path) -> None:
    n = 1200  # above Chroma's HNSW sync threshold (1,000), where stale writers corrupted the index
    flag = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, str(HELPERS / "store_writer.py"), target, name, str(n), str(DIMS), str(flag)],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for target, name in ((f"process:{data_dir}", "alpha"), (str(data_dir), "beta"))
    ]
    release_together(procs, ["alpha", "beta"], flag)  # both have opened the store
    for p in procs:
        _out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]

    store = ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)})
    try:
        assert store.items.count("research") == 2 * n
        col = store.collection("research")
        got = col.get(include=["embeddings"])
        assert len(got["ids"]) == 2 * n
        # Index integrity (PITFALLS): every stored vector must find its own item first.
        for start in range(0, len(got["ids"]), 50):
            ids = got["ids"][start : start + 50]
            vecs = [list(v) for v in got["embeddings"][start : start + 50]]
            res = col.query(query_embeddings=vecs, n_results=1, include=[])
            assert [r[0] for r in res["ids"]] == ids
    finally:
        store.close()


def test_by_default_the_embedded_index_runs_in_a_child_unless_the_environment_says_0(
    tmp_path: Path, fake_embeddings: DeterministicFakeEmbedding, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In this process an upsert holds the GIL (0.3-0.6 s for 500 vectors into 100,000), stopping puts and loops.
    from langgraph_memory.errors import ConfigError

    monkeypatch.delenv("LANGGRAPH_MEMORY_INDEX_PROCESS", raising=False)
    index = {"dims": DIMS, "embed": fake_embeddings}
    with ChromaStore(data_dir=tmp_path / "default", index=index) as s:
        s.put(("docs",), "a", {"text": "hello"})
        assert s.wait_for_index(timeout=60)
        assert s.vector_index.handle.process is not None and s.vector_index.handle.process.pid is not None
        assert isinstance(s.vector_index.handle._client, RemoteClient)
        assert s.search(("docs",), query="hello")[0].key == "a"
    monkeypatch.setenv("LANGGRAPH_MEMORY_INDEX_PROCESS", "0")
    with ChromaStore(data_dir=tmp_path / "inline", index=index) as s:
        assert s.vector_index.handle.process is None
    monkeypatch.setenv("LANGGRAPH_MEMORY_INDEX_PROCESS", "maybe")
    with pytest.raises(ConfigError, match="LANGGRAPH_MEMORY_INDEX_PROCESS"):
        ChromaStore(data_dir=tmp_path / "bad", index=index)


def test_the_child_starts_at_the_first_write_not_when_the_store_opens(
    data_dir: Path, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    # Started at open, it cost every CLI command its chromadb import, also the reads that never reach Chroma.
    index = {"dims": DIMS, "embed": fake_embeddings}
    with ChromaStore(data_dir=data_dir, index=index, index_process=True) as s:
        s.put(("docs",), "a", {"text": "hello"})
        assert s.wait_for_index(timeout=120)
    with ChromaStore(data_dir=data_dir, index=index, index_process=True) as s:
        proc = s.vector_index.handle.process  # the folder's, shared by this process's stores
        assert proc is not None
        started = proc.starts
        assert s.search(("docs",), query="hello")[0].key == "a"  # a small collection is scored exactly
        assert s.get(("docs",), "a") is not None
        assert proc.starts == started and proc.pid is None
        s.put(("docs",), "b", {"text": "hello again"})
        assert s.wait_for_index(timeout=120)
        assert proc.starts == started + 1 and proc.pid not in (None, os.getpid())
        assert s.vector_index.count(s.collections.for_namespace(("docs",)).name) == 2
