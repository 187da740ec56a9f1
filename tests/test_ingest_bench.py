"""The ingest benchmark's short version: the script runs end to end (fake embeddings, a few files)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "load" / "ingest_bench.py"


@pytest.mark.slow
def test_ingest_bench_runs_and_prints_its_table() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH), "--queries", "10", "--text-files", "2", "--files", "2", "--fake"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [line for line in out.stdout.splitlines() if line.startswith(("| contextual", "| fixed"))]
    assert len(rows) == 2
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert "failed" in cells[1] and int(cells[1].split()[0]) >= 3
        assert int(cells[2].replace(",", "")) > 0  # chunks stored
