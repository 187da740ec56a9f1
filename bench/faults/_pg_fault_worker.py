"""One writer of the fault bench (not run by itself): puts and version bumps on a shared memory, forever.

usage: python _pg_fault_worker.py URL CHROMA_HOST:PORT LOCAL_DIR NAME STOP_FILE [TIMEOUT]

Each outcome is one line on standard output, stamped with ``time.monotonic()``
(one clock for every process of the machine):

* ``ack put KEY T SERVING`` / ``ack ver VERSION ID T SERVING``: the call returned
  (the write is acknowledged); SERVING is 1 when the Chroma index serves after it;
* ``down SECONDS T TYPE``: ``ServerUnavailableError`` after SECONDS;
* ``typed SECONDS T TYPE MESSAGE``: another of the library's typed errors;
* ``error SECONDS T REPR``: anything else (an untyped error: the bench's failure).
"""

from __future__ import annotations

import os
import random
import sys
import time

from langchain_core.embeddings import DeterministicFakeEmbedding

DIMS = 16
NAMESPACE = ("notes", "bench")
STRATEGY = "fault-bench"


def main() -> None:
    url, chroma, local_dir, name, stop_file = sys.argv[1:6]
    timeout = float(sys.argv[6]) if len(sys.argv) > 6 else 5.0
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # only this script's lines on the real standard output
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    from langgraph_memory import Memory
    from langgraph_memory.errors import LangGraphMemoryError, ServerUnavailableError

    os.environ["LANGGRAPH_MEMORY_LOCAL_DIR"] = local_dir
    host, port = chroma.rsplit(":", 1)
    client = chromadb.HttpClient(host=host, port=int(port), settings=ChromaSettings(anonymized_telemetry=False))
    mem = Memory.open(url, embeddings=DeterministicFakeEmbedding(size=DIMS), chroma_client=client, lock_timeout=timeout)
    index = mem.store.vector_index

    def serving() -> int:
        return int(index.serving() and not index.broken)

    rng = random.Random(name)
    out.write(f"ready {time.monotonic():.6f}\n")
    n = 0
    while not os.path.exists(stop_file):
        t0 = time.monotonic()
        try:
            if rng.random() < 0.3:
                s = mem.store_strategy(STRATEGY, f"variant by {name} #{n}")
                line = f"ack ver {s.version} {s.id} {time.monotonic():.6f} {serving()}"
            else:
                key = f"{name}-{n}"
                mem.store.put(NAMESPACE, key, {"text": f"{name} wrote note {n}", "n": n}, index=["text"])
                line = f"ack put {key} {time.monotonic():.6f} {serving()}"
            n += 1
        except ServerUnavailableError as exc:
            now = time.monotonic()
            line = f"down {now - t0:.3f} {now:.6f} {type(exc).__name__}"
            time.sleep(0.05)
        except LangGraphMemoryError as exc:
            now = time.monotonic()
            msg = str(exc).replace("\n", " ")[:300]
            line = f"typed {now - t0:.3f} {now:.6f} {type(exc).__name__} {msg}"
            time.sleep(0.05)
        except Exception as exc:  # noqa: BLE001 - the bench counts these as failures
            now = time.monotonic()
            line = f"error {now - t0:.3f} {now:.6f} {exc!r}"[:500].replace("\n", " ")
            time.sleep(0.05)
        out.write(line + "\n")
    try:
        mem.close()
    finally:
        out.write(f"closed {time.monotonic():.6f}\n")


if __name__ == "__main__":
    main()
