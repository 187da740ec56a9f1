"""A search that says why: each hit with its score parts, and the plan the search ran.

``ChromaStore.search_explained`` returns these. It is for inspecting a
memory (the browser UI's search page, debugging a recall): the reads are
not counted as accesses, so looking does not change what later searches rank.

    >>> found = store.search_explained(("lessons",), query="stops too tight", limit=5)
    >>> [(h.item.key == lesson.id, round(h.parts.keyword, 2), round(h.parts.retention, 2)) for h in found.hits]
    [(True, 0.93, 1.0)]
    >>> print(found.plan)
    exact over lessons_learned; 1 items in scope; ~1 candidates; hybrid: 1 keyword candidates, ...
"""

from __future__ import annotations

from dataclasses import dataclass, field

from langgraph.store.base import SearchItem

from langgraph_memory.search.planner import Plan
from langgraph_memory.search.ranking import ScoreParts

__all__ = ["ExplainedHit", "ExplainedSearch"]


@dataclass(frozen=True)
class ExplainedHit:
    """One hit: the item as ``search`` returns it, and its score parts (None when it was not scored)."""

    item: SearchItem
    parts: ScoreParts | None


@dataclass
class ExplainedSearch:
    """The hits, best first, and the plan the search ran (``str(plan)`` reads like ``explain``'s)."""

    hits: list[ExplainedHit] = field(default_factory=list)
    plan: Plan | None = None
    #: "hybrid" (keyword + vector + temporal), "cosine" (vector only) or "none" (no query: recent first).
    ranking: str = "none"
