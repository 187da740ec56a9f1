"""An item's versions: what ended each, when, and which graph run did it; reads as of a moment; retention.

Every test here opens its data directory through fixtures, so it runs on both catalogs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, PutOp

from langgraph_memory import Memory
from langgraph_memory.archive import HistoryRetention
from langgraph_memory.catalog import history, past_versions
from langgraph_memory.catalog.items import item_uid
from langgraph_memory.errors import InvalidArgumentError, ReadOnlyError
from langgraph_memory.registry import GENERAL, CollectionRegistry
from langgraph_memory.search.ranking import HybridRanking, TemporalConfig
from langgraph_memory.store import ChromaStore, Version
from tests.conftest import FAKE_DIMS

NS = ("notes",)


def _tick() -> float:
    """The clock now, after waiting until it moved on by more than a datetime shows (a microsecond)."""
    t = time.time()
    while time.time() <= t + 2e-6:
        time.sleep(0.0005)
    return t


@pytest.fixture
def plain(data_dir: Path, fake_embeddings: DeterministicFakeEmbedding):
    s = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings}, collections=None)
    yield s
    s.close()


def test_history_lists_every_version_newest_first_with_what_ended_it(plain: ChromaStore) -> None:
    plain.put(NS, "n", {"text": "one"})
    plain.put(NS, "n", {"text": "two"})
    plain.items.set_status([(NS, "n")], "retired", reason="stale")
    plain.items.clear_status([(NS, "n")])
    plain.put(NS, "n", {"text": "three"})
    plain.delete(NS, "n")
    plain.put(NS, "n", {"text": "again"})
    versions = plain.history(NS, "n")
    assert all(isinstance(v, Version) for v in versions)
    assert [(v.value["text"], v.change, v.status) for v in versions] == [
        ("again", None, None),
        ("three", "delete", None),
        ("two", "put", None),
        ("two", "restore", "retired"),
        ("two", "retire", None),
        ("one", "put", None),
    ]
    assert versions[0].current and versions[0].valid_to is None
    for newer, older in zip(versions[1:], versions[2:], strict=False):
        assert older.valid_to is not None and older.valid_to <= newer.valid_from
    assert versions[-1].valid_to == versions[-2].valid_from  # a put starts the next version where it ends the last
    assert versions[0].as_dict()["valid_to"] is None
    assert asyncio.run(plain.ahistory(NS, "n")) == versions
    assert plain.history(NS, "never-stored") == []


def test_a_change_inside_a_graph_run_records_its_thread_and_run(plain: ChromaStore) -> None:
    plain.put(NS, "n", {"text": "before the graph"})

    class State(TypedDict):
        text: str

    def write(state: State, store: BaseStore) -> State:
        store.put(NS, "n", {"text": state["text"]})
        return state

    graph = (
        StateGraph(State).add_node("write", write).add_edge(START, "write").add_edge("write", END).compile(store=plain)
    )
    graph.invoke(
        {"text": "from the graph"},
        # The LangGraph server puts the run's id in its metadata.
        {"configurable": {"thread_id": "t-48"}, "metadata": {"run_id": "5f0c0a3e-0000-4000-8000-000000000048"}},
    )
    ended = plain.history(NS, "n")[1]
    assert ended.value == {"text": "before the graph"} and ended.change == "put"
    assert ended.thread_id == "t-48"
    assert ended.run_id == "5f0c0a3e-0000-4000-8000-000000000048"
    plain.put(NS, "n", {"text": "outside"})
    assert plain.history(NS, "n")[1].thread_id is None  # outside a graph: no thread


def test_as_of_refuses_writes_with_a_typed_error_and_reads_naive_times_as_utc(plain: ChromaStore) -> None:
    plain.put(NS, "n", {"text": "old"})
    then = datetime.fromtimestamp(_tick(), tz=UTC)
    plain.put(NS, "n", {"text": "new"})
    view = plain.as_of(then.replace(tzinfo=None))  # naive: UTC
    assert view.get(NS, "n").value == {"text": "old"}  # type: ignore[union-attr]
    assert plain.as_of(then).get(NS, "n").value == {"text": "old"}  # type: ignore[union-attr]
    with pytest.raises(ReadOnlyError):
        view.put(NS, "m", {"text": "x"})
    with pytest.raises(ReadOnlyError):
        view.delete(NS, "n")
    with pytest.raises(InvalidArgumentError):
        plain.as_of("yesterday")  # type: ignore[arg-type]
    assert plain.get(NS, "m") is None


def test_a_graph_compiled_with_an_as_of_store_recalls_that_moment(plain: ChromaStore) -> None:
    plain.put(NS, "lesson", {"text": "tight stops whipsaw"})
    approved = _tick()
    plain.put(NS, "lesson", {"text": "wide stops bleed"})
    plain.put(NS, "later", {"text": "learnt after the approval"})

    class State(TypedDict):
        recalled: list[str]

    def recall(state: State, store: BaseStore) -> State:
        return {"recalled": sorted(h.value["text"] for h in store.search(NS, query="stops", limit=5))}

    builder = StateGraph(State).add_node("recall", recall).add_edge(START, "recall").add_edge("recall", END)
    assert builder.compile(store=plain.as_of(approved)).invoke({"recalled": []})["recalled"] == ["tight stops whipsaw"]
    now = builder.compile(store=plain).invoke({"recalled": []})["recalled"]
    assert now == ["learnt after the approval", "wide stops bleed"]


@pytest.mark.parametrize("hybrid", [False, True])
def test_one_as_of_view_keeps_answering_for_its_moment_while_the_memory_changes(
    data_dir: Path, fake_embeddings: DeterministicFakeEmbedding, hybrid: bool
) -> None:
    plain = ChromaStore(
        data_dir=data_dir,
        index={"dims": FAKE_DIMS, "embed": fake_embeddings},
        collections=None,
        ranking=HybridRanking() if hybrid else None,
    )
    try:
        _one_view_while_the_memory_changes(plain)
    finally:
        plain.close()


def _one_view_while_the_memory_changes(plain: ChromaStore) -> None:
    plain.put(NS, "a", {"text": "tight stops whipsaw"})
    plain.put(NS, "b", {"text": "wide stops bleed"})
    then = _tick()
    view = plain.as_of(then)

    def found() -> list[tuple[str, str, float]]:
        # Scores rounded: a version read from the history is scored from its float32 vectors on our side.
        return [(h.key, h.value["text"], round(h.score or 0.0, 6)) for h in view.search(NS, query="stops", limit=5)]

    before = found()
    listed = sorted(h.key for h in view.search(NS, limit=5))
    # Changes after the moment, each ending a version the view must now read from the history.
    plain.put(NS, "a", {"text": "stops moved"})
    assert found() == before
    plain.delete(NS, "b")
    plain.put(NS, "c", {"text": "new stops"})
    assert found() == before
    assert sorted(h.key for h in view.search(NS, limit=5)) == listed == ["a", "b"]
    # Pruning the history drops what the view could read, and the view sees that too.
    with plain.catalog.write() as conn:
        assert history.prune(conn, older_than=time.time() + 1) == 2
    assert [h.key for h in view.search(NS, query="stops", limit=5)] == []


@pytest.mark.parametrize("hybrid", [False, True], ids=["cosine", "hybrid"])
def test_views_of_one_moment_share_what_they_derive_yet_answer_for_it_after_changes_and_prunes(
    data_dir: Path, fake_embeddings: DeterministicFakeEmbedding, hybrid: bool
) -> None:
    store = ChromaStore(
        data_dir=data_dir,
        index={"dims": FAKE_DIMS, "embed": fake_embeddings},
        collections=None,
        ranking=HybridRanking() if hybrid else None,
    )

    def found(view: BaseStore, ns: tuple[str, ...]) -> list[tuple[str, str]]:
        return [(h.key, h.value["text"]) for h in view.search(ns, query="stops", limit=5)]

    try:
        moments = []
        for k in range(6):  # more moments than the store keeps: each view still answers for its own
            store.put(NS, "a", {"text": f"tight stops whipsaw {k}"})
            store.put(("other",), f"o{k}", {"text": f"stops elsewhere {k}"})
            moments.append(_tick())
        store.put(NS, "a", {"text": "stops moved"})  # every moment's version of "a" is now in the history
        views = [store.as_of(t) for t in moments]
        expected = [[("a", f"tight stops whipsaw {k}")] for k in range(6)]
        assert [found(v, NS) for v in views] == expected
        others = [found(v, ("other",)) for v in views]
        assert [len(o) for o in others] == [1, 2, 3, 4, 5, 5]
        # A second view of a moment answers as the first (from the moment they share), and after changes made
        # since both were made, so does a third.
        second = store.as_of(moments[0])
        assert found(second, NS) == expected[0]
        store.put(NS, "a", {"text": "stops again"})
        store.put(NS, "b", {"text": "new stops"})
        store.put(("other",), "o0", {"text": "changed"})  # its version of every moment now in the history too
        for view in (views[0], second, store.as_of(moments[0])):
            assert found(view, NS) == expected[0]
            assert found(view, ("other",)) == others[0]
        assert [found(v, NS) for v in views] == expected
        # A prune drops what every view of the moment could read, views made before it as well as after.
        with store.catalog.write() as conn:
            assert history.prune(conn, older_than=time.time() + 1) == 8
        for view in (views[0], second, store.as_of(moments[0])):
            assert found(view, NS) == found(view, ("other",)) == []
    finally:
        store.close()


def test_a_moment_keeps_a_bounded_number_of_scopes_and_terms_and_answers_past_it(
    plain: ChromaStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(past_versions, "MOMENT_CACHE_MAX", 2)
    plain.ranking = HybridRanking()
    for k in range(4):
        plain.put(("n", str(k)), "a", {"text": f"stops {k} carry"})
    then = _tick()
    for k in range(4):
        plain.put(("n", str(k)), "a", {"text": "moved"})
    view = plain.as_of(then)
    for word in ("stops", "carry", "0", "1", "2", "3"):
        for k in range(4):
            got = [(h.key, h.value["text"]) for h in view.search(("n", str(k)), query=f"{word} stops")]
            assert got == [("a", f"stops {k} carry")]
    # Two entries kept as asked, beside the three every hybrid search keeps (texts, corpus counts, later items).
    assert len(view._past().cache) <= 2 + 3


@pytest.mark.parametrize("hybrid", [False, True], ids=["cosine", "hybrid"])
def test_as_of_reads_past_the_best_past_versions_when_a_filter_rejects_them(
    data_dir: Path, fake_embeddings: DeterministicFakeEmbedding, hybrid: bool
) -> None:
    # 150 past versions in scope, of which the filter keeps every 25th: the search must read beyond the first
    # few dozen it ranks (by relevance, an upper bound of the final score) and still return the store's answer.
    clock = [time.time()]
    store = ChromaStore(
        data_dir=data_dir,
        index={"dims": FAKE_DIMS, "embed": fake_embeddings},
        collections=None,
        ranking=HybridRanking(clock=lambda: clock[0]) if hybrid else None,
    )
    words = ["carry", "momentum", "stops", "regime", "drawdown"]
    try:
        store.batch(
            [PutOp(NS, f"k{i}", {"text": f"{words[i % 5]} {words[i % 3]} note {i}", "n": i % 25}) for i in range(150)]
        )
        clock[0] = then = _tick()
        queries = [("carry stops", {"n": 7}), ("regime", {"n": 0}), ("momentum note", None)]
        want = [
            [(h.key, h.score) for h in store.search(NS, query=q, filter=f, limit=4, refresh_ttl=False)]
            for q, f in queries
        ]
        store.batch([PutOp(NS, f"k{i}", {"text": f"rewritten {i}", "n": -1}) for i in range(150)])
        view = store.as_of(then)
        got = [[(h.key, h.score) for h in view.search(NS, query=q, filter=f, limit=4)] for q, f in queries]
        assert [[k for k, _s in g] for g in got] == [[k for k, _s in w] for w in want]
        for g, w in zip(got, want, strict=True):
            assert [s for _k, s in g] == pytest.approx([s for _k, s in w], abs=1e-6)
        assert all(len(w) == 4 for w in want)
    finally:
        store.close()


def test_a_listing_as_of_a_moment_pages_newest_first_past_what_changed_since(plain: ChromaStore) -> None:
    # Twelve notes, each at its own instant; then five rewritten, two retired (a new version whose value is older
    # than it) and one written back from a store whose clock runs 30 s ahead. The listing's SQL seeks past what
    # was updated since: it must keep what only changed status, and the item from ahead is current from its
    # value's instant on, for gets and listings alike.
    for i in range(12):
        plain.put(NS, f"k{i:02}", {"text": f"note {i}"})
        _tick()
    then = _tick()
    listed_then = [(h.key, h.value) for h in plain.search(NS, limit=20)]
    for i in (11, 10, 7, 3, 0):
        plain.put(NS, f"k{i:02}", {"text": f"rewritten {i}"})
    plain.items.set_status([(NS, "k09"), (NS, "k05")], "retired", reason="stale")
    collection = plain.collections.for_namespace(NS).name
    moved = next(it for it in plain.items.iter_items(collection, with_vectors=True) if it.key == "k06")
    plain.items.delete_items(collection, [moved])
    ahead = time.time() + 30
    assert plain.items.restore_items([dataclasses.replace(moved, updated_at=ahead)]) == 1
    now = _tick()
    view = plain.as_of(then)
    assert [(h.key, h.value) for p in range(0, 12, 5) for h in view.search(NS, limit=5, offset=p)] == listed_then
    assert len(listed_then) == 12
    current = [h.key for h in plain.search(NS, limit=20)]
    assert current[0] == "k06" and "k09" not in current
    assert plain.as_of(now).get(NS, "k06") is None
    assert [h.key for h in plain.as_of(now).search(NS, limit=20)] == current[1:]
    assert plain.as_of(ahead).get(NS, "k06") is not None
    assert [h.key for h in plain.as_of(ahead).search(NS, limit=20)] == current
    with plain.catalog.read() as conn:
        assert conn.execute("SELECT count(*) FROM items WHERE valid_from < updated_at").fetchone()[0] == 0


def test_memory_history_finds_a_typed_item_by_its_id(data_dir: Path, fake_embeddings) -> None:
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        f = mem.store_research_finding("Carry unwinds in vol spikes", source="macro", confidence=0.7)
        mem.retire(f.id, "vendor restated the data")
        versions = mem.history(f.id)
        assert [(v.change, v.status) for v in versions] == [(None, "retired"), ("retire", None)]
        assert versions[1].value["content"] == "Carry unwinds in vol spikes"


def test_archived_items_stay_readable_as_of_their_time_and_retention_drops_old_versions(
    data_dir: Path, fake_embeddings
) -> None:
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        f = mem.store_research_finding("first wording", source="macro", confidence=0.7)
        ns = mem.lifecycle.locate(f.id)[0]
        for text in ("second wording", "third wording"):
            mem.store.put(ns, f.id, {**mem.store.get(ns, f.id).value, "content": text})  # type: ignore[union-attr]
        mem.retire(f.id, "superseded by a better source")
        before_archive = _tick()
        report = mem.archiver.run()  # retired items are archived at once
        assert report.total_archived == 1
        assert mem.store.get(ns, f.id) is None
        was = mem.store.as_of(before_archive).get(ns, f.id)
        assert was is not None and was.value["content"] == "third wording"
        assert [v.change for v in mem.history(f.id)] == ["archive", "retire", "put", "put"]
        # Keep two versions per item: the archived item (no current version) keeps its two newest past ones.
        mem.archiver.history_retention = HistoryRetention(versions=2)
        assert mem.archiver.run(dry_run=True).history_pruned == 2
        assert mem.archiver.run().history_pruned == 2
        assert [v.change for v in mem.history(f.id)] == ["archive", "retire"]
        mem.archiver.history_retention = HistoryRetention(days=0)
        assert mem.archiver.run(now=time.time() + 1).history_pruned == 2
        assert mem.history(f.id) == []


def test_history_retention_refuses_nonsense() -> None:
    with pytest.raises(InvalidArgumentError):
        HistoryRetention(versions=0)
    with pytest.raises(InvalidArgumentError):
        HistoryRetention(days=-1)
    assert HistoryRetention().keeps_all


def test_a_past_version_with_several_vectors_is_scored_by_its_best_one(plain: ChromaStore) -> None:
    plain.put(NS, "multi", {"a": "momentum fades", "b": "carry unwinds"}, index=["a", "b"])
    plain.put(NS, "other", {"a": "value works", "b": "quality persists"}, index=["a", "b"])
    then = _tick()
    plain.put(NS, "multi", {"a": "breakouts fail", "b": "ranges hold"}, index=["a", "b"])
    hits = plain.as_of(then).search(NS, query="carry unwinds", limit=2)
    assert [h.key for h in hits] == ["multi", "other"]
    assert hits[0].value == {"a": "momentum fades", "b": "carry unwinds"}
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)  # its second vector embeds the query's very text
    assert plain.search(NS, query="carry unwinds", limit=1)[0].value["a"] == "breakouts fail"


def test_a_copied_catalog_keeps_the_history(plain: ChromaStore, tmp_path: Path) -> None:
    from langgraph_memory.catalog import history as _history
    from langgraph_memory.catalog.catalog import Catalog
    from langgraph_memory.catalog.connection import both
    from langgraph_memory.catalog.item_rows import item_uid
    from langgraph_memory.catalog.transfer import copy_catalog

    plain.put(NS, "n", {"text": "one"})
    plain.put(NS, "n", {"text": "two"})
    plain.put(NS, "n", {"text": "three"})
    uid = item_uid(NS, "n")
    with plain.catalog.read() as conn:
        want = _history.records(conn, uid)
        since = conn.execute(both(conn, "SELECT valid_from FROM items WHERE uid = ?"), (uid,)).fetchone()[0]
    # Into a SQLite file (from the PostgreSQL catalog in that pass): the catalog as such, not a store's mapped folder.
    target = Catalog(tmp_path / "copy" / "catalog.sqlite")
    try:
        assert copy_catalog(plain.catalog, target).verified
        with target.read() as conn:
            assert _history.records(conn, uid) == want
            assert [r["value"]["text"] for r in want] == ["one", "two"]
            assert conn.execute("SELECT valid_from FROM items WHERE uid = ?", (uid,)).fetchone()[0] == since
    finally:
        target.close()


def test_a_bundle_exported_with_its_history_brings_the_past_versions_along(
    data_dir: Path, tmp_path: Path, fake_embeddings
) -> None:
    from langgraph_memory.bundle import export_bundle, import_bundle

    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        f = mem.store_research_finding("first wording", source="macro", confidence=0.7)
        ns = mem.lifecycle.locate(f.id)[0]
        mem.store.put(ns, f.id, {**mem.store.get(ns, f.id).value, "content": "second wording"})  # type: ignore[union-attr]
        mem.retire(f.id, "restated")
        want = [(v.value["content"], v.change, v.status, v.valid_from, v.valid_to) for v in mem.history(f.id)[1:]]
        assert export_bundle(mem.store, tmp_path / "plain").counts.get("past_versions") is None
        manifest = export_bundle(mem.store, tmp_path / "share", history=True)
        assert manifest.counts["past_versions"] == 2
    with Memory.open(tmp_path / "other", embeddings=fake_embeddings) as other:
        assert import_bundle(other.store, tmp_path / "plain").past_versions == 0
    with Memory.open(tmp_path / "target", embeddings=fake_embeddings) as target:
        assert import_bundle(target.store, tmp_path / "share").past_versions == 2
        got = [(v.value["content"], v.change, v.status, v.valid_from, v.valid_to) for v in target.history(f.id)[1:]]
        assert got == want
        assert import_bundle(target.store, tmp_path / "share").past_versions == 0  # importing twice adds nothing
        first = want[-1]
        was = target.store.as_of(first[3]).search(ns, query="first wording", limit=1)
        assert [h.value["content"] for h in was] == ["first wording"]


def test_a_version_10_catalog_loses_the_history_index_by_end_and_keeps_its_versions(
    data_dir: Path, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    from langgraph_memory.catalog.connection import POSTGRESQL, dialect_of

    def has_index(store: ChromaStore) -> bool:
        with store.catalog.read() as conn:
            if dialect_of(conn) == POSTGRESQL:
                return conn.execute("SELECT to_regclass('item_history_valid') IS NOT NULL").fetchone()[0]
            return conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'item_history_valid'").fetchone()[0]

    store = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings}, collections=None)
    store.put(NS, "n", {"text": "one"})
    then = _tick()
    store.put(NS, "n", {"text": "two"})
    assert not has_index(store)
    # What version 10 wrote: the index by end, and the version number.
    with store.catalog.write() as conn:
        conn.execute("CREATE INDEX item_history_valid ON item_history(valid_to, ns, valid_from, item_id)")
        if dialect_of(conn) == POSTGRESQL:
            conn.execute("UPDATE meta SET value = '10' WHERE key = 'schema_version'")
        else:
            conn.execute("PRAGMA user_version = 10")
    assert has_index(store)
    store.close()
    store = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings}, collections=None)
    try:
        assert not has_index(store)
        assert [v.value["text"] for v in store.history(NS, "n")] == ["two", "one"]
        assert store.as_of(then).get(NS, "n").value == {"text": "one"}  # type: ignore[union-attr]
        assert store.as_of(then).list_namespaces() == [NS]
        store.put(NS, "n", {"text": "three"})
        assert [v.value["text"] for v in store.history(NS, "n")] == ["three", "two", "one"]
    finally:
        store.close()


def test_as_of_hybrid_weighs_each_past_version_by_its_collections_memory_type(
    data_dir: Path, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    # An as-of search reads only the past versions whose final score (relevance times the weight their age leaves
    # them) reaches the best: with an age weighting that seconds change (episodic memories keep a fifth after a
    # second, semantic ones all of it), it must weigh each by its own collection's memory type, as the store did.
    clock = [time.time()]
    ranking = HybridRanking(
        clock=lambda: clock[0],
        temporal=TemporalConfig(episodic_memory_decay=6000.0, semantic_memory_decay=0.0),
        temporal_share=0.9,
    )
    store = ChromaStore(
        data_dir=data_dir,
        index={"dims": FAKE_DIMS, "embed": fake_embeddings},
        collections=CollectionRegistry(general=dataclasses.replace(GENERAL, memory_type="semantic")),
        ranking=ranking,
    )

    def found(view: BaseStore) -> list[tuple[str, float | None]]:
        return [(h.key, h.score) for h in view.search(NS, query="stops carry", limit=4)]

    try:
        for k in range(12):
            store.put(NS, f"k{k}", {"text": f"stops {k}" if k % 2 else f"carry trade {k}"})
            time.sleep(0.05)  # ages apart: an episodic memory written first would keep far less than the last
        clock[0] = then = _tick()
        want = found(store)
        for k in range(0, 12, 2):  # half of them change: the view ranks past versions against current items
            store.put(NS, f"k{k}", {"text": "moved"})
        got = found(store.as_of(then))
        assert [k for k, _s in got] == [k for k, _s in want]
        assert [s for _k, s in got] == pytest.approx([s for _k, s in want], abs=1e-9)
    finally:
        store.close()


def test_a_version_11_catalog_links_its_versions_into_chains_and_keeps_history_and_as_of_reads(
    data_dir: Path, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    from langgraph_memory.catalog.connection import POSTGRESQL, dialect_of

    def open_store() -> ChromaStore:
        return ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings}, collections=None)

    def texts(store: ChromaStore, key: str) -> list[tuple[str, str | None]]:
        return [(v.value["text"], v.change) for v in store.history(NS, key)]

    store = open_store()
    moments: list[float] = []
    for text in ("one", "two"):
        store.put(NS, "a", {"text": text})
        store.put(NS, "b", {"text": f"b {text}"})
        moments.append(_tick())
    store.delete(NS, "a")  # a key with two items: the first deleted, the second put later
    moments.append(_tick())
    store.put(NS, "a", {"text": "three"})
    store.put(NS, "a", {"text": "four"})
    store.items.set_status([(NS, "b")], "retired", reason="stale")
    moments.append(_tick())
    store.put(NS, "c", {"text": "c one"})
    store.put(NS, "c", {"text": "c two"})
    store.delete(NS, "c")  # a key with no item left
    moments.append(_tick())
    want = {k: texts(store, k) for k in ("a", "b", "c")}
    want_at = [
        {k: (got.value if (got := store.as_of(t).get(NS, k)) is not None else None) for k in ("a", "b", "c")}
        for t in moments
    ]
    assert len(want["a"]) == 4 and len(want["c"]) == 2
    # What version 11 had: no chains, an index of the history by item, and the version number.
    with store.catalog.write() as conn:
        conn.execute("ALTER TABLE item_history DROP COLUMN prev_id")
        conn.execute("ALTER TABLE items DROP COLUMN history_id")
        conn.execute("DROP TABLE history_heads")
        conn.execute("CREATE INDEX item_history_uid ON item_history(uid, valid_to)")
        if dialect_of(conn) == POSTGRESQL:
            conn.execute("UPDATE meta SET value = '11' WHERE key = 'schema_version'")
        else:
            conn.execute("PRAGMA user_version = 11")
    store.close()
    store = open_store()
    try:
        with store.catalog.read() as conn:
            if dialect_of(conn) == POSTGRESQL:
                assert conn.execute("SELECT to_regclass('item_history_uid') IS NULL").fetchone()[0]
            else:
                assert not conn.execute(
                    "SELECT count(*) FROM sqlite_master WHERE name = 'item_history_uid'"
                ).fetchone()[0]
        assert {k: texts(store, k) for k in ("a", "b", "c")} == want
        got_at = [
            {k: (got.value if (got := store.as_of(t).get(NS, k)) is not None else None) for k in ("a", "b", "c")}
            for t in moments
        ]
        assert got_at == want_at
        # Changes after the upgrade join the chains the migration linked.
        store.put(NS, "a", {"text": "five"})
        store.put(NS, "c", {"text": "c three"})
        store.put(NS, "c", {"text": "c four"})
        assert texts(store, "a") == [("five", None), ("four", "put"), *want["a"][1:]]
        assert texts(store, "c") == [("c four", None), ("c three", "put"), *want["c"]]
    finally:
        store.close()


def test_a_version_12_postgres_catalog_gets_the_procedure_that_keeps_versions_and_keeps_its_history(
    pg_database: str, tmp_path: Path, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    from langgraph_memory.catalog.postgres.schema import SCHEMA_VERSION
    from langgraph_memory.config import Settings

    def open_store() -> ChromaStore:
        settings = Settings.resolve(pg_database, local_dir=str(tmp_path / "local"))
        return ChromaStore(settings=settings, index={"dims": FAKE_DIMS, "embed": fake_embeddings}, collections=None)

    def texts(store: ChromaStore) -> list[tuple[str, str | None]]:
        return [(v.value["text"], v.change) for v in store.history(NS, "n")]

    store = open_store()
    store.put(NS, "n", {"text": "one"})
    then = _tick()
    store.put(NS, "n", {"text": "two"})
    # What version 12 had: no procedure (a version's INSERT went as text), and the version number.
    with store.catalog.write() as conn:
        conn.execute("DROP PROCEDURE lgm_keep_version")
        conn.execute("UPDATE meta SET value = '12' WHERE key = 'schema_version'")
    store.close()
    store = open_store()
    try:
        with store.catalog.read() as conn:
            assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
                SCHEMA_VERSION
            )
            assert conn.execute("SELECT to_regproc('lgm_keep_version') IS NOT NULL").fetchone()[0]
        assert texts(store) == [("two", None), ("one", "put")]
        assert store.as_of(then).get(NS, "n").value == {"text": "one"}  # type: ignore[union-attr]
        # A put (the item's own UPDATE points at the version) and a delete (the procedure points at it) after the
        # upgrade continue the key's chain; so does the key put again.
        store.put(NS, "n", {"text": "three"})
        store.delete(NS, "n")
        store.put(NS, "n", {"text": "four"})
        assert texts(store) == [("four", None), ("three", "delete"), ("two", "put"), ("one", "put")]
    finally:
        store.close()


def test_pruning_versions_anywhere_in_a_keys_chain_keeps_the_others_reachable(plain: ChromaStore) -> None:
    for text in ("one", "two", "three"):
        plain.put(NS, "n", {"text": text})
    uid = item_uid(NS, "n")
    old = {"value": {"text": "imported"}, "created_at": 1.0, "updated_at": 1.0, "valid_from": 1.0, "valid_to": 2.0}
    with plain.catalog.write() as conn:
        # Versions brought from elsewhere join the chain where it starts (the newest end): older than the rest.
        assert history.adopt(conn, uid, "notes", "n", "memories", [{**old, "change": "put"}]) == 1
    assert [v.value["text"] for v in plain.history(NS, "n")] == ["three", "two", "one", "imported"]
    with plain.catalog.write() as conn:
        assert history.prune(conn, older_than=3.0) == 1  # the imported version only, at the chain's start
    assert [v.value["text"] for v in plain.history(NS, "n")] == ["three", "two", "one"]
    plain.put(NS, "n", {"text": "four"})
    with plain.catalog.write() as conn:
        assert history.prune(conn, keep=2) == 2
    assert [v.value["text"] for v in plain.history(NS, "n")] == ["four", "three"]
    plain.delete(NS, "n")
    plain.put(NS, "n", {"text": "five"})
    assert [v.value["text"] for v in plain.history(NS, "n")] == ["five", "four", "three"]
