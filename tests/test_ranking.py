"""Temporal decay and reinforcement primitives (TemporalConfig)."""

from __future__ import annotations

import math

import pytest

from langgraph_memory.research.collections import memory_type_for
from langgraph_memory.store.ranking import (
    TemporalConfig,
    importance_multiplier,
    temporal_weight,
)


def test_decay_follows_each_memory_types_rate() -> None:
    cfg = TemporalConfig()
    for kind, rate in [("working", 0.5), ("session", 0.1), ("episodic", 0.01), ("semantic", 0.001)]:
        assert temporal_weight(0.0, kind, cfg) == 1.0
        assert temporal_weight(10.0, kind, cfg) == pytest.approx(math.exp(-rate * 10.0))
    # Faster types lose more weight over the same time.
    weights = [temporal_weight(24.0, k) for k in ("working", "session", "episodic", "semantic")]
    assert weights == sorted(weights)
    assert temporal_weight(-5.0, "working") == 1.0  # a clock a little behind never boosts


def test_overridden_rates_apply() -> None:
    slow = TemporalConfig(episodic_memory_decay=0.0)
    assert temporal_weight(1000.0, "episodic", slow) == 1.0
    with pytest.raises(ValueError, match="episodic_memory_decay"):
        TemporalConfig(episodic_memory_decay=-1.0)
    with pytest.raises(ValueError, match="unknown memory type"):
        temporal_weight(1.0, "procedural")  # type: ignore[arg-type]


def test_reinforcement_grows_by_access_and_stops_at_the_cap() -> None:
    cfg = TemporalConfig()
    assert importance_multiplier(0, cfg) == 1.0
    assert importance_multiplier(3, cfg) == pytest.approx(1.3)
    assert importance_multiplier(40, cfg) == 5.0
    assert importance_multiplier(10**6, cfg) == 5.0
    assert importance_multiplier(40, TemporalConfig(enable_reinforcement=False)) == 1.0


def test_collections_map_to_memory_types() -> None:
    assert memory_type_for("lessons_learned") == "episodic"
    assert memory_type_for("research_findings") == "semantic"
    assert memory_type_for("something_new") == "episodic"
