"""Retire, supersede, reinstate and hard delete: in searches (every plan), nodes, tools, lineage, archive and restore."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import SearchOp
from typing_extensions import TypedDict

from langgraph_memory.catalog._schema import SCHEMA_VERSION
from langgraph_memory.errors import NotFoundError, ValidationError
from langgraph_memory.graph.nodes import recall_node
from langgraph_memory.graph.tools import create_recall_tool
from langgraph_memory.memory import Memory
from langgraph_memory.store import ChromaStore, SearchAllOp
from tests.helpers.catalog_versions import make_version_1

DAY = 86400.0


@pytest.fixture
def mem(data_dir: Path, fake_embeddings):
    m = Memory.open(data_dir, embeddings=fake_embeddings)
    yield m
    m.close()


def _keys(items) -> set[str]:
    return {it.key for it in items}


# ------------------------------------------------------------- searches


@pytest.mark.parametrize("plan", ["exact", "hnsw", "scan"])
def test_retired_and_superseded_items_leave_every_search_plan(mem: Memory, plan: str) -> None:
    store = mem.store
    for i in range(30):
        store.put(("research",), f"f{i}", {"content": f"finding number {i}", "confidence": 0.5})
    if plan == "hnsw":
        store.planner.exact_max = 0  # force the Chroma path on a small collection
    query = None if plan == "scan" else "finding"
    assert store.explain(("research",), query=query).strategy == plan
    mem.retire("f3", "bad data", namespace=("research",))
    mem.supersede("f4", "f5", "restated", namespace=("research",), new_namespace=("research",))

    found = _keys(store.search(("research",), query=query, limit=30))
    assert found == {f"f{i}" for i in range(30)} - {"f3", "f4"}
    assert _keys(store.search(("research",), query=query, limit=30, include_retired=True)) == {
        f"f{i}" for i in range(30)
    }
    # offset and limit count visible items only
    page = store.search(("research",), query=query, limit=5, offset=25)
    assert len(page) == 3 and not {"f3", "f4"} & _keys(page)
    # a get by key still reads it
    assert store.get(("research",), "f3") is not None
    # SearchAllOp mixes with other ops in one batch
    plain, everything = store.batch(
        [
            SearchOp(("research",), {"confidence": 0.5}, 30, 0, query),
            SearchAllOp(("research",), {"confidence": 0.5}, 30, 0, query),
        ]
    )
    assert len(plain) == 28 and len(everything) == 30


async def test_async_search_hides_and_includes(mem: Memory) -> None:
    await mem.store.aput(("memories", "u1"), "a", {"text": "one"})
    await mem.store.aput(("memories", "u1"), "b", {"text": "two"})
    await mem.aretire("a", "wrong", namespace=("memories", "u1"))
    assert _keys(await mem.store.asearch(("memories",), query="one")) == {"b"}
    assert _keys(await mem.store.asearch(("memories",), query="one", include_retired=True)) == {"a", "b"}


def test_status_set_by_another_process_is_seen(data_dir: Path, fake_embeddings) -> None:
    index = {"dims": 16, "embed": fake_embeddings}
    with ChromaStore(data_dir=data_dir, index=index) as a, ChromaStore(data_dir=data_dir, index=index) as b:
        a.put(("memories",), "k", {"text": "x"})
        assert _keys(b.search(("memories",), query="x")) == {"k"}  # b caches an empty hidden set
        a.items.set_status([(("memories",), "k")], "retired", reason="r")
        assert _keys(b.search(("memories",), query="x")) == set()
        a.items.clear_status([(("memories",), "k")])
        assert _keys(b.search(("memories",), query="x")) == {"k"}


def test_status_survives_updates_but_not_delete_and_put_again(mem: Memory) -> None:
    ns = ("memories", "u1")
    mem.store.put(ns, "k", {"text": "v1"})
    mem.retire("k", "obsolete", namespace=ns)
    mem.store.put(ns, "k", {"text": "v2"})  # an update keeps created_at: still retired
    assert mem.status("k", namespace=ns) is not None and _keys(mem.store.search(ns)) == set()
    mem.store.delete(ns, "k")
    mem.store.put(ns, "k", {"text": "a new item under the old key"})
    assert mem.status("k", namespace=ns) is None
    assert _keys(mem.store.search(ns)) == {"k"}


def test_retire_supersede_reinstate_typed_items(mem: Memory) -> None:
    f1 = mem.store_research_finding("Momentum decays after earnings", source="technical")
    f2 = mem.store_research_finding("Momentum decays after earnings, corrected sample", source="technical")
    f3 = mem.store_research_finding("Analysts herd", source="technical")
    st = mem.supersede(f1.id, f2.id, "corrected the sample")
    assert (st.status, st.superseded_by, st.reason, st.collection) == (
        "superseded",
        f2.id,
        "corrected the sample",
        "research_findings",
    )
    assert "supersedes" in {e.relation for e in mem.lineage_store.parents(f2.id)}
    assert {h.id for h in mem.query_research_findings("momentum", k=10, min_relevance=None)} == {f2.id, f3.id}
    hits = {
        h.id: h.status for h in mem.query_research_findings("momentum", k=10, include_retired=True, min_relevance=None)
    }
    assert hits[f1.id] is not None and hits[f1.id].status == "superseded" and hits[f2.id] is None

    retired = mem.retire(f1.id, "the vendor restated the prices")
    assert retired.status == "retired" and retired.superseded_by == f2.id  # retiring keeps the replacement
    assert mem.reinstate(f1.id) is True and mem.status(f1.id) is None
    assert mem.reinstate(f1.id) is False
    assert f1.id in {h.id for h in mem.query_research_findings("momentum", k=10, min_relevance=None)}

    # superseding with an ancestor sets the status without a lineage cycle
    s1 = mem.store_strategy("mom", "v1")
    s2 = mem.store_strategy("mom", "v2")
    assert mem.supersede(s2.id, s1.id, "rolled back").superseded_by == s1.id
    assert [e.relation for e in mem.lineage_store.parents(s1.id)] == []
    assert {h.id for h in mem.get_similar_strategies("x", k=5, min_relevance=None)} == {s1.id}


def test_lifecycle_errors_change_nothing(mem: Memory) -> None:
    f = mem.store_research_finding("kept")
    with pytest.raises(ValidationError):
        mem.supersede(f.id, f.id)
    with pytest.raises(ValidationError, match="reason"):
        mem.retire(f.id, "  ")
    with pytest.raises(NotFoundError, match="namespace="):
        mem.retire("unknown-id", "x")
    with pytest.raises(NotFoundError):
        mem.retire("k", "x", namespace=("memories",))
    mem.store.put(("research",), "gone", {"content": "soon gone"})
    mem.store.delete(("research",), "gone")
    with pytest.raises(NotFoundError, match="no live item"):
        mem.supersede(f.id, "gone", new_namespace=("research",))
    assert mem.status(f.id) is None
    assert mem.lineage_store.children(f.id) == []


# -------------------------------------------------------- nodes, tools


class _S(TypedDict, total=False):
    query: str
    found: list


def _recall_graph(mem: Memory, **kwargs):
    b = StateGraph(_S)
    b.add_node(
        "recall", recall_node(("lessons",), query="query", output_key="found", k=10, **kwargs, min_relevance=None)
    )
    b.add_edge(START, "recall")
    b.add_edge("recall", END)
    return b.compile(store=mem.store)


async def test_nodes_and_tools_hide_retired_unless_asked(mem: Memory) -> None:
    keep = mem.store_lesson("Position sizing matters")
    old = mem.store_lesson("Stops too tight")
    new = mem.store_lesson("Stops at two ATR")
    mem.supersede(old.id, new.id)
    gone = mem.store_lesson("Irrelevant lesson")
    mem.retire(gone.id, "noise")

    visible = {keep.id, new.id}
    assert {h["key"] for h in _recall_graph(mem).invoke({"query": "stops"})["found"]} == visible
    assert {h["key"] for h in (await _recall_graph(mem).ainvoke({"query": "stops"}))["found"]} == visible
    everything = {keep.id, new.id, old.id, gone.id}
    graph = _recall_graph(mem, include_retired=True)
    assert {h["key"] for h in graph.invoke({"query": "stops"})["found"]} == everything

    tool = create_recall_tool(("lessons",), store=mem.store, k=10, min_relevance=None)
    import json

    assert {h["key"] for h in json.loads(tool.invoke({"query": "stops"}, {"configurable": {}}))} == visible
    assert {h["key"] for h in json.loads(await tool.ainvoke({"query": "stops"}, {"configurable": {}}))} == visible
    tool_all = create_recall_tool(("lessons",), store=mem.store, k=10, include_retired=True, min_relevance=None)
    assert {h["key"] for h in json.loads(tool_all.invoke({"query": "stops"}, {"configurable": {}}))} == everything


def test_include_retired_is_harmless_with_other_stores(fake_embeddings) -> None:
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore(index={"dims": 16, "embed": fake_embeddings})
    store.put(("lessons",), "a", {"lesson": "x"})
    b = StateGraph(_S)
    b.add_node(
        "recall", recall_node(("lessons",), query="query", output_key="found", include_retired=True, min_relevance=None)
    )
    b.add_edge(START, "recall")
    b.add_edge("recall", END)
    assert [h["key"] for h in b.compile(store=store).invoke({"query": "x"})["found"]] == ["a"]


# -------------------------------------------------------------- lineage


def test_lineage_shows_retired_and_superseded_with_their_status(mem: Memory) -> None:
    f = mem.store_research_finding("Vol clusters")
    h = mem.store_hypothesis("Breakouts fail in volatile spells", parent_id=f.id)
    h2 = mem.store_hypothesis("Breakouts fail in volatile spells unless filtered", parent_id=f.id)
    s = mem.store_strategy("vb", "Breakouts", hypothesis_id=h2.id)
    mem.supersede(h.id, h2.id, "refined")
    mem.retire(f.id, "bad sample")
    lin = mem.lineage(s.id)
    nodes = {n.id: n for n in lin.ancestors}
    assert (nodes[f.id].lifecycle, nodes[f.id].reason) == ("retired", "bad sample")
    assert nodes[f.id].label.endswith("[retired: bad sample]")
    assert nodes[h.id].lifecycle == "superseded" and nodes[h.id].superseded_by == h2.id
    assert nodes[h.id].label.endswith(f"[superseded by {h2.id}]")
    assert nodes[h2.id].lifecycle == "active" and nodes[h2.id].label == nodes[h2.id].summary
    assert lin.ancestor_ids == [f.id, h.id, h2.id]


# -------------------------------------------------------------- archive


def test_archive_takes_retired_at_once_and_superseded_after_90_idle_days(mem: Memory) -> None:
    s1 = mem.store_strategy("mom", "10-day momentum")
    s2 = mem.store_strategy("mom", "60-day momentum")
    s3 = mem.store_strategy("carry", "FX carry")
    lesson = mem.store_lesson("fresh lesson")
    mem.retire(s3.id, "abandoned")
    mem.retire(lesson.id, "duplicate")
    mem.supersede(s1.id, s2.id, "better lookback")
    archiver = mem.archiver

    dry = archiver.run(dry_run=True)
    strat = dry.collections["strategy_library"]  # no policy: only status selects
    assert (strat.selected, strat.retired, strat.superseded) == (1, 1, 0)
    assert "retired at once" in strat.policy and "superseded and idle > 90 days" in strat.policy
    assert dry.collections["lessons_learned"].retired == 1
    assert "research_findings" not in dry.collections or dry.collections["research_findings"].selected == 0

    report = archiver.run()
    assert report.collections["strategy_library"].archived == 1
    assert report.collections["lessons_learned"].archived == 1
    assert mem.store.get(("strategies",), s3.id) is None and mem.store.get(("strategies",), s1.id) is not None
    later = archiver.run(now=report.now + 91 * DAY)
    assert later.collections["strategy_library"].superseded == 1
    assert mem.store.get(("strategies",), s1.id) is None

    # archived lines carry the status; lineage still shows it
    archived = {a.key: a for a in archiver.get_archived(keys=[s1.id, s3.id])}
    assert archived[s3.id].status is not None and archived[s3.id].status.reason == "abandoned"
    assert archived[s1.id].status is not None and archived[s1.id].status.superseded_by == s2.id
    node = mem.lineage(s2.id).ancestors[0]
    assert (node.id, node.storage, node.lifecycle) == (s1.id, "archived", "superseded")

    # restored, it comes back retired (hidden) and is not re-archived at once
    assert archiver.restore(keys=[s3.id]).restored == 1
    assert mem.store.get(("strategies",), s3.id) is not None
    assert mem.status(s3.id) is not None and mem.status(s3.id).status == "retired"  # type: ignore[union-attr]
    assert s3.id not in {h.id for h in mem.get_similar_strategies("carry", k=10, min_relevance=None)}
    assert archiver.run().collections["strategy_library"].archived == 0


def test_restore_brings_back_a_status_the_catalog_lost(mem: Memory) -> None:
    f = mem.store_research_finding("to be archived")
    mem.retire(f.id, "stale")
    archiver = mem.archiver
    archiver.run()
    with mem.store.catalog.write() as conn:  # as if the catalog had been restored from an older backup
        conn.execute("DELETE FROM item_status")
    archiver.restore(keys=[f.id])
    st = mem.status(f.id)
    assert st is not None and (st.status, st.reason) == ("retired", "stale")
    assert mem.query_research_findings("archived", k=5, min_relevance=None) == []


def test_archive_can_leave_retired_items_alone(mem: Memory) -> None:
    from langgraph_memory.archive import Archiver

    s = mem.store_strategy("x", "y")
    mem.retire(s.id, "r")
    archiver = Archiver(mem.store, retired_after_days=None, superseded_after_days=None)
    try:
        assert "strategy_library" not in archiver.run().collections
    finally:
        archiver.close()
    assert mem.store.get(("strategies",), s.id) is not None


# ---------------------------------------------------------- hard delete


def test_hard_delete_says_what_it_removes(mem: Memory) -> None:
    f = mem.store_research_finding("parent")
    s1 = mem.store_strategy("mom", "v1", parent_id=f.id)
    s2 = mem.store_strategy("mom", "v2")
    lesson = mem.store_lesson("child", strategy_id=s1.id)
    mem.retire(s1.id, "wrong")

    dry = mem.delete(s1.id, dry_run=True)
    assert dry.dry_run and dry.live and dry.vectors == 1 and dry.lineage_node
    assert dry.version == ("mom", 1) and dry.status is not None and dry.status.status == "retired"
    assert {(e.child_id, e.parent_id, e.relation) for e in dry.edges} == {
        (s1.id, f.id, "derived_from"),
        (s2.id, s1.id, "previous_version"),
        (lesson.id, s1.id, "produced"),
    }
    assert str(dry).startswith(f"would delete {s1.id} in strategy_library")
    assert "3 links" in str(dry) and "version 1 of 'mom'" in str(dry) and "retired status" in str(dry)
    assert mem.store.get(("strategies",), s1.id) is not None  # the dry run removed nothing
    assert mem.lineage_store.item(s1.id) is not None

    report = mem.delete(s1.id)
    assert not report.dry_run and report.live and len(report.edges) == 3
    assert mem.store.get(("strategies",), s1.id) is None
    assert mem.lineage_store.item(s1.id) is None and mem.lineage_store.parents(lesson.id) == []
    assert [v.version for v in mem.versions("mom")] == [2]
    with mem.store.catalog.read() as conn:
        assert conn.execute("SELECT count(*) FROM item_status").fetchone()[0] == 0
    with pytest.raises(NotFoundError):
        mem.delete(s1.id)  # gone from lineage too: name it by namespace to look further
    assert not mem.delete(s1.id, namespace=("strategies",)).removed_anything

    ns = ("memories", "u1")
    mem.store.put(ns, "note", {"text": "plain item"})
    assert mem.delete("note", namespace=ns).live and mem.store.get(ns, "note") is None


def test_hard_delete_drops_archived_copies(mem: Memory) -> None:
    lesson = mem.store_lesson("archived then deleted")
    mem.retire(lesson.id, "old")
    archiver = mem.archiver
    archiver.run()
    assert [a.key for a in archiver.get_archived(keys=[lesson.id])] == [lesson.id]
    report = mem.delete(lesson.id)
    assert (report.live, report.archived_copies) == (False, 1)
    assert archiver.get_archived(keys=[lesson.id]) == []
    assert archiver.search_archive("lessons", "archived", k=5) == []
    assert archiver.restore(keys=[lesson.id]).restored == 0


def test_delete_many_removes_everything_each_item_had_in_one_go(mem: Memory) -> None:
    f = mem.store_research_finding("parent")
    s = mem.store_strategy("mom", "v1", parent_id=f.id)
    archived = mem.store_lesson("archived, then deleted", strategy_id=s.id)
    mem.retire(archived.id, "old")
    mem.archiver.run()
    ns = ("memories", "u1")
    mem.store.put(ns, "note", {"text": "plain item"})
    mem.retire("note", "noise", namespace=ns)
    keys = [(("strategies",), s.id), (("lessons",), archived.id), (ns, "note"), (ns, "never-stored")]
    dry = mem.lifecycle.delete_many(keys, dry_run=True)
    assert [r.id for r in dry] == [s.id, archived.id, "note", "never-stored"]
    assert [(r.live, r.lineage_node, len(r.edges), r.archived_copies) for r in dry] == [
        (True, True, 2, 0),
        (False, True, 1, 1),
        (True, False, 0, 0),
        (False, False, 0, 0),
    ]
    assert dry[2].status is not None and dry[2].status.reason == "noise" and not dry[3].removed_anything
    assert dry[0].version == ("mom", 1) and dry[1].as_dict()["archived_copies"] == 1
    assert mem.store.get(ns, "note") is not None and mem.lineage_store.item(s.id) is not None  # a dry run

    done = mem.lifecycle.delete_many(keys)
    assert [r.as_dict() | {"dry_run": True} for r in done] == [r.as_dict() for r in dry]
    assert mem.store.get(ns, "note") is None and mem.store.get(("strategies",), s.id) is None
    assert mem.lineage_store.items([s.id, archived.id]) == {} and mem.lineage_store.children(f.id) == []
    assert mem.archiver.get_archived(keys=[archived.id]) == [] and mem.versions("mom") == []
    with mem.store.catalog.read() as conn:
        assert conn.execute("SELECT count(*) FROM item_status").fetchone()[0] == 0
    assert not any(r.removed_anything for r in mem.lifecycle.delete_many(keys, dry_run=True))


# ------------------------------------------------------------ migration


def test_a_version_1_catalog_migrates(data_dir: Path, fake_embeddings) -> None:
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        f = mem.store_research_finding("from before the upgrade")
    make_version_1(data_dir / "catalog.sqlite")
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        assert mem.get(f.id).content == "from before the upgrade"  # type: ignore[attr-defined]
        mem.retire(f.id, "after the upgrade")
        assert mem.query_research_findings("upgrade", min_relevance=None) == []
    conn = sqlite3.connect(data_dir / "catalog.sqlite")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    # Version 2 counted what the catalog held: the finding and its vector.
    assert conn.execute(
        "SELECT n_items, n_vectors FROM collection_counts WHERE collection = 'research_findings'"
    ).fetchone() == (1, 1)
    conn.close()
