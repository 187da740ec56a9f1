"""Subprocess for tests: open a store whose index runs in a child process, then call into it holding the lock.

usage: python index_process_holder.py DATA_DIR

Prints ``child <pid> <lock path>`` once the child is up, waits for a line on
stdin, then prints ``calling`` while holding the data directory's Chroma lock
and calls into the child (which the test has stopped), and never returns.
"""

from __future__ import annotations

import sys

from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.store import ChromaStore


def main() -> None:
    store = ChromaStore(
        data_dir=sys.argv[1], index={"dims": 8, "embed": DeterministicFakeEmbedding(size=8)}, index_process=True
    )
    store.put(("memories",), "a", {"text": "written before the parent died"})
    assert store.wait_for_index(timeout=120)
    handle = store.vector_index.handle
    assert store.vector_index.count("memories") == 1
    assert handle.process is not None and handle.process.pid is not None
    print(f"child {handle.process.pid} {handle.lock.path}", flush=True)
    sys.stdin.readline()
    with handle.use(write=True) as client:
        print("calling", flush=True)
        client.list_collections()
    print("returned", flush=True)


if __name__ == "__main__":
    main()
