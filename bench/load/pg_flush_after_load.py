"""Why a put on a PostgreSQL catalog is slower right after a bulk load: the WAL flush its commit waits for.

    python bench/load/pg_flush_after_load.py --pg-url postgresql://postgres@127.0.0.1:PORT/postgres
    python bench/load/pg_flush_after_load.py --pg-url URL --index-dir /dev/shm/lgm-index   # the index off the disk

A store on a new database of ``--pg-url`` (a superuser: it turns on
``track_wal_io_timing``) gets ``--base`` items, indexed; then ``--bulk`` more
through ``batch()``. Right after the last batch returns, while the index
catches up, one thread puts single items 10 ms apart (``--puts`` of them); the
same once the index has caught up. For each window the table gives the put's
p50 / p95 and what ``pg_stat_wal`` counted meanwhile: WAL written, the flushes
(``wal_sync``) and their mean time, which is what a durable commit waits for.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory

import numpy as np
import psycopg
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

from langgraph_memory._infra.pg_cluster import create_database, drop_database
from langgraph_memory.config import Settings
from langgraph_memory.store import ChromaStore

WAL = "SELECT wal_bytes, wal_sync, wal_sync_time FROM pg_stat_wal"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pg-url", required=True, help="a PostgreSQL server (superuser), e.g. from scripts/pg.sh")
    ap.add_argument("--base", type=int, default=10_000)
    ap.add_argument("--bulk", type=int, default=90_000)
    ap.add_argument("--puts", type=int, default=300)
    ap.add_argument("--index-dir", help="a new folder for the run's index, removed afterwards (default: one in /tmp)")
    args = ap.parse_args()

    n = args.base + args.bulk + 2 * args.puts
    rng = np.random.default_rng(1)
    centers = rng.standard_normal((200, 384)).astype(np.float32)
    vectors = centers[rng.integers(0, 200, n)] + 0.3 * rng.standard_normal((n, 384)).astype(np.float32)

    class Lookup(Embeddings):  # precomputed vectors: the text ends with its row
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return vectors[[int(t.rsplit(" ", 1)[1]) for t in texts]].tolist()

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    with psycopg.connect(args.pg_url, autocommit=True) as admin:
        admin.execute("ALTER SYSTEM SET track_wal_io_timing = on")
        admin.execute("SELECT pg_reload_conf()")
    url = create_database(args.pg_url)
    folder = Path(args.index_dir or tempfile.mkdtemp(prefix="lgm-flush-"))
    store = ChromaStore(
        index={"dims": 384, "embed": Lookup(), "fields": ["content"]},
        settings=Settings.resolve(url, local_dir=folder),
    )
    row = [0]

    def load(count: int) -> None:
        for start in range(0, count, 1000):
            ops = []
            for _ in range(min(1000, count - start)):
                i = row[0]
                row[0] += 1
                ops.append(PutOp(("bulk", f"n{i % 50}"), f"k{i}", {"content": f"item {i}", "kind": "x"}))
            store.batch(ops)

    def window(label: str) -> list[Any]:
        with psycopg.connect(args.pg_url, autocommit=True) as stats:
            before = stats.execute(WAL).fetchone()
            began = time.perf_counter()
            lat = []
            for _ in range(args.puts):
                i = row[0]
                row[0] += 1
                t = time.perf_counter()
                store.put(("single",), f"s{i}", {"content": f"item {i}", "kind": "x"})
                lat.append(time.perf_counter() - t)
                time.sleep(0.01)
            after = stats.execute(WAL).fetchone()
        seconds = time.perf_counter() - began
        lat.sort()
        wal_mb, syncs, sync_ms = (float(b - a) for a, b in zip(before, after, strict=True))
        return [
            label,
            f"{seconds:.1f}",
            f"{lat[len(lat) // 2] * 1e3:.2f} / {lat[int(len(lat) * 0.95)] * 1e3:.2f}",
            f"{wal_mb / 1e6:.1f}",
            f"{syncs:.0f}",
            f"{sync_ms / max(syncs, 1):.2f}",
        ]

    try:
        load(args.base)
        store.wait_for_index()
        load(args.bulk)
        loaded = time.perf_counter()
        rows = [window("after the load (index catching up)")]
        store.wait_for_index()
        caught_up = time.perf_counter() - loaded
        rows.append(window("at rest"))
    finally:
        store.close()
        drop_database(url)
        shutil.rmtree(folder, ignore_errors=True)
    print(f"{args.bulk:,} items loaded into {args.base:,}; the index caught up {caught_up:.1f} s after the load\n")
    print("| window | seconds | put p50 / p95 ms | WAL written MB | WAL flushes | ms per flush |")
    print("|---|---:|---|---:|---:|---:|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
