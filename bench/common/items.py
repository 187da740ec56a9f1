"""Seeded items and queries shared by the benches: word lists, texts, embedding-like vectors, exact answers.

The vectors come from a seeded mixture shaped like sentence embeddings rather
than uniform noise (a shared mean direction, 40 topics, 1,000 clusters of
uneven size, a low-rank spread inside each), so that a query's nearest stored
item has cosine ~0.7-0.9 and two random items ~0.1. `build_data()` makes the
store bench's three item sets and its search cases, with the exact top 10 of
every query; `LookupEmbeddings` hands every store the same precomputed vectors
by text, and `HashEmbeddings` gives a vector per text from its hash (no model,
the same in every process).

    data = build_data(10_000, big=False, n_queries=50, warmup=5, seed=0)
    embed = LookupEmbeddings(data)
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

DIMS = 384
K = 10
BIG = 1_000_000  # the size at which only the one-namespace and whole-prefix cases run
NAMESPACE = ("research",)  # the typed collection research_findings: embeds "content", validates values


KINDS = ("rare", "occasional", "common", "other")
KIND_SHARES = (0.01, 0.14, 0.50, 0.35)
NS_ITEMS = 100  # items per general namespace
GROUPS = 10  # "g0".."g9": each prefix ("memories", "gX") holds 10%


WORDS = (
    "momentum earnings drift volatility yield curve spread credit equity rates inflation carry liquidity factor "
    "value growth quality small caps large caps dividend buyback guidance revenue margin sector rotation energy "
    "utilities banks tech semis retail housing commodities gold oil dollar euro yen emerging markets duration "
    "convexity options skew term structure vix hedge drawdown sharpe sortino beta alpha residual mean reversion "
    "breakout trend following regime bull bear sideways volatile signal decay crowding short interest flows etf "
    "rebalance quarter end month end overnight intraday gap open close auction vwap slippage costs turnover after "
    "before during weak strong rising falling persistent fades reverses outperforms lags tends to across when while "
    "because despite although the a of in on for with"
).split()


# ------------------------------------------------------------------ texts


def make_texts(n: int, seed: int, *, prefix: str = "", lo: int = 100, hi: int = 200) -> list[str]:
    """Seeded, varied pseudo-sentences of ``lo``-``hi`` characters, all distinct (``prefix<i>:`` first)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        target = rng.randint(lo, hi)
        words = [f"{prefix}{i}:"] if prefix else []
        while sum(len(w) + 1 for w in words) < target:
            words.append(rng.choice(WORDS))
        out.append(" ".join(words)[:target])
    return out


def fast_texts(n: int, rng: np.random.Generator, prefix: str, lo: int, hi: int) -> list[str]:
    """Like :func:`make_texts`, vectorised for a million items (distinct by their ``prefix<i>:`` head)."""
    words = np.array(WORDS, dtype=object)
    out: list[str] = []
    for start in range(0, n, 50_000):
        m = min(50_000, n - start)
        picks = words[rng.integers(0, len(words), size=(m, hi // 4 + 4))].tolist()
        lengths = rng.integers(lo, hi + 1, size=m).tolist()
        out.extend(
            f"{prefix}{start + i}: {' '.join(row)}"[:length]
            for i, (row, length) in enumerate(zip(picks, lengths, strict=False))
        )
    return out


# ----------------------------------------------------------------- vectors


@dataclass
class Mixture:
    """A seeded mixture on the unit sphere shaped like sentence embeddings.

    A vector is ``mean + topic + cluster centroid + spread`` (weights below),
    normalised; the spread lives mostly in a 24-d subspace per topic (real
    embeddings have a low intrinsic dimension) plus a little isotropic noise,
    scaled per cluster (some topics are tighter than others).
    """

    rng: np.random.Generator
    mean: np.ndarray
    topics: np.ndarray
    bases: np.ndarray
    centroids: np.ndarray
    topic_of: np.ndarray
    weights: np.ndarray
    spread: np.ndarray

    # Squared weights of mean, topic, centroid, low-rank spread, isotropic noise.
    PARTS = (0.08, 0.12, 0.35, 0.30, 0.05)
    RANK = 24

    @classmethod
    def make(cls, seed: int, *, clusters: int = 1000, topics: int = 40) -> Mixture:
        rng = np.random.default_rng(seed)

        def unit(*shape: int) -> np.ndarray:
            x = rng.standard_normal(shape)
            return x / np.linalg.norm(x, axis=-1, keepdims=True)

        bases = np.linalg.qr(rng.standard_normal((topics, DIMS, cls.RANK)))[0]  # orthonormal columns per topic
        weights = 1.0 / np.arange(1, clusters + 1) ** 0.5  # uneven cluster sizes
        return cls(
            rng=rng,
            mean=unit(DIMS),
            topics=unit(topics, DIMS),
            bases=bases.astype(np.float32),
            centroids=unit(clusters, DIMS),
            topic_of=rng.integers(0, topics, clusters),
            weights=rng.permutation(weights / weights.sum()),
            spread=rng.uniform(0.6, 1.4, clusters),
        )

    def clusters(self, n: int, rng: np.random.Generator | None = None) -> np.ndarray:
        return (rng or self.rng).choice(len(self.weights), size=n, p=self.weights)

    def draw(self, clusters: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """One unit float32 vector from each given cluster (the spread drawn from ``rng``, by default the mixture's)."""
        rng = rng or self.rng
        g, t, c, a, e = (math.sqrt(w) for w in self.PARTS)
        out = np.empty((len(clusters), DIMS), dtype=np.float32)
        for start in range(0, len(clusters), 65_536):
            ks = clusters[start : start + 65_536]
            topic = self.topic_of[ks]
            x = g * self.mean + t * self.topics[topic] + c * self.centroids[ks]
            low = np.empty((len(ks), DIMS))
            for tp in np.unique(topic):
                sel = np.nonzero(topic == tp)[0]
                coords = rng.standard_normal((len(sel), self.RANK), dtype=np.float32) / math.sqrt(self.RANK)
                low[sel] = coords @ self.bases[tp].T
            iso = rng.standard_normal((len(ks), DIMS), dtype=np.float32) / math.sqrt(DIMS)
            x += self.spread[ks, None] * (a * low + e * iso)
            out[start : start + len(ks)] = x / np.linalg.norm(x, axis=1, keepdims=True)
        return out


def near(mix: Mixture, vectors: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    """Queries about given stored vectors: each mixed with a fresh draw from its cluster (cosine ~0.87)."""
    q = 0.6 * vectors + 0.8 * mix.draw(clusters)
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


# -------------------------------------------------------------------- data


@dataclass
class ItemSet:
    """Items put the same way into every store."""

    name: str
    collection: str  # the Chroma collection holding them, in ChromaStore and in bare Chroma
    keys: list[str]
    namespaces: list[tuple[str, ...]]
    values: list[dict[str, Any]]
    fields: tuple[str, ...]  # the embedded fields, one vector each
    index: list[str] | None  # the put's index= (None: the store's default fields)
    rows: np.ndarray  # (items, fields): rows of Data.vectors
    clusters: np.ndarray  # (items,): each item's mixture cluster
    tag: str | None  # bare Chroma's metadata "set" label (None: alone in its collection)

    def __len__(self) -> int:
        return len(self.keys)

    def record_ids(self) -> list[str]:
        """Bare Chroma's record ids, in row order (an item's key, plus ``#<field>`` for several)."""
        if len(self.fields) == 1:
            return list(self.keys)
        return [f"{k}#{f}" for k in self.keys for f in range(len(self.fields))]


@dataclass
class Query:
    text: str
    row: int  # its vector in Data.vectors
    prefix: tuple[str, ...]
    filter: dict[str, Any] | None
    where: dict[str, Any] | None  # bare Chroma's equivalent (None: the collection is the scope)
    exact: list[str] = field(default_factory=list)  # keys of the true top K among the matching items
    floor_exact: list[str] = field(default_factory=list)  # record ids of the true top K of the whole collection


@dataclass
class Case:
    name: str
    items: ItemSet
    scope: int  # items under the prefix
    matches: int  # items under the prefix that match the filter
    warmup: list[Query]
    queries: list[Query]
    probe: list[Query] = field(default_factory=list)  # one namespace: other namespaces, for the cold-cache probe


@dataclass
class Data:
    n: int
    big: bool
    vectors: np.ndarray
    text_row: dict[str, int]
    sets: list[ItemSet]
    cases: list[Case]


def _general(n: int, mix: Mixture, rng: np.random.Generator, first_row: int) -> tuple[ItemSet, dict[str, Any]]:
    n_ns = max(1, n // NS_ITEMS)
    # Random namespace per item (users write interleaved), 100 items each; kinds in exact shares.
    u = rng.permutation(np.arange(n) % n_ns)
    counts = [round(s * n) for s in KIND_SHARES[:-1]]
    kind = rng.permutation(np.repeat(np.arange(len(KINDS)), [*counts, n - sum(counts)]))
    texts = fast_texts(n, rng, "m", 100, 200)
    keys = [f"m{i:07d}" for i in range(n)]
    namespaces = [("memories", f"g{x % GROUPS}", f"u{x}") for x in u.tolist()]
    values = [
        {"content": t, "kind": KINDS[k], "n": i} for i, (t, k) in enumerate(zip(texts, kind.tolist(), strict=False))
    ]
    clusters = mix.clusters(n)
    items = ItemSet(
        "general",
        "memories",
        keys,
        namespaces,
        values,
        ("content",),
        None,
        np.arange(first_row, first_row + n).reshape(n, 1),
        clusters,
        "mem",
    )
    index = {
        "u": u,
        "n_ns": n_ns,
        "by_u": np.argsort(u, kind="stable").reshape(n_ns, -1) if n % n_ns == 0 else None,
        "g": u % GROUPS,
        "kind": kind,
    }
    return items, index


def _typed(n: int, mix: Mixture, rng: np.random.Generator, first_row: int) -> ItemSet:
    texts = fast_texts(n, rng, "r", 100, 200)
    confidence = np.round(rng.random(n), 3).tolist()
    return ItemSet(
        "typed",
        "research_findings",
        [f"r{i:07d}" for i in range(n)],
        [NAMESPACE] * n,
        [{"content": t, "confidence": c} for t, c in zip(texts, confidence, strict=False)],
        ("content",),
        None,
        np.arange(first_row, first_row + n).reshape(n, 1),
        mix.clusters(n),
        None,
    )


def _three_fields(n: int, mix: Mixture, rng: np.random.Generator, first_row: int) -> ItemSet:
    titles = fast_texts(n, rng, "d-title", 30, 60)
    bodies = fast_texts(n, rng, "d-body", 100, 200)
    tags = fast_texts(n, rng, "d-tags", 20, 40)
    fields = ("title", "body", "tags")
    return ItemSet(
        "three fields",
        "memories",
        [f"d{i:07d}" for i in range(n)],
        [("docs", f"s{i % 100}") for i in range(n)],
        [{"title": a, "body": b, "tags": c} for a, b, c in zip(titles, bodies, tags, strict=False)],
        fields,
        list(fields),
        np.arange(first_row, first_row + 3 * n).reshape(n, 3),
        mix.clusters(n),
        "docs",
    )


def build_data(n: int, *, big: bool, n_queries: int, warmup: int, seed: int) -> Data:
    """Items, queries and their exact answers for one size."""
    mix = Mixture.make(seed)
    rng = np.random.default_rng(seed + 1)
    general, gi = _general(n, mix, rng, 0)
    sets = [general]
    if not big:
        sets.append(_typed(n, mix, rng, n))
        sets.append(_three_fields(max(1, n // 10), mix, rng, 2 * n))
    item_vectors = [mix.draw(np.repeat(s.clusters, len(s.fields))) for s in sets]  # an item's fields share its cluster
    specs = _case_specs(general, gi, sets, big)
    # Query vectors follow the items' rows.
    n_items_rows = sum(len(v) for v in item_vectors)
    per_case = warmup + n_queries
    query_rows = np.arange(n_items_rows, n_items_rows + per_case * len(specs)).reshape(len(specs), per_case)
    vectors = np.empty((n_items_rows + query_rows.size, DIMS), dtype=np.float32)
    pos = 0
    for v in item_vectors:
        vectors[pos : pos + len(v)] = v
        pos += len(v)
    del item_vectors
    made = [_make_case(ci, spec, vectors, mix, rng, query_rows[ci], warmup) for ci, spec in enumerate(specs)]
    cases = [case for case, _ in made]
    # The cold-cache probe asks the one-namespace queries again, of namespaces picked afresh.
    cases[0].probe = [
        Query(f"probe.{j}", q.row, specs[0].pick(j, rng)[0], None, None) for j, q in enumerate(cases[0].queries[:20])
    ]
    text_row: dict[str, int] = {}
    for s in sets:
        for f, name in enumerate(s.fields):
            for i, value in enumerate(s.values):
                text_row[value[name]] = int(s.rows[i, f])
    for c in cases:
        for q in [*c.warmup, *c.queries, *c.probe]:
            text_row[q.text] = q.row
    _exact_answers(made, sets, vectors)
    return Data(n, big, vectors, text_row, sets, cases)


@dataclass
class _Spec:
    name: str
    items: ItemSet
    scope: int
    # j -> (prefix, filter, where, candidate item indices, a key naming the candidate set)
    pick: Callable[[int, np.random.Generator], tuple[tuple[str, ...], dict | None, dict | None, np.ndarray, Any]]


def _case_specs(general: ItemSet, gi: dict[str, Any], sets: list[ItemSet], big: bool) -> list[_Spec]:
    n = len(general)
    everything = np.arange(n)
    groups = [np.nonzero(gi["g"] == g)[0] for g in range(GROUPS)]
    by_u = gi["by_u"]

    def one_ns(j: int, rng: np.random.Generator) -> Any:
        u = int(rng.integers(gi["n_ns"]))
        cand = by_u[u] if by_u is not None else np.nonzero(gi["u"] == u)[0]
        return ("memories", f"g{u % GROUPS}", f"u{u}"), None, {"u": f"u{u}"}, cand, ("u", u)

    def tenth(j: int, rng: np.random.Generator) -> Any:
        g = j % GROUPS
        return ("memories", f"g{g}"), None, {"g": f"g{g}"}, groups[g], ("g", g)

    def whole(j: int, rng: np.random.Generator) -> Any:
        return ("memories",), None, {"set": "mem"}, everything, "all"

    def by_kind(kind: int) -> Callable[..., Any]:
        cand = np.nonzero(gi["kind"] == kind)[0]
        name = KINDS[kind]
        return lambda j, rng: (("memories",), {"kind": name}, {"$and": [{"set": "mem"}, {"kind": name}]}, cand, name)

    specs = [
        _Spec("one namespace", general, NS_ITEMS, one_ns),
        _Spec("prefix, 10%", general, n // GROUPS, tenth),
        _Spec("whole prefix", general, n, whole),
    ]
    if big:
        return [specs[0], specs[2]]
    for kind, share in zip(range(3), KIND_SHARES, strict=False):
        specs.append(_Spec(f"filter, {share:.0%}", general, n, by_kind(kind)))
    typed, docs = sets[1], sets[2]
    all_typed, all_docs = np.arange(len(typed)), np.arange(len(docs))
    specs.append(_Spec("typed collection", typed, len(typed), lambda j, rng: (NAMESPACE, None, None, all_typed, "all")))
    specs.append(
        _Spec("three fields", docs, len(docs), lambda j, rng: (("docs",), None, {"set": "docs"}, all_docs, "all"))
    )
    return specs


_Candidates = list[tuple[np.ndarray, Any]]  # per timed query: matching item indices, and a name for that set


def _make_case(
    ci: int, spec: _Spec, vectors: np.ndarray, mix: Mixture, rng: np.random.Generator, rows: np.ndarray, warmup: int
) -> tuple[Case, _Candidates]:
    """Queries for one case (vectors written into ``vectors``): even ones about a random matching item, odd
    ones fresh draws from the mixture."""
    picks = [spec.pick(j, rng) for j in range(len(rows))]
    items = spec.items
    about: list[int] = []
    for j, (_, _, _, cand, _) in enumerate(picks):
        if j % 2 == 0:
            about.append(int(cand[rng.integers(len(cand))]))
    about_arr = np.array(about, dtype=np.int64)
    fld = rng.integers(0, len(items.fields), size=len(about_arr))
    src = vectors[items.rows[about_arr, fld]]
    qv_near = near(mix, src, items.clusters[about_arr])
    qv_fresh = mix.draw(mix.clusters(len(rows) - len(about_arr)))
    vectors[rows[0::2]] = qv_near
    vectors[rows[1::2]] = qv_fresh
    queries = [
        Query(f"q{ci}.{j}", int(rows[j]), prefix, filt, where)
        for j, (prefix, filt, where, _cand, _key) in enumerate(picks)
    ]
    matches = len(picks[0][3])
    candidates = [(cand, key) for _, _, _, cand, key in picks[warmup:]]
    return Case(spec.name, items, spec.scope, matches, queries[:warmup], queries[warmup:]), candidates


def _top_k(matrix: np.ndarray, n_fields: int, qs: np.ndarray) -> np.ndarray:
    """(queries, <=K) indices of the best items; an item's score is the max over its ``n_fields`` rows."""
    scores = (matrix @ qs.T).reshape(-1, n_fields, len(qs)).max(axis=1)  # (items, queries)
    k = min(K, scores.shape[0])
    top = np.argpartition(-scores, k - 1, axis=0)[:k]
    order = np.argsort(-np.take_along_axis(scores, top, axis=0), axis=0)
    return np.take_along_axis(top, order, axis=0).T


def _exact_answers(made: list[tuple[Case, _Candidates]], sets: list[ItemSet], vectors: np.ndarray) -> None:
    """Exact top K per timed query: among its case's matching items, and among the whole collection's records."""
    for c, candidates in made:
        groups: dict[Any, list[int]] = {}
        for j, (_, key) in enumerate(candidates):
            groups.setdefault(key, []).append(j)
        for js in groups.values():
            cand = candidates[js[0]][0]
            matrix = vectors[c.items.rows[cand].ravel()]
            top = _top_k(matrix, len(c.items.fields), vectors[[c.queries[j].row for j in js]])
            for j, t in zip(js, top, strict=False):
                c.queries[j].exact = [c.items.keys[i] for i in cand[t]]
    cases = [c for c, _ in made]
    for coll in {s.collection for s in sets}:
        members = [s for s in sets if s.collection == coll]
        rows = np.concatenate([s.rows.ravel() for s in members])
        ids = [rid for s in members for rid in s.record_ids()]
        qs = [q for c in cases if c.items.collection == coll for q in c.queries]
        matrix = vectors[rows]
        for start in range(0, len(qs), 256):
            chunk = qs[start : start + 256]
            top = _top_k(matrix, 1, vectors[[q.row for q in chunk]])
            for q, t in zip(chunk, top, strict=False):
                q.floor_exact = [ids[i] for i in t]


class LookupEmbeddings(Embeddings):
    """Precomputed vectors by text: every store gets the same ones, no model time."""

    def __init__(self, data: Data) -> None:
        self.model_name = "bench-lookup"
        self._matrix = data.vectors
        self._row = data.text_row

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._matrix[[self._row[t] for t in texts]].tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._matrix[self._row[text]].tolist()


class MixtureEmbeddings(Embeddings):
    """A `Mixture` vector per text, its cluster and spread seeded by the text's hash: shaped like sentence
    embeddings (texts fall into clusters by topic), deterministic, no model, the same in every process."""

    model_name = "bench-mixture-384"
    dims = DIMS

    def __init__(self, seed: int = 0) -> None:
        self.mix = Mixture.make(seed)

    def _one(self, text: str) -> list[float]:
        rng = np.random.default_rng(int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little"))
        return self.mix.draw(self.mix.clusters(1, rng), rng)[0].tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


class HashEmbeddings(Embeddings):
    """A unit vector per text from its hash: deterministic, no model (importable, so every process's model id agrees)."""

    model_name = "bench-hash-384"
    dims = DIMS

    def _one(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).standard_normal(self.dims)
        return (v / np.linalg.norm(v)).astype(np.float32).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)
