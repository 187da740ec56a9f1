"""What the recency benchmarks share: the benchmark's memories in a store, the rule as the library applies it,
and LoCoMo ranked as the library ranks it (``recency_bench.py``, ``designs_bench.py``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from langgraph_memory.embeddings import CachedEmbeddings, SentenceTransformerEmbeddings
from langgraph_memory.search.ranking import NEWER_FLOOR, HybridRanking, TemporalConfig, newer_first
from langgraph_memory.store import ChromaStore

BENCH = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "recency.json"
NOW = 1_780_000_000.0  # the clock every question is asked at (a fixed date, so runs compare)
LIMIT = 10  # what a question asks for: the rule compares what can change the first LIMIT (as the store does)


#: (temporal share, cosine threshold (None: rule off), ratio, mutual)
Setting = tuple[float, float | None, float, bool]
OFF: Setting = (0.0, None, 0.0, False)


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
    _share, threshold, ratio, mutual = setting
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
        mutual=mutual,
    )
    out = finals.copy()
    out[pool] = [f for f, _by, _sim in moved]
    return out


class LoCoMo:
    """LoCoMo's signals (``bench/recall/ranking_loo.py``), ranked as the library ranks turns stored as turns and
    as plain memories, under a temporal share and a setting of the rule."""

    def __init__(self, data_dir: Path) -> None:
        sys.path.insert(0, str(BENCH / "recall"))  # ranking_loo's signals and fusions, as that script computes them
        import ranking_loo as R

        from bench.recall._locomo_signals import CACHE_DIR, load_turns, unit

        self.qs, self.names = R.load(data_dir)
        self.convs = np.array([q.question.conv for q in self.qs])
        emb = CachedEmbeddings(SentenceTransformerEmbeddings(), path=CACHE_DIR / "locomo-embeddings.sqlite")
        self.cos = {}
        for f in sorted(data_dir.glob("*.json")):
            vecs = unit(np.asarray(emb.embed_documents([t.text for t in load_turns(json.loads(f.read_text()))])))
            self.cos[f.stem] = vecs @ vecs.T
        d = HybridRanking()
        base = R.absolute("noisy-or", d.keyword_weight, R.kw_hill(d.keyword_half, 2.0))
        self.fusions = {
            "turns (the rule leaves turns alone)": R.ranking(
                base, radius=d.neighbours, alpha=d.neighbour_weight, rule="abs"
            ),
            "turns stored as plain memories": R.ranking(base),
        }

    def set_temporal(self, share: float, rate: float) -> None:
        # Every question of a conversation is asked at its last session: one factor per turn and conversation.
        from langgraph_memory.search.ranking import calculate_final_score

        cfg = TemporalConfig(episodic_memory_decay=rate)
        per: dict[str, np.ndarray] = {}
        for q in self.qs:
            n = q.question.conv
            if n not in per:
                per[n] = np.array(
                    [
                        calculate_final_score(1.0, age_hours=(q.last - at) / 3600.0, config=cfg, temporal_share=share)
                        for at in q.at
                    ]
                )
            q.temporal = per[n]

    def recall(self, setting: Setting, rate: float) -> dict[str, dict[str, tuple[float, float]]]:
        """Per way of storing turns, per conversation: recall@10 and @1 (the rule never acts on turns)."""
        self.set_temporal(setting[0], rate)
        out = {}
        for variant, fusion in self.fusions.items():
            rule = OFF if variant.startswith("turns (") else setting
            r10, r1 = np.empty(len(self.qs)), np.empty(len(self.qs))
            for i, q in enumerate(self.qs):
                c = self.cos[q.question.conv]
                s = apply_rule(fusion(q), q.at, lambda a, b, c=c: float(c[a, b]), rule)
                top = [q.ids[j] for j in np.lexsort((-q.cos, -s))[:10] if np.isfinite(s[j])]
                ev = q.question.evidence
                r10[i], r1[i] = len(set(top) & ev) / len(ev), len(set(top[:1]) & ev) / len(ev)
            out[variant] = {
                n: (float(r10[self.convs == n].mean()), float(r1[self.convs == n].mean())) for n in self.names
            }
        return out

    def worst(self, setting: Setting, rate: float, ref: dict[str, dict[str, tuple[float, float]]]) -> float:
        """The largest loss of recall@10 against ``ref`` over conversations and ways of storing turns."""
        got = self.recall(setting, rate)
        return min(got[v][n][0] - ref[v][n][0] for v in got for n in self.names)
