"""aput/aput_writes from an event loop: committed in a thread before the await returns,
never blocking the loop (every test here runs under the LangGraph server's blockbuster)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
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

# No catalog here: the checkpointers run in the SQLite-catalog run (PostgreSQL's too, on the session's server).
pytestmark = pytest.mark.sqlite_only("checkpointer tests: no catalog involved, both checkpointers run in the other run")


@pytest.fixture
async def saver(tmp_path: Path, no_blocking: Any) -> AsyncIterator[SqliteCheckpointer]:
    s = await asyncio.to_thread(SqliteCheckpointer, tmp_path / "cp.sqlite")
    async with s:
        yield s


def _outside(saver: SqliteCheckpointer, sql: str) -> Any:
    """A query on a connection of its own, off the loop (blockbuster watches the loop)."""

    def run() -> Any:
        conn = sqlite3.connect(saver.path)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()

    return asyncio.to_thread(run)


async def test_acknowledged_write_is_committed(saver: SqliteCheckpointer) -> None:
    config = await saver.aput(generate_config("t"), generate_checkpoint(), generate_metadata(), {})
    await saver.aput_writes(config, [("ch", 1)], "task")
    # Acknowledged means committed: visible on another connection.
    assert await _outside(saver, "SELECT count(*) FROM writes WHERE task_id = 'task'") == [(1,)]
    saved = await saver.aget_tuple(generate_config("t"))
    assert saved is not None and saved.pending_writes == [("task", "ch", 1)]


async def test_graph_runs_from_the_loop(saver: SqliteCheckpointer) -> None:
    graph = _chat_graph(saver)
    for i in range(5):
        await graph.ainvoke({"messages": [HumanMessage(f"m{i}")]}, {"configurable": {"thread_id": "g"}})
    state = await graph.aget_state({"configurable": {"thread_id": "g"}})
    assert state.values["turns"] == 5 and len(state.values["messages"]) == 15


async def test_locked_file_waits_off_the_loop(saver: SqliteCheckpointer) -> None:
    config = await saver.aput(generate_config("t"), generate_checkpoint(), generate_metadata(), {})
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:  # another connection holds the write lock
        other = sqlite3.connect(saver.path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        locked.set()
        release.wait(30)
        other.execute("ROLLBACK")
        other.close()

    holder = asyncio.ensure_future(asyncio.to_thread(hold_lock))
    await asyncio.to_thread(locked.wait, 30)
    try:
        write = asyncio.ensure_future(saver.aput_writes(config, [("ch", "late")], "task"))
        for _ in range(20):  # the loop keeps running while the thread waits for the lock
            await asyncio.sleep(0.01)
        assert not write.done()
        after = asyncio.ensure_future(saver.aput_writes(config, [("ch", "later")], "task-2"))
        await asyncio.sleep(0.01)
        assert not after.done()
    finally:
        release.set()
    await asyncio.gather(holder, write, after)
    saved = await saver.aget_tuple(config)
    assert saved is not None
    assert sorted(w[2] for w in saved.pending_writes) == ["late", "later"]


async def test_wal_stays_bounded_under_async_writes(saver: SqliteCheckpointer) -> None:
    config = await saver.aput(generate_config("t"), generate_checkpoint(), generate_metadata(), {})
    wal = Path(f"{saver.path}-wal")
    payload = "x" * 4000  # about one WAL page per write, plus the index pages
    writes = 2000  # about four times SQLite's checkpoint trigger (1,000 WAL pages)
    sizes = []
    for i in range(writes):
        await saver.aput_writes(config, [("ch", payload)], f"task-{i}")
        if i % 50 == 0:
            sizes.append((await asyncio.to_thread(wal.stat)).st_size)
    # Unchecked, the WAL would hold every write; checkpointed (by SQLite,
    # inside a commit on the pool's thread) and restarted, it stays bounded.
    per_write = (sizes[1] - sizes[0]) / 50  # before the first checkpoint
    assert max(sizes) < writes * per_write / 2, (per_write, sizes)
    saved = await saver.aget_tuple(config)
    assert saved is not None and len(saved.pending_writes) == writes


async def test_full_durability_from_the_loop(tmp_path: Path, no_blocking: Any) -> None:
    saver = await asyncio.to_thread(SqliteCheckpointer, tmp_path / "full.sqlite", durability="full")
    async with saver:
        config = generate_config("t")
        for _ in range(3):
            config = await saver.aput(config, generate_checkpoint(), generate_metadata(), {})
        assert len([t async for t in saver.alist(generate_config("t"))]) == 3
