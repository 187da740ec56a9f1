"""Conversation turns ranked with their neighbours, and z-score fusion (search/neighbours.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_memory.catalog import StoredItem
from langgraph_memory.search.neighbours import neighbour_keys, relative_relevance, thread_position
from langgraph_memory.search.ranking import HybridRanking
from langgraph_memory.store import ChromaStore
from tests.helpers.embedders import Unrelated


def _item(i: int, key: str, ns: tuple[str, ...] = ("s",), *, turn: bool = True) -> StoredItem:
    return StoredItem(ns, key, {"kind": "turn"} if turn else {}, 0.0, 0.0, 0.0, id=i)


def test_keys_name_a_thread_and_a_position() -> None:
    assert thread_position("abc:3") == ("abc", 3)
    assert thread_position("sess:with:colons:12") == ("sess:with:colons", 12)
    for key in ("plain", "x:", ":4", "x:-1", "x:1.5"):
        assert thread_position(key) is None, key
    items = [
        _item(1, "t:0"),
        _item(2, "t:1"),
        _item(3, "note"),
        _item(4, "t:1", ("other",)),
        _item(5, "u:1", turn=False),
    ]
    assert neighbour_keys(items, 2) == [
        (("s",), "t:2"),
        (("s",), "t:3"),
        (("other",), "t:0"),
        (("other",), "t:2"),
        (("other",), "t:3"),
    ]


def test_zscore_fusion_ranks_by_standing_among_the_searched_candidates() -> None:
    items = [_item(i, f"k{i}") for i in range(4)]
    sims, kws = [0.9, 0.5, 0.1, 0.5], [0.0, 2.0, 4.0, 100.0]
    joined = [False, False, False, True]  # the last one must not move the statistics
    rel = [
        r.relevance
        for r in relative_relevance(
            items, sims, kws, [0.0] * 4, joined, fusion="zscore", zscore_weight=1.0, neighbours=0, neighbour_weight=0.0
        )
    ]
    # Over the first three: z(cos) = (1.22, 0, -1.22), z(kw) = (-1.22, 0, 1.22): each sums to 0, then shifted.
    assert rel[0] == pytest.approx(rel[1]) and rel[1] == pytest.approx(rel[2])
    assert rel[3] == 1.0 and all(0.0 <= r <= 1.0 for r in rel)
    heavier = [r.relevance for r in relative_relevance(
        items[:3], sims[:3], kws[:3], [0.0] * 3, joined[:3], fusion="zscore", zscore_weight=2.0, neighbours=0,
        neighbour_weight=0.0,
    )]  # fmt: skip
    assert heavier[2] == 1.0 and heavier[0] < heavier[1] < heavier[2]


def test_a_turn_is_raised_towards_one_by_a_neighbour_above_the_mean_in_its_thread_only() -> None:
    items = [_item(1, "t:1"), _item(2, "t:2"), _item(3, "t:4"), _item(4, "u:3"), _item(5, "t:3", ("other",))]
    fused = [0.2, 0.8, 0.1, 0.9, 0.9]  # mean 0.58

    def run(radius: int, its: list[StoredItem] = items) -> list[float]:
        return [
            r.relevance
            for r in relative_relevance(
                its, [0.0] * 5, [0.0] * 5, fused, [False] * 5, fusion="noisy-or", zscore_weight=1.5,
                neighbours=radius, neighbour_weight=0.5,
            )
        ]  # fmt: skip

    g = (0.8 - 0.58) / (1 - 0.58)  # how far t:2 stands above the mean
    # t:1 is raised by t:2; t:2's neighbour is below the mean; t:4 has no neighbour at distance 1 (t:3 is in
    # another namespace); the others have none at all. Nothing is lowered, nothing reaches 1.
    assert run(1) == pytest.approx([1 - 0.8 * (1 - 0.5 * g), 0.8, 0.1, 0.9, 0.9])
    assert run(2)[2] == pytest.approx(1 - 0.9 * (1 - 0.5 * g))  # t:2 is two positions away
    # The same keys without the turn mark: nobody is raised.
    plain = [StoredItem(it.namespace, it.key, {}, 0.0, 0.0, 0.0, id=it.id) for it in items]
    assert run(2, plain) == pytest.approx(fused)


def test_search_finds_the_turn_after_the_one_that_matches(data_dir: Path) -> None:
    """The answer shares no word with the question; the turn before it does: neighbours bring it in."""
    store = ChromaStore(data_dir=data_dir, index={"dims": 4, "embed": Unrelated()})
    try:
        for i in range(40):
            store.put(("chat",), f"filler:{i}", {"text": f"we talked about the weather {i}", "topic": "a"})
        turns = [
            "Mel: good morning",
            "Caro: did you see the zebra at the zoo?",
            "Mel: yes, black and white stripes, so pretty",
            "Caro: let us go again",
        ]
        for i, text in enumerate(turns):
            store.put(("chat",), f"s1:{i}", {"text": text, "kind": "turn", "topic": "a" if i != 3 else "b"})
        store.put(("elsewhere",), "s1:2", {"text": "an unrelated memory with the same key", "kind": "turn"})
        query = "Where was the zebra?"

        store.ranking = HybridRanking(candidates=3, temporal=None, neighbours=0)
        plain = store.search(("chat",), query=query, limit=5, refresh_ttl=False)
        assert plain[0].key == "s1:1"
        assert "s1:2" not in [h.key for h in plain[:3]]  # cosine 0, no word in common: found only by chance

        store.ranking = HybridRanking(candidates=3, temporal=None, neighbours=1, neighbour_weight=0.5)
        hits = store.search(("chat",), query=query, limit=5, refresh_ttl=False, filter={"topic": "a"})
        assert [h.key for h in hits[:3]] == ["s1:1", "s1:0", "s1:2"] or [h.key for h in hits[:3]] == [
            "s1:1",
            "s1:2",
            "s1:0",
        ]
        # Equal evidence (no cosine, no word, the same neighbour): equal scores, and only then.
        assert hits[1].score == pytest.approx(hits[2].score) and 0 < hits[1].score < hits[0].score < 1.0
        explained = store.search_explained(("chat",), query=query, limit=3, filter={"topic": "a"})
        assert [h.parts.neighbour for h in explained.hits if h.parts] == [None, "s1:1", "s1:1"]
        assert "turn with neighbours (radius 1)" in explained.hits[1].parts.why  # type: ignore[union-attr]
        assert "s1:3" not in [h.key for h in hits]  # its neighbour matched, but the filter excludes it

        store.ranking = HybridRanking(candidates=3, temporal=None, fusion="zscore", neighbours=2)
        hits = store.search(("chat",), query=query, limit=4, refresh_ttl=False)
        assert hits[0].key == "s1:1" and hits[0].score == pytest.approx(1.0)
        assert {h.key for h in hits[1:4]} == {"s1:0", "s1:2", "s1:3"}
        assert all(0.0 <= h.score <= 1.0 for h in hits)
    finally:
        store.close()


def test_new_ranking_options_are_validated() -> None:
    for bad in [
        {"fusion": "rrf"},
        {"zscore_weight": -1},
        {"neighbour_weight": 11},
        {"neighbours": -1},
        {"neighbours": 1.5},
        {"neighbours": True},
    ]:
        with pytest.raises(ValueError):
            HybridRanking(**bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        HybridRanking(keyword_half=0)
    assert HybridRanking().neighbours == 2 and HybridRanking().fusion == "noisy-or"


async def test_async_search_ranks_as_the_sync_one(data_dir: Path) -> None:
    store = ChromaStore(
        data_dir=data_dir,
        index={"dims": 4, "embed": Unrelated()},
        ranking=HybridRanking(temporal=None, fusion="zscore", neighbours=1),
    )
    try:
        for i, text in enumerate(["hello there", "the zebra escaped", "it ran to the park", "bye"]):
            store.put(("chat",), f"t:{i}", {"text": text, "kind": "turn"})
        sync = store.search(("chat",), query="zebra", refresh_ttl=False)
        hits = await store.asearch(("chat",), query="zebra", refresh_ttl=False)
        assert [(h.key, h.score) for h in hits] == [(h.key, h.score) for h in sync]
        assert hits[0].key == "t:1" and {h.key for h in hits[1:3]} == {"t:0", "t:2"}
    finally:
        store.close()
