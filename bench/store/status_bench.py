"""What hiding retired and superseded items costs a search: p50/p95 per plan, with 0, 1% and 10% of items retired.

    .venv/bin/python bench/store/status_bench.py [--items 20000] [--queries 200]

One collection of ``--items`` items (384-d deterministic fake vectors, so no
model runs), spread over 100 namespaces. Each plan is timed on the same
queries: ``exact`` (one namespace: 1% of the items), ``hnsw`` (the whole
collection, through Chroma), ``scan`` (no query, newest first), and each
again with ``include_retired=True`` (no hiding at all). Prints one table and
the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common

from langchain_core.embeddings import DeterministicFakeEmbedding  # noqa: E402
from langgraph.store.base import PutOp  # noqa: E402

from langgraph_memory.store import ChromaStore  # noqa: E402

DIMS = 384


def _time(fn, n: int) -> tuple[float, float]:
    samples = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = ChromaStore(data_dir=tmp, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)})
        keys = [(("memories", f"u{i % 100}"), f"k{i}") for i in range(args.items)]
        for start in range(0, len(keys), 1000):
            store.batch(
                [
                    PutOp(ns, k, {"text": f"memory {k} about topic {int(k[1:]) % 37}"})
                    for ns, k in keys[start : start + 1000]
                ]
            )
        queries = [f"topic {i % 37} question {i}" for i in range(args.queries)]
        plans = {
            "exact (1 namespace)": lambda i, inc: store.search(
                ("memories", f"u{i % 100}"), query=queries[i], limit=10, include_retired=inc
            ),
            "hnsw (collection)": lambda i, inc: store.search(
                ("memories",), query=queries[i], limit=10, include_retired=inc
            ),
            "scan (no query)": lambda i, inc: store.search(("memories", f"u{i % 100}"), limit=10, include_retired=inc),
        }
        for q in queries:  # embed every query once, so the timings below measure the search alone
            store.search(("memories", "u0"), query=q, limit=1)
        rows = []
        retired = 0
        for share in (0.0, 0.01, 0.10):
            target = int(args.items * share)
            if target > retired:
                store.items.set_status(keys[retired:target], "retired", reason="bench")
                retired = target
            for name, run in plans.items():
                hidden_p50, hidden_p95 = _time(lambda i, run=run: run(i, False), args.queries)
                all_p50, all_p95 = _time(lambda i, run=run: run(i, True), args.queries)
                rows.append((name, f"{share:.0%}", hidden_p50, hidden_p95, all_p50, all_p95))
        store.close()
    print(
        f"status_bench: {args.items:,} items, {args.queries} queries per cell; load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print("| plan | retired | p50 ms hidden | p95 ms hidden | p50 ms include_retired | p95 ms include_retired |")
    print("|---|---|---|---|---|---|")
    for name, share, a, b, c, d in rows:
        print(f"| {name} | {share} | {a:.2f} | {b:.2f} | {c:.2f} | {d:.2f} |")


if __name__ == "__main__":
    main()
