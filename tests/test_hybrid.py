"""Hybrid keyword + vector search with temporal decay and reinforcement, and the 30 % relevance rule."""

from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from langgraph_memory.catalog.connection import both
from langgraph_memory.errors import ConfigError
from langgraph_memory.graph.nodes import recall_node
from langgraph_memory.graph.tools import create_recall_tool
from langgraph_memory.memory import Memory
from langgraph_memory.search.ranking import HybridRanking, TemporalConfig, calculate_final_score
from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS
from tests.helpers.archive_data import old_item
from tests.helpers.embedders import Unrelated

NOW = 1_900_000_000.0
NO_DECAY = HybridRanking(temporal=None)


def _keys(store: ChromaStore, prefix: tuple[str, ...], query: str, **kw) -> list[str]:
    return [h.key for h in store.search(prefix, query=query, refresh_ttl=False, **kw)]


# ---------------------------------------------------------------- keywords


TRADING = {
    "target": "Tuesday desk notes: credit spreads wider, rates flat; the overnight run of SPY / RSI(14) / "
    "lookback 60 finished; printer jammed again",
    "qqq": "QQQ RSI(2) lookback 20: buy the Nasdaq ETF after two down days",
    "iwm": "IWM RSI(7) lookback 90: mean reversion in small caps",
    "dia": "DIA RSI(21) lookback 30 works in range-bound markets",
    "para": "Relative strength index timing on the S&P 500 ETF with a two-month window",
    "vix": "When the VIX term structure inverts, reduce gross exposure to US equities",
    "gold": "Gold rallies when real yields fall and the dollar weakens",
}


@pytest.mark.slow
def test_tickers_and_parameters_are_found_first_where_dense_search_misses(data_dir: Path, real_embeddings) -> None:
    with Memory.open(data_dir, embeddings=real_embeddings) as mem:
        ids = {key: mem.store_research_finding(text, source="desk").id for key, text in TRADING.items()}
        store = mem.store
        assert isinstance(store.ranking, HybridRanking)  # Memory.open's default
        for query in ["SPY RSI(14) lookback 60", "RSI(14) on SPY with a 60 lookback"]:
            ranking, store.ranking = store.ranking, None
            dense = _keys(store, ("research",), query, limit=3)
            store.ranking = ranking
            assert dense[0] == ids["dia"]  # the small model blurs tickers and numbers: another ETF's RSI wins
            assert _keys(store, ("research",), query, limit=3)[0] == ids["target"]
            (best, *_rest) = mem.query_research_findings(query)
            assert best.id == ids["target"] and best.score > 0.7


# ------------------------------------------------------- decay and reinforcement


@pytest.fixture
def clocked(store: ChromaStore) -> ChromaStore:
    # The mechanics at TemporalConfig's own rates and the earlier share (the ranking's defaults are chosen elsewhere).
    store.ranking = HybridRanking(clock=lambda: NOW, temporal=TemporalConfig(), temporal_share=0.1)
    return store


def _twins(store: ChromaStore, emb, *ages_and_accesses: tuple[float, int], ns: str = "lessons") -> None:
    """Equal memories (same text, so same vector and keyword score) of the given ages (days) and accesses."""
    text = "cut position size when volatility doubles"
    field = "lesson" if ns == "lessons" else "content"
    store.items.restore_items(
        [
            old_item(emb, (ns, f"d{i}"), f"m{i}", {field: text}, days=days, access_count=n, now=NOW)
            for i, (days, n) in enumerate(ages_and_accesses)
        ]
    )


def test_older_of_two_equal_memories_ranks_lower_by_the_configured_rate(clocked: ChromaStore, fake_embeddings) -> None:
    _twins(clocked, fake_embeddings, (5, 0), (1, 0))
    hits = clocked.search(("lessons",), query="volatility doubles", refresh_ttl=False)
    assert [h.key for h in hits] == ["m1", "m0"]
    relevance = hits[0].score / calculate_final_score(1.0, age_hours=24)
    for hit, days in zip(hits, (1, 5), strict=False):  # lessons are episodic: 0.01 per hour
        kept = math.exp(-0.01 * 24 * days)
        assert hit.score == pytest.approx(relevance * (0.9 + 0.1 * kept))
    # A faster configured rate widens the gap by exactly that rate.
    clocked.ranking = HybridRanking(
        clock=lambda: NOW, temporal=TemporalConfig(episodic_memory_decay=0.05), temporal_share=0.1
    )
    fast = clocked.search(("lessons",), query="volatility doubles", refresh_ttl=False)
    ratio = (0.9 + 0.1 * math.exp(-0.05 * 24 * 5)) / (0.9 + 0.1 * math.exp(-0.05 * 24))
    assert fast[1].score / fast[0].score == pytest.approx(ratio)
    # Semantic memories (research findings) decay slower than episodic ones (lessons) of the same age.
    _twins(clocked, fake_embeddings, (5, 0), ns="research")
    clocked.ranking = HybridRanking(clock=lambda: NOW)
    (finding,) = clocked.search(("research",), query="volatility doubles", refresh_ttl=False)
    (_young, lesson) = clocked.search(("lessons",), query="volatility doubles", refresh_ttl=False)
    assert finding.score > lesson.score
    # Decay off: equal scores, ties by insertion.
    clocked.ranking = NO_DECAY
    a, b = clocked.search(("lessons",), query="volatility doubles", refresh_ttl=False)
    assert a.score == b.score


def test_reads_reinforce_a_memory_until_the_cap(clocked: ChromaStore, fake_embeddings) -> None:
    _twins(clocked, fake_embeddings, (10, 0), (10, 0))
    assert _keys(clocked, ("lessons",), "volatility doubles") == ["m0", "m1"]
    for _ in range(3):  # real reads of m1 (get and search count), applied by the access flush
        assert clocked.get(("lessons", "d1"), "m1") is not None
    clocked.flush_access()
    assert clocked.items.get(("lessons", "d1"), "m1").access_count == 3
    assert _keys(clocked, ("lessons",), "volatility doubles") == ["m1", "m0"]

    clocked.items.delete_items("lessons", list(clocked.items.iter_items("lessons")))
    # 10 days old: weight 0.091; the multiplier 1 + 0.1 n reaches its cap of 5 at n = 40.
    _twins(clocked, fake_embeddings, (10, 20), (10, 40), (10, 4000))
    hits = clocked.search(("lessons",), query="volatility doubles", refresh_ttl=False)
    by_key = {h.key: h.score for h in hits}
    assert by_key["m1"] > by_key["m0"]
    assert by_key["m1"] == by_key["m2"]  # capped
    w = math.exp(-0.01 * 240)
    assert by_key["m1"] / by_key["m0"] == pytest.approx((0.9 + 0.1 * w * 5) / (0.9 + 0.1 * w * 3))


# ---------------------------------------------------------- parity with dense


WORDS = ["momentum", "carry", "value", "gold", "oil", "rates", "credit", "yen"]


@pytest.mark.parametrize("exact_max", [2000, 5], ids=["exact", "hnsw"])
def test_without_keywords_and_decay_the_ranking_is_the_dense_ranking(store: ChromaStore, exact_max: int) -> None:
    store.planner.exact_max = exact_max
    for i in range(60):
        text = " ".join(WORDS[(i * j) % len(WORDS)] for j in range(1, 4))
        store.put(("notes", f"u{i % 3}"), f"k{i}", {"text": f"{text} {i}", "n": i % 4, "kind": "a" if i % 2 else "b"})
    # Both searches of a pair must see one index: with the catalog on a server it catches up in a thread.
    assert store.wait_for_index(60)
    cases = [
        (("notes",), {}),
        (("notes", "u1"), {}),
        (("notes",), {"filter": {"kind": "a"}}),
        (("notes",), {"filter": {"n": {"$ne": 2}}, "limit": 7, "offset": 3}),
        ((), {"limit": 25}),
    ]
    for prefix, kw in cases:
        for query in ["momentum carry", "gold oil 17", "nothing in common"]:
            store.ranking = None
            dense = store.search(prefix, query=query, refresh_ttl=False, **kw)
            store.ranking = HybridRanking(keyword_weight=0.0, temporal=None)
            hybrid = store.search(prefix, query=query, refresh_ttl=False, **kw)
            assert [h.key for h in hybrid] == [h.key for h in dense], (prefix, kw, query)
            assert [h.score for h in hybrid] == [max(h.score, 0.0) for h in dense]
    # With keywords on the same searches fuse: every score in [0, 1], at least the cosine.
    store.ranking = NO_DECAY
    for h in store.search(("notes",), query="momentum carry", limit=30, refresh_ttl=False):
        assert 0.0 <= h.score <= 1.0


@pytest.mark.parametrize("exact_max", [2000, 5], ids=["exact", "hnsw"])
def test_keyword_candidates_respect_prefix_filter_and_expiry(data_dir: Path, fake_embeddings, exact_max: int) -> None:
    store = ChromaStore(
        data_dir=data_dir,
        index={"dims": FAKE_DIMS, "embed": fake_embeddings},
        ttl={"omit_expired": True},
        ranking=NO_DECAY,
    )
    store.planner.exact_max = exact_max
    try:
        store.put(("notes", "a"), "in", {"text": "zebra crossing", "kind": "x"})
        store.put(("notes", "b"), "other-ns", {"text": "zebra crossing", "kind": "x"})
        store.put(("notes", "a"), "other-kind", {"text": "zebra crossing", "kind": "y"})
        store.put(("notes", "a"), "expired", {"text": "zebra crossing", "kind": "x"}, ttl=1.0)
        with store.catalog.write() as conn:
            conn.execute(both(conn, "UPDATE items SET expires_at = ? WHERE key = 'expired'"), (time.time() - 60,))
        for i in range(30):  # vector candidates that share no word with the query
            store.put(("notes", "a"), f"f{i}", {"text": f"filler {i}", "kind": "x"})
        assert _keys(store, ("notes", "a"), "zebra", filter={"kind": {"$ne": "y"}}, limit=1) == ["in"]
        # An indexed filter: the keyword candidates' filter-index check is made as their items are read.
        assert _keys(store, ("notes", "a"), "zebra", filter={"kind": "x"}, limit=1) == ["in"]
        assert _keys(store, ("notes",), "zebra", filter={"kind": "y"}, limit=1) == ["other-kind"]
        assert set(_keys(store, ("notes",), "zebra", limit=3)) == {"in", "other-ns", "other-kind"}
        assert "hybrid" in str(store.explain(("notes",), query="zebra"))
        assert store.explain(("notes",), query="zebra").strategy == ("hnsw" if exact_max == 5 else "exact")
    finally:
        store.close()


# ------------------------------------------------------------ relevance rule


class _Angles(Embeddings):
    """Vectors at chosen cosines to the query ``"zebra"``: the relevance rule, with real numbers."""

    COS = {"alpha note": 0.9, "beta note": 0.35, "gamma note": 0.2, "delta note on zebra": 0.2}
    dims = 4

    def _vec(self, text: str) -> list[float]:
        c = 1.0 if text == "zebra" else self.COS[text]
        side = [0.0, 0.0, 0.0]
        side[len(text) % 3] = math.sqrt(1 - c * c)
        return [c, *side]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


class _S(TypedDict, total=False):
    query: str
    hits: list


def test_results_under_30_percent_are_dropped_by_tools_nodes_and_the_research_api(data_dir: Path) -> None:
    with Memory.open(data_dir, embeddings=_Angles()) as mem:
        for text in _Angles.COS:
            mem.store_research_finding(text)
            mem.store.put(("memories", "u1"), text, {"text": text}, index=["text"])
        for ranking, want in [
            (None, {"alpha note", "beta note"}),
            (NO_DECAY, {"alpha note", "beta note", "delta note on zebra"}),
        ]:
            mem.store.ranking = ranking  # plain cosine: the relevance percentage; hybrid: a keyword match lifts delta
            assert {h.record.content for h in mem.query_research_findings("zebra", k=10)} == want
            tool = create_recall_tool(("memories", "{user_id}"), store=mem.store, k=10)
            got = json.loads(tool.invoke({"query": "zebra"}, {"configurable": {"user_id": "u1"}}))
            assert {h["key"] for h in got} == want and all(h["score"] >= 0.3 for h in got)
            b = StateGraph(_S)
            b.add_node("recall", recall_node(("memories", "u1"), output_key="hits", k=10))
            b.add_edge(START, "recall")
            b.add_edge("recall", END)
            hits = b.compile(store=mem.store).invoke({"query": "zebra"})["hits"]
            assert {h["key"] for h in hits} == want
            # None keeps everything, scores and all.
            assert len(mem.query_research_findings("zebra", k=10, min_relevance=None)) == 4
        mem.store.ranking = None
        scores = {h.record.content: h.score for h in mem.query_research_findings("zebra", k=10, min_relevance=None)}
        assert scores["beta note"] == pytest.approx(0.35) and scores["gamma note"] == pytest.approx(0.2)


# ------------------------------------------------------------------ options


def test_ranking_option_is_validated(data_dir: Path, fake_embeddings) -> None:
    with pytest.raises(ConfigError, match="HybridRanking"):
        ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings}, ranking="hybrid")  # type: ignore[arg-type]
    for bad in [
        {"keyword_weight": 1.5},
        {"length_norm": -0.1},
        {"temporal_share": 2},
        {"candidates": 0},
        {"temporal": "fast"},
        {"keyword_scale": "max"},
    ]:
        with pytest.raises(ValueError):
            HybridRanking(**bad)  # type: ignore[arg-type]


# ------------------------------------------------------- keyword evidence scale


CHAT = [
    "Caroline: I went to a support group yesterday and it was so powerful",
    "Caroline: I'm researching adoption agencies, I want to give a kid a loving home",
    "Caroline: my painting of a lake at sunrise is finished",
    "Caroline: running in the morning clears my head",
    "Melanie: we took the kids camping in the mountains last weekend",
    "Melanie: I signed up for a pottery class, it is so relaxing",
    "Melanie: my son loves dinosaurs, we went to the museum",
    "Melanie: I read a book about mindfulness on the train",
]


def test_a_memory_sharing_only_a_common_name_falls_under_the_relevance_threshold(data_dir: Path) -> None:
    # Without a calibrated scale the best keyword match always got the full boost: these memories scored
    # 0.6 with cosine 0, only because no memory said anything about politics.
    store = ChromaStore(data_dir=data_dir, index={"dims": 4, "embed": Unrelated()}, ranking=NO_DECAY)
    try:
        for i, text in enumerate(CHAT):
            store.put(("chat",), f"t{i}", {"text": text})
        hits = store.search(("chat",), query="What does Caroline think about politics?", refresh_ttl=False)
        by_key = {h.key: h.score for h in hits}
        assert {"t0", "t1", "t2", "t3"} <= set(by_key)  # found by the name, and ranked first ...
        assert all(0.0 < by_key[k] < 0.3 for k in ("t0", "t1", "t2", "t3"))  # ... but under the 30 % rule
        store.ranking = HybridRanking(keyword_weight=0.6, keyword_scale="best", temporal=None)  # the scale before
        before = store.search(("chat",), query="What does Caroline think about politics?", refresh_ttl=False)
        assert before[0].score == pytest.approx(0.6) and all(h.score >= 0.3 for h in before[:4])
        store.ranking = NO_DECAY
        store.put(("chat",), "politics", {"text": "Caroline: politics matters to me, I think we must vote"})
        top = store.search(("chat",), query="What does Caroline think about politics?", refresh_ttl=False)[0]
        assert top.key == "politics" and top.score >= 0.3  # every query word: the rule lets it through
        # A query of one rare word fully matched gets (almost) the whole keyword weight, as before.
        (hit,) = store.search(("chat",), query="pottery", refresh_ttl=False, limit=1)
        assert hit.key == "t5" and hit.score > 0.5
    finally:
        store.close()


def test_keyword_evidence_is_the_share_of_the_query_idf_mass(store: ChromaStore) -> None:
    from langgraph_memory.catalog import keywords as _keywords

    for i, text in enumerate(CHAT):
        store.put(("chat",), f"t{i}", {"text": text})
    with store.catalog.read() as conn:
        name_only = _keywords.match(conn, "Caroline politics")
        both = _keywords.match(conn, "Caroline pottery")
    # "politics" is in no memory: it still counts in the query's mass, so "Caroline" alone is a small share.
    assert name_only.mass > both.mass > 0
    assert name_only.evidence(name_only.scores[0]) < 0.5 * both.evidence(both.scores[0])
    assert 0.0 <= min(both.evidence(s) for s in both.scores) and max(both.evidence(s) for s in both.scores) <= 1.0
    assert _keywords.KeywordMatches(name_only.ids[:0], name_only.scores[:0]).evidence(1.0) == 0.0


def test_keyword_candidates_items_are_read_with_the_filter_index_check(store: ChromaStore) -> None:
    from langgraph_memory.catalog import item_rows as _item_rows
    from langgraph_memory.catalog import scope as _scope
    from langgraph_memory.catalog.fields import compile_filter

    store.put(("n",), "a", {"text": "zebra one", "kind": "k", "n": 1})
    store.put(("n",), "b", {"text": "zebra two", "kind": "j", "n": 2})
    store.put(("n",), "c", {"text": "zebra three", "n": 3})
    with store.catalog.read() as conn:
        found = _item_rows.get_items(conn, [(("n",), k) for k in "abc"])
        ids = {key: found[(("n",), key)].id for key in "abc"}
        every = [i for i in ids.values() if i is not None]
        kind_k = _scope.passing_items(conn, compile_filter({"kind": "k"})[0], every)
        two = _scope.passing_items(conn, compile_filter({"kind": "k", "n": 1})[0], [*every, *every])
        none = _scope.passing_items(conn, compile_filter({"kind": "k", "n": 2})[0], every)
        unfiltered = _scope.passing_items(conn, [], every)
        by_id = _item_rows.get_by_ids(conn, every)
    assert list(kind_k) == [ids["a"]] and kind_k[ids["a"]].value == {"text": "zebra one", "kind": "k", "n": 1}
    assert list(two) == [ids["a"]] and none == {}
    assert unfiltered == by_id and len(by_id) == 3


class _Cosines(Embeddings):
    """Vectors at a chosen cosine to every query, by a word in the text (queries hold none of them)."""

    COS = {"near": 0.9, "far": 0.0, "match": 0.85}
    dims = 4

    def _vec(self, text: str) -> list[float]:
        c = next((cos for word, cos in self.COS.items() if word in text), 1.0)
        return [c, math.sqrt(1 - c * c), 0.0, 0.0]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


@pytest.mark.parametrize("exact_max", [2000, 5], ids=["exact", "hnsw"])
@pytest.mark.parametrize("case", ["plain", "filtered", "expired left out"])
def test_keyword_candidates_that_cannot_reach_the_best_are_not_read_or_scored(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, exact_max: int, case: str
) -> None:
    import langgraph_memory.search.hybrid as _hybrid
    from langgraph_memory.catalog import item_rows as _item_rows

    ttl = {"omit_expired": True} if case == "expired left out" else None
    # Without neighbours: with them, a candidate under the bar is read to learn whether it is a conversation
    # turn (whose neighbours could raise it), though still not scored when it is not one.
    ranking = dataclasses.replace(NO_DECAY, neighbours=0)
    store = ChromaStore(data_dir=data_dir, index={"dims": 4, "embed": _Cosines()}, ranking=ranking, ttl=ttl)
    store.planner.exact_max = exact_max
    search = {"filter": {"kind": "note"}} if case == "filtered" else {}
    try:
        for i in range(30):  # the vector candidates: close, no query word
            store.put(("notes",), f"near{i}", {"text": f"near note {i}", "kind": "note"})
        for i in range(10):  # far, and holding one query word of four: they cannot reach the best three
            store.put(("notes",), f"far{i}", {"text": f"far zebra {i}", "kind": "note"})
        store.put(("notes",), "match", {"text": "match zebra quagga okapi tapir", "kind": "note"})
        assert store.wait_for_index(60)
        read: list[int] = []
        scored: list[int] = []
        get_by_ids, explain = _hybrid._item_rows.get_by_ids, _hybrid.explain_candidates

        def spy_read(conn, item_ids):
            read.extend(item_ids)
            return get_by_ids(conn, item_ids)

        def spy_explain(cands, ranking, **kw):
            scored.extend(c.item.id for c in cands)
            return explain(cands, ranking, **kw)

        items_of = _hybrid.ScopeScorer.items

        def spy_items(self, item_ids):  # read with the filter index check
            read.extend(item_ids)
            return items_of(self, item_ids)

        monkeypatch.setattr(_hybrid._item_rows, "get_by_ids", spy_read)
        monkeypatch.setattr(_hybrid.ScopeScorer, "items", spy_items)
        monkeypatch.setattr(_hybrid, "explain_candidates", spy_explain)
        hits = store.search(("notes",), query="zebra quagga okapi tapir", limit=3, refresh_ttl=False, **search)
        assert hits[0].key == "match" and all(h.key.startswith("near") for h in hits[1:])
        with store.catalog.read() as conn:
            far = {it.id for it in _item_rows.get_items(conn, [(("notes",), f"far{i}") for i in range(10)]).values()}
        assert len(far) == 10
        assert not far & set(scored)  # below the bar: not scored
        if exact_max == 2000 or case != "expired left out":
            # Not read either: an exact plan's walk never needs them, and an hnsw plan's knows from the
            # filter index alone which of them count.
            assert not far & set(read)
        else:
            # What an hnsw plan's walk leaves out is decided on each item: it reads them to know where it ends.
            assert far <= set(read)
        # The same results as when every keyword candidate is read and scored.
        monkeypatch.setattr(_hybrid.Bar, "of", classmethod(lambda cls, *a, **kw: None))
        every = store.search(("notes",), query="zebra quagga okapi tapir", limit=3, refresh_ttl=False, **search)
        assert [(h.key, h.score) for h in every] == [(h.key, h.score) for h in hits]
        assert far <= set(scored)
        monkeypatch.undo()
        scored.clear()
        monkeypatch.setattr(_hybrid, "explain_candidates", spy_explain)
        store.ranking = NO_DECAY  # neighbours on: the same results, and the far notes (not turns) still not scored
        assert [(h.key, h.score) for h in store.search(("notes",), query="zebra quagga okapi tapir", limit=3,
                                                       refresh_ttl=False, **search)] == [(h.key, h.score) for h in hits]  # fmt: skip
        assert not far & set(scored)
    finally:
        store.close()
