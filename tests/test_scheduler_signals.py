"""``langgraph-memory scheduler`` stops on SIGINT even when started with SIGINT ignored, and on SIGTERM.

A background job of a non-interactive shell (a script, CI, ``make test &``)
starts with SIGINT ignored, and its children inherit that: the scheduler
then never stopped on Ctrl-C, and its test timed out under such a suite.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from langgraph_memory import Memory


def _start(data_dir: Path, *, ignore_sigint: bool) -> subprocess.Popen[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    argv = [
        str(Path(sys.executable).with_name("langgraph-memory")),
        "--data-dir",
        str(data_dir),
        "scheduler",
        "--interval",
        "3600",
        "--json",
    ]
    if ignore_sigint:  # as a background job of a non-interactive shell starts: SIGINT ignored, then exec
        argv = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *argv]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    first = ""
    while "}" not in first:  # ready once it said it runs
        line = proc.stdout.readline()
        assert line, "the scheduler exited before it said it runs"
        first += line
    assert json.loads(first)["running"] is True
    return proc


@pytest.mark.parametrize(("ignore_sigint", "sig"), [(True, signal.SIGINT), (False, signal.SIGTERM)])
def test_scheduler_stops_on_signal(data_dir: Path, ignore_sigint: bool, sig: int) -> None:
    Memory.open(data_dir, embeddings=False).close()
    proc = _start(data_dir, ignore_sigint=ignore_sigint)
    try:
        proc.send_signal(sig)
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
