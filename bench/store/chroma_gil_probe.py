"""Probe: does an embedded Chroma call hold the GIL, and for how long? (design (c): chunking the calls)

A thread ticks every 1 ms (``time.sleep(0.001)``) while the main thread makes
40 calls of one kind on an embedded ``PersistentClient``. If the call frees
the GIL, the ticker's gaps stay near 1 ms; if it holds it, the longest gap is
about the call's own length, and no chunking can make a call shorter than a
one-vector upsert. Prints the call's duration and the ticker's gaps::

    .venv/bin/python bench/store/chroma_gil_probe.py
"""

from __future__ import annotations

import os
import tempfile
import threading
import time

import numpy as np


def _probe(col: object, op: str, n: int, rng: np.random.Generator) -> tuple[list[float], list[float]]:
    gaps: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = threading.Thread(target=tick)
    ticker.start()
    calls = []
    for i in range(40):
        start = time.perf_counter()
        if op == "upsert":
            col.upsert(ids=[f"{op}{n}-{i}-{j}" for j in range(n)], embeddings=rng.random((n, 16), dtype=np.float32))  # type: ignore[attr-defined]
        elif op == "query":
            col.query(query_embeddings=rng.random((1, 16), dtype=np.float32), n_results=5, include=["distances"])  # type: ignore[attr-defined]
        else:
            col.count()  # type: ignore[attr-defined]
        calls.append(time.perf_counter() - start)
        time.sleep(0.003)
    stop.set()
    ticker.join()
    return calls, gaps


def main() -> None:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=tempfile.mkdtemp(), settings=Settings(anonymized_telemetry=False))
    col = client.get_or_create_collection("probe", metadata={"hnsw:space": "cosine"}, embedding_function=None)
    rng = np.random.default_rng(0)
    col.upsert(ids=["warm"], embeddings=rng.random((1, 16), dtype=np.float32))
    print(f"chromadb {chromadb.__version__}; load average {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| call | call p50 ms | call max ms | ticker gap p50 ms | gap p99 ms | gap max ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for op, n in (("upsert", 1), ("upsert", 8), ("upsert", 64), ("query", 1), ("count", 1)):
        calls, gaps = _probe(col, op, n, rng)
        calls.sort()
        gaps.sort()
        label = f"{op} of {n} vector{'s' if n > 1 else ''}" if op == "upsert" else op
        print(
            f"| {label} | {calls[len(calls) // 2] * 1e3:.1f} | {calls[-1] * 1e3:.1f} | "
            f"{gaps[len(gaps) // 2] * 1e3:.2f} | {gaps[int(0.99 * (len(gaps) - 1))] * 1e3:.1f} | {gaps[-1] * 1e3:.1f} |"
        )


if __name__ == "__main__":
    main()
