"""Recall and latency on unstructured vectors: HNSW's worst case, and what the planner does about it.

    .venv/bin/python bench/store/uniform_recall_bench.py [--sizes 20000,50000,100000] [--queries 60] [--write]

Items are points drawn uniformly on the 384-d unit sphere (no clusters, so HNSW's
greedy walk finds few true neighbours). For each size the script builds one
`ChromaStore` namespace and one bare Chroma collection over the same vectors,
then times, query by query in turn:

- the store's search (the planner decides: HNSW, or exact scoring once it has
  measured that HNSW answers badly on this collection);
- bare Chroma's query (the floor, ``n_results=10``);
- a numpy scan of every vector (what exact scoring costs at its core).

Recall@10 is against the exact top 10. Warm-up queries run first (untimed):
they are the searches from which the planner learns a collection's recall.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
from bench.common.report import fmt_ms, git_state, machine, markdown_table, percentile  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parents[1] / "results" / "RESULTS_uniform.md"
DIMS = 384
K = 10


class _Lookup:
    """Embeddings by text from a precomputed matrix: no model time."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.model_name = "bench-uniform"
        self.matrix = matrix

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.matrix[[int(t.split()[-1]) for t in texts]].tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.matrix[int(text.split()[-1])].tolist()


def _sphere(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, DIMS)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def run_size(n: int, queries: int, warmup: int, seed: int, log: bool = True) -> dict[str, float]:
    import chromadb
    from langchain_core.embeddings import Embeddings
    from langgraph.store.base import PutOp

    from langgraph_memory.store import ChromaStore

    rng = np.random.default_rng(seed)
    items = _sphere(rng, n)
    qs = _sphere(rng, queries + warmup)
    matrix = np.vstack([items, qs])  # texts "item i" and "query n+j" both index into it
    embed = type("UniformLookup", (_Lookup, Embeddings), {})(matrix)
    tmp = Path(tempfile.mkdtemp(prefix="uniform_recall_"))
    try:
        store = ChromaStore(data_dir=tmp / "store", index={"dims": DIMS, "embed": embed, "fields": ["content"]})
        started = time.perf_counter()
        for start in range(0, n, 1000):
            store.batch(
                [PutOp(("docs",), f"k{i}", {"content": f"item {i}"}) for i in range(start, min(n, start + 1000))]
            )
        store.wait_for_index()
        load_s = time.perf_counter() - started
        bare = chromadb.PersistentClient(path=str(tmp / "bare"))
        col = bare.create_collection("bare", metadata={"hnsw:space": "cosine"}, embedding_function=None)
        for start in range(0, n, 5000):
            stop = min(n, start + 5000)
            col.add(ids=[f"k{i}" for i in range(start, stop)], embeddings=items[start:stop])
        if log:
            print(f"{n:,} items: loaded in {load_s:.0f} s", flush=True)
        truth = [set(np.argsort(-(items @ q))[:K].tolist()) for q in qs]
        times: dict[str, list[float]] = {"store": [], "bare": [], "scan": []}
        hits: dict[str, list[float]] = {"store": [], "bare": []}
        strategies: list[str] = []
        for j, q in enumerate(qs):
            text = f"query {n + j}"
            t0 = time.perf_counter()
            found = store.search(("docs",), query=text, limit=K)
            t1 = time.perf_counter()
            res = col.query(query_embeddings=[q], n_results=K)
            t2 = time.perf_counter()
            np.argpartition(-(items @ q), K)[:K]
            t3 = time.perf_counter()
            if j < warmup:
                continue
            strategies.append(store.explain(("docs",), query=text).strategy)
            times["store"].append((t1 - t0) * 1000)
            times["bare"].append((t2 - t1) * 1000)
            times["scan"].append((t3 - t2) * 1000)
            hits["store"].append(len({int(it.key[1:]) for it in found} & truth[j]) / K)
            hits["bare"].append(len({int(i[1:]) for i in res["ids"][0]} & truth[j]) / K)
        store.close()
        out = {f"{k}_p50": percentile(v, 50) for k, v in times.items()}
        out |= {f"{k}_p95": percentile(v, 95) for k, v in times.items()}
        out |= {f"{k}_recall": float(np.mean(v)) for k, v in hits.items()}
        out["exact_share"] = strategies.count("exact") / max(len(strategies), 1)
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="20000,50000,100000")
    p.add_argument("--queries", type=int, default=60)
    p.add_argument("--warmup", type=int, default=8, help="untimed searches first (the planner samples recall)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--write", action="store_true", help=f"write {RESULTS.name}")
    args = p.parse_args()
    m = machine(["chromadb", "numpy"])
    header = [
        "items",
        "store p50 / p95 ms",
        "store recall@10",
        "plan: exact",
        "bare Chroma p50 / p95 ms",
        "bare recall@10",
        "numpy scan p50 ms",
        "store / bare p50",
    ]
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        r = run_size(n, args.queries, args.warmup, args.seed)
        rows.append(
            [
                f"{n:,}",
                f"{fmt_ms(r['store_p50'])} / {fmt_ms(r['store_p95'])}",
                f"{r['store_recall']:.3f}",
                f"{r['exact_share']:.0%}",
                f"{fmt_ms(r['bare_p50'])} / {fmt_ms(r['bare_p95'])}",
                f"{r['bare_recall']:.3f}",
                fmt_ms(r["scan_p50"]),
                f"{r['store_p50'] / r['bare_p50']:.2f}x",
            ]
        )
        print(" | ".join(rows[-1]), flush=True)
    m.load_end = machine([]).load_start
    m.code = git_state(ROOT, ["langgraph_memory", "bench/store/uniform_recall_bench.py"])
    table = markdown_table(header, rows, right=[True] * len(header))
    print(table)
    if args.write:
        cmd = f"python bench/store/uniform_recall_bench.py --sizes {args.sizes} --queries {args.queries}"
        RESULTS.write_text(
            "# Recall on unstructured vectors (`bench/store/uniform_recall_bench.py`)\n\n"
            f"Command: `{cmd}`. {args.queries} timed queries per size after {args.warmup} untimed ones, "
            "points uniform on the 384-d unit sphere, one namespace, limit 10.\n\n"
            + "\n".join(m.lines())
            + "\n\n"
            + table
            + "\n"
        )
        print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
