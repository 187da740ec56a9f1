"""A typed search result (``Hit``) reads like the store's own (``SearchItem``): the common guesses work.

``Memory.query_*`` returns hits with a typed ``.record``; ``store.search`` returns items with a ``.value``.
Code written for one and run on the other used to stop at ``AttributeError: 'Hit' object has no attribute
'value'``: a hit now has ``value``, ``key``, ``namespace`` and ``score`` as an item does, and asking it for a
record field says where that field is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_memory import Memory


def test_a_hit_has_value_key_namespace_and_score_like_a_store_item(tmp_path: Path, fake_embeddings) -> None:
    with Memory.open(tmp_path / "memory", embeddings=fake_embeddings) as mem:
        s = mem.store_strategy("mom", "60-day momentum")
        b = mem.store_backtest(s.id, sharpe=1.1, max_drawdown=0.18)
        (hit,) = mem.query_backtests("momentum backtest", strategy_id=s.id, min_relevance=None)
        (item,) = mem.store.search(("backtests",), query="momentum backtest")

    assert hit.key == item.key == hit.id == b.id
    assert hit.namespace == tuple(item.namespace) == ("backtests",)
    assert hit.score == pytest.approx(item.score)
    assert hit.value["sharpe"] == item.value["sharpe"] == 1.1
    assert {k: v for k, v in hit.value.items() if k in item.value} == {
        k: v for k, v in item.value.items() if k in hit.value
    }


def test_asking_a_hit_for_a_record_field_says_where_it_is(tmp_path: Path, fake_embeddings) -> None:
    with Memory.open(tmp_path / "memory", embeddings=fake_embeddings) as mem:
        mem.store_lesson("Tight stops get hit by noise")
        (hit,) = mem.get_relevant_lessons("stops", min_relevance=None)
    with pytest.raises(AttributeError, match=r"hit\.record\.lesson"):
        hit.lesson  # noqa: B018 - the guess a user makes
    with pytest.raises(AttributeError, match="has no attribute 'nonsense'$"):
        hit.nonsense  # noqa: B018
    assert hit.record.lesson == hit.value["lesson"] == "Tight stops get hit by noise"
