"""Temporal weighting on its own terms: does the current fact rank above the one it replaced?

    PYTHONPATH=. .venv/bin/python bench/recall/recency/recency_bench.py [--data ../shared/data/locomo] [--write]

The memories and questions are ``recency.json`` (built by ``build_recency.py``,
which says how): 32 cases, each a recency question (the current memory should
rank above the one it replaced) and a control question (a distractor of the
same subject, which nothing replaced, should rank first). Each memory is
stored in one ``ChromaStore`` (the default model, vectors cached in
``bench/.cache/``) and dated ``days_ago`` before a fixed clock; each question is
asked with ``HybridRanking(temporal=None, supersede_similarity=None)`` to read
every memory's relevance (cosine and keyword evidence fused); then each
temporal share and each setting of the rule that puts an older memory below a
newer one (`langgraph_memory.search.ranking.newer_first`: the vectors' cosine at
least ``supersede_similarity``, the newer scoring at least ``supersede_ratio``
of the older, and with ``mutual`` each the other's closest match across time)
are applied as the library applies them.

LoCoMo (``bench/recall/ranking_loo.py``'s signals, recall@10 and @1 per
conversation, clock at each conversation's last session) is the other side:
against the same ranking without temporal weighting (no share, no rule), for
turns stored as conversation turns (which the rule leaves alone) and for the
turns stored as plain memories. First the temporal shares whose decay alone
(at the default episodic rate) keeps LoCoMo recall@10 within ``BUDGET`` of no
temporal weighting on every conversation, both ways, are kept; then the share
among those and the rule's settings are chosen together by leave-one-case-out:
for each case, the setting that gets the most recency and control questions
right over the other 31 cases (ties: the rule acting least: a higher threshold,
a higher ratio, a smaller share), scored on the held-out case. Then the cost of
each setting compared on LoCoMo. Last,
the library's default ``HybridRanking()`` is run through the store on the
benchmark: the figure the default must meet (>= 90%).
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
from bench.recall.recency._recency import (  # noqa: E402
    DATA,
    LIMIT,
    NOW,
    OFF,
    LoCoMo,
    Setting,
    apply_rule,
    embedder,
    load_store,
    relevances,
)
from langgraph_memory.search.ranking import HybridRanking  # noqa: E402

OUT = BENCH / "results" / "RESULTS_recency.md"
SHARES = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5)
#: What LoCoMo recall@10 may lose against no temporal weighting, on any conversation (the target's budget).
BUDGET = 0.01
RATES = (0.001, 0.002, 0.003, 0.005, 0.01, 0.03)  # per hour: a day keeps 0.98, 0.95, 0.93, 0.89, 0.79, 0.49
#: The rule's grid: cosine thresholds (None: off) and the share of the older's score the newer must reach.
THRESHOLDS = (None, 0.9, 0.8, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4)
RATIOS = (0.9, 0.8, 0.7, 0.5, 0.0)


@dataclasses.dataclass
class Bench:
    data: dict
    keys: list[str]
    at: np.ndarray  # updated_at of each memory
    cos: np.ndarray  # memory x memory cosine
    rel: list[dict[str, float]]  # recency questions
    ctl: list[dict[str, float]]  # control questions

    def order(self, rel: dict[str, float], rate: float, setting: Setting) -> list[str]:
        share = setting[0]
        idx = [self.keys.index(k) for k in rel]
        finals = np.full(len(self.keys), -np.inf)
        for k, i in zip(rel, idx, strict=True):
            age = (NOW - self.at[i]) / 3600.0
            finals[i] = rel[k] * (1 - share + share * math.exp(-rate * age))
        finals = apply_rule(finals, self.at, lambda a, b: float(self.cos[a, b]), setting)
        ranked = sorted(idx, key=lambda i: (-finals[i], self.keys[i]))
        return [self.keys[i] for i in ranked]

    def cases(self, rate: float, setting: Setting) -> list[tuple[bool, bool, bool]]:
        """Per case: current above superseded, current first, control answer first."""
        out = []
        for q, r, c, rc in zip(self.data["questions"], self.rel, self.data["controls"], self.ctl, strict=True):
            order = self.order(r, rate, setting)
            above = order.index(q["current"]) < order.index(q["superseded"])
            out.append((above, order[0] == q["current"], self.order(rc, rate, setting)[0] == c["answer"]))
        return out


def loo(per: dict[Setting, list[tuple[bool, bool, bool]]]) -> list[tuple[Setting, tuple[bool, bool, bool]]]:
    """For each held-out case: the setting best on the others (recency + control right; ties: acting least)."""
    n = len(next(iter(per.values())))

    def caution(s: Setting) -> tuple[float, float, float, bool]:
        return (2.0 if s[1] is None else s[1], s[2], -s[0], s[3])

    out = []
    for h in range(n):
        best = max(per, key=lambda s: (sum(a + c for i, (a, _f, c) in enumerate(per[s]) if i != h), caution(s)))
        out.append((best, per[best][h]))
    return out


def label(s: Setting) -> str:
    rule = "rule off" if s[1] is None else f"cosine >= {s[1]:g}, ratio {s[2]:g}" + (", mutual" if s[3] else "")
    return f"share {s[0]:g}, {rule}"


# ------------------------------------------------------------------ LoCoMo


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/work/shared/data/locomo", help="LoCoMo conversations (for the cost)")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    mach = machine(["langgraph"])
    data = json.loads(DATA.read_text())
    keys = [m["key"] for m in data["memories"]]
    vecs = np.asarray(embedder().embed_documents([m["text"] for m in data["memories"]]), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    tmp = Path(tempfile.mkdtemp(prefix="lgm-recency-"))
    store = load_store(tmp, data)
    bench = Bench(
        data,
        keys,
        np.array([NOW - m["days_ago"] * 86400.0 for m in data["memories"]]),
        vecs @ vecs.T,
        relevances(store, [q["question"] for q in data["questions"]]),
        relevances(store, [c["question"] for c in data["controls"]]),
    )
    default = HybridRanking()
    assert default.temporal is not None
    rate = default.temporal.episodic_memory_decay
    n = len(data["questions"])
    shipped: Setting = (default.temporal_share, default.supersede_similarity, default.supersede_ratio, True)
    before: Setting = (0.2, None, 0.0, False)  # the default before: share 0.2, rule off
    opt_in: Setting = (0.2, 0.55, 0.7, False)  # the opt-in rule before: a cosine alone

    # 1. Temporal weighting alone on LoCoMo: the shares (at the default rate) that keep recall@10 within 0.01 of
    # no temporal weighting on every conversation, turns and plain memories, are those the rule may go with.
    loc = LoCoMo(Path(args.data))
    none = loc.recall(OFF, rate)
    temporal_grid = [(s, r) for s in SHARES for r in RATES if s or r == RATES[0]]
    grid = {
        (s, r): (loc.recall((s, None, 0.0, False), r), loc.worst((s, None, 0.0, False), r, none))
        for s, r in temporal_grid
    }
    shares = [s for s in SHARES if s == 0 or grid[(s, rate)][1] >= -BUDGET]

    # 2. The share and the rule's settings, chosen together by leave-one-case-out.
    settings: list[Setting] = [(sh, None, 0.0, False) for sh in shares] + [
        (sh, t, r, m) for sh in shares for t in THRESHOLDS if t is not None for r in RATIOS for m in (False, True)
    ]
    per = {s: bench.cases(rate, s) for s in settings}
    held = loo(per)
    at_zero = loo({s: r for s, r in per.items() if s[0] == 0.0})  # the share fixed at 0, the rule still chosen
    per |= {s: bench.cases(rate, s) for s in (before, opt_in, shipped) if s not in per}  # shown, not chosen among
    chosen = [s for s, _r in held]
    most = max(set(chosen), key=chosen.count)

    def score(s: Setting) -> int:
        return sum(a + c for a, _f, c in per[s])

    shown = [s for s in settings if s[1] is None] + sorted(
        (s for s in settings if s[1] is not None), key=lambda s: -score(s)
    )[:20]
    shown += [s for s in (opt_in, shipped) if s not in shown]
    rows = [
        [
            label(s),
            f"{sum(a for a, _f, _c in per[s])}/{n}",
            f"{sum(f for _a, f, _c in per[s])}/{n}",
            f"{sum(c for *_x, c in per[s])}/{n}",
        ]
        for s in shown
    ]
    t_grid = markdown_table(
        ["setting", "current above superseded", "current first", "control first"], rows, [False, True, True, True]
    )
    case_rows = []
    for q, c, (s, (a, f, k)), off in zip(data["questions"], data["controls"], held, per[before], strict=True):
        case_rows.append(
            [q["current"][:3], q["kind"], q["question"], label(s), "yes" if a else "NO", "yes" if f else "no",
             "yes" if off[0] else "no", c["question"], "yes" if k else "NO", "yes" if off[2] else "no"]
        )  # fmt: skip
    t_cases = markdown_table(
        ["case", "kind", "recency question", "setting chosen on the other 31", "current above (held out)",
         "current first", "above, default before", "control question", "control first (held out)",
         "control first, default before"],
        case_rows,
        [False] * 10,
    )  # fmt: skip
    loo_above = sum(a for _s, (a, _f, _c) in held)
    loo_ctl = sum(c for _s, (_a, _f, c) in held)
    loo_line = (
        f"Shares kept (decay alone within {BUDGET:g} of none on every LoCoMo conversation at rate {rate:g}/h):"
        f" {', '.join(f'{x:g}' for x in shares)}. Leave one case out ({len(settings)} settings): current above superseded in {loo_above}/{n} held-out cases"
        f" ({loo_above / n:.1%}), control first in {loo_ctl}/{n}; the default before ({label(before)}):"
        f" {sum(a for a, _f, _c in per[before])}/{n} and {sum(c for *_x, c in per[before])}/{n}; no temporal"
        f" weighting at all: {sum(a for a, _f, _c in per[OFF])}/{n} and {sum(c for *_x, c in per[OFF])}/{n}."
        f" Chosen most often: {label(most)} ({chosen.count(most)} of {n} folds); every fold's choice: "
        + ", ".join(f"{label(s)} x{chosen.count(s)}" for s in sorted(set(chosen), key=chosen.count, reverse=True))
        + f". With the share fixed at 0 (the rule's settings still chosen per fold): current above superseded in"
        f" {sum(a for _s, (a, _f, _c) in at_zero)}/{n} held-out cases, control first in"
        f" {sum(c for _s, (_a, _f, c) in at_zero)}/{n}; chosen: "
        + ", ".join(f"{label(s)} x{[x for x, _r in at_zero].count(s)}" for s in dict.fromkeys(x for x, _r in at_zero))
    )
    print(t_grid, t_cases, loo_line, sep="\n\n", flush=True)

    # 3. What each costs on LoCoMo, per conversation, against no temporal weighting; and the temporal grid.
    compared = list(dict.fromkeys([OFF, before, opt_in, most, shipped]))
    cost = {s: loc.recall(s, rate) for s in compared}
    names = loc.names
    cost_rows = []
    for s in compared[1:]:
        for variant, got in cost[s].items():
            ref = cost[OFF][variant]
            cost_rows.append(
                [label(s), variant,
                 *(f"{got[c][0]:.3f} ({got[c][0] - ref[c][0]:+.3f})" for c in names),
                 *(f"{got[c][1] - ref[c][1]:+.3f}" for c in names)]
            )  # fmt: skip
    t_cost = markdown_table(
        ["setting", "LoCoMo turns stored as", *(f"{c} r@10" for c in names), *(f"{c} r@1 change" for c in names)],
        cost_rows,
        [False] * (2 * len(names) + 2),
    )
    nt_line = "Without temporal weighting (the reference): " + "; ".join(
        f"{v}: " + ", ".join(f"{c} {cost[OFF][v][c][0]:.3f}" for c in names) for v in cost[OFF]
    )
    trows = []
    for s, r in temporal_grid:
        res = bench.cases(r, (s, None, 0.0, False))
        got = grid[(s, r)][0]
        mean = float(np.mean([got["turns (the rule leaves turns alone)"][c][0] for c in names]))
        worst_turns, worst_plain = (min(got[v][c][0] - none[v][c][0] for c in names) for v in none)
        trows.append(
            [f"{s:g}", "-" if s == 0 else f"{r:g}", f"{sum(a for a, _f, _c in res) / n:.1%}",
             f"{sum(f for _a, f, _c in res) / n:.1%}", f"{sum(c for *_x, c in res)}/{n}", f"{mean:.3f}",
             f"{worst_turns:+.3f}", f"{worst_plain:+.3f}"]
        )  # fmt: skip
    t_temporal = markdown_table(
        ["temporal share", "episodic rate /h", "current above superseded", "current first", "control first",
         "LoCoMo turns r@10 (mean of 5)", "worst conversation, turns", "worst conversation, plain memories"],
        trows,
        [True] * 8,
    )  # fmt: skip
    print(t_cost, nt_line, t_temporal, sep="\n\n", flush=True)

    # 4. The library's default through the store, and the default before.
    summary = []
    earlier = dataclasses.replace(default, temporal_share=0.2, supersede_similarity=None)
    for ranking in (default, earlier):
        store.ranking = dataclasses.replace(ranking, clock=lambda: NOW)
        above = first = ctl = 0
        per_kind: dict[str, list[int]] = {}
        for q, c in zip(data["questions"], data["controls"], strict=True):
            order = [h.item.key for h in store.search_explained(("recency",), query=q["question"], limit=LIMIT).hits]
            ok = q["current"] in order and (
                q["superseded"] not in order or order.index(q["current"]) < order.index(q["superseded"])
            )
            above += ok
            first += order[0] == q["current"]
            per_kind.setdefault(q["kind"], []).append(int(ok))
            top = store.search_explained(("recency",), query=c["question"], limit=LIMIT).hits[0].item.key
            ctl += top == c["answer"]
        rule = (
            "off"
            if ranking.supersede_similarity is None
            else f"mutual, cosine >= {ranking.supersede_similarity:g}, ratio {ranking.supersede_ratio:g}"
        )
        name = "`HybridRanking()`" if ranking is default else "the default before"
        summary.append(
            f"Through the store with {name} (temporal share {ranking.temporal_share:g}; older below newer: {rule}),"
            f" limit {LIMIT}: current above superseded in {above}/{n} questions ({above / n:.1%}), first in"
            f" {first}/{n} ({first / n:.1%}), control answer first in {ctl}/{n}; by kind: "
            + ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in per_kind.items())
        )
        print(summary[-1], flush=True)
    store.close()
    mach.load_end = __import__("os").getloadavg()
    mach.code = git_state(BENCH.parent, ["langgraph_memory", "bench"])
    if args.write:
        OUT.write_text(
            "# Recency: the current fact above the superseded one (`bench/recall/recency/recency_bench.py`)\n\n"
            f"{n} cases, each a recency question and a control question; {len(data['memories'])} memories"
            " (`recency.json`, built by `build_recency.py`).\n\n"
            f"## The temporal share and the newer-first rule, chosen together (episodic rate {rate:g}/h)\n\n"
            "The best 20 rule settings by recency + control answers, every share kept with the rule off, the"
            " opt-in rule before and the shipped default.\n\n" + t_grid + "\n\n" + loo_line
            + "\n\n### Every case, held out\n\n" + t_cases
            + "\n\n### What each costs on LoCoMo: recall@10 (change against no temporal weighting), and the change"
            " in recall@1\n\n" + t_cost + "\n\n" + nt_line
            + "\n\n## Temporal weighting alone (the rule off)\n\n" + t_temporal
            + "\n\n## Through the store\n\n" + "\n\n".join(summary)
            + "\n\nMachine:\n" + "\n".join(mach.lines()) + "\n"
        )  # fmt: skip


if __name__ == "__main__":
    main()
