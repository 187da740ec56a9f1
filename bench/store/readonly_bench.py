"""What a read-only open costs: open time and search latency, read-only (exact) against writable (HNSW planner).

A read-only store does not open Chroma (it cannot without writing to its folder), so every search is scored
exactly from the catalog's vectors: the first search of a collection loads them into memory, later ones score
them in place. This measures both opens over the same folder, at a few sizes.

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python bench/store/readonly_bench.py [--sizes 10000 50000] [--write]

``--write`` writes bench/results/RESULTS_readonly.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
from bench.common.report import fmt_ms, machine, markdown_table, percentile  # noqa: E402

DIMS = 384
QUERIES = 30


def _fill(folder: Path, n: int) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langgraph.store.base import PutOp

    from langgraph_memory.store import ChromaStore

    with ChromaStore(data_dir=folder, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)}) as store:
        for start in range(0, n, 1000):
            store.batch(
                [
                    PutOp(("memories", f"u{i % 10}"), f"k{i}", {"text": f"memory number {i} about topic {i % 97}"})
                    for i in range(start, min(n, start + 1000))
                ]
            )


def _measure(folder: Path, read_only: bool) -> dict[str, float | str]:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langgraph_memory.store import ChromaStore

    t0 = time.perf_counter()
    store = ChromaStore(
        data_dir=folder, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)}, read_only=read_only
    )
    opened = time.perf_counter() - t0
    try:
        plan = store.explain(("memories",), query="topic 5").strategy
        t0 = time.perf_counter()
        store.search(("memories",), query="memory about topic 0", limit=10)
        first = time.perf_counter() - t0
        times = []
        for q in range(QUERIES):
            t0 = time.perf_counter()
            store.search(("memories",), query=f"memory about topic {q + 1}", limit=10)
            times.append(time.perf_counter() - t0)
    finally:
        store.close()
    return {
        "plan": plan,
        "open": opened * 1000,
        "first": first * 1000,
        "p50": percentile([t * 1000 for t in times], 50),
        "p95": percentile([t * 1000 for t in times], 95),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    m = machine(["chromadb", "numpy"])
    rows = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "memory"
            t0 = time.perf_counter()
            _fill(folder, n)
            print(f"filled {n} items in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            for read_only in (False, True):
                r = _measure(folder, read_only)
                rows.append(
                    [
                        f"{n:,}",
                        "read-only" if read_only else "writable",
                        str(r["plan"]),
                        fmt_ms(float(r["open"])),
                        fmt_ms(float(r["first"])),
                        fmt_ms(float(r["p50"])),
                        fmt_ms(float(r["p95"])),
                    ]
                )
                print(rows[-1], file=sys.stderr)
    header = ["items", "open", "plan", "open ms", "first search ms", "search p50 ms", "search p95 ms"]
    table = markdown_table(header, rows, [True, False, False, True, True, True, True])
    print(table)
    if args.write:
        out = Path(__file__).resolve().parents[1] / "results" / "RESULTS_readonly.md"
        out.write_text(
            "# Read-only opens: exact scoring from the catalog against the writable planner "
            "(bench/store/readonly_bench.py)\n\n"
            f"{m.nproc} cores ({m.cpu}), Python {m.python}, load average at start {'/'.join(f'{x:.1f}' for x in m.load_start)}; "
            f"{DIMS}-dim vectors, one collection, {QUERIES} searches of limit 10 after a first one.\n\n"
            f"`PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python bench/store/readonly_bench.py --sizes {' '.join(map(str, args.sizes))} --write`\n\n"
            + table
            + "\n"
        )


if __name__ == "__main__":
    main()
