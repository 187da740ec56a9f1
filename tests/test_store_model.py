"""The model that made the vectors: recorded in the catalog, a switch refused, re-embedding on request."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from langgraph_memory.errors import ConfigError, ModelMismatchError
from langgraph_memory.store import ChromaStore


class Shifted(Embeddings):
    """Another model with the same dimensions: the fake one, on shifted text."""

    model_name = "shifted-16"

    def __init__(self) -> None:
        self.inner = DeterministicFakeEmbedding(size=16)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(["~" + t for t in texts])

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_same_dims_other_model_is_refused_then_reindexed(data_dir: Path) -> None:
    a = ChromaStore(
        data_dir=data_dir, index={"dims": 16, "embed": DeterministicFakeEmbedding(size=16), "fields": ["text"]}
    )
    for i in range(30):
        a.put(("notes",), f"k{i}", {"text": f"note number {i}"})
    a.close()
    with pytest.raises(ModelMismatchError, match="reindex=True"):
        ChromaStore(data_dir=data_dir, index={"dims": 16, "embed": Shifted(), "fields": ["text"]})
    seen: list[tuple[int, int]] = []
    b = ChromaStore(data_dir=data_dir, index={"dims": 16, "embed": Shifted(), "fields": ["text"]}, reindex=True)
    try:
        assert b.vector_index.last_rebuild is not None
        for i in (0, 7, 29):
            assert b.search(("notes",), query=f"note number {i}", limit=1)[0].score == pytest.approx(1.0, abs=1e-5)
        b.planner.exact_max = 0  # through Chroma as well
        assert b.search(("notes",), query="note number 7", limit=1)[0].key == "k7"
        assert b.reindex(progress=lambda done, total: seen.append((done, total))) == 30
        assert seen[-1] == (30, 30)
    finally:
        b.close()
    # The old model is now the one refused.
    with pytest.raises(ModelMismatchError):
        ChromaStore(data_dir=data_dir, index={"dims": 16, "embed": DeterministicFakeEmbedding(size=16)})


def test_other_dims_reindexed_into_a_new_index(data_dir: Path) -> None:
    a = ChromaStore(data_dir=data_dir, index={"dims": 16, "embed": DeterministicFakeEmbedding(size=16)})
    a.put(("research",), "f", {"content": "Carry unwinds"})
    a.close()
    b = ChromaStore(data_dir=data_dir, index={"dims": 8, "embed": DeterministicFakeEmbedding(size=8)}, reindex=True)
    try:
        assert b.search(("research",), query="Carry unwinds", limit=1)[0].score == pytest.approx(1.0, abs=1e-5)
        assert b.vector_index.count("research_findings") == 1
    finally:
        b.close()


def test_a_store_opened_without_a_model_fixes_no_dimensions(data_dir: Path) -> None:
    plain = ChromaStore(data_dir=data_dir)
    plain.put(("notes",), "k", {"text": "no vector"})
    plain.close()
    s = ChromaStore(data_dir=data_dir, index={"dims": 8, "embed": DeterministicFakeEmbedding(size=8)})
    try:
        s.put(("notes",), "v", {"text": "with a vector"})
        assert [h.key for h in s.search(("notes",), query="with a vector", limit=1)] == ["v"]
    finally:
        s.close()


def test_reindex_needs_a_model(data_dir: Path) -> None:
    s = ChromaStore(data_dir=data_dir)
    with pytest.raises(ConfigError):
        s.reindex()
    s.close()
