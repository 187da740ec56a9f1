"""The async API never blocks the event loop: every call runs under blockbuster,
configured as ``langgraph dev`` configures it (see ``tests/helpers/blocking.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
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
from tests.conftest import FAKE_DIMS
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
    await asyncio.gather(*(graph.ainvoke({"messages": [HumanMessage(f"m{i}")]}, {"configurable": {"thread_id": f"g{i}"}}) for i in range(8)))
    for i in range(5):
        await graph.ainvoke({"messages": [HumanMessage(f"m{i}")]}, config)
    state = await graph.aget_state(config)
    assert state.values["turns"] == 5
    assert len([s async for s in graph.aget_state_history(config)]) > 5


async def test_checkpointer_async_context_manager_does_not_block(tmp_path: Path, no_blocking: Any) -> None:
    saver = await asyncio.to_thread(SqliteCheckpointer, tmp_path / "cp.sqlite")
    async with saver:
        await saver.aput(generate_config("t"), generate_checkpoint(), generate_metadata(), {})
