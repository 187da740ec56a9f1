"""Two processes ingesting the same folder at once store each chunk exactly once, with the index intact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from langgraph_memory.catalog import files as catalog_files
from langgraph_memory.ingest import chunk_key, parent_key
from tests.helpers.ingest_docs import write_corpus

HELPER = Path(__file__).parent / "helpers" / "ingest_worker.py"
DIMS = 16


def _corpus(folder: Path) -> None:
    write_corpus(folder)
    for i in range(12):  # files of many sizes, some stored in several batches
        body = "".join(
            f"Note {i}.{j}: the desk rebalanced book {j % 7} after move {i * j}. " for j in range(40 * (i + 1))
        )
        (folder / f"note-{i:02d}.md").write_text(f"# Note {i}\n\n{body}\n")


@pytest.mark.slow
def test_two_processes_ingesting_one_folder_store_each_chunk_once(data_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    _corpus(folder)
    flag = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [
        subprocess.Popen(
            [sys.executable, str(HELPER), str(data_dir), str(folder), str(DIMS), str(flag)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    time.sleep(1.0)
    flag.touch()
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        reports.append({r["path"]: r for r in json.loads(out)})

    supported = sorted(str(p) for p in folder.iterdir() if p.suffix != ".png")
    for path in supported:  # one process stored each file; the other found it stored or being stored
        statuses = sorted(r[path]["status"] for r in reports)
        assert statuses[1] == "ingested" and statuses[0] in ("busy", "duplicate"), (path, statuses)

    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=DIMS)) as mem:
        with mem.store.catalog.read() as conn:
            rows = catalog_files.list_files(conn)
        assert len(rows) == len(supported) and all(r.complete for r in rows)
        expected = {chunk_key(r.sha256, i) for r in rows for i in range(r.n_chunks)}
        expected |= {parent_key(r.sha256, i) for r in rows for i in range(r.n_parents)}
        stored = [it.key for it in mem.store.search(("documents",), limit=100_000)]
        assert len(stored) == len(set(stored)) == len(expected) and set(stored) == expected
        assert sum(r.n_chunks for r in rows) == sum(r["chunks"] for rep in reports for r in rep.values())
        # Index integrity (PITFALLS): every stored vector finds its own item first.
        col = mem.store.collection("memories")
        got = col.get(include=["embeddings"])
        assert len(got["ids"]) == sum(r.n_chunks for r in rows)
        for start in range(0, len(got["ids"]), 50):
            ids = got["ids"][start : start + 50]
            vecs = [list(v) for v in got["embeddings"][start : start + 50]]
            res = col.query(query_embeddings=vecs, n_results=1, include=[])
            assert [r[0] for r in res["ids"]] == ids
