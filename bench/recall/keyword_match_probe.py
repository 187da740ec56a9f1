"""Time `keywords.match()` alone on a catalog that put_hybrid_bench.py built (read-only).

    python bench/recall/keyword_match_probe.py /tmp/put_hybrid_bench/sqlite-100000/store/catalog.sqlite

40 queries of 3-6 words of store_bench's vocabulary (each word held by 13-16% of the items), twice; prints the
p50 and p95 of each pass.
"""

from __future__ import annotations

import random
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
from bench.common.items import WORDS  # noqa: E402
from langgraph_memory.catalog import keywords as kw  # noqa: E402


def main() -> None:
    conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
    rng = random.Random(1)
    words = [w for w in WORDS if w.isalpha()]
    queries = [" ".join(rng.sample(words, rng.randint(3, 6))) for _ in range(40)]
    for _ in range(2):
        times = []
        for q in queries:
            t0 = time.perf_counter()
            found = kw.match(conn, q)
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        print(f"match p50 {times[20]:.2f} ms, p95 {times[37]:.2f} ms, last query matched {len(found):,} items")


if __name__ == "__main__":
    main()
