"""Temporal weighting on its own terms: does the current fact rank above the one it replaced?

    PYTHONPATH=. .venv/bin/python bench/recall/recency/recency_bench.py [--data ../shared/data/locomo] [--write]

The memories and questions are ``recency.json`` (built by ``build_recency.py``,
which says how): 32 cases, each a recency question (the current memory should
rank above the one it replaced) and a control question (a distractor of the
same subject, which nothing replaced, should rank first). Each memory is
stored in one ``ChromaStore`` (the default model, vectors cached in
``bench/.cache/``) and dated ``days_ago`` before a fixed clock; each question is
asked with ``HybridRanking(temporal=None, supersede_similarity=None)`` to read
every memory's relevance (cosine and keyword evidence fused); then the
default's temporal weighting and each setting of the rule that puts an older
near-duplicate below a newer one (`langgraph_memory.search.ranking.newer_first`:
the vectors' cosine at least ``supersede_similarity``, the newer scoring at
least ``supersede_ratio`` of the older) are applied as the library applies them.

The rule's settings are chosen by leave-one-case-out: for each case, the
setting that gets the most recency and control questions right over the other
31 cases (ties: the higher threshold and ratio, the rule acting least), scored on
the held-out case. Its cost on LoCoMo comes from ``bench/recall/ranking_loo.py``'s
signals (recall@10 and @1 per conversation, clock at each conversation's last
session): for turns stored as conversation turns, which the rule leaves alone,
for the same turns if the rule acted on them, and for the turns stored as plain
memories. Last, the library's default ``HybridRanking()`` is run through the
store on the benchmark: the figure the default must meet (>= 90%).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(BENCH.parent))  # the checkout: its langgraph_memory and bench.common
from bench.common.report import git_state, machine, markdown_table  # noqa: E402
from langgraph_memory.embeddings import CachedEmbeddings, SentenceTransformerEmbeddings  # noqa: E402
from langgraph_memory.search.ranking import NEWER_FLOOR, HybridRanking, TemporalConfig, newer_first  # noqa: E402
from langgraph_memory.store import ChromaStore  # noqa: E402

DATA = Path(__file__).resolve().parent / "recency.json"
OUT = BENCH / "results" / "RESULTS_recency.md"
NOW = 1_780_000_000.0  # the clock every question is asked at (a fixed date, so runs compare)
SHARES = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5)
RATES = (0.001, 0.002, 0.003, 0.005, 0.01, 0.03)  # per hour: a day keeps 0.98, 0.95, 0.93, 0.89, 0.79, 0.49
#: The rule's grid: cosine thresholds (None: off) and the share of the older's score the newer must reach.
THRESHOLDS = (None, 0.9, 0.8, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4)
RATIOS = (0.9, 0.8, 0.7, 0.5, 0.0)
LIMIT = 10  # what a question asks for: the rule compares what can change the first LIMIT (as the store does)

Setting = tuple[float | None, float]


def embedder() -> CachedEmbeddings:
    return CachedEmbeddings(SentenceTransformerEmbeddings(), path=BENCH / ".cache" / "recency-embeddings.sqlite")


def load_store(tmp: Path, data: dict) -> ChromaStore:
    store = ChromaStore(data_dir=tmp / "memory", index={"dims": 384, "embed": embedder(), "fields": ["text"]})
    for m in data["memories"]:
        store.put(("recency",), m["key"], {"text": m["text"]})
    with store.catalog.write() as conn:  # date each memory (a put is dated now)
        conn.executemany(
            "UPDATE items SET created_at = ?, updated_at = ?, last_accessed_at = ? WHERE key = ?",
            [(NOW - m["days_ago"] * 86400.0,) * 3 + (m["key"],) for m in data["memories"]],
        )
    return store


def relevances(store: ChromaStore, asked: list[str]) -> list[dict[str, float]]:
    """Per question: every memory found and its relevance, before temporal weighting and the rule."""
    store.ranking = HybridRanking(temporal=None, supersede_similarity=None, clock=lambda: NOW, candidates=200)
    out = []
    for text in asked:
        found = store.search_explained(("recency",), query=text, limit=200)
        out.append({h.item.key: h.parts.relevance for h in found.hits if h.parts is not None})
    return out


def apply_rule(finals: np.ndarray, at: np.ndarray, cosine: Callable[[int, int], float], setting: Setting) -> np.ndarray:
    """``finals`` after `newer_first` over the results that can change the first ``LIMIT`` (the store's pool)."""
    threshold, ratio = setting
    if threshold is None:
        return finals
    finite = np.flatnonzero(np.isfinite(finals))
    if len(finite) < 2:
        return finals
    floor = max(NEWER_FLOOR, np.sort(finals[finite])[::-1][min(LIMIT, len(finite)) - 1] * ratio)
    pool = finite[finals[finite] >= floor]
    moved = newer_first(
        finals[pool].tolist(),
        at[pool].tolist(),
        lambda a, b: cosine(int(pool[a]), int(pool[b])),
        threshold=threshold,
        ratio=ratio,
    )
    out = finals.copy()
    out[pool] = [f for f, _by, _sim in moved]
    return out


@dataclasses.dataclass
class Bench:
    data: dict
    keys: list[str]
    at: np.ndarray  # updated_at of each memory
    cos: np.ndarray  # memory x memory cosine
    rel: list[dict[str, float]]  # recency questions
    ctl: list[dict[str, float]]  # control questions

    def order(self, rel: dict[str, float], share: float, rate: float, setting: Setting) -> list[str]:
        idx = [self.keys.index(k) for k in rel]
        finals = np.full(len(self.keys), -np.inf)
        for k, i in zip(rel, idx, strict=True):
            age = (NOW - self.at[i]) / 3600.0
            finals[i] = rel[k] * (1 - share + share * math.exp(-rate * age))
        finals = apply_rule(finals, self.at, lambda a, b: float(self.cos[a, b]), setting)
        ranked = sorted(idx, key=lambda i: (-finals[i], self.keys[i]))
        return [self.keys[i] for i in ranked]

    def cases(self, share: float, rate: float, setting: Setting) -> list[tuple[bool, bool, bool]]:
        """Per case: current above superseded, current first, control answer first."""
        out = []
        for q, r, c, rc in zip(self.data["questions"], self.rel, self.data["controls"], self.ctl, strict=True):
            order = self.order(r, share, rate, setting)
            above = order.index(q["current"]) < order.index(q["superseded"])
            out.append((above, order[0] == q["current"], self.order(rc, share, rate, setting)[0] == c["answer"]))
        return out


def loo(per: dict[Setting, list[tuple[bool, bool, bool]]]) -> list[tuple[Setting, tuple[bool, bool, bool]]]:
    """For each held-out case: the setting best on the others (recency + control right; ties: acting least)."""
    n = len(next(iter(per.values())))

    def caution(s: Setting) -> tuple[float, float]:
        return (2.0 if s[0] is None else s[0], s[1])

    out = []
    for h in range(n):
        best = max(per, key=lambda s: (sum(a + c for i, (a, _f, c) in enumerate(per[s]) if i != h), caution(s)))
        out.append((best, per[best][h]))
    return out


def label(s: Setting) -> str:
    return "off" if s[0] is None else f"cosine >= {s[0]:g}, ratio {s[1]:g}"


# ------------------------------------------------------------------ LoCoMo


def locomo(data_dir: Path, settings: list[Setting], temporal_grid: list[tuple[float, float]]) -> tuple[dict, dict]:
    """Recall@10 and @1 per conversation under each rule setting, for turns as turns, the rule acting on turns
    too, and turns stored as plain memories; and the mean recall@10 of the default under each (share, rate)."""
    sys.path.insert(0, str(BENCH / "recall"))  # ranking_loo's signals and fusions, as that script computes them
    import ranking_loo as R

    from bench.recall._locomo_signals import CACHE_DIR, load_turns, unit
    from langgraph_memory.search.ranking import calculate_final_score

    qs, names = R.load(data_dir)
    convs = np.array([q.question.conv for q in qs])
    emb = CachedEmbeddings(SentenceTransformerEmbeddings(), path=CACHE_DIR / "locomo-embeddings.sqlite")
    cos = {}
    for f in sorted(data_dir.glob("*.json")):
        vecs = unit(np.asarray(emb.embed_documents([t.text for t in load_turns(json.loads(f.read_text()))])))
        cos[f.stem] = vecs @ vecs.T
    d = HybridRanking()
    base = R.absolute("noisy-or", d.keyword_weight, R.kw_hill(d.keyword_half, 2.0))
    as_turns = R.ranking(base, radius=d.neighbours, alpha=d.neighbour_weight, rule="abs")
    as_plain = R.ranking(base)

    def per_conv(fusion: Callable, setting: Setting) -> dict[str, tuple[float, float]]:
        r10, r1 = np.empty(len(qs)), np.empty(len(qs))
        for i, q in enumerate(qs):
            c = cos[q.question.conv]
            s = apply_rule(fusion(q), q.at, lambda a, b, c=c: float(c[a, b]), setting)
            top = [q.ids[j] for j in np.lexsort((-q.cos, -s))[:10] if np.isfinite(s[j])]
            ev = q.question.evidence
            r10[i], r1[i] = len(set(top) & ev) / len(ev), len(set(top[:1]) & ev) / len(ev)
        return {n: (float(r10[convs == n].mean()), float(r1[convs == n].mean())) for n in names}

    rule = {}
    for s in settings:
        off = (None, 0.0)
        turns = per_conv(as_turns, off)
        rule[s] = {
            "turns (the library: the rule leaves turns alone)": turns,
            "turns, if the rule acted on them": per_conv(as_turns, s) if s[0] is not None else turns,
            "turns stored as plain memories": per_conv(as_plain, s),
        }
    grid = {}
    for share, rate in temporal_grid:
        cfg = TemporalConfig(episodic_memory_decay=rate)
        for q in qs:
            q.temporal = np.array(
                [
                    calculate_final_score(1.0, age_hours=(q.last - at) / 3600.0, config=cfg, temporal_share=share)
                    for at in q.at
                ]
            )
        r = R.metrics(qs, as_turns)["r@10"]
        grid[(share, rate)] = float(np.mean([r[convs == c].mean() for c in names]))
    return rule, grid


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
    share, rate = default.temporal_share, default.temporal.episodic_memory_decay
    n = len(data["questions"])

    # 1. The rule's settings, at the default's temporal weighting, chosen by leave-one-case-out.
    settings: list[Setting] = [(None, 0.0)] + [(t, r) for t in THRESHOLDS if t is not None for r in RATIOS]
    per = {s: bench.cases(share, rate, s) for s in settings}
    held = loo(per)
    chosen = [s for s, _r in held]
    most = max(set(chosen), key=chosen.count)
    rows = [
        [
            label(s),
            f"{sum(a for a, _f, _c in r)}/{n}",
            f"{sum(f for _a, f, _c in r)}/{n}",
            f"{sum(c for *_x, c in r)}/{n}",
        ]
        for s, r in per.items()
    ]
    t_grid = markdown_table(
        ["rule", "current above superseded", "current first", "control first"], rows, [False, True, True, True]
    )
    case_rows = []
    for q, c, (s, (a, f, k)), off in zip(data["questions"], data["controls"], held, per[(None, 0.0)], strict=True):
        case_rows.append(
            [q["current"][:3], q["kind"], q["question"], label(s), "yes" if a else "NO", "yes" if f else "no",
             "yes" if off[0] else "no", c["question"], "yes" if k else "NO", "yes" if off[2] else "no"]
        )  # fmt: skip
    t_cases = markdown_table(
        ["case", "kind", "recency question", "setting chosen on the other 31", "current above (held out)",
         "current first", "above, rule off", "control question", "control first (held out)", "control first, rule off"],
        case_rows,
        [False] * 10,
    )  # fmt: skip
    loo_above = sum(a for _s, (a, _f, _c) in held)
    loo_ctl = sum(c for _s, (_a, _f, c) in held)
    loo_line = (
        f"Leave one case out: current above superseded in {loo_above}/{n} held-out cases ({loo_above / n:.1%}),"
        f" control first in {loo_ctl}/{n}; rule off: {sum(a for a, _f, _c in per[(None, 0.0)])}/{n} and"
        f" {sum(c for *_x, c in per[(None, 0.0)])}/{n}. Chosen most often: {label(most)}"
        f" ({chosen.count(most)} of {n} folds); every fold's choice: "
        + ", ".join(f"{label(s)} x{chosen.count(s)}" for s in sorted(set(chosen), key=chosen.count, reverse=True))
    )
    print(t_grid, t_cases, loo_line, sep="\n\n", flush=True)

    # 2. What it costs on LoCoMo, per conversation; and the temporal grid without the rule.
    temporal_grid = [(s, r) for s in SHARES for r in RATES if s or r == RATES[0]]
    rule, grid = locomo(Path(args.data), [(None, 0.0), most], temporal_grid)
    names = list(next(iter(rule[(None, 0.0)].values())))
    cost_rows = []
    for variant in rule[most]:
        before, after = rule[(None, 0.0)][variant], rule[most][variant]
        cost_rows.append(
            [variant, *(f"{before[c][0]:.3f} -> {after[c][0]:.3f} ({after[c][0] - before[c][0]:+.3f})" for c in names),
             *(f"{after[c][1] - before[c][1]:+.3f}" for c in names)]
        )  # fmt: skip
    t_cost = markdown_table(
        ["LoCoMo turns stored as", *(f"{c} r@10" for c in names), *(f"{c} r@1 change" for c in names)],
        cost_rows,
        [False] * (2 * len(names) + 1),
    )
    no_temporal = grid[(0.0, RATES[0])]
    trows = []
    for s, r in temporal_grid:
        res = bench.cases(s, r, (None, 0.0))
        trows.append(
            [f"{s:g}", "-" if s == 0 else f"{r:g}", f"{sum(a for a, _f, _c in res) / n:.1%}",
             f"{sum(f for _a, f, _c in res) / n:.1%}", f"{grid[(s, r)]:.3f}", f"{grid[(s, r)] - no_temporal:+.3f}"]
        )  # fmt: skip
    t_temporal = markdown_table(
        ["temporal share", "episodic rate /h", "current above superseded", "current first",
         "LoCoMo r@10 (mean of 5)", "against no temporal"],
        trows,
        [True] * 6,
    )  # fmt: skip
    print(t_cost, t_temporal, sep="\n\n", flush=True)

    # 3. The library's default through the store, and the default with the setting chosen most often.
    summary = []
    for ranking in (default, dataclasses.replace(default, supersede_similarity=most[0], supersede_ratio=most[1])):
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
            else f"cosine >= {ranking.supersede_similarity:g}, ratio {ranking.supersede_ratio:g}"
        )
        name = (
            "`HybridRanking()`"
            if ranking is default
            else "`HybridRanking()` with the rule at the setting chosen most often"
        )
        summary.append(
            f"Through the store with {name} (temporal share {share:g}, episodic rate {rate:g}/h; older"
            f" near-duplicates below newer: {rule}), limit {LIMIT}: current above superseded in {above}/{n} questions"
            f" ({above / n:.1%}), first in {first}/{n} ({first / n:.1%}), control answer first in {ctl}/{n}; by kind: "
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
            f"## Older near-duplicates below newer ones, at the default temporal weighting (share {share:g},"
            f" rate {rate:g}/h)\n\n" + t_grid + "\n\n" + loo_line + "\n\n### Every case, held out\n\n" + t_cases
            + f"\n\n### What the setting chosen most often ({label(most)}) costs on LoCoMo (recall@10 without ->"
            " with the rule, and the change in recall@1)\n\n" + t_cost
            + "\n\n## Temporal weighting alone (the rule off)\n\n" + t_temporal
            + "\n\n## Through the store\n\n" + "\n\n".join(summary)
            + "\n\nMachine:\n" + "\n".join(mach.lines()) + "\n"
        )  # fmt: skip


if __name__ == "__main__":
    main()
