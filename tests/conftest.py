"""Shared fixtures: temporary data directories, fast fake embeddings, the real model once."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

os.environ.setdefault("HF_HUB_OFFLINE", "1")

FAKE_DIMS = 16


@pytest.fixture
def fake_embeddings() -> DeterministicFakeEmbedding:
    """Deterministic, meaningless vectors: fast unit tests only."""
    return DeterministicFakeEmbedding(size=FAKE_DIMS)


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh data directory; the environment points nowhere else."""
    monkeypatch.delenv("LANGGRAPH_MEMORY_DIR", raising=False)
    monkeypatch.delenv("EMBEDDING_MODEL", raising=False)
    return tmp_path / "memory"


@pytest.fixture
def store(data_dir: Path, fake_embeddings: DeterministicFakeEmbedding) -> Iterator:
    from langgraph_memory.store import ChromaStore

    s = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    yield s
    s.close()


@pytest.fixture(params=["memory", "chroma"])
def any_store(request: pytest.FixtureRequest, data_dir: Path, fake_embeddings: DeterministicFakeEmbedding) -> Iterator:
    """The same test against LangGraph's InMemoryStore and our ChromaStore."""
    from langgraph.store.memory import InMemoryStore

    from langgraph_memory.store import ChromaStore

    if request.param == "memory":
        yield InMemoryStore(index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    else:
        s = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
        yield s
        s.close()


@pytest.fixture(scope="session")
def real_embeddings():
    """The default offline model, loaded once for the whole session."""
    from langgraph_memory.store.embeddings import SentenceTransformerEmbeddings

    emb = SentenceTransformerEmbeddings()
    emb.embed_query("warm up")
    return emb


@pytest.fixture
def no_blocking() -> Iterator:
    """Fail on any blocking call made on a running event loop, as the LangGraph server does."""
    from tests.helpers.blocking import server_blockbuster

    with server_blockbuster() as bb:
        yield bb


# PostgreSQL servers (scripts/pg.sh): pg_url, pg_database, pg_cluster.
from tests.helpers.postgres import pg_cluster, pg_database, pg_url  # noqa: E402,F401
