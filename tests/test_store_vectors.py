"""The in-memory vector cache: namespace runs, staying in step with other processes, reloads, budget, load policy.

Every check compares a search with the exact answer computed here from the
catalog's own vectors, so a stale or misordered cache shows as a wrong answer.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import PutOp

from langgraph_memory.catalog import queue as _queue
from langgraph_memory.catalog.connection import both
from langgraph_memory.catalog.item_rows import join_ns
from langgraph_memory.search import plan as _plan
from langgraph_memory.search import planner as _planner
from langgraph_memory.search import vectors as _vecs
from langgraph_memory.store import ChromaStore

DIMS = 16
EMB = DeterministicFakeEmbedding(size=DIMS)
ROOT = Path(__file__).resolve().parents[1]


def _open(data_dir: Path, **kwargs) -> ChromaStore:
    return ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": EMB, "fields": ["text"]}, **kwargs)


def _exact(store: ChromaStore, prefix: tuple[str, ...], query: str, k: int = 5) -> list[tuple[tuple[str, ...], str]]:
    """The true top k under ``prefix`` by cosine, from every item's text."""
    q = np.asarray(EMB.embed_query(query))
    scored = []
    for item in store.search(prefix, limit=100_000):
        v = np.asarray(EMB.embed_query(item.value["text"]))
        scored.append((-(v @ q) / (np.linalg.norm(v) * np.linalg.norm(q)), tuple(item.namespace), item.key))
    return [(ns, key) for _, ns, key in sorted(scored)[:k]]


def _got(store: ChromaStore, prefix: tuple[str, ...], query: str, k: int = 5) -> list[tuple[tuple[str, ...], str]]:
    return [(tuple(h.namespace), h.key) for h in store.search(prefix, query=query, limit=k)]


def _fill(store: ChromaStore, namespaces: list[tuple[str, ...]], per_ns: int) -> None:
    store.batch([PutOp(ns, f"k{i}", {"text": f"{'/'.join(ns)} note {i}"}) for ns in namespaces for i in range(per_ns)])


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thresholds low enough that a few hundred items take the in-memory path."""
    monkeypatch.setattr(_plan, "UNCACHED_MAX", 10)


def test_a_prefix_is_a_run_of_rows_and_never_a_lookalike(data_dir: Path, small_limits: None) -> None:
    """("a",) holds ("a",) and ("a", "b") but not ("ab",) nor ("a-",): names that sort close by."""
    with _open(data_dir) as store:
        _fill(store, [("a",), ("a", "b"), ("ab",), ("a-",), ("b",), ("a", "b", "c")], 30)
        for prefix in [("a",), ("a", "b"), ("ab",), ("b",), ("a", "b", "c")]:
            assert store.explain(prefix, query="x").strategy == "exact"
            for query in ["a note 3", "ab note 7", "b note 1", "a/b/c note 2"]:
                got = _got(store, prefix, query)
                assert got == _exact(store, prefix, query), (prefix, query)
                assert all(ns[: len(prefix)] == prefix for ns, _ in got)
        assert store.vectors is not None and store.vectors.cached("memories")


def test_small_searches_do_not_load_the_cache_and_large_ones_do(data_dir: Path) -> None:
    with _open(data_dir) as store:
        _fill(store, [("u", f"{i}") for i in range(6)], 100)
        assert store.vectors is not None
        store.search(("u", "1"), query="note")  # 100 candidates: read from the catalog
        assert not store.vectors.cached("memories")
        store.search(("u",), query="note")  # 600: worth holding in memory
        assert store.vectors.cached("memories")
        assert _got(store, ("u", "2"), "u/2 note 5") == _exact(store, ("u", "2"), "u/2 note 5")


_WRITER = textwrap.dedent(
    """
    import sys
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langgraph.store.base import PutOp
    from langgraph_memory.store import ChromaStore
    store = ChromaStore(data_dir=sys.argv[1],
                        index={"dims": 16, "embed": DeterministicFakeEmbedding(size=16), "fields": ["text"]})
    store.batch([
        PutOp(("u", "0"), "k1", {"text": "rewritten by another process"}),
        PutOp(("u", "0"), "k2", None),
        PutOp(("u", "9"), "fresh", {"text": "a brand new namespace"}),
    ] + [PutOp(("u", "1"), f"n{i}", {"text": f"another process note {i}"}) for i in range(int(sys.argv[2]))])
    store.close()
    """
)


def _write_elsewhere(data_dir: Path, extra: int) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", _WRITER, str(data_dir), str(extra)], check=True, env=env, timeout=120)


@pytest.mark.parametrize("extra", [5, 400], ids=["few-changes", "tail-sorted-in"])
def test_writes_of_another_process_are_seen(data_dir: Path, small_limits: None, extra: int) -> None:
    """Updates, deletes, new items and new namespaces written elsewhere reach a loaded cache."""
    with _open(data_dir) as store:
        _fill(store, [("u", f"{i}") for i in range(4)], 100)
        store.search(("u",), query="note")
        assert store.vectors is not None and store.vectors.cached("memories")
        _write_elsewhere(data_dir, extra)
        assert store.search(("u",), query="rewritten by another process", limit=1)[0].key == "k1"
        assert "k2" not in {h.key for h in store.search(("u", "0"), query="u/0 note 2", limit=100)}
        assert tuple(store.search(("u",), query="a brand new namespace", limit=1)[0].namespace) == ("u", "9")
        for prefix, query in [(("u",), "another process note 3"), (("u", "1"), "u/1 note 4"), (("u", "0"), "x")]:
            assert _got(store, prefix, query) == _exact(store, prefix, query)


def test_a_cache_behind_the_pruned_log_reloads(
    data_dir: Path, small_limits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the log's reach, a cache is loaded afresh rather than patched."""
    monkeypatch.setattr(_queue, "RETAIN", 10)
    with _open(data_dir) as store:
        _fill(store, [("u", "a"), ("u", "b")], 100)
        store.search(("u",), query="note")
        assert store.vectors is not None
        seen = store.vectors._versions["memories"].seq
        before = store.vectors.resident("memories")
        store.batch([PutOp(("u", "c"), f"n{i}", {"text": f"later note {i}"}) for i in range(50)])
        assert store.wait_for_index(timeout=120)  # the index prunes the log it applied (in a thread on a server)
        with store.catalog.read() as conn:
            assert _queue.pruned_upto(conn, "memories") > seen
        assert _got(store, ("u",), "later note 7") == _exact(store, ("u",), "later note 7")
        assert store.vectors.resident("memories") is not before


def test_vectors_rewritten_in_place_reload_the_cache(data_dir: Path, small_limits: None) -> None:
    with _open(data_dir) as store:
        _fill(store, [("u", "a"), ("u", "b")], 100)
        store.search(("u",), query="note")
        assert store.vectors is not None
        before = store.vectors.resident("memories")
        with store.catalog.write() as conn:
            _queue.bump_vectors_epoch(conn)
        store.search(("u",), query="note")
        assert store.vectors.resident("memories") is not before


def test_a_collection_over_the_budget_is_searched_without_the_cache(data_dir: Path) -> None:
    with _open(data_dir, vector_cache_mb=0.01) as store:  # 10 KB: 600 vectors of 16 dims do not fit
        _fill(store, [("u", f"{i}") for i in range(6)], 100)
        for prefix, query in [(("u",), "u/3 note 9"), (("u", "4"), "u/4 note 1")]:
            assert _got(store, prefix, query) == _exact(store, prefix, query)
        assert store.vectors is not None and not store.vectors.cached("memories")
    with _open(data_dir, vector_cache_mb=0) as store:
        assert store.vectors is None
        assert _got(store, ("u",), "u/5 note 5") == _exact(store, ("u",), "u/5 note 5")
    with pytest.raises(Exception, match="vector_cache_mb"):
        _open(data_dir, vector_cache_mb=-1)


def test_many_updates_sort_the_tail_in_and_stay_exact(data_dir: Path, small_limits: None) -> None:
    with _open(data_dir) as store:
        _fill(store, [("u", f"{i}") for i in range(3)], 100)
        store.search(("u",), query="note")
        col = store.vectors.resident("memories") if store.vectors is not None else None
        assert col is not None and col.base == col.n
        rng = np.random.default_rng(3)
        for round_ in range(5):
            store.batch(
                [
                    PutOp(
                        ("u", str(int(rng.integers(0, 4)))),
                        f"k{int(rng.integers(0, 120))}",
                        {"text": f"round {round_} rewrite {j}"},
                    )
                    for j in range(40)
                ]
                + [PutOp(("u", "1"), f"k{int(rng.integers(0, 100))}", None) for _ in range(10)]
            )
            for prefix, query in [
                (("u",), f"round {round_} rewrite 3"),
                (("u", "3"), "u/3 note 2"),
                (("u", "1"), "round 2 rewrite 7"),
            ]:
                assert _got(store, prefix, query) == _exact(store, prefix, query), (round_, prefix, query)
        col = store.vectors.resident("memories")
        assert col is not None and col.n_dead < col.n  # dead rows were compacted away along the way


@pytest.mark.parametrize("spread", [1, 1000], ids=["dense ids: table", "sparse ids: binary search"])
def test_rows_of_items_and_namespaces_match_a_plain_scan(spread: int) -> None:
    """Base rows (sorted), dead rows and tail rows, looked up by item id as a scan of every row finds them."""
    from langgraph_memory.search.vectors import CollectionVectors

    rng = np.random.default_rng(7)
    col = CollectionVectors(4)
    ids = np.arange(1, 301) * spread
    per_item = rng.integers(1, 4, size=len(ids))  # one to three vectors an item, as with several index fields
    item_of_row = np.repeat(ids, per_item)
    ns_of_item = dict(zip(ids.tolist(), rng.integers(1, 20, size=len(ids)).tolist(), strict=True))
    col.append(item_of_row, np.array([ns_of_item[i] for i in item_of_row]), rng.standard_normal((len(item_of_row), 4)))
    col.sort({n: f"ns{n:02d}" for n in range(1, 20)})
    assert bool(len(col._first_row)) == (spread == 1)
    col.kill_items(ids[::7])  # replaced: their old rows die, the new ones go to the tail
    moved = ids[::7]
    col.append(moved, np.array([ns_of_item[i] for i in moved.tolist()]), rng.standard_normal((len(moved), 4)))
    col.append(np.array([99_999_999]), np.array([5]), rng.standard_normal((1, 4)))  # outside the table's range
    ns_of_item[99_999_999] = 5

    ask = np.concatenate([rng.choice(ids, 80, replace=False), [99_999_999, 0, -3, ids[-1] + 1]])
    live = np.nonzero(col.alive[: col.n])[0]
    want_rows = sorted(r for r in live.tolist() if col.item_ids[r] in set(ask.tolist()))
    assert sorted(col.rows_of_items(ask).tolist()) == want_rows
    scope = np.array([2, 3, 5, 11])
    want = [bool(i in ns_of_item and ns_of_item[i] in scope and i in col.item_ids[live]) for i in ask.tolist()]
    assert col.in_namespaces(ask, scope).tolist() == want


def test_best_cosines_are_the_scores_rank_gives() -> None:
    """Each item's best live row, as `rank()` scores it (the same float), for items of one to three rows."""
    from langgraph_memory.search.vectors import CollectionVectors, Segments

    rng = np.random.default_rng(11)
    col = CollectionVectors(8)
    ids = np.arange(1, 201)
    item_of_row = np.repeat(ids, rng.integers(1, 4, size=len(ids)))
    col.append(item_of_row, np.ones(len(item_of_row), dtype=np.int64), rng.standard_normal((len(item_of_row), 8)))
    col.sort({1: "ns"})
    col.kill_items(ids[::5])
    col.append(ids[::5], np.ones(len(ids[::5]), dtype=np.int64), rng.standard_normal((len(ids[::5]), 8)))
    q = rng.standard_normal(8) * 3.0  # not unit length: both divide by its norm
    ask = rng.choice(ids, 60, replace=False)
    rows = col.rows_of_items(ask)
    got = col.best_cosines(rows, q)
    want = dict(col.rank(Segments(rows=rows), q, len(ask)))
    assert got == want and set(got) == set(ask.tolist())
    assert col.best_cosines(rows[:0], q) == {}


def test_the_sample_check_ignores_items_the_search_leaves_out() -> None:
    """An item above the bar that HNSW's answer lacks is a miss, unless the search leaves it out anyway (an as-of
    view's items changed since): then missing it misses nothing, and the answer is not widened for it."""
    from langgraph_memory.search.vectors import CollectionVectors

    col = CollectionVectors(2)
    ids = np.arange(1, 101)
    vecs = np.tile([1.0, 0.0], (100, 1)) + np.outer(np.linspace(0.0, 1.0, 100), [0.0, 1.0])  # item 1 nearest
    col.append(ids, np.ones(100, dtype=np.int64), vecs)
    col.sort({1: "ns"})
    q = np.array([1.0, 0.0])
    bar = 0.99  # only the first few items score above it
    above = [i for i in ids.tolist() if vecs[i - 1] @ q / np.linalg.norm(vecs[i - 1]) > bar]
    assert len(above) > 1
    found = np.array(above[1:])  # HNSW's answer lacks the best item

    def ignoring(answer: np.ndarray, left_out: set[int]):
        return lambda item_ids: np.isin(item_ids, answer) | np.isin(item_ids, list(left_out))

    assert col.beaten(col.everything(), q, bar, ignoring(found, set()), 100)
    assert not col.beaten(col.everything(), q, bar, ignoring(found, {above[0]}), 100)
    assert col.beaten(col.everything(), q, bar, ignoring(found[1:], {above[0]}), 100)  # another one is missed


def _clustered(n: int, dims: int, *, seed: int) -> tuple[_vecs.CollectionVectors, np.ndarray, np.random.Generator]:
    """A collection of ``n`` rows around 50 centers in one namespace, the centers, and the generator to go on with."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((50, dims))
    rows = centers[rng.integers(0, 50, n)] + 0.3 * rng.standard_normal((n, dims))
    col = _vecs.CollectionVectors(dims)
    col.append(np.arange(n, dtype=np.int64), np.ones(n, dtype=np.int64), rows.astype(np.float32))
    col.sort({1: "ns"})
    return col, centers, rng


def test_a_coarse_rank_finds_the_best_and_never_fewer_than_asked() -> None:
    """Ranked by sketch first, then exactly: the exact answer on clustered rows, and ``top`` items even when the
    rows the sketch ranks best have all died (then every row is scored)."""
    n, dims = 30_000, 96
    col, centers, rng = _clustered(n, dims, seed=3)
    everything = col.everything()
    for q in centers[:5] + 0.5 * rng.standard_normal((5, dims)):
        assert col.rank(everything, q, 10, coarse=True) == col.rank(everything, q, 10)
    q = centers[0]
    sketch = col.sketch[: col.n] @ (q.astype(np.float32) @ col.basis)
    col.kill_items(col.item_ids[np.argsort(-sketch)[: 2 * _vecs._COARSE_KEEP]])  # every candidate the sketch keeps
    got = col.rank(everything, q, 10, coarse=True)
    assert len(got) == 10 and got == col.rank(everything, q, 10)
    # Rows appended after the sketch was made get theirs from the same directions: the nearest is found.
    col.append(np.array([n], dtype=np.int64), np.ones(1, dtype=np.int64), q[None, :].astype(np.float32))
    tail = _vecs.Segments(runs=[(0, col.n)])
    assert col.rank(tail, q, 1, coarse=True)[0][0] == n


def test_a_filters_matches_are_ranked_by_sketch_too() -> None:
    """A coarse rank of rows gathered one by one (a filter's matches: 6,000 of a collection of 42,000) goes
    through the sketch, as a whole collection does, and finds the exact answer on clustered rows."""
    n, dims = 42_000, 96
    col, centers, rng = _clustered(n, dims, seed=5)
    matches = _vecs.Segments(rows=np.arange(3, n, 7))
    for q in centers[:5] + 0.5 * rng.standard_normal((5, dims)):
        assert col.rank(matches, q, 10, coarse=True) == col.rank(matches, q, 10)
    assert col.sketch is not None  # made by the first coarse ranking that used it


def test_hnsw_candidates_are_read_from_the_catalog_only_as_far_as_they_can_rank(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the cache, an HNSW answer reads the vectors of the candidates that can make it, no more."""
    read: list[int] = []
    vectors_of = _planner._vectors.vectors_of

    def spy(conn, item_ids):
        read.append(len(item_ids))
        return vectors_of(conn, item_ids)

    with _open(data_dir, vector_cache_mb=0, ttl={"omit_expired": True}) as store:
        store.planner.exact_max = 0  # every search takes HNSW: 50 candidates for 5 results
        _fill(store, [("u", f"{i}") for i in range(6)], 100)
        assert store.wait_for_index(timeout=120)
        monkeypatch.setattr(_planner._vectors, "vectors_of", spy)
        queries = ["u/3 note 9", "u/1 note 42", "u/5 note 77", "u/0 note 5"]
        for query in queries:
            read.clear()
            assert _got(store, ("u",), query) == _exact(store, ("u",), query)
            assert store.explain(("u",), query=query).strategy == "hnsw"
            assert len(read) == 1 and 5 <= read[0] < 50, read
        # The best three expire: the first read leaves two results, and the next reads on down HNSW's order.
        top = _exact(store, ("u",), queries[0], k=3)
        with store.catalog.write() as conn:
            for ns, key in top:
                conn.execute(
                    both(
                        conn,
                        "UPDATE items SET expires_at = ? WHERE key = ? AND ns_id = (SELECT id FROM namespaces WHERE ns = ?)",
                    ),
                    (time.time() - 60, key, join_ns(ns)),
                )
        read.clear()
        explained = store.search_explained(("u",), query=queries[0], limit=5)
        got = [(tuple(h.item.namespace), h.item.key) for h in explained.hits]
        assert not set(got) & set(top) and len(got) == 5
        assert got == _exact(store, ("u",), queries[0])  # listing leaves the expired out too
        # Read on from the same HNSW answer: no second, wider HNSW round.
        assert explained.plan is not None and explained.plan.rounds == 1
        assert len(read) >= 2 and sum(read) < 50, read
