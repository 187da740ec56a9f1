"""What the 30% relevance rule keeps in the trading-research example, with keyword evidence on either scale.

    python bench/recall/relevance_bench.py [--write]

Runs ``examples/trading_research.py`` twice in a fresh folder with the real
default model (the second run recalls the first's lessons), then asks its
recall queries, and some others, of the lessons and research namespaces.
Each candidate of :class:`~langgraph_memory.search.ranking.HybridRanking` (the
``Memory.open`` default) is scored twice: keyword evidence over the best
candidate's BM25 (the scale before) and over the query's idf mass (the scale
now). The table counts the results at or above
:data:`~langgraph_memory.config.MIN_RELEVANCE` on each scale, and lists the
results the threshold keeps on one scale only.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "examples"))
from langgraph.store.base import SearchOp

from bench.common.report import git_state, machine, markdown_table
from langgraph_memory.config import MIN_RELEVANCE
from langgraph_memory.memory import Memory
from langgraph_memory.search.ranking import (
    HybridRanking,
    calculate_final_score,
    fuse,
    memory_type_for,
)

RESULTS = ROOT / "bench" / "RESULTS_relevance.md"


def _scores(
    mem: Memory, ns: tuple[str, ...], query: str, ranking: HybridRanking
) -> list[tuple[str, float, float, float]]:
    """(text, cosine, score before, score now) of every candidate, best first by the score now."""
    store = mem.store
    qvec = np.asarray(store.embeddings.embed_query(query), dtype=np.float32)  # type: ignore[union-attr]
    op = SearchOp(ns, None, 10, 0, query, False)
    cands = store.hybrid.candidates(op, qvec, ranking, omit=lambda _it: False).items
    top = max((c.keyword for c in cands), default=0.0)
    now = ranking.clock()
    out = []
    for c in cands:

        def final(rel: float, c=c) -> float:
            return calculate_final_score(
                rel,
                age_hours=(now - c.item.updated_at) / 3600,
                access_count=c.item.access_count,
                memory_type=memory_type_for(c.item.namespace[0]),
                temporal_share=ranking.temporal_share,
            )

        before = final(fuse(c.similarity, c.keyword / top if top else 0.0, 0.6))
        after = final(fuse(c.similarity, c.evidence, ranking.keyword_weight))
        text = next(
            (v for k, v in c.item.value.items() if isinstance(v, str) and k in ("lesson", "content", "text")),
            str(c.item.value)[:80],
        )
        out.append((text, c.similarity, before, after))
    return sorted(out, key=lambda r: -r[3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.name}")
    args = parser.parse_args()
    import trading_research as tr

    folder = Path(tempfile.mkdtemp(prefix="lgm-relevance-"))
    for _ in range(2):
        tr.run(data_dir=folder)
    queries = [
        tr.DEFAULT_OBJECTIVE,
        "Mean-reversion strategy for government bonds",
        "lookback too short: whipsaw",
        "volatility targeting",
        "What does Caroline think about politics?",
        "momentum",
    ]
    rows, flips = [], []
    with Memory.open(folder) as mem:
        ranking = dataclasses.replace(mem.store.ranking)  # the default
        for ns_name in ("lessons", "research"):
            ns = mem.namespace(ns_name)
            for q in queries:
                got = _scores(mem, ns, q, ranking)
                kb = sum(r[2] >= MIN_RELEVANCE for r in got)
                ka = sum(r[3] >= MIN_RELEVANCE for r in got)
                rows.append([ns_name, q, str(len(got)), str(kb), str(ka)])
                for text, cos, b, a in got:
                    if (b >= MIN_RELEVANCE) != (a >= MIN_RELEVANCE):
                        flips.append([ns_name, q, text[:70], f"{cos:.2f}", f"{b:.2f}", f"{a:.2f}"])
    t1 = markdown_table(
        ["namespace", "query", "candidates", f">= {MIN_RELEVANCE} before", f">= {MIN_RELEVANCE} now"],
        rows,
        [False, False, True, True, True],
    )
    t2 = markdown_table(
        ["namespace", "query", "memory", "cosine", "score before", "score now"],
        flips,
        [False, False, False, True, True, True],
    )
    mach = machine(["sentence-transformers", "langgraph"])
    mach.code = git_state(ROOT, ["langgraph_memory", "bench", "examples"])
    print(t1, "\n", t2, sep="\n")
    print("\n".join(mach.lines()))
    if args.write:
        RESULTS.write_text(
            "\n".join(
                [
                    "# The 30% relevance rule on the trading-research example (`bench/recall/relevance_bench.py`)",
                    "",
                    (
                        "Command: `python bench/recall/relevance_bench.py --write`. The example ran twice in a fresh folder (real"
                        " model); every candidate of the default `HybridRanking` scored with keyword evidence over the best"
                        " candidate's BM25 (before) and over the query's idf mass (now)."
                    ),
                    "",
                    t1,
                    "",
                    "## Results on one side of the threshold only",
                    "",
                    t2,
                    "",
                    "Machine:",
                    *mach.lines(),
                    "",
                ]
            )
        )


if __name__ == "__main__":
    main()
