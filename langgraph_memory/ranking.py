"""Ranking search results: the relevance threshold, and temporal decay with reinforcement.

One rule for every caller that recalls (graph nodes, agent tools and the
typed research API): an item passes ``min_relevance`` only with a score at
least that high, so unscored items (a search without a query) never pass it.

Temporal weighting follows seed 002's ``TemporalConfig``: a memory's weight
decays exponentially with its age, at a rate per hour set by its memory type
(:data:`MEMORY_TYPES` maps each collection to one), and every access raises
its importance by ``access_boost_factor``, up to ``max_importance_multiplier``.
A memory whose weight fell under ``forgetting_threshold`` may be forgotten.

The decay is ``exp(-rate * hours)``, with the rates of seed 002's table. The
seed's usage example (weight 0.9 after an hour, 0.4 after a day) does not fit
any one of its rates under either exponential or hyperbolic decay; we keep
the table, which the seed states as configuration, and document the
resulting weights: an episodic memory keeps 0.79 of its weight after a day
and 0.09 after ten days; a semantic one 0.98 after a day and 0.48 after a month.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from langgraph.store.base import SearchItem

__all__ = [
    "keep_relevant",
    "MemoryType",
    "TemporalConfig",
    "MEMORY_TYPES",
    "memory_type_for",
    "temporal_weight",
    "importance_multiplier",
]

S = TypeVar("S", bound=SearchItem)

MemoryType = Literal["working", "session", "episodic", "semantic"]

#: The memory type of each collection, which sets how fast its items decay.
#: Research findings, strategies and tool definitions are facts and procedures
#: (semantic: they stay true until superseded); lessons and regimes are things
#: that happened (episodic). The general collection holds whatever a graph or
#: LangMem writes there: mostly episodes of conversations, so episodic.
MEMORY_TYPES: dict[str, MemoryType] = {
    "research_findings": "semantic",
    "strategy_library": "semantic",
    "tool_definitions": "semantic",
    # A hypothesis is a claim held until evidence confirms or rejects it (then it is updated or superseded).
    "hypotheses": "semantic",
    # A backtest is a measurement that stays true for its strategy version and period; it leaves with them.
    "backtest_results": "semantic",
    "lessons_learned": "episodic",
    "market_regimes": "episodic",
    "memories": "episodic",
}


def memory_type_for(collection: str) -> MemoryType:
    """The memory type of ``collection`` (episodic for one not listed in :data:`MEMORY_TYPES`)."""
    return MEMORY_TYPES.get(collection, "episodic")


@dataclass(frozen=True)
class TemporalConfig:
    """How memories decay with age and gain weight with use (seed 002's defaults).

    Example:
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
        for name in ("working_memory_decay", "session_memory_decay", "episodic_memory_decay",
                     "semantic_memory_decay", "access_boost_factor", "forgetting_threshold"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                    and value >= 0):
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


def temporal_weight(age_hours: float, memory_type: MemoryType = "episodic", config: TemporalConfig | None = None) -> float:
    """``exp(-rate * age_hours)``: 1.0 for a new memory, falling towards 0 (a negative age counts as 0).

    Example:
        >>> round(temporal_weight(24.0, "episodic"), 3), round(temporal_weight(1.0, "working"), 3)
        (0.787, 0.607)
    """
    cfg = config or TemporalConfig()
    return math.exp(-cfg.decay_rate(memory_type) * max(age_hours, 0.0))


def importance_multiplier(access_count: int, config: TemporalConfig | None = None, base_importance: float = 1.0) -> float:
    """``base_importance * (1 + access_boost_factor * access_count)``, capped at ``max_importance_multiplier``.

    Example:
        >>> importance_multiplier(5), importance_multiplier(1000)
        (1.5, 5.0)
    """
    cfg = config or TemporalConfig()
    if not cfg.enable_reinforcement:
        return base_importance
    return min(base_importance * (1.0 + cfg.access_boost_factor * max(access_count, 0)), cfg.max_importance_multiplier)


def keep_relevant(items: Sequence[S], min_relevance: float | None) -> list[S]:
    """The items scoring at least ``min_relevance``, in their order (all of them when it is None).

    Example:
        >>> from langgraph.store.base import SearchItem
        >>> hits = [SearchItem(("n",), k, {}, None, None, score=s) for k, s in [("a", 0.9), ("b", 0.2), ("c", None)]]
        >>> [h.key for h in keep_relevant(hits, 0.5)], len(keep_relevant(hits, None))
        (['a'], 3)
    """
    if min_relevance is None:
        return list(items)
    return [it for it in items if it.score is not None and it.score >= min_relevance]
