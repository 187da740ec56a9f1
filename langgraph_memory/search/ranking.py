"""Ranking search results: hybrid fusion, temporal decay with reinforcement, the relevance threshold.

A search with [`HybridRanking`][langgraph_memory.HybridRanking] on (``ChromaStore(ranking=HybridRanking())``,
the default of ``Memory.open``) scores each candidate in these steps, each
keeping the score in [0, 1], higher better:

1. **similarity**: the cosine similarity of the query and the item's best
   vector, clipped at 0 (the relevance percentage / 100);
2. **relevance** = `fuse()` (similarity, keyword): keyword evidence can
   only raise a score: ``1 - (1 - similarity) * (1 - keyword_weight * keyword)``.
   ``keyword`` = `keyword_evidence()` of the item's BM25 score as a share ``x``
   of the query's idf mass (the sum of its terms' idf: what a memory of
   average length holding every query term scores): ``x^2 / (x^2 +
   keyword_half^2)``, half at ``keyword_half`` of the mass, strictly rising
   and never 1. The scale is the query's, not the candidates': a memory
   sharing only a common name with a query of three words gets little, however
   it ranks among the matches; an item without any query word gets 0 and keeps
   its cosine. With ``keyword_weight < 1`` and evidence below 1 the relevance
   rises strictly with either side and never reaches 1, so no two memories tie
   unless both sides do (a capped evidence and a weight of 1, the default
   before, gave 1.000 to any memory holding every query word);
3. **context** (conversation turns only, `langgraph_memory.search.neighbours`):
   a memory stored as a turn (``value["kind"] == "turn"``, key
   ``"<thread>:<position>"``: what session memory stores) is raised towards 1
   by its best neighbouring turn: ``1 - (1 - relevance) * (1 - neighbour_weight
   * g)``, ``g`` how far that neighbour's relevance stands above the mean of
   the vector search's candidates. Other memories keep their relevance;
4. **final** = `calculate_final_score()`: ``relevance * (1 - temporal_share
   + temporal_share * retention)``, where ``retention`` =
   ``min(1, temporal_weight(age) * importance_multiplier(accesses))``: a new
   or much-used memory keeps its relevance, an old unused one loses up to
   ``temporal_share`` of it;
5. **newer first** (`newer_first()`, memories that are not turns): when two
   results say nearly the same thing (their vectors' cosine at least
   ``supersede_similarity``) and the newer one scores at least
   ``supersede_ratio`` of the older's (both scoring at least ``NEWER_FLOOR``),
   the older is put just below the newer (``NEWER_MARGIN``): a restated, corrected or replaced fact comes after its
   replacement. Recency acts only there, so memories about different things
   keep their order whatever their age. Conversation turns are left alone: a
   conversation is a record of what was said when, and the turns of one
   conversation are so alike (a cosine of 0.7-0.8 between different
   statements on LoCoMo) that the rule would bury the sessions questions ask
   about.

Equal final scores (equal evidence) are ordered by the stronger side, then the cosine.

The fusion and its settings were chosen by leave-one-conversation-out on
LoCoMo, each conversation reported (``bench/results/RESULTS_ranking.md``): with
turns ranked with their neighbours, recall@10 is at least 0.03 above BM25
alone on every development conversation.

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

from langgraph_memory.registry import MemoryType

__all__ = [
    "HybridRanking",
    "ScoreParts",
    "score_parts",
    "score_parts_many",
    "fuse",
    "keyword_evidence",
    "retention",
    "calculate_final_score",
    "keep_relevant",
    "newer_first",
    "NEWER_MARGIN",
    "NEWER_FLOOR",
    "MemoryType",
    "TemporalConfig",
    "RANKING_TEMPORAL",
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


#: The rates `HybridRanking` ranks with by default: `TemporalConfig`'s, with episodic memories decaying at
#: 0.005 per hour (a day keeps 0.89, a month 0.03). Chosen with ``temporal_share = 0.2`` on
#: ``bench/recall/recency/`` (a restated, corrected or replaced fact should outrank the one it replaced) as the
#: best setting that costs LoCoMo no recall@10 and keeps the default 0.03 above BM25 on every conversation:
#: 72% of its questions put the current fact first, against 28% with the earlier share 0.1 and rate 0.01
#: (``bench/results/RESULTS_recency.md``).
RANKING_TEMPORAL = TemporalConfig(episodic_memory_decay=0.005)


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


def keyword_evidence(share: float, half: float) -> float:
    """Keyword evidence in [0, 1) from a BM25 score's ``share`` of the query's idf mass: ``x^2 / (x^2 + half^2)``.

    Small shares (one common word of a longer query) count little, a memory
    holding every query word counts much, and more evidence always counts more:
    it never reaches 1, so memories holding every word still differ by how well.

    Examples:
        >>> keyword_evidence(0.3, 0.3), round(keyword_evidence(1.0, 0.3), 3), round(keyword_evidence(0.07, 0.3), 3)
        (0.5, 0.917, 0.052)
    """
    if share <= 0.0 or half <= 0.0:
        return 0.0 if share <= 0.0 else 1.0
    x = share * share
    return x / (x + half * half)


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
    ``HybridRanking(keyword_weight=0.0, temporal=None, neighbours=0)`` ranks as plain cosine
    (``neighbours`` only changes how conversation turns rank).
    How the score is made: see `langgraph_memory.search.ranking`.

    Examples:
        >>> from langgraph_memory.search.ranking import HybridRanking, TemporalConfig
        >>> ranking = HybridRanking(temporal=TemporalConfig(episodic_memory_decay=0.001))
        >>> ranking.keyword_weight, ranking.temporal_share, ranking.neighbours
        (0.95, 0.2, 2)
    """

    #: How far keyword evidence raises a score (see `fuse()`); 0 turns keywords off. Below 1, no memory
    #: scores 1 and the score rises strictly with both the cosine and the keyword evidence.
    keyword_weight: float = 0.95
    #: The share of the query's idf mass at which keyword evidence is one half (`keyword_evidence()`).
    keyword_half: float = 0.3
    #: What keyword evidence is measured against: ``"query"``, the query's idf mass (a memory sharing only a
    #: common word gains little), or ``"best"``, the best BM25 among the candidates (the earlier scale: the
    #: best match always gets the full ``keyword_weight``, however weak; rank-only uses, with 0.6).
    keyword_scale: Literal["query", "best"] = "query"
    #: BM25 length normalisation ``b`` of keyword scores (0: none; FTS5's own is 0.75).
    length_norm: float = 0.3
    #: Candidates taken from each of the vector and the keyword search (at least ``offset + limit``).
    candidates: int = 20
    #: Decay and reinforcement rates; None: no temporal weighting. The default is `RANKING_TEMPORAL`, whose
    #: episodic rate was chosen for ranking on a recency benchmark (forgetting keeps `TemporalConfig`'s own).
    temporal: TemporalConfig | None = field(default_factory=lambda: RANKING_TEMPORAL)
    #: The share of a score that age and use may take away (see `calculate_final_score()`).
    temporal_share: float = 0.2
    #: The clock ages are measured against (seconds since the epoch), e.g. to rank "as of" a date.
    clock: Callable[[], float] = time.time
    #: How cosine and keyword evidence combine: ``"noisy-or"`` (`fuse()`, an absolute scale) or ``"zscore"``
    #: (each side's z-score over the candidates, ``z_cosine + zscore_weight * z_keyword``: a relative scale;
    #: see `langgraph_memory.search.neighbours`).
    fusion: Literal["noisy-or", "zscore"] = "noisy-or"
    #: Weight of the keyword z-score against the cosine's (``fusion="zscore"`` only).
    zscore_weight: float = 1.5
    #: Conversation turns (``value["kind"] == "turn"``, keys ``"<thread>:<position>"``: what session memory
    #: stores) up to this many positions apart in a namespace are neighbours: a turn is raised by its best
    #: neighbour, and the candidates' neighbouring turns are searched too (0: off). Other memories are
    #: not affected. See `langgraph_memory.search.neighbours`.
    neighbours: int = 2
    #: How far the best neighbour raises a turn: towards 1 under ``noisy-or`` (below 1 keeps scores apart),
    #: ``+ neighbour_weight * best`` under ``zscore``.
    neighbour_weight: float = 0.9
    #: Two results (not conversation turns) whose vectors' cosine is at least this say the same thing: the
    #: older goes just below the newer (`newer_first()`); None (the default): off. Leave-one-case-out on
    #: ``bench/recall/recency/`` chose 0.55 with ``supersede_ratio=0.7``: 90.6% of held-out cases put the current
    #: fact first, against 71.9% off, but 2 of 32 unreplaced facts of the same subject lost their place and
    #: LoCoMo turns stored as plain memories lost 0.05-0.07 recall@10 (``bench/results/RESULTS_recency.md``).
    supersede_similarity: float | None = None
    #: ... when the newer scores at least this share of the older's final score (a newer memory that answers
    #: the query much worse does not displace an older one that answers it).
    supersede_ratio: float = 0.7

    def __post_init__(self) -> None:
        _unit("keyword_weight", self.keyword_weight)
        _unit("length_norm", self.length_norm)
        _unit("temporal_share", self.temporal_share)
        if (
            isinstance(self.keyword_half, bool)
            or not isinstance(self.keyword_half, (int, float))
            or not 0.0 < self.keyword_half <= 10.0
        ):
            raise ValueError(
                f"HybridRanking.keyword_half must be a number above 0 and at most 10, got {self.keyword_half!r}"
            )
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
        if self.supersede_similarity is not None:
            _unit("supersede_similarity", self.supersede_similarity)
        _unit("supersede_ratio", self.supersede_ratio)
        if self.temporal is not None and not isinstance(self.temporal, TemporalConfig):
            raise ValueError(f"HybridRanking.temporal must be a TemporalConfig or None, got {self.temporal!r}")


@dataclass(frozen=True)
class ScoreParts:
    """Why a search hit scored what it did: each step of the score (see the module docstring).

    ``cosine`` is the raw cosine similarity of the query and the item's best
    vector; ``keyword`` its keyword evidence (`keyword_evidence()`, 0 to 1);
    ``relevance`` the two fused (with a turn's raise by its neighbours);
    ``retention`` what age and use left of it (None without temporal
    weighting); ``final`` the score the search ranked by. ``setting`` says
    which rule ranked the hit and ``neighbour`` which turn raised it (None: none).

    Example:
        >>> p = score_parts(0.5, 0.3, HybridRanking(temporal=None))
        >>> round(p.keyword, 3), round(p.relevance, 4), p.final == p.relevance, p.retention
        (0.5, 0.7375, True, None)
    """

    cosine: float
    keyword: float = 0.0
    relevance: float = 0.0
    retention: float | None = None
    temporal_share: float = 0.0
    final: float = 0.0
    #: Which rule ranked the hit: "cosine", "hybrid", or "hybrid, turn with neighbours" (see `why`).
    setting: str = "hybrid"
    #: The key of the neighbouring turn that raised this one, and by how much (``relevance`` includes it).
    neighbour: str | None = None
    raised_by: float = 0.0
    #: The key of a newer memory saying nearly the same thing that this one was put below (`newer_first()`),
    #: and the two memories' cosine.
    superseded_by: str | None = None
    superseded_similarity: float = 0.0

    @property
    def why(self) -> str:
        """One line on how the score was made.

        Example:
            >>> print(score_parts(0.5, 0.3, HybridRanking(temporal=None)).why)
            hybrid: cosine 0.500, keyword 0.500 -> relevance 0.738; final 0.738
        """
        head = f"{self.setting}: cosine {self.cosine:.3f}, keyword {self.keyword:.3f} -> relevance {self.relevance:.3f}"
        if self.neighbour is not None:
            head += f" (raised {self.raised_by:+.3f} by neighbouring turn {self.neighbour})"
        if self.retention is not None:
            head += f"; retention {self.retention:.3f} (share {self.temporal_share:g})"
        if self.superseded_by is not None:
            head += (
                f"; below newer {self.superseded_by}, which says nearly the same"
                f" (cosine {self.superseded_similarity:.3f})"
            )
        return head + f"; final {self.final:.3f}"


def score_parts(
    similarity: float,
    keyword: float,
    ranking: HybridRanking,
    *,
    age_hours: float = 0.0,
    access_count: int = 0,
    memory_type: MemoryType = "episodic",
) -> ScoreParts:
    """The `ScoreParts` of one candidate under ``ranking``, ``keyword`` its BM25 share of the query's idf mass.

    ``final`` equals what hybrid search ranks by (a memory that is not a
    conversation turn): `keyword_evidence`, `fuse`, then
    `calculate_final_score` when ``ranking.temporal`` is set.
    """
    keyword = _evidence_of(keyword, ranking)
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
        for similarity, kw_share, _age, _count, _type in rows:
            keyword = _evidence_of(kw_share, ranking)
            relevance = fuse(similarity, keyword, weight)
            out.append(ScoreParts(similarity, keyword, relevance, None, 0.0, relevance))
        return out
    share = ranking.temporal_share
    rates: dict[str, float] = {}
    for similarity, kw_share, age_hours, access_count, memory_type in rows:
        keyword = _evidence_of(kw_share, ranking)
        relevance = fuse(similarity, keyword, weight)
        rate = rates.get(memory_type)
        if rate is None:
            rate = rates[memory_type] = cfg.decay_rate(memory_type)
        # `retention()`, inlined: temporal_weight * importance_multiplier, capped at 1.
        kept = min(1.0, math.exp(-rate * max(age_hours, 0.0)) * importance_multiplier(access_count, cfg))
        final = min(1.0, max(0.0, relevance)) * (1.0 - share + share * kept)
        out.append(ScoreParts(similarity, keyword, relevance, kept, share, final))
    return out


def _evidence_of(share: float, ranking: HybridRanking) -> float:
    """Keyword evidence under ``ranking``: `keyword_evidence` on the query's scale; the share itself on the
    best candidate's (the earlier, rank-only scale, kept as it was)."""
    return keyword_evidence(share, ranking.keyword_half) if ranking.keyword_scale == "query" else share


#: An older memory put below a newer one saying the same thing scores at most this share of the newer's final
#: score: just below it, never tied with it (`newer_first()`).
NEWER_MARGIN = 0.99


#: Results scoring below this are not compared by `newer_first()`: they would not pass the default relevance
#: threshold (``MIN_RELEVANCE``, 0.3), and among such weak matches (cosines of 0.1) "saying the same thing" means
#: little while the rule would crowd their scores together.
NEWER_FLOOR = 0.3


def newer_first(
    finals: Sequence[float],
    updated_at: Sequence[float],
    similarity: Callable[[int, int], float],
    *,
    threshold: float,
    ratio: float,
) -> list[tuple[float, int | None, float]]:
    """Each result's final score after older near-duplicates are put below newer ones.

    ``finals`` are the results' final scores, ``updated_at`` when each was
    last written, ``similarity(i, j)`` the cosine of results ``i`` and ``j``.
    A result ``i`` for which a newer result ``j`` has ``similarity(i, j) >=
    threshold`` and a final score at least ``ratio`` of ``i``'s gets
    ``f_j * NEWER_MARGIN * (1 - (f_j / f_i - ratio) / 2)`` for the lowest
    such ``f_j`` (if that is lower than its own ``f_i``): it ranks just below
    every newer memory that says the same (at most ``(1 / NEWER_MARGIN -
    ratio) / 2`` of ``f_j`` lower), and memories put below the same one keep
    their own order. Newest first, so a chain of restatements ends in date
    order. Returns ``(final, j, similarity)`` per result (``j`` None: unchanged).

    Example:
        >>> cos = [[1.0, 0.8, 0.1], [0.8, 1.0, 0.1], [0.1, 0.1, 1.0]]
        >>> out = newer_first([0.9, 0.8, 0.85], [1.0, 2.0, 3.0], lambda i, j: cos[i][j], threshold=0.5, ratio=0.8)
        >>> [(round(f, 3), j) for f, j, _s in out]  # the first is older than the second and says the same
        [(0.757, 1), (0.8, None), (0.85, None)]
    """
    out: list[tuple[float, int | None, float]] = [(f, None, 0.0) for f in finals]
    order = sorted(range(len(finals)), key=lambda i: -updated_at[i])
    for pos, i in enumerate(order):
        own = out[i][0]
        best: tuple[float, int | None, float] = (own, None, 0.0)
        for j in order[:pos]:
            if own <= 0.0 or updated_at[j] <= updated_at[i] or out[j][0] < ratio * own:
                continue
            sim = similarity(i, j)
            # Just below the newer one, and still ordered by its own score among others put below it, at
            # about half its slope (an older memory is not pushed further down than that).
            below = out[j][0] * NEWER_MARGIN * (1.0 - (out[j][0] / own - ratio) / 2.0)
            if sim >= threshold and below < best[0]:
                best = (below, j, sim)
        out[i] = best
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
