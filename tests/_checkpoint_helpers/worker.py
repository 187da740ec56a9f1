"""Subprocess side of tests/test_checkpoint_processes.py (not collected by pytest).

Usage:
    python worker.py count <db> <thread_id> <target> <sleep>
    python worker.py acount <db> <thread_id> <target> <sleep>   (ainvoke; prints loop commits)
    python worker.py chat <db> <prefix> <invokes> <go_file>
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from langgraph_memory.checkpoint import SqliteCheckpointer


class CountState(TypedDict):
    count: int
    trail: list[int]


def count_graph(saver: SqliteCheckpointer, target: int, pause: float) -> Any:
    def inc(state: CountState) -> dict[str, Any]:
        time.sleep(pause)
        n = state["count"] + 1
        return {"count": n, "trail": [*state["trail"], n]}

    builder = StateGraph(CountState)
    builder.add_node("inc", inc)
    builder.add_edge(START, "inc")
    builder.add_conditional_edges("inc", lambda s: END if s["count"] >= target else "inc")
    return builder.compile(checkpointer=saver)


def _count(db: str, thread_id: str, target: str, pause: str) -> None:
    saver = SqliteCheckpointer(db)
    graph = count_graph(saver, int(target), float(pause))
    graph.invoke(
        {"count": 0, "trail": []},
        {"configurable": {"thread_id": thread_id}, "recursion_limit": 10_000},
    )


def _acount(db: str, thread_id: str, target: str, pause: str) -> None:
    async def run() -> None:
        saver = SqliteCheckpointer(db)
        graph = count_graph(saver, int(target), float(pause))
        await graph.ainvoke(
            {"count": 0, "trail": []},
            {"configurable": {"thread_id": thread_id}, "recursion_limit": 10_000},
        )

    asyncio.run(run())


def _chat(db: str, prefix: str, invokes: str, go_file: str) -> None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from langchain_core.messages import HumanMessage
    from test_checkpoint_graphs import _chat_graph  # the same graph as the in-process tests

    saver = SqliteCheckpointer(db)
    graph = _chat_graph(saver)
    open(f"{go_file}.ready-{prefix}", "w").close()
    while not os.path.exists(go_file):  # start both writers together
        time.sleep(0.005)
    for i in range(int(invokes)):
        config = {"configurable": {"thread_id": f"{prefix}-{i % 4}"}}
        graph.invoke({"messages": [HumanMessage(f"{prefix} {i}")]}, config)
    saver.close()


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    {"count": _count, "acount": _acount, "chat": _chat}[mode](*args)
