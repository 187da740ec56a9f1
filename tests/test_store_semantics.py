"""Behaviours that used to differ from LangGraph's stores, each against the store that sets the rule."""

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
from langgraph.store.memory import InMemoryStore

from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS


def _cos(a: list[float], b: list[float]) -> float:
    x, y = np.asarray(a), np.asarray(b)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


@pytest.mark.parametrize("hnsw", [False, True], ids=["exact", "hnsw"])
def test_an_item_scores_as_the_best_of_its_vectors(data_dir: Path, hnsw: bool) -> None:
    emb = DeterministicFakeEmbedding(size=FAKE_DIMS)
    index = {"dims": FAKE_DIMS, "embed": emb, "fields": ["key0", "key1", "key3"]}
    ours = ChromaStore(data_dir=data_dir, index=index)
    ref = InMemoryStore(index=index)
    if hnsw:
        ours.planner.exact_max = 0
    try:
        for i in range(20):
            value = {f"key{j}": f"field {j} of item {i}" for j in range(4)}
            ours.put(("docs",), f"d{i}", value)
            ref.put(("docs",), f"d{i}", value)
        # A query equal to a secondary field of d7 (key3): d7 scores 1.0, not by its first vector.
        got = ours.search(("docs",), query="field 3 of item 7", limit=3)
        want = ref.search(("docs",), query="field 3 of item 7", limit=3)
        assert got[0].key == "d7" and got[0].score == pytest.approx(1.0, abs=1e-5)
        assert [(h.key, round(h.score, 5)) for h in got] == [(h.key, round(h.score, 5)) for h in want]
        # key2 is not indexed: a query equal to it scores by the best indexed field only.
        best = max(
            _cos(emb.embed_query("field 2 of item 4"), emb.embed_query(f"field {j} of item 4")) for j in (0, 1, 3)
        )
        d4 = next(h for h in ours.search(("docs",), query="field 2 of item 4", limit=20) if h.key == "d4")
        assert d4.score == pytest.approx(best, abs=1e-5)
    finally:
        ours.close()


def test_filter_keys_with_hyphens_dots_and_digits(store: ChromaStore) -> None:
    ref = InMemoryStore()
    values = {
        "a": {"access-level": "public", "user.123abc": "ok", "9lives": 9},
        "b": {"access-level": "private", "user.123abc": "no", "9lives": 1},
    }
    for key, value in values.items():
        store.put(("docs",), key, value)
        ref.put(("docs",), key, value)
    for flt in ({"access-level": "public"}, {"user.123abc": "ok"}, {"9lives": {"$gt": 5}}):
        assert (
            [i.key for i in store.search(("docs",), filter=flt)]
            == [i.key for i in ref.search(("docs",), filter=flt)]
            == ["a"]
        )
        assert [i.key for i in store.search(("docs",), query="x", filter=flt)] == ["a"]


def test_a_namespace_given_as_a_list(store: ChromaStore) -> None:
    store.put(["test", "a"], "k", {"text": "listed"})  # type: ignore[arg-type]
    assert store.get(["test", "a"], "k").value == {"text": "listed"}  # type: ignore[arg-type]
    assert [i.key for i in store.search(["test"])] == ["k"]  # type: ignore[arg-type]
    assert [i.key for i in store.search(["test"], query="listed")] == ["k"]  # type: ignore[arg-type]
    assert store.list_namespaces(prefix=["test"]) == [("test", "a")]  # type: ignore[arg-type]
    store.delete(["test", "a"], "k")  # type: ignore[arg-type]
    assert store.get(("test", "a"), "k") is None


@pytest.mark.slow
def test_a_read_refreshes_the_ttl_from_the_read_and_the_sweeper_removes_it_within_an_interval(
    data_dir: Path, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    ttl_min = 2 / 60  # 2 s
    store = ChromaStore(
        data_dir=data_dir,
        index={"dims": FAKE_DIMS, "embed": fake_embeddings},
        ttl={"default_ttl": ttl_min, "refresh_on_read": True, "sweep_interval_minutes": 1 / 60},  # type: ignore[typeddict-item]
        access_flush_interval=0.2,
    )
    try:
        t0 = time.monotonic()
        store.put(("notes",), "k", {"text": "short-lived"}, ttl=ttl_min)
        store.start_ttl_sweeper()
        time.sleep(1.2)
        assert store.get(("notes",), "k") is not None  # read at ~1.2 s: expires at ~3.2 s now
        time.sleep(max(0.0, 2.6 - (time.monotonic() - t0)))
        assert store.get(("notes",), "k", refresh_ttl=False) is not None  # past the put's 2 s, not the read's
        deadline = t0 + 3.2 + 1.0 + 0.8  # the refreshed expiry, one sweep interval, a margin
        while store.get(("notes",), "k", refresh_ttl=False) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.get(("notes",), "k", refresh_ttl=False) is None
        assert time.monotonic() - t0 >= 3.1  # not swept before the refreshed expiry
    finally:
        store.close()


_READ_AND_EXIT = textwrap.dedent(
    """
    import sys
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langgraph_memory.store import ChromaStore
    s = ChromaStore(data_dir=sys.argv[1], index={"dims": 16, "embed": DeterministicFakeEmbedding(size=16)})
    s.put(("notes",), "k", {"text": "read three times"})
    for _ in range(3):
        s.get(("notes",), "k")
    # no close(): a normal interpreter exit
    """
)


@pytest.mark.slow
def test_reads_are_applied_at_a_normal_exit_without_close(
    data_dir: Path, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    done = subprocess.run(
        [sys.executable, "-c", _READ_AND_EXIT, str(data_dir)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    store = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    try:
        assert store.items.get(("notes",), "k").access_count == 3
        assert store.vector_index.probe_seconds is None  # the exit closed it cleanly: sealed, no probe
    finally:
        store.close()
