"""What the largest accepted value costs: a put and a search, at the size limit and below it.

    .venv/bin/python bench/store/limits_bench.py [--model fake|real] [--sizes 10000,100000,1000000] [--searches 20]

Each size runs in a fresh subprocess (so its peak RSS is its own): open a
store in a temporary folder, put 20 small items and one item whose ``text``
is a value of that many bytes as JSON (words, so the keyword index and the
model see real tokens), then time ``--searches`` searches over the
namespace. ``--model real`` embeds with the packaged all-MiniLM-L6-v2,
``fake`` with a deterministic 384-d fake (store cost without the model).
Prints one table; the limit is ``config.MAX_VALUE_BYTES``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common

WORDS = (
    "carry momentum volatility drawdown sharpe regime spread yield curve equity bond hedge "
    "liquidity factor signal backtest risk parity trend reversal"
).split()


def _text(n_bytes: int) -> str:
    rng = random.Random(n_bytes)
    parts: list[str] = []
    size = 0
    while size < n_bytes:
        w = rng.choice(WORDS)
        parts.append(w)
        size += len(w) + 1
    return " ".join(parts)[:n_bytes]


def _one(size: int, model: str, searches: int) -> dict[str, float]:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langgraph_memory.store import ChromaStore

    index = (
        ChromaStore.default_index() if model == "real" else {"dims": 384, "embed": DeterministicFakeEmbedding(size=384)}
    )
    with tempfile.TemporaryDirectory() as d, ChromaStore(data_dir=d, index=index) as store:
        for i in range(20):
            store.put(("notes",), f"small{i}", {"text": f"note {i} about {WORDS[i % len(WORDS)]}"})
        store.search(("notes",), query="warm up", limit=5)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        text = _text(size - len('{"text":""}'))
        t = time.perf_counter()
        store.put(("notes",), "big", {"text": text})
        put_s = time.perf_counter() - t
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        samples = []
        for i in range(searches):
            t = time.perf_counter()
            store.search(("notes",), query=f"{WORDS[i % len(WORDS)]} risk", limit=10)
            samples.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        store.get(("notes",), "big")
        get_ms = (time.perf_counter() - t) * 1000
    return {
        "put_s": put_s,
        "rss_before_mb": rss0 / 1024,
        "rss_peak_mb": rss1 / 1024,
        "search_p50_ms": statistics.median(samples),
        "search_max_ms": max(samples),
        "get_ms": get_ms,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("fake", "real"), default="fake")
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--searches", type=int, default=20)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child is not None:
        print(json.dumps(_one(a.child, a.model, a.searches)))
        return
    from bench.common.report import machine

    m = machine(["chromadb", "sentence-transformers"])
    rows = []
    for size in (int(s) for s in a.sizes.split(",")):
        out = subprocess.run(
            [sys.executable, __file__, "--model", a.model, "--searches", str(a.searches), "--child", str(size)],
            capture_output=True,
            text=True,
            env=os.environ,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(
            (
                f"{size:,}",
                f"{r['put_s']:.2f}",
                f"{r['rss_peak_mb'] - r['rss_before_mb']:.0f}",
                f"{r['rss_peak_mb']:.0f}",
                f"{r['search_p50_ms']:.1f}",
                f"{r['search_max_ms']:.1f}",
                f"{r['get_ms']:.1f}",
            )
        )
    head = ("value bytes", "put s", "put RSS growth MB", "peak RSS MB", "search p50 ms", "search max ms", "get ms")
    print(f"model: {a.model}")
    print("\n".join(m.lines()))
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
