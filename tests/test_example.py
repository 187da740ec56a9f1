"""End to end: the trading-research example, run twice in a fresh data directory with the real model."""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "trading_research.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("trading_research", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["trading_research"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("trading_research", None)


def test_backtest_is_deterministic_and_lessons_fix_it(example) -> None:
    prices = example.make_prices(7)
    assert example.backtest(prices, example.BASE_PARAMS) == example.backtest(
        example.make_prices(7), example.BASE_PARAMS
    )
    m = example.backtest(prices, example.BASE_PARAMS)
    assert example._diagnose(m, example.BASE_PARAMS, "volatile")["failure_type"] == "whipsaw"
    params, used = example.apply_lessons(
        example.BASE_PARAMS,
        [{"id": "a", "adjust": {"lookback": {"min": 60}}}, {"id": "b", "adjust": {"vol_target": {"set": 0.1}}}],
    )
    assert params["lookback"] == 60 and params["vol_target"] == 0.1 and used == ["a", "b"]
    assert example._diagnose(example.backtest(prices, params), params, "volatile") is None


@pytest.mark.slow
def test_second_run_benefits_from_the_first(example, tmp_path: Path, real_embeddings, monkeypatch) -> None:
    monkeypatch.delenv("LANGGRAPH_MEMORY_DIR", raising=False)
    data_dir = tmp_path / "memory"
    first = example.run(data_dir=data_dir, embeddings=real_embeddings)
    second = example.run(data_dir=data_dir, embeddings=real_embeddings)

    assert first.status == second.status == "approved"
    assert first.recalled_lessons == []
    assert len(first.new_lesson_ids) >= 1
    assert len(second.iterations) < len(first.iterations)
    # what run 2 recalled is exactly what run 1 learnt
    assert set(second.recalled_lesson_ids) == set(first.new_lesson_ids)
    assert all(h["score"] >= example.RECALL_MIN_RELEVANCE for h in second.recalled_lessons)
    # ...and it started from the corrected parameters
    assert second.iterations[0]["params"] != example.BASE_PARAMS
    assert second.iterations[0]["passed"]
    assert second.new_lesson_ids == []
    assert len(second.reused_finding_ids) == 2

    # versions continue across runs; the approved strategy's lineage reaches the first run's lessons
    assert [v for v, _, _ in second.versions] == list(range(1, len(first.iterations) + len(second.iterations) + 1))
    assert second.strategy.status == "approved" and second.strategy.version == len(second.versions)
    ancestor_ids = set(second.lineage.ancestor_ids)
    assert set(first.new_lesson_ids) <= ancestor_ids
    assert first.strategy.id in ancestor_ids

    out = io.StringIO()
    from rich.console import Console

    example.print_report(second, Console(file=out, width=120))
    text = out.getvalue()
    assert "Lessons recalled from memory" in text and "whipsaw" in text and "Lineage" in text
    # the lineage tree shows hypotheses and backtests, and the earlier approval, superseded
    lineage_text = text[text.index("Lineage of the approved strategy") :]
    assert "hypotheses [rejected]" in lineage_text and "hypotheses [confirmed]" in lineage_text
    assert "backtest_results v1 backtest [failed]: Sharpe" in lineage_text
    assert "backtest [passed]" in lineage_text
    assert f"[superseded by {second.strategy.id}]" in lineage_text

    # every backtest is stored, each proposal stated a hypothesis, and lineage runs through them
    from langgraph_memory.memory import Memory

    rows = [*first.iterations, *second.iterations]
    with Memory.open(data_dir, embeddings=real_embeddings) as mem:
        stats = mem.stats()
        assert stats.collections["backtest_results"].items == len(rows)
        assert stats.collections["hypotheses"].items == len(rows)
        assert stats.collections["strategy_library"].superseded == 1  # run 1's approval
        for row in rows:
            backtest = mem.get(row["backtest_id"])
            assert backtest.strategy_id == row["strategy_id"] and backtest.passed == row["passed"]
            assert backtest.sharpe == row["metrics"]["sharpe_ratio"] and backtest.equity_curve.length > 1000
            assert backtest.period_start == "2019-01-02" and backtest.costs.slippage_bps == 2.0
            assert mem.get(row["hypothesis_id"]).status == ("confirmed" if row["passed"] else "rejected")
        lesson = first.new_lesson_ids[0]
        chain = [a.collection for a in mem.lineage(lesson).ancestors][-3:]
        assert chain == ["hypotheses", "strategy_library", "backtest_results"]


@pytest.mark.slow
def test_interrupt_before_approval_then_resume(example, tmp_path: Path, real_embeddings) -> None:
    data_dir = tmp_path / "memory"
    pending = example.run(data_dir=data_dir, embeddings=real_embeddings, approve=False)
    assert pending.status == "awaiting approval"
    assert pending.strategy.status == "tested"
    # a later process finds the thread waiting and resumes it rather than starting over
    resumed = example.run(data_dir=data_dir, embeddings=real_embeddings)
    assert resumed.resumed and resumed.status == "approved"
    assert resumed.strategy.id == pending.strategy.id
    assert resumed.strategy.status == "approved"
    with pytest.raises(SystemExit):
        (tmp_path / "precious").mkdir()
        (tmp_path / "precious" / "thesis.txt").write_text("x")
        example.run(data_dir=tmp_path / "precious", embeddings=real_embeddings, reset=True)
    assert (tmp_path / "precious" / "thesis.txt").exists()


@pytest.mark.slow
def test_a_run_recalls_only_what_its_in_sample_period_allows(example, tmp_path: Path, real_embeddings) -> None:
    data_dir = tmp_path / "memory"
    full = example.run(data_dir=data_dir, embeddings=real_embeddings)
    assert full.new_lesson_ids  # lessons learnt on data up to the series' end, in 2024
    early = example.run(data_dir=data_dir, embeddings=real_embeddings, in_sample_end="2021-12-31")
    # Researching as of 2021, nothing learnt from later data comes back: no lesson, no finding reused.
    assert early.recalled_lessons == [] and early.reused_finding_ids == []
    assert early.iterations and all(row["params"] == example.BASE_PARAMS for row in early.iterations[:1])
    from langgraph_memory.memory import Memory

    with Memory.open(data_dir, embeddings=real_embeddings) as mem:
        for row in early.iterations:
            assert mem.get(row["backtest_id"]).period_end <= "2021-12-31"
    # A run over the whole series again may recall both runs' lessons.
    later = example.run(data_dir=data_dir, embeddings=real_embeddings)
    assert set(later.recalled_lesson_ids) & set(full.new_lesson_ids)
