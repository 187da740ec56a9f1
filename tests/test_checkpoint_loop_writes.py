"""aput/aput_writes committed on the event loop: order, lock fallback, WAL checkpoints."""

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
from langgraph.checkpoint.serde.types import ERROR

from langgraph_memory.checkpoint import SqliteCheckpointer
from langgraph_memory.checkpoint._pool import _COMMITS_PER_CHECKPOINT
from tests.test_checkpoint_graphs import _chat_graph


@pytest.fixture
async def saver(tmp_path: Path) -> AsyncIterator[SqliteCheckpointer]:
    async with SqliteCheckpointer(tmp_path / "cp.sqlite") as s:
        # The first write goes to the worker, which then opens the loop's connection.
        await s.aput(generate_config("warm"), generate_checkpoint(), generate_metadata(), {})
        await _drain(s)
        yield s


async def _drain(saver: SqliteCheckpointer) -> None:
    """Wait until the worker has run everything queued (housekeeping included)."""
    await saver._worker.run(lambda: None)


def _error_write(saver: SqliteCheckpointer, config: Any) -> Any:
    (write,) = saver.get_tuple(config).pending_writes  # type: ignore[union-attr]
    return write[2]


async def test_write_commits_on_the_loop_when_nothing_waits(saver: SqliteCheckpointer) -> None:
    before = saver._pool.loop_commits
    config = await saver.aput(generate_config("t"), generate_checkpoint(), generate_metadata(), {})
    await saver.aput_writes(config, [("ch", 1)], "task")
    assert saver._pool.loop_commits == before + 2
    outside = sqlite3.connect(saver.path)  # acknowledged means committed: visible elsewhere
    try:
        assert outside.execute("SELECT count(*) FROM writes WHERE task_id = 'task'").fetchone() == (1,)
    finally:
        outside.close()
    saved = await saver.aget_tuple(generate_config("t"))
    assert saved is not None and saved.pending_writes == [("task", "ch", 1)]


async def test_graph_writes_run_on_the_loop(saver: SqliteCheckpointer) -> None:
    graph = _chat_graph(saver)
    before = saver._pool.loop_commits
    for i in range(5):
        await graph.ainvoke({"messages": [HumanMessage(f"m{i}")]}, {"configurable": {"thread_id": "g"}})
    # 4 puts and 3 put_writes per invoke; the first may still go to the worker.
    assert saver._pool.loop_commits - before >= 4 * 7
    state = await graph.aget_state({"configurable": {"thread_id": "g"}})
    assert state.values["turns"] == 5 and len(state.values["messages"]) == 15


async def test_loop_write_never_overtakes_a_queued_worker_write(saver: SqliteCheckpointer) -> None:
    config = await saver.aput(generate_config("t"), generate_checkpoint(), generate_metadata(), {})
    gate = threading.Event()
    blocker = asyncio.ensure_future(saver._worker.run(lambda: gate.wait(10)))
    await asyncio.sleep(0)  # the worker is now busy
    before = saver._pool.loop_commits
    # Special writes replace each other: the last one committed wins.
    first = asyncio.ensure_future(saver.aput_writes(config, [(ERROR, "first")], "task"))
    await asyncio.sleep(0)
    second = asyncio.ensure_future(saver.aput_writes(config, [(ERROR, "second")], "task"))
    await asyncio.sleep(0)
    read = asyncio.ensure_future(saver.aget_tuple(config))
    await asyncio.sleep(0)
    assert not first.done() and not second.done() and not read.done()
    assert saver._pool.loop_commits == before  # both queued behind the busy worker
    gate.set()
    await asyncio.gather(blocker, first, second)
    seen = await read
    assert seen is not None and [w[2] for w in seen.pending_writes] == ["second"]
    assert _error_write(saver, config) == "second"

    # Once the queue is drained, writes run on the loop again, after the queued ones.
    await _drain(saver)
    await saver.aput_writes(config, [(ERROR, "third")], "task")
    assert saver._pool.loop_commits == before + 1
    assert _error_write(saver, config) == "third"


async def test_locked_file_falls_back_to_the_worker_without_blocking_the_loop(
    saver: SqliteCheckpointer,
) -> None:
    config = await saver.aput(generate_config("t"), generate_checkpoint(), generate_metadata(), {})
    before = saver._pool.loop_commits
    other = sqlite3.connect(saver.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another connection holds the write lock
    try:
        write = asyncio.ensure_future(saver.aput_writes(config, [("ch", "late")], "task"))
        ticks = 0
        while ticks < 20:  # the loop keeps running while the worker waits for the lock
            await asyncio.sleep(0.01)
            ticks += 1
        assert not write.done()
        # Later writes queue behind it, on the worker too: order is kept.
        after = asyncio.ensure_future(saver.aput_writes(config, [("ch", "later")], "task-2"))
        await asyncio.sleep(0.01)
        assert not after.done()
    finally:
        other.execute("ROLLBACK")
        other.close()
    await asyncio.gather(write, after)
    assert saver._pool.loop_commits == before
    saved = await saver.aget_tuple(config)
    assert saved is not None
    assert sorted(w[2] for w in saved.pending_writes) == ["late", "later"]
    await _drain(saver)
    await saver.aput_writes(config, [("ch", "free")], "task-3")  # the lock is free: on the loop
    assert saver._pool.loop_commits == before + 1


async def test_worker_checkpoints_the_wal_loop_writes_fill(saver: SqliteCheckpointer) -> None:
    config = await saver.aput(generate_config("t"), generate_checkpoint(), generate_metadata(), {})
    wal = Path(f"{saver.path}-wal")
    before = saver._pool.loop_commits
    payload = "x" * 4000  # about one WAL page per write, plus the index pages
    writes = 8 * _COMMITS_PER_CHECKPOINT
    sizes = []
    for i in range(writes):
        await saver.aput_writes(config, [("ch", payload)], f"task-{i}")
        if i % 50 == 0:
            await asyncio.sleep(0)  # let posted checkpoints run, as a real loop would
            sizes.append(wal.stat().st_size)
    await _drain(saver)
    # Nearly every write ran on the loop (those right after a checkpoint go to the worker).
    assert saver._pool.loop_commits - before >= writes * 0.9
    # Unchecked, the WAL would hold every write; checkpointed and restarted,
    # it stays within a few checkpoint intervals.
    per_write = (sizes[1] - sizes[0]) / 50  # before the first checkpoint
    bound = 3 * _COMMITS_PER_CHECKPOINT * per_write
    assert max(sizes) < bound < writes * per_write / 2, (per_write, sizes)
    saved = await saver.aget_tuple(config)
    assert saved is not None and len(saved.pending_writes) == writes


async def test_full_durability_never_writes_on_the_loop(tmp_path: Path) -> None:
    async with SqliteCheckpointer(tmp_path / "full.sqlite", durability="full") as saver:
        config = generate_config("t")
        for _ in range(3):
            config = await saver.aput(config, generate_checkpoint(), generate_metadata(), {})
            await _drain(saver)
        assert saver._pool.loop_commits == 0
        assert len([t async for t in saver.alist(generate_config("t"))]) == 3


async def test_write_after_a_full_checkpoint_restarts_the_wal_on_the_worker(
    saver: SqliteCheckpointer,
) -> None:
    """Restarting the WAL syncs its new header: that write must not run on the loop."""
    config = await saver.aput(generate_config("t"), generate_checkpoint(), generate_metadata(), {})
    await saver._worker.run(saver._pool.checkpoint_wal)  # nothing reads: copies everything
    before = saver._pool.loop_commits
    await saver.aput_writes(config, [("ch", 1)], "task-1")
    assert saver._pool.loop_commits == before  # the restart went to the worker
    await saver.aput_writes(config, [("ch", 2)], "task-2")
    assert saver._pool.loop_commits == before + 1  # and the next one is on the loop again
