"""SIGKILL during mixed writes: no change without its history row, no history row without its change.

A worker (``bench/common/history_crash.py``) puts, deletes, retires and
reinstates items of a small key set, logging each acknowledgement; the test
kills it with SIGKILL at a random moment, 20 times, and after each kill
reopens the directory and checks the history against the catalog and the log:
every acknowledged value is one of its key's versions, versions chain without
gaps or overlaps where a change replaced them, and every past version holds
a value that was written and all of its vectors. The long run is
``bench/faults/history_crash_bench.py``.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bench.common.history_crash import check, kill_after


# The worker's data directory is made at run time and opened by a subprocess, which collection cannot see.
@pytest.mark.catalog
@pytest.mark.slow
def test_twenty_sigkills_leave_every_change_with_its_history_row(tmp_path: Path) -> None:
    data_dir, log = tmp_path / "memory", tmp_path / "log.jsonl"
    rng = random.Random(4848)
    result = None
    for kill in range(20):
        kill_after(data_dir, log, rng.randrange(10**6), rng.randint(2, 10), rng.uniform(0.0, 0.05))
        result = check(data_dir, log)
        assert result.ok, f"after kill {kill + 1}: {result.summary()}"
    assert result is not None and result.acknowledged >= 100 and result.versions >= 50, result.summary()
