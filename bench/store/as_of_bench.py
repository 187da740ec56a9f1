"""As-of searches half way through the history against current ones, per plan, on a store loaded once and kept.

    .venv/bin/python bench/store/as_of_bench.py --data-dir /tmp/asof100k [--items 100000] [--rounds 4] [--only scan]
        [--vectors mixture384|random64] [--recall]

The store is `history_bench`'s (``--items`` items over 100 namespaces, each
changed 0 to 5 times; ``--vectors``: 384-d vectors shaped like a sentence
model's, the default, or 64-d fake ones; a data dir is loaded with one kind and
reopened with the same), loaded by its loader into
``--data-dir`` on the first run and reopened by later ones, with the moment
half way through the changes kept beside it (``DIR.json``); ``--pg URL``
puts the catalog on PostgreSQL (schema ``as_of_bench``, Chroma under
``--data-dir``). So two checkouts can be timed on the same data one after
the other (``PYTHONPATH`` pointing at each, alternating) without a load of
minutes per run. Per plan it prints the p50 of blocks of 25 searches,
current and ``as_of(half way)`` interleaved (A, B, B, A, ...), both as
wall time and as the searching thread's CPU time (which the other work on a
shared machine moves less; it leaves out the Chroma server process).

``--recall`` prints, for each whole-collection plan, how much of the as-of
answer's top 10 that scores every past version in scope (``as_of.PROBED_SCOPE``
raised past any scope) the default answer (which scores the clusters nearest
the query, the share of a large scope's past vectors measured to hold a
query's nearest ones) finds, over 100 queries.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The package first, from PYTHONPATH (the checkout timed); then this checkout, for the shared bench module.
from langgraph_memory.search.ranking import HybridRanking
from langgraph_memory.store import ChromaStore
from langgraph_memory.store import as_of as _as_of_module

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.store
from bench.store._history_data import VECTORS, WORDS, index_config, load_store  # noqa: E402


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.thread_time()
    fn()
    return (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000


def _block(fn: Callable[[int], Any], n: int = 25) -> tuple[float, float]:
    got = [_timed(lambda i=i: fn(i)) for i in range(n)]  # type: ignore[misc]
    return statistics.median(g[0] for g in got), statistics.median(g[1] for g in got)


def _line(name: str, cur: list[tuple[float, float]], half: list[tuple[float, float]]) -> str:
    cw, cc = statistics.median(x[0] for x in cur), statistics.median(x[1] for x in cur)
    hw, hc = statistics.median(x[0] for x in half), statistics.median(x[1] for x in half)
    return f"| {name} | {cw:.2f} | {hw:.2f} | {hw / cw:.2f}x | {cc:.2f} | {hc:.2f} | {hc / cc:.2f}x |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True, help="the store's folder: loaded when absent, reopened when there")
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--pg", help="the catalog on this PostgreSQL server")
    ap.add_argument("--only", action="append", help="run only the rows whose name holds this (repeatable)")
    ap.add_argument("--vectors", choices=VECTORS, default=VECTORS[0])
    ap.add_argument("--recall", action="store_true", help="print the as-of answers' recall of the exact ones")
    args = ap.parse_args()
    moments = Path(f"{args.data_dir}.json")
    target = args.data_dir
    if args.pg:
        os.environ["LANGGRAPH_MEMORY_LOCAL_DIR"] = args.data_dir
        target = f"{args.pg}{'&' if '?' in args.pg else '?'}options=-csearch_path%3Das_of_bench"
    store = ChromaStore(data_dir=target, index=index_config(args.vectors), collections=None)  # type: ignore[arg-type]
    try:
        if not moments.exists():
            keys = [(("memories", f"u{i % 100}"), f"k{i}") for i in range(args.items)]
            middle, _last, load = load_store(store, keys, random.Random(48))
            moments.write_text(json.dumps({"middle": middle}))
            print(load)
        middle = json.loads(moments.read_text())["middle"]
        store.wait_for_index(timeout=1800)
        rng = random.Random(4848)
        queries = [" ".join(rng.choice(WORDS) for _ in range(3)) for _ in range(100)]
        plans: dict[str, Callable[[Any, int], Any]] = {
            "exact (1 namespace)": lambda s, i: s.search(("memories", f"u{i % 100}"), query=queries[i % 100]),
            "hnsw (whole collection)": lambda s, i: s.search(("memories",), query=queries[i % 100]),
            "filtered (whole collection)": lambda s, i: s.search(
                ("memories",), query=queries[i % 100], filter={"kind": "a"}
            ),
        }
        cases: list[tuple[str, HybridRanking | None, Callable[[Any, int], Any]]] = [
            *((name, None, fn) for name, fn in plans.items()),
            ("scan (no query)", None, lambda s, i: s.search(("memories", f"u{i % 100}"))),
            *((f"hybrid {name}", HybridRanking(), fn) for name, fn in plans.items()),
        ]
        wall, _cpu = _timed(lambda: store.as_of(middle).search(("memories",), query=queries[0]))
        store.ranking = HybridRanking()
        wall_kw, _cpu = _timed(lambda: store.as_of(middle).search(("memories",), query=queries[0]))
        print(
            f"first as-of search {wall:.0f} ms (loads the history's arrays), the first with keywords {wall_kw:.0f} ms"
        )
        print("| search p50 (ms) | current | as_of(half way) | ratio | current CPU | as_of CPU | ratio |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        half = store.as_of(middle)
        wanted = lambda name: not args.only or any(w in name for w in args.only)  # noqa: E731
        for name, ranking, fn in cases:
            if not wanted(name):
                continue
            store.ranking = ranking
            fn(store, 0)
            fn(half, 0)
            cur: list[tuple[float, float]] = []
            past: list[tuple[float, float]] = []
            for r in range(args.rounds):
                for view, into in ((store, cur), (half, past)) if r % 2 == 0 else ((half, past), (store, cur)):
                    into.append(_block(lambda i, v=view, f=fn: f(v, i)))  # type: ignore[misc]
            print(_line(name, cur, past), flush=True)
        if args.recall:
            _recall(store, half, plans, queries)
        for ranking in (None, HybridRanking()):  # a new view per search, as a reader making one per read
            kind = "hybrid hnsw" if ranking else "hnsw"
            if not wanted(f"first search of a new view ({kind})"):
                continue
            store.ranking = ranking
            cur, past = [], []
            for i in range(40):
                cur.append(_timed(lambda i=i: store.search(("memories",), query=queries[i])))  # type: ignore[misc]
                past.append(_timed(lambda i=i: store.as_of(middle).search(("memories",), query=queries[i])))  # type: ignore[misc]
            print(_line(f"first search of a new view ({kind})", cur, past), flush=True)
    finally:
        store.close()


def _recall(store: Any, half: Any, plans: dict[str, Callable[[Any, int], Any]], queries: list[str]) -> None:
    """Per whole-collection plan (cosine and hybrid): the default as-of top 10's share of the exact one's."""
    print("\n| as of half way: recall@10 of the answer scoring every past version | cosine | hybrid |")
    print("|---|---:|---:|")
    probed_scope = _as_of_module.PROBED_SCOPE
    for name, fn in plans.items():
        if "1 namespace" in name:
            continue
        got = []
        for ranking in (None, HybridRanking()):
            store.ranking = ranking
            hits = 0
            for i in range(len(queries)):
                _as_of_module.PROBED_SCOPE = sys.maxsize
                exact = {(r.namespace, r.key) for r in fn(half, i)}
                _as_of_module.PROBED_SCOPE = probed_scope
                hits += len(exact & {(r.namespace, r.key) for r in fn(half, i)})
            got.append(hits / (10 * len(queries)))
        print(f"| {name} | {got[0]:.3f} | {got[1]:.3f} |")
    store.ranking = None
    print()


if __name__ == "__main__":
    main()
