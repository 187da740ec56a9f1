"""The background threads an open memory runs are the ones the architecture page lists, and no more.

Each thread is a cost every reader of the code pays (docs/architecture.md says what each one saves): a new
one must be added to the list on purpose, with its measurement.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import TypedDict

from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from langgraph_memory import Memory

#: What a memory runs after graph runs (sync and async) that put, search and get: the index catching up with
#: the catalog, and the reads' access counts applied. (The checkpointer's async calls run in asyncio's own
#: worker threads, which are not ours.)
EXPECTED = {"lgm-access-flush", "lgm-index-catch-up"}
#: On a PostgreSQL server, also the checkpointer's connection pool (psycopg_pool's scheduler and its three
#: workers, as LangGraph's PostgresSaver pool has).
ON_A_SERVER = {"lgm-checkpoint-scheduler", *(f"lgm-checkpoint-worker-{i}" for i in range(3))}


class _State(TypedDict, total=False):
    n: int


def _step(state: _State, store: BaseStore) -> _State:
    n = state.get("n", 0)
    store.put(("notes",), f"k{n}", {"text": f"note {n} about momentum"})
    assert store.search(("notes",), query="momentum")
    assert store.get(("notes",), f"k{n}") is not None
    return {"n": n + 1}


def _ours() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("lgm-")}


def test_a_mixed_sync_and_async_workload_runs_only_the_listed_threads(tmp_path: Path) -> None:
    before = _ours()
    with Memory.open(tmp_path / "memory", embeddings=DeterministicFakeEmbedding(size=16)) as mem:
        builder = StateGraph(_State)
        builder.add_node("step", _step)
        builder.add_edge(START, "step")
        builder.add_edge("step", END)
        graph = builder.compile(checkpointer=mem.checkpointer, store=mem.store)
        graph.invoke({"n": 0}, {"configurable": {"thread_id": "sync"}})

        async def run_async() -> None:
            await graph.ainvoke({"n": 10}, {"configurable": {"thread_id": "async"}})
            await mem.store.aput(("notes",), "a", {"text": "an async note"})
            assert await mem.store.asearch(("notes",), query="async")

        asyncio.run(run_async())
        assert mem.store.wait_for_index(30)
        running = _ours() - before
        assert running == EXPECTED | (ON_A_SERVER if mem.store.catalog.on_server else set())
    assert _ours() - before == set()  # close() ends every one of them
