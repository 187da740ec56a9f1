"""ChromaStore against a real embedded Chroma: every op, sync and async."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from langgraph_memory.errors import FilterError, NamespaceError, ValidationError
from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS


class CountingEmbeddings(Embeddings):
    """Fake embeddings that count how many texts reached the 'model'."""

    def __init__(self, size: int = FAKE_DIMS, delay: float = 0.0) -> None:
        self.inner = DeterministicFakeEmbedding(size=size)
        self.model_name = f"counting-{size}"
        self.calls = 0
        self.texts = 0
        self.delay = delay
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            self.calls += 1
            self.texts += len(texts)
        if self.delay:
            time.sleep(self.delay)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def _cos(a: list[float], b: list[float]) -> float:
    x, y = np.asarray(a), np.asarray(b)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


# ---------------------------------------------------------------- get / put


def test_put_get_roundtrip_and_missing(store: ChromaStore) -> None:
    value = {"text": "hello", "nested": {"a": [1, 2, {"b": None}]}, "flag": True}
    store.put(("users", "u1"), "k1", value)
    item = store.get(("users", "u1"), "k1")
    assert item is not None
    assert item.value == value
    assert item.namespace == ("users", "u1")
    assert item.key == "k1"
    assert store.get(("users", "u1"), "nope") is None
    assert store.get(("users", "u2"), "k1") is None
    assert store.get(("research",), "k1") is None  # collection never created


def test_update_keeps_created_at_and_moves_updated_at(store: ChromaStore) -> None:
    store.put(("docs",), "k", {"v": 1, "old_field": "x"})
    first = store.get(("docs",), "k")
    time.sleep(0.02)
    store.put(("docs",), "k", {"v": 2})
    second = store.get(("docs",), "k")
    assert second.value == {"v": 2}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    # The dropped field no longer matches a filter (Chroma merges metadata on upsert).
    assert store.search(("docs",), filter={"old_field": "x"}) == []


def test_delete_is_put_of_none(store: ChromaStore) -> None:
    store.put(("docs", "a"), "k", {"v": 1})
    store.put(("docs", "b"), "k", {"v": 1})
    store.delete(("docs", "a"), "k")
    assert store.get(("docs", "a"), "k") is None
    assert store.list_namespaces() == [("docs", "b")]
    store.batch([PutOp(("docs", "b"), "k", None)])
    assert store.list_namespaces() == []
    store.delete(("docs", "zzz"), "never-existed")  # deleting nothing is fine


def test_batch_results_in_op_order_and_reads_see_state_before_writes(store: ChromaStore) -> None:
    store.put(("a",), "x", {"n": 1})
    results = store.batch(
        [
            PutOp(("a",), "y", {"n": 2}),
            GetOp(("a",), "x"),
            GetOp(("a",), "y"),
            SearchOp(("a",), filter={"n": 1}),
            ListNamespacesOp(),
            PutOp(("a",), "y", {"n": 3}),
        ]
    )
    assert results[0] is None and results[5] is None
    assert results[1].value == {"n": 1}
    assert results[2] is None  # the put in this batch is not visible to its reads
    assert [r.key for r in results[3]] == ["x"]
    assert results[4] == [("a",)]
    assert store.get(("a",), "y").value == {"n": 3}  # last put of a key in a batch wins


async def test_abatch_matches_batch(store: ChromaStore) -> None:
    await store.aput(("users", "u1"), "k1", {"text": "alpha", "n": 1})
    await store.aput(("users", "u2"), "k2", {"text": "beta", "n": 2})
    ops = [
        GetOp(("users", "u1"), "k1"),
        SearchOp(("users",), filter={"n": {"$gte": 2}}),
        SearchOp(("users",), query="alpha", limit=1),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("users",)),)),
    ]
    sync = store.batch(ops)
    asy = await store.abatch(ops)
    assert [r.value for r in [sync[0], asy[0]]] == [{"text": "alpha", "n": 1}] * 2
    assert [i.key for i in sync[1]] == [i.key for i in asy[1]] == ["k2"]
    assert [i.key for i in sync[2]] == [i.key for i in asy[2]]
    assert sync[3] == asy[3] == [("users", "u1"), ("users", "u2")]
    assert (await store.aget(("users", "u1"), "k1")).value["text"] == "alpha"
    await store.adelete(("users", "u1"), "k1")
    assert await store.aget(("users", "u1"), "k1") is None
    assert await store.alist_namespaces(prefix=("users",)) == [("users", "u2")]
    assert [i.key for i in await store.asearch(("users",), query="beta")] == ["k2"]


async def test_abatch_does_not_block_the_event_loop(data_dir: Path) -> None:
    slow = CountingEmbeddings(delay=0.5)
    s = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": slow})
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    await s.aput(("docs",), "k", {"text": "slow to embed"})
    done.set()
    await task
    s.close()
    # A blocked loop would have ticked once or twice during the 0.5 s embedding.
    assert ticks >= 10


# -------------------------------------------------------------- namespaces


@pytest.mark.parametrize(
    "namespace",
    [(), ("a.b",), ("",), ("langgraph", "x"), ("ok", 3)],
)
def test_invalid_namespaces_are_refused(store: ChromaStore, namespace: tuple) -> None:
    with pytest.raises(NamespaceError) as info:
        store.put(namespace, "k", {"v": 1})
    assert isinstance(info.value, InvalidNamespaceError)
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(namespace, "k", {"v": 1})])
    assert store.list_namespaces() == []


def test_list_namespaces_conditions(store: ChromaStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x", "c"), ("b", "b"), ("research",), ("research", "desk1")]:
        store.put(ns, "k", {"content": "c", "v": 1})
    assert store.list_namespaces() == sorted(
        [("a", "b", "c"), ("a", "b", "d"), ("a", "x", "c"), ("b", "b"), ("research",), ("research", "desk1")]
    )
    assert store.list_namespaces(prefix=("a",)) == [("a", "b", "c"), ("a", "b", "d"), ("a", "x", "c")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("a", "x", "c")]
    assert store.list_namespaces(prefix=("a", "*", "c")) == [("a", "b", "c"), ("a", "x", "c")]
    assert store.list_namespaces(prefix=("a",), suffix=("d",)) == [("a", "b", "d")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("b",), ("research",)]
    assert store.list_namespaces(prefix=("a",), max_depth=2) == [("a", "b"), ("a", "x")]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "x", "c")]


# ------------------------------------------------------------------ search


def _seed_docs(store: ChromaStore) -> None:
    rows = [
        ("a", {"kind": "x", "n": 1, "score": 0.5, "meta": {"lvl": 1, "tag": "p"}, "on": True}),
        ("b", {"kind": "y", "n": 2, "score": 1.5, "meta": {"lvl": 2, "tag": "q"}, "on": False}),
        ("c", {"kind": "x", "n": 3, "score": 2.5, "meta": {"lvl": 3, "tag": "p"}}),
        ("d", {"kind": "z", "n": 4, "score": 3.5, "list": [1, 2]}),
        ("e", {"kind": "x", "n": "4", "dotted.key": "v"}),
    ]
    for key, value in rows:
        store.put(("docs", "team"), key, value)
    store.put(("other",), "o", {"kind": "x", "n": 1})


@pytest.mark.parametrize(
    "flt, expected",
    [
        ({"kind": "x"}, {"a", "c", "e"}),
        ({"kind": {"$eq": "x"}}, {"a", "c", "e"}),
        ({"kind": {"$ne": "x"}}, {"b", "d"}),
        ({"n": {"$gt": 2}}, {"c", "d"}),
        ({"n": {"$gte": 2}}, {"b", "c", "d"}),
        ({"n": {"$lt": 2}}, {"a"}),
        ({"n": {"$lte": 2}}, {"a", "b"}),
        ({"n": {"$gt": 1, "$lt": 4}}, {"b", "c"}),
        ({"n": 4}, {"d"}),  # "4" (a string) is not 4
        ({"n": {"$ne": 4}}, {"a", "b", "c", "e"}),
        ({"score": {"$gte": 1.5}}, {"b", "c", "d"}),
        ({"meta": {"lvl": {"$gte": 2}}}, {"b", "c"}),
        ({"meta": {"tag": "p"}}, {"a", "c"}),
        ({"meta": {"tag": "p", "lvl": 3}}, {"c"}),
        ({"on": True}, {"a"}),
        ({"on": False}, {"b"}),
        ({"on": 1}, set()),  # booleans equal only booleans
        ({"list": [1, 2]}, {"d"}),
        ({"dotted.key": "v"}, {"e"}),
        ({"missing": None}, {"a", "b", "c", "d", "e"}),
        ({"kind": "x", "n": {"$lt": 3}}, {"a"}),
        ({"kind": {"$gt": "x"}}, {"b", "d"}),
    ],
)
def test_search_filters(store: ChromaStore, flt: dict, expected: set[str]) -> None:
    _seed_docs(store)
    got = store.search(("docs",), filter=flt, limit=50)
    assert {i.key for i in got} == expected
    assert all(i.score is None for i in got)


def test_unknown_filter_operator_is_a_typed_error(store: ChromaStore) -> None:
    _seed_docs(store)
    with pytest.raises(FilterError):
        store.search(("docs",), filter={"n": {"$in": [1, 2]}})
    with pytest.raises(FilterError):
        store.search(("docs",), filter={"n": {"$gt": [1]}})


def test_limit_and_offset_page_through_results(store: ChromaStore) -> None:
    for i in range(25):
        store.put(("pages",), f"k{i:02d}", {"i": i, "even": i % 2 == 0})
    pages = [store.search(("pages",), limit=10, offset=o) for o in (0, 10, 20)]
    keys = [i.key for page in pages for i in page]
    assert len(keys) == 25 and len(set(keys)) == 25
    # The same through a filter Chroma cannot evaluate (string range), applied afterwards.
    evens = [
        store.search(("pages",), filter={"even": True, "i": {"$gte": 0}}, limit=4, offset=o) for o in (0, 4, 8, 12)
    ]
    got = [i.value["i"] for page in evens for i in page]
    assert sorted(got) == list(range(0, 25, 2)) and len(got) == 13
    assert store.search(("pages",), limit=0) == []


def test_query_search_scores_are_cosine_similarity(
    store: ChromaStore, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    texts = {f"k{i}": f"document number {i} about topic {i % 3}" for i in range(12)}
    for key, text in texts.items():
        store.put(("docs",), key, {"text": text})
    query = "document number 4 about topic 1"
    results = store.search(("docs",), query=query, limit=5)
    qv = fake_embeddings.embed_query(query)
    # Default fields are ["$"]: the whole value serialised as JSON is embedded.
    import json

    expected = sorted(
        ((_cos(qv, fake_embeddings.embed_query(json.dumps({"text": t}))), k) for k, t in texts.items()), reverse=True
    )[:5]
    assert [r.key for r in results] == [k for _, k in expected]
    for r, (score, _) in zip(results, expected, strict=False):
        assert r.score == pytest.approx(score, abs=1e-5)
    page2 = store.search(("docs",), query=query, limit=5, offset=5)
    assert not {r.key for r in page2} & {r.key for r in results}


def test_query_search_with_filter_and_namespace_prefix(store: ChromaStore) -> None:
    for i in range(30):
        store.put(("docs", f"team{i % 3}"), f"k{i}", {"text": f"note {i}", "i": i})
    got = store.search(("docs", "team1"), query="note 4", filter={"i": {"$gte": 10}}, limit=50)
    assert {g.key for g in got} == {f"k{i}" for i in range(10, 30) if i % 3 == 1}
    assert all(g.namespace == ("docs", "team1") for g in got)
    scores = [g.score for g in got]
    assert scores == sorted(scores, reverse=True)


def test_items_without_vectors_fill_query_results(store: ChromaStore) -> None:
    store.put(("docs",), "vec", {"text": "has a vector"})
    store.put(("docs",), "novec", {"text": "no vector"}, index=False)
    got = store.search(("docs",), query="anything", limit=5)
    assert [g.key for g in got] == ["vec", "novec"]
    assert got[0].score is not None and got[1].score is None
    assert [g.key for g in store.search(("docs",), query="anything", limit=1)] == ["vec"]


def test_per_put_index_paths_and_multiple_vectors(data_dir: Path, fake_embeddings: DeterministicFakeEmbedding) -> None:
    s = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings, "fields": ["title", "body"]})
    s.put(("docs",), "multi", {"title": "alpha title", "body": "beta body"})
    s.put(("docs",), "other", {"title": "gamma", "body": "delta"})
    s.put(("docs",), "custom", {"title": "x", "summary": "epsilon summary"}, index=["summary"])
    col = s.collection("memories")
    assert col.count() == 5  # two records for each of the first two items, one for the third
    assert s.search(("docs",), query="beta body", limit=1)[0].key == "multi"
    assert s.search(("docs",), query="alpha title", limit=1)[0].key == "multi"
    top = s.search(("docs",), query="epsilon summary", limit=1)[0]
    assert top.key == "custom" and top.score == pytest.approx(1.0, abs=1e-5)
    # Max pooling: an item shows up once even when both of its vectors match.
    assert len({r.key for r in s.search(("docs",), query="alpha", limit=10)}) == len(
        s.search(("docs",), query="alpha", limit=10)
    )
    s.put(("docs",), "multi", {"title": "only a title now"})
    assert col.count() == 4  # the stale extra vector record is gone
    scores = {r.key: r.score for r in s.search(("docs",), query="beta body", limit=10)}
    assert scores["multi"] < 0.99  # the old "beta body" vector no longer speaks for the item
    assert s.get(("docs",), "multi").value == {"title": "only a title now"}
    listed = s.search(("docs",), limit=10)
    assert sorted(i.key for i in listed) == ["custom", "multi", "other"]  # primaries only, no duplicates
    s.close()


def test_search_across_all_namespaces(store: ChromaStore) -> None:
    store.put(("research",), "r", {"content": "finding"})
    store.put(("misc",), "m", {"text": "memo"})
    assert {i.key for i in store.search((), limit=10)} == {"r", "m"}
    assert {i.key for i in store.search((), query="finding", limit=10)} == {"r", "m"}


# ------------------------------------------------------------ typed values


def test_typed_collections_validate_and_keep_extra_fields(store: ChromaStore) -> None:
    store.put(("research",), "f1", {"content": "Momentum fades", "confidence": 0.7, "my_extra": [1]})
    assert store.get(("research",), "f1").value["my_extra"] == [1]
    with pytest.raises(ValidationError, match="content"):
        store.put(("research",), "f2", {"confidence": 0.7})
    with pytest.raises(ValidationError, match="confidence"):
        store.put(("research",), "f3", {"content": "x", "confidence": "high"})
    with pytest.raises(ValidationError, match="status"):
        store.put(("strategies",), "s1", {"description": "d", "status": "live"})
    with pytest.raises(ValidationError, match="severity"):
        store.put(("lessons",), "l1", {"lesson": "l", "severity": "catastrophic"})
    with pytest.raises(ValidationError, match="regime_type"):
        store.put(("regimes",), "g1", {"description": "d", "regime_type": "crab"})
    with pytest.raises(ValidationError, match="start_date"):
        store.put(("regimes",), "g2", {"description": "d", "start_date": "yesterday"})
    assert store.get(("research",), "f2") is None


def test_a_bad_op_leaves_nothing_half_written(store: ChromaStore) -> None:
    with pytest.raises(ValidationError):
        store.batch(
            [
                PutOp(("research",), "good", {"content": "fine"}),
                PutOp(("misc",), "good2", {"v": 1}),
                PutOp(("research",), "bad", {"content": ""}),
            ]
        )
    assert store.get(("research",), "good") is None
    assert store.get(("misc",), "good2") is None
    with pytest.raises(ValidationError, match="JSON"):
        store.put(("misc",), "obj", {"when": object()})
    assert store.list_namespaces() == []


def test_typed_collection_embeds_its_schema_field(store: ChromaStore) -> None:
    store.put(("lessons",), "l1", {"lesson": "Short lookbacks whipsaw in volatile regimes", "iteration": 2})
    col = store.collection("lessons")
    got = col.get(include=["documents"])
    assert got["documents"] == ["Short lookbacks whipsaw in volatile regimes"]
    assert store.collection("lessons_learned").name == "lessons_learned"


# ------------------------------------------------------ durability & cache


def test_persistence_across_reopen(data_dir: Path, fake_embeddings: DeterministicFakeEmbedding) -> None:
    s = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    s.put(("research", "desk"), "f", {"content": "persisted finding", "confidence": 0.9})
    s.put(("misc",), "m", {"v": 1}, index=False)
    created = s.get(("research", "desk"), "f").created_at
    s.close()
    s2 = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    item = s2.get(("research", "desk"), "f")
    assert item.value == {"content": "persisted finding", "confidence": 0.9}
    assert item.created_at == created
    assert s2.list_namespaces() == [("misc",), ("research", "desk")]
    assert s2.search(("research",), query="persisted finding", limit=1)[0].score == pytest.approx(1.0, abs=1e-5)
    s2.close()


def test_embedding_cache_hits_within_and_across_instances(data_dir: Path) -> None:
    # 2 ms a call, as a model on a CPU: the cache file is used for models that cost more than reading it.
    model = CountingEmbeddings(delay=0.002)
    s = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": model})
    s.put(("research",), "a", {"content": "same text"})
    s.put(("research",), "b", {"content": "same text"})
    s.batch([PutOp(("research",), "c", {"content": "same text"}), PutOp(("research",), "d", {"content": "new"})])
    assert model.texts == 2
    assert s.cached_embeddings.hits == 2 and s.cached_embeddings.misses == 2
    s.close()
    model2 = CountingEmbeddings(delay=0.002)
    s2 = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": model2})
    s2.put(("research",), "e", {"content": "same text"})
    assert model2.texts == 0  # served from the cache file
    assert s2.search(("research",), query="same text", limit=1)[0].score == pytest.approx(1.0, abs=1e-5)
    s2.close()


def test_reads_record_access(store: ChromaStore) -> None:
    store.put(("research",), "f", {"content": "read me"})
    before = next(store.items.iter_items("research"))
    assert before.access_count == 0
    time.sleep(0.01)
    store.get(("research",), "f")
    store.search(("research",), query="read me", limit=1)
    store.get(("research",), "f", refresh_ttl=False)
    assert store.flush_access() == 1
    after = next(store.items.iter_items("research"))
    assert after.access_count == 2
    assert after.last_accessed_at > before.last_accessed_at
    assert after.updated_at == before.updated_at


def test_langchain_vectorstore_view(store: ChromaStore) -> None:
    store.put(("research",), "f1", {"content": "Carry trades unwind when volatility spikes", "source": "macro"})
    store.put(("research",), "f2", {"content": "Earnings drift persists for small caps", "source": "equity"})
    vs = store.as_vectorstore("research")
    docs = vs.similarity_search("Carry trades unwind when volatility spikes", k=1)
    assert docs[0].page_content == "Carry trades unwind when volatility spikes"
    assert docs[0].metadata["source"] == "macro"
    filtered = vs.similarity_search("anything", k=5, filter={"source": "equity"})
    assert [d.page_content for d in filtered] == ["Earnings drift persists for small caps"]


def test_dims_mismatch_is_a_config_error(data_dir: Path, fake_embeddings: DeterministicFakeEmbedding) -> None:
    from langgraph_memory.errors import ConfigError

    s = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    s.put(("research",), "f", {"content": "x"})
    s.close()
    # Refused when the store opens, before anything could be mixed.
    with pytest.raises(ConfigError, match="8 dimensions"):
        ChromaStore(data_dir=data_dir, index={"dims": 8, "embed": DeterministicFakeEmbedding(size=8)})


def test_store_without_index_has_no_semantic_search(data_dir: Path) -> None:
    s = ChromaStore(data_dir=data_dir)
    s.put(("misc",), "a", {"v": 1})
    s.put(("misc",), "b", {"v": 2})
    got = s.search(("misc",), query="ignored without an index", limit=10)
    assert {g.key for g in got} == {"a", "b"} and all(g.score is None for g in got)
    s.close()


def test_delete_unchanged_keeps_items_written_since(store: ChromaStore) -> None:
    store.put(("lessons",), "a", {"lesson": "first"})
    store.put(("lessons",), "b", {"lesson": "second"})
    snap = {it.key: it for it in store.items.iter_items("lessons")}
    expected = {it.uid: (it.updated_at, it.last_accessed_at) for it in snap.values()}
    time.sleep(0.01)
    store.put(("lessons",), "b", {"lesson": "second, edited after the snapshot"})
    deleted, changed = store.items.delete_unchanged("lessons", expected)
    assert deleted == [snap["a"].uid] and changed == [snap["b"].uid]
    assert store.get(("lessons",), "a") is None
    assert store.get(("lessons",), "b").value["lesson"].endswith("after the snapshot")
    assert store.items.delete_unchanged("lessons", expected) == ([], [snap["b"].uid])
