"""A Chroma server that is down: a process still starts, waiting for the index says so, and nothing logs a traceback.

Every server here is a real ``chroma run`` (tests/helpers/chroma_server.py), stopped and started on one port.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from langgraph_memory.platform import CHROMA_URL_ENV, chroma_client_from_env
from tests.helpers.chroma_server import ChromaServer, chroma_server, free_port  # noqa: F401 - the fixture

CLI = Path(sys.executable).with_name("langgraph-memory")
DIMS = 8


def _warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("langgraph_memory")]


def _index_count(mem: Memory) -> int:
    return sum(mem.store.vector_index.count(name) for name in mem.store.vector_index.collections)


def test_wait_for_index_is_false_while_the_server_is_down_and_true_once_it_is_back(
    tmp_path: Path,
    chroma_server: ChromaServer,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    emb = DeterministicFakeEmbedding(size=DIMS)
    with Memory.open(tmp_path / "memory", embeddings=emb, chroma_client=chroma_server.client()) as mem:
        mem.store.put(("notes",), "a", {"text": "indexed while the server answers"})
        assert mem.store.wait_for_index(timeout=30)
        chroma_server.kill()
        mem.store.put(("notes",), "b", {"text": "written while the server is down"})
        started = time.monotonic()
        assert mem.store.wait_for_index(timeout=2) is False
        assert time.monotonic() - started >= 1.9  # it waited the whole timeout, not one failed pass
        # Searches still find both, scored exactly from the catalog.
        assert {h.key for h in mem.store.search(("notes",), query="server", limit=5)} == {"a", "b"}
        chroma_server.start()  # same folder, same port
        assert mem.store.wait_for_index(timeout=60) is True
        assert _index_count(mem) == 2
    assert not [r for r in _warnings(caplog) if r.exc_info], "a warning carried a traceback"


def test_a_process_starts_while_its_chroma_server_is_down_and_catches_up_when_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    port = free_port()
    monkeypatch.setenv(CHROMA_URL_ENV, f"http://127.0.0.1:{port}")
    data_dir = tmp_path / "memory"
    emb = DeterministicFakeEmbedding(size=DIMS)
    with caplog.at_level(logging.WARNING):
        with Memory.open(data_dir, embeddings=emb, chroma_client=chroma_client_from_env()) as mem:
            mem.store.put(("notes",), "a", {"text": "momentum fades after earnings"})
            assert [h.key for h in mem.store.search(("notes",), query="momentum", limit=1)] == ["a"]
            assert mem.store.wait_for_index(timeout=0.5) is False
        # Closed during the outage: said in one line each, no traceback at WARNING.
        said = _warnings(caplog)
        assert said and not [r for r in said if r.exc_info or "\n" in r.getMessage()], [r.getMessage() for r in said]

    # The CLI starts too, with the same dead address, and answers from the catalog.
    env = {**os.environ, CHROMA_URL_ENV: f"http://127.0.0.1:{port}"}
    done = subprocess.run(
        [str(CLI), "--data-dir", str(data_dir), "list", "notes", "--json"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and '"a"' in done.stdout

    server = ChromaServer(tmp_path / "server", port=port)
    server.start()
    try:
        with Memory.open(data_dir, embeddings=emb, chroma_client=chroma_client_from_env()) as mem:
            assert mem.store.wait_for_index(timeout=60) is True
            assert _index_count(mem) == 1
    finally:
        server.stop()
