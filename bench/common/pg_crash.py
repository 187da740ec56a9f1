"""Crash drills for PostgresCheckpointer, shared by the test suite and bench/faults/checkpoint_pg_crash_bench.py.

* :func:`kill_drill`: a worker process invokes graphs round-robin over some
  threads and is SIGKILLed at random moments; a new worker takes over each
  time. Every checkpoint the workers acknowledged must be in the database,
  and every thread must resume.
* :func:`server_drill`: several workers invoke while the server is stopped
  with ``pg_ctl stop -m immediate`` and started again. Workers may only see
  ``CheckpointUnavailableError`` while it is down, and must acknowledge again
  soon after it is back.

The workers are ``bench/common/pg_checkpoint_worker.py run``; they print one
line per acknowledged invoke, read here by a thread per worker.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

_REPO = Path(__file__).resolve().parents[2]
_WORKER = Path(__file__).with_name("pg_checkpoint_worker.py")


class Worker:
    """One worker process and the lines it printed, each with the monotonic time it was read."""

    def __init__(self, url: str, prefix: str, threads: int, go_file: Path, timeout: float) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_REPO), os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen(
            [sys.executable, str(_WORKER), "run", url, prefix, str(threads), str(go_file), str(timeout)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[tuple[float, str]] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append((time.monotonic(), line.strip()))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def acks(self) -> list[tuple[float, str, str, int]]:
        out = []
        for at, line in list(self.lines):
            parts = line.split()
            if parts and parts[0] == "ack":
                out.append((at, parts[1], parts[2], int(parts[3])))
        return out

    def wait_for_acks(self, n: int, deadline: float) -> bool:
        """Wait until ``n`` acknowledgements were printed (or the process ended)."""
        with self._cond:
            while len(self.acks()) < n and self.proc.poll() is None and time.monotonic() < deadline:
                self._cond.wait(timeout=0.5)
            return len(self.acks()) >= n

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._reader.join(timeout=30)

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._reader.join(timeout=30)
        return self.proc.stderr.read() if self.proc.stderr else ""


@dataclass
class DrillResult:
    acknowledged: int = 0
    lost: int = 0
    threads: int = 0
    resumed: int = 0
    untyped_errors: list[str] = field(default_factory=list)
    down_errors: int = 0
    recovery_s: list[float] = field(default_factory=list)
    errors_after_restart: int = 0


def _present(url: str, ids: list[str]) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            'SELECT checkpoint_id FROM "langgraph_memory".checkpoints WHERE checkpoint_id = ANY(%s)', (ids,)
        ).fetchall()
    return {r[0] for r in rows}


def _resume_all(url: str, acked: dict[str, tuple[str, int]], result: DrillResult) -> None:
    from bench.common.pg_checkpoint_worker import counter_graph
    from langgraph_memory.checkpoint.postgres import PostgresCheckpointer

    with PostgresCheckpointer(url, timeout=30) as saver:
        graph = counter_graph(saver)
        for thread_id, (_cid, count) in sorted(acked.items()):
            config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
            state = graph.get_state(config)
            if state.next:  # a run cut short by the kill: finish it
                graph.invoke(None, config)
                state = graph.get_state(config)
            assert state.values["count"] >= count, f"{thread_id}: count went back from {count}"
            after = graph.invoke({"count": state.values["count"], "steps": 0}, config)
            assert after["count"] == state.values["count"] + 3
            result.resumed += 1


def kill_drill(url: str, workdir: Path, kills: int, threads: int = 4, seed: int = 7) -> DrillResult:
    """SIGKILL a worker ``kills`` times at random points; check nothing acknowledged is lost."""
    rng = random.Random(seed)
    go = workdir / "go-kill"
    go.touch()
    result = DrillResult(threads=threads)
    acked: dict[str, tuple[str, int]] = {}
    all_ids: list[str] = []
    for _ in range(kills):
        worker = Worker(url, "kill", threads, go, timeout=30)
        target = rng.randint(2, 8)
        if not worker.wait_for_acks(target, time.monotonic() + 300):
            err = worker.stop()
            raise RuntimeError(f"worker made no progress: {err[-2000:]}")
        # Let it run into its next invoke, then kill it at a random point of it.
        time.sleep(rng.uniform(0.0, 0.15))
        worker.kill()
        for _at, thread_id, cid, count in worker.acks():
            acked[thread_id] = (cid, count)
            all_ids.append(cid)
        result.untyped_errors += [line for _at, line in worker.lines if line.startswith("error")]
    result.acknowledged = len(all_ids)
    result.lost = len(set(all_ids) - _present(url, all_ids))
    _resume_all(url, acked, result)
    return result


def server_drill(
    url: str,
    cluster: Any,
    workdir: Path,
    stops: int,
    workers: int = 4,
    down_s: float = 2.0,
    timeout: float = 5.0,
    seed: int = 11,
) -> DrillResult:
    """Stop the server ``stops`` times (``-m immediate``) under ``workers`` writers; check typed errors and recovery."""
    rng = random.Random(seed)
    go = workdir / "go-server"
    procs = [Worker(url, f"w{i}", 2, go, timeout=timeout) for i in range(workers)]
    backs: list[float] = []
    crashes: list[float] = []
    go.touch()
    result = DrillResult(threads=2 * workers)
    try:
        for _ in range(stops):
            deadline = time.monotonic() + 300
            for p in procs:  # every worker is writing
                if not p.wait_for_acks(len(p.acks()) + 2, deadline):
                    raise RuntimeError(f"worker stalled: {p.stop()[-2000:]}")
            time.sleep(rng.uniform(0.0, 0.3))
            crashes.append(time.monotonic())
            cluster.crash()
            time.sleep(down_s)
            cluster.start()
            back = time.monotonic()
            backs.append(back)
            counts = [len(p.acks()) for p in procs]
            for p, n in zip(procs, counts, strict=False):
                if not p.wait_for_acks(n + 1, back + 120):
                    raise RuntimeError(f"worker did not recover: {p.stop()[-2000:]}")
                first = next(at for at, *_rest in p.acks()[n:])
                result.recovery_s.append(max(0.0, first - back))
    finally:
        stderr = [p.stop() for p in procs]
    acked: dict[str, tuple[str, int]] = {}
    ids: list[str] = []
    for p, err in zip(procs, stderr, strict=False):
        for _at, thread_id, cid, count in p.acks():
            acked[thread_id] = (cid, count)
            ids.append(cid)
        for at, line in p.lines:
            if line.startswith("down"):
                result.down_errors += 1
                began = at - float(line.split()[2])
                # The whole failed call ran while the server was up: began after a
                # restart, failed before the next crash.
                for i, back in enumerate(backs):
                    next_crash = crashes[i + 1] if i + 1 < len(crashes) else float("inf")
                    if back < began and at < next_crash:
                        result.errors_after_restart += 1
                        break
        result.untyped_errors += [line for _at, line in p.lines if line.startswith("error")]
        if "Traceback" in err and not result.untyped_errors:
            result.untyped_errors.append(err[-1000:])
    result.acknowledged = len(ids)
    result.lost = len(set(ids) - _present(url, ids))
    _resume_all(url, acked, result)
    return result
