"""Outages the library rides out are reported in one line each, never with a traceback at WARNING.

The server is a private PostgreSQL cluster (``pg_cluster``), crashed and started again on its port.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from langgraph_memory.errors import ServerUnavailableError
from tests.helpers.postgres import PgCluster, create_database


def test_the_index_writer_after_a_postgresql_restart_warns_in_one_line(
    pg_cluster: PgCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    url = create_database(pg_cluster.url)
    monkeypatch.setenv("LANGGRAPH_MEMORY_LOCAL_DIR", str(tmp_path / "local"))
    with (
        caplog.at_level(logging.WARNING),
        Memory.open(url, embeddings=DeterministicFakeEmbedding(size=8), lock_timeout=5) as mem,
    ):
        mem.store.put(("notes",), "a", {"text": "before the restart"})
        assert mem.store.wait_for_index(timeout=30)
        pg_cluster.crash()
        pg_cluster.start()  # same port
        for _ in range(3):  # the first call may find its connection dead; the next one reconnects
            try:
                mem.store.put(("notes",), "b", {"text": "after the restart"})
                break
            except ServerUnavailableError:
                continue
        assert mem.store.wait_for_index(timeout=60)
        assert {h.key for h in mem.store.search(("notes",), query="restart", limit=5)} == {"a", "b"}
    said = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("langgraph_memory")]
    assert said, "the restart went unnoticed: the writer's connection should have failed once"
    assert not [r for r in said if r.exc_info or "\n" in r.getMessage()], [r.getMessage() for r in said]
