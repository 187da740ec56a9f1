"""Hybrid search: keyword and vector candidates, fused, then weighted by age and use.

A search with a query, when the store's ``ranking`` is a
[`HybridRanking`][langgraph_memory.HybridRanking], runs two searches over the
same scope and filter and ranks their union:

* **vector candidates**: the planner's own search (``exact`` or ``hnsw``,
  `planner`), asked for ``ranking.candidates`` results;
* **keyword candidates**: the catalog's keyword index
  (`langgraph_memory.catalog.keywords`), read inside the vector search's own
  snapshot (`Planner.run()`'s ``then``): the best matches in the same scope
  and filter, checked as vector hits are. The scope is the planner's
  (`ScopeScorer`): in memory when the collection is, else its SQL. A scope
  of at most `WITHIN_MAX` items, all scored by an ``exact`` plan, has its
  items' keyword scores looked up in the posting lists; a larger one scores
  the query's words over the whole index and walks the best matches.

Each candidate then has both scores: the keyword index scores the items
holding a query word, and a keyword candidate's cosine comes from the
planner's own scoring (the one the vector search would have given it), so
only the keyword candidates kept are read from the catalog; and a keyword
candidate whose score cannot reach the best results' (`Bar`) is not scored,
nor read when the walk over the matches did not need its item.
The ranking functions of `langgraph_memory.search.ranking`
turn them into the final score.

    >>> from langgraph_memory.search.ranking import HybridRanking
    >>> store = ChromaStore(data_dir="/tmp/m", index=..., ranking=HybridRanking())  # needs an open store (store) holding the items named  # doctest: +SKIP
    >>> store.search(("research",), query="SPY RSI(14) lookback 60")  # needs an open store (store) holding the items named  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import Any

import numpy as np
from langgraph.store.base import SearchOp

from langgraph_memory.catalog import Catalog, StoredItem
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import keywords as _keywords
from langgraph_memory.catalog.keyword_cache import PostingCache
from langgraph_memory.registry import PLAIN, CollectionRegistry, MemoryType
from langgraph_memory.search import filters as _filters
from langgraph_memory.search import neighbours as _neighbours
from langgraph_memory.search.plan import LateOmit, Plan, keep_all
from langgraph_memory.search.planner import Planner, ScopeScorer
from langgraph_memory.search.ranking import (
    NEWER_FLOOR,
    HybridRanking,
    ScoreParts,
    _evidence_of,
    fuse,
    newer_first,
    score_parts_many,
)

__all__ = ["Bar", "Candidate", "Candidates", "HybridSearch", "score_candidates", "explain_candidates"]

logger = logging.getLogger(__name__)

Omit = Callable[[StoredItem], bool]
Hit = tuple[float | None, StoredItem]

#: A search whose scope holds at most this many scored items looks their keyword scores up in the posting lists
#: (`keywords.match()` ``within``); a larger one scores the query's words over the whole index and walks its best.
WITHIN_MAX = 2000
#: Keyword statistics of another moment (`keywords.Corpus`), or what makes them inside the search's own snapshot
#: from its connection (a search as of a past moment reads them with the rest of the search: one transaction).
CorpusOf = _keywords.Corpus | Callable[[Any], _keywords.Corpus]


@dataclass
class Candidate:
    """One item found by either search, with both of its scores."""

    item: StoredItem
    #: Cosine similarity of the query and the item's best vector.
    similarity: float
    #: BM25 score of the item for the query's words (0: no word in common).
    keyword: float = 0.0
    #: The BM25 score as a share of the query's idf mass: what the fusion squashes into evidence (see
    #: `langgraph_memory.catalog.keywords.KeywordMatches.evidence()` and `ranking.keyword_evidence`).
    evidence: float = 0.0
    #: Read only as a neighbouring turn of another candidate (``HybridRanking.neighbours``).
    joined: bool = False
    #: Found by the vector search (its candidates' mean relevance is what a turn's neighbour must beat).
    vector: bool = False


@dataclass
class Candidates:
    """What both searches found for one query."""

    items: list[Candidate]
    #: Matching items without vectors (they follow the scored ones when too few are scored, as in vector search).
    unscored: list[StoredItem]
    plan: Plan
    #: Score parts already computed, by item id (see `Bar`), for `explain_candidates` to reuse.
    parts: dict[int, ScoreParts] = dataclasses.field(default_factory=dict)


#: A keyword candidate is dropped when its relevance is below the bar by more than this share: a final score is
#: its relevance times a temporal factor of at most 1, which float rounding could exceed by an ulp.
_BAR_SLACK = 1e-9


@dataclass(frozen=True)
class Bar:
    """The final score a candidate must reach to be among a search's ``best`` results.

    Read from the vector candidates, which are scored first: at least
    ``best`` of them score ``score`` or more. A keyword candidate's final
    score is at most its relevance (`fuse()` of its cosine and keyword
    evidence: temporal weighting only takes away), known before its item is
    read; below the bar it cannot be among the ``best`` (ties included), so
    it is not scored, and not read unless the walk over the matches needs
    its item to know where it ends (an ``hnsw`` plan's filter and omit
    checks). Measured on ``bench/recall/hybrid_bench.py`` at 10,000 items: 16 of
    the 17 keyword candidates a search finds beside its vector candidates
    fall below.

    Only where a candidate's score depends on itself alone (``noisy-or``
    fusion on the query's scale): `Bar.of()` gives None otherwise. A
    conversation turn may be raised by its neighbours (`neighbours`), so
    a keyword candidate that is a turn is always kept; the raise only adds, so
    the bar set before it stays a floor.
    """

    score: float
    matches: _keywords.KeywordMatches
    ranking: HybridRanking
    #: The vector candidates' score parts by item id, computed to set the bar (`explain_candidates` reuses them).
    parts: dict[int, ScoreParts]

    @classmethod
    def of(
        cls,
        dense: list[Hit],
        matches: _keywords.KeywordMatches,
        ranking: HybridRanking,
        *,
        now: float,
        best: int,
        collections: CollectionRegistry,
    ) -> Bar | None:
        """The bar set by the vector candidates ``dense`` (None: too few of them, or a ranking that compares)."""
        if not _scored_alone(ranking) or best <= 0:
            return None
        scored = {it.id: (float(score), it) for score, it in dense if score is not None and it.id is not None}
        if len(scored) < best:
            return None
        entries = [
            (sim, matches.evidence(kw), it)
            for (sim, it), kw in zip(scored.values(), matches.scores_of(list(scored)), strict=True)
        ]
        parts = score_parts_many(_score_rows(entries, now, collections), ranking)
        finals = sorted(p.final for p in parts)
        return cls(finals[-best], matches, ranking, dict(zip(scored, parts, strict=True)))

    def reaching(
        self,
        item_ids: list[int],
        sims: dict[int, float],
        turns: Callable[[list[int]], Container[int]] | None = None,
    ) -> list[int]:
        """Those of ``item_ids`` (cosines in ``sims``) whose final score could reach the bar, in their order.

        ``turns`` says which of the others are conversation turns, which their neighbours may raise: those
        are kept too (with ``HybridRanking.neighbours`` on).
        """
        scores = self.matches.scores_of(item_ids)
        weight = self.ranking.keyword_weight
        ok = [
            fuse(sims[i], _evidence_of(self.matches.evidence(kw), self.ranking), weight) * (1.0 + _BAR_SLACK)
            >= self.score
            for i, kw in zip(item_ids, scores, strict=True)
        ]
        if turns is not None and self.ranking.neighbours and not all(ok):
            raised = turns([i for i, good in zip(item_ids, ok, strict=True) if not good])
            ok = [good or i in raised for i, good in zip(item_ids, ok, strict=True)]
        return [i for i, good in zip(item_ids, ok, strict=True) if good]


@dataclass
class _KeywordSide:
    """What the keyword search of one hybrid search found, beside the vector candidates."""

    matches: _keywords.KeywordMatches
    #: Keyword candidates the vector search did not return, each with its cosine, best match first.
    new: list[tuple[StoredItem, float]]
    #: Thread neighbours read for ``HybridRanking.neighbours``, each with its vectors' bytes.
    joined: list[tuple[StoredItem, list[bytes]]]
    #: How many keyword candidates there were (vector candidates among them).
    n_top: int
    #: How many keyword candidates were not vector candidates (those below the `Bar` included).
    n_new: int = 0
    #: The bar the keyword candidates were held to (None: none).
    bar: Bar | None = None


class HybridSearch:
    """Runs hybrid searches over one catalog, through its planner.

    Args:
        catalog: the store's catalog (items, vectors, keyword index).
        planner: the store's planner (vector candidates and the scope SQL).
    """

    def __init__(self, catalog: Catalog, planner: Planner, collections: CollectionRegistry) -> None:
        self.catalog = catalog
        self.planner = planner
        self.collections = collections
        # Query words held by most items have long posting lists: read once per change of the index
        # (None: read every list for every search).
        self.postings: PostingCache | None = PostingCache()

    def candidates(
        self,
        op: SearchOp,
        qvec: np.ndarray,
        ranking: HybridRanking,
        *,
        omit: Omit | None = None,
        omit_for: LateOmit | None = None,
        best: int | None = None,
        now: float | None = None,
        corpus: CorpusOf | None = None,
    ) -> Candidates:
        """Both searches' candidates with both scores (and the matching items that have no vectors).

        What to leave out is ``omit``, or ``omit_for(conn, status version)``, as for `Planner.run()`.
        With ``best`` (and ``now``, the time ages are measured at), only the
        candidates that can be among the ``best`` final scores are kept: a
        keyword candidate whose score could not reach the ``best``-th vector
        candidate's is neither read nor scored (`Bar`). ``corpus``: keyword
        statistics of another moment (a search as of a past one), or a function making them from the search's
        connection, called once inside its snapshot.
        """
        depth = max(ranking.candidates, op.offset + op.limit)
        keyword: list[_KeywordSide] = []
        early: list[_keywords.KeywordMatches] = []
        made: list[_keywords.Corpus] = []

        def corpus_in(conn: Any) -> _keywords.Corpus | None:
            if not callable(corpus):
                return corpus
            if not made:
                made.append(corpus(conn))
            return made[0]

        def keyword_side(conn: Any, scorer: ScopeScorer, dense: list[Hit], omit: Omit) -> None:
            matches = early[0] if early else None
            keyword.append(
                self._keyword_side(conn, scorer, op, ranking, depth, dense, omit, best, now, matches, corpus_in(conn))
            )

        def match_early(conn: Any) -> None:
            # While Chroma answers the vector query (in its worker, the GIL released) the posting lists are read.
            assert op.query is not None
            early.append(self._match(conn, op.query, ranking, corpus=corpus_in(conn)))

        wanted = bool(op.query) and ranking.keyword_weight != 0.0
        dense, plan = self.planner.run(
            op._replace(limit=depth, offset=0),
            qvec,
            omit=omit,
            omit_for=omit_for,
            then=keyword_side if wanted else None,
            meanwhile=match_early if wanted else None,
        )
        found = {
            it.id: Candidate(it, float(score), vector=True)
            for score, it in dense
            if score is not None and it.id is not None
        }
        out = Candidates(list(found.values()), [it for score, it in dense if score is None], plan)
        if not keyword:
            return out
        side = keyword[0]
        if side.bar is not None:
            out.parts = side.bar.parts
        for cand, score in zip(found.values(), side.matches.scores_of(list(found)), strict=True):
            cand.keyword, cand.evidence = score, side.matches.evidence(score)
        scores = side.matches.scores_of([it.id or -1 for it, _sim in side.new])
        out.items.extend(
            Candidate(it, sim, score, side.matches.evidence(score))
            for (it, sim), score in zip(side.new, scores, strict=True)
        )
        if side.joined:
            have = {c.item.id for c in out.items}
            extra = [(it, vecs) for it, vecs in side.joined if it.id not in have]
            sims = _best_cosines([vecs for _it, vecs in extra], qvec)
            scores = side.matches.scores_of([it.id or -1 for it, _vecs in extra])
            out.items.extend(
                Candidate(it, sim, score, side.matches.evidence(score), joined=True)
                for (it, _vecs), sim, score in zip(extra, sims, scores, strict=True)
            )
        plan.notes.append(
            f"hybrid: {side.n_top} keyword candidates, {side.n_new} not among the vector candidates,"
            f" {len(side.new)} of them scored"
        )
        return out

    def _keyword_side(
        self,
        conn: Any,
        scorer: ScopeScorer,
        op: SearchOp,
        ranking: HybridRanking,
        depth: int,
        dense: list[Hit],
        omit: Omit,
        best: int | None = None,
        now: float | None = None,
        matches: _keywords.KeywordMatches | None = None,
        corpus: _keywords.Corpus | None = None,
    ) -> _KeywordSide:
        """The keyword candidates of a search, inside its snapshot: the best ``depth`` matches in scope.

        Each keyword candidate's cosine comes from the planner's own scoring
        (`ScopeScorer`: in memory when the collection is), so it is the one the
        vector search would have given it; only the candidates kept are read.
        With ``best`` and ``now``, those that cannot reach the ``best`` final scores are dropped (`Bar`).
        ``matches``: the query's keyword matches over the whole index, read already in this snapshot.
        """
        assert op.query is not None
        skip: Container[int] = getattr(omit, "skip_ids", ())  # items the omit is known to leave out: not read
        found = {it.id for score, it in dense if score is not None and it.id is not None}
        known = np.fromiter(found, dtype=np.int64, count=len(found))
        within = scorer.exact_ids(WITHIN_MAX)
        if within is not None:
            # Few items in scope, all scored by the vector search: look their scores up in the posting lists.
            within = np.union1d(within, known)
        if matches is None or within is not None:
            matches = self._match(conn, op.query, ranking, within, corpus)
        bars: list[Bar | None] = []

        def bar() -> Bar | None:
            # Set only when there are keyword candidates to hold to it (it scores the vector candidates early).
            if not bars:
                bars.append(
                    None
                    if best is None or now is None
                    else Bar.of(dense, matches, ranking, now=now, best=best, collections=self.collections)
                )
            return bars[0]

        sims: dict[int, float] = {}
        read: dict[int, StoredItem] = {}
        if scorer.exact:
            # As the exact plan's candidates: the best matches in scope (checked on values afterwards).
            if within is not None:
                top = matches.best(depth).tolist()
            else:

                def member(chunk: list[int]) -> dict[int, float]:
                    got = scorer.rank(chunk)
                    sims.update(got)
                    return got

                top = matches.walk(member, depth, known=found)
            rest = [i for i in top if i not in found]
            missing = [i for i in rest if i not in sims]
            if missing:
                # Matches ``within`` are items the search scored: in scope and meeting the filter index already.
                sims.update(scorer.rank(missing, filter_index=within is None))
            rest = [i for i in rest if i in sims]
            held = bar() if rest else None
            if held is not None:
                # The walk above never looked at the items: one that cannot win need not be read.
                rest = held.reaching(rest, sims, lambda ids: _turn_ids(conn, ids))
            read = _item_rows.get_by_ids(conn, [i for i in rest if i not in skip])
        else:
            # Many: the best matches in scope that pass the filter, read in batches.
            counted = scorer.filter_exact and omit is keep_all

            def count(chunk: list[int]) -> Container[int]:
                # The filter index says which items pass and none is left out, so the walk knows where it
                # ends without reading items: only those that could reach the bar are read.
                got = scorer.rank(chunk)
                sims.update(got)
                held = bar()
                ids = list(got) if held is None else held.reaching(list(got), got, lambda ids: _turn_ids(conn, ids))
                read.update(_item_rows.get_by_ids(conn, ids))
                return got.keys()

            def fetch(chunk: list[int]) -> Container[int]:
                # Scope and vectors from the scorer; the filter index checked as the items are read.
                got = scorer.rank(chunk, filter_index=False)
                items = scorer.items([i for i in got if i not in skip])
                kept = {i for i, it in items.items() if _filters.matches(it.value, op.filter) and not omit(it)}
                sims.update((i, got[i]) for i in kept)
                read.update((i, items[i]) for i in kept)
                return kept

            top = matches.walk(count if counted else fetch, depth, known=found)
        n_new = sum(1 for i in top if i not in found)
        new = [(read[i], sims[i]) for i in top if i not in found and i in read]
        new = [(it, sim) for it, sim in new if _filters.matches(it.value, op.filter) and not omit(it)]
        held = bar() if new else None
        if held is not None and not scorer.exact:
            # (Read already: the walk needed each item's filter and omit check to know where it ends.)
            turns = {it.id for it, _sim in new if it.id is not None and _neighbours.is_turn(it)}
            kept = set(
                held.reaching(
                    [it.id or -1 for it, _sim in new], {it.id or -1: sim for it, sim in new}, lambda _ids: turns
                )
            )
            new = [(it, sim) for it, sim in new if it.id in kept]
        joined: list[tuple[StoredItem, list[bytes]]] = []
        if ranking.neighbours:
            searched = [it for score, it in dense if score is not None]
            searched += [read[i] for i in top if i not in found and i in read]
            joined = self._neighbours(conn, op, searched, ranking.neighbours, omit)
        return _KeywordSide(matches, new, joined, len(top), n_new, bars[0] if bars else None)

    def _match(
        self,
        conn: Any,
        query: str,
        ranking: HybridRanking,
        within: np.ndarray | None = None,
        corpus: _keywords.Corpus | None = None,
    ) -> _keywords.KeywordMatches:
        return _keywords.match(
            conn, query, length_norm=ranking.length_norm, cache=self.postings, within=within, corpus=corpus
        )

    def _neighbours(
        self, conn: Any, op: SearchOp, items: list[StoredItem], radius: int, omit: Omit
    ) -> list[tuple[StoredItem, list[bytes]]]:
        """The neighbouring turns of the turns among ``items`` that the search's filter allows, each with its
        vectors' bytes."""
        keys = _neighbours.neighbour_keys(items, radius)
        if not keys:
            return []
        got = _item_rows.get_items(conn, keys)
        kept = [
            it
            for it in got.values()
            if it.id is not None and _neighbours.is_turn(it) and _filters.matches(it.value, op.filter) and not omit(it)
        ]
        vecs = _item_rows.load_vectors(conn, [it.id for it in kept if it.id is not None])
        return [(it, [v for _idx, _path, v in vecs.get(it.id or -1, [])]) for it in kept if vecs.get(it.id or -1)]

    def run(
        self,
        op: SearchOp,
        qvec: np.ndarray,
        ranking: HybridRanking,
        *,
        omit: Omit | None = None,
        omit_for: LateOmit | None = None,
        corpus: CorpusOf | None = None,
    ) -> tuple[list[Hit], Plan]:
        """Run ``op`` with hybrid ranking; return hits (best first, ``offset`` applied) and the plan."""
        hits, plan = self.run_explained(op, qvec, ranking, omit=omit, omit_for=omit_for, corpus=corpus)
        return [(parts.final if parts is not None else None, it) for parts, it in hits], plan

    def run_explained(
        self,
        op: SearchOp,
        qvec: np.ndarray,
        ranking: HybridRanking,
        *,
        omit: Omit | None = None,
        omit_for: LateOmit | None = None,
        corpus: CorpusOf | None = None,
    ) -> tuple[list[tuple[ScoreParts | None, StoredItem]], Plan]:
        """``run``, each hit with its `ScoreParts` (None: unscored)."""
        need = op.offset + op.limit
        now = ranking.clock()
        found = self.candidates(op, qvec, ranking, omit=omit, omit_for=omit_for, best=need, now=now, corpus=corpus)
        scored = explain_candidates(found.items, ranking, now=now, collections=self.collections, known=found.parts)
        if ranking.supersede_similarity is not None and scored:
            scored = self._newer_first(scored, ranking, need)
        hits: list[tuple[ScoreParts | None, StoredItem]] = [(parts, c.item) for parts, c in scored[:need]]
        if len(hits) < need:  # like the vector search: then the matching items without vectors, unscored
            hits.extend((None, it) for it in found.unscored[: need - len(hits)])
        return hits[op.offset : need], found.plan

    def _newer_first(
        self, scored: list[tuple[ScoreParts, Candidate]], ranking: HybridRanking, need: int
    ) -> list[tuple[ScoreParts, Candidate]]:
        """``scored`` (best first) with older near-duplicates put below newer ones (`ranking.newer_first()`).

        Only the results that can change the first ``need`` are compared: those
        scoring at least ``supersede_ratio`` of the ``need``-th score (a newer
        memory must score that share of an older one's to displace it) and at
        least ``NEWER_FLOOR``, and not conversation turns. Their vectors are
        read for the comparison. (A keyword candidate left out by the `Bar`
        is not brought back when a result above it is lowered.)
        """
        floor = max(NEWER_FLOOR, scored[min(need, len(scored)) - 1][0].final * ranking.supersede_ratio)
        pool = [
            k
            for k, (parts, c) in enumerate(scored)
            if parts.final >= floor and c.item.id is not None and not _neighbours.is_turn(c.item)
        ]
        if len(pool) < 2:
            return scored
        with self.catalog.read() as conn:
            got = _item_rows.load_vectors(conn, [scored[k][1].item.id or -1 for k in pool])
        blobs, owner = [], []
        for pos, k in enumerate(pool):
            for _idx, _path, vec in got.get(scored[k][1].item.id or -1, []):
                blobs.append(vec)
                owner.append(pos)
        if not blobs:
            return scored
        # Every pair's best cosine over the two items' vectors, in one product (a pair at a time in Python, or
        # np.maximum.at, cost about 5 ms for 40 results on hybrid_bench); the vectors come grouped by item, so
        # reduceat takes each group's best. An item without vectors resembles nothing (-1).
        rows = _unit_rows(blobs)
        assert rows is not None
        at = np.asarray(owner)
        starts = np.flatnonzero(np.r_[True, at[1:] != at[:-1]])
        best = np.maximum.reduceat(np.maximum.reduceat(rows @ rows.T, starts, axis=0), starts, axis=1)
        sims = np.full((len(pool), len(pool)), -1.0)
        sims[np.ix_(at[starts], at[starts])] = best

        moved = newer_first(
            [scored[k][0].final for k in pool],
            [scored[k][1].item.updated_at for k in pool],
            lambda a, b: float(sims[a, b]),
            threshold=ranking.supersede_similarity or 0.0,
            ratio=ranking.supersede_ratio,
        )
        out = list(scored)
        for k, (final, by, sim) in zip(pool, moved, strict=True):
            if by is not None:
                parts, cand = scored[k]
                out[k] = (
                    dataclasses.replace(
                        parts, final=final, superseded_by=scored[pool[by]][1].item.key, superseded_similarity=sim
                    ),
                    cand,
                )
        out.sort(key=_order)
        return out


def _unit_rows(blobs: list[bytes]) -> np.ndarray | None:
    """An item's float32 vectors as unit rows (None: it has none)."""
    if not blobs:
        return None
    m = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms


def _order(sc: tuple[ScoreParts, Candidate]) -> tuple[float, float, float, int]:
    """Best final score first; equal scores (equal evidence, or negative cosines all clipped to 0) go to the
    stronger side, then the cosine, then the item id: with keywords and decay off the order is the vector
    search's."""
    return (-sc[0].final, -max(sc[0].cosine, sc[0].keyword), -sc[1].similarity, sc[1].item.id or 0)


def score_candidates(
    cands: list[Candidate], ranking: HybridRanking, *, now: float, collections: CollectionRegistry = PLAIN
) -> list[tuple[float, Candidate]]:
    """Each candidate's final score (see `langgraph_memory.search.ranking`), best first.

    ``collections`` says each namespace's memory type, which sets how fast it decays.
    """
    return [(parts.final, c) for parts, c in explain_candidates(cands, ranking, now=now, collections=collections)]


def explain_candidates(
    cands: list[Candidate],
    ranking: HybridRanking,
    *,
    now: float,
    collections: CollectionRegistry = PLAIN,
    known: dict[int, ScoreParts] | None = None,
) -> list[tuple[ScoreParts, Candidate]]:
    """Each candidate's score parts (cosine, keyword, temporal, final), best final score first.

    ``known``: parts computed already (at ``now``), by item id; used where a
    candidate's score depends on itself alone (``noisy-or`` fusion on the query's scale, no neighbours).
    """
    if known and _scored_alone(ranking):
        todo = [c for c in cands if c.item.id not in known]
        fresh = iter(score_parts_many(_score_rows(_evidence(todo, ranking), now, collections), ranking))
        parts = [known[c.item.id] if c.item.id in known else next(fresh) for c in cands]
    else:
        parts = score_parts_many(_score_rows(_evidence(cands, ranking), now, collections), ranking)
    out = list(zip(parts, cands, strict=True))
    if ranking.fusion == "zscore" or (ranking.neighbours and any(_neighbours.is_turn(c.item) for c in cands)):
        raised = _neighbours.relative_relevance(
            [c.item for _p, c in out],
            [c.similarity for _p, c in out],
            [c.keyword for _p, c in out],
            [p.relevance for p, _c in out],
            [c.joined for _p, c in out],
            fusion=ranking.fusion,
            zscore_weight=ranking.zscore_weight,
            neighbours=ranking.neighbours,
            neighbour_weight=ranking.neighbour_weight,
            vector=[c.vector for _p, c in out] if any(c.vector for c in cands) else None,
        )
        out = [(_with_relevance(p, r, c.item, ranking), c) for (p, c), r in zip(out, raised, strict=True)]
    out.sort(key=_order)
    return out


def _scored_alone(ranking: HybridRanking) -> bool:
    """Whether ``ranking`` scores each candidate from itself alone (``noisy-or`` on the query's scale), conversation
    turns aside: their neighbours raise them after (`neighbours`)."""
    return ranking.fusion == "noisy-or" and ranking.keyword_scale == "query"


def _turn_ids(conn: Any, item_ids: list[int]) -> set[int]:
    """Which of ``item_ids`` are conversation turns (their items read)."""
    return {i for i, it in _item_rows.get_by_ids(conn, item_ids).items() if _neighbours.is_turn(it)}


def _evidence(cands: list[Candidate], ranking: HybridRanking) -> list[tuple[float, float, StoredItem]]:
    """Each candidate's cosine, keyword evidence on ``ranking``'s scale, and item."""
    if ranking.keyword_scale == "query":
        # Keyword evidence on the query's own scale, not the best candidate's: a memory sharing only a
        # common word with the query gets a small boost even when no memory matches better.
        return [(c.similarity, c.evidence, c.item) for c in cands]
    top_keyword = max((c.keyword for c in cands), default=0.0)
    return [(c.similarity, c.keyword / top_keyword if top_keyword else 0.0, c.item) for c in cands]


def _score_rows(
    entries: list[tuple[float, float, StoredItem]], now: float, collections: CollectionRegistry
) -> list[tuple[float, float, float, int, MemoryType]]:
    """What `score_parts_many` scores each ``(cosine, keyword evidence, item)`` from: both, age, accesses, type."""
    types: dict[tuple[str, ...], MemoryType] = {}
    rows: list[tuple[float, float, float, int, MemoryType]] = []
    for similarity, evidence, item in entries:
        ns = item.namespace
        if ns not in types:
            types[ns] = collections.for_namespace(ns).memory_type
        rows.append((similarity, evidence, (now - item.updated_at) / 3600.0, item.access_count, types[ns]))
    return rows


def _with_relevance(
    parts: ScoreParts, raised: _neighbours.Raised, item: StoredItem, ranking: HybridRanking
) -> ScoreParts:
    """``parts`` with the relevance after neighbours and z-scores, its temporal weighting applied as
    `score_parts` applies it, and the setting that ranked it named."""
    relevance = raised.relevance
    final = (
        relevance
        if parts.retention is None
        else relevance * (1.0 - parts.temporal_share + parts.temporal_share * parts.retention)
    )
    turn = bool(ranking.neighbours) and _neighbours.is_turn(item)
    setting = ("hybrid, z-score" if ranking.fusion == "zscore" else "hybrid") + (
        f", turn with neighbours (radius {ranking.neighbours})" if turn else ""
    )
    return dataclasses.replace(
        parts,
        relevance=relevance,
        final=final,
        setting=setting,
        neighbour=raised.neighbour,
        raised_by=relevance - parts.relevance if raised.neighbour is not None and ranking.fusion != "zscore" else 0.0,
    )


def _best_cosines(per_item: list[list[bytes]], qvec: np.ndarray) -> list[float]:
    """Each item's best cosine similarity with ``qvec`` over its float32 vectors (0.0 for an item with none)."""
    blobs = [vec for vecs in per_item for vec in vecs]
    if not blobs:
        return [0.0] * len(per_item)
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
    q = qvec.astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(q)) or 1.0)
    norms[norms == 0] = 1.0
    sims = ((matrix @ q) / norms).tolist()
    out, pos = [], 0
    for vecs in per_item:
        out.append(max(sims[pos : pos + len(vecs)], default=0.0))
        pos += len(vecs)
    return out
