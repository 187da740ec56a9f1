"""Temporal weighting on its own terms: does the current fact rank above the one it replaced?

    PYTHONPATH=. .venv/bin/python bench/recall/recency/recency_bench.py [--data ../shared/data/locomo] [--write]

The memories and questions are ``recency.json`` (built by ``build_recency.py``,
which says how). Each memory is stored in one ``ChromaStore`` (the default
model, vectors cached in ``bench/.cache/``) and dated ``days_ago`` before a
fixed clock; each question is asked with ``HybridRanking(temporal=None)`` to
read every memory's relevance (cosine and keyword evidence fused), then each
temporal setting (share, episodic decay rate per hour) is applied as the
library applies it (``relevance * (1 - share + share * retention)``). Counted:
the share of questions whose current memory scores above the superseded one,
and whose current memory ranks first.

The same settings' cost on LoCoMo (recall@10 of the default ranking, turns
with neighbours, clock at each conversation's last session, against the same
ranking without temporal weighting) comes from ``bench/recall/ranking_loo.py``'s
cached signals. Last, the library's default ``HybridRanking()`` is run through
the store on the benchmark: the figure the default must meet (>= 90%).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH.parent))  # the checkout: its langgraph_memory and bench.common
from bench.common.report import git_state, machine, markdown_table  # noqa: E402
from langgraph_memory.embeddings import CachedEmbeddings, SentenceTransformerEmbeddings  # noqa: E402
from langgraph_memory.search.ranking import HybridRanking, TemporalConfig  # noqa: E402
from langgraph_memory.store import ChromaStore  # noqa: E402

DATA = Path(__file__).resolve().parent / "recency.json"
OUT = BENCH / "results" / "RESULTS_recency.md"
NOW = 1_780_000_000.0  # the clock every question is asked at (a fixed date, so runs compare)
SHARES = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5)
RATES = (0.001, 0.002, 0.003, 0.005, 0.01, 0.03)  # per hour: a day keeps 0.98, 0.95, 0.93, 0.89, 0.79, 0.49


def load_store(tmp: Path, data: dict) -> ChromaStore:
    emb = CachedEmbeddings(SentenceTransformerEmbeddings(), path=BENCH / ".cache" / "recency-embeddings.sqlite")
    store = ChromaStore(data_dir=tmp / "memory", index={"dims": 384, "embed": emb, "fields": ["text"]})
    for m in data["memories"]:
        store.put(("recency",), m["key"], {"text": m["text"]})
    with store.catalog.write() as conn:  # date each memory (a put is dated now)
        conn.executemany(
            "UPDATE items SET created_at = ?, updated_at = ?, last_accessed_at = ? WHERE key = ?",
            [(NOW - m["days_ago"] * 86400.0,) * 3 + (m["key"],) for m in data["memories"]],
        )
    return store


def relevances(store: ChromaStore, data: dict) -> list[dict[str, tuple[float, float]]]:
    """Per question: every memory found, its relevance without temporal weighting and its age in hours."""
    store.ranking = HybridRanking(temporal=None, clock=lambda: NOW, candidates=200)
    ages = {m["key"]: m["days_ago"] * 24.0 for m in data["memories"]}
    out = []
    for q in data["questions"]:
        found = store.search_explained(("recency",), query=q["question"], limit=200)
        out.append({h.item.key: (h.parts.relevance, ages[h.item.key]) for h in found.hits if h.parts is not None})
    return out


def judge(rel: list[dict[str, tuple[float, float]]], data: dict, share: float, rate: float) -> tuple[float, float]:
    """(current above superseded, current first) over the questions."""
    above = first = 0
    for q, r in zip(data["questions"], rel, strict=True):
        final = {k: v * (1 - share + share * math.exp(-rate * age)) for k, (v, age) in r.items()}
        cur, old = final.get(q["current"], -1.0), final.get(q["superseded"], -1.0)
        above += cur > old
        first += cur >= max(final.values())
    n = len(data["questions"])
    return above / n, first / n


def locomo_cost(data_dir: Path, settings: list[tuple[float, float]]) -> dict[tuple[float, float], float]:
    """LoCoMo recall@10 (mean over the conversations) of the default ranking under each (share, rate)."""
    import ranking_loo as R

    from langgraph_memory.search.ranking import calculate_final_score

    qs, names = R.load(data_dir)
    convs = np.array([q.question.conv for q in qs])
    default = HybridRanking()
    base = R.absolute("noisy-or", default.keyword_weight, R.kw_hill(default.keyword_half, 2.0))
    out = {}
    for share, rate in settings:
        for q in qs:
            now = q.last
            cfg = TemporalConfig(episodic_memory_decay=rate)
            q.temporal = np.array(
                [
                    calculate_final_score(1.0, age_hours=(now - at) / 3600.0, config=cfg, temporal_share=share)
                    for at in q.at
                ]
            )
        f = R.ranking(base, radius=default.neighbours, alpha=default.neighbour_weight, rule="abs")
        r = R.metrics(qs, f)["r@10"]
        out[(share, rate)] = float(np.mean([r[convs == c].mean() for c in names]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/work/shared/data/locomo", help="LoCoMo conversations (for the cost)")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    mach = machine(["langgraph"])
    data = json.loads(DATA.read_text())
    tmp = Path(tempfile.mkdtemp(prefix="lgm-recency-"))
    store = load_store(tmp, data)
    rel = relevances(store, data)
    grid = {(s, r): judge(rel, data, s, r) for s in SHARES for r in RATES}
    cost = locomo_cost(Path(args.data), list(grid))
    no_temporal = cost[(0.0, RATES[0])]
    rows = []
    for (s, r), (above, first) in grid.items():
        if s == 0.0 and r != RATES[0]:
            continue
        rows.append(
            [f"{s:g}", "-" if s == 0 else f"{r:g}", f"{above:.1%}", f"{first:.1%}", f"{cost[(s, r)]:.3f}",
             f"{cost[(s, r)] - no_temporal:+.3f}"]
        )  # fmt: skip
    default = HybridRanking()
    assert default.temporal is not None
    store.ranking = dataclasses.replace(default, clock=lambda: NOW)
    above = first = 0
    per_kind: dict[str, list[int]] = {}
    for q in data["questions"]:
        hits = store.search_explained(("recency",), query=q["question"], limit=200).hits
        order = [h.item.key for h in hits]
        ok = order.index(q["current"]) < order.index(q["superseded"])
        above += ok
        first += order[0] == q["current"]
        per_kind.setdefault(q["kind"], []).append(int(ok))
    n = len(data["questions"])
    store.close()
    header = ["temporal share", "episodic rate /h", "current above superseded", "current first",
              "LoCoMo r@10 (mean of 5)", "against no temporal"]  # fmt: skip
    table = markdown_table(header, rows, [True] * len(header))
    summary = (
        f"Through the store with `HybridRanking()` (share {default.temporal_share:g}, episodic rate"
        f" {default.temporal.episodic_memory_decay:g}/h): current above superseded in {above}/{n} questions"
        f" ({above / n:.1%}), first in {first}/{n} ({first / n:.1%}); by kind: "
        + ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in per_kind.items())
    )
    print(table)
    print(summary)
    mach.load_end = __import__("os").getloadavg()
    mach.code = git_state(BENCH.parent, ["langgraph_memory", "bench"])
    if args.write:
        OUT.write_text(
            "# Recency: the current fact above the superseded one (`bench/recall/recency/recency_bench.py`)\n\n"
            f"{len(data['questions'])} questions, {len(data['memories'])} memories (`recency.json`, built by"
            " `build_recency.py`).\n\n" + table + "\n\n" + summary + "\n\nMachine:\n" + "\n".join(mach.lines()) + "\n"
        )


if __name__ == "__main__":
    main()
