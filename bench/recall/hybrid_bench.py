"""Hybrid search latency against dense search on the same data (target: hybrid p50 at most dense p50 + 2 ms).

    .venv/bin/python bench/recall/hybrid_bench.py                    # 100,000 items, 300 queries per case
    .venv/bin/python bench/recall/hybrid_bench.py --n 10000 --queries 100
    .venv/bin/python bench/recall/hybrid_bench.py --write            # also write bench/results/RESULTS_hybrid.md
    .venv/bin/python bench/recall/hybrid_bench.py --n 10000 --supersede 0.55   # a third arm: the near-duplicate rule on

The keyword path needs text, so each item gets real-ish text: 12-40 words
drawn from a Zipf distribution (s = 1) over the English stop words (the most
frequent ranks) and 20,000 seeded pseudo-words, so a query word can be as
common as "market" or as rare as a ticker. Vectors come from store_bench's
clustered mixture (sentence-embedding-like), looked up by text so no model
runs. Items live in ``("memories", "u<i % 1000>")`` (100 per namespace),
value ``{"text": ..., "kind": ...}`` with ``kind`` "rare" for 1% of them.

Each query is 3-6 words: half taken from a random stored item (with a vector
near that item's), half drawn from the distribution (with a fresh vector).
Per case, every query runs dense (``ranking=None``) and hybrid
(``HybridRanking()``, defaults) back to back, alternating which goes first,
after a warm-up; times are of ``store.search`` (no embedding: the lookup is free).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
from langchain_core.embeddings import Embeddings  # noqa: E402
from langgraph.store.base import PutOp  # noqa: E402

from bench.common.items import DIMS, Mixture, near  # noqa: E402
from bench.common.report import fmt_ms, git_state, machine, markdown_table, percentile  # noqa: E402
from langgraph_memory.catalog.keywords import STOP_WORDS  # noqa: E402
from langgraph_memory.search.ranking import HybridRanking  # noqa: E402
from langgraph_memory.store import ChromaStore  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results" / "RESULTS_hybrid.md"
MARKER = "<!-- tables -->\n"
MAX_EXTRA_MS = 2.0  # the target: hybrid p50 - dense p50, in every case, at 10,000 and 100,000 items
NS_ITEMS = 100
_SYLLABLES = ["ka", "lo", "mi", "tren", "sa", "vo", "ri", "dun", "pel", "ta", "gor", "ne", "bi", "qua", "ster", "xi"]


class Vocabulary:
    """Stop words first, then 20,000 pseudo-words; word ``r`` is drawn with probability ~ 1 / (r + 1)."""

    def __init__(self, rng: random.Random, n_words: int = 20_000) -> None:
        words: dict[str, None] = dict.fromkeys(sorted(STOP_WORDS))
        while len(words) < len(STOP_WORDS) + n_words:
            words["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
        self.words = list(words)
        p = 1.0 / np.arange(1, len(self.words) + 1)
        self.p = p / p.sum()

    def draw(self, rng: np.random.Generator, n: int) -> list[str]:
        return [self.words[i] for i in rng.choice(len(self.words), size=n, p=self.p)]


class Lookup(Embeddings):
    """Vectors by text (documents and queries alike)."""

    def __init__(self) -> None:
        self.vectors: dict[str, list[float]] = {}
        self.model_name = "bench-lookup"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]


def build(n: int, n_queries: int, seed: int) -> tuple[list[PutOp], list[str], Lookup]:
    rng = np.random.default_rng(seed)
    vocab = Vocabulary(random.Random(seed))
    mix = Mixture.make(seed)
    clusters = mix.clusters(n)
    vectors = mix.draw(clusters)
    emb = Lookup()
    ops, texts = [], []
    for i in range(n):
        text = f"{i}: " + " ".join(vocab.draw(rng, int(rng.integers(12, 41))))
        texts.append(text)
        emb.vectors[text] = vectors[i].tolist()
        kind = "rare" if rng.random() < 0.01 else "common"
        ops.append(PutOp(("memories", f"u{i % (n // NS_ITEMS)}"), f"k{i}", {"text": text, "kind": kind}))
    queries = []
    about = rng.integers(0, n, size=n_queries)
    qvecs = near(mix, vectors[about], clusters[about])
    fresh = mix.draw(mix.clusters(n_queries))
    for j in range(n_queries):
        if j % 2 == 0:
            content = [w for w in texts[about[j]].split()[1:] if w not in STOP_WORDS] or ["kalo"]
            words = list(rng.choice(content, size=min(len(content), int(rng.integers(3, 7))), replace=False))
            vec = qvecs[j]
        else:
            words = vocab.draw(rng, int(rng.integers(3, 7)))
            vec = fresh[j]
        q = f"q{j} " + " ".join(words)  # q<j>: every query text distinct (its own vector)
        emb.vectors[q] = vec.tolist()
        queries.append(q)
    return ops, queries, emb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--data-dir", help="keep the store here and reuse it on the next run with the same --n/--seed")
    parser.add_argument("--write", action="store_true")
    parser.add_argument(
        "--supersede",
        type=float,
        default=None,
        metavar="COS",
        help="also time HybridRanking(supersede_similarity=COS), interleaved with the other two (printed only)",
    )
    args = parser.parse_args()
    mach = machine(["chromadb", "langgraph"])
    print("\n".join(mach.lines()), flush=True)

    ops, queries, emb = build(args.n, args.queries + args.warmup, args.seed)
    data_dir = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="lgm-hybrid-")) / "memory"
    store = ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": emb, "fields": ["text"]})
    load_note = ""
    if store.items.count("memories") != len(ops):
        started = time.perf_counter()
        for i in range(0, len(ops), 1000):
            store.batch(ops[i : i + 1000])
        load_s = time.perf_counter() - started
        load_note = f"Put rate with the keyword index: {len(ops) / load_s:,.0f} items/s (batches of 1,000)."
        print(
            f"put {len(ops):,} items in {load_s:.0f} s ({len(ops) / load_s:,.0f}/s, keyword index included)", flush=True
        )
    # Time the planner, not the catch-up: until the index holds every vector, a search scores the rest exactly.
    store.wait_for_index(timeout=1800)

    n_ns = args.n // NS_ITEMS
    cases = [
        ("whole prefix (memories,)", lambda j: (("memories",), None)),
        ("one namespace (100 items)", lambda j: (("memories", f"u{(j * 7919) % n_ns}"), None)),
        ("whole prefix, filter kind=rare (1%)", lambda j: (("memories",), {"kind": "rare"})),
        ("whole prefix, filter kind=common (99%)", lambda j: (("memories",), {"kind": "common"})),
    ]
    hybrid = HybridRanking()
    rule = None if args.supersede is None else HybridRanking(supersede_similarity=args.supersede)
    rows = []
    verdict = True
    for title, scope in cases:
        times: dict[str, list[float]] = {"dense": [], "hybrid": [], "rule": []}
        plans: set[str] = set()
        for j, q in enumerate(queries):
            prefix, flt = scope(j)
            order = [("dense", None), ("hybrid", hybrid)] + ([("rule", rule)] if rule is not None else [])
            order = order[j % len(order) :] + order[: j % len(order)]  # each arm takes each place in turn
            for name, ranking in order:
                store.ranking = ranking
                t0 = time.perf_counter()
                store.search(prefix, query=q, filter=flt, limit=10, refresh_ttl=False)
                ms = (time.perf_counter() - t0) * 1000
                if j >= args.warmup:
                    times[name].append(ms)
            if j == args.warmup:
                store.ranking = None
                plans.add(store.explain(prefix, query=q, filter=flt).strategy)
        d50, h50 = percentile(times["dense"], 50), percentile(times["hybrid"], 50)
        ratio = h50 / d50
        if h50 - d50 > MAX_EXTRA_MS:
            verdict = False
        rows.append(
            [
                title,
                "/".join(sorted(plans)),
                fmt_ms(d50),
                fmt_ms(percentile(times["dense"], 95)),
                fmt_ms(h50),
                fmt_ms(percentile(times["hybrid"], 95)),
                f"{ratio:.2f}x",
                f"{h50 - d50:+.2f}",
            ]
        )
        print(rows[-1], flush=True)
        if rule is not None:
            r50 = percentile(times["rule"], 50)
            print(
                f"  with the near-duplicate rule (cosine >= {args.supersede:g}): p50 {fmt_ms(r50)}"
                f" ({r50 - h50:+.2f} ms over hybrid, {r50 - d50:+.2f} over dense),"
                f" p95 {fmt_ms(percentile(times['rule'], 95))}",
                flush=True,
            )
    store.close()
    mach.load_end = os.getloadavg()
    mach.code = git_state(Path(__file__).resolve().parents[2], ["langgraph_memory", "bench"])
    header = [
        "case",
        "plan",
        "dense p50 ms",
        "dense p95 ms",
        "hybrid p50 ms",
        "hybrid p95 ms",
        "hybrid / dense p50",
        "hybrid - dense p50 ms",
    ]
    table = markdown_table(header, rows, [False, False, True, True, True, True, True, True])
    summary = (
        f"{args.n:,} items, {args.queries} timed queries per case; target: hybrid p50 at most dense p50 + "
        f"{MAX_EXTRA_MS:.0f} ms in every case: {'met' if verdict else 'NOT met'}"
    )
    print(table)
    print(summary)
    if args.write:  # the notes above the marker are kept; the measured part below it is replaced
        head, sep, _old = RESULTS.read_text().partition(MARKER) if RESULTS.exists() else ("", "", "")
        if not sep:
            head = "# Hybrid vs dense search latency (`bench/recall/hybrid_bench.py`)\n\n"
        RESULTS.write_text(
            head + "\n".join([MARKER, summary, "", load_note, "", table, "", "Machine:", *mach.lines(), ""])
        )


if __name__ == "__main__":
    main()
