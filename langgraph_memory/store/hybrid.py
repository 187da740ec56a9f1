"""Hybrid search: keyword and vector candidates, fused, then weighted by age and use.

A search with a query, when the store's ``ranking`` is a
:class:`~langgraph_memory.ranking.HybridRanking`, runs two searches over the
same scope and filter and ranks their union:

* **vector candidates**: the planner's own search (``exact`` or ``hnsw``,
  :mod:`.planner`), asked for ``ranking.candidates`` results;
* **keyword candidates**: the catalog's keyword index
  (:mod:`langgraph_memory.catalog.keywords`), scoped by the same SQL the
  planner builds for the namespace prefix and the filter index
  (:meth:`~.planner.Planner.candidate_sql`), each checked against the whole
  filter as vector hits are.

Each candidate then has both scores: a vector candidate's keyword score comes
from the keyword index restricted to it, a keyword candidate's cosine from its
vectors in the catalog. The ranking functions of :mod:`langgraph_memory.ranking`
turn them into the final score.

    >>> from langgraph_memory.ranking import HybridRanking
    >>> store = ChromaStore(data_dir="/tmp/m", index=..., ranking=HybridRanking())    # doctest: +SKIP
    >>> store.search(("research",), query="SPY RSI(14) lookback 60")                   # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from langgraph.store.base import SearchOp

from langgraph_memory.catalog import Catalog, StoredItem
from langgraph_memory.catalog import items as _items
from langgraph_memory.catalog import keywords as _keywords
from langgraph_memory.collections import collection_for
from langgraph_memory.ranking import HybridRanking, calculate_final_score, fuse, memory_type_for
from langgraph_memory.store import filters as _filters
from langgraph_memory.store.planner import Plan, Planner

__all__ = ["Candidate", "HybridSearch"]

logger = logging.getLogger(__name__)

Omit = Callable[[StoredItem], bool]
Hit = tuple[float | None, StoredItem]


@dataclass
class Candidate:
    """One item found by either search, with both of its scores."""

    item: StoredItem
    #: Cosine similarity of the query and the item's best vector.
    similarity: float
    #: BM25 score of the item for the query's words (0: no word in common).
    keyword: float = 0.0


class HybridSearch:
    """Runs hybrid searches over one catalog, through its planner.

    Args:
        catalog: the store's catalog (items, vectors, keyword index).
        planner: the store's planner (vector candidates and the scope SQL).
    """

    def __init__(self, catalog: Catalog, planner: Planner) -> None:
        self.catalog = catalog
        self.planner = planner

    def candidates(
        self, op: SearchOp, qvec: np.ndarray, ranking: HybridRanking, *, omit: Omit
    ) -> tuple[list[Candidate], list[StoredItem], Plan]:
        """Both searches' candidates with both scores, the matching items that have no vectors, and the plan."""
        depth = max(ranking.candidates, op.offset + op.limit)
        dense, plan = self.planner.run(op._replace(limit=depth, offset=0), qvec, omit=omit)
        found = {it.id: Candidate(it, float(score)) for score, it in dense if score is not None and it.id is not None}
        unscored = [it for score, it in dense if score is None]
        if not op.query or ranking.keyword_weight == 0.0:
            return list(found.values()), unscored, plan
        with self.catalog.read() as conn:
            scope = self.planner.candidate_sql(conn, op)
            if scope is None:
                return list(found.values()), unscored, plan
            where, params = scope
            top = _keywords.search(conn, op.query, where=where, params=params, limit=depth,
                                   length_norm=ranking.length_norm)
            scores = dict(top)
            rest = [i for i in found if i not in scores]
            scores.update(_keywords.search(conn, op.query, where=where, params=params, limit=len(rest),
                                           only=rest, length_norm=ranking.length_norm))
            new = [i for i, _ in top if i not in found]
            items = _items.get_by_ids(conn, new)
            vectors = _items.load_vectors(conn, list(items))
        for item_id in new:
            it = items.get(item_id)
            if it is None or not _filters.matches(it.value, op.filter) or omit(it):
                continue
            found[item_id] = Candidate(it, _best_cosine(vectors.get(item_id, []), qvec))
        for item_id, cand in found.items():
            cand.keyword = scores.get(item_id, 0.0)
        plan.notes.append(f"hybrid: {len(top)} keyword candidates, {len(new)} not among the vector candidates")
        return list(found.values()), unscored, plan

    def run(self, op: SearchOp, qvec: np.ndarray, ranking: HybridRanking, *, omit: Omit) -> tuple[list[Hit], Plan]:
        """Run ``op`` with hybrid ranking; return hits (best first, ``offset`` applied) and the plan."""
        cands, unscored, plan = self.candidates(op, qvec, ranking, omit=omit)
        need = op.offset + op.limit
        now = ranking.clock()
        scored = score_candidates(cands, ranking, now=now)
        hits: list[Hit] = [(score, c.item) for score, c in scored[:need]]
        if len(hits) < need:  # like the vector search: then the matching items without vectors, unscored
            hits.extend((None, it) for it in unscored[: need - len(hits)])
        return hits[op.offset : need], plan


def score_candidates(cands: list[Candidate], ranking: HybridRanking, *, now: float) -> list[tuple[float, Candidate]]:
    """Each candidate's final score (see :mod:`langgraph_memory.ranking`), best first."""
    top_keyword = max((c.keyword for c in cands), default=0.0)
    out: list[tuple[float, Candidate]] = []
    for c in cands:
        score = fuse(c.similarity, c.keyword / top_keyword if top_keyword > 0 else 0.0, ranking.keyword_weight)
        if ranking.temporal is not None:
            score = calculate_final_score(
                score,
                age_hours=(now - c.item.updated_at) / 3600.0,
                access_count=c.item.access_count,
                memory_type=memory_type_for(collection_for(c.item.namespace).name),
                config=ranking.temporal,
                temporal_share=ranking.temporal_share,
            )
        out.append((score, c))
    # Ties (e.g. negative cosines, all clipped to 0) fall back to the similarity, then the item id, as in
    # the vector search: with keywords and decay off the order is the vector search's.
    out.sort(key=lambda sc: (-sc[0], -sc[1].similarity, sc[1].item.id or 0))
    return out


def _best_cosine(rows: list[tuple[int, str, bytes]], qvec: np.ndarray) -> float:
    """The best cosine similarity of ``qvec`` with an item's vectors (0.0 for an item with none)."""
    if not rows:
        return 0.0
    matrix = np.frombuffer(b"".join(vec for _i, _p, vec in rows), dtype=np.float32).reshape(len(rows), -1)
    q = qvec.astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(q)) or 1.0)
    norms[norms == 0] = 1.0
    return float(((matrix @ q) / norms).max())
