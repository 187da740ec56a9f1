"""Ctrl-C during ``langgraph-memory archive run``: a real SIGINT to a real CLI process.

The run must say it was cut off and what the next run does with what it left,
exit 130, and lose nothing: the next run finishes the job.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from tests.helpers import catalog_backend
from tests.helpers.archive_data import make_lessons

CLI = Path(sys.executable).with_name("langgraph-memory")
HELD_CLI = Path(__file__).resolve().parent / "helpers" / "archive_interrupt_cli.py"
ROOT = Path(__file__).resolve().parents[1]
N = 3000  # six chunks of 500: the SIGINT lands after the first, mid-file


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["HF_HUB_OFFLINE"] = "1"
    return env


@pytest.fixture(scope="module")
def _lessons(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A memory of N retired lessons, made once; each test archives a copy of it."""
    source = tmp_path_factory.mktemp("archive-interrupt") / "memory"
    emb = DeterministicFakeEmbedding(size=16)
    with Memory.open(source, embeddings=emb) as mem:
        make_lessons(mem.store, emb, N)
    return source


@pytest.mark.parametrize("ignore_sigint", [False, True], ids=["terminal", "started-with-sigint-ignored"])
def test_ctrl_c_during_an_archive_run_says_so_exits_130_and_the_next_run_finishes(
    _lessons: Path, data_dir: Path, ignore_sigint: bool
) -> None:
    emb = DeterministicFakeEmbedding(size=16)
    catalog_backend.copy_data_dir(_lessons, data_dir)
    marker = data_dir.parent / "holding"
    argv = [sys.executable, str(HELD_CLI), str(marker), "--data-dir", str(data_dir), "-v", "archive", "run"]
    if ignore_sigint:  # as a background job of a non-interactive shell starts (a script, CI): SIGINT ignored
        argv = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *argv]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        # Readiness: the child holds after the first chunk of the file is written (the marker appears).
        while not marker.exists():
            if proc.poll() is not None:
                out, err = proc.communicate()
                raise AssertionError(f"the run ended before writing (exit {proc.returncode}): {err}")
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:  # a failed check must not leave the held child behind
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "cut off" in err and "Nothing was lost" in err, err
    assert "The next `langgraph-memory archive run` will:" in err and "discard unverified" in err, err
    assert "Traceback" not in err
    assert out.strip() == ""  # no table of a run that did not finish

    again = subprocess.run(
        [str(CLI), "--data-dir", str(data_dir), "--json", "archive", "run"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert any(r.startswith("discarded unverified") for r in report["recovered"]), report["recovered"]
    with Memory.open(data_dir, embeddings=emb) as mem:
        live = [it.uid for it in mem.store.items.iter_items("lessons_learned")]
        archived = [a.uid for a in mem.archiver.iter_archived("lessons_learned")]
    assert len(live) + len(archived) == N and len(set(live) | set(archived)) == N
    assert len(archived) == N
