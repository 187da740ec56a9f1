"""With the catalog on PostgreSQL a write returns at its commit and the Chroma index catches up in a thread.

Searches must not miss what the index has not applied yet (they score queued
items exactly), ``wait_for_index`` waits for it, and ``close`` applies what is left.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from langgraph_memory.config import Settings
from langgraph_memory.index._catchup import IndexCatchUp
from langgraph_memory.store import ChromaStore

pytestmark = pytest.mark.timeout(180)


def test_requests_are_applied_together_and_wait_sees_them_done() -> None:
    release = threading.Event()
    calls: list[set[str] | None] = []

    def sync(names: set[str] | None) -> None:
        release.wait(30)
        calls.append(names)

    cu = IndexCatchUp(sync, delay=0)
    cu.request({"a"})
    assert not cu.wait(timeout=0.05)  # the first pass is blocked
    cu.request({"b"})
    cu.request({"c"})
    release.set()
    assert cu.wait(timeout=30)
    assert calls[0] == {"a"} and set().union(*calls[1:]) == {"b", "c"}
    cu.stop()
    cu.request({"d"})  # after stop: inline
    assert calls[-1] == {"d"}


def test_a_failing_pass_is_logged_and_the_thread_keeps_following(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[set[str] | None] = []

    def sync(names: set[str] | None) -> None:
        seen.append(names)
        if len(seen) == 1:
            raise RuntimeError("boom")

    cu = IndexCatchUp(sync)
    cu.request({"a"})
    assert cu.wait(timeout=30)
    cu.request({"b"})
    assert cu.wait(timeout=30)
    assert seen == [{"a"}, {"b"}]
    assert "stay queued" in caplog.text
    cu.stop()


def test_on_postgresql_a_write_is_searchable_before_the_index_caught_up(
    pg_database: str, fake_embeddings: Any, tmp_path: Path
) -> None:
    local = tmp_path
    store = ChromaStore(
        settings=Settings.resolve(pg_database, local_dir=local),
        index={"dims": 16, "embed": fake_embeddings, "fields": ["text"]},
    )
    try:
        assert store._writer.catch_up is not None
        gate = threading.Event()
        real = store._writer.sync

        def held(names: set[str] | None = None) -> None:
            gate.wait(60)
            real(names)

        store._writer.catch_up._sync = held  # the index cannot catch up until the gate opens
        for i in range(30):
            store.put(("docs", f"n{i % 3}"), f"k{i}", {"text": f"note number {i}"})
        assert store.vector_index.count("memories") == 0  # nothing applied yet
        hits = store.search(("docs",), query="note number 7", limit=30)
        assert len(hits) == 30
        assert store.search(("docs", "n1"), query="note number 7", limit=5)[0].key in {f"k{i}" for i in range(1, 30, 3)}
        assert not store.wait_for_index(timeout=0.05)
        gate.set()
        assert store.wait_for_index(timeout=60)
        assert store.vector_index.count("memories") == 30
        store.put(("docs", "n0"), "last", {"text": "applied on close"})
    finally:
        gate.set()
        store.close()
    again = ChromaStore(
        settings=Settings.resolve(pg_database, local_dir=local),
        index={"dims": 16, "embed": fake_embeddings, "fields": ["text"]},
    )
    try:
        assert again.get(("docs", "n0"), "last") is not None
        assert len(again.search(("docs",), query="applied on close", limit=40)) == 31
    finally:
        again.close()


def test_a_burst_of_requests_is_applied_in_one_pass_after_writes_pause() -> None:
    calls: list[set[str] | None] = []
    cu = IndexCatchUp(calls.append, delay=0.3, max_wait=60.0, max_pending=10_000)
    for i in range(20):
        cu.request({f"c{i % 2}"})
    assert cu.wait(timeout=30)
    assert calls == [{"c0", "c1"}]
    cu.stop()


def test_a_steady_stream_is_applied_once_enough_writes_wait() -> None:
    applied = threading.Event()
    calls: list[set[str] | None] = []

    def sync(names: set[str] | None) -> None:
        calls.append(names)
        applied.set()

    cu = IndexCatchUp(sync, delay=60.0, max_wait=60.0, max_pending=5)
    cu.request({"a"}, writes=3)
    assert not applied.wait(0.05)  # neither a pause nor enough writes yet
    cu.request({"a"}, writes=2)
    assert applied.wait(30)  # five writes wait: applied without a pause
    assert cu.wait(timeout=30) and calls == [{"a"}]
    cu.stop()


def test_writes_during_the_pause_do_not_wake_the_thread_each_time() -> None:
    """Each wake-up takes the GIL from the writer while it waits on its round trip, so later requests only
    move the pause's end; the thread reads it when its wait runs out."""
    calls: list[set[str] | None] = []
    cu = IndexCatchUp(calls.append, delay=30.0, max_wait=60.0, max_pending=10_000)
    wakes = 0

    class Counting(threading.Condition):
        def wait(self, timeout: float | None = None) -> bool:
            nonlocal wakes
            got = super().wait(timeout)
            if threading.current_thread().name == "lgm-index-catch-up":
                wakes += 1
            return got

    cu._cv = Counting()
    cu.request({"a"})
    for _ in range(50):
        time.sleep(0.001)  # lets a woken thread run, as a put's round trip does
        cu.request({"a"})
    assert wakes <= 2, f"the thread woke {wakes} times for 51 requests"
    assert cu.wait(timeout=30) and calls == [{"a"}]  # waiting still ends the pause at once
    cu.stop()


def test_in_a_data_directory_a_put_returns_before_the_index_applies_it_and_is_searchable(
    tmp_path: Any, fake_embeddings: Any
) -> None:
    store = ChromaStore(data_dir=tmp_path / "d", index={"dims": 16, "embed": fake_embeddings, "fields": ["text"]})
    try:
        assert store._writer.catch_up is not None
        gate = threading.Event()
        real = store._writer.sync

        def held(names: set[str] | None = None) -> None:
            gate.wait(60)
            real(names)

        store._writer.catch_up._sync = held
        for i in range(12):
            store.put(("docs", f"n{i % 3}"), f"k{i}", {"text": f"note number {i}"})
        assert store.vector_index.count("memories") == 0  # acknowledged at the commit, not applied yet
        assert len(store.search(("docs",), query="note number 7", limit=20)) == 12
        assert store.search(("docs",), query="note number 7", limit=1)[0].key == "k7"
        gate.set()
        assert store.wait_for_index(timeout=60)
        assert store.vector_index.count("memories") == 12
        store.put(("docs", "n0"), "last", {"text": "applied on close"})
    finally:
        gate.set()
        store.close()
    again = ChromaStore(data_dir=tmp_path / "d", index={"dims": 16, "embed": fake_embeddings, "fields": ["text"]})
    try:
        assert again.vector_index.count("memories") == 13  # close applied what was left
        assert again.search(("docs",), query="applied on close", limit=1)[0].key == "last"
    finally:
        again.close()


def test_a_bulk_load_is_applied_after_it_pauses_not_after_each_batch() -> None:
    applied = threading.Event()
    calls: list[set[str] | None] = []

    def sync(names: set[str] | None) -> None:
        calls.append(names)
        applied.set()

    cu = IndexCatchUp(sync, delay=0.01, max_pending=5, bulk_writes=100, bulk_delay=60.0, bulk_pending=1000)
    cu.request({"a"}, writes=300)  # a bulk batch: neither its size nor a short pause starts a pass
    cu.request({"a"}, writes=300)
    assert not applied.wait(0.3)
    cu.request({"a"}, writes=400)  # 1,000 bulk writes wait: applied without a pause
    assert applied.wait(30)
    assert cu.wait(timeout=30) and calls == [{"a"}]
    applied.clear()
    cu.request({"b"}, writes=300)
    assert not applied.wait(0.3)
    assert cu.wait(timeout=30)  # waiting for the index starts the pass at once
    assert calls == [{"a"}, {"b"}]
    cu.request({"c"}, writes=1)  # a single write after the load: the short pause again
    assert cu.wait(timeout=30) and calls[-1] == {"c"}
    cu.stop()


def test_during_a_bulk_load_a_batch_being_written_is_no_pause() -> None:
    applied = threading.Event()
    cu = IndexCatchUp(lambda names: applied.set(), bulk_writes=100, bulk_delay=0.2, bulk_max_wait=60.0)
    cu.request({"a"}, writes=500)
    with cu.writing(500):  # the next batch takes longer than the pause
        assert not applied.wait(0.6)
    cu.request({"a"}, writes=500)
    assert applied.wait(30)  # the load paused after it: applied
    assert cu.wait(timeout=30)
    cu.stop()


def test_single_writes_beside_a_bulk_load_do_not_hold_back_its_pass() -> None:
    # Agents keep putting while a load runs. Taken for the load, puts 10 ms apart left it no pause, and its last
    # changes waited bulk_max_wait (30 s by default) for a pass, searched exactly all the while.
    applied = threading.Event()
    cu = IndexCatchUp(
        lambda names: applied.set(),
        delay=60.0,
        max_wait=60.0,
        max_pending=10**6,
        bulk_writes=100,
        bulk_delay=0.2,
        bulk_max_wait=60.0,
        bulk_pending=10**6,
    )
    with cu.writing(500):
        pass
    cu.request({"a"}, writes=500)  # the load's last batch
    started = time.monotonic()
    while not applied.is_set() and time.monotonic() - started < 20:
        with cu.writing(1):
            pass
        cu.request({"a"}, writes=1)
        applied.wait(0.01)  # the next put, 10 ms later
    assert applied.is_set(), "no pass while single writes went on, though the load had paused"
    assert time.monotonic() - started < 10
    cu.stop()


def test_what_the_index_has_not_applied_is_read_per_collection_behind_others(store: Any) -> None:
    # A collection whose changes are all applied, behind a busier one: nothing pending (read without walking the
    # other's newer rows), and a change of its own after that is pending again. On both catalog backends.
    from langgraph_memory.catalog import queue

    with store.catalog.write() as conn:
        queue.enqueue(conn, "quiet", [(1, 0), (2, 0)])
        quiet_head = queue.last_seq(conn)
        queue.enqueue(conn, "busy", [(10 + i, 0) for i in range(50)])
        queue.set_chroma_name(conn, "quiet", "quiet", quiet_head)  # indexed up to its head
    with store.catalog.read() as conn:
        assert queue.pending_items(conn, "quiet") == [] and queue.pending(conn, "quiet") == []
        assert sorted(queue.pending_items(conn, "busy")) == [10 + i for i in range(50)]  # never applied: all
        assert [i for _s, i, _n in queue.pending(conn, "busy", limit=3)] == [10, 11, 12]
    with store.catalog.write() as conn:
        queue.enqueue(conn, "quiet", [(3, 1)])
    with store.catalog.read() as conn:
        assert queue.pending_items(conn, "quiet") == [3]
        assert [(i, n) for _s, i, n in queue.pending(conn, "quiet")] == [(3, 1)]


def test_on_postgresql_an_hnsw_search_scores_what_the_index_lacks_and_the_counts_say_which(
    pg_database: str, fake_embeddings: Any, tmp_path: Path
) -> None:
    # The statement that reads a search's counts names the collections with changes the index lacks: an HNSW
    # search reads those changes only there, and must still find them while the index is held back.
    from langgraph.store.base import PutOp

    from langgraph_memory.catalog import scope as _scope

    local = tmp_path
    store = ChromaStore(
        settings=Settings.resolve(pg_database, local_dir=local),
        index={"dims": 16, "embed": fake_embeddings, "fields": ["text"]},
    )
    gate = threading.Event()
    try:
        store.planner.exact_max = 5  # scopes over 30 vectors go to HNSW
        store.batch([PutOp(("docs", f"n{i % 4}"), f"k{i}", {"text": f"old note {i}"}) for i in range(200)])
        assert store.wait_for_index(timeout=60)
        with store.catalog.snapshot() as conn:
            assert _scope.counts_and_heads(conn)[1].unapplied == frozenset()
        real = store._writer.sync

        def held(names: set[str] | None = None) -> None:
            gate.wait(60)
            real(names)

        assert store._writer.catch_up is not None
        store._writer.catch_up._sync = held
        store.put(("docs", "n1"), "fresh", {"text": "fresh note"})
        with store.catalog.snapshot() as conn:
            assert _scope.counts_and_heads(conn)[1].unapplied == frozenset({"memories"})
            assert _scope.planning_read(conn, "memories", _scope.prefix_bounds(("docs",)))[2].unapplied == {"memories"}
        assert store.explain(("docs",), query="fresh note").strategy == "hnsw"
        assert store.search(("docs",), query="fresh note", limit=3)[0].key == "fresh"
        assert store.search((), query="fresh note", limit=3)[0].key == "fresh"
        gate.set()
        assert store.wait_for_index(timeout=60)
        with store.catalog.snapshot() as conn:
            assert _scope.counts_and_heads(conn)[1].unapplied == frozenset()
        assert store.search(("docs",), query="fresh note", limit=3)[0].key == "fresh"
    finally:
        gate.set()
        store.close()


def test_a_search_during_an_apply_does_not_queue_behind_it_and_finds_everything(
    tmp_path: Path, fake_embeddings: Any
) -> None:
    # An upsert of a chunk into a large collection holds the index for up to a second; a search that waited for
    # it held the catalog meanwhile, and every put queued behind that search. It scores exactly instead.
    from langgraph.store.base import PutOp

    from langgraph_memory.index.chroma import ChromaIndex

    store = ChromaStore(data_dir=tmp_path / "d", index={"dims": 16, "embed": fake_embeddings, "fields": ["text"]})
    entered, release = threading.Event(), threading.Event()

    def slow_apply(col: Any, n_old: Any, vectors: Any) -> None:  # the applier's own call, made slow
        entered.set()
        release.wait(60)
        ChromaIndex._apply(col, n_old, vectors)

    held_for = 20.0
    try:
        store.planner.exact_max = 5  # scopes over 30 vectors go to HNSW
        store.batch([PutOp(("docs", f"n{i % 4}"), f"k{i}", {"text": f"note number {i}"}) for i in range(150)])
        assert store.wait_for_index(timeout=60)
        store.vector_index._apply = slow_apply  # type: ignore[method-assign]
        store.put(("docs", "n0"), "new", {"text": "the newest note"})
        assert entered.wait(30)  # the catch-up thread is inside its upsert, holding the index
        threading.Timer(held_for, release.set).start()  # the longest the apply holds it
        started = time.monotonic()
        hits = store.search(("docs",), query="note number 7", limit=10)  # 151 items: more than one HNSW fetch
        store.put(("docs", "n1"), "during", {"text": "written during the apply"})
        took = time.monotonic() - started
        assert not release.is_set() and took < held_for / 2, f"the search and put waited {took:.1f} s for the apply"
        assert len(hits) == 10 and hits[0].key == "k7"
        assert [h.key for h in hits] == [h.key for h in store.search(("docs",), query="note number 7", limit=10)]
    finally:
        release.set()
        store.close()
