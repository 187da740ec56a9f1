"""Ranking search results: hybrid fusion, temporal decay with reinforcement, the relevance threshold.

A search with [`HybridRanking`][langgraph_memory.HybridRanking] on (``ChromaStore(ranking=HybridRanking())``,
the default of ``Memory.open``) scores each candidate in three steps, each
keeping the score in [0, 1], higher better:

1. **similarity**: the cosine similarity of the query and the item's best
   vector, clipped at 0 (the relevance percentage / 100);
2. **relevance** = `fuse()` (similarity, keyword): keyword evidence can
   only raise a score: ``1 - (1 - similarity) * (1 - keyword_weight * keyword)``,
   where ``keyword`` is the item's BM25 score over the query's idf mass (the
   sum of its terms' idf: what a memory of average length holding every query
   term scores), capped at 1. The scale is the query's, not the candidates':
   a memory sharing only a common name with a query of three words gets a
   small share, however it ranks among the matches; an item without any query
   word gets 0 and keeps its cosine;
3. **final** = `calculate_final_score()`: ``relevance * (1 - temporal_share
   + temporal_share * retention)``, where ``retention`` =
   ``min(1, temporal_weight(age) * importance_multiplier(accesses))``: a new
   or much-used memory keeps its relevance, an old unused one loses up to
   ``temporal_share`` of it.

The fusion was chosen by leave-one-conversation-out on LoCoMo against
reciprocal-rank fusion, a weighted sum, a static-embedding second signal and
other keyword scales (``bench/results/RESULTS_locomo.md``): with keyword evidence on
the query's scale, ``keyword_weight = 1`` was chosen on every fold.

**The relevance threshold.** One rule for every caller that recalls (graph
nodes, agent tools and the typed research API, which apply
`MIN_RELEVANCE` = 0.3 by default): an item
passes ``min_relevance`` only with a score at least that high, so unscored
items (a search without a query) never pass it. With plain cosine ranking the
score is the relevance percentage / 100. With hybrid ranking it is the
final score above: an item sharing no word with the query passes exactly when
its cosine does (decay aside), a keyword match lets an item pass with a lower
cosine, and an old, unused memory needs a higher one.

Temporal weighting (``TemporalConfig``): a memory's weight
decays exponentially with its age, at a rate per hour set by its memory type
(`MEMORY_TYPES` maps each collection to one), and every access raises
its importance by ``access_boost_factor``, up to ``max_importance_multiplier``.
A memory whose weight fell under ``forgetting_threshold`` may be forgotten.

The decay is ``exp(-rate * hours)``, with a rate per memory type. The rates
are configuration (`TemporalConfig`); with the defaults an episodic memory
keeps 0.79 of its weight after a day and 0.09 after ten days; a semantic one 0.98 after a day and 0.48 after a month.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from langgraph.store.base import SearchItem

from langgraph_memory.store.registry import MemoryType

__all__ = [
    "HybridRanking",
    "ScoreParts",
    "score_parts",
    "score_parts_many",
    "fuse",
    "retention",
    "calculate_final_score",
    "keep_relevant",
    "MemoryType",
    "TemporalConfig",
    "temporal_weight",
    "importance_multiplier",
]

S = TypeVar("S", bound=SearchItem)


@dataclass(frozen=True)
class TemporalConfig:
    """How memories decay with age and gain weight with use (the defaults are configuration).

    Examples:
        >>> cfg = TemporalConfig(episodic_memory_decay=0.05)
        >>> round(temporal_weight(24.0, "episodic", cfg), 3)
        0.301
    """

    #: Decay rates per hour, by memory type.
    working_memory_decay: float = 0.5
    session_memory_decay: float = 0.1
    episodic_memory_decay: float = 0.01
    semantic_memory_decay: float = 0.001
    #: Each access multiplies importance by ``1 + access_boost_factor * accesses`` ...
    access_boost_factor: float = 0.1
    #: ... up to this cap.
    max_importance_multiplier: float = 5.0
    #: Off: accesses do not change a memory's weight.
    enable_reinforcement: bool = True
    #: A memory whose weight falls under this may be forgotten.
    forgetting_threshold: float = 0.01

    def __post_init__(self) -> None:
        for name in (
            "working_memory_decay",
            "session_memory_decay",
            "episodic_memory_decay",
            "semantic_memory_decay",
            "access_boost_factor",
            "forgetting_threshold",
        ):
            value = getattr(self, name)
            if not (
                isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
            ):
                raise ValueError(f"TemporalConfig.{name} must be a finite number >= 0, got {value!r}")
        if not self.max_importance_multiplier >= 1.0:
            raise ValueError(
                f"TemporalConfig.max_importance_multiplier must be >= 1, got {self.max_importance_multiplier!r}"
            )

    def decay_rate(self, memory_type: MemoryType) -> float:
        """The decay rate per hour of ``memory_type``."""
        rate = {
            "working": self.working_memory_decay,
            "session": self.session_memory_decay,
            "episodic": self.episodic_memory_decay,
            "semantic": self.semantic_memory_decay,
        }.get(memory_type)
        if rate is None:
            raise ValueError(f"unknown memory type {memory_type!r}; use working, session, episodic or semantic")
        return rate


def temporal_weight(
    age_hours: float, memory_type: MemoryType = "episodic", config: TemporalConfig | None = None
) -> float:
    """``exp(-rate * age_hours)``: 1.0 for a new memory, falling towards 0 (a negative age counts as 0).

    Examples:
        >>> round(temporal_weight(24.0, "episodic"), 3), round(temporal_weight(1.0, "working"), 3)
        (0.787, 0.607)
    """
    cfg = config or TemporalConfig()
    return math.exp(-cfg.decay_rate(memory_type) * max(age_hours, 0.0))


def importance_multiplier(
    access_count: int, config: TemporalConfig | None = None, base_importance: float = 1.0
) -> float:
    """``base_importance * (1 + access_boost_factor * access_count)``, capped at ``max_importance_multiplier``.

    Examples:
        >>> importance_multiplier(5), importance_multiplier(1000)
        (1.5, 5.0)
    """
    cfg = config or TemporalConfig()
    if not cfg.enable_reinforcement:
        return base_importance
    return min(base_importance * (1.0 + cfg.access_boost_factor * max(access_count, 0)), cfg.max_importance_multiplier)


def retention(
    age_hours: float,
    access_count: int = 0,
    memory_type: MemoryType = "episodic",
    config: TemporalConfig | None = None,
) -> float:
    """How much of its weight a memory keeps: ``min(1, temporal_weight * importance_multiplier)``.

    Accesses offset decay (each restores ``access_boost_factor`` of the
    weight left, up to ``max_importance_multiplier`` times it); a memory never
    counts for more than a new one. A memory whose retention falls under
    ``forgetting_threshold`` may be forgotten.

    Examples:
        >>> round(retention(24 * 7, 0), 3), round(retention(24 * 7, 10), 3), retention(0.0, 10)
        (0.186, 0.373, 1.0)
    """
    cfg = config or TemporalConfig()
    return min(1.0, temporal_weight(age_hours, memory_type, cfg) * importance_multiplier(access_count, cfg))


def calculate_final_score(
    relevance: float,
    *,
    age_hours: float,
    access_count: int = 0,
    memory_type: MemoryType = "episodic",
    config: TemporalConfig | None = None,
    temporal_share: float = 0.1,
) -> float:
    """A result's final score in [0, 1]: ``relevance * (1 - temporal_share + temporal_share * retention)``.

    ``relevance`` is the similarity (or `fuse()`'s hybrid score) in [0, 1];
    ``temporal_share`` is how much of it age and use may take away. With a
    share of 0 the score is the relevance.

    Examples:
        >>> calculate_final_score(0.8, age_hours=0.0)
        0.8
        >>> round(calculate_final_score(0.8, age_hours=24 * 30), 3)   # a month-old episode, never read
        0.72
        >>> round(calculate_final_score(0.8, age_hours=24 * 30, memory_type="semantic"), 3)
        0.759
    """
    kept = retention(age_hours, access_count, memory_type, config)
    return min(1.0, max(0.0, relevance)) * (1.0 - temporal_share + temporal_share * kept)


def fuse(similarity: float, keyword: float, keyword_weight: float) -> float:
    """Hybrid relevance in [0, 1]: ``1 - (1 - similarity) * (1 - keyword_weight * keyword)``.

    ``similarity`` is a cosine (clipped to [0, 1]); ``keyword`` the item's
    keyword score normalised to [0, 1]. Keyword evidence only ever raises the
    score; with ``keyword`` or ``keyword_weight`` 0 it is the cosine.

    Examples:
        >>> fuse(0.5, 0.0, 0.6), fuse(0.5, 1.0, 0.6), fuse(0.2, 1.0, 0.0)
        (0.5, 0.8, 0.2)
    """
    sim = min(1.0, max(0.0, similarity))
    boost = keyword_weight * min(1.0, max(0.0, keyword))
    return sim + (1.0 - sim) * boost if boost > 0.0 else sim


def _unit(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"HybridRanking.{name} must be a number from 0 to 1, got {value!r}")


@dataclass(frozen=True)
class HybridRanking:
    """Hybrid keyword + vector search with temporal weighting: a ``ChromaStore`` option.

    ``ChromaStore(ranking=HybridRanking())`` ranks every ``search(query=...)``
    this way (``Memory.open`` does by default); ``ranking=None`` (the
    ``ChromaStore`` default) keeps plain cosine similarity, identical to
    ``InMemoryStore``. ``HybridRanking(temporal=None)`` fuses without decay;
    ``HybridRanking(keyword_weight=0.0, temporal=None)`` ranks as plain cosine.
    How the score is made: see `langgraph_memory.ranking`.

    Examples:
        >>> from langgraph_memory.ranking import HybridRanking, TemporalConfig
        >>> ranking = HybridRanking(temporal=TemporalConfig(episodic_memory_decay=0.001))
        >>> ranking.keyword_weight, ranking.temporal_share
        (1.0, 0.1)
    """

    #: How far keyword evidence raises a score (see `fuse()`); 0 turns keywords off. At 1 a memory
    #: holding every query word scores 1 (before temporal weighting) whatever its cosine.
    keyword_weight: float = 1.0
    #: What keyword evidence is measured against: ``"query"``, the query's idf mass (a memory sharing only a
    #: common word gains little), or ``"best"``, the best BM25 among the candidates (the earlier scale: the
    #: best match always gets the full ``keyword_weight``, however weak; rank-only uses, with 0.6).
    keyword_scale: Literal["query", "best"] = "query"
    #: BM25 length normalisation ``b`` of keyword scores (0: none; FTS5's own is 0.75).
    length_norm: float = 0.3
    #: Candidates taken from each of the vector and the keyword search (at least ``offset + limit``).
    candidates: int = 20
    #: Decay and reinforcement rates; None: no temporal weighting.
    temporal: TemporalConfig | None = field(default_factory=TemporalConfig)
    #: The share of a score that age and use may take away (see `calculate_final_score()`).
    temporal_share: float = 0.1
    #: The clock ages are measured against (seconds since the epoch), e.g. to rank "as of" a date.
    clock: Callable[[], float] = time.time
    #: How cosine and keyword evidence combine: ``"noisy-or"`` (`fuse()`, an absolute scale) or ``"zscore"``
    #: (each side's z-score over the candidates, ``z_cosine + zscore_weight * z_keyword``: a relative scale;
    #: see `langgraph_memory.store.neighbours`).
    fusion: Literal["noisy-or", "zscore"] = "noisy-or"
    #: Weight of the keyword z-score against the cosine's (``fusion="zscore"`` only).
    zscore_weight: float = 1.5
    #: Items keyed ``"<thread>:<position>"`` up to this many positions apart in a namespace are neighbours: a
    #: candidate is raised by its best neighbour's relevance, and the candidates' neighbours are searched too
    #: (0: off). ``HybridRanking(fusion="zscore", neighbours=2)`` is the best measured on conversations.
    neighbours: int = 0
    #: How much of the best neighbour's relevance is added to a candidate's.
    neighbour_weight: float = 0.75

    def __post_init__(self) -> None:
        _unit("keyword_weight", self.keyword_weight)
        _unit("length_norm", self.length_norm)
        _unit("temporal_share", self.temporal_share)
        if self.keyword_scale not in ("query", "best"):
            raise ValueError(f"HybridRanking.keyword_scale must be 'query' or 'best', got {self.keyword_scale!r}")
        if isinstance(self.candidates, bool) or not isinstance(self.candidates, int) or self.candidates < 1:
            raise ValueError(f"HybridRanking.candidates must be a whole number >= 1, got {self.candidates!r}")
        if self.fusion not in ("noisy-or", "zscore"):
            raise ValueError(f"HybridRanking.fusion must be 'noisy-or' or 'zscore', got {self.fusion!r}")
        for name in ("zscore_weight", "neighbour_weight"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 10.0:
                raise ValueError(f"HybridRanking.{name} must be a number from 0 to 10, got {value!r}")
        if isinstance(self.neighbours, bool) or not isinstance(self.neighbours, int) or not 0 <= self.neighbours <= 16:
            raise ValueError(f"HybridRanking.neighbours must be a whole number from 0 to 16, got {self.neighbours!r}")
        if self.temporal is not None and not isinstance(self.temporal, TemporalConfig):
            raise ValueError(f"HybridRanking.temporal must be a TemporalConfig or None, got {self.temporal!r}")


@dataclass(frozen=True)
class ScoreParts:
    """Why a search hit scored what it did: each step of the score (see the module docstring).

    ``cosine`` is the raw cosine similarity of the query and the item's best
    vector; ``keyword`` its keyword evidence (BM25 over the query's idf
    mass, 0 to 1); ``relevance`` the two fused; ``retention`` what age and use
    left of it (None without temporal weighting); ``final`` the score the
    search ranked by.

    Example:
        >>> p = score_parts(0.5, 0.5, HybridRanking(temporal=None))
        >>> p.relevance, p.final, p.retention
        (0.75, 0.75, None)
    """

    cosine: float
    keyword: float = 0.0
    relevance: float = 0.0
    retention: float | None = None
    temporal_share: float = 0.0
    final: float = 0.0


def score_parts(
    similarity: float,
    keyword: float,
    ranking: HybridRanking,
    *,
    age_hours: float = 0.0,
    access_count: int = 0,
    memory_type: MemoryType = "episodic",
) -> ScoreParts:
    """The `ScoreParts` of one candidate under ``ranking`` (``keyword`` already normalised to [0, 1]).

    ``final`` equals what hybrid search ranks by: `fuse`, then
    `calculate_final_score` when ``ranking.temporal`` is set.
    """
    relevance = fuse(similarity, keyword, ranking.keyword_weight)
    if ranking.temporal is None:
        return ScoreParts(similarity, keyword, relevance, None, 0.0, relevance)
    kept = retention(age_hours, access_count, memory_type, ranking.temporal)
    final = min(1.0, max(0.0, relevance)) * (1.0 - ranking.temporal_share + ranking.temporal_share * kept)
    return ScoreParts(similarity, keyword, relevance, kept, ranking.temporal_share, final)


def score_parts_many(
    rows: Sequence[tuple[float, float, float, int, MemoryType]], ranking: HybridRanking
) -> list[ScoreParts]:
    """`score_parts` of many candidates, each ``(similarity, keyword, age_hours, access_count, memory_type)``.

    The same arithmetic as `score_parts`, candidate by candidate (the same
    floats), with each memory type's decay rate looked up once: a hybrid
    search scores about 40 candidates to keep 10.

    Example:
        >>> r = HybridRanking()
        >>> score_parts_many([(0.5, 0.5, 24.0, 2, "episodic")], r) == [
        ...     score_parts(0.5, 0.5, r, age_hours=24.0, access_count=2, memory_type="episodic")]
        True
    """
    weight = ranking.keyword_weight
    cfg = ranking.temporal
    out: list[ScoreParts] = []
    if cfg is None:
        for similarity, keyword, _age, _count, _type in rows:
            relevance = fuse(similarity, keyword, weight)
            out.append(ScoreParts(similarity, keyword, relevance, None, 0.0, relevance))
        return out
    share = ranking.temporal_share
    rates: dict[str, float] = {}
    for similarity, keyword, age_hours, access_count, memory_type in rows:
        relevance = fuse(similarity, keyword, weight)
        rate = rates.get(memory_type)
        if rate is None:
            rate = rates[memory_type] = cfg.decay_rate(memory_type)
        # `retention()`, inlined: temporal_weight * importance_multiplier, capped at 1.
        kept = min(1.0, math.exp(-rate * max(age_hours, 0.0)) * importance_multiplier(access_count, cfg))
        final = min(1.0, max(0.0, relevance)) * (1.0 - share + share * kept)
        out.append(ScoreParts(similarity, keyword, relevance, kept, share, final))
    return out


def keep_relevant(items: Sequence[S], min_relevance: float | None) -> list[S]:
    """The items scoring at least ``min_relevance``, in their order (all of them when it is None).

    Examples:
        >>> from langgraph.store.base import SearchItem
        >>> hits = [SearchItem(("n",), k, {}, None, None, score=s) for k, s in [("a", 0.9), ("b", 0.2), ("c", None)]]
        >>> [h.key for h in keep_relevant(hits, 0.5)], len(keep_relevant(hits, None))
        (['a'], 3)
    """
    if min_relevance is None:
        return list(items)
    return [it for it in items if it.score is not None and it.score >= min_relevance]
