"""Single puts and hybrid vs plain searches on a store of N items, on the SQLite or the PostgreSQL catalog.

The store is built once per (catalog, N) in ``--data-dir`` (reused by later
runs: building 100,000 items takes minutes) from store_bench's general item
set: clustered 384-d vectors looked up by text (no model), namespaces
``("memories", "g<u % 10>", "u<u>")`` of 100 items, values
``{"content": text, "kind": kind}``, text of 100-200 characters from
store_bench's ~150-word trading vocabulary (so a query word is common: the
keyword side meets thousands of matches).

Then, timed store-side only (the embedding is a dict lookup):

* **single puts**: ``store.put`` of a new item into a random namespace, one
  at a time (the items stay: a rerun's store is a few hundred items larger);
* **searches** over the whole prefix ``("memories",)``, ``limit=10``:
  every query runs plain (``ranking=None``) and hybrid (``HybridRanking()``,
  the ``Memory.open`` default) back to back, alternating which goes first.
  A query is 3-6 words of a random stored item's text with a vector near
  that item's.

    python bench/recall/put_hybrid_bench.py --n 10000 --catalog sqlite
    python bench/recall/put_hybrid_bench.py --n 100000 --catalog postgres --data-dir /tmp/phb
    python bench/recall/put_hybrid_bench.py --n 10000 --profile put     # cProfile of the puts (top 25 by cumulative)
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
from langchain_core.embeddings import Embeddings  # noqa: E402
from langgraph.store.base import PutOp  # noqa: E402

from bench.common.items import DIMS, GROUPS, NS_ITEMS, WORDS, Mixture, near  # noqa: E402
from bench.common.report import fmt_ms, git_state, machine, markdown_table, percentile  # noqa: E402
from langgraph_memory.search.ranking import HybridRanking  # noqa: E402
from langgraph_memory.store import ChromaStore  # noqa: E402

BATCH = 1000


class Lookup(Embeddings):
    """Vectors by text from a dict; unknown texts get a seeded vector from the mixture (recorded)."""

    model_name = "bench-lookup"

    def __init__(self, mix: Mixture) -> None:
        self.mix = mix
        self.by_text: dict[str, list[float]] = {}

    def add(self, texts: list[str], vectors: np.ndarray) -> None:
        self.by_text.update(zip(texts, vectors.astype(np.float32).tolist(), strict=True))

    def _one(self, text: str) -> list[float]:
        got = self.by_text.get(text)
        if got is None:
            got = self.mix.draw(self.mix.clusters(1))[0].astype(np.float32).tolist()
            self.by_text[text] = got
        return got

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


def texts_for(n: int, rng: random.Random, prefix: str) -> list[str]:
    out = []
    for i in range(n):
        target = rng.randint(100, 200)
        words = [f"{prefix}{i}:"]
        while sum(len(w) + 1 for w in words) < target:
            words.append(rng.choice(WORDS))
        out.append(" ".join(words)[:target])
    return out


def open_store(args: argparse.Namespace, emb: Lookup) -> ChromaStore:
    index: Any = {"dims": DIMS, "embed": emb, "fields": ["content"]}
    root = Path(args.data_dir) / f"{args.catalog}-{args.n}"
    root.mkdir(parents=True, exist_ok=True)
    if args.catalog == "postgres":
        from langgraph_memory._infra.pg_cluster import create_database, start_pgserver, with_database

        url = args.pg_url or start_pgserver(Path(args.data_dir) / "pgserver")
        db = f"phb_{args.n}"
        if not (root / "built").exists():
            target = create_database(url, db)
        else:
            target = with_database(url, db)
        return ChromaStore(data_dir=target, local_dir=root / "local", index=index)
    return ChromaStore(data_dir=root / "store", index=index)


def build(store: ChromaStore, args: argparse.Namespace, emb: Lookup, texts: list[str], log: Any) -> None:
    root = Path(args.data_dir) / f"{args.catalog}-{args.n}"
    if (root / "built").exists():
        return
    n_ns = max(1, args.n // NS_ITEMS)
    nprng = np.random.default_rng(args.seed)
    u = nprng.permutation(np.arange(args.n) % n_ns)
    kinds = ["rare" if x < 0.01 else "occasional" if x < 0.15 else "common" for x in nprng.random(args.n)]
    t0 = time.perf_counter()
    for start in range(0, args.n, BATCH):
        idx = range(start, min(args.n, start + BATCH))
        store.batch(
            [
                PutOp(
                    ("memories", f"g{u[i] % GROUPS}", f"u{u[i]}"),
                    f"m{i:07d}",
                    {"content": texts[i], "kind": kinds[i]},
                )
                for i in idx
            ]
        )
        if start % 20_000 == 0:
            log(f"  built {start + len(idx):,} items, {time.perf_counter() - t0:.0f} s")
    (root / "built").write_text(str(args.n))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--catalog", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--data-dir", default="/tmp/put_hybrid_bench", help="built stores are kept here and reused")
    p.add_argument("--pg-url", default=None, help="an existing PostgreSQL server (default: pgserver in --data-dir)")
    p.add_argument("--puts", type=int, default=200)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--profile", choices=("put", "hybrid", "plain"), default=None)
    p.add_argument(
        "--query-words",
        choices=("item", "none"),
        default="item",
        help="item: 3-6 words of a stored item (every word common: 13-16%% of items hold it); "
        "none: a text no item shares a word with, as store_bench's queries ('q3.17')",
    )
    args = p.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    m = machine(["chromadb", "langgraph"])
    mix = Mixture.make(args.seed)
    rng = random.Random(args.seed)
    texts = texts_for(args.n, rng, "m")
    emb = Lookup(mix)
    vectors = mix.draw(mix.clusters(args.n))
    emb.add(texts, vectors)
    store = open_store(args, emb)
    try:
        build(store, args, emb, texts, log)
        prof = cProfile.Profile() if args.profile else None

        # Single puts, each of a new item (new text, new vector), into a random existing namespace.
        n_ns = max(1, args.n // NS_ITEMS)
        run = f"{os.getpid()}-{int(time.time())}"
        put_texts = texts_for(args.puts + args.warmup, rng, f"p{run}-")
        emb.add(put_texts, mix.draw(mix.clusters(len(put_texts))))
        put_ms: list[float] = []
        for j, text in enumerate(put_texts):
            u = rng.randrange(n_ns)
            ns = ("memories", f"g{u % GROUPS}", f"u{u}")
            if prof is not None and args.profile == "put" and j >= args.warmup:
                prof.enable()
            t0 = time.perf_counter()
            store.put(ns, f"p{run}-{j}", {"content": text, "kind": "common"})
            dt = (time.perf_counter() - t0) * 1000
            if prof is not None:
                prof.disable()
            if j >= args.warmup:
                put_ms.append(dt)

        # The searches are timed on an index that holds the puts (with the index following in a thread, the
        # first searches would otherwise share the CPU with its catch-up).
        if hasattr(store, "wait_for_index"):
            store.wait_for_index(timeout=600)

        # Queries: words of a stored item's text, a vector near that item's.
        q_texts, q_rows = [], []
        for j in range(args.queries + args.warmup):
            i = rng.randrange(args.n)
            words = [w for w in texts[i].split()[1:] if w.isalpha()]
            k = min(len(words), rng.randint(3, 6))
            if args.query_words == "item":
                q_texts.append(f"{' '.join(rng.sample(words, k))} ?{j}")
            else:
                q_texts.append(f"q0.{j}")
            q_rows.append(i)
        qv = near(mix, vectors[q_rows], mix.clusters(len(q_rows)))
        emb.add(q_texts, qv)
        hybrid = HybridRanking()
        times: dict[str, list[float]] = {"plain": [], "hybrid": []}
        for j, q in enumerate(q_texts):
            order = [("plain", None), ("hybrid", hybrid)]
            if j % 2:
                order.reverse()
            for name, ranking in order:
                store.ranking = ranking
                if prof is not None and args.profile == name and j >= args.warmup:
                    prof.enable()
                t0 = time.perf_counter()
                store.search(("memories",), query=q, limit=10)
                dt = (time.perf_counter() - t0) * 1000
                if prof is not None:
                    prof.disable()
                if j >= args.warmup:
                    times[name].append(dt)
        store.ranking = None
    finally:
        store.close()
    m.load_end = os.getloadavg()
    log(f"slowest puts ms: {[round(x, 1) for x in sorted(put_ms)[-12:]]}")
    if prof is not None:
        pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
    rows = [
        ["single put", fmt_ms(percentile(put_ms, 50)), fmt_ms(percentile(put_ms, 95))],
        ["search, plain cosine", fmt_ms(percentile(times["plain"], 50)), fmt_ms(percentile(times["plain"], 95))],
        ["search, HybridRanking()", fmt_ms(percentile(times["hybrid"], 50)), fmt_ms(percentile(times["hybrid"], 95))],
    ]
    over = percentile(times["hybrid"], 50) - percentile(times["plain"], 50)
    print(
        f"{args.n:,} items, {args.catalog} catalog; {len(put_ms)} puts, {len(times['plain'])} queries per ranking"
        f" (query words: {args.query_words})"
    )
    print()
    print(markdown_table(["store-side", "p50 ms", "p95 ms"], rows, [False, True, True]))
    print()
    print(f"hybrid - plain p50: {over:+.2f} ms")
    import langgraph_memory

    lib = Path(langgraph_memory.__file__).resolve().parents[1]
    print(f"library: {lib} at {git_state(lib)}")
    print(*m.lines(), sep="\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
