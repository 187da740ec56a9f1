"""Subprocess helper for tests: several processes open one new side file at the same instant.

usage: python sqlite_open_race.py KIND DIR ROUNDS PROCS
KIND is embedding-cache, access, lineage or manifest. Prints one line per
failed open (the error's repr) and exits 0; the test asserts there are none.
"""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import sys
import time
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.archive.manifest import Manifest
from langgraph_memory.catalog import Catalog
from langgraph_memory.embeddings import CachedEmbeddings

OPENERS = {
    "embedding-cache": lambda p: CachedEmbeddings(
        DeterministicFakeEmbedding(size=4), path=p, file_min_seconds=0
    ).close(),
    "catalog": lambda p: Catalog(p).close(),
    "manifest": lambda p: Manifest(p),
}


def _open(kind: str, path: Path, start_at: float, errors: mp.Queue) -> None:
    while time.time() < start_at:  # all processes reach sqlite3.connect together
        pass
    try:
        OPENERS[kind](path)
    except Exception as exc:
        errors.put(repr(exc))


def main() -> None:
    kind, folder, rounds, procs = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    ctx = mp.get_context("fork")
    errors: mp.Queue = ctx.Queue()
    for r in range(rounds):
        path = folder / f"{kind}-{r}.sqlite"
        start_at = time.time() + 0.05
        workers = [ctx.Process(target=_open, args=(kind, path, start_at, errors)) for _ in range(procs)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
            if w.exitcode != 0:
                print(f"worker exit code {w.exitcode}")
        conn = sqlite3.connect(path)
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        conn.close()
        if mode != "wal":
            print(f"{path.name} is in journal mode {mode}, not wal")
    while not errors.empty():
        print(errors.get())


if __name__ == "__main__":
    main()
