"""Cached posting lists: keyword scores and hybrid rankings identical to reading every list, across writes."""

from __future__ import annotations

import math
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from langgraph_memory.catalog import keywords as _keywords
from langgraph_memory.catalog.keyword_cache import PostingCache
from langgraph_memory.search.ranking import HybridRanking
from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS

# Words whose porter stem is no other word's and is the word itself, so a token scan is the true answer.
COMMON = ["spy", "gold", "oil", "bond", "yen", "vix"]  # each in most items
RARE = ["qqq", "macd", "carry", "swap", "iwm", "dia", "ether", "copper"]
QUERIES = [
    "spy gold oil bond yen",
    "spy gold",
    "vix",
    "oil yen qqq",
    "macd carry spy",
    "copper ether dia iwm bond",
    "nothing shared",
]


def _text(rng: random.Random, i: int) -> str:
    words = [w for w in COMMON if rng.random() < 0.7] + [w for w in RARE if rng.random() < 0.08]
    words += ["filler"] * rng.randint(0, 6)  # lengths differ, so the length norm matters
    rng.shuffle(words)
    return " ".join(words) + f" n{i}"


def _fill(store: ChromaStore, n: int, seed: int = 0) -> dict[str, str]:
    rng = random.Random(seed)
    texts = {f"k{i}": _text(rng, i) for i in range(n)}
    for i, (key, text) in enumerate(texts.items()):
        store.put(("notes", f"u{i % 3}"), key, {"text": text, "kind": "a" if i % 2 else "b"})
    return texts


def _brute_bm25(texts: dict[int, str], query: str, b: float = _keywords.LENGTH_NORM) -> dict[int, float]:
    """BM25 with each term counted once per item, from the texts themselves (the exhaustive answer)."""
    terms = _keywords.query_terms(query)
    toks = {i: re.findall(r"[^\W_]+", t.lower()) for i, t in texts.items()}
    docs = len(texts)
    avg = sum(len(t) for t in toks.values()) / docs
    out: dict[int, float] = {}
    for term in terms:
        holders = [i for i, t in toks.items() if term in t]
        if not holders:
            continue
        idf = math.log(1 + (docs - len(holders) + 0.5) / (len(holders) + 0.5))
        for i in holders:
            rel = max(min(len(toks[i]), 1023), 1) / avg
            out[i] = out.get(i, 0.0) + idf * 2.2 / (1 + 1.2 * (1 - b + b * rel))
    return out


def _item_texts(store: ChromaStore) -> dict[int, str]:
    return {it.id: it.value["text"] for it in store.items.iter_items("memories") if it.id is not None and it.n_vectors}


def _check_matches(store: ChromaStore, cache: PostingCache) -> None:
    texts = _item_texts(store)
    with store.catalog.read() as conn:
        for query in QUERIES:
            plain = _keywords.match(conn, query)
            for _ in range(2):  # the first read fills the cache, the second is served from it
                cached = _keywords.match(conn, query, cache=cache)
                assert cached.ids.tolist() == plain.ids.tolist(), query
                assert cached.scores.tolist() == plain.scores.tolist(), query
                assert cached.mass == plain.mass
            want = _brute_bm25(texts, query)
            assert set(cached.ids.tolist()) == set(want), query
            got = dict(zip(cached.ids.tolist(), cached.scores.tolist(), strict=True))
            assert all(math.isclose(got[i], s, rel_tol=1e-9) for i, s in want.items()), query
            # The top 20 of the exhaustive computation, ties by id as the store breaks them.
            top = sorted(want, key=lambda i: (-want[i], i))[:20]
            assert cached.best(20).tolist() == [i for i in top if want[i] > 0], query


def _rankings(store: ChromaStore) -> list[list[tuple[str, float]]]:
    out = []
    for query in QUERIES:
        for prefix, kw in [(("notes",), {}), (("notes", "u1"), {}), (("notes",), {"filter": {"kind": "a"}})]:
            hits = store.search(prefix, query=query, limit=10, refresh_ttl=False, **kw)
            out.append([(h.key, h.score) for h in hits])
    return out


@pytest.mark.parametrize("exact_max", [5000, 5], ids=["exact", "hnsw"])
def test_cached_search_equals_reading_every_list_where_common_words_dominate(
    data_dir: Path, fake_embeddings, exact_max: int
) -> None:
    store = ChromaStore(
        data_dir=data_dir,
        index={"dims": FAKE_DIMS, "embed": fake_embeddings, "fields": ["text"]},
        ranking=HybridRanking(temporal=None),
    )
    store.planner.exact_max = exact_max
    try:
        _fill(store, 160)
        assert store.wait_for_index(60)
        cache = PostingCache()
        _check_matches(store, cache)
        assert len(cache) > 0
        store.hybrid.postings = None
        want = _rankings(store)
        store.hybrid.postings = PostingCache()
        assert _rankings(store) == want  # fills the cache
        assert len(store.hybrid.postings) >= len(COMMON)
        assert _rankings(store) == want  # served from it
    finally:
        store.close()


def test_every_kind_of_write_between_searches_is_seen(data_dir: Path, fake_embeddings) -> None:
    store = ChromaStore(
        data_dir=data_dir,
        index={"dims": FAKE_DIMS, "embed": fake_embeddings, "fields": ["text"]},
        ranking=HybridRanking(temporal=None),
    )
    try:
        texts = _fill(store, 60, seed=1)
        cache = PostingCache()

        def check() -> None:
            _check_matches(store, cache)
            assert store.wait_for_index(60)
            store.hybrid.postings = None
            want = _rankings(store)
            store.hybrid.postings = cache_store
            assert _rankings(store) == want

        cache_store = PostingCache()
        store.hybrid.postings = cache_store
        check()
        store.put(("notes", "u0"), "new", {"text": "spy gold oil bond yen vix qqq", "kind": "a"})
        check()
        # Same length, other words: the index totals do not move, the counter does.
        store.put(("notes", "u0"), "k3", {"text": " ".join(["copper"] * len(texts["k3"].split())), "kind": "a"})
        check()
        store.delete(("notes", "u1"), "k4")
        store.put(("notes", "u2"), "k5", {"text": "not indexed spy"}, index=False)
        check()
        keys = [h.key for h in store.search(("notes",), query="spy gold oil bond yen vix qqq", limit=3)]
        assert keys[0] == "new"
    finally:
        store.close()


def test_a_cache_keeps_at_most_its_postings_and_drops_everything_when_the_stamp_moves() -> None:
    cache = PostingCache(max_postings=5)
    assert cache.get(("1", 3, 9), "a", cap=10) is None  # a search reads first: the cache takes its stamp
    cache.put(("1", 3, 9), "a", 3, np.arange(3))
    cache.put(("1", 3, 9), "b", 2, np.arange(2))
    cache.put(("1", 3, 9), "c", 2, np.arange(2))  # over 5: "a", the least recently used, goes
    assert cache.get(("1", 3, 9), "a", cap=10) is None
    assert cache.get(("1", 3, 9), "b", cap=10) is not None
    cache.put(("1", 3, 9), "long", 50, None)  # only its count: above the cap it was read with
    long = cache.get(("1", 3, 9), "long", cap=10)
    assert long is not None and (long.n, long.rowids) == (50, None)
    assert cache.get(("1", 3, 9), "long", cap=100) is None  # a larger cap needs the list itself
    assert cache.get(("2", 3, 9), "b", cap=10) is None
    cache.put(("1", 3, 9), "b", 2, np.arange(2))  # read before the change: not kept
    assert len(cache) == 0


@pytest.mark.parametrize("seed", range(6))
def test_matches_by_id_array_pick_the_same_best_as_the_listed_matches(seed: int) -> None:
    # Scores by item id as match() sums them for a large store: most ids hold a common word, scores tie
    # often (few distinct values), and the best few are rare, so the sampled threshold is put to the test.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(9_000, 120_000))
    dense = np.where(rng.random(n) < 0.55, rng.integers(1, 6, n) * 0.75, 0.0)
    dense[rng.integers(0, n, 3)] = 9.0  # a handful of strong matches, fewer than most k
    listed_ids = np.flatnonzero(dense)
    listed = _keywords.KeywordMatches(listed_ids, dense[listed_ids], 4.0, by_id=True)
    by_array = _keywords.KeywordMatches.from_dense(dense, 4.0)
    assert len(by_array) == len(listed)
    for k in (1, 2, 5, 20, 21, 100, 420, 5_000, n):
        assert by_array.best(k).tolist() == listed.best(k).tolist(), k
    probe = [-1, 0, 1, int(listed_ids[0]), int(listed_ids[-1]), n - 1, n, n + 50]
    assert by_array.scores_of(probe) == listed.scores_of(probe)
    in_scope = set(rng.choice(listed_ids, len(listed_ids) // 10, replace=False).tolist())
    for limit in (1, 20, 300):
        fresh = _keywords.KeywordMatches.from_dense(dense, 4.0)
        assert fresh.walk(lambda ids: in_scope & set(ids), limit) == listed.walk(lambda ids: in_scope & set(ids), limit)
    assert by_array.ids_by_id().tolist() == listed_ids.tolist()


def test_a_write_from_another_process_is_seen_by_the_next_search(data_dir: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    dims = 32
    helper = Path(__file__).parent / "helpers" / "store_writer.py"
    store = ChromaStore(data_dir=data_dir, index={"dims": dims, "embed": DeterministicFakeEmbedding(size=dims)})
    store.ranking = HybridRanking(temporal=None)
    try:
        for i in range(30):
            store.put(("research", "p"), f"p{i}", {"content": f"spy finding {i}", "n": i})
        query = "alpha finding"
        cache = store.hybrid.postings
        assert cache is not None
        with store.catalog.read() as conn:
            before = _keywords.match(conn, query, cache=cache)
        assert len(before) == 30 and len(cache) == 2  # "alpha" (no posting) and "finding", cached
        env = dict(os.environ)
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
        done = subprocess.run(
            [sys.executable, str(helper), str(data_dir), "alpha", "5", str(dims)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        with store.catalog.read() as conn:
            after = _keywords.match(conn, query, cache=cache)
            fresh = _keywords.match(conn, query)
        assert len(after) == 35
        assert after.ids.tolist() == fresh.ids.tolist() and after.scores.tolist() == fresh.scores.tolist()
        keys = [h.key for h in store.search(("research",), query=query, limit=5, refresh_ttl=False)]
        assert all(k.startswith("alpha-") for k in keys), keys
    finally:
        store.close()


def test_a_cache_filled_inside_a_write_that_rolls_back_is_never_used(data_dir: Path, fake_embeddings) -> None:
    store = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings, "fields": ["text"]})
    try:
        store.put(("notes",), "x", {"text": "spy gold oil"})
        store.put(("notes",), "y", {"text": "bond yen vix"})
        store.put(("notes",), "z", {"text": "spy spy spy"})
        ids = {it.value["text"]: it.id for it in store.items.iter_items("memories")}
        cache = PostingCache()

        class _Abort(Exception):
            pass

        # Inside a write: "x" loses "spy" (same length, so the totals do not move), and a search caches that.
        with pytest.raises(_Abort), store.catalog.write() as conn:
            _keywords.unindex_items(conn, [ids["spy gold oil"]])
            _keywords.index_items(conn, [(ids["spy gold oil"], "copper gold oil")])
            assert len(_keywords.match(conn, "spy", cache=cache)) == 1
            raise _Abort
        # Another write with the same shape commits (two index changes, same totals).
        store.put(("notes",), "y", {"text": "bond yen dia"})
        with store.catalog.read() as conn:
            assert len(_keywords.match(conn, "spy")) == 2
            assert len(_keywords.match(conn, "spy", cache=cache)) == 2
    finally:
        store.close()
