"""Subprocess writer for tests: put N items into a data directory in small batches.

usage: python store_writer.py DATA_DIR|process:DATA_DIR|http://HOST:PORT@DATA_DIR PREFIX N DIMS [START_FLAG]

With START_FLAG, the writer says it has opened the store (the file ``START_FLAG.PREFIX.ready``) and waits for
START_FLAG; `release_together()` starts writers so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import PutOp

from langgraph_memory.store import ChromaStore


def main() -> None:
    data_dir, prefix, n, dims = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    start_flag = Path(sys.argv[5]) if len(sys.argv) > 5 else None
    index = {"dims": dims, "embed": DeterministicFakeEmbedding(size=dims)}
    if data_dir.startswith("http://"):
        import chromadb

        server, data_dir = data_dir.removeprefix("http://").split("@", 1)
        host, port = server.split(":")
        store = ChromaStore(chromadb.HttpClient(host=host, port=int(port)), data_dir=data_dir, index=index)
    elif data_dir.startswith("process:"):  # the index in a child process (index_process=True)
        store = ChromaStore(data_dir=data_dir.removeprefix("process:"), index=index, index_process=True)
    else:
        store = ChromaStore(data_dir=data_dir, index=index)
    if start_flag is not None:  # start both writers together
        start_flag.with_name(f"{start_flag.name}.{prefix}.ready").touch()
        deadline = time.time() + 300
        while not start_flag.exists() and time.time() < deadline:
            time.sleep(0.01)
    for start in range(0, n, 10):
        ops = [
            PutOp(("research", prefix), f"{prefix}-{i}", {"content": f"{prefix} finding number {i}", "n": i})
            for i in range(start, min(n, start + 10))
        ]
        store.batch(ops)
        # Searches interleave with the other process's writes.
        store.search(("research",), query=f"{prefix} finding number {start}", limit=3)
    store.close()
    print(f"{prefix} wrote {n} pid={os.getpid()}")


def release_together(procs: list[subprocess.Popen], prefixes: list[str], start_flag: Path) -> None:
    """Wait until every writer has opened the store (or one has exited), then let them all write at once."""
    ready = [start_flag.with_name(f"{start_flag.name}.{p}.ready") for p in prefixes]
    deadline = time.time() + 300
    while not all(r.exists() for r in ready):
        gone = [p for p in procs if p.poll() is not None]
        if gone or time.time() > deadline:
            break  # the caller's communicate() reports the exit and its stderr
        time.sleep(0.01)
    start_flag.touch()


if __name__ == "__main__":
    main()
