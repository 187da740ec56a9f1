"""One ChromaStore built from store_bench's general items, kept on disk, probed again and again.

store_bench.py builds every store afresh and removes it, which at 1,000,000 items costs half
an hour before the first query. This probe builds the store once into ``--data-dir`` (the same
items, vectors and queries as store_bench at that size and seed) and then times, on a quiet
machine, what store_bench times at that size: its one-namespace and whole-prefix searches,
interleaved query by query with the store's own Chroma collection asked for the best 10 (the
floor: the same HNSW index, no catalog), and single puts (store-side, vectors looked up by text).

    python bench/store/store_scale_probe.py --n 1000000 --data-dir /tmp/scale1m --case whole --queries 200
    python bench/store/store_scale_probe.py --n 1000000 --data-dir /tmp/scale1m --case ns --puts 300
    python bench/store/store_scale_probe.py --n 1000000 --data-dir /tmp/scale1m --case whole --profile whole.prof

``--vector-cache-mb`` opens the store with another vector cache budget (the default holds about
650,000 vectors of 384 dimensions). Probe puts are deleted again before the store is closed.

``--append B`` times a load into the built store instead: ``B`` batches of ``--batch`` new items
(texts not seen before, so the embedding cache misses as in a real load; vectors of the general
set), spread over the general set's namespaces as its own load was, each ``batch()`` timed until
acknowledged; ``--profile`` then profiles those calls. The items are deleted again afterwards.

    python bench/store/store_scale_probe.py --n 1000000 --data-dir /tmp/scale1m --append 20 --profile load.prof
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
from bench.common.items import Data, K, Query, build_data  # noqa: E402
from bench.common.report import percentile  # noqa: E402
from bench.store._stores import StoreBackend, Timing, open_chromastore  # noqa: E402

CASES = {"ns": 0, "whole": 1}


def open_store(data: Data, data_dir: Path, cache_mb: float | None) -> Any:
    settings = {} if cache_mb is None else {"vector_cache_mb": cache_mb}
    return open_chromastore(data, data_dir, **settings).store


def build(data: Data, data_dir: Path, batch: int) -> None:
    """Load the general items in batches; print the acknowledged and the indexed rate."""
    store = open_store(data, data_dir, None)
    backend = StoreBackend(store, store.close)
    items = data.sets[0]
    start = time.perf_counter()
    for first in range(0, len(items), batch):
        backend.put(items, range(first, min(len(items), first + batch)))
    acked = time.perf_counter() - start
    store.wait_for_index()
    indexed = time.perf_counter() - start
    store.close()
    n = len(items)
    print(f"built {n:,} items: {n / acked:,.0f}/s acknowledged, {n / indexed:,.0f}/s indexed ({indexed:.0f} s)")


def probe(data: Data, args: argparse.Namespace) -> None:
    store = open_store(data, args.data_dir, args.vector_cache_mb)
    try:
        case = data.cases[CASES[args.case]]
        chroma = store.vector_index.chroma_collection(case.items.collection)

        def ours(q: Query) -> list[str]:
            return [h.key for h in store.search(q.prefix, query=q.text, filter=q.filter, limit=K)]

        def floor(q: Query) -> None:
            chroma.query(query_embeddings=data.vectors[q.row : q.row + 1], n_results=K, include=["distances"])

        for q in case.warmup:  # the first search also loads the vector cache, when the collection fits it
            ours(q)
            floor(q)
        queries = [case.queries[j % len(case.queries)] for j in range(args.queries)]
        prof = cProfile.Profile() if args.profile else None
        s, f = Timing(), Timing()
        for j, q in enumerate(queries):
            for which in ("store", "floor") if j % 2 == 0 else ("floor", "store"):
                t = time.perf_counter()
                if which == "floor":
                    floor(q)
                    f.lat.append((time.perf_counter() - t) * 1e3)
                    continue
                if prof is not None:
                    prof.enable()
                got = ours(q)
                if prof is not None:
                    prof.disable()
                s.add((time.perf_counter() - t) * 1e3, got, q.exact)
        plan = store.search_explained(queries[0].prefix, query=queries[0].text, limit=K).plan
        print(
            f"{data.n:,} items, {case.name}, {len(queries)} queries, load {os.getloadavg()[0]:.2f}: "
            f"store p50 {s.p50:.2f} ms (p95 {s.p95:.2f}), floor p50 {f.p50:.2f} ms "
            f"(p95 {f.p95:.2f}), store/floor {s.p50 / f.p50:.2f}x, recall@10 {s.recall:.3f}"
        )
        print(f"  plan: {plan}")
        if prof is not None:
            prof.dump_stats(args.profile)
        if args.puts:
            items = data.sets[0]
            picks = [j * 997 % len(items) for j in range(args.puts)]
            puts = Timing()
            for j, i in enumerate(picks):
                t = time.perf_counter()
                store.put(items.namespaces[i], f"probe{j}", dict(items.values[i]))
                puts.lat.append((time.perf_counter() - t) * 1e3)
            print(
                f"  {args.puts} single puts: p50 {puts.p50:.2f} ms, p95 {puts.p95:.2f} ms, max {max(puts.lat):.1f} ms"
            )
            for j, i in enumerate(picks):
                store.delete(items.namespaces[i], f"probe{j}")
            store.wait_for_index()
    finally:
        store.close()


def append(data: Data, args: argparse.Namespace) -> None:
    """Time ``args.append`` batches of new items put into the built store (see the module's docstring)."""
    from langgraph.store.base import PutOp

    store = open_store(data, args.data_dir, args.vector_cache_mb)
    items = data.sets[0]
    prof = cProfile.Profile() if args.profile else None
    spent: list[float] = []
    keys: list[tuple[tuple[str, ...], str]] = []
    try:
        for b in range(args.append):
            ops = []
            for j in range(args.batch):
                i = (b * args.batch + j) * 7919 % len(items)
                value = dict(items.values[i])
                value["content"] = f"{value['content']} (appended {b}.{j})"
                data.text_row[value["content"]] = data.text_row[items.values[i]["content"]]  # the lookup model's row
                ops.append(PutOp(items.namespaces[i], f"append{b}.{j}", value, index=items.index))
                keys.append((items.namespaces[i], f"append{b}.{j}"))
            if prof is not None:
                prof.enable()
            t = time.perf_counter()
            store.batch(ops)
            spent.append(time.perf_counter() - t)
            if prof is not None:
                prof.disable()
        total = sum(spent)
        print(
            f"{data.n:,} items, {args.append} batches of {args.batch} appended, load {os.getloadavg()[0]:.2f}: "
            f"{len(keys) / total:,.0f} items/s acknowledged, batch p50 {percentile(spent, 50) * 1e3:.0f} ms"
        )
        if prof is not None:
            prof.dump_stats(args.profile)
        for start in range(0, len(keys), 1000):
            store.batch([PutOp(ns, key, None) for ns, key in keys[start : start + 1000]])
        store.wait_for_index()
    finally:
        store.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1_000_000, help="general items (store_bench's size)")
    p.add_argument("--data-dir", type=Path, required=True, help="built here when it holds no store yet")
    p.add_argument("--case", choices=sorted(CASES), default="whole")
    p.add_argument("--queries", type=int, default=200, help="timed queries (store_bench's 50, repeated)")
    p.add_argument("--puts", type=int, default=0, help="single puts to time after the searches")
    p.add_argument("--vector-cache-mb", type=float, default=None)
    p.add_argument("--profile", default=None, help="write a cProfile of the store's searches (or appends) here")
    p.add_argument("--append", type=int, default=0, help="time this many batches of new items instead of searches")
    p.add_argument("--batch", type=int, default=1000, help="puts per batch while building")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    # store_bench's data as at 1,000,000 items at every size: the general items only, and its one-namespace
    # and whole-prefix cases, 50 queries each after 5 warm-ups.
    data = build_data(args.n, big=True, n_queries=50, warmup=5, seed=args.seed)
    gc.collect()
    gc.freeze()
    if not (args.data_dir / "chromastore" / "catalog.sqlite").exists():
        build(data, args.data_dir, args.batch)
    if args.append:
        append(data, args)
    else:
        probe(data, args)


if __name__ == "__main__":
    main()
