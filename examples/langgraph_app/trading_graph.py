"""The trading-research graph as a ``langgraph dev`` app: it learns from failed backtests.

    cd examples/langgraph_app && langgraph dev

The server gives the graph its store and checkpointer from ``langgraph.json``
(``langgraph_memory.platform_store`` / ``platform_checkpointer``); the graph
itself is compiled without either.

    recall_lessons -> absorb -> propose -> backtest --passed--> review (interrupt) -> END
                                  ^                  --failed--> learn -> store_lesson -+
                                  +------------------------------------------------------+

* ``recall_lessons`` is the library's ``recall_node``: lessons stored by
  earlier runs, found by meaning from the objective.
* ``propose`` starts from naive momentum parameters and applies each recalled
  or newly learnt lesson's adjustment; ``backtest`` measures it on a seeded
  synthetic index (the market and metrics of ``examples/trading_research.py``).
* ``learn`` turns the first failed quality gate into a lesson, and
  ``store_lesson`` (the library's ``store_node``) saves it in ``("lessons",)``.
* ``review`` waits for a person: the run stops with an interrupt; resume it
  with ``Command(resume="approve")`` (or ``"reject"``).

Run it twice with the same objective: the first run fails a few times and
stores lessons; the second recalls them and passes at its first proposal.
"""

from __future__ import annotations

import operator
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from langgraph_memory import recall_node, store_node

# The market, the backtest and the lessons' adjustments are the offline example's.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from trading_research import (  # noqa: E402
    BASE_PARAMS,
    GATES,
    _diagnose,
    apply_lessons,
    backtest,
    make_prices,
)

MAX_ITERATIONS = 6


class ResearchState(TypedDict, total=False):
    objective: str
    seed: int
    recalled_lessons: list[dict[str, Any]]
    lessons: list[dict[str, Any]]
    params: dict[str, Any]
    metrics: dict[str, float]
    passed: bool
    iteration: int
    lesson_to_store: dict[str, Any] | None
    stored_lesson_ids: Annotated[list[str], operator.add]
    history: list[dict[str, Any]]
    status: str


def _regime(seed: int) -> str:
    import numpy as np

    r = np.diff(np.log(make_prices(seed)))
    return "volatile" if float(r.std() * np.sqrt(252)) > 0.2 else "calm"


def absorb(state: ResearchState) -> dict[str, Any]:
    """Recalled lessons that carry a parameter adjustment become this run's starting knowledge."""
    lessons = []
    for hit in state.get("recalled_lessons") or []:
        adjust = (hit["value"].get("feedback") or {}).get("adjust")
        if adjust:
            lessons.append({"id": hit["key"], "lesson": hit["value"]["lesson"], "adjust": adjust})
    return {"lessons": lessons, "iteration": 0, "history": [], "status": "running", "lesson_to_store": None}


def propose(state: ResearchState) -> dict[str, Any]:
    params, _used = apply_lessons(BASE_PARAMS, state.get("lessons") or [])
    return {"params": params, "iteration": state.get("iteration", 0) + 1}


def run_backtest(state: ResearchState) -> dict[str, Any]:
    seed = state.get("seed", 7)
    metrics = backtest(make_prices(seed), state["params"])
    passed = _diagnose(metrics, state["params"], _regime(seed)) is None
    row = {"iteration": state["iteration"], "params": state["params"], "metrics": metrics, "passed": passed}
    return {"metrics": metrics, "passed": passed, "history": [*(state.get("history") or []), row]}


def learn(state: ResearchState) -> dict[str, Any]:
    diagnosis = _diagnose(state["metrics"], state["params"], _regime(state.get("seed", 7)))
    assert diagnosis is not None  # routed here only on failure
    lesson = {
        "lesson": diagnosis["lesson"],
        "failure_type": diagnosis["failure_type"],
        "iteration": state["iteration"],
        "severity": "major",
        "feedback": {"metrics": state["metrics"], "gates": GATES, "adjust": diagnosis["adjust"]},
        "improvement_applied": ", ".join(diagnosis["adjust"]),
    }
    known = {"id": f"new-{state['iteration']}", "lesson": diagnosis["lesson"], "adjust": diagnosis["adjust"]}
    return {"lesson_to_store": lesson, "lessons": [*(state.get("lessons") or []), known]}


def review(state: ResearchState) -> dict[str, Any]:
    decision = interrupt({"question": "Approve this strategy?", "params": state["params"], "metrics": state["metrics"]})
    return {"status": "approved" if decision == "approve" else "rejected"}


def give_up(state: ResearchState) -> dict[str, Any]:
    return {"status": "failed"}


def route(state: ResearchState) -> str:
    if state["passed"]:
        return "review"
    if state["iteration"] >= MAX_ITERATIONS:
        return "give_up"
    return "learn"


builder = StateGraph(ResearchState)
builder.add_node(
    "recall_lessons",
    recall_node(("lessons",), query="objective", output_key="recalled_lessons", k=5, name="recall_lessons"),
)
builder.add_node("absorb", absorb)
builder.add_node("propose", propose)
builder.add_node("backtest", run_backtest)
builder.add_node("learn", learn)
builder.add_node(
    "store_lesson",
    store_node(("lessons",), values="lesson_to_store", output_key="stored_lesson_ids", name="store_lesson"),
)
builder.add_node("review", review)
builder.add_node("give_up", give_up)
builder.add_edge(START, "recall_lessons")
builder.add_edge("recall_lessons", "absorb")
builder.add_edge("absorb", "propose")
builder.add_edge("propose", "backtest")
builder.add_conditional_edges("backtest", route, ["review", "learn", "give_up"])
builder.add_edge("learn", "store_lesson")
builder.add_edge("store_lesson", "propose")
builder.add_edge("review", END)
builder.add_edge("give_up", END)

# No checkpointer or store here: the LangGraph server supplies both (langgraph.json).
graph = builder.compile()
