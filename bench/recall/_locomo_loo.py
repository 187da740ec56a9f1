"""Leave-one-conversation-out choice of a ranking design on LoCoMo (used by ``locomo_bench.py --loo``).

A *design* is what is stored for a turn (its views: :mod:`_locomo_signals`)
plus a fusion family with a grid of settings. For each held-out
conversation the setting is chosen on the other four (pooled recall@10 over
their questions), then scored on the held-out one; the design's figure is
the five held-out scores. A "best design" row chooses the stored text too,
fold by fold, so nothing reported for a conversation was chosen on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.recall._locomo_signals import Signals, Turn
from langgraph_memory.search.ranking import calculate_final_score

K = 10
CANDIDATES = 20  # the library's HybridRanking.candidates
TEMPORAL_SHARE = 0.1  # the library's default; every hybrid variant keeps it so all compare with the default

#: A fusion: (signals, temporal factor per turn) -> a score per turn (-inf: not a candidate).
Fusion = Callable[[Signals, np.ndarray], np.ndarray]


def _top(x: np.ndarray, k: int, positive: bool = False) -> np.ndarray:
    idx = np.argsort(-x, kind="stable")[:k]
    return idx[x[idx] > 0] if positive else idx


def candidates(s: Signals, extra: Sequence[str] = ()) -> np.ndarray:
    """The library's candidate pool: the vector search's top 20 and the keyword search's top 20 (plus other dense lists)."""
    mask = np.zeros(len(s.cosine), dtype=bool)
    mask[_top(s.cosine, CANDIDATES)] = True
    mask[_top(s.bm25, CANDIDATES, positive=True)] = True
    for name in extra:
        mask[_top(s.extra[name], CANDIDATES)] = True
    return mask


def noisy_or(sim: np.ndarray, kw: np.ndarray, w: float) -> np.ndarray:
    sim = np.clip(sim, 0, 1)
    return sim + (1 - sim) * w * np.clip(kw, 0, 1)


def relative_kw(s: Signals, mask: np.ndarray) -> np.ndarray:
    top = s.bm25[mask].max(initial=0.0)
    return s.bm25 / top if top > 0 else np.zeros_like(s.bm25)


def absolute_kw(s: Signals, _mask: np.ndarray) -> np.ndarray:
    return np.minimum(1.0, s.bm25 / s.mass) if s.mass > 0 else np.zeros_like(s.bm25)


def share_kw(full: float) -> Callable[[Signals, np.ndarray], np.ndarray]:
    """Keyword evidence 1 at ``full`` of the query's idf mass (absolute_kw is ``full = 1``)."""

    def kw(s: Signals, _mask: np.ndarray) -> np.ndarray:
        return np.minimum(1.0, s.bm25 / (full * s.mass)) if s.mass > 0 else np.zeros_like(s.bm25)

    return kw


def _finish(score: np.ndarray, mask: np.ndarray, temporal: np.ndarray) -> np.ndarray:
    return np.where(mask, score * temporal, -np.inf)


def fusion_noisy_or(w: float, kw: Callable[[Signals, np.ndarray], np.ndarray], static: float = 0.0) -> Fusion:
    """Noisy-or of a dense similarity and keyword evidence; ``static`` mixes the static model's cosine in."""

    def f(s: Signals, temporal: np.ndarray) -> np.ndarray:
        mask = candidates(s, ("static",) if static else ())
        sim = s.cosine if not static else (1 - static) * s.cosine + static * s.extra["static"]
        return _finish(noisy_or(sim, kw(s, mask), w), mask, temporal)

    return f


def fusion_weighted(lam: float, static: float = 0.0) -> Fusion:
    """``(1 - lam) * cosine + lam * absolute keyword evidence``."""

    def f(s: Signals, temporal: np.ndarray) -> np.ndarray:
        mask = candidates(s, ("static",) if static else ())
        sim = s.cosine if not static else (1 - static) * s.cosine + static * s.extra["static"]
        return _finish((1 - lam) * np.clip(sim, 0, 1) + lam * absolute_kw(s, mask), mask, temporal)

    return f


def fusion_rrf(k: float, static: bool = False) -> Fusion:
    """Reciprocal-rank fusion of the vector, keyword (and static) lists, within the candidates."""

    def f(s: Signals, temporal: np.ndarray) -> np.ndarray:
        mask = candidates(s, ("static",) if static else ())
        score = np.zeros(len(s.cosine))
        lists = [s.cosine, np.where(s.bm25 > 0, s.bm25, -np.inf)] + ([s.extra["static"]] if static else [])
        for x in lists:
            x = np.where(mask, x, -np.inf)
            order = np.argsort(-x, kind="stable")
            ranks = np.empty(len(x))
            ranks[order] = np.arange(len(x))
            score += np.where(np.isfinite(x), 1.0 / (k + ranks + 1), 0.0)
        return _finish(score, mask, temporal)

    return f


def by_cosine(s: Signals, _t: np.ndarray) -> np.ndarray:
    return s.cosine.copy()


def by_static(s: Signals, _t: np.ndarray) -> np.ndarray:
    return s.extra["static"].copy()


def by_bm25(s: Signals, _t: np.ndarray) -> np.ndarray:
    # Ties (and turns without a query word) follow the cosine, as the library's keyword ranking does.
    return s.bm25 + 1e-6 * s.cosine


@dataclass
class Design:
    family: str
    views: str  # name of the stored-text variant
    grid: dict[str, Fusion]  # setting label -> fusion


def temporal_factors(turns: list[Turn], now: float) -> np.ndarray:
    """The default temporal weighting of each turn "as of" ``now`` (episodic, never read)."""
    return np.array(
        [calculate_final_score(1.0, age_hours=(now - t.at) / 3600.0, temporal_share=TEMPORAL_SHARE) for t in turns]
    )


def recalls(
    sigs: list[Signals], fusion: Fusion, turns: dict[str, list[Turn]], temporal: dict[str, np.ndarray]
) -> np.ndarray:
    """recall@10 of every question."""
    out = np.empty(len(sigs))
    for i, s in enumerate(sigs):
        score = fusion(s, temporal[s.question.conv])
        top = np.argsort(-score, kind="stable")[:K]
        ids = {turns[s.question.conv][j].dia_id for j in top if np.isfinite(score[j])}
        out[i] = len(ids & s.question.evidence) / len(s.question.evidence)
    return out


def threshold(
    sigs: list[Signals],
    fusion: Fusion,
    turns: dict[str, list[Turn]],
    temporal: dict[str, np.ndarray],
    min_relevance: float = 0.3,
) -> tuple[float, float, float, float, float]:
    """What the relevance rule does to the top 10: results kept per question, those kept only by keyword
    evidence (their cosine alone would not pass), questions left with none,
    recall@10 before and after the rule."""
    kept, by_keyword, empty, before, after = [], [], 0, [], []
    for s in sigs:
        score = fusion(s, temporal[s.question.conv])
        top = [j for j in np.argsort(-score, kind="stable")[:K] if np.isfinite(score[j])]
        ok = [j for j in top if score[j] >= min_relevance]
        kept.append(len(ok))
        by_keyword.append(sum(s.cosine[j] * temporal[s.question.conv][j] < min_relevance for j in ok))
        empty += not ok
        ev = s.question.evidence
        before.append(len({turns[s.question.conv][j].dia_id for j in top} & ev) / len(ev))
        after.append(len({turns[s.question.conv][j].dia_id for j in ok} & ev) / len(ev))
    return (
        float(np.mean(kept)),
        float(np.mean(by_keyword)),
        empty / len(sigs),
        float(np.mean(before)),
        float(np.mean(after)),
    )


@dataclass
class LooResult:
    design: str
    held_out: dict[str, float]  # conversation -> recall@10 with the setting chosen on the others
    chosen: dict[str, str]  # conversation -> the setting chosen without it
    pooled: float  # over all questions, each scored by its own fold's setting

    @property
    def mean(self) -> float:
        return sum(self.held_out.values()) / len(self.held_out)


def leave_one_out(
    label: str, per_setting: dict[str, np.ndarray], convs_of: np.ndarray, names: Sequence[str]
) -> LooResult:
    """Choose the setting on four conversations (pooled recall@10), score it on the fifth; for each fold."""
    held, chosen = {}, {}
    pooled = np.empty(len(convs_of))
    for h in names:
        train, test = convs_of != h, convs_of == h
        best = max(per_setting, key=lambda k: (round(per_setting[k][train].mean(), 9), -list(per_setting).index(k)))
        held[h] = float(per_setting[best][test].mean())
        chosen[h] = best
        pooled[test] = per_setting[best][test]
    return LooResult(label, held, chosen, float(pooled.mean()))


def fmt(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.3f}"


# --------------------------------------------------------------------- driver


#: Fusions whose top 10 the relevance rule is measured on.
THRESHOLD_FUSIONS: dict[str, Fusion] = {
    "today's default: noisy-or w = 0.6, keyword / best candidate's": fusion_noisy_or(0.6, relative_kw),
    "noisy-or w = 0.6, keyword / query's idf mass": fusion_noisy_or(0.6, absolute_kw),
    "noisy-or w = 1.0, keyword / query's idf mass": fusion_noisy_or(1.0, absolute_kw),
    "noisy-or w = 0.8, keyword / (0.5 x query's idf mass)": fusion_noisy_or(0.8, share_kw(0.5)),
}


def _grids() -> list[tuple[str, dict[str, Fusion]]]:
    ws = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    return [
        (
            "noisy-or, keyword / best candidate's (today's scaling)",
            {f"w={w}": fusion_noisy_or(w, relative_kw) for w in ws},
        ),
        ("noisy-or, keyword / query's idf mass", {f"w={w}": fusion_noisy_or(w, absolute_kw) for w in ws}),
        (
            "noisy-or, keyword / (share of the query's idf mass)",
            {f"w={w}, share={g}": fusion_noisy_or(w, share_kw(g)) for w in ws for g in (0.75, 0.6, 0.5)},
        ),
        (
            "weighted sum, keyword / query's idf mass",
            {f"lambda={lam}": fusion_weighted(lam) for lam in (0.3, 0.4, 0.5, 0.6, 0.7)},
        ),
        ("RRF", {f"k={k}": fusion_rrf(k) for k in (1, 5, 10, 30, 60)}),
        (
            "noisy-or, idf mass, + static model",
            {f"w={w}, static={a}": fusion_noisy_or(w, absolute_kw, a) for w in ws for a in (0.25, 0.5, 0.75)},
        ),
        ("RRF + static model", {f"k={k}": fusion_rrf(k, static=True) for k in (1, 5, 10, 30, 60)}),
    ]


def loo_main(data: Path, *, write: bool, results: Path) -> None:
    import json
    import os
    import time

    from bench.common.report import git_state, machine, markdown_table
    from bench.recall._locomo_signals import (
        CACHE_DIR,
        Question,
        compute,
        dated,
        load_turns,
        plain,
        unit,
        window,
    )
    from bench.recall._static_model import StaticEmbeddings
    from langgraph_memory.embeddings import (
        CachedEmbeddings,
        SentenceTransformerEmbeddings,
    )

    categories = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
    files = sorted(data.glob("*.json"))
    if not files:
        raise SystemExit(f"no LoCoMo files in {data}")
    raw = {f.stem: json.loads(f.read_text()) for f in files}
    turns = {name: load_turns(conv) for name, conv in raw.items()}
    names = list(turns)
    asked = [
        Question(name, categories[qa["category"]], {e.strip() for e in qa["evidence"]}, qa["question"])
        for name, conv in raw.items()
        for qa in conv["qa"]
        if qa.get("category") in categories and qa.get("evidence")
    ]
    convs_of = np.array([q.conv for q in asked])
    temporal = {c: temporal_factors(ts, max(t.at for t in ts)) for c, ts in turns.items()}
    mach = machine(["sentence-transformers", "langgraph"])

    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    minilm = CachedEmbeddings(SentenceTransformerEmbeddings(), path=CACHE_DIR / "locomo-embeddings.sqlite")
    static = StaticEmbeddings()

    def embed_minilm(texts: list[str]) -> np.ndarray:
        return unit(np.asarray(minilm.embed_documents(texts), dtype=np.float32))

    qvecs = unit(np.asarray(minilm.embed_documents([q.text for q in asked]), dtype=np.float32))
    qstatic = static.embed([q.text for q in asked])
    view_sets = {
        "turn": plain,
        "turn, dated": dated,
        "previous turn + turn": window(1, 0),
        "previous + turn + next": window(1, 1),
        "turn, and previous + turn + next (2 vectors)": window(1, 1, keep_plain=True),
        "turn, and previous turn + turn (2 vectors)": window(1, 0, keep_plain=True),
        "embedded: turn; keyword-indexed: previous turn + turn": (plain, window(1, 0)),
        "embedded: previous turn + turn; keyword-indexed: turn": (window(1, 0), plain),
        "embedded: turn, and previous turn + turn; keyword-indexed: turn": (window(1, 0, keep_plain=True), plain),
        "embedded: turn, and previous + turn + next; keyword-indexed: turn": (window(1, 1, keep_plain=True), plain),
        # "previous + turn + next, dated": window(1, 1, date=True) was not finished embedding in 30 min here.
    }
    sigs = {}
    for label, views in view_sets.items():
        sigs[label] = compute(
            turns, asked, views, embed_minilm, qvecs, length_norm=0.3, extra={"static": (static.embed, qstatic)}
        )
    prep_s = time.perf_counter() - started

    rows: list[LooResult] = []
    every: dict[str, np.ndarray] = {}  # "views | family | setting" -> recall@10 per question
    plain_sigs = sigs["turn"]
    bm25 = recalls(plain_sigs, by_bm25, turns, temporal)
    base = {
        "BM25 alone (b = 0.3)": bm25,
        "dense alone (MiniLM)": recalls(plain_sigs, by_cosine, turns, temporal),
        "dense alone (static model)": recalls(plain_sigs, by_static, turns, temporal),
        "today's default (noisy-or w = 0.6, relative keyword, temporal)": recalls(
            plain_sigs, fusion_noisy_or(0.6, relative_kw), turns, temporal
        ),
    }
    for label, r in base.items():
        rows.append(leave_one_out(label, {"-": r}, convs_of, names))
    for views_label, ss in sigs.items():
        for family, grid in _grids():
            per = {k: recalls(ss, f, turns, temporal) for k, f in grid.items()}
            for k, r in per.items():
                every[f"{views_label} | {family} | {k}"] = r
            rows.append(leave_one_out(f"{family}; stored: {views_label}", per, convs_of, names))
    for views_label in (
        "turn",
        "turn, and previous turn + turn (2 vectors)",
        "turn, and previous + turn + next (2 vectors)",
    ):
        r = recalls(sigs[views_label], fusion_noisy_or(1.0, absolute_kw), turns, temporal)
        rows.append(
            leave_one_out(
                f"the new default, fixed (noisy-or w = 1.0, keyword / query's idf mass, temporal);"
                f" stored: {views_label}",
                {"-": r},
                convs_of,
                names,
            )
        )
    # Query-time ideas (neighbour propagation, feedback, BM25 variants, z-score fusion): _locomo_ideas.
    from bench.recall import _locomo_ideas

    ranker, ideas_qs = _locomo_ideas.prepare(turns, asked, embed_minilm, qvecs, temporal)
    for label, per in _locomo_ideas.run(ranker, ideas_qs, turns):
        for k, r in per.items():
            every[f"{label} | {k}"] = r
        rows.append(leave_one_out(f"query time: {label}", per, convs_of, names))
        print(f"  {rows[-1].mean:.3f} {label}", flush=True)
    best = leave_one_out("best design, chosen per fold (stored text, fusion and setting)", every, convs_of, names)
    rows.append(best)

    rule_rows = []
    for label, f in THRESHOLD_FUSIONS.items():
        kept, by_kw, none, before, after = threshold(plain_sigs, f, turns, temporal)
        rule_rows.append([label, f"{kept:.2f}", f"{by_kw:.2f}", f"{none:.1%}", fmt(before), fmt(after)])
    t3 = markdown_table(
        [
            "fusion (stored: turn)",
            "results >= 0.3 of the top 10",
            "of which cosine < 0.3",
            "questions with none",
            "recall@10",
            "recall@10 of the results >= 0.3",
        ],
        rule_rows,
        [False, True, True, True, True, True],
    )

    bm_conv = {c: float(bm25[convs_of == c].mean()) for c in names}
    header = ["design (setting chosen on the other four)", *names, "mean of 5", "all questions", "least gain over BM25"]
    table = []
    for r in rows:
        gain = min(r.held_out[c] - bm_conv[c] for c in names)
        table.append([r.design, *(fmt(r.held_out[c]) for c in names), fmt(r.mean), fmt(r.pooled), f"{gain:+.3f}"])
    chosen_header = ["design", *names]
    chosen = [
        [r.design, *(r.chosen[c] for c in names)]
        for r in rows
        if len(set(r.chosen.values())) > 1 or next(iter(r.chosen.values())) != "-"
    ]
    mach.load_end = os.getloadavg()
    mach.code = git_state(Path(__file__).resolve().parents[2], ["langgraph_memory", "bench"])
    title = (
        f"Leave one conversation out: recall@10 on each held-out conversation ({len(asked)} questions,"
        f" {sum(len(t) for t in turns.values())} turns)"
    )
    t1 = markdown_table(header, table, [False] + [True] * (len(header) - 1))
    t2 = markdown_table(chosen_header, chosen, [False] * len(chosen_header))
    print(title)
    print(t1)
    print("\nSettings chosen per held-out conversation")
    print(t2)
    print("\nThe 30% relevance rule on the top 10")
    print(t3)
    print(f"\nsignals of {len(view_sets)} stored-text variants in {prep_s:.1f} s")
    print("\n".join(mach.lines()))
    if write:
        _write_loo(results, title, t1, t2 + "\n\n### The 30% relevance rule on the top 10\n\n" + t3, mach.lines())


def _write_loo(results: Path, title: str, table: str, chosen: str, machine_lines: list[str]) -> None:
    start, end = "<!-- loo -->", "<!-- /loo -->"
    text = (
        results.read_text() if results.exists() else "# LoCoMo retrieval quality (`bench/recall/locomo_bench.py`)\n\n"
    )
    body = "\n".join(
        [
            start,
            f"## {title}",
            "",
            (
                "Command: `python bench/recall/locomo_bench.py --loo --write`. Each cell is scored on a conversation"
                " with the setting chosen on the other four."
            ),
            "",
            table,
            "",
            "### Settings chosen per held-out conversation",
            "",
            chosen,
            "",
            "Machine:",
            *machine_lines,
            end,
        ]
    )
    if start in text and end in text:
        text = text[: text.index(start)] + body + text[text.index(end) + len(end) :]
    elif "<!-- tables -->" in text:
        text = text.replace("<!-- tables -->", body + "\n\n<!-- tables -->", 1)
    else:
        text += "\n" + body + "\n"
    results.write_text(text)
