"""The checkpoint benches' workload: a two-node chat graph, long threads of checkpoints, and how they are timed.

Shared by ``checkpoint_bench.py`` (SQLite and, with ``--postgres``, PostgreSQL)
and ``checkpoint_pg_ab.py``, so every saver runs the same graph.
"""

from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass, field
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.base.id import uuid6
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: int


STEPS_PER_INVOKE = 2  # super-steps: think, answer
TURNS_PER_THREAD = 10  # a new thread every 10 turns keeps state size realistic


def build_graph(saver: BaseCheckpointSaver) -> Any:
    def think(state: ChatState) -> dict[str, Any]:
        return {
            "messages": [AIMessage(f"thinking about {state['messages'][-1].content}")],
            "turns": state.get("turns", 0) + 1,
        }

    def answer(state: ChatState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"answer #{state['turns']}")]}

    builder = StateGraph(ChatState)
    builder.add_node("think", think)
    builder.add_node("answer", answer)
    builder.add_edge(START, "think")
    builder.add_edge("think", "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=saver)


def _configs(prefix: str, invokes: int) -> list[dict[str, Any]]:
    return [{"configurable": {"thread_id": f"{prefix}-{i // TURNS_PER_THREAD}"}} for i in range(invokes)]


ROUNDS = 5  # steps/s is the median of this many rounds per saver, unless told otherwise
WARM_UP = 20  # invokes per saver before timing: imports, caches, SQLite page cache


def _sync_round(graph: Any, tag: str, invokes: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for i, config in enumerate(_configs(tag, invokes)):
        graph.invoke({"messages": [HumanMessage(f"message {i}")]}, config)
    return invokes * STEPS_PER_INVOKE / (time.perf_counter() - start)


async def _async_round(graph: Any, tag: str, invokes: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for i, config in enumerate(_configs(tag, invokes)):
        await graph.ainvoke({"messages": [HumanMessage(f"message {i}")]}, config)
    return invokes * STEPS_PER_INVOKE / (time.perf_counter() - start)


def steps_per_second_sync(
    savers: dict[str, BaseCheckpointSaver], invokes: int, rounds: int = ROUNDS
) -> dict[str, list[float]]:
    """Steps/s per saver: rounds interleaved (A, B, C, A, B, C, ...) so load drift hits all alike."""
    graphs = {name: build_graph(saver) for name, saver in savers.items()}
    for name, graph in graphs.items():
        _sync_round(graph, f"warm-{name}", WARM_UP)
    rates: dict[str, list[float]] = {name: [] for name in graphs}
    for r in range(rounds):
        for name, graph in graphs.items():
            rates[name].append(_sync_round(graph, f"run{r}-{name}", invokes))
    return rates


async def steps_per_second_async(
    savers: dict[str, BaseCheckpointSaver], invokes: int, rounds: int = ROUNDS
) -> dict[str, list[float]]:
    """Async twin of :func:`steps_per_second_sync`."""
    graphs = {name: build_graph(saver) for name, saver in savers.items()}
    for name, graph in graphs.items():
        await _async_round(graph, f"warm-{name}", WARM_UP)
    rates: dict[str, list[float]] = {name: [] for name in graphs}
    for r in range(rounds):
        for name, graph in graphs.items():
            rates[name].append(await _async_round(graph, f"run{r}-{name}", invokes))
    return rates


# -- long threads for read latency -------------------------------------------


def make_checkpoint(i: int) -> dict[str, Any]:
    messages = [HumanMessage(f"message {i}"), AIMessage(f"answer {i}")]
    return {
        "v": 4,
        "id": str(uuid6(clock_seq=i)),
        "ts": "2025-01-01T00:00:00+00:00",
        "channel_values": {"messages": messages, "turns": i},
        "channel_versions": {"messages": i + 1, "turns": i + 1},
        "versions_seen": {"think": {"messages": i}},
        "updated_channels": ["messages", "turns"],
    }


def fill_thread(saver: BaseCheckpointSaver, thread_id: str, n: int) -> None:
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for i in range(n):
        # Both channels change every step, so both versions are new (savers
        # that store values per version, like ours and InMemorySaver, rely on it).
        new_versions = {"messages": i + 1, "turns": i + 1}
        config = saver.put(config, make_checkpoint(i), {"source": "loop", "step": i}, new_versions)
        if i % 3 == 0:
            saver.put_writes(config, [("messages", [AIMessage("pending")])], f"task-{i}")


def median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def read_latency_sync(saver: BaseCheckpointSaver, thread_id: str, repeats: int) -> tuple[float, float]:
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    gets, lists = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        assert saver.get_tuple(config) is not None
        t1 = time.perf_counter()
        assert len(list(saver.list(config, limit=10))) == 10
        t2 = time.perf_counter()
        gets.append(t1 - t0)
        lists.append(t2 - t1)
    return median_us(gets), median_us(lists)


async def read_latency_async(saver: BaseCheckpointSaver, thread_id: str, repeats: int) -> tuple[float, float]:
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    gets, lists = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        assert await saver.aget_tuple(config) is not None
        t1 = time.perf_counter()
        assert len([t async for t in saver.alist(config, limit=10)]) == 10
        t2 = time.perf_counter()
        gets.append(t1 - t0)
        lists.append(t2 - t1)
    return median_us(gets), median_us(lists)


# -- the run -------------------------------------------------------------------


@dataclass
class Row:
    saver: str
    mode: str
    rounds: list[float]  # steps/s of each round
    peer: str | None = None
    latency: dict[str, float] = field(default_factory=dict)  # "get@100" -> µs
    file_bytes: int | None = None

    @property
    def steps_per_s(self) -> float:
        return statistics.median(self.rounds)

    def ratio_to(self, peer: Row) -> float:
        """Median over rounds of this/peer in the same round (rounds are interleaved)."""
        return statistics.median(a / b for a, b in zip(self.rounds, peer.rounds, strict=False))
