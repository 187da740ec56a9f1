"""Search latency of HybridRanking() against HybridRanking(fusion="zscore", neighbours=2) on the LoCoMo store.

    .venv/bin/python bench/recall/locomo_latency.py [--data ../shared/data/locomo]

The 2760 turns of the five conversations in one ChromaStore (keys are LoCoMo's
``D<session>:<turn>``), query vectors cached first so only the search is
timed; the two rankings alternate on every question, two rounds. Prints p50
and p95 per ranking.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
from langgraph.store.base import PutOp

from bench.common.locomo import DATA, EMBED_CACHE, questions
from bench.common.locomo import turns as load
from langgraph_memory.embeddings import CachedEmbeddings, SentenceTransformerEmbeddings
from langgraph_memory.search.ranking import HybridRanking
from langgraph_memory.store import ChromaStore

emb = CachedEmbeddings(SentenceTransformerEmbeddings(), path=EMBED_CACHE)
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--data", default=str(DATA))
args = parser.parse_args()
convs = {f.stem: json.loads(f.read_text()) for f in sorted(Path(args.data).glob("*.json"))}
if not convs:
    raise SystemExit(f"no LoCoMo files in {args.data}")
store = ChromaStore(data_dir=Path(tempfile.mkdtemp()) / "m", index={"dims": 384, "embed": emb, "fields": ["text"]})
for name, conv in convs.items():
    ts = load(conv)
    store.batch([PutOp(("locomo", name), t["dia_id"], {"text": t["text"]}) for t in ts])
store.wait_for_index(120)
qs = [(name, qa["question"]) for name, conv in convs.items() for qa in questions(conv)]
for _n, q in qs:
    emb.embed_query(q)
rankings = {"HybridRanking()": HybridRanking(), "zscore + neighbours=2": HybridRanking(fusion="zscore", neighbours=2)}
times = {k: [] for k in rankings}
for _round in range(2):
    for name, q in qs:
        for label, r in rankings.items():
            store.ranking = r
            t0 = time.perf_counter()
            store.search(("locomo", name), query=q, limit=10, refresh_ttl=False)
            times[label].append((time.perf_counter() - t0) * 1000)
for label, ts in times.items():
    ts.sort()
    print(f"{label}: p50 {statistics.median(ts):.2f} ms, p95 {ts[int(0.95 * len(ts))]:.2f} ms over {len(ts)} searches")
store.close()
