"""Temporal decay and reinforcement primitives (TemporalConfig)."""

from __future__ import annotations

import math

import pytest

from langgraph_memory.research.collections import memory_type_for
from langgraph_memory.search.ranking import (
    HybridRanking,
    TemporalConfig,
    importance_multiplier,
    score_parts,
    score_parts_many,
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


@pytest.mark.parametrize(
    "ranking",
    [HybridRanking(), HybridRanking(temporal=None), HybridRanking(temporal=TemporalConfig(enable_reinforcement=False))],
    ids=["decay", "no-decay", "no-reinforcement"],
)
def test_scoring_many_candidates_gives_each_the_same_floats_as_scoring_it_alone(ranking: HybridRanking) -> None:
    import random

    rng = random.Random(7)
    types = ["working", "session", "episodic", "semantic"]
    rows = [
        (rng.uniform(-0.2, 1.0), rng.random(), rng.uniform(-5.0, 5000.0), rng.randrange(0, 80), rng.choice(types))
        for _ in range(400)
    ]
    many = score_parts_many(rows, ranking)  # type: ignore[arg-type]
    alone = [
        score_parts(sim, kw, ranking, age_hours=age, access_count=n, memory_type=mt)  # type: ignore[arg-type]
        for sim, kw, age, n, mt in rows
    ]
    assert many == alone  # exact: the fused ranking must not move by a bit
    with pytest.raises(ValueError, match="unknown memory type"):
        score_parts_many([(0.5, 0.5, 1.0, 0, "yearly")], HybridRanking())  # type: ignore[list-item]
