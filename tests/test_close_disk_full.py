"""Closing a memory after a session that only read must not fail on a full disk.

Access counts (how often and when an item was read) are best-effort data the
user never asked to be durable: when the disk is full at close they are
dropped with a warning, and close returns normally.
"""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from tests.helpers.tmpfs import tmpfs


def _fill(mnt: Path) -> Path:
    filler = mnt / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


@pytest.mark.sqlite_only("fills the disk under the data directory, where the SQLite catalog's access flush writes")
def test_close_after_reading_on_a_full_disk_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    emb = DeterministicFakeEmbedding(size=16)
    with tmpfs(tmp_path, "24m") as mnt:
        data_dir = mnt / "memory"
        with Memory.open(data_dir, embeddings=emb) as mem:
            for i in range(20):
                mem.store.put(("notes",), f"k{i}", {"text": f"note {i}"})
        mem = Memory.open(data_dir, embeddings=emb)
        filler = _fill(mnt)
        for i in range(20):
            assert mem.store.get(("notes",), f"k{i}") is not None
        assert mem.store.search(("notes",), query="note 3", limit=3)
        with caplog.at_level(logging.WARNING):
            mem.close()  # must not raise DiskFullError
        assert any("access" in r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
        filler.unlink()
        with Memory.open(data_dir, embeddings=emb) as again:
            assert again.store.get(("notes",), "k0").value == {"text": "note 0"}
