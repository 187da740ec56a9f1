"""Probe: what one apply chunk costs Chroma at scale, and whether a query can run beside it.

Fills a collection with ``N`` clustered 384-d vectors (default 100,000), then

* times an ``upsert`` of 1, 10, 50, 100, 500 and 1,000 new vectors (3 each): how
  long the index lock is held per chunk, and how much of it is a fixed cost;
* runs 500-vector upserts in one thread for 8 s while another queries every
  10 ms, against the same queries at rest: whether Chroma serves a query
  during a write (embedded: one client in this process; ``--server``: two
  ``HttpClient`` of a ``chroma run`` started for the probe).

    .venv/bin/python bench/store/chroma_apply_probe.py [--server] [--n 100000]
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np


def _pct(v: list[float], p: float) -> float:
    return sorted(v)[min(len(v) - 1, int(p / 100 * (len(v) - 1)))] * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", action="store_true", help="a `chroma run` server instead of the embedded client")
    ap.add_argument("--n", type=int, default=100_000)
    args = ap.parse_args()
    import chromadb
    from chromadb.config import Settings

    folder = tempfile.mkdtemp(prefix="lgm-apply-probe-")
    settings = Settings(anonymized_telemetry=False)
    proc = None
    if args.server:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        chroma = Path(sys.executable).parent / "chroma"
        cmd = [str(chroma), "run", "--path", folder, "--host", "127.0.0.1", "--port", str(port)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while True:
            try:
                writer: Any = chromadb.HttpClient(host="127.0.0.1", port=port, settings=settings)
                writer.heartbeat()
                break
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.2)
        reader: Any = chromadb.HttpClient(host="127.0.0.1", port=port, settings=settings)
    else:
        writer = reader = chromadb.PersistentClient(path=folder, settings=settings)
    try:
        col = writer.get_or_create_collection("probe", metadata={"hnsw:space": "cosine"}, embedding_function=None)
        qcol = reader.get_collection("probe", embedding_function=None)
        rng = np.random.default_rng(1)
        centers = rng.standard_normal((200, 384)).astype(np.float32)

        def vecs(k: int) -> np.ndarray:
            return centers[rng.integers(0, 200, k)] + 0.3 * rng.standard_normal((k, 384)).astype(np.float32)

        started = time.perf_counter()
        for s in range(0, args.n, 5000):
            col.upsert(ids=[str(i) for i in range(s, s + 5000)], embeddings=vecs(5000))
        print(f"{'server' if args.server else 'embedded'}: filled {args.n:,} in {time.perf_counter() - started:.1f} s")
        next_id = args.n
        for size in [1, 10, 50, 100, 500, 1000]:
            took = []
            for _ in range(3):
                v, ids = vecs(size), [str(next_id + i) for i in range(size)]
                next_id += size
                t = time.perf_counter()
                col.upsert(ids=ids, embeddings=v)
                took.append(time.perf_counter() - t)
            print(f"  upsert of {size:>5} vectors: " + ", ".join(f"{x * 1000:.0f}" for x in took) + " ms")
        q = vecs(1)
        rest = []
        for _ in range(30):
            t = time.perf_counter()
            qcol.query(query_embeddings=q, n_results=50, include=["distances"])
            rest.append(time.perf_counter() - t)
        stop = threading.Event()
        ups: list[float] = []

        def write() -> None:
            nid = next_id
            while not stop.is_set():
                v, ids = vecs(500), [str(nid + i) for i in range(500)]
                nid += 500
                t = time.perf_counter()
                col.upsert(ids=ids, embeddings=v)
                ups.append(time.perf_counter() - t)

        th = threading.Thread(target=write)
        th.start()
        during = []
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 8:
            t = time.perf_counter()
            qcol.query(query_embeddings=q, n_results=50, include=["distances"])
            during.append(time.perf_counter() - t)
            time.sleep(0.01)
        stop.set()
        th.join()
        print(
            f"  query at rest p50 {_pct(rest, 50):.1f} p95 {_pct(rest, 95):.1f} ms; beside 500-vector upserts "
            f"(p50 {_pct(ups, 50):.0f} ms each) p50 {_pct(during, 50):.1f} p95 {_pct(during, 95):.1f} "
            f"max {_pct(during, 100):.0f} ms ({len(during)} queries)"
        )
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
