"""A large history's past vectors split into clusters, and as-of searches that score the nearest ones first.

Every test opens its data directory through fixtures, so the store tests run on both catalogs. The store tests
lower the sizes at which the partition is made and probed, so a few hundred versions take the path a history of
tens of thousands takes.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

from langgraph_memory.catalog import past_versions
from langgraph_memory.catalog.past_versions import Partition
from langgraph_memory.search.ranking import HybridRanking
from langgraph_memory.store import ChromaStore
from langgraph_memory.store import as_of as as_of_module

DIMS = 24
TOPICS = 8
NS = ("notes",)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


class TopicEmbeddings(Embeddings):
    """Texts ``"t<j> ..."`` near topic ``j``'s centre (far from the others'), each a little apart by its hash."""

    centres = _unit(np.random.default_rng(7).standard_normal((TOPICS, DIMS)))

    def _one(self, text: str) -> list[float]:
        topic = int(text.split()[0][1:])
        rng = np.random.default_rng(int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little"))
        return _unit(self.centres[topic] + 0.25 * _unit(rng.standard_normal(DIMS))).astype(np.float32).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


def _tick() -> float:
    """The clock now, after waiting until it moved on by more than a datetime shows (a microsecond)."""
    t = time.time()
    while time.time() <= t + 2e-6:
        time.sleep(0.0005)
    return t


def test_a_partition_keeps_each_topic_together_and_repeats_itself() -> None:
    vectors = np.array(TopicEmbeddings().embed_documents([f"t{i % TOPICS} v{i}" for i in range(4000)]), np.float32)
    part = Partition.of(vectors)
    again = Partition.of(vectors)
    assert np.array_equal(part.cluster, again.cluster) and np.array_equal(part.centroids, again.centroids)
    assert 16 <= len(part.centroids) <= 64
    np.testing.assert_allclose(np.linalg.norm(part.centroids, axis=1), 1.0, rtol=1e-5)
    for topic in range(TOPICS):  # a cluster holds one topic's vectors only
        clusters = set(part.cluster[topic::TOPICS].tolist())
        others = set(np.delete(part.cluster, np.arange(topic, 4000, TOPICS)).tolist())
        assert not clusters & others
    # Grouped by topic, the clusters nearest a vector hold its neighbours: a search scores a topic's share.
    assert (part.share, part.recall) == (1 / TOPICS, 1.0)
    # Without structure they do not: every vector is scored.
    noise = np.random.default_rng(1).standard_normal((4000, DIMS)).astype(np.float32)
    assert Partition.of(noise / np.linalg.norm(noise, axis=1, keepdims=True)).share == 1.0
    # New vectors join their nearest centre; twice as many as it was made of, and it is made again.
    more = np.array(TopicEmbeddings().embed_documents([f"t3 new{i}" for i in range(10)]), np.float32)
    grown = part.extended(np.concatenate([vectors, more]), more)
    assert grown.made_of == 4000 and set(grown.cluster[-10:].tolist()) <= set(part.cluster[3::TOPICS].tolist())
    assert part.extended(np.concatenate([vectors, vectors]), vectors).made_of == 8000


@pytest.fixture
def partitioned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(past_versions, "PARTITION_MIN", 200)
    monkeypatch.setattr(as_of_module, "PROBED_SCOPE", 200)


def _store(data_dir: Path, hybrid: bool) -> ChromaStore:
    return ChromaStore(
        data_dir=data_dir,
        index={"dims": DIMS, "embed": TopicEmbeddings(), "fields": ["text"]},
        collections=None,
        ranking=HybridRanking() if hybrid else None,
    )


def _exact(view, monkeypatch: pytest.MonkeyPatch, **search) -> list[tuple[str, float]]:
    with monkeypatch.context() as m:
        m.setattr(as_of_module, "PROBED_SCOPE", 10**9)
        return [(h.key, h.score) for h in view.search(NS, **search)]


@pytest.mark.parametrize("hybrid", [False, True], ids=["cosine", "hybrid"])
def test_as_of_a_large_history_finds_the_exact_answer_in_the_nearest_clusters(
    data_dir: Path, partitioned: None, monkeypatch: pytest.MonkeyPatch, hybrid: bool
) -> None:
    scored_whole: list[tuple[bool, int]] = []  # per scoring of past versions: whether it scored all, how many
    score = as_of_module._best_cosines

    def spied(*args, **kwargs):
        got = score(*args, **kwargs)
        scored_whole.append((got[1], len(args[2])))
        return got

    monkeypatch.setattr(as_of_module, "_best_cosines", spied)
    store = _store(data_dir, hybrid)
    try:
        # A rare word in a few versions of every topic: a hybrid search as of then weighs it wherever they lie.
        store.batch(
            [
                PutOp(NS, f"k{i}", {"text": f"t{i % TOPICS} first {i}" + (" breakout" * (i % 37 == 0)), "n": i % 5})
                for i in range(480)
            ]
        )
        then = _tick()
        store.batch([PutOp(NS, f"k{i}", {"text": f"t{(i + 1) % TOPICS} second {i}", "n": -1}) for i in range(480)])
        view = store.as_of(then)
        queries = [("t3 about three", None), ("t6 about six", {"n": 2}), ("t0 zero", None)]
        for query, flt in [*queries, *([("t3 breakout", None)] if hybrid else [])]:
            scored_whole.clear()
            limit = 70 if "breakout" in query else 10  # topic 3 has 60 versions valid then
            got = [(h.key, h.score) for h in view.search(NS, query=query, filter=flt, limit=limit)]
            # The nearest clusters only, and they were enough (a hybrid search scores alone the versions it weighs
            # for keywords outside them).
            (whole, n), *rest = scored_whole
            assert not whole and all(k < n / 10 for _w, k in rest)
            assert len(rest) == ("breakout" in query and hybrid)
            assert got == _exact(view, monkeypatch, query=query, filter=flt, limit=limit)
            assert len(got) == limit
            topics = {int(k[1:]) % TOPICS for k, _s in got}
            if "breakout" not in query:
                assert topics == {int(query[1])}
            else:  # past the query's topic, the word lifts its versions in other topics' clusters
                assert {int(k[1:]) % 37 for k, _s in got[60:]} == {0}
        m = view._past()  # the searches above probed a share of the clusters
        assert m.versions.partition is not None
        probed = m.probe(np.asarray(TopicEmbeddings().embed_query("t3 x"), dtype=np.float32))
        assert len(probed) < len(m.versions.partition.centroids)
    finally:
        store.close()


@pytest.mark.parametrize("hybrid", [False, True], ids=["cosine", "hybrid"])
def test_as_of_scores_every_cluster_when_the_nearest_leave_the_page_short(
    data_dir: Path, partitioned: None, monkeypatch: pytest.MonkeyPatch, hybrid: bool
) -> None:
    # The filter keeps versions of one far topic only: none lies in the clusters nearest the query, so the search
    # scores the rest and still returns a full page, the exact one.
    store = _store(data_dir, hybrid)
    try:
        store.batch([PutOp(NS, f"k{i}", {"text": f"t{i % TOPICS} first {i}", "n": i % TOPICS}) for i in range(480)])
        then = _tick()
        store.batch([PutOp(NS, f"k{i}", {"text": f"t{i % TOPICS} second {i}", "n": -1}) for i in range(480)])
        view = store.as_of(then)
        far = int(np.argmin(TopicEmbeddings.centres @ TopicEmbeddings.centres[2]))
        got = [(h.key, h.score) for h in view.search(NS, query="t2 two", filter={"n": far}, limit=8)]
        assert got == _exact(view, monkeypatch, query="t2 two", filter={"n": far}, limit=8)
        assert len(got) == 8 and all(int(k[1:]) % TOPICS == far for k, _s in got)
    finally:
        store.close()
