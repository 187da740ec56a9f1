"""Designs for recency tried on their own: which rule puts the current fact first without costing LoCoMo?

    PYTHONPATH=. .venv/bin/python bench/recall/recency/designs_bench.py [--data ../shared/data/locomo] [--write]

Each design is a way of putting an older result below a newer one, applied to
the same relevances as ``recency_bench.py`` (the recency benchmark's 32 cases
and controls) and to LoCoMo's turns stored as plain memories (the rule never
acts on conversation turns, so turns stored as turns only see the temporal
share). Each family's settings are chosen by leave-one-case-out on the recency
benchmark (ties: the rule acting least), at the earlier default's temporal
share (0.2) and without temporal decay (share 0); the setting chosen most often
is then run on LoCoMo per conversation, against the same ranking without
temporal weighting. Designs:

* ``cosine``: the opt-in rule before: any newer result whose vector's cosine
  with the older's is at least ``t`` and which scores at least ``ratio`` of it;
* ``tie-break``: the newer wins whenever it scores within ``1 - ratio`` of the
  older, whatever the two say (recency as a tie-breaker within a margin);
* ``cover query``: ``cosine``, and the newer holds every query term the older
  holds (the newer covers the older's query evidence);
* ``pair keywords``: ``cosine``, and the two share at least ``c`` of their
  words (Jaccard of their index terms);
* ``within the first 10, just below``: ``cosine``, only between results of the
  first ten, the older put just below the newer (so it hardly ever leaves them);
* ``mutual`` (the library's rule): ``cosine``, and the two are each other's
  closest match across time: of the results newer than the older, the newer is
  the most like it, and of the results older than the newer, the older is.

Prints one block per design and share (``--write``: also to
``bench/results/RESULTS_recency_designs.md``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # the checkout: its langgraph_memory and bench.common
from bench.common.report import machine  # noqa: E402
from bench.recall._locomo_signals import load_turns  # noqa: E402
from bench.recall.recency import _recency as RB  # noqa: E402
from langgraph_memory.catalog.keywords import index_terms, query_terms  # noqa: E402
from langgraph_memory.search.ranking import NEWER_FLOOR, NEWER_MARGIN  # noqa: E402

OUT = HERE.parents[1] / "results" / "RESULTS_recency_designs.md"
LIMIT = 10
LINES: list[str] = []


def say(line: str) -> None:
    print(line, flush=True)
    LINES.append(line)


RATE = 0.005
Design = dict  # t, ratio, and the design's own keys


def terms_of(query: str) -> set[str]:
    """The query's words as the keyword index stems them."""
    return set(index_terms(" ".join(query_terms(query))))


def rule(
    finals: np.ndarray, at: np.ndarray, cos: np.ndarray, terms: list[set[str]], qterms: set[str], p: Design | None
) -> np.ndarray:
    """``finals`` after the design ``p`` (None: unchanged), over the results that can change the first LIMIT."""
    if p is None:
        return finals
    finite = np.flatnonzero(np.isfinite(finals))
    if len(finite) < 2:
        return finals
    ranked = np.sort(finals[finite])[::-1]
    ratio, t = p["ratio"], p["t"]
    if p.get("window"):
        pool = finite[finals[finite] >= max(NEWER_FLOOR, ranked[min(p["window"], len(finite)) - 1])]
    else:
        pool = finite[finals[finite] >= max(NEWER_FLOOR, ranked[min(LIMIT, len(finite)) - 1] * ratio)]
    if len(pool) < 2:
        return finals
    f, ts = finals[pool].tolist(), at[pool].tolist()
    c = cos[np.ix_(pool, pool)]
    n = len(pool)
    newer, older = [None] * n, [None] * n
    if p.get("mutual"):
        for a in range(n):
            # Ties (copies of one text) go to the nearest in time, as the library breaks them.
            later = sorted((b for b in range(n) if ts[b] > ts[a]), key=lambda b: ts[b])
            if later:
                newer[a] = max(later, key=lambda b: c[a, b])
            earlier = sorted((b for b in range(n) if ts[b] < ts[a]), key=lambda b: -ts[b])
            if earlier:
                older[a] = max(earlier, key=lambda b: c[a, b])
    out = [(x, None) for x in f]
    order = sorted(range(n), key=lambda i: -ts[i])
    for pos, i in enumerate(order):
        own = out[i][0]
        best = (own, None)
        for j in order[:pos]:
            if own <= 0 or ts[j] <= ts[i] or out[j][0] < ratio * own or c[i, j] < t:
                continue
            if p.get("mutual") and (newer[i] != j or older[j] != i):
                continue
            a, b = terms[pool[i]], terms[pool[j]]
            if p.get("cover") and not (a & qterms) <= (b & qterms):
                continue
            if p.get("pair") is not None and len(a & b) / max(1, len(a | b)) < p["pair"]:
                continue
            if p.get("just"):
                below = out[j][0] * (1.0 - 1e-4 * min(1.0, out[j][0] / own))
            else:
                below = out[j][0] * NEWER_MARGIN * (1.0 - (out[j][0] / own - ratio) / 2.0)
            if below < best[0]:
                best = (below, j)
        out[i] = best
    res = finals.copy()
    res[pool] = [x for x, _ in out]
    return res


class Recency:
    def __init__(self) -> None:
        data = json.loads(RB.DATA.read_text())
        self.data, self.keys = data, [m["key"] for m in data["memories"]]
        vecs = np.asarray(RB.embedder().embed_documents([m["text"] for m in data["memories"]]), dtype=np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        self.cos = vecs @ vecs.T
        self.at = np.array([RB.NOW - m["days_ago"] * 86400.0 for m in data["memories"]])
        self.terms = [set(index_terms(m["text"])) for m in data["memories"]]
        store = RB.load_store(Path(tempfile.mkdtemp(prefix="lgm-designs-")), data)
        self.rel = RB.relevances(store, [q["question"] for q in data["questions"]])
        self.ctl = RB.relevances(store, [c["question"] for c in data["controls"]])
        store.close()

    def _first(self, question: str, rel: dict[str, float], share: float, p: Design | None) -> list[str]:
        idx = [self.keys.index(k) for k in rel]
        fin = np.full(len(self.keys), -np.inf)
        for k, i in zip(rel, idx, strict=True):
            fin[i] = rel[k] * (1 - share + share * math.exp(-RATE * (RB.NOW - self.at[i]) / 3600.0))
        fin = rule(fin, self.at, self.cos, self.terms, terms_of(question), p)
        return [self.keys[i] for i in sorted(idx, key=lambda i: (-fin[i], self.keys[i]))]

    def cases(self, share: float, p: Design | None) -> list[tuple[bool, bool, bool]]:
        out = []
        qs, cs = self.data["questions"], self.data["controls"]
        for q, r, c, rc in zip(qs, self.rel, cs, self.ctl, strict=True):
            o = self._first(q["question"], r, share, p)
            oc = self._first(c["question"], rc, share, p)
            out.append((o.index(q["current"]) < o.index(q["superseded"]), o[0] == q["current"], oc[0] == c["answer"]))
        return out


class Plain:
    """LoCoMo's turns stored as plain memories (the library's fusion, no neighbours), per conversation."""

    def __init__(self, data_dir: Path) -> None:
        self.loc = RB.LoCoMo(data_dir)
        self.terms = {
            f.stem: [set(index_terms(t.text)) for t in load_turns(json.loads(f.read_text()))]
            for f in sorted(data_dir.glob("*.json"))
        }
        self.qterms = [terms_of(q.question.text) for q in self.loc.qs]
        self.fusion = self.loc.fusions["turns stored as plain memories"]

    def recall(self, share: float, p: Design | None) -> dict[str, tuple[float, float]]:
        self.loc.set_temporal(share, RATE)
        r10, r1 = np.empty(len(self.loc.qs)), np.empty(len(self.loc.qs))
        for i, q in enumerate(self.loc.qs):
            n = q.question.conv
            s = rule(self.fusion(q), q.at, self.loc.cos[n], self.terms[n], self.qterms[i], p)
            top = [q.ids[j] for j in np.lexsort((-q.cos, -s))[:10] if np.isfinite(s[j])]
            ev = q.question.evidence
            r10[i], r1[i] = len(set(top) & ev) / len(ev), len(set(top[:1]) & ev) / len(ev)
        convs = self.loc.convs
        return {c: (float(r10[convs == c].mean()), float(r1[convs == c].mean())) for c in self.loc.names}


def family(
    name: str, grid: list[Design], rec: Recency, plain: Plain, share: float, caution: Callable[[Design], tuple]
) -> None:
    per = {"off": rec.cases(share, None)} | {json.dumps(p): rec.cases(share, p) for p in grid}
    n = len(per["off"])
    held = []
    for h in range(n):
        best = max(
            per,
            key=lambda s: (
                sum(a + c for i, (a, _f, c) in enumerate(per[s]) if i != h),
                (9.0,) if s == "off" else caution(json.loads(s)),
            ),
        )
        held.append((best, per[best][h]))
    chosen = [s for s, _ in held]
    most = max(set(chosen), key=chosen.count)
    say(f"\n### {name}, temporal share {share:g} ({len(grid)} settings)")
    say(
        f"- held out: current above superseded {sum(a for _, (a, _f, _c) in held)}/{n},"
        f" first {sum(f for _, (_a, f, _c) in held)}/{n}, control first {sum(c for _, (_a, _f, c) in held)}/{n};"
        f" rule off at this share: {sum(a for a, _f, _c in per['off'])}/{n}, control {sum(c for *_x, c in per['off'])}/{n}"
    )
    say(f"- chosen most often ({chosen.count(most)} of {n} folds): {most}")
    if most == "off":
        return
    got, ref = plain.recall(share, json.loads(most)), plain.recall(0.0, None)
    say(
        "- LoCoMo plain memories, recall@10 (against no temporal weighting; recall@1 change): "
        + ", ".join(f"{c} {got[c][0]:.3f} ({got[c][0] - ref[c][0]:+.3f}; {got[c][1] - ref[c][1]:+.3f})" for c in got)
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/work/shared/data/locomo", help="LoCoMo conversations")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    mach = machine(["langgraph"])
    rec, plain = Recency(), Plain(Path(args.data))
    ts = (0.9, 0.8, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4)
    ratios = (0.9, 0.8, 0.7, 0.5, 0.0)

    def plain_caution(p: Design) -> tuple:
        return (p["t"], p["ratio"], p.get("pair", 0.0))

    designs: list[tuple[str, list[Design]]] = [
        ("cosine (the opt-in rule before)", [dict(t=t, ratio=r) for t in ts for r in ratios]),
        ("tie-break within a margin", [dict(t=-1.0, ratio=1 - e) for e in (0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3)]),
        ("cover the older's query terms", [dict(t=t, ratio=r, cover=1) for t in ts for r in ratios]),
        ("pair keywords", [dict(t=t, ratio=r, pair=c) for t in ts for r in ratios for c in (0.1, 0.2, 0.3)]),
        ("within the first 10, just below", [dict(t=t, ratio=r, window=LIMIT, just=1) for t in ts for r in ratios]),
        ("mutual (the library's rule)", [dict(t=t, ratio=r, mutual=1) for t in ts for r in ratios]),
    ]
    for share in (0.2, 0.0):
        for name, grid in designs:
            family(name, grid, rec, plain, share, plain_caution)
    mach.load_end = __import__("os").getloadavg()
    say("\nMachine:\n" + "\n".join(mach.lines()))
    if args.write:
        doc = (__doc__ or "").split("\n\n", 2)[2].split("Prints one block")[0].strip()
        OUT.write_text(
            "# Recency designs (`bench/recall/recency/designs_bench.py`)\n\n" + doc + "\n" + "\n".join(LINES) + "\n"
        )


if __name__ == "__main__":
    main()
