"""A brand-new data directory starts quietly: no talk of unclean shutdowns or schema migrations."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory


def _said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.name.startswith("langgraph_memory")]


def test_a_new_data_directory_opens_and_reopens_without_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    emb = DeterministicFakeEmbedding(size=8)
    with caplog.at_level(logging.INFO):
        with Memory.open(tmp_path / "memory", embeddings=emb) as mem:
            mem.store.put(("notes",), "a", {"text": "first words"})
        assert _said(caplog) == []
        with Memory.open(tmp_path / "memory", embeddings=emb) as mem:
            assert mem.store.get(("notes",), "a") is not None
    assert _said(caplog) == []


def test_an_unclean_shutdown_is_still_checked_and_said(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The quiet start is for a new catalog only: a memory whose last session never closed is checked."""
    import subprocess
    import sys

    data_dir = tmp_path / "memory"
    code = (
        "import os\n"
        "from langchain_core.embeddings import DeterministicFakeEmbedding\n"
        "from langgraph_memory import Memory\n"
        f"m = Memory.open({str(data_dir)!r}, embeddings=DeterministicFakeEmbedding(size=8))\n"
        "m.store.put(('notes',), 'a', {'text': 'words'})\n"
        "os._exit(0)\n"  # no close: the session is left open, as a crash leaves it
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    with caplog.at_level(logging.INFO), Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=8)):
        pass
    assert any("unclean shutdown" in line for line in _said(caplog)), _said(caplog)
