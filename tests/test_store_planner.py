"""The search planner: the plan each candidate-set size gets, and the same answers whichever plan runs."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import PutOp

from langgraph_memory.store import ChromaStore

DIMS = 16
EXACT_MAX = 40


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> ChromaStore:
    """600 notes in 30 namespaces of 20 (two groups), 1% of them 'rare', plus 40 typed findings."""
    store = ChromaStore(
        data_dir=tmp_path_factory.mktemp("planner") / "memory",
        index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS), "fields": ["text"]},
    )
    store.planner.exact_max = EXACT_MAX
    ops = []
    for i in range(600):
        kind = "rare" if i % 100 == 0 else ("common" if i % 2 else "half")
        ops.append(PutOp(("notes", f"g{i % 2}", f"u{i % 30}"), f"n{i}", {"text": f"note {i}", "kind": kind, "i": i}))
    ops += [PutOp(("research",), f"f{i}", {"content": f"finding {i}"}) for i in range(40)]
    store.batch(ops)
    yield store
    store.close()


def _exact_answer(store: ChromaStore, prefix: tuple[str, ...], query: str, keep, k: int = 5) -> list[str]:
    """The true top k by cosine, computed here from each item's text."""
    emb = DeterministicFakeEmbedding(size=DIMS)
    q = np.asarray(emb.embed_query(query))
    scored = []
    for item in store.search(prefix, limit=10_000):
        if keep(item.value):
            v = np.asarray(emb.embed_query(item.value["text"]))
            scored.append((-(v @ q) / (np.linalg.norm(v) * np.linalg.norm(q)), item.key))
    return [key for _, key in sorted(scored)[:k]]


@pytest.mark.parametrize(
    ("prefix", "flt", "strategy"),
    [
        (("notes", "g0", "u4"), None, "exact"),  # one namespace: 20 candidates
        (("notes", "g1"), None, "hnsw"),  # half the notes: 300
        (("notes",), None, "hnsw"),  # every note
        (("notes",), {"kind": "rare"}, "exact"),  # 1% of 600, found through the filter index
        (("notes",), {"kind": {"$ne": "half"}}, "hnsw"),  # not selective, checked on the values
        (("notes",), {"i": {"$lt": 30}}, "exact"),  # a range through the filter index
        (("research",), None, "exact"),  # a typed collection of 40
    ],
)
def test_the_plan_fits_the_candidate_set_and_answers_exactly(
    big: ChromaStore, prefix: tuple[str, ...], flt: dict | None, strategy: str
) -> None:
    plan = big.explain(prefix, query="note 123", filter=flt)
    assert plan.strategy == strategy, str(plan)
    if prefix == ("research",):
        return
    got = [h.key for h in big.search(prefix, query="note 123", filter=flt, limit=5)]
    keep = (lambda v: True) if flt is None else (lambda v: _matches(v, flt))
    assert got == _exact_answer(big, prefix, "note 123", keep)


def _matches(value: dict, flt: dict) -> bool:
    from langgraph_memory.search.filters import matches

    return matches(value, flt)


def test_listing_plans_and_the_empty_plan(big: ChromaStore) -> None:
    assert big.explain(("notes", "g0")).strategy == "scan"
    assert big.explain(("nothing", "here"), query="x").strategy == "empty"
    assert big.explain(("notes",), query="x", filter={"kind": "absent"}).strategy == "empty"
    assert big.search(("notes",), query="x", filter={"kind": "absent"}) == []
    text = str(big.explain(("notes",), query="x", filter={"kind": {"$ne": "half"}}))
    assert "hnsw over memories" in text and "600 items in scope" in text and "filter checked on values" in text


def test_every_search_logs_its_plan(big: ChromaStore, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="langgraph_memory.store.searching"):
        big.search(("notes", "g0", "u4"), query="note 4")
    assert any("exact over memories" in r.getMessage() for r in caplog.records)


def test_paging_through_the_hnsw_plan_is_consistent(big: ChromaStore) -> None:
    whole = [h.key for h in big.search(("notes",), query="note 77", limit=30)]
    pages = [h.key for o in range(0, 30, 10) for h in big.search(("notes",), query="note 77", limit=10, offset=o)]
    assert pages == whole and len(set(whole)) == 30


def test_a_broken_index_is_searched_exactly(data_dir: Path) -> None:
    store = ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)})
    store.planner.exact_max = 0
    try:
        store.batch([PutOp(("notes",), f"n{i}", {"text": f"note {i}"}) for i in range(100)])
        store.vector_index.broken.add("memories")
        plan = store.explain(("notes",), query="x")
        assert plan.strategy == "exact" and "waiting for a rebuild" in str(plan)
        assert store.search(("notes",), query='{"text": "note 42"}', limit=1)[0].key == "n42"
    finally:
        store.vector_index.broken.clear()
        store.close()


def test_hnsw_recall_is_measured_on_the_searches_themselves(big: ChromaStore) -> None:
    watch = big.planner.recall
    assert watch.recall("memories") is None or watch.recall("memories") >= 0.9  # earlier tests' searches
    for i in range(6):
        assert big.explain(("notes",), query=f"note {i}").strategy == "hnsw"
        big.search(("notes",), query=f"note {i}", limit=5)
    # 600 clustered-enough 16-d vectors: HNSW finds the true top 5, and the planner keeps it.
    assert watch.recall("memories") is not None and watch.recall("memories") >= 0.9
    assert big.explain(("notes",), query="note 9").strategy == "hnsw"


def test_a_collection_where_hnsw_answers_badly_is_scored_exactly(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_memory.search import _recall

    # Every measured recall counts as poor: the planner's reaction, not HNSW's quality, is under test.
    monkeypatch.setattr(_recall, "RECALL_FLOOR", 1.01)
    store = ChromaStore(
        data_dir=data_dir,
        index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS), "fields": ["text"]},
    )
    store.planner.exact_max = 5  # scopes over 30 vectors go to HNSW
    try:
        store.batch([PutOp(("notes",), f"n{i}", {"text": f"note {i}"}) for i in range(300)])
        store.wait_for_index()
        assert store.explain(("notes",), query="note 1").strategy == "hnsw"
        for i in range(_recall.MIN_CHECKS):
            store.search(("notes",), query=f"note {i}", limit=5)
        plan = store.explain(("notes",), query="note 7")
        assert plan.strategy == "exact" and "HNSW recall measured" in str(plan), str(plan)
        got = [h.key for h in store.search(("notes",), query="note 7", limit=5)]
        assert got == _exact_answer(store, ("notes",), "note 7", lambda v: True)
        # HNSW is still checked now and then, so a collection that changes can win it back.
        before = len(store.planner.recall._checks["memories"])
        for i in range(_recall.EVERY):
            store.search(("notes",), query=f"note {i}", limit=5)
        assert len(store.planner.recall._checks["memories"]) > before or before == _recall.WINDOW
        monkeypatch.setattr(_recall, "RECALL_FLOOR", 0.0)
        assert store.explain(("notes",), query="note 7").strategy == "hnsw"
    finally:
        store.close()


def test_an_hnsw_answer_stuck_far_from_the_query_is_caught_and_scored_exactly(
    big: ChromaStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # HNSW can settle in the wrong part of its graph and return only far items. A sample of the scope scored
    # exactly beats such an answer: the search asks wider, then scores exactly, and returns the true best.
    assert big.wait_for_index(60)  # Chroma holds every vector: no search scores queued items exactly instead
    queries = [f"note {i}" for i in (5, 123, 250, 377, 499)]
    with caplog.at_level(logging.DEBUG, logger="langgraph_memory.store.searching"):
        for q in queries:  # HNSW as it is: exact on 600 items of 16 dimensions, never second-guessed
            assert [h.key for h in big.search(("notes",), query=q, limit=5)] == _exact_answer(
                big, ("notes",), q, lambda v: True
            )
    assert not any("sample beat" in r.getMessage() for r in caplog.records)
    real = big.planner.index.query
    monkeypatch.setattr(big.planner.index, "query", lambda name, vector, n: real(name, -np.asarray(vector), n))
    caplog.clear()
    flt = {"kind": "common"}
    with caplog.at_level(logging.DEBUG, logger="langgraph_memory.store.searching"):
        for q in queries:
            got = [h.key for h in big.search(("notes",), query=q, limit=5)]
            assert got == _exact_answer(big, ("notes",), q, lambda v: True), q
            got = [h.key for h in big.search(("notes",), query=q, filter=flt, limit=5)]
            assert got == _exact_answer(big, ("notes",), q, lambda v: _matches(v, flt)), q
    plans = [r.getMessage() for r in caplog.records if "HNSW n_results" in r.getMessage()]  # not the listings
    assert len(plans) == 2 * len(queries) and all(
        "sample beat HNSW's answer twice; scored exactly" in p for p in plans
    ), plans


def test_a_search_that_finds_the_index_busy_ranks_by_sketch_and_finds_the_best(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # While this process applies a chunk of changes to Chroma, a search of a large scope gets IndexBusy: it ranks
    # the collection in memory by sketch and scores the best rows exactly, in a few ms instead of every row.
    # Small bounds make 1,500 items take the path 5,000 or more take by default.
    import threading

    from langgraph_memory.search import vectors as _vecs

    monkeypatch.setattr(_vecs, "_COARSE_MIN", 200)
    monkeypatch.setattr(_vecs, "_COARSE_KEEP", 100)
    store = ChromaStore(
        data_dir=data_dir, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS), "fields": ["text"]}
    )
    store.planner.exact_max = 5
    held, done = threading.Event(), threading.Event()

    def apply_for_a_while() -> None:  # what `_apply_pending` does around a chunk's upsert
        with store.vector_index.handle.lock.hold():
            store.vector_index._applying = True
            held.set()
            done.wait(60)
            store.vector_index._applying = False

    try:
        store.batch([PutOp(("notes",), f"n{i}", {"text": f"note {i}"}) for i in range(1500)])
        store.wait_for_index()
        assert store.explain(("notes",), query="note 1").strategy == "hnsw"
        applier = threading.Thread(target=apply_for_a_while)
        applier.start()
        assert held.wait(60)
        with caplog.at_level(logging.DEBUG, logger="langgraph_memory.store.searching"):
            for q in ("note 3", "note 700", "note 1499"):
                got = [h.key for h in store.search(("notes",), query=q, limit=5)]
                assert got == _exact_answer(store, ("notes",), q, lambda v: True), q
        done.set()
        applier.join()
        plans = [r.getMessage() for r in caplog.records if "hnsw over" in r.getMessage()]
        assert len(plans) == 3 and all("index busy, the best by sketch scored exactly" in p for p in plans), plans
    finally:
        done.set()
        store.close()
