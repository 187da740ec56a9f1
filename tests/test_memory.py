"""Memory: opening a data directory, and every call of the typed research API (sync and async)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memory.checkpoint import SqliteCheckpointer
from langgraph_memory.errors import (
    ConfigError,
    LineageCycleError,
    LineageError,
    NotFoundError,
    ValidationError,
)
from langgraph_memory.memory import Memory
from langgraph_memory.research.collections import Lesson, ResearchFinding, Strategy
from langgraph_memory.store import ChromaStore
from tests.helpers import catalog_backend


@pytest.fixture
def mem(data_dir: Path, fake_embeddings):
    m = Memory.open(data_dir, embeddings=fake_embeddings)
    yield m
    m.close()


def _is_uuid(value: str) -> bool:
    return str(uuid.UUID(value)) == value


# ------------------------------------------------------------------ opening


def test_open_hands_out_store_checkpointer_and_files(data_dir: Path, fake_embeddings) -> None:
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        assert isinstance(mem.store, ChromaStore)
        if catalog_backend.active():  # threads beside the catalog, on the server
            assert type(mem.checkpointer).__name__ == "PostgresCheckpointer"
            mem.store_research_finding("x")
            assert not (data_dir / "catalog.sqlite").exists()
        else:
            assert isinstance(mem.checkpointer, SqliteCheckpointer)
            assert Path(mem.checkpointer.path) == data_dir.resolve() / "checkpoints.sqlite"
            mem.store_research_finding("x")
            assert (data_dir / "catalog.sqlite").exists()
    with pytest.raises(ConfigError, match="closed"):
        mem.store_research_finding("after close")
    mem.close()  # idempotent


def test_open_uses_env_data_dir(data_dir: Path, fake_embeddings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGGRAPH_MEMORY_DIR", str(data_dir))
    with Memory.open(embeddings=fake_embeddings) as mem:
        assert Path(mem.data_dir) == data_dir.resolve()


def test_passed_checkpointer_is_used_and_not_closed(data_dir: Path, fake_embeddings, tmp_path: Path) -> None:
    saver = SqliteCheckpointer(tmp_path / "mine.sqlite")
    with Memory.open(data_dir, embeddings=fake_embeddings, checkpointer=saver) as mem:
        assert mem.checkpointer is saver
    # still usable: Memory did not close what it did not open
    assert list(saver.list(None)) == []
    saver.close()
    with Memory.open(data_dir, embeddings=fake_embeddings, checkpointer=InMemorySaver()) as mem:
        assert isinstance(mem.checkpointer, InMemorySaver)


def test_compile_wires_store_and_checkpointer(mem: Memory) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.store.base import BaseStore

    class S(TypedDict):
        n: int

    seen = {}

    def node(state: S, *, store: BaseStore) -> dict:
        seen["store"] = store
        return {"n": state["n"] + 1}

    b = StateGraph(S)
    b.add_node("node", node)
    b.add_edge(START, "node")
    b.add_edge("node", END)
    graph = mem.compile(b)
    cfg = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"n": 1}, cfg) == {"n": 2}
    assert seen["store"] is mem.store
    assert graph.get_state(cfg).values == {"n": 2}


# ------------------------------------------------------------------ research


def test_research_findings_store_and_query_filters(mem: Memory) -> None:
    f1 = mem.store_research_finding("Momentum decays after earnings", source="technical", confidence=0.9, tags=["eq"])
    f2 = mem.store_research_finding("Carry unwinds in volatility spikes", source="macro", confidence=0.4)
    f3 = mem.store_research_finding("Analysts herd", source="technical")
    assert isinstance(f1, ResearchFinding) and _is_uuid(f1.id)
    assert f1.created_at is not None and f1.tags == ["eq"]
    # stored as an ordinary store item, keyed by the id, in ("research",)
    item = mem.store.get(("research",), f1.id)
    assert item is not None and item.value["confidence"] == 0.9

    all_ids = {h.id for h in mem.query_research_findings("anything", k=10, min_relevance=None)}
    assert all_ids == {f1.id, f2.id, f3.id}
    assert {h.id for h in mem.query_research_findings("x", k=10, source="technical", min_relevance=None)} == {
        f1.id,
        f3.id,
    }
    # findings without a confidence do not pass a minimum
    assert {h.id for h in mem.query_research_findings("x", k=10, min_confidence=0.5, min_relevance=None)} == {f1.id}
    assert {h.id for h in mem.query_research_findings("x", k=10, min_confidence=0.3, min_relevance=None)} == {
        f1.id,
        f2.id,
    }
    hits = mem.query_research_findings("x", k=2, min_relevance=None)
    assert len(hits) == 2 and all(isinstance(h.score, float) for h in hits)
    assert hits[0].score >= hits[1].score
    assert mem.query_research_findings("x", k=10, min_relevance=0.999) == []
    with pytest.raises(ValidationError, match="min_relevance must be a fraction from -1 to 1"):
        mem.query_research_findings("x", k=10, min_relevance=1.01)  # scores are at most 1


def test_research_finding_validation(mem: Memory) -> None:
    with pytest.raises(ValidationError):
        mem.store_research_finding("bad", confidence=1.5)
    with pytest.raises(ValidationError):
        mem.store_research_finding("")
    assert mem.store.items.count("research_findings") == 0


# ---------------------------------------------------------------- strategies


def test_strategy_versions_and_status(mem: Memory) -> None:
    f = mem.store_research_finding("Trends persist for months")
    s1 = mem.store_strategy(
        "mom",
        "20-day momentum",
        parameters={"lookback": 20, "asset_class": "equity"},
        metrics={"sharpe_ratio": 0.4, "max_drawdown": 0.3, "win_rate": 0.52},
        parent_id=f.id,
    )
    s2 = mem.store_strategy("mom", "60-day momentum", parameters={"lookback": 60})
    other = mem.store_strategy("carry", "FX carry")
    assert (s1.version, s2.version, other.version) == (1, 2, 1)
    assert isinstance(s1, Strategy) and s1.status == "draft" and s1.approved_at is None
    assert (s1.sharpe_ratio, s1.max_drawdown, s1.win_rate, s1.asset_class) == (0.4, 0.3, 0.52, "equity")

    versions = mem.versions("mom")
    assert [(v.version, v.id) for v in versions] == [(1, s1.id), (2, s2.id)]
    assert versions[1].record is not None and versions[1].record.description == "60-day momentum"
    assert mem.versions("nope") == []
    # the previous version is a parent of the next
    assert [(e.parent_id, e.relation) for e in mem.lineage_store.parents(s2.id)] == [(s1.id, "previous_version")]

    approved = mem.approve_strategy(s2.id)
    assert approved.status == "approved" and approved.approved_at is not None
    assert mem.get(s2.id).status == "approved"  # type: ignore[attr-defined]
    assert mem.set_strategy_status(s1.id, "deprecated").status == "deprecated"
    with pytest.raises(ValidationError):
        mem.set_strategy_status(s1.id, "live")
    with pytest.raises(ValidationError):
        mem.store_strategy("x", "y", status="shipped")
    with pytest.raises(ValidationError):
        mem.store_strategy("", "no name")
    with pytest.raises(ValidationError, match="collection"):
        mem.set_strategy_status(f.id, "approved")  # a finding is not a strategy
    with pytest.raises(NotFoundError):
        mem.approve_strategy(str(uuid.uuid4()))


def test_similar_strategies_status_filter(mem: Memory) -> None:
    a = mem.store_strategy("a", "momentum on equities", status="approved")
    b = mem.store_strategy("b", "momentum on bonds", status="tested")
    mem.store_strategy("c", "carry on FX", status="draft")
    assert {h.id for h in mem.get_similar_strategies("momentum", k=10, status="approved", min_relevance=None)} == {a.id}
    assert {h.id for h in mem.get_similar_strategies("momentum", k=10, status="tested", min_relevance=None)} == {b.id}
    assert len(mem.get_similar_strategies("momentum", k=10, min_relevance=None)) == 3
    assert {h.id for h in mem.get_similar_strategies("x", k=10, name="b", min_relevance=None)} == {b.id}
    with pytest.raises(ValidationError):
        mem.get_similar_strategies("x", status="nonsense", min_relevance=None)


# ------------------------------------------------------------------- lessons


def test_lessons_store_relevant_unresolved_and_resolve(mem: Memory) -> None:
    s1 = mem.store_strategy("mom", "10-day momentum")
    l1 = mem.store_lesson(
        "Lookback too short: whipsaw",
        strategy_id=s1.id,
        iteration=1,
        failure_type="backtest",
        feedback={"trades": 140},
    )
    l2 = mem.store_lesson("Drawdown too deep", strategy_id=s1.id, iteration=2, failure_type="quality_gate")
    assert isinstance(l1, Lesson) and not l1.resolved and l1.feedback == {"trades": 140}
    assert [(e.parent_id, e.relation) for e in mem.lineage_store.parents(l1.id)] == [(s1.id, "produced")]
    assert {h.id for h in mem.get_relevant_lessons("momentum", k=10, min_relevance=None)} == {l1.id, l2.id}
    assert {h.id for h in mem.get_relevant_lessons("x", k=10, failure_type="backtest", min_relevance=None)} == {l1.id}

    s2 = mem.store_strategy("mom", "60-day momentum", parent_id=l1.id)
    resolved = mem.resolve_lesson(l1.id, s2.id)
    assert resolved.resolved and resolved.resolution_id == s2.id
    assert {h.id for h in mem.get_relevant_lessons("momentum", k=10, min_relevance=None)} == {l2.id}
    assert {h.id for h in mem.get_relevant_lessons("momentum", k=10, include_resolved=True, min_relevance=None)} == {
        l1.id,
        l2.id,
    }
    assert "resolves" in {e.relation for e in mem.lineage_store.parents(s2.id)}


def test_resolving_with_an_ancestor_is_a_cycle(mem: Memory) -> None:
    s1 = mem.store_strategy("mom", "10-day momentum")
    lesson = mem.store_lesson("too short", strategy_id=s1.id, iteration=1)
    with pytest.raises(LineageCycleError):
        mem.resolve_lesson(lesson.id, s1.id)  # s1 produced the lesson
    # nothing changed
    assert mem.get(lesson.id).resolved is False  # type: ignore[attr-defined]
    with pytest.raises(LineageCycleError):
        mem.link(s1.id, lesson.id)


def test_unknown_parent_is_refused_and_nothing_written(mem: Memory) -> None:
    with pytest.raises(LineageError, match="unknown parent"):
        mem.store_strategy("mom", "x", parent_id=str(uuid.uuid4()))
    assert mem.store.items.count("strategy_library") == 0
    assert mem.versions("mom") == []  # the version number was not consumed
    assert mem.store_strategy("mom", "x").version == 1


# ------------------------------------------------------------------- regimes


def test_market_regimes(mem: Memory) -> None:
    r1 = mem.store_market_regime(
        "High volatility selloff", regime_type="volatile", volatility=0.35, start_date="2020-02-20"
    )
    mem.store_market_regime("Quiet uptrend", regime_type="bull", volatility=0.1, trend_strength=0.8)
    assert _is_uuid(r1.id) and r1.volatility == 0.35
    assert {h.id for h in mem.query_market_regimes("selloff", k=10, regime_type="volatile", min_relevance=None)} == {
        r1.id
    }
    assert len(mem.query_market_regimes("market", k=10, min_relevance=None)) == 2
    with pytest.raises(ValidationError):
        mem.store_market_regime("x", regime_type="crab")


# ------------------------------------------------------------------- lineage


def test_lineage_across_collections_and_restart(data_dir: Path, fake_embeddings) -> None:
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        f = mem.store_research_finding("Vol clusters", source="technical")
        s1 = mem.store_strategy("vb", "Breakouts after calm weeks", parent_id=f.id)
        lesson = mem.store_lesson("Breakouts fail in chop", strategy_id=s1.id, iteration=1)
        s2 = mem.store_strategy("vb", "Breakouts with a trend filter", parent_id=lesson.id)
        mem.resolve_lesson(lesson.id, s2.id)
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        lin = mem.lineage(s2.id)
        assert lin.ancestor_ids == [f.id, s1.id, lesson.id]
        assert [a.collection for a in lin.ancestors] == ["research_findings", "strategy_library", "lessons_learned"]
        assert lin.ancestors[0].summary == "Vol clusters"
        assert lin.ancestors[1].summary.startswith("vb v1 [draft]")
        assert "[resolved]" in lin.ancestors[2].summary
        assert all(a.storage == "live" for a in lin.ancestors)
        tree = mem.lineage(f.id).descendants
        assert tree.node.id == f.id
        assert [c.node.id for c in tree.children] == [s1.id]
        s1_children = {c.node.id: c.node.relation for c in tree.children[0].children}
        assert s1_children == {lesson.id: "produced", s2.id: "previous_version"}
        assert [v.version for v in mem.versions("vb")] == [1, 2]
        # the store after restart allocates the next number
        assert mem.store_strategy("vb", "third").version == 3
        with pytest.raises(NotFoundError):
            mem.lineage(str(uuid.uuid4()))


def test_lineage_of_item_gone_from_store_shows_unknown(mem: Memory) -> None:
    f = mem.store_research_finding("will be archived")
    s = mem.store_strategy("x", "child", parent_id=f.id)
    mem.store.delete(("research",), f.id)
    node = mem.lineage(s.id).ancestors[0]
    assert node.id == f.id and node.storage == "unknown"
    assert f.id in node.summary and "archived/unknown" in node.summary
    with pytest.raises(NotFoundError, match="no longer in the store"):
        mem.get(f.id)


def test_lineage_uses_archive_lookup_when_given(data_dir: Path, fake_embeddings) -> None:
    mem = Memory.open(data_dir, embeddings=fake_embeddings)
    try:
        f = mem.store_research_finding("archived finding")
        s = mem.store_strategy("x", "child", parent_id=f.id)
        mem.store.delete(("research",), f.id)
        mem._archive_lookup = lambda ids: {i: {"content": "from the archive"} for i in ids}
        node = mem.lineage(s.id).ancestors[0]
        assert (node.storage, node.summary) == ("archived", "from the archive")
    finally:
        mem.close()


def test_scope_adds_labels(data_dir: Path, fake_embeddings) -> None:
    with Memory.open(data_dir, embeddings=fake_embeddings, scope="desk-1") as mem:
        f = mem.store_research_finding("scoped")
        assert mem.store.get(("research", "desk-1"), f.id) is not None
        assert mem.query_research_findings("scoped", min_relevance=None)[0].namespace == ("research", "desk-1")
    with pytest.raises(ConfigError):
        Memory.open(data_dir, embeddings=fake_embeddings, scope="bad.label")


# --------------------------------------------------------------------- async


async def test_async_twins(mem: Memory) -> None:
    f = await mem.astore_research_finding("async finding", source="a", confidence=0.8)
    s1 = await mem.astore_strategy("as", "async strategy", parent_id=f.id)
    s2 = await mem.astore_strategy("as", "async strategy 2")
    lesson = await mem.astore_lesson("async lesson", strategy_id=s1.id, iteration=1)
    r = await mem.astore_market_regime("async regime", regime_type="bear")
    assert [h.id for h in await mem.aquery_research_findings("x", min_confidence=0.5, min_relevance=None)] == [f.id]
    assert {h.id for h in await mem.aget_similar_strategies("x", k=5, min_relevance=None)} == {s1.id, s2.id}
    assert [h.id for h in await mem.aget_relevant_lessons("x", min_relevance=None)] == [lesson.id]
    assert [h.id for h in await mem.aquery_market_regimes("x", regime_type="bear", min_relevance=None)] == [r.id]
    assert (await mem.aresolve_lesson(lesson.id, s2.id)).resolved
    assert (await mem.aapprove_strategy(s2.id)).status == "approved"
    assert (await mem.aset_strategy_status(s1.id, "deprecated")).status == "deprecated"
    assert [v.version for v in await mem.aversions("as")] == [1, 2]
    assert (await mem.alineage(s1.id)).ancestor_ids == [f.id]
    assert (await mem.aget(r.id)).id == r.id  # type: ignore[attr-defined]
    await mem.alink(r.id, f.id)
    assert (await mem.alineage(r.id)).ancestor_ids == [f.id]


async def test_async_context_manager(data_dir: Path, fake_embeddings) -> None:
    async with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        await mem.astore_lesson("inside")
    with pytest.raises(ConfigError):
        mem.get_relevant_lessons("x", min_relevance=None)


# ------------------------------------------------------------ real semantics


@pytest.mark.slow
def test_semantic_recall_with_the_default_model(data_dir: Path, real_embeddings) -> None:
    with Memory.open(data_dir, embeddings=real_embeddings) as mem:
        whipsaw = mem.store_lesson("Short lookback momentum gets whipsawed in choppy volatile markets")
        mem.store_lesson("The office coffee machine needs descaling every month")
        mem.store_lesson("Bond auctions settle two days after the trade date")
        hits = mem.get_relevant_lessons(
            "trend following strategy losing money in a volatile market", k=3, min_relevance=None
        )
        assert hits[0].id == whipsaw.id
        assert hits[0].score > hits[1].score
        relevant = mem.get_relevant_lessons("momentum whipsaw", min_relevance=0.3)
        assert [h.id for h in relevant] == [whipsaw.id]


def test_archiver_is_lazy_and_closed(data_dir: Path, fake_embeddings) -> None:
    pytest.importorskip("langgraph_memory.archive")
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        assert mem._archiver is None
        archiver = mem.archiver
        assert archiver is mem.archiver
        assert Path(archiver.archive_dir) == data_dir.resolve() / "archive"


# ------------------------------------------------------- one owner of the data directory


def test_open_takes_the_store_configuration(data_dir: Path, fake_embeddings) -> None:
    index = {"dims": 16, "embed": fake_embeddings, "fields": ["text"]}
    with Memory.open(data_dir, index=index, ttl={"default_ttl": 60, "omit_expired": True}) as mem:
        assert mem.store.index_config is not None and mem.store.index_config["fields"] == ["text"]
        assert mem.store.ttl_config == {"default_ttl": 60, "omit_expired": True}
        mem.store.put(("memories",), "k", {"text": "with a ttl"})
        assert mem.store.items.get(("memories",), "k").ttl_minutes == 60  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="not both"):
        Memory.open(data_dir, embeddings=fake_embeddings, index=index)


def test_open_on_a_given_store_uses_its_settings_and_leaves_it_open(data_dir: Path, fake_embeddings) -> None:
    store = ChromaStore(data_dir=data_dir, index={"dims": 16, "embed": fake_embeddings})
    try:
        with Memory.open(store=store) as mem:
            assert mem.store is store and mem.settings is store.settings
            if not catalog_backend.active():
                assert Path(mem.checkpointer.path) == data_dir.resolve() / "checkpoints.sqlite"
            f = mem.store_research_finding("through the given store")
        assert store.get(("research",), f.id) is not None  # Memory did not close what it did not open
        with pytest.raises(ConfigError, match="data_dir"):
            Memory.open(data_dir, store=store)
        with pytest.raises(ConfigError, match="ChromaStore"):
            from langgraph.store.memory import InMemoryStore

            Memory.open(store=InMemoryStore())  # type: ignore[arg-type]
    finally:
        store.close()


def test_memory_node_and_archiver_share_one_lineage_store_and_one_settings(
    data_dir: Path, fake_embeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    from langgraph_memory.config import Settings
    from langgraph_memory.graph.nodes import store_node
    from langgraph_memory.research.lineage import LineageStore

    made: list[LineageStore] = []
    resolved: list[Settings] = []
    real_init, real_resolve = LineageStore.__init__, Settings.resolve.__func__  # type: ignore[attr-defined]

    def counting_init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        made.append(self)
        real_init(self, *args, **kwargs)

    def counting_resolve(cls, *args, **kwargs):  # type: ignore[no-untyped-def]
        resolved.append(real_resolve(cls, *args, **kwargs))
        return resolved[-1]

    monkeypatch.setattr(LineageStore, "__init__", counting_init)
    monkeypatch.setattr(Settings, "resolve", classmethod(counting_resolve))

    class S(TypedDict, total=False):
        finding: str
        stored_ids: list

    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        parent = mem.store_research_finding("parent finding")
        b = StateGraph(S)
        b.add_node("remember", store_node(("research",), values="finding", parent=lambda s: parent.id))
        b.add_edge(START, "remember")
        b.add_edge("remember", END)
        out = mem.compile(b).invoke({"finding": "child finding"}, {"configurable": {"thread_id": "t"}})
        child = out["stored_ids"][0]
        mem.retire(child, "checked the archiver sees it")
        report = mem.archiver.run()
        assert report.collections["research_findings"].archived == 1

        assert len(resolved) == 1 and len(made) == 1
        assert mem.settings is resolved[0] is mem.store.settings is mem.archiver.settings
        assert mem.lineage_store is made[0] is mem.store.lineage is mem.archiver.lineage
        assert mem.lineage(child).ancestor_ids == [parent.id]  # written by the node, read through Memory
        archived = mem.archiver.get_archived(keys=[child])[0]
        assert archived.lineage["parents"][0]["id"] == parent.id  # read by the archiver from the same lineage
        saver = mem.checkpointer  # SqliteCheckpointer, or PostgresCheckpointer with the catalog on PostgreSQL
        timeout = saver._pool.busy_timeout if hasattr(saver, "_pool") else saver.timeout  # type: ignore[attr-defined]
        assert timeout == mem.settings.lock_timeout
