"""Query-time ranking ideas on LoCoMo, each chosen by leave-one-conversation-out (``locomo_bench.py --loo``).

What :mod:`_locomo_loo` compares is mostly what is *stored* for a turn. The
ideas here change only how a search ranks what is stored, so each could ship
as a ranking option:

* **neighbour propagation**: a turn's fused score is raised by the best score
  of its session neighbours (the turn before and after it), i.e. a window is
  retrieved at query time instead of being stored at write time;
* **pseudo-relevance feedback**: RM3-style expansion of the keyword query
  with the commonest rare words of the best first-pass hits, and Rocchio on
  the query vector (the query moved towards the best hits' vectors);
* **BM25 variants**: term frequency counted, other ``b``/``k1``, no stop
  words, adjacent-word bigrams, and fields scored separately (the turn, its
  neighbours, the speaker's name, the session date);
* **fusion**: z-scores of each side over the candidate set instead of keyword
  evidence on the query's idf mass; more candidates a side.

The keyword side is a re-implementation of the library's BM25 (the same
tokens, stems, stop words, idf and length normalisation: checked equal to
:func:`langgraph_memory.catalog.keywords.match` on every question) so that
variants the library does not have can be scored. Every turn of a
conversation gets every signal, then each fusion takes only the library's
candidates (each side's top ``candidates``) unless it says otherwise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
from scipy import sparse

from bench.recall._locomo_signals import Question, Turn
from langgraph_memory.catalog import keywords as _kw

K = 10
_TOKEN = re.compile(r"[^\W_]+")


# ----------------------------------------------------------------- keyword side


def _stems(text: str) -> list[str]:
    return [_kw._stem(_kw._fold(t)) for t in _TOKEN.findall(text.lower())]


class Field:
    """One keyword field over every turn of every conversation: term counts, lengths and document frequencies."""

    def __init__(self, texts: Sequence[str], vocab: dict[str, int], *, bigrams: bool = False) -> None:
        rows, cols, vals, lens = [], [], [], []
        for i, text in enumerate(texts):
            toks = _stems(text)
            lens.append(len(toks))
            terms = toks + ([f"{a} {b}" for a, b in zip(toks, toks[1:], strict=False)] if bigrams else [])
            counts: dict[int, int] = {}
            for t in terms:
                j = vocab.setdefault(t, len(vocab))
                counts[j] = counts.get(j, 0) + 1
            rows += [i] * len(counts)
            cols += list(counts)
            vals += list(counts.values())
        self.n = len(texts)
        self.lens = np.maximum(np.array(lens, dtype=np.float64), 1.0)
        self.avg = float(np.sum(lens)) / self.n if np.sum(lens) else 1.0
        self.rows, self.cols, self.vals = rows, cols, vals
        self.matrix: sparse.csc_matrix | None = None

    def freeze(self, n_terms: int) -> None:
        self.matrix = sparse.csc_matrix(
            (np.array(self.vals, dtype=np.float64), (self.rows, self.cols)), shape=(self.n, n_terms)
        )
        self.df = np.diff(self.matrix.indptr)

    def idf(self, j: int | None) -> float:
        n = 0 if j is None else int(self.df[j])
        return math.log(1 + (self.n - n + 0.5) / (n + 0.5))

    def term_scores(self, j: int | None, *, b: float, k1: float, tf: bool) -> np.ndarray:
        """BM25 of one term for every document (0 where absent)."""
        out = np.zeros(self.n)
        if j is None or self.matrix is None:
            return out
        lo, hi = self.matrix.indptr[j], self.matrix.indptr[j + 1]
        docs, counts = self.matrix.indices[lo:hi], self.matrix.data[lo:hi]
        f = counts if tf else np.ones_like(counts)
        norm = 1 - b + b * self.lens[docs] / self.avg
        out[docs] = self.idf(j) * f * (k1 + 1) / (f + k1 * norm)
        return out


@dataclass(frozen=True)
class Bm25:
    """A keyword scoring: BM25 parameters and what is weighted how."""

    b: float = 0.3
    k1: float = 1.2
    tf: bool = False  # count a term's occurrences (the library counts a term once per memory)
    stop_words: bool = True  # drop the library's stop words from the query
    bigrams: float = 0.0  # weight of adjacent-word pairs of the query
    #: field -> weight; "turn" is the library's stored text ("speaker: text [photo]")
    fields: tuple[tuple[str, float], ...] = (("turn", 1.0),)


class KeywordSide:
    """Every keyword field of every turn, and BM25 under any `Bm25` setting."""

    FIELDS = ("turn", "body", "speaker", "date", "context", "window2")

    def __init__(self, convs: dict[str, list[Turn]]) -> None:
        self.names = list(convs)
        self.offset: dict[str, int] = {}
        texts: dict[str, list[str]] = {f: [] for f in self.FIELDS}
        for c, ts in convs.items():
            self.offset[c] = len(texts["turn"])
            for i, t in enumerate(ts):
                prev = ts[i - 1].text if i > 0 and ts[i - 1].session == t.session else ""
                nxt = ts[i + 1].text if i + 1 < len(ts) and ts[i + 1].session == t.session else ""
                texts["turn"].append(t.text)
                texts["body"].append(t.text[len(t.speaker) + 2 :])
                texts["speaker"].append(t.speaker)
                texts["date"].append(datetime.fromtimestamp(t.at, UTC).strftime("%-d %B %Y"))
                texts["context"].append(f"{prev}\n{nxt}")
                # The library's index of a turn stored with a second field "previous + turn + next".
                texts["window2"].append(
                    "\n".join(dict.fromkeys([t.text, "\n".join(x for x in (prev, t.text, nxt) if x)]))
                )
        self.vocab: dict[str, int] = {}
        self.fields = {f: Field(texts[f], self.vocab) for f in self.FIELDS}
        self.bi_fields = {f: Field(texts[f], self.vocab, bigrams=True) for f in ("turn", "window2")}
        for fl in (*self.fields.values(), *self.bi_fields.values()):
            fl.freeze(len(self.vocab))
        self._cache: dict[tuple, tuple[np.ndarray, float]] = {}

    def query_terms(self, text: str, stop_words: bool) -> list[str]:
        terms = _kw.query_terms(text, _kw.STOP_WORDS if stop_words else frozenset())
        return [_kw._stem(_kw._fold(t)) for t in terms]

    def scores(self, q: Question, s: Bm25) -> tuple[np.ndarray, float]:
        """BM25 of every turn of the question's conversation, and the query's idf mass (on the first field)."""
        key = (q.text, q.conv, s)
        if key in self._cache:
            return self._cache[key]
        terms = self.query_terms(q.text, s.stop_words)
        n = len(self.fields["turn"].lens)
        total, mass = np.zeros(n), 0.0
        for fname, weight in s.fields:
            fl = self.fields[fname]
            for t in terms:
                j = self.vocab.get(t)
                if j is not None and j >= fl.df.shape[0]:
                    j = None
                if fname == s.fields[0][0]:
                    mass += fl.idf(j if j is not None and fl.df[j] else None)
                if weight:
                    total += weight * fl.term_scores(j, b=s.b, k1=s.k1, tf=s.tf)
        if s.bigrams:
            raw = [t for t in _TOKEN.findall(q.text.lower())]
            stems = [_kw._stem(_kw._fold(t)) for t in raw]
            bfield = self.bi_fields["window2" if s.fields[0][0] == "window2" else "turn"]
            for a, b_ in zip(stems, stems[1:], strict=False):
                j = self.vocab.get(f"{a} {b_}")
                if j is not None and j < bfield.df.shape[0] and bfield.df[j]:
                    total += s.bigrams * bfield.term_scores(j, b=s.b, k1=s.k1, tf=s.tf)
        out = total, mass
        self._cache[key] = out
        return out

    def conv_slice(self, conv: str, n: int) -> slice:
        return slice(self.offset[conv], self.offset[conv] + n)

    def expansion_scores(
        self, q: Question, n: int, fb: np.ndarray, weights: np.ndarray, terms_kept: int, s: Bm25
    ) -> np.ndarray:
        """RM3: BM25 of the ``terms_kept`` best expansion terms of the feedback turns ``fb`` (conversation
        positions, weighted by ``weights``), each term weighted by its relevance-model probability."""
        fl = self.fields[s.fields[0][0]]
        assert fl.matrix is not None
        rows = fl.matrix[self.offset[q.conv] + fb]  # feedback docs x terms
        rows = sparse.csr_matrix(rows)
        tf = rows.multiply(1.0 / fl.lens[self.offset[q.conv] + fb][:, None])
        w = np.asarray(tf.multiply(weights[:, None]).sum(0)).ravel()
        if not w.any():
            return np.zeros(n)
        # Rare words only: weight by idf too (a relevance model of short turns is dominated by common words).
        idf = np.log(1 + (fl.n - fl.df + 0.5) / (fl.df + 0.5))
        w = w * idf
        for t in self.query_terms(q.text, True):
            j = self.vocab.get(t)
            if j is not None:
                w[j] = 0.0
        stop_ids = [self.vocab[x] for x in _kw.STOP_WORDS if x in self.vocab]
        w[stop_ids] = 0.0
        top = np.argsort(-w)[:terms_kept]
        top = top[w[top] > 0]
        if not len(top):
            return np.zeros(n)
        probs = w[top] / w[top].sum()
        out = np.zeros(fl.n)
        for j, p in zip(top, probs, strict=True):
            out += p * fl.term_scores(int(j), b=s.b, k1=s.k1, tf=s.tf)
        return out[self.offset[q.conv] : self.offset[q.conv] + n]


# ------------------------------------------------------------------- dense side


@dataclass
class Dense:
    """Unit vectors of every turn of one conversation (one or more views per turn) and their owners."""

    mat: np.ndarray
    owner: np.ndarray
    n: int

    def cosines(self, qvec: np.ndarray) -> np.ndarray:
        # Views are grouped by turn (every turn has at least one): the best of each group.
        starts = np.flatnonzero(np.r_[True, self.owner[1:] != self.owner[:-1]])
        return np.maximum.reduceat(self.mat @ qvec, starts).astype(np.float64)

    def turn_vectors(self) -> np.ndarray:
        """One vector per turn (its first view)."""
        first = np.r_[True, self.owner[1:] != self.owner[:-1]]
        return self.mat[first]


# ---------------------------------------------------------------------- ranking


@dataclass
class Q:
    """One question's inputs to every fusion."""

    question: Question
    qvec: np.ndarray
    n: int
    session: np.ndarray  # session number of each turn
    temporal: np.ndarray


@dataclass(frozen=True)
class Setting:
    """A full ranking setting (every idea's knob; the defaults are the library's ``HybridRanking()``)."""

    w: float = 1.0
    candidates: int = 20
    bm25: Bm25 = field(default_factory=Bm25)
    fusion: str = "noisy-or"  # or "zscore"
    share: float = 1.0  # keyword evidence is 1 at this share of the query's idf mass (noisy-or)
    #: neighbour propagation: score += alpha * best neighbour's score ("cand": among candidates; "pool": the
    #: neighbours of the candidates join the pool; "kw": propagate keyword evidence before fusion)
    alpha: float = 0.0
    propagate: str = "cand"
    radius: int = 1
    #: RM3: feedback turns, expansion terms, weight of the expansion
    rm3: tuple[int, int, float] | None = None
    #: Rocchio: feedback turns, weight of their centroid
    rocchio: tuple[int, float] | None = None


def _top(x: np.ndarray, k: int, positive: bool = False) -> np.ndarray:
    idx = np.argsort(-x, kind="stable")[:k]
    return idx[x[idx] > 0] if positive else idx


def _neighbours_best(score: np.ndarray, session: np.ndarray, radius: int) -> np.ndarray:
    """Each turn's best score among the turns within ``radius`` of it in its session (0 if none)."""
    best = np.zeros_like(score)
    n = len(score)
    for d in range(1, radius + 1):
        for shift in (d, -d):
            other = np.zeros_like(score)
            same = np.zeros(n, dtype=bool)
            if shift > 0:
                other[shift:] = score[:-shift]
                same[shift:] = session[shift:] == session[:-shift]
            else:
                other[:shift] = score[-shift:]
                same[:shift] = session[:shift] == session[-shift:]
            best = np.maximum(best, np.where(same, other, 0.0))
    return best


class Ranker:
    """Scores a question's turns under a `Setting`, from the dense views and the keyword side."""

    def __init__(self, kw: KeywordSide, dense: dict[str, Dense]) -> None:
        self.kw = kw
        self.dense = dense
        self._cos: dict[tuple[str, int], np.ndarray] = {}

    def first_pass(self, q: Q, st: Setting, cos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(fused score, candidate mask, keyword evidence) before feedback and propagation."""
        bm, mass = self.kw.scores(q.question, st.bm25)
        bm = bm[self.kw.conv_slice(q.question.conv, q.n)]
        return self._fuse(q, st, cos, bm, mass)

    def _fuse(self, q: Q, st: Setting, cos: np.ndarray, bm: np.ndarray, mass: float):
        mask = np.zeros(q.n, dtype=bool)
        mask[_top(cos, st.candidates)] = True
        mask[_top(bm, st.candidates, positive=True)] = True
        ev = np.minimum(1.0, bm / (st.share * mass)) if mass > 0 else np.zeros(q.n)
        if st.alpha and st.propagate == "kw":
            ev = np.minimum(1.0, ev + st.alpha * _neighbours_best(ev, q.session, st.radius))
        if st.fusion == "zscore":
            sim = np.where(mask, cos, np.nan)
            kwv = np.where(mask, bm, np.nan)
            z1 = (cos - np.nanmean(sim)) / (np.nanstd(sim) or 1.0)
            z2 = (bm - np.nanmean(kwv)) / (np.nanstd(kwv) or 1.0)
            score = z1 + st.w * z2
            score = score - score[mask].min() + 1e-3  # positive, for the temporal factor and propagation
        else:
            sim = np.clip(cos, 0, 1)
            score = sim + (1 - sim) * st.w * np.clip(ev, 0, 1)
        return score, mask, ev

    def rank(self, q: Q, st: Setting, view: str) -> np.ndarray:
        d = self.dense[view + ":" + q.question.conv]
        ckey = (view, id(q))
        if ckey not in self._cos:
            self._cos[ckey] = d.cosines(q.qvec)
        cos = self._cos[ckey]
        bm, mass = self.kw.scores(q.question, st.bm25)
        bm = bm[self.kw.conv_slice(q.question.conv, q.n)]
        score, mask, _ev = self._fuse(q, st, cos, bm, mass)
        if st.rm3 or st.rocchio:
            order = np.argsort(-np.where(mask, score, -np.inf), kind="stable")
            if st.rocchio:
                k, beta = st.rocchio
                fb = order[:k]
                qv = q.qvec + beta * d.turn_vectors()[fb].mean(0)
                qv = qv / (np.linalg.norm(qv) or 1.0)
                cos = d.cosines(qv.astype(np.float32))
            if st.rm3:
                m, terms, beta = st.rm3
                fb = order[:m]
                wts = np.where(mask, score, 0.0)[fb]
                exp = self.kw.expansion_scores(q.question, q.n, fb, wts, terms, st.bm25)
                # The expansion adds evidence on the original query's scale (its idf mass stays the unit).
                bm = bm + beta * exp
            score, mask, _ev = self._fuse(q, st, cos, bm, mass)
        if st.alpha and st.propagate in ("cand", "pool"):
            base = np.where(mask, score, 0.0)
            nb = _neighbours_best(base, q.session, st.radius)
            if st.propagate == "pool":
                # The neighbours of the candidates are read and scored too (their own score, then the raise).
                near = _neighbours_best(mask.astype(float), q.session, st.radius) > 0
                mask = mask | near
                base = np.where(mask, score, 0.0)
                nb = _neighbours_best(base, q.session, st.radius)
            score = score + st.alpha * nb
        return np.where(mask, score * q.temporal, -np.inf)


def recalls(ranker: Ranker, qs: list[Q], st: Setting, view: str, turns: dict[str, list[Turn]]) -> np.ndarray:
    out = np.empty(len(qs))
    for i, q in enumerate(qs):
        score = ranker.rank(q, st, view)
        top = np.argsort(-score, kind="stable")[:K]
        ids = {turns[q.question.conv][j].dia_id for j in top if np.isfinite(score[j])}
        out[i] = len(ids & q.question.evidence) / len(q.question.evidence)
    return out


def bm25_recalls(kw: KeywordSide, qs: list[Q], s: Bm25, turns: dict[str, list[Turn]], dense: dict[str, Dense]):
    """recall@10 of the keyword side alone (ties broken by cosine, as the library's keyword ranking)."""
    out = np.empty(len(qs))
    for i, q in enumerate(qs):
        bm, _m = kw.scores(q.question, s)
        bm = bm[kw.conv_slice(q.question.conv, q.n)]
        score = bm + 1e-6 * dense["turn:" + q.question.conv].cosines(q.qvec)
        top = np.argsort(-score, kind="stable")[:K]
        ids = {turns[q.question.conv][j].dia_id for j in top}
        out[i] = len(ids & q.question.evidence) / len(q.question.evidence)
    return out


Grid = dict[str, Setting]


def families(ws: Sequence[float] = (0.8, 0.9, 1.0)) -> list[tuple[str, Callable[[], Grid]]]:
    """Every idea as a family of settings (each family's grid includes the keyword weight)."""

    def g(make: Callable[..., Setting], **axes: Sequence) -> Grid:
        import itertools

        keys = list(axes)
        out: Grid = {}
        for combo in itertools.product(*axes.values()):
            kv = dict(zip(keys, combo, strict=True))
            label = ", ".join(f"{k}={_label(v)}" for k, v in kv.items())
            out[label] = make(**kv)
        return out

    return [
        (
            "noisy-or, keyword / query's idf mass (the library's HybridRanking)",
            lambda: g(lambda w: Setting(w=w), w=(0.6, 0.7, 0.8, 0.9, 1.0)),
        ),
        ("+ more candidates a side", lambda: g(lambda w, c: Setting(w=w, candidates=c), w=ws, c=(20, 40, 80))),
        (
            "z-score fusion over the candidates",
            lambda: g(
                lambda w, c: Setting(w=w, fusion="zscore", candidates=c), w=(0.5, 0.75, 1.0, 1.5, 2.0), c=(20, 40)
            ),
        ),
        (
            "+ neighbour propagation, among candidates",
            lambda: g(lambda w, a, r: Setting(w=w, alpha=a, radius=r), w=ws, a=(0.1, 0.2, 0.3, 0.5), r=(1, 2)),
        ),
        (
            "+ neighbour propagation, neighbours of candidates join",
            lambda: g(
                lambda w, a, r: Setting(w=w, alpha=a, radius=r, propagate="pool"),
                w=ws,
                a=(0.1, 0.2, 0.3, 0.5),
                r=(1, 2),
            ),
        ),
        (
            "+ neighbour propagation, neighbours of candidates join (wider grid)",
            lambda: g(
                lambda w, a, r: Setting(w=w, alpha=a, radius=r, propagate="pool"),
                w=ws,
                a=(0.3, 0.5, 0.75, 1.0),
                r=(1, 2, 3),
            ),
        ),
        (
            "z-score fusion + neighbour propagation, neighbours of candidates join",
            lambda: g(
                lambda w, c, a, r: Setting(w=w, fusion="zscore", candidates=c, alpha=a, radius=r, propagate="pool"),
                w=(1.0, 1.5),
                c=(20, 40),
                a=(0.3, 0.5, 0.75, 1.0),
                r=(1, 2),
            ),
        ),
        (
            "+ BM25 counting term frequency + neighbour propagation, neighbours join",
            lambda: g(
                lambda w, bm, a, r: Setting(w=w, bm25=bm, alpha=a, radius=r, propagate="pool"),
                w=(0.9, 1.0),
                bm=(Bm25(), Bm25(tf=True, b=0.1), Bm25(tf=True, b=0.3)),
                a=(0.5, 0.75, 1.0),
                r=(1, 2),
            ),
        ),
        (
            "z-score fusion + neighbour propagation, neighbours join (wider grid)",
            lambda: g(
                lambda w, a, r: Setting(w=w, fusion="zscore", alpha=a, radius=r, propagate="pool"),
                w=(1.0, 1.5, 2.0, 3.0),
                a=(0.5, 0.75, 1.0, 1.5),
                r=(1, 2, 3),
            ),
        ),
        (
            "noisy-or, keyword / share of the idf mass + neighbour propagation, neighbours join",
            lambda: g(
                lambda w, sh, a, r: Setting(w=w, share=sh, alpha=a, radius=r, propagate="pool"),
                w=(0.9, 1.0),
                sh=(0.5, 0.75, 1.0),
                a=(0.5, 0.75, 1.0),
                r=(1, 2),
            ),
        ),
        (
            "+ keyword evidence propagated from neighbours",
            lambda: g(lambda w, a: Setting(w=w, alpha=a, propagate="kw"), w=ws, a=(0.25, 0.5, 0.75, 1.0)),
        ),
        (
            "+ RM3 keyword expansion",
            lambda: g(
                lambda w, m, t, beta: Setting(w=w, rm3=(m, t, beta)), w=ws, m=(3, 10), t=(5, 20), beta=(0.25, 0.5, 1.0)
            ),
        ),
        (
            "+ Rocchio on the query vector",
            lambda: g(lambda w, k, beta: Setting(w=w, rocchio=(k, beta)), w=ws, k=(3, 5, 10), beta=(0.25, 0.5, 1.0)),
        ),
        (
            "+ BM25 counting term frequency",
            lambda: g(
                lambda w, k1, b: Setting(w=w, bm25=Bm25(tf=True, k1=k1, b=b)),
                w=ws,
                k1=(0.6, 1.2, 2.0),
                b=(0.1, 0.3, 0.75),
            ),
        ),
        (
            "+ BM25 b / stop words",
            lambda: g(
                lambda w, b, sw: Setting(w=w, bm25=Bm25(b=b, stop_words=sw)),
                w=ws,
                b=(0.0, 0.1, 0.3, 0.5),
                sw=(True, False),
            ),
        ),
        ("+ BM25 bigrams", lambda: g(lambda w, bg: Setting(w=w, bm25=Bm25(bigrams=bg)), w=ws, bg=(0.25, 0.5, 1.0))),
        (
            "+ speaker and date as keyword fields",
            lambda: g(
                lambda w, spk, date: Setting(w=w, bm25=Bm25(fields=(("body", 1.0), ("speaker", spk), ("date", date)))),
                w=ws,
                spk=(0.0, 0.25, 0.5, 1.0),
                date=(0.0, 0.5, 1.0),
            ),
        ),
        (
            "+ neighbours' words as a weighted keyword field",
            lambda: g(
                lambda w, ctx: Setting(w=w, bm25=Bm25(fields=(("turn", 1.0), ("context", ctx)))),
                w=ws,
                ctx=(0.1, 0.25, 0.5, 0.75),
            ),
        ),
    ]


def _label(v: object) -> str:
    if isinstance(v, Bm25):
        return "terms once" if not v.tf else f"tf (k1 {v.k1}, b {v.b})"
    return str(v)


# ----------------------------------------------------------------------- driver

#: Stored designs the ideas are measured on: (name, dense views, keyword field standing for "turn").
DESIGNS = (
    ("turn", "turn", "turn"),
    ("turn, and previous + turn + next (2 vectors)", "2vec", "window2"),
)


def _for_design(st: Setting, turn_field: str) -> Setting:
    if turn_field == "turn":
        return st
    fields = tuple((turn_field if f == "turn" else f, w) for f, w in st.bm25.fields)
    return Setting(**{**st.__dict__, "bm25": Bm25(**{**st.bm25.__dict__, "fields": fields})})


def prepare(
    turns: dict[str, list[Turn]],
    asked: list[Question],
    embed: Callable[[list[str]], np.ndarray],
    qvecs: np.ndarray,
    temporal: dict[str, np.ndarray],
) -> tuple[Ranker, list[Q]]:
    """The keyword side, the dense views of each conversation and each question's inputs."""
    from bench.recall._locomo_signals import window

    kw = KeywordSide(turns)
    dense: dict[str, Dense] = {}
    for c, ts in turns.items():
        wanted = {view for _d, view, _f in DESIGNS}
        for name, make in (("turn", lambda ts: [[t.text] for t in ts]), ("2vec", window(1, 1, keep_plain=True))):
            if name not in wanted:
                continue
            views = make(ts)
            flat = [(i, text) for i, vs in enumerate(views) for text in vs]
            mat = embed([t for _i, t in flat])
            dense[f"{name}:{c}"] = Dense(mat, np.array([i for i, _t in flat]), len(ts))
    sessions = {c: np.array([t.session for t in ts]) for c, ts in turns.items()}
    qs = [
        Q(q, np.asarray(qvecs[i], dtype=np.float32), len(turns[q.conv]), sessions[q.conv], temporal[q.conv])
        for i, q in enumerate(asked)
    ]
    return Ranker(kw, dense), qs


def check_keyword_side(ranker: Ranker, qs: list[Q], library_bm25: dict[str, np.ndarray]) -> float:
    """Largest difference between this BM25 and the library's on plain turns (should be ~0)."""
    worst = 0.0
    for q in qs:
        bm, _m = ranker.kw.scores(q.question, Bm25())
        bm = bm[ranker.kw.conv_slice(q.question.conv, q.n)]
        worst = max(worst, float(np.abs(bm - library_bm25[q.question.text + "\x00" + q.question.conv]).max()))
    return worst


def run(ranker: Ranker, qs: list[Q], turns: dict[str, list[Turn]], *, only: Sequence[str] = ()):
    """recall@10 of every question under every setting of each family, one (row label, {setting: recalls}) at a
    time."""
    for family, grid in families():
        if only and not any(o in family for o in only):
            continue
        for design, view, turn_field in DESIGNS:
            yield (
                f"{family}; stored: {design}",
                {k: recalls(ranker, qs, _for_design(st, turn_field), view, turns) for k, st in grid().items()},
            )
