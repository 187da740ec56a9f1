"""A 20 MB text file is ingested with bounded memory: the Python heap's peak stays far below the file's size.

The peak is set by the batches, not the file: 5.8 MB here for 20 MB (it was under 16 MB for 50 MB, the size
this test used to ingest; `bench/ingest_bench.py` times larger runs)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from langgraph_memory.ingest import IngestConfig, chunk_key

SIZE = 20 * 1024 * 1024


def _write_big(path: Path) -> int:
    """~20 MB of prose: numbered sentences in paragraphs, so every chunk is different."""
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        i = 0
        while n < SIZE:
            para = " ".join(f"Sentence {i}.{j} notes that spreads widened on day {i * 7 + j}." for j in range(12))
            fh.write(para + "\n\n")
            n += len(para) + 2
            i += 1
    return n


@pytest.mark.slow
def test_a_large_file_is_ingested_in_memory_far_below_its_size(data_dir: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    size = _write_big(big)
    # Large chunks keep the chunk count (and the test) small; the reading and chunking
    # paths are the default's, and batches of 16 chunks bound what is held for the store.
    config = IngestConfig(chunk_size=32_000, min_chunk_size=8000, search_window=2000, batch_max_chunks=16)
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=8)) as mem:
        warm_up = tmp_path / "warm-up.txt"
        warm_up.write_text("Opens the Chroma index and fills the caches before memory is measured.")
        mem.ingest(warm_up)
        # With the catalog on a server the index catches up in a thread: let it open Chroma now, not while measured.
        assert mem.store.wait_for_index(timeout=120)
        tracemalloc.start()
        try:
            report = mem.ingest(big, config=config)
            _current, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        result = report.ingested[0]
        assert result.size == size and result.chunks > 600
        last = mem.store.get(("documents",), chunk_key(result.sha256, result.chunks - 1))
        assert last is not None and last.value["end_char"] == size - 2  # the final blank line is not a chunk
    # Reading the file at once would need at least its 20 MB as a string; batches of 16
    # chunks of 32,000 characters are ~0.5 MB of text plus their parents and catalog rows.
    assert peak < 10 * 1024 * 1024, f"peak Python memory {peak / 1e6:.1f} MB while ingesting {size / 1e6:.0f} MB"
