"""Measure how long an event loop is kept from running, while async memory work runs on it.

A ticker coroutine sleeps 1 ms at a time and records, for every tick, two
intervals since the previous tick:

* ``wall``: real time. What a user of the loop sees, but on a loaded machine
  it also counts time the process waited for a CPU, and time the loop thread
  waited for the GIL that another thread held.
* ``cpu``: CPU time of the loop thread (``time.thread_time``). Only work the
  loop thread itself ran between two ticks: the callbacks and coroutine steps
  that held the loop. Waiting for a CPU, for the GIL or in ``select`` adds
  nothing, so it barely moves with the machine's load.

* ``waited`` (Linux, only with ``schedstat=True``): of ``wall``, the time
  the loop thread was ready to run but had no CPU (from
  ``/proc/thread-self/schedstat``), i.e. the machine's load. Then
  ``wall - cpu - waited`` is the time the loop thread slept: its 1 ms timer,
  plus any wait for the GIL or for a blocking call.
* ``others_waited`` (with ``schedstat=True``): the run-queue waits of the
  *other* threads of this process in the interval, added up
  (``others_waited_longest``: the longest of them). A thread holding the GIL
  cannot hand it over while it has no CPU, so on a loaded machine the loop
  also waits for that; which thread held it is unknown, so all are counted.
* ``unloaded``: ``wall - waited - others_waited``, but never less than
  ``cpu``. What the loop's other tasks would see on an idle machine: the
  timer, the work on the loop, and every wait for the GIL held by a running
  thread (a C call that keeps it, such as an embedded Chroma write) or for a
  blocking call, but not the time the machine's other processes had the CPU.

Blocking that costs no CPU (a sleep, a disk sync, a lock wait on the loop) does
not show in ``cpu``: run the workload under blockbuster as well
(``tests/helpers/blocking.py``), which fails on every such call.

The workload: ``writers`` coroutines, each putting an item into a
:class:`~langgraph_memory.store.ChromaStore`, searching it, and saving a
checkpoint and its pending writes with a
:class:`~langgraph_memory.checkpoint.SqliteCheckpointer`, ``rounds`` times.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Gaps:
    """Intervals between ticks, in seconds."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    waited: list[float] = field(default_factory=list)
    others_waited: list[float] = field(default_factory=list)
    others_waited_longest: list[float] = field(default_factory=list)
    #: how long each awaited call of the workload took, by name (``aput``, ``asearch``, ``checkpoint``).
    ops: dict[str, list[float]] = field(default_factory=dict)

    @property
    def slept(self) -> list[float]:
        """``wall - cpu - waited`` per tick (needs ``waited``)."""
        return [max(0.0, w - c - q) for w, c, q in zip(self.wall, self.cpu, self.waited, strict=True)]

    @property
    def unloaded(self) -> list[float]:
        """``max(cpu, wall - waited - others_waited)`` per tick (needs ``schedstat``): the gap less the load."""
        return [
            max(c, w - q - o) for w, c, q, o in zip(self.wall, self.cpu, self.waited, self.others_waited, strict=True)
        ]

    @staticmethod
    def _pct(values: list[float], p: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]

    def summary(self, which: str) -> dict[str, float]:
        """``{"ticks", "p50", "p99", "max"}`` of the ``wall``, ``cpu``, ... intervals, or of ``ops[name]``, in ms."""
        values = self.ops[which] if which in self.ops else getattr(self, which, [])  # an op this workload lacks: none
        if not values:
            return {"ticks": 0.0, "p50": float("nan"), "p99": float("nan"), "max": float("nan")}
        return {
            "ticks": float(len(values)),
            "p50": statistics.median(values) * 1000,
            "p99": self._pct(values, 99) * 1000,
            "max": max(values) * 1000,
        }


def _runqueue_wait(fd: int) -> float:
    # The second field of schedstat: ns spent runnable but waiting for a CPU.
    return int(os.pread(fd, 100, 0).split()[1]) / 1e9


class _OtherThreads:
    """The run-queue waits of this process's other threads (``/proc/self/task/<tid>/schedstat``)."""

    def __init__(self) -> None:
        self.me = threading.get_native_id()
        self.fds: dict[int, int] = {}
        self.last: dict[int, float] = {}
        self.waits()

    def waits(self) -> tuple[float, float]:
        """The longest run-queue wait of one other thread since the previous call, and their sum."""
        longest = total = 0.0
        for name in os.listdir("/proc/self/task"):
            tid = int(name)
            if tid == self.me:
                continue
            fd = self.fds.get(tid)
            try:
                if fd is None:
                    fd = self.fds[tid] = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
                now = _runqueue_wait(fd)
            except (OSError, IndexError, ValueError):  # the thread ended meanwhile
                continue
            waited = now - self.last.get(tid, now)
            longest, total = max(longest, waited), total + waited
            self.last[tid] = now
        return longest, total

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)


async def _ticker(stop: asyncio.Event, gaps: Gaps, schedstat: bool) -> None:
    # Opened here, on the loop thread: the file describes the thread that opens it.
    fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY) if schedstat else -1
    others = _OtherThreads() if schedstat else None
    try:
        last_wall, last_cpu = time.perf_counter(), time.thread_time()
        last_q = _runqueue_wait(fd) if schedstat else 0.0
        while not stop.is_set():
            await asyncio.sleep(0.001)
            wall, cpu = time.perf_counter(), time.thread_time()
            gaps.wall.append(wall - last_wall)
            gaps.cpu.append(cpu - last_cpu)
            if others is not None:
                q = _runqueue_wait(fd)
                gaps.waited.append(q - last_q)
                longest, total = others.waits()
                gaps.others_waited.append(total)
                gaps.others_waited_longest.append(longest)
                last_q = q
            last_wall, last_cpu = wall, cpu
    finally:
        if fd >= 0:
            os.close(fd)
        if others is not None:
            others.close()


async def _timed(ops: dict[str, list[float]], name: str, call: Any) -> Any:
    start = time.perf_counter()
    result = await call
    ops.setdefault(name, []).append(time.perf_counter() - start)
    return result


async def _writer(i: int, store: Any, saver: Any, rounds: int, ops: dict[str, list[float]]) -> None:
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.base.id import uuid6

    config: dict[str, Any] = {"configurable": {"thread_id": f"w{i}", "checkpoint_ns": ""}}
    for r in range(rounds):
        ns = ("memories", f"user-{i}")
        await _timed(
            ops, "aput", store.aput(ns, f"k{r}", {"text": f"writer {i} lesson {r}: keep position sizes small"})
        )
        found = await _timed(ops, "asearch", store.asearch(ns, query=f"lesson {r}", limit=5))
        assert found, "the item just put must be found"
        checkpoint = empty_checkpoint()
        checkpoint["id"] = str(uuid6(clock_seq=r))
        checkpoint["channel_values"] = {"messages": [f"turn {r} of writer {i}"] * 5}
        config = await _timed(
            ops, "checkpoint", saver.aput(config, checkpoint, {"source": "loop", "step": r}, {"messages": f"{r + 1}"})
        )
        await saver.aput_writes(config, [("messages", f"pending {r}")], f"task-{r}")


async def _mixer(i: int, store: Any, deadline: float, ops: dict[str, list[float]], kept: dict[str, set[str]]) -> None:
    """Puts, searches, gets and deletes in one namespace until ``deadline``; ``kept`` records what must remain."""
    ns = ("memories", f"task-{i}")
    mine = kept.setdefault(f"task-{i}", set())
    r = 0
    while time.perf_counter() < deadline:
        key = f"k{r}"
        await _timed(ops, "aput", store.aput(ns, key, {"text": f"task {i} lesson {r}: keep position sizes small"}))
        mine.add(key)
        await _timed(ops, "asearch", store.asearch(ns, query=f"lesson {r}", limit=5))
        got = await _timed(ops, "aget", store.aget(ns, key))
        assert got is not None, "the item just put must be there"
        if r % 3 == 2:  # every third round deletes an earlier item
            gone = f"k{r - 2}"
            await _timed(ops, "adelete", store.adelete(ns, gone))
            mine.discard(gone)
        r += 1


async def measure_mix(store: Any, *, tasks: int = 50, seconds: float = 40.0, schedstat: bool = False) -> Gaps:
    """``tasks`` coroutines putting, searching, getting and deleting for ``seconds``, the ticker beside them.

    Afterwards every item a task put and did not delete must be there, and no other (nothing lost):
    raises ``AssertionError`` otherwise.
    """
    gaps = Gaps()
    stop = asyncio.Event()
    kept: dict[str, set[str]] = {}
    ticker = asyncio.ensure_future(_ticker(stop, gaps, schedstat))
    deadline = time.perf_counter() + seconds
    try:
        await asyncio.gather(*(_mixer(i, store, deadline, gaps.ops, kept) for i in range(tasks)))
    finally:
        stop.set()
        await ticker
    for name, keys in kept.items():
        found = {it.key for it in await store.asearch(("memories", name), limit=100_000)}
        assert found == keys, f"{name}: {len(keys - found)} items lost, {len(found - keys)} deleted items back"
    return gaps


async def measure(
    store: Any, saver: Any, *, writers: int = 8, rounds: int = 20, schedstat: bool = False, warmup: int = 0
) -> Gaps:
    """Run the workload once with the ticker on the same loop; return the tick intervals.

    ``warmup`` rounds run first, unmeasured: the first calls of a process
    import modules and start threads (and the index's child process), which
    a server does once, not per request.
    """
    if warmup:
        await asyncio.gather(*(_writer(i, store, saver, warmup, {}) for i in range(writers)))
    gaps = Gaps()
    stop = asyncio.Event()
    ticker = asyncio.ensure_future(_ticker(stop, gaps, schedstat))
    try:
        await asyncio.gather(*(_writer(i, store, saver, rounds, gaps.ops) for i in range(writers)))
    finally:
        stop.set()
        await ticker
    return gaps
