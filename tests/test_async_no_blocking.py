"""The async API never blocks the event loop: every call runs under blockbuster,
configured as ``langgraph dev`` configures it (see ``tests/helpers/blocking.py``)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)

from langgraph_memory.checkpoint import SqliteCheckpointer
from tests.test_checkpoint_graphs import _chat_graph


@pytest.fixture
def saver(tmp_path: Path) -> Any:
    # Opened outside the loop, as langgraph_api does (it loads the factory in an executor).
    s = SqliteCheckpointer(tmp_path / "cp.sqlite")
    yield s
    s.close()


async def test_checkpointer_async_api_does_not_block(saver: SqliteCheckpointer, no_blocking: Any) -> None:
    config = await saver.aput(generate_config("t"), generate_checkpoint(), generate_metadata(), {})
    await saver.aput_writes(config, [("ch", 1)], "task")
    # Twice: the first call may warm up connections, the second takes whatever fast path exists.
    for _ in range(2):
        config = await saver.aput(config, generate_checkpoint(), generate_metadata(), {})
        await saver.aput_writes(config, [("ch", 2)], "task")
        got = await saver.aget_tuple(config)
        assert got is not None and got.pending_writes == [("task", "ch", 2)]
        assert await saver.aget_tuple(generate_config("t")) is not None
    assert len([c async for c in saver.alist(generate_config("t"))]) == 3
    assert len([c async for c in saver.alist(None, limit=2)]) == 2
    await saver.acopy_thread("t", "t2")
    assert [t.thread_id for t in await saver.alist_threads()] != []
    await saver.aprune(["t2"])
    await saver.adelete_for_runs(["no-such-run"])
    assert await saver.aprune_inactive(timedelta(days=1)) == []
    await saver.adelete_thread("t")
    assert await saver.aget_tuple(generate_config("t")) is None


async def test_checkpointer_graph_runs_do_not_block(saver: SqliteCheckpointer, no_blocking: Any) -> None:
    graph = _chat_graph(saver)
    config = {"configurable": {"thread_id": "g"}}
    # Eight concurrent threads plus repeated turns on one: every async path of a graph run.
    await asyncio.gather(
        *(
            graph.ainvoke({"messages": [HumanMessage(f"m{i}")]}, {"configurable": {"thread_id": f"g{i}"}})
            for i in range(8)
        )
    )
    for i in range(5):
        await graph.ainvoke({"messages": [HumanMessage(f"m{i}")]}, config)
    state = await graph.aget_state(config)
    assert state.values["turns"] == 5
    assert len([s async for s in graph.aget_state_history(config)]) > 5


async def test_checkpointer_async_context_manager_does_not_block(tmp_path: Path, no_blocking: Any) -> None:
    saver = await asyncio.to_thread(SqliteCheckpointer, tmp_path / "cp.sqlite")
    async with saver:
        await saver.aput(generate_config("t"), generate_checkpoint(), generate_metadata(), {})


# ------------------------------------------------------ store, typed API, nodes, tools


@pytest.fixture
def mem(data_dir: Path, fake_embeddings: Any) -> Any:
    from langgraph_memory import Memory

    m = Memory.open(data_dir, embeddings=fake_embeddings)
    yield m
    m.close()


async def test_store_async_api_does_not_block(store: Any, no_blocking: Any) -> None:
    await store.aput(("memories", "u1"), "k1", {"text": "size positions to volatility"})
    await store.aput(("memories", "u1"), "k2", {"text": "avoid earnings weeks"}, ttl=60)
    assert (await store.aget(("memories", "u1"), "k1")).value["text"] == "size positions to volatility"
    assert len(await store.asearch(("memories",), query="volatility", limit=5)) == 2
    assert len(await store.asearch(("memories", "u1"), filter={"text": "avoid earnings weeks"})) == 1
    assert await store.alist_namespaces(prefix=("memories",)) == [("memories", "u1")]
    await store.adelete(("memories", "u1"), "k2")
    assert await store.aget(("memories", "u1"), "k2") is None
    await asyncio.gather(*(store.aput(("memories", f"u{i}"), "k", {"text": f"lesson {i}"}) for i in range(8)))
    assert len(await store.alist_namespaces(prefix=("memories",))) == 8


async def test_typed_api_async_twins_do_not_block(mem: Any, no_blocking: Any) -> None:
    f = await mem.astore_research_finding("async finding", source="a", confidence=0.8)
    s = await mem.astore_strategy("as", "async strategy", parent_id=f.id)
    lesson = await mem.astore_lesson("async lesson", strategy_id=s.id, iteration=1)
    assert [h.id for h in await mem.aget_relevant_lessons("x", min_relevance=None)] == [lesson.id]
    assert (await mem.aapprove_strategy(s.id)).status == "approved"
    assert (await mem.alineage(s.id)).ancestor_ids == [f.id]
    assert await mem.arecall("async") == []  # no documents ingested
    await mem.astats()


async def test_nodes_and_tools_do_not_block(mem: Any, no_blocking: Any) -> None:
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    from langgraph_memory import create_recall_tool, create_store_tool, recall_node, store_node

    class State(TypedDict, total=False):
        query: str
        memories: list[dict[str, Any]]
        memories_to_store: str
        stored_ids: list[str]

    builder = StateGraph(State)
    builder.add_node("store", store_node(("lessons",)))
    builder.add_node("recall", recall_node("lessons", min_relevance=None))
    builder.add_edge(START, "store")
    builder.add_edge("store", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(store=mem.store, checkpointer=mem.checkpointer)
    out = await graph.ainvoke(
        {"query": "lookback", "memories_to_store": "a short lookback whipsaws"},
        {"configurable": {"thread_id": "nodes"}},
    )
    assert out["stored_ids"] and out["memories"][0]["key"] == out["stored_ids"][0]

    config = {"configurable": {"user_id": "u1"}}
    store_tool = create_store_tool(store=mem.store)
    recall_tool = create_recall_tool(store=mem.store, min_relevance=None)
    key = await store_tool.ainvoke({"content": "trim risk before FOMC"}, config)
    assert key in await recall_tool.ainvoke({"query": "FOMC"}, config)
