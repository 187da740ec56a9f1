"""A full disk: a typed error that says so, and afterwards the state matches every report.

Every put reported failed is absent, every put reported done is present
(value, vector, search), once the space is back. Run in a child process
with ``RLIMIT_FSIZE`` (writes past it fail with EFBIG, as on a full disk)
and, where this machine lets the tests mount one, on a real 6 MB tmpfs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import PutOp, get_text_at_path

from langgraph_memory.errors import DiskFullError
from langgraph_memory.store import ChromaStore
from tests.helpers.tmpfs import tmpfs

HELPER = Path(__file__).parent / "helpers" / "store_fsize.py"


def _run(data_dir: Path, limit: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    done = subprocess.run(
        [sys.executable, str(HELPER), str(data_dir), limit], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check(data_dir: Path, report: dict) -> None:
    assert report["failed"], "the disk never filled up"
    assert "DiskFullError" in report["error"]["mro"] or "StorageError" in report["error"]["mro"], report["error"]
    assert "LangGraphMemoryError" in report["error"]["mro"]
    assert "full" in report["error"]["message"] or "no room" in report["error"]["message"]
    store = ChromaStore(data_dir=data_dir, index={"dims": 64, "embed": DeterministicFakeEmbedding(size=64)})
    try:
        for key in report["acked"][::7] + report["acked"][-50:]:
            item = store.get(("notes",), key)
            assert item is not None, f"acknowledged {key} is missing"
        for key in report["failed"]:
            assert store.get(("notes",), key) is None, f"{key} was reported failed but is there"
        assert store.items.count("memories") == len(report["acked"])
        last = report["acked"][-1]
        text = get_text_at_path(store.get(("notes",), last).value, "$")[0]  # what the default index embeds
        hits = store.search(("notes",), query=text, limit=1)
        assert hits[0].key == last
        assert store.vector_index.count("memories") == len(report["acked"])  # Chroma caught up on open
        store.put(("notes",), "after", {"text": "space is back"})
    finally:
        store.close()


@pytest.mark.slow
def test_file_size_limit(tmp_path: Path) -> None:
    data_dir = tmp_path / "memory"
    report = _run(data_dir, str(6 * 1024 * 1024))
    _check(data_dir, report)


@pytest.mark.slow
def test_small_tmpfs(tmp_path: Path) -> None:
    with tmpfs(tmp_path, "12m") as mnt:
        data_dir = mnt / "memory"
        report = _run(data_dir, "none")
        # Still full: the store opens all the same, reads and searches, and says why a put fails.
        store = ChromaStore(data_dir=data_dir, index={"dims": 64, "embed": DeterministicFakeEmbedding(size=64)})
        try:
            assert store.get(("notes",), report["acked"][-1]) is not None
            assert store.search(("notes",), query="note", limit=3)
            with pytest.raises(DiskFullError, match="full"):
                store.batch([PutOp(("notes",), f"late-{i}", {"text": "x" * 2000}) for i in range(200)])
            assert store.get(("notes",), "late-0") is None
        finally:
            try:
                store.close()
            except DiskFullError:
                pass
        # Room again (the file system grows): everything acknowledged is there, nothing else.
        subprocess.run(["mount", "-o", "remount,size=64m", str(mnt)], check=True)
        _check(data_dir, report)
