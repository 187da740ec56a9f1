"""The typed API's later collections: hypotheses, backtests, tool definitions; lineage across all seven."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from langgraph_memory.errors import LineageError, NotFoundError, ValidationError
from langgraph_memory.memory import Memory
from langgraph_memory.research.collections import (
    MEMORY_TYPES,
    BacktestResult,
    EquityCurve,
    Hypothesis,
    ToolDefinition,
    collection_for,
    parameter_hash,
)


@pytest.fixture
def mem(data_dir: Path, fake_embeddings):
    m = Memory.open(data_dir, embeddings=fake_embeddings)
    yield m
    m.close()


# --------------------------------------------------------------- schemas


def test_new_collections_are_typed_and_have_memory_types() -> None:
    assert collection_for(("hypotheses",)).name == "hypotheses"
    assert collection_for(("backtests", "desk")).name == "backtest_results"
    assert collection_for(("backtests",)).embed_field == "summary"
    assert MEMORY_TYPES["hypotheses"] == "semantic" and MEMORY_TYPES["backtest_results"] == "semantic"
    with pytest.raises(ValidationError, match="status"):
        collection_for(("hypotheses",)).validate({"statement": "x", "status": "maybe"})
    with pytest.raises(ValidationError, match="max_drawdown"):
        collection_for(("backtests",)).validate({"summary": "x", "max_drawdown": -0.1})
    with pytest.raises(ValidationError, match="period_end"):
        collection_for(("backtests",)).validate(
            {"summary": "x", "period_start": "2020-01-01", "period_end": "2019-01-01"}
        )
    with pytest.raises(ValidationError, match="trades"):
        collection_for(("backtests",)).validate({"summary": "x", "trades": 1.5})


def test_equity_curve_summary_and_parameter_hash() -> None:
    curve = EquityCurve.from_values([200.0, 220.0, 180.0, 260.0, 240.0], points=3)
    assert (curve.start, curve.end, curve.peak, curve.trough, curve.length) == (1.0, 1.2, 1.3, 0.9, 5)
    assert curve.points == [1.0, 0.9, 1.2]
    assert len(EquityCurve.from_values(range(1, 1001)).points) == 20
    with pytest.raises(ValueError):
        EquityCurve.from_values([0.0, 1.0])
    assert parameter_hash({"a": 1, "b": [1, 2]}) == parameter_hash({"b": [1, 2], "a": 1})
    assert parameter_hash({"a": 1}) != parameter_hash({"a": 2})


# ------------------------------------------------------------ hypotheses


def test_hypotheses_store_update_query(mem: Memory) -> None:
    f = mem.store_research_finding("Trends persist for months", source="technical")
    h = mem.store_hypothesis(
        "Momentum persists in trending regimes",
        rationale="f says so",
        confidence=0.6,
        parent_id=f.id,
        evidence_ids=[f.id, f.id],
        tags=["eq"],
    )
    other = mem.store_hypothesis("Carry pays in calm markets", status="testing", confidence=0.3)
    assert isinstance(h, Hypothesis) and h.status == "proposed" and h.evidence_ids == [f.id]
    assert [(e.parent_id, e.relation) for e in mem.lineage_store.parents(h.id)] == [(f.id, "derived_from")]
    assert {x.id for x in mem.query_hypotheses("anything", k=10, min_relevance=None)} == {h.id, other.id}
    assert {x.id for x in mem.query_hypotheses("x", k=10, status="testing", min_relevance=None)} == {other.id}
    assert {x.id for x in mem.query_hypotheses("x", k=10, min_confidence=0.5, min_relevance=None)} == {h.id}

    b_strategy = mem.store_strategy("mom", "60-day momentum", hypothesis_id=h.id)
    b = mem.store_backtest(b_strategy.id, sharpe=1.2)
    updated = mem.update_hypothesis(h.id, status="confirmed", confidence=0.8, add_evidence=[b.id, f.id])
    assert updated.status == "confirmed" and updated.confidence == 0.8 and updated.evidence_ids == [f.id, b.id]
    assert mem.get(h.id).status == "confirmed"  # type: ignore[attr-defined]
    assert updated.updated_at >= h.updated_at  # type: ignore[operator]
    with pytest.raises(ValidationError):
        mem.update_hypothesis(h.id, status="proven")
    with pytest.raises(ValidationError):
        mem.store_hypothesis("x", status="proven")
    with pytest.raises(ValidationError):
        mem.store_hypothesis("x", confidence=1.5)
    with pytest.raises(ValidationError, match="collection"):
        mem.update_hypothesis(f.id, status="testing")  # a finding is not a hypothesis
    with pytest.raises(ValidationError, match="collection"):
        mem.store_strategy("x", "y", hypothesis_id=f.id)


# ------------------------------------------------------------- backtests


def test_backtests_store_every_field_and_fill_from_the_strategy(mem: Memory) -> None:
    s = mem.store_strategy("mom", "60-day momentum", parameters={"lookback": 60, "vol_target": 0.1})
    curve = [100.0 * (1 + 0.001 * i) for i in range(500)]
    b = mem.store_backtest(
        s.id,
        period_start="2015-01-02",
        period_end="2024-12-31",
        universe=["SPY", "QQQ"],
        sharpe=1,  # ints are numbers too
        sortino=1.6,
        max_drawdown=0.18,
        cagr=0.09,
        volatility=0.12,
        trades=42,
        win_rate=0.55,
        turnover=4.2,
        costs={"commission_bps": 1, "slippage_bps": 2},
        equity_curve=curve,
        passed=True,
    )
    assert isinstance(b, BacktestResult)
    assert (b.strategy_id, b.strategy_name, b.strategy_version) == (s.id, "mom", 1)
    assert b.parameters == {"lookback": 60, "vol_target": 0.1}
    assert b.parameter_hash == parameter_hash({"vol_target": 0.1, "lookback": 60})
    assert b.sharpe == 1.0 and b.trades == 42 and b.costs is not None and b.costs.slippage_bps == 2.0
    assert b.equity_curve is not None and b.equity_curve.length == 500 and len(b.equity_curve.points) == 20
    assert "mom v1 backtest 2015-01-02 to 2024-12-31 on SPY, QQQ: Sharpe 1.00" in b.summary
    assert [(e.parent_id, e.relation) for e in mem.lineage_store.parents(b.id)] == [(s.id, "backtest_of")]
    stored = mem.store.get(("backtests",), b.id)
    assert stored is not None and stored.value["equity_curve"]["points"][0] == 1.0

    s2 = mem.store_strategy("mom", "90-day momentum", parameters={"lookback": 90})
    b2 = mem.store_backtest(s2.id, sharpe=0.4, max_drawdown=0.35, passed=False, summary="my own words")
    assert b2.strategy_version == 2 and b2.summary == "my own words"
    assert {h.id for h in mem.query_backtests(strategy_name="mom", k=10)} == {b.id, b2.id}
    assert [h.id for h in mem.query_backtests(strategy_id=s2.id)] == [b2.id]
    assert [h.id for h in mem.query_backtests(min_sharpe=0.5)] == [b.id]
    assert [h.id for h in mem.query_backtests(max_drawdown=0.2)] == [b.id]
    assert [h.id for h in mem.query_backtests(passed=False)] == [b2.id]
    assert [h.id for h in mem.query_backtests(parameter_hash=b.parameter_hash)] == [b.id]
    assert [h.id for h in mem.query_backtests("momentum", k=1, min_relevance=None)] != []
    assert mem.query_backtests()[0].id == b2.id  # no query: newest first

    with pytest.raises(ValidationError, match="collection"):
        mem.store_backtest(b.id)  # a backtest is not a strategy
    with pytest.raises(NotFoundError):
        mem.store_backtest("no-such-strategy")
    with pytest.raises(ValidationError, match="trades"):
        mem.store_backtest(s.id, trades=3.5)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="equity_curve"):
        mem.store_backtest(s.id, equity_curve=[0.0, 1.0])
    with pytest.raises(ValidationError):
        mem.store_backtest(s.id, win_rate=1.5)
    assert mem.store.items.count("backtest_results") == 2  # nothing half-written


def test_lesson_learnt_from_a_backtest_hangs_under_it(mem: Memory) -> None:
    s = mem.store_strategy("mom", "10-day momentum")
    b = mem.store_backtest(s.id, sharpe=-0.2, passed=False)
    lesson = mem.store_lesson("Lookback too short", backtest_id=b.id, iteration=1)
    assert lesson.strategy_id == s.id and lesson.backtest_id == b.id
    assert [(e.parent_id, e.relation) for e in mem.lineage_store.parents(lesson.id)] == [(b.id, "learned_from")]
    with pytest.raises(ValidationError, match="collection"):
        mem.store_lesson("x", backtest_id=s.id)


# ------------------------------------------------------ tool definitions


def test_tool_definitions_version_and_supersede(mem: Memory) -> None:
    schema = {"type": "object", "properties": {"ticker": {"type": "string"}}, "required": ["ticker"]}
    t1 = mem.store_tool_definition("fetch_prices", "Daily closes for a ticker", parameters=schema)
    assert isinstance(t1, ToolDefinition) and t1.version == 1 and t1.kind == "tool" and t1.parameters == schema
    t2 = mem.store_tool_definition(
        "fetch_prices", "Daily closes and volumes for a ticker", parameters=schema, definition={"returns": "frame"}
    )
    wf = mem.store_tool_definition(
        "rebalance",
        "Monthly rebalance workflow",
        kind="workflow",
        steps=[{"tool": "fetch_prices", "args": {"ticker": "SPY"}}, {"tool": "optimise"}],
    )
    assert t2.version == 2 and wf.version == 1 and wf.steps[0]["tool"] == "fetch_prices"
    # the previous version is superseded (in the same transaction as the new one) and no longer found
    st = mem.status(t1.id)
    assert st is not None and st.status == "superseded" and st.superseded_by == t2.id
    assert {h.id for h in mem.query_tool_definitions("prices", k=10, min_relevance=None)} == {t2.id, wf.id}
    everything = mem.query_tool_definitions("prices", k=10, include_retired=True, min_relevance=None)
    assert {h.id: (h.status.status if h.status else None) for h in everything} == {
        t1.id: "superseded",
        t2.id: None,
        wf.id: None,
    }
    assert [h.id for h in mem.query_tool_definitions("x", k=10, kind="workflow", min_relevance=None)] == [wf.id]
    assert mem.get_tool_definition("fetch_prices").id == t2.id
    assert mem.get_tool_definition("fetch_prices", version=1).id == t1.id
    assert mem.versions("fetch_prices") == []  # tool versions do not mix with strategy names
    with pytest.raises(NotFoundError):
        mem.get_tool_definition("nope")
    with pytest.raises(NotFoundError):
        mem.get_tool_definition("fetch_prices", version=7)
    with pytest.raises(ValidationError):
        mem.store_tool_definition("x", "y", kind="plugin")
    with pytest.raises(ValidationError):
        mem.store_strategy("tool:fetch_prices", "clash")


# --------------------------------------------------------------- lineage


def test_lineage_across_all_seven_collections(mem: Memory) -> None:
    f = mem.store_research_finding("Vol clusters")
    regime = mem.store_market_regime("Volatile spell", regime_type="volatile", parent_id=f.id)
    h = mem.store_hypothesis("Breakouts fail in volatile spells", parent_id=[f.id, regime.id])
    tool = mem.store_tool_definition("breakout_scan", "Find breakouts", parent_id=h.id)
    s = mem.store_strategy("vb", "Breakouts after calm weeks", hypothesis_id=h.id, parent_id=tool.id)
    b = mem.store_backtest(s.id, sharpe=0.2, passed=False)
    lesson = mem.store_lesson("Breakouts whipsaw", backtest_id=b.id)
    note = "general"
    mem.store.put(("memories", "u1"), note, {"text": "a user note"})

    lin = mem.lineage(lesson.id)
    assert lin.ancestor_ids == [f.id, regime.id, h.id, tool.id, s.id, b.id]
    assert [a.collection for a in lin.ancestors] == [
        "research_findings",
        "market_regimes",
        "hypotheses",
        "tool_definitions",
        "strategy_library",
        "backtest_results",
    ]
    assert lin.item.collection == "lessons_learned"
    assert all(a.storage == "live" and a.lifecycle == "active" for a in lin.ancestors)
    summaries = {a.collection: a.summary for a in lin.ancestors}
    assert summaries["hypotheses"].startswith("[proposed] Breakouts fail")
    assert summaries["backtest_results"].startswith("v1 backtest [failed]: Sharpe 0.20")
    assert summaries["tool_definitions"].startswith("breakout_scan v1 [tool]")
    tree = mem.lineage(h.id).descendants
    walk = [(n.collection, n.relation) for n in tree.walk()][1:]
    assert ("strategy_library", "tests") in walk and ("backtest_results", "backtest_of") in walk
    assert ("lessons_learned", "learned_from") in walk
    with pytest.raises(LineageError):
        mem.link(note, f.id)  # a plain store item has no lineage node


# ----------------------------------------------------------------- async


async def test_async_twins_of_the_new_calls(mem: Memory) -> None:
    h = await mem.astore_hypothesis("async hypothesis", confidence=0.5)
    s = await mem.astore_strategy("as", "async strategy", hypothesis_id=h.id)
    b = await mem.astore_backtest(s.id, sharpe=1.3, max_drawdown=0.1, trades=12)
    lesson = await mem.astore_lesson("async lesson", backtest_id=b.id)
    t = await mem.astore_tool_definition("atool", "an async tool")
    assert [x.id for x in await mem.aquery_hypotheses("x", min_relevance=None)] == [h.id]
    assert (await mem.aupdate_hypothesis(h.id, status="testing")).status == "testing"
    assert [x.id for x in await mem.aquery_backtests(strategy_id=s.id)] == [b.id]
    assert [x.id for x in await mem.aquery_tool_definitions("tool", min_relevance=None)] == [t.id]
    assert (await mem.aget_tool_definition("atool")).id == t.id
    assert (await mem.alineage(lesson.id)).ancestor_ids == [h.id, s.id, b.id]
    assert (await mem.aretire(b.id, "bad data")).status == "retired"
    assert await mem.aquery_backtests(strategy_id=s.id) == []
    assert (await mem.astatus(b.id)).status == "retired"  # type: ignore[union-attr]
    assert await mem.areinstate(b.id) is True
    assert (await mem.astats()).collections["backtest_results"].items == 1
    assert (await mem.acleanup_decayed()).dry_run
    h2 = await mem.astore_hypothesis("async hypothesis, restated")
    assert (await mem.asupersede(h.id, h2.id, "restated")).superseded_by == h2.id
    assert [x.id for x in await mem.aquery_hypotheses("x", min_relevance=None)] == [h2.id]
    dry = await mem.adelete(h2.id, dry_run=True)
    assert dry.live and mem.store.get(("hypotheses",), h2.id) is not None
    assert (await mem.adelete(h2.id)).live and mem.store.get(("hypotheses",), h2.id) is None


def test_async_twins_have_real_signatures() -> None:
    for name in (
        "store_backtest",
        "query_backtests",
        "store_hypothesis",
        "store_tool_definition",
        "store_strategy",
        "query_research_findings",
        "retire",
        "supersede",
        "delete",
        "cleanup_decayed",
    ):
        sync, twin = getattr(Memory, name), getattr(Memory, "a" + name)
        assert inspect.iscoroutinefunction(twin), name
        assert inspect.signature(twin) == inspect.signature(sync), name
        assert "kwargs" not in inspect.signature(twin).parameters, name
    assert list(inspect.signature(Memory.astore_backtest).parameters)[:3] == ["self", "strategy_id", "period_start"]
