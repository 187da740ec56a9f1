"""What a data cut-off costs a search: p50/p95 per plan without one and with two, timed interleaved, and recall@10.

    .venv/bin/python bench/store/cutoff_bench.py [--sizes 10000,100000] [--queries 100] [--compare-reads]

One collection of N items (384-d vectors from the seeded mixture of `bench.common.items`, looked up by text, so
no model runs) in 100 namespaces, values ``{"text", "kind"}`` with ``kind`` ``"rare"`` for 1% and ``"common"``
for 50%. Each item's evidence end is a day drawn uniformly over ten years; 5% have none. Cut-offs: the day that
half the items end by (``cut 50%``) and the one a tenth do (``cut 10%``).

Plans (``explain`` names each one's strategy without a cut-off): one namespace (1% of the items), the whole
collection, the whole collection filtered to ``rare`` and to ``common``, and a listing (no query) of one
namespace. For each query the three searches (no cut-off, cut 50%, cut 10%) run back to back, rotating which goes
first, so load drift hits them alike. recall@10 is the share of the exact top 10 among the items that pass
(scope, filter and cut-off; numpy over every vector) that the search returns. The plan column is the plan
without a cut-off: a cut-off that few items pass turns an HNSW plan exact (its debug log says so). Runs after the index has caught up
and after one search with a cut-off has read the evidence ends into memory (its time is printed: a process pays
it once). SQLite catalog, embedded Chroma.

``--compare-reads`` adds each cut-off once more as "read then drop": the search as it ran before it skipped
the items known to end after the cut-off unread (the store's evidence ends then name no item ids, so every
candidate is read and parsed before the cut-off drops it). It rotates with the others, so the two are
timed interleaved on the same store.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common

from langchain_core.embeddings import Embeddings  # noqa: E402
from langgraph.store.base import PutOp  # noqa: E402

from bench.common.items import DIMS, Mixture, near  # noqa: E402
from bench.common.report import cpu_flags, cpu_model  # noqa: E402
from langgraph_memory.catalog import evidence  # noqa: E402
from langgraph_memory.catalog.evidence import EndsAfter  # noqa: E402
from langgraph_memory.store import ChromaStore  # noqa: E402

FIRST = date(2010, 1, 1).toordinal()
SPAN = 3650
K = 10


class _Lookup(Embeddings):
    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.model_name = "bench-cutoff-lookup"
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text].tolist()


def _pcts(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples)
    return statistics.median(samples), samples[max(0, int(len(samples) * 0.95) - 1)]


def _nothing_known(cutoff: int) -> EndsAfter:
    """No item id known to end after the cut-off: the search reads every candidate before dropping it."""
    return EndsAfter(np.zeros(0, dtype=np.int32), cutoff)


def run(n: int, n_queries: int, seed: int = 0, compare_reads: bool = False) -> list[tuple]:
    rng = np.random.default_rng(seed)
    mix = Mixture.make(seed)
    clusters = mix.clusters(n)
    vecs = mix.draw(clusters)
    texts = [f"item {i}" for i in range(n)]
    ns_of = rng.integers(0, 100, n)
    kind = np.where(rng.random(n) < 0.01, "rare", np.where(rng.random(n) < 0.5, "common", "other"))
    ends = FIRST + rng.integers(0, SPAN, n)
    undated = rng.random(n) < 0.05
    dated = np.sort(ends[~undated])
    cuts = {"cut 50%": int(dated[len(dated) // 2]), "cut 10%": int(dated[len(dated) // 10])}
    pick = rng.integers(0, n, n_queries)
    qvecs = near(mix, vecs[pick], clusters[pick])
    qtexts = [f"query {j}" for j in range(n_queries)]
    table = dict(zip(texts, vecs, strict=True)) | dict(zip(qtexts, qvecs, strict=True))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = ChromaStore(data_dir=tmp, index={"dims": DIMS, "embed": _Lookup(table), "fields": ["text"]})
        t0 = time.perf_counter()
        for start in range(0, n, 2000):
            store.batch(
                [
                    PutOp(("memories", f"u{ns_of[i]}"), f"k{i}", {"text": texts[i], "kind": str(kind[i])})
                    for i in range(start, min(n, start + 2000))
                ]
            )
        for start in range(0, n, 5000):
            with store.catalog.write() as conn:
                for i in range(start, min(n, start + 5000)):
                    day = None if undated[i] else date.fromordinal(int(ends[i]))
                    evidence.note(conn, ("memories", f"u{ns_of[i]}"), f"k{i}", day)
        store.wait_for_index()
        build = time.perf_counter() - t0
        store.search(("memories",), query=qtexts[0], limit=1)  # loads the vectors into memory: not the cut-off's cost
        t0 = time.perf_counter()
        store.search(("memories",), query=qtexts[0], limit=1, data_cutoff=date.fromordinal(cuts["cut 50%"]))
        first_cut = (time.perf_counter() - t0) * 1000
        cases = {
            "one namespace (1%)": (lambda j: ("memories", f"u{ns_of[pick[j]]}"), None, True),
            "whole collection": (lambda j: ("memories",), None, True),
            "filter rare (1%)": (lambda j: ("memories",), {"kind": "rare"}, True),
            "filter common (50%)": (lambda j: ("memories",), {"kind": "common"}, True),
            "listing, one namespace": (lambda j: ("memories", f"u{ns_of[pick[j]]}"), None, False),
        }
        settings: list[tuple[str, int | None]] = [("none", None), *cuts.items()]
        if compare_reads:
            settings += [(f"{label}, read then drop", cut) for label, cut in cuts.items()]
        for name, (prefix_of, flt, with_query) in cases.items():
            plan = store.explain(prefix_of(0), query=qtexts[0] if with_query else None, filter=flt).strategy
            times: dict[str, list[float]] = {s: [] for s, _ in settings}
            recall: dict[str, list[float]] = {s: [] for s, _ in settings}
            for j in range(n_queries):
                prefix = prefix_of(j)
                turn = j % len(settings)
                order = settings[turn:] + settings[:turn]
                for label, cut in order:
                    day = None if cut is None else date.fromordinal(cut)
                    if label.endswith("read then drop"):
                        store._evidence.after = _nothing_known  # type: ignore[method-assign]
                    t = time.perf_counter()
                    got = store.search(
                        prefix, query=qtexts[j] if with_query else None, filter=flt, limit=K, data_cutoff=day
                    )
                    times[label].append((time.perf_counter() - t) * 1000)
                    vars(store._evidence).pop("after", None)  # the store's own method again
                    if not with_query:
                        continue
                    keep = np.ones(n, dtype=bool)
                    if len(prefix) > 1:
                        keep &= ns_of == int(prefix[1][1:])
                    if flt is not None:
                        keep &= kind == flt["kind"]
                    if cut is not None:
                        keep &= ~undated & (ends <= cut)
                    idx = np.nonzero(keep)[0]
                    top = idx[np.argsort(-(vecs[idx] @ qvecs[j]), kind="stable")[:K]]
                    want = {f"k{i}" for i in top}
                    if want:  # none passing in scope: nothing to recall (it counted as 0 before)
                        recall[label].append(len(want & {h.key for h in got}) / len(want))
            for label, _ in settings:
                p50, p95 = _pcts(times[label])
                r = f"{statistics.mean(recall[label]):.3f}" if recall[label] else "-"
                rows.append((n, name, plan, label, p50, p95, r))
        store.close()
    print(f"n={n:,}: built in {build:.0f} s; first search with a cut-off (reads every evidence end) {first_cut:.1f} ms")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--compare-reads", action="store_true", help="also time each cut-off reading what it drops")
    args = ap.parse_args()
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        rows += run(n, args.queries, compare_reads=args.compare_reads)
    print(
        f"cutoff_bench: {args.queries} queries per cell; {cpu_model()}, {cpu_flags()}, {os.cpu_count()} cores; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print("| items | case | plan | cut-off | p50 ms | p95 ms | recall@10 |")
    print("|---|---|---|---|---|---|---|")
    for n, name, plan, label, p50, p95, r in rows:
        print(f"| {n:,} | {name} | {plan} | {label} | {p50:.2f} | {p95:.2f} | {r} |")


if __name__ == "__main__":
    main()
