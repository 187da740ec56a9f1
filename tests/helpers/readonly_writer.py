"""Subprocess writer for the read-only snapshot test: puts until killed, saying what was committed.

usage: python readonly_writer.py DATA_DIR

After each batch is acknowledged (committed to the catalog) it prints ``acked N``,
N the puts acknowledged so far, so the test copies the folder at known points.
"""

from __future__ import annotations

import sys

from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import PutOp

from langgraph_memory.store import ChromaStore


def main() -> None:
    store = ChromaStore(data_dir=sys.argv[1], index={"dims": 16, "embed": DeterministicFakeEmbedding(size=16)})
    n = 0
    while True:
        store.batch([PutOp(("live",), f"w{n + i}", {"text": f"live write {n + i}"}) for i in range(5)])
        n += 5
        print(f"acked {n}", flush=True)


if __name__ == "__main__":
    main()
