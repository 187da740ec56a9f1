"""A trading-research graph that learns from its own failures, offline, with no LLM.

    python examples/trading_research.py                     # ./memory
    python examples/trading_research.py --data-dir /tmp/m   # run it twice: the 2nd run starts smarter
    python examples/trading_research.py --reset             # forget everything first
    python examples/trading_research.py --in-sample-end 2021-12-31   # research as of the end of 2021

The graph (LangGraph, checkpointed, one thread per objective):

    recall_lessons -> recall_research -> research -> propose -> backtest -> record
        record --passed--> approve (interrupted before; resumed after "review")
        record --failed--> learn -> propose   (up to --max-iterations)

* ``recall_*`` are the library's ``recall_node``: they search the store the
  graph was compiled with (lessons and past research for the objective).
* ``research`` measures a seeded synthetic price series (numpy) and stores
  findings and the market regime (reusing identical findings from memory).
* ``propose`` starts from naive parameters, applies the adjustment each
  lesson carries (recalled from earlier runs, or learnt in this one) and
  states the hypothesis it will test, derived from the findings and lessons.
* ``backtest`` runs a momentum strategy; ``record`` stores it as the next
  version of the strategy (testing the hypothesis) and stores the backtest
  itself: period, Sharpe, Sortino, drawdown, CAGR, trades, turnover, costs,
  parameter hash and equity curve.
* ``learn`` turns the first failed gate into a lesson learnt from that
  backtest, and marks the hypothesis rejected with the backtest as evidence.
* ``approve`` marks the strategy approved, the hypothesis confirmed,
  supersedes an earlier approved version, and resolves this run's lessons.

Lineage runs finding -> hypothesis -> strategy -> backtest -> lesson, and the
next run's hypothesis derives from those lessons.

Every run has an in-sample period: the price series up to ``--in-sample-end``
(default: its last day). Research, backtests and lessons use only those
days, and both recalls pass ``data_cutoff``: a proposal is built only from
memories whose evidence ends within the period. A lesson learnt on data up
to 2024 is not recalled by a run researching as of 2021, which would be
lookahead bias.

The first run fails a few iterations and stores lessons ("lookback too short
in a volatile regime: whipsaw", ...). The second run recalls them, proposes
the corrected parameters at once and passes in fewer iterations.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.graph import END, START, StateGraph

from langgraph_memory.config import CATALOG_FILE, MIN_RELEVANCE
from langgraph_memory.graph.nodes import recall_node
from langgraph_memory.memory import Memory
from langgraph_memory.research.collections import Strategy
from langgraph_memory.research.lineage import Lineage, LineageTree

logger = logging.getLogger("trading_research")

DEFAULT_OBJECTIVE = "Trend-following momentum strategy for a volatile equity index"
ASSET = "SYNTH"
# Quality gates a strategy must pass to be proposed for approval.
GATES = {"max_trades_per_year": 20.0, "max_drawdown": 0.20, "min_sharpe": 0.8}
# Costs every backtest assumes, per unit of turnover.
COSTS_BPS = {"commission_bps": 1.0, "slippage_bps": 2.0}
FIRST_DAY = "2019-01-02"
# The naive starting point, before any lesson.
BASE_PARAMS: dict[str, Any] = {"lookback": 10, "vol_target": None, "vol_window": 20}
RECALL_MIN_RELEVANCE = MIN_RELEVANCE


# --------------------------------------------------------------------- market


def make_prices(seed: int = 7, n: int = 1500) -> np.ndarray:
    """Daily closes of a synthetic index: calm trends alternating with choppy, volatile spells."""
    rng = np.random.default_rng(seed)
    rets = np.empty(n)
    i, trending = 0, True
    while i < n:
        length = min(int(rng.integers(120, 260) if trending else rng.integers(60, 140)), n - i)
        if trending:
            drift = rng.choice([1.0, -1.0]) * rng.uniform(0.0008, 0.0016)
            rets[i : i + length] = drift + rng.normal(0.0, 0.009, length)
        else:  # volatile and mean-reverting: short lookbacks get whipsawed here
            shocks = rng.normal(0.0, 0.024, length)
            prev = 0.0
            for j in range(length):
                prev = -0.35 * prev + shocks[j]
                rets[i + j] = prev
        i += length
        trending = not trending
    return 100.0 * np.exp(np.cumsum(rets))


def _positions(prices: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    """Long/short on the sign of ``lookback``-day momentum, optionally volatility-targeted."""
    lookback = int(params["lookback"])
    r = np.diff(np.log(prices))
    n = len(prices)
    mom = np.zeros(n)
    mom[lookback:] = prices[lookback:] / prices[:-lookback] - 1.0
    pos = np.sign(mom)
    if params.get("vol_target"):
        window = int(params.get("vol_window") or 20)
        vol = np.full(n, np.nan)
        for t in range(window, n):
            vol[t] = r[t - window : t].std() * np.sqrt(252)
        pos = pos * np.where(np.isnan(vol), 0.0, np.minimum(2.0, params["vol_target"] / np.maximum(vol, 1e-6)))
    return pos


def equity_curve(prices: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    """The strategy's equity (starting at 1.0), after costs."""
    pos = _positions(prices, params)
    cost = (COSTS_BPS["commission_bps"] + COSTS_BPS["slippage_bps"]) / 1e4
    pnl = pos[:-1] * np.diff(np.log(prices)) - cost * np.abs(np.diff(pos, prepend=0.0))[:-1]
    return np.exp(np.concatenate([[0.0], np.cumsum(pnl)]))


def backtest(prices: np.ndarray, params: dict[str, Any]) -> dict[str, float]:
    """The momentum strategy's metrics on ``prices`` (annualised where it says so)."""
    pos = _positions(prices, params)
    r = np.diff(np.log(prices))
    pnl = pos[:-1] * r
    ann_ret, ann_vol = pnl.mean() * 252, pnl.std() * np.sqrt(252)
    downside = pnl[pnl < 0].std() * np.sqrt(252) if np.any(pnl < 0) else 0.0
    equity = np.exp(np.cumsum(pnl))
    years = len(r) / 252
    drawdown = float(np.max(1.0 - equity / np.maximum.accumulate(equity)))
    sign = np.sign(pos)
    active = pnl[pos[:-1] != 0]
    trades = int(np.sum(sign[1:] != sign[:-1]))
    return {
        "sharpe_ratio": round(float(ann_ret / ann_vol) if ann_vol > 0 else 0.0, 3),
        "sortino_ratio": round(float(ann_ret / downside) if downside > 0 else 0.0, 3),
        "max_drawdown": round(drawdown, 3),
        "trades": trades,
        "trades_per_year": round(trades / years, 1),
        "win_rate": round(float(np.mean(active > 0)) if len(active) else 0.0, 3),
        "annual_return": round(float(ann_ret), 3),
        "cagr": round(float(equity[-1] ** (1 / years) - 1.0), 4),
        "volatility": round(float(ann_vol), 3),
        "turnover": round(float(np.abs(np.diff(pos)).sum() / years), 2),
    }


def in_sample(prices: np.ndarray, end: str | None) -> np.ndarray:
    """The days of ``prices`` up to ``end`` (an ISO date; None: all of them), the series starting on ``FIRST_DAY``."""
    if end is None:
        return prices
    days = int(np.busday_count(FIRST_DAY, np.datetime64(end) + 1))
    if days < 260:
        raise ValueError(f"in-sample end {end} leaves {days} trading days: a backtest needs a year at least")
    return prices[:days]


def period(prices: np.ndarray) -> tuple[str, str]:
    """First and last business day of the synthetic series (it starts on ``FIRST_DAY``)."""
    end = np.busday_offset(FIRST_DAY, len(prices) - 1, roll="forward")
    return FIRST_DAY, str(end)


def _diagnose(metrics: dict[str, float], params: dict[str, Any], regime: str) -> dict[str, Any] | None:
    """The first failed gate as a lesson (text, failure type, parameter adjustment), or None."""
    if metrics["trades_per_year"] > GATES["max_trades_per_year"]:
        target = max(60, 2 * int(params["lookback"]))
        return {
            "lesson": (
                f"Momentum lookback of {params['lookback']} days is too short for a {regime} equity index: "
                f"{metrics['trades_per_year']:.0f} trades a year, whipsawed by noise. "
                f"Use a lookback of at least {target} days."
            ),
            "failure_type": "whipsaw",
            "adjust": {"lookback": {"min": target}},
        }
    if metrics["max_drawdown"] > GATES["max_drawdown"]:
        target = round(0.10 if not params.get("vol_target") else params["vol_target"] * 0.7, 3)
        return {
            "lesson": (
                f"Unscaled momentum positions on a {regime} equity index drew down "
                f"{metrics['max_drawdown']:.0%} in volatility spikes. "
                f"Scale positions to a {target:.0%} annual volatility target."
            ),
            "failure_type": "drawdown",
            "adjust": {"vol_target": {"set": target}},
        }
    if metrics["sharpe_ratio"] < GATES["min_sharpe"]:
        target = int(params["lookback"] * 1.5)
        return {
            "lesson": (
                f"Momentum signal on a {regime} equity index is too weak (Sharpe {metrics['sharpe_ratio']:.2f}). "
                f"Lengthen the lookback to {target} days."
            ),
            "failure_type": "weak_signal",
            "adjust": {"lookback": {"min": target}},
        }
    return None


def apply_lessons(params: dict[str, Any], lessons: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """Apply each lesson's adjustment; return new parameters and the ids of lessons that carry one."""
    out = dict(params)
    used: list[str] = []
    for lesson in lessons:
        for name, rule in (lesson.get("adjust") or {}).items():
            before = out.get(name)
            if "min" in rule:
                out[name] = max(before or 0, rule["min"])
            elif "set" in rule:
                out[name] = rule["set"] if before is None else min(before, rule["set"])
        if lesson.get("adjust"):
            used.append(lesson["id"])
    return out, used


# ---------------------------------------------------------------------- graph


class ResearchState(TypedDict, total=False):
    objective: str
    seed: int
    in_sample_end: str  # ISO date: the last day of the data this run may use (and recall from)
    max_iterations: int
    iteration: int
    recalled_lessons: list[dict[str, Any]]
    recalled_research: list[dict[str, Any]]
    lessons: list[dict[str, Any]]
    finding_ids: list[str]
    reused_finding_ids: list[str]
    regime: dict[str, Any]
    params: dict[str, Any]
    informed_by: list[str]
    hypothesis_id: str
    metrics: dict[str, float]
    passed: bool
    strategy_id: str
    strategy_version: int
    backtest_id: str
    new_lesson_ids: list[str]
    history: list[dict[str, Any]]
    status: str


def strategy_name(objective: str) -> str:
    """A stable strategy name for an objective (versions are counted per name)."""
    slug = re.sub(r"[^a-z0-9]+", "-", objective.lower()).strip("-")
    return slug[:40].rsplit("-", 1)[0] if len(slug) > 40 else slug or "strategy"


def _prices(state: ResearchState) -> np.ndarray:
    """The run's in-sample prices."""
    return in_sample(make_prices(state["seed"]), state.get("in_sample_end"))


def _cutoff(state: ResearchState) -> date | None:
    """The run's data cut-off: recall only what its in-sample period could have known."""
    end = state.get("in_sample_end")
    return date.fromisoformat(end) if end else None


def build_graph(mem: Memory, *, recall_k: int = 5) -> StateGraph:
    """The research graph's builder; compile it with ``mem.compile(builder, interrupt_before=["approve"])``."""

    def research(state: ResearchState) -> dict[str, Any]:
        prices = _prices(state)
        start, end = period(prices)
        r = np.diff(np.log(prices))
        vol = float(r.std() * np.sqrt(252))
        ac1 = float(np.corrcoef(r[:-1], r[1:])[0, 1])
        trend = float(abs(np.log(prices[-1] / prices[0])) / (vol * np.sqrt(len(r) / 252)))
        regime = "volatile" if vol > 0.2 else "calm"
        texts = [
            (
                f"{ASSET} realised volatility is {vol:.0%} annualised with volatility clustering: "
                f"a {regime} regime for trend-following strategies.",
                "volatility",
                0.85,
            ),
            (
                f"{ASSET} daily returns mean-revert (lag-1 autocorrelation {ac1:+.2f}) in choppy spells, "
                "while multi-month momentum persists.",
                "momentum",
                0.7,
            ),
        ]
        # Identical findings from earlier runs are reused, not stored again.
        known = {h["value"].get("content"): h["key"] for h in state.get("recalled_research") or []}
        ids, reused = [], []
        for content, topic, confidence in texts:
            if content in known:
                ids.append(known[content])
                reused.append(known[content])
                continue
            f = mem.store_research_finding(
                content,
                source="synthetic-backtest",
                topic=topic,
                confidence=confidence,
                data_start=start,
                data_end=end,
                tags=[ASSET],
            )
            ids.append(f.id)
        if not reused:
            mem.store_market_regime(
                f"{ASSET}: {regime} regime, {vol:.0%} annualised volatility, trend strength {trend:.2f}",
                regime_type="volatile" if regime == "volatile" else "sideways",
                start_date=start,
                end_date=end,
                volatility=vol,
                trend_strength=trend,
                parent_id=ids[0],
            )
        return {
            "finding_ids": ids,
            "reused_finding_ids": reused,
            "regime": {"name": regime, "volatility": round(vol, 3), "autocorrelation": round(ac1, 3)},
        }

    def propose(state: ResearchState) -> dict[str, Any]:
        params, used = apply_lessons(BASE_PARAMS, state.get("lessons") or [])
        vt = f", scaled to {params['vol_target']:.0%} volatility," if params.get("vol_target") else ""
        applied = [lesson["lesson"] for lesson in state.get("lessons") or [] if lesson["id"] in used]
        hypothesis = mem.store_hypothesis(
            f"{params['lookback']}-day momentum on {ASSET}{vt} passes the quality gates "
            f"in a {state['regime']['name']} regime",
            rationale=" ".join(["Multi-month momentum persists (research findings).", *applied]),
            confidence=round(min(0.9, 0.4 + 0.15 * len(used)), 2),
            status="testing",
            parent_id=list(dict.fromkeys([*state["finding_ids"], *used])),
            tags=[ASSET],
        )
        return {
            "params": params,
            "informed_by": used,
            "hypothesis_id": hypothesis.id,
            "iteration": state.get("iteration", 0) + 1,
        }

    def run_backtest(state: ResearchState) -> dict[str, Any]:
        metrics = backtest(_prices(state), state["params"])
        passed = _diagnose(metrics, state["params"], state["regime"]["name"]) is None
        return {"metrics": metrics, "passed": passed}

    def record(state: ResearchState) -> dict[str, Any]:
        p, m = state["params"], state["metrics"]
        vt = f", positions scaled to {p['vol_target']:.0%} volatility" if p.get("vol_target") else ""
        s = mem.store_strategy(
            strategy_name(state["objective"]),
            f"Momentum on {ASSET}: long/short the sign of {p['lookback']}-day returns{vt}.",
            code="position = sign(price / price.shift(lookback) - 1) * min(2, vol_target / realised_vol)",
            parameters=p,
            metrics=m,
            status="tested",
            hypothesis_id=state["hypothesis_id"],
            asset_class="equity_index",
            time_horizon="swing",
        )
        prices = _prices(state)
        start, end = period(prices)
        b = mem.store_backtest(
            s.id,
            period_start=start,
            period_end=end,
            universe=[ASSET],
            sharpe=m["sharpe_ratio"],
            sortino=m["sortino_ratio"],
            max_drawdown=m["max_drawdown"],
            cagr=m["cagr"],
            volatility=m["volatility"],
            trades=m["trades"],
            win_rate=m["win_rate"],
            turnover=m["turnover"],
            costs=COSTS_BPS,
            equity_curve=equity_curve(prices, p).tolist(),
            passed=state["passed"],
        )
        row = {
            "iteration": state["iteration"],
            "version": s.version,
            "strategy_id": s.id,
            "backtest_id": b.id,
            "hypothesis_id": state["hypothesis_id"],
            "params": p,
            "metrics": m,
            "passed": state["passed"],
            "lesson": None,
        }
        return {
            "strategy_id": s.id,
            "strategy_version": s.version,
            "backtest_id": b.id,
            "history": [*state.get("history", []), row],
        }

    def learn(state: ResearchState) -> dict[str, Any]:
        d = _diagnose(state["metrics"], state["params"], state["regime"]["name"])
        assert d is not None  # routed here only on failure
        lesson = mem.store_lesson(
            d["lesson"],
            backtest_id=state["backtest_id"],
            iteration=state["iteration"],
            failure_type=d["failure_type"],
            feedback={"metrics": state["metrics"], "gates": GATES, "adjust": d["adjust"]},
            severity="major",
            improvement_applied=", ".join(d["adjust"]),
        )
        mem.update_hypothesis(state["hypothesis_id"], status="rejected", add_evidence=[state["backtest_id"]])
        history = [dict(r) for r in state["history"]]
        history[-1]["lesson"] = d["lesson"]
        entry = {"id": lesson.id, "lesson": d["lesson"], "adjust": d["adjust"], "source": "this run"}
        return {
            "lessons": [*state.get("lessons", []), entry],
            "new_lesson_ids": [*state.get("new_lesson_ids", []), lesson.id],
            "history": history,
        }

    def absorb_recalled(state: ResearchState) -> dict[str, Any]:
        lessons = []
        for hit in state.get("recalled_lessons") or []:
            adjust = (hit["value"].get("feedback") or {}).get("adjust")
            if adjust:
                lessons.append(
                    {"id": hit["key"], "lesson": hit["value"]["lesson"], "adjust": adjust, "source": "memory"}
                )
        return {"lessons": lessons, "history": [], "new_lesson_ids": [], "iteration": 0, "status": "running"}

    def approve(state: ResearchState) -> dict[str, Any]:
        mem.approve_strategy(state["strategy_id"])
        mem.update_hypothesis(state["hypothesis_id"], status="confirmed", add_evidence=[state["backtest_id"]])
        # One approved version per strategy: an earlier approval is superseded (searches stop returning it).
        for v in mem.versions(strategy_name(state["objective"])):
            if v.status == "approved" and v.id != state["strategy_id"] and mem.status(v.id) is None:
                mem.supersede(v.id, state["strategy_id"], "a newer version was approved")
        for lesson_id in state.get("new_lesson_ids") or []:
            mem.resolve_lesson(lesson_id, state["strategy_id"])
        return {"status": "approved"}

    def give_up(state: ResearchState) -> dict[str, Any]:
        return {"status": "failed"}

    def route(state: ResearchState) -> str:
        if state["passed"]:
            return "approve"
        if state["iteration"] >= state["max_iterations"]:
            return "give_up"
        return "learn"

    objective = lambda s: s["objective"]  # noqa: E731
    builder = StateGraph(ResearchState)
    builder.add_node(
        "recall_lessons",
        recall_node(
            mem.namespace("lessons"),
            query=objective,
            output_key="recalled_lessons",
            k=recall_k,
            min_relevance=RECALL_MIN_RELEVANCE,
            data_cutoff=_cutoff,
            name="recall_lessons",
        ),
    )
    builder.add_node(
        "recall_research",
        recall_node(
            mem.namespace("research"),
            query=objective,
            output_key="recalled_research",
            k=recall_k,
            data_cutoff=_cutoff,
            name="recall_research",
        ),
    )
    builder.add_node("absorb", absorb_recalled)
    builder.add_node("research", research)
    builder.add_node("propose", propose)
    builder.add_node("backtest", run_backtest)
    builder.add_node("record", record)
    builder.add_node("learn", learn)
    builder.add_node("approve", approve)
    builder.add_node("give_up", give_up)
    builder.add_edge(START, "recall_lessons")
    builder.add_edge("recall_lessons", "recall_research")
    builder.add_edge("recall_research", "absorb")
    builder.add_edge("absorb", "research")
    builder.add_edge("research", "propose")
    builder.add_edge("propose", "backtest")
    builder.add_edge("backtest", "record")
    builder.add_conditional_edges("record", route, ["approve", "learn", "give_up"])
    builder.add_edge("learn", "propose")
    builder.add_edge("approve", END)
    builder.add_edge("give_up", END)
    return builder


# --------------------------------------------------------------------- report


@dataclass
class Report:
    """What one run did: iterations, recalled lessons, the approved strategy and its lineage."""

    objective: str
    thread_id: str
    status: str
    iterations: list[dict[str, Any]]
    recalled_lessons: list[dict[str, Any]]
    reused_finding_ids: list[str]
    new_lesson_ids: list[str]
    strategy: Strategy | None = None
    lineage: Lineage | None = None
    versions: list[tuple[int, str, str]] = field(default_factory=list)
    resumed: bool = False

    @property
    def recalled_lesson_ids(self) -> list[str]:
        return [r["key"] for r in self.recalled_lessons]


def thread_id_for(objective: str) -> str:
    return f"trading-research:{strategy_name(objective)}"


def _reset(data_dir: Path) -> None:
    if not data_dir.exists():
        return
    markers = ("chroma", CATALOG_FILE, "checkpoints.sqlite")
    if any(data_dir.iterdir()) and not any((data_dir / m).exists() for m in markers):
        raise SystemExit(f"--reset refuses to delete {data_dir}: it does not look like a memory directory")
    shutil.rmtree(data_dir)


def run(
    objective: str = DEFAULT_OBJECTIVE,
    data_dir: str | Path = "./memory",
    *,
    max_iterations: int = 6,
    seed: int = 7,
    reset: bool = False,
    approve: bool = True,
    embeddings: Embeddings | None = None,
    in_sample_end: str | None = None,
) -> Report:
    """Run the research graph for ``objective`` in ``data_dir`` and return its :class:`Report`.

    ``in_sample_end`` (an ISO date) ends the run's in-sample period: the data
    it researches and backtests on, and the data cut-off of what it recalls
    (default: the series' last day).

    The run stops before ``approve`` (a checkpointed interrupt); with
    ``approve=True`` it resumes at once, as a reviewer would. A thread left
    waiting for approval by an earlier process is resumed instead of
    starting over.
    """
    data_dir = Path(data_dir)
    if reset:
        _reset(data_dir)
    with Memory.open(data_dir, embeddings=embeddings) as mem:
        graph = mem.compile(build_graph(mem), interrupt_before=["approve"])
        config = {"configurable": {"thread_id": thread_id_for(objective)}}
        pending = graph.get_state(config)
        resumed = "approve" in (pending.next or ())
        if not resumed:
            end = in_sample_end or period(make_prices(seed))[1]
            task = {"objective": objective, "seed": seed, "max_iterations": max_iterations, "in_sample_end": end}
            graph.invoke(task, config)
        snapshot = graph.get_state(config)
        if "approve" in (snapshot.next or ()):
            if approve:
                graph.invoke(None, config)  # resume from the checkpoint: the reviewer said yes
            snapshot = graph.get_state(config)
        values = snapshot.values
        status = values.get("status", "unknown")
        if "approve" in (snapshot.next or ()):
            status = "awaiting approval"
        strategy = lineage = None
        if values.get("strategy_id") and values.get("passed"):
            strategy = mem.get(values["strategy_id"])  # type: ignore[assignment]
            lineage = mem.lineage(values["strategy_id"])
        name = strategy_name(objective)
        versions = [(v.version, v.id, v.status or "?") for v in mem.versions(name)]
        return Report(
            objective=objective,
            thread_id=config["configurable"]["thread_id"],
            status=status,
            iterations=list(values.get("history") or []),
            recalled_lessons=list(values.get("recalled_lessons") or []),
            reused_finding_ids=list(values.get("reused_finding_ids") or []),
            new_lesson_ids=list(values.get("new_lesson_ids") or []),
            strategy=strategy,  # type: ignore[arg-type]
            lineage=lineage,
            versions=versions,
            resumed=resumed,
        )


def print_report(report: Report, console: Any | None = None) -> None:
    """Print the report with rich: recalled lessons, iterations, the approved strategy's lineage."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from rich.tree import Tree

    console = console or Console()
    console.rule(f"[bold]{report.objective}")
    console.print(
        f"thread [cyan]{report.thread_id}[/]  status [bold]{report.status}[/]"
        + ("  (resumed a run waiting for approval)" if report.resumed else "")
    )
    if report.recalled_lessons:
        t = Table(title="Lessons recalled from memory", show_lines=False)
        t.add_column("score", justify="right")
        t.add_column("lesson")
        for hit in report.recalled_lessons:
            t.add_row(f"{hit['score']:.2f}" if hit["score"] is not None else "-", escape(hit["value"]["lesson"]))
        console.print(t)
    else:
        console.print("No lessons in memory yet for this objective.")
    if report.reused_finding_ids:
        console.print(f"Reused {len(report.reused_finding_ids)} research finding(s) from memory.")
    t = Table(title="Iterations")
    for col in ("#", "version", "lookback", "vol target", "Sharpe", "max DD", "trades/yr", "result"):
        t.add_column(col)
    learnt: list[str] = []
    for row in report.iterations:
        p, m = row["params"], row["metrics"]
        t.add_row(
            str(row["iteration"]),
            f"v{row['version']}",
            str(p["lookback"]),
            f"{p['vol_target']:.0%}" if p.get("vol_target") else "-",
            f"{m['sharpe_ratio']:.2f}",
            f"{m['max_drawdown']:.0%}",
            f"{m['trades_per_year']:.0f}",
            "[green]pass[/]" if row["passed"] else "[red]fail[/]",
        )
        if row["lesson"]:
            learnt.append(f"#{row['iteration']}: {escape(row['lesson'])}")
    console.print(t)
    for line in learnt:
        console.print(f"[yellow]lesson stored[/] {line}")
    if report.strategy is not None:
        s = report.strategy
        console.print(f"Strategy [bold]{s.name}[/] v{s.version} [bold]{s.status}[/] ({s.id})")
        console.print(f"  {escape(s.description)}  metrics {s.metrics}")
    if report.lineage is not None:
        tree = Tree("[bold]Lineage of the approved strategy[/] (ancestors, root first)")
        for node in report.lineage.ancestors:
            rel = f" [dim]({node.relation})[/]" if node.relation else ""
            tree.add(f"[magenta]{node.collection}[/] {escape(node.label)}{rel}")
        here = tree.add(f"[bold green]this strategy[/] {escape(report.lineage.item.label)}")
        _add_children(here, report.lineage.descendants)
        console.print(tree)
    if report.versions:
        console.print("Versions: " + ", ".join(f"v{v} {st}" for v, _, st in report.versions))


def _add_children(branch: Any, node: LineageTree) -> None:
    for child in node.children:
        from rich.markup import escape

        sub = branch.add(
            f"[magenta]{child.node.collection}[/] {escape(child.node.label)} [dim]({child.node.relation})[/]"
        )
        _add_children(sub, child)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="./memory", help="memory directory (default ./memory)")
    parser.add_argument("--objective", default=DEFAULT_OBJECTIVE)
    parser.add_argument("--max-iterations", type=int, default=6)
    parser.add_argument("--seed", type=int, default=7, help="seed of the synthetic price series")
    parser.add_argument("--reset", action="store_true", help="delete the memory directory first")
    parser.add_argument("--no-approve", action="store_true", help="stop at the approval interrupt")
    parser.add_argument(
        "--in-sample-end", help="last day (YYYY-MM-DD) of the data the run uses and recalls from (default: all)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    report = run(
        args.objective,
        args.data_dir,
        max_iterations=args.max_iterations,
        seed=args.seed,
        reset=args.reset,
        approve=not args.no_approve,
        in_sample_end=args.in_sample_end,
    )
    print_report(report)
    cli = Path(sys.executable).with_name("langgraph-memory")  # the venv's command when it has one
    cli_name = (
        os.path.relpath(cli) if cli.exists() and not os.path.relpath(cli).startswith("..") else "langgraph-memory"
    )
    print(
        f"\nSee this memory in your browser: {cli_name} --data-dir {args.data_dir} ui   (opens on http://127.0.0.1:8766)"
    )
    return 0 if report.status in ("approved", "awaiting approval") else 1


if __name__ == "__main__":
    sys.exit(main())
