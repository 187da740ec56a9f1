"""An older memory that a newer one restates, corrects or replaces ranks below it (``supersede_similarity``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_memory import Memory
from langgraph_memory.search.ranking import HybridRanking, newer_first

OLDER = "Dan's phone number is 555-0142."
NEWER = "Dan changed his number; reach him at 555-0199 from now on."
OTHER = "Dan is allergic to peanuts."
QUERY = "What is Dan's phone number?"
RULE = HybridRanking(supersede_similarity=0.55, supersede_ratio=0.8)


def _hits(mem: Memory, ns: tuple[str, ...], ranking: HybridRanking) -> dict[str, tuple[int, object]]:
    mem.store.ranking = ranking
    found = mem.store.search_explained(ns, query=QUERY, limit=10)
    return {h.item.key: (i, h.parts) for i, h in enumerate(found.hits)}


def test_an_older_fact_ranks_below_the_newer_one_that_replaces_it_and_explain_says_why(
    tmp_path: Path, real_embeddings
) -> None:
    with Memory.open(tmp_path / "m", embeddings=real_embeddings) as mem:
        for key, text in (("old", OLDER), ("other", OTHER), ("new", NEWER)):  # put in this order: "new" is newest
            mem.store.put(("facts",), key, {"text": text})
        off = _hits(mem, ("facts",), HybridRanking(supersede_similarity=None))
        on = _hits(mem, ("facts",), RULE)
    assert off["old"][0] < off["new"][0]  # the closer paraphrase wins on its own evidence ...
    assert on["new"][0] < on["old"][0]  # ... and goes below the newer statement with the rule
    old_parts, other_parts = on["old"][1], on["other"][1]
    assert old_parts.superseded_by == "new" and old_parts.superseded_similarity >= 0.55  # type: ignore[attr-defined]
    assert "below newer new" in old_parts.why  # type: ignore[attr-defined]
    assert other_parts.superseded_by is None  # type: ignore[attr-defined]  # a different fact keeps its score
    assert other_parts.relevance == off["other"][1].relevance  # type: ignore[attr-defined]


def test_conversation_turns_are_left_alone_by_the_rule(tmp_path: Path, real_embeddings) -> None:
    with Memory.open(tmp_path / "m", embeddings=real_embeddings) as mem:
        for pos, text in enumerate((OLDER, OTHER, NEWER)):
            mem.store.put(("chat",), f"t:{pos}", {"text": text, "kind": "turn"})
        on = _hits(mem, ("chat",), RULE)
    assert all(parts.superseded_by is None for _i, parts in on.values())  # type: ignore[attr-defined]


def test_memories_put_below_the_same_newer_one_keep_their_order_without_ties() -> None:
    cos = [[1.0, 0.9, 0.7], [0.9, 1.0, 0.7], [0.7, 0.7, 1.0]]
    out = newer_first([0.9, 0.85, 0.8], [1.0, 2.0, 3.0], lambda i, j: cos[i][j], threshold=0.5, ratio=0.8)
    finals = [f for f, _by, _sim in out]
    assert finals[2] > finals[1] > finals[0]  # each below the newer ones saying the same: date order
    assert [by for _f, by, _sim in out] == [1, 2, None]  # each names the newer memory it went below


@pytest.mark.parametrize("bad", [{"supersede_similarity": 1.5}, {"supersede_ratio": -0.1}])
def test_rule_settings_out_of_range_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError, match="supersede"):
        HybridRanking(**bad)
