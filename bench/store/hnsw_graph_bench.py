"""Bare Chroma's HNSW graph settings on store_bench's items: build rate, query time and recall@10.

At 1,000,000 items an HNSW query with Chroma's defaults (16 neighbours,
``ef_construction`` 100) missed an item of the true top 10 on about a quarter
of store_bench's whole-prefix queries, and asking for more records (which
widens the beam past ``ef_search``) found none of them: among clusters of about
1,000 nearly equidistant items the search does not go where they lie, and how
many it misses depends on the graph. This bench builds one bare Chroma collection per setting from the
same items in the same order (store_bench's general set: clustered 384-d
vectors, written in batches of 1,000 as a load writes them), then times the
whole-prefix queries on every collection interleaved, query by query, rotating
which goes first, and reports each one's recall@10 against the exact top 10.

    python bench/store/hnsw_graph_bench.py --n 100000                          # 16/100, 32/100, 16/200
    python bench/store/hnsw_graph_bench.py --n 1000000 --settings 16/100,32/100
    python bench/store/hnsw_graph_bench.py --n 100000 --settings 16/100 --fetch 10,50,100,300

``--settings`` lists ``neighbours/ef_construction`` pairs; ``--fetch`` lists
the ``n_results`` asked for (each is timed and scored as its own row).
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
from bench.common.items import K, build_data  # noqa: E402
from bench.common.report import machine, markdown_table  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=100_000, help="items (store_bench's general set at this size)")
    p.add_argument("--settings", default="16/100,32/100,16/200", help="neighbours/ef_construction, comma separated")
    p.add_argument("--fetch", default="10", help="n_results to ask for, comma separated (default 10)")
    p.add_argument("--queries", type=int, default=100, help="timed queries (store_bench's 50, repeated)")
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--workdir", type=Path, default=None, help="where the collections are built (default: a temp dir)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    import chromadb
    from chromadb.config import Settings

    settings = [tuple(int(x) for x in s.split("/")) for s in args.settings.split(",") if s.strip()]
    fetches = [int(x) for x in args.fetch.split(",") if x.strip()]
    data = build_data(args.n, big=True, n_queries=50, warmup=5, seed=args.seed)
    gc.collect()
    gc.freeze()
    items, case = data.sets[0], data.cases[1]  # the general set; the whole-prefix case
    rows = items.rows[:, 0]
    root = Path(tempfile.mkdtemp(prefix="hnsw-graph-", dir=args.workdir))
    mach = machine(["chromadb"])
    cols, build = {}, {}
    try:
        for m, efc in settings:
            client = chromadb.PersistentClient(
                path=str(root / f"m{m}-efc{efc}"), settings=Settings(anonymized_telemetry=False)
            )
            col = client.create_collection(
                f"m{m}-efc{efc}",
                metadata={"hnsw:space": "cosine", "hnsw:M": m, "hnsw:construction_ef": efc},
                embedding_function=None,
            )
            t = time.perf_counter()
            for s in range(0, args.n, args.batch):
                col.add(ids=items.keys[s : s + args.batch], embeddings=data.vectors[rows[s : s + args.batch]])
            build[(m, efc)] = args.n / (time.perf_counter() - t)
            cols[(m, efc)] = col
            print(f"built M {m} ef_construction {efc}: {build[(m, efc)]:,.0f} items/s", flush=True)
        runs = [(s, f) for s in settings for f in fetches]
        lat: dict[tuple, list[float]] = {r: [] for r in runs}
        hit: dict[tuple, list[float]] = {r: [] for r in runs}
        for q in case.warmup:
            for s in settings:
                cols[s].query(query_embeddings=data.vectors[q.row : q.row + 1], n_results=10, include=["distances"])
        for j in range(args.queries):
            q = case.queries[j % len(case.queries)]
            rot = j % len(runs)
            for s, f in runs[rot:] + runs[:rot]:
                t = time.perf_counter()
                res = cols[s].query(
                    query_embeddings=data.vectors[q.row : q.row + 1], n_results=f, include=["distances"]
                )
                lat[(s, f)].append((time.perf_counter() - t) * 1e3)
                hit[(s, f)].append(len(set(res["ids"][0][:K]) & set(q.exact[:K])) / K)
        table = markdown_table(
            ["Items", "Neighbours (M)", "ef_construction", "n_results", "Build items/s", "Query p50 ms", "Recall@10"],
            [
                [
                    f"{args.n:,}",
                    str(s[0]),
                    str(s[1]),
                    str(f),
                    f"{build[s]:,.0f}",
                    f"{statistics.median(lat[(s, f)]):.2f}",
                    f"{statistics.mean(hit[(s, f)]):.3f}",
                ]
                for s, f in runs
            ],
            [True, True, True, True, True, True, True],
        )
        print(table)
        print(
            f"{args.queries} interleaved queries per row (the whole-prefix case, {len(case.queries)} queries repeated)"
        )
        mach.load_end = os.getloadavg()
        print("\n".join(mach.lines()))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
