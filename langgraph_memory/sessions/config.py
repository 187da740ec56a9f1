"""Every tunable of session memory in one place, with its defaults.

::

    from langgraph_memory.sessions import SessionConfig

    config = SessionConfig()                                   # the defaults
    short = SessionConfig(inactivity_threshold_minutes=10, max_turns_per_session=20)
    keep_all = SessionConfig(promotion_threshold=0.0)          # promote every turn

The design gives the session boundaries (30 minutes of inactivity, a topic
change under 0.3 similarity between consecutive turns, 50 turns, 2 hours),
the promotion threshold (0.7), the cleanup interval (15 minutes) and the cap
of 10 chunks per conversation turn. The rest are ours:

* the importance rule's weights (``information_weight``,
  ``information_saturation``, ``novelty_scale``, ``question_penalty``): see
  `langgraph_memory.sessions.importance` for the rule and how the
  defaults were measured;
* ``retention_hours`` (24): how long the turns of a promoted session stay in
  session memory (``get_all_recent_context``, ``include_expired=True``)
  before cleanup forgets them; what mattered lives on as episodic memory;
* ``promote_on_end`` (True): a turn that ends a session promotes the ended
  one at once; with False only [`promote_to_longterm()`][langgraph_memory.SessionMemory.promote_to_longterm]
  and the cleanup job promote (``add_turn`` then never embeds more than its own turn);
* ``chunking``: the contextual chunker's settings (an
  [`IngestConfig`][langgraph_memory.IngestConfig]) used for promoted turns.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from langgraph_memory.errors import ConfigError
from langgraph_memory.ingest.config import IngestConfig

__all__ = ["SessionConfig", "EPISODES_NAMESPACE"]

#: Where promoted turns go unless told otherwise (the general collection, memory type episodic).
EPISODES_NAMESPACE: tuple[str, ...] = ("episodes",)


def _positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"SessionConfig.{name} must be a positive number, got {value!r}")


def _unit(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ConfigError(f"SessionConfig.{name} must be a number from 0 to 1, got {value!r}")


@dataclass(frozen=True)
class SessionConfig:
    """How sessions start and end, and which of their turns become episodic memories.

    Args:
        duration_hours: a session ends this long after it started.
        max_turns_per_session: a session ends after this many turns.
        promotion_threshold: a turn whose importance reaches this is promoted
            (0 promotes every turn; above 1 none, except turns recorded with an importance).
        cleanup_interval_minutes: how often the scheduled cleanup runs.
        inactivity_threshold_minutes: a session ends after this long without a turn.
        topic_change_threshold: a turn whose embedding's cosine similarity
            with the previous turn's is under this starts a new session.
        max_chunks_per_turn: a promoted turn is cut into at most this many chunks.
        retention_hours: the turns of a promoted session are forgotten this long after it ended.
        promote_on_end: promote a session as soon as a turn ends it.
        information_weight: share of the importance that comes from how much a turn says.
        information_saturation: distinct content words at which a turn says "enough" (information 1).
        novelty_scale: dissimilarity to what is known at which a turn counts as fully new (novelty 1).
        question_penalty: importance taken from a turn made only of questions.
        chunking: the contextual chunker's settings for promoted turns.
    """

    duration_hours: float = 2.0
    max_turns_per_session: int = 50
    promotion_threshold: float = 0.7
    cleanup_interval_minutes: float = 15
    inactivity_threshold_minutes: float = 30
    topic_change_threshold: float = 0.3
    max_chunks_per_turn: int = 10
    retention_hours: float = 24.0
    promote_on_end: bool = True
    information_weight: float = 0.7
    information_saturation: int = 20
    novelty_scale: float = 0.7
    question_penalty: float = 0.2
    chunking: IngestConfig = field(default_factory=IngestConfig)

    def __post_init__(self) -> None:
        for name in (
            "duration_hours",
            "cleanup_interval_minutes",
            "inactivity_threshold_minutes",
            "retention_hours",
            "novelty_scale",
        ):
            _positive(name, getattr(self, name))
        for name in ("max_turns_per_session", "max_chunks_per_turn", "information_saturation"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"SessionConfig.{name} must be a whole number >= 1, got {value!r}")
        for name in ("topic_change_threshold", "information_weight", "question_penalty"):
            _unit(name, getattr(self, name))
        threshold = self.promotion_threshold
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not threshold >= 0.0:
            raise ConfigError(f"SessionConfig.promotion_threshold must be a number >= 0, got {threshold!r}")
        if not isinstance(self.promote_on_end, bool):
            raise ConfigError(f"SessionConfig.promote_on_end must be True or False, got {self.promote_on_end!r}")
        if not isinstance(self.chunking, IngestConfig) or self.chunking.chunker != "contextual":
            raise ConfigError("SessionConfig.chunking must be an IngestConfig with the contextual chunker")

    @property
    def inactivity_seconds(self) -> float:
        return self.inactivity_threshold_minutes * 60.0

    @property
    def duration_seconds(self) -> float:
        return self.duration_hours * 3600.0

    def replace(self, **changes: Any) -> SessionConfig:
        """A copy with some settings changed (validated again)."""
        return dataclasses.replace(self, **changes)
