"""Ranking search results: the relevance threshold recall applies.

One rule for every caller that recalls (graph nodes, agent tools and the
typed research API): an item passes ``min_relevance`` only with a score at
least that high, so unscored items (a search without a query) never pass it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from langgraph.store.base import SearchItem

__all__ = ["keep_relevant"]

S = TypeVar("S", bound=SearchItem)


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
