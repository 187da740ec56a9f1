"""SIGKILL at random points: every acknowledged write survives, nothing is half-written or orphaned.

A worker process (``bench/common/crash_worker.py``) writes to a data
directory (put, update and delete batches, typed-API calls with lineage and
versions, ``rebuild_index``) and logs each acknowledgement; the test kills it
with SIGKILL at a random moment, reopens the directory and checks it against
the log (``bench/common/crash_check.py``): values, vectors, Chroma records,
listings, filters, lineage and versions, in both directions. The long version
(200 kills, and the time to open after a crash at 100,000 items) is
``bench/faults/crash_bench.py``.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.common.crash_check import check
from tests.helpers import catalog_backend

WORKER = Path(__file__).resolve().parents[1] / "bench" / "common" / "crash_worker.py"


def _acks(log: Path) -> int:
    return log.read_bytes().count(b'"kind": "ack"') if log.exists() else 0


def _kill_after(
    data_dir: Path, log: Path, seed: int, delay: float, mode: str = "mix", acks: int = 0, *extra: str
) -> None:
    """Start the worker, let it acknowledge ``acks`` more operations, wait ``delay`` more seconds, SIGKILL it.

    Waiting for acknowledgements rather than for a time keeps every kill meaningful on a loaded machine, where
    a fixed delay may end before the worker wrote anything; ``delay`` then puts the kill at a random point of
    whatever operation is running.
    """
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    target = _acks(log) + acks
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), str(data_dir), str(log), str(seed), mode, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.stderr.read()[-3000:]
        deadline = time.monotonic() + 600
        while _acks(log) < target:
            assert proc.poll() is None, f"the worker died before the kill: {proc.stderr.read()[-3000:]}"
            assert time.monotonic() < deadline, "the worker acknowledged nothing for 10 minutes"
            time.sleep(0.01)
        time.sleep(delay)
        assert proc.poll() is None, f"the worker died before the kill: {proc.stderr.read()[-3000:]}"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.slow
def test_random_sigkills_lose_nothing(tmp_path: Path) -> None:
    data_dir, log = tmp_path / "memory", tmp_path / "log.jsonl"
    rng = random.Random(20261123)
    rebuilt = kill = 0
    result = None
    # With the catalog on a server every search is a few round trips to it, and the check searches by filter
    # once per acknowledged item (thousands by the last kills): there 300 items spread over them are searched
    # per check, while every item's value, listing, vector and index record are still checked.
    filter_sample = 300 if catalog_backend.active() else None
    # At least 10 kills, half checked by probing the index and half by rebuilding it, and enough acknowledged
    # writes to mean something: on a loaded machine the worker writes less between kills, so it gets more kills.
    # (22 to 40 kills here took 80-180 s a run; bench/crash_bench.py makes 200.)
    while kill < 10 or (result is not None and result.acknowledged <= 250 and kill < 20):
        _kill_after(data_dir, log, rng.randrange(10**6), rng.uniform(0.0, 0.5), acks=rng.randint(1, 6))
        kill += 1
        # Every other open probes the index, as for one of more than REBUILD_MAX vectors; the others rebuild it.
        result = check(data_dir, log, probe=kill % 2 == 0, filter_sample=filter_sample)
        assert result.ok, f"after kill {kill}: {result.summary()}"
        assert result.probed if kill % 2 == 0 else result.rebuilt  # no clean close: checked or rebuilt before use
        rebuilt += result.rebuilt
    assert result is not None and result.acknowledged > 250, (
        f"only {result.acknowledged} writes acknowledged in {kill} kills"
    )


@pytest.mark.slow
def test_sigkill_during_rebuild_index_loses_nothing(tmp_path: Path) -> None:
    data_dir, log = tmp_path / "memory", tmp_path / "log.jsonl"
    rng = random.Random(7)
    _kill_after(data_dir, log, 1, 1.5)  # some data first
    assert check(data_dir, log).ok
    for kill in range(5):
        _kill_after(data_dir, log, rng.randrange(10**6), rng.uniform(0.02, 0.4), mode="rebuild")
        result = check(data_dir, log)
        assert result.ok, f"after kill {kill + 1} during rebuild_index: {result.summary()}"
    leftovers = [p.name for p in (data_dir / "chroma").glob("index-*")]
    assert len(leftovers) == 1, leftovers  # half-built folders are removed on open


@pytest.mark.slow
def test_sigkills_during_bulk_batches_lose_nothing(tmp_path: Path) -> None:
    """Batches on the catalog's bulk path: each acknowledged one is all there, an interrupted one all or nothing."""
    data_dir, log = tmp_path / "memory", tmp_path / "log.jsonl"
    rng = random.Random(2511)
    for kill in range(4):
        # A kill after 1-3 acknowledged batches, at a random point of the next (about 0.1-1 s each here).
        _kill_after(data_dir, log, rng.randrange(10**6), rng.uniform(0.0, 0.6), "bulk", rng.randint(1, 3), "300")
        result = check(data_dir, log, probe=kill % 2 == 0, filter_sample=200)
        assert result.ok, f"after kill {kill + 1} during bulk batches: {result.summary()}"
    assert result.acknowledged >= 4 * 300, result.summary()
