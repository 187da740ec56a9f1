"""The same store on a real `chroma run` server (loopback only)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.store import ChromaStore

HELPER = Path(__file__).parent / "helpers" / "store_writer.py"
DIMS = 32


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    import chromadb

    port = _free_port()
    chroma = Path(sys.executable).parent / "chroma"
    path = tmp_path_factory.mktemp("chroma-server")
    proc = subprocess.Popen(
        [str(chroma), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 60
    while True:
        try:
            chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()
            break
        except Exception:
            if time.time() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("chroma run did not start")
            time.sleep(0.2)
    yield "127.0.0.1", port
    proc.terminate()
    proc.wait(timeout=30)


def _server_store(server: tuple[str, int], data_dir: Path) -> ChromaStore:
    import chromadb

    host, port = server
    return ChromaStore(
        chromadb.HttpClient(host=host, port=port),
        data_dir=data_dir,
        index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)},
    )


def test_store_ops_on_a_chroma_server(chroma_server: tuple[str, int], data_dir: Path) -> None:
    store = _server_store(chroma_server, data_dir)
    store.put(("research", "srv"), "f1", {"content": "served finding", "confidence": 0.9})
    store.put(("notes", "srv"), "n1", {"text": "a note", "n": 3})
    assert store.get(("research", "srv"), "f1").value["confidence"] == 0.9
    assert store.search(("research", "srv"), query="served finding", limit=1)[0].score == pytest.approx(1.0, abs=1e-5)
    assert [i.key for i in store.search(("notes",), filter={"n": {"$gt": 2}})] == ["n1"]
    assert ("notes", "srv") in store.list_namespaces()
    store.delete(("notes", "srv"), "n1")
    assert store.get(("notes", "srv"), "n1") is None
    # The server holds the vectors only, in collections named for this catalog.
    assert store.wait_for_index(timeout=120)  # the index follows the commits in its thread
    raw = store.vector_index.chroma_collection("research_findings")
    assert raw is not None and raw.name.startswith("lgm-") and raw.count() == 1
    assert raw.get(include=["metadatas"])["metadatas"] == [None]
    store.close()
    again = _server_store(chroma_server, data_dir)
    assert again.get(("research", "srv"), "f1") is not None
    assert again.search(("research",), query="served finding", limit=1)[0].key == "f1"
    # A rebuild makes new server collections and drops the old ones.
    report = again.rebuild_index(progress=False)
    assert report.total == 1
    assert again.vector_index.chroma_collection("research_findings").name != raw.name
    assert again.search(("research",), query="served finding", limit=1)[0].key == "f1"
    again.close()


@pytest.mark.slow
def test_two_processes_through_one_server(chroma_server: tuple[str, int], data_dir: Path) -> None:
    host, port = chroma_server
    n = 300
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    procs = [
        subprocess.Popen(
            [sys.executable, str(HELPER), f"http://{host}:{port}@{data_dir}", name, str(n), str(DIMS)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("srv-a", "srv-b")
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    store = _server_store(chroma_server, data_dir)
    assert store.items.count("research") == 2 * n
    raw = store.vector_index.chroma_collection("research_findings")
    got = raw.get(include=["embeddings"])
    assert len(got["ids"]) == 2 * n
    # Index integrity: every stored vector finds its own record first.
    res = raw.query(query_embeddings=[list(v) for v in got["embeddings"]], n_results=1, include=[])
    assert [r[0] for r in res["ids"]] == got["ids"]
    store.close()
