"""Search planning: pick the cheapest plan that is exact enough, from the catalog's counts.

A search names a namespace prefix, maybe a filter and maybe a query. The
planner estimates the candidate set from the catalog (items per namespace,
kept by every write; filter matches from the filter index, counted with a
cap) and picks, per collection, one of:

``exact``
    up to ``exact_max`` candidate vectors (or a whole collection of up to
    ``exact_max * FULL_SCAN_FACTOR`` vectors, scored in place), against
    their vectors held in memory
    (`VectorCache`, loaded from the
    catalog by the first search that needs it and kept in step after); up
    to `UNCACHED_MAX` read from the catalog instead when the collection
    does not fit in the cache's budget (or is not loaded and the search is
    that small). No Chroma call, and the true top results.
``hnsw``
    many candidates: an unfiltered Chroma query over-fetched by the inverse of
    the candidates' share of the collection; each hit is checked against the
    scope (by its namespace) and the filter (through the filter index) before
    its value is read, and the search widens until ``offset + limit`` matches
    are found (or turns ``exact`` when widening would read most of the
    collection). Hits are rescored from the catalog's vectors when they are in
    memory, and items whose latest vectors Chroma has not applied yet are
    scored exactly and merged in.
``scan``
    no query: items in the catalog, newest first (``updated_at``), through
    the namespace and filter indexes.

Every search reads one snapshot of the catalog (one read transaction).
Chroma's ``where`` is never used: measured here, its cost grows with the
whole collection, not with the matches (77 ms at 100,000 items with 100 matching, against
2 ms unfiltered, Chroma 1.5.9). `Planner.explain()`
tells which plan a search gets, as a database's ``EXPLAIN`` does; the store
logs every plan at debug level. The thresholds were chosen by measurement
(``bench/store/store_bench.py``; see ``bench/results/RESULTS.md``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from langgraph.store.base import SearchOp

from langgraph_memory.catalog import Catalog, StoredItem
from langgraph_memory.catalog import items as _items
from langgraph_memory.catalog import keywords as _keywords
from langgraph_memory.catalog import queue as _queue
from langgraph_memory.catalog import scope as _scope
from langgraph_memory.catalog import vectors as _vectors
from langgraph_memory.catalog.connection import Connection
from langgraph_memory.catalog.fields import Condition, compile_filter
from langgraph_memory.catalog.scope import Heads, ScopeSql
from langgraph_memory.errors import StorageError
from langgraph_memory.index.chroma import ChromaIndex, IndexUnavailable
from langgraph_memory.registry import CollectionRegistry, default_collections
from langgraph_memory.search import filters as _filters
from langgraph_memory.search._recall import RecallWatch
from langgraph_memory.search.early_query import EarlyQueries, EarlyQuery
from langgraph_memory.search.vectors import CollectionVectors, Segments, VectorCache, dot_rows

__all__ = ["Plan", "Planner", "EXACT_MAX", "OVERFETCH"]

logger = logging.getLogger(__name__)

#: At most this many candidate vectors are gathered and scored exactly (in memory). Measured here:
#: finding, gathering and scoring a candidate costs about 1 us, an over-fetched HNSW round at
#: 100,000 vectors 2-4 ms; past about 2,000 candidates HNSW is cheaper.
EXACT_MAX = 2000
#: A namespace prefix (or a whole collection) of at most ``exact_max`` times this many vectors is
#: scored in place: a run of rows, about 0.15 us each, with no lookup and no gather.
FULL_SCAN_FACTOR = 6
#: A whole scope of at most this many vectors is scored in place, instead of asking HNSW, once HNSW's
#: recall measured on the collection is poor (`RecallWatch`): unstructured vectors, where HNSW finds
#: about a third of the true top 10. Measured here (``bench/store/uniform_recall_bench.py``): scoring 50,000
#: vectors in place costs about twice an HNSW query.
WEAK_SCAN_MAX = 50_000
#: At most this many candidates are scored from vectors read out of the catalog (no cache).
UNCACHED_MAX = 400
#: On a server, a scope of at most this many items not in memory is read with its items' values, in the same
#: statement as its vectors: one round trip, instead of a second for the winners' values once ranked.
WITH_VALUES_MAX = 256
#: The first HNSW round fetches this many times what the candidates' share predicts.
OVERFETCH = 2.0
#: Rows of the scope scored exactly to check an HNSW answer (see `Planner._missed`).
PROBE_ROWS = 512
#: How much wider the next HNSW round is once the sample beat an answer (measured: 5 of 50 answers at 100,000
#: items held none of the true 10 until 300 records were asked for, the first round asking for 50).
PROBE_WIDEN = 8
#: How much higher than HNSW's own score a sampled row must score to count as missed (float32 rounding).
_SCORE_SLACK = 1e-5
#: How far below the last needed candidate HNSW's score must drop before the catalog's score could not
#: reorder them: float32 sums of 384 products differ by up to a few 1e-5 between the two.
_RESCORE_MARGIN = 1e-4
#: Fewest records an HNSW round asks for: room for candidates the catalog leaves out. Past Chroma's
#: ``ef_search`` (100) a larger ``n_results`` also widens HNSW's beam; below it recall is the same (measured
#: at 1,000,000 items: 10, 50 and 100 records, recall@10 0.974 each).
MIN_FETCH = 50
#: Filter matches are counted up to this many per condition when planning; past it, their share is sampled.
COUNT_CAP = 4000
#: Items drawn to estimate the share of a collection that a common filter matches.
SAMPLE = 256

Omit = Callable[[StoredItem], bool]
#: What to leave out, decided inside the search's snapshot: given the status version its first statement read
#: (None when it read none).
LateOmit = Callable[[Connection, int | None], Omit]
Hit = tuple[float | None, StoredItem]
#: Called by `Planner.run()` inside the search's snapshot, after the vector search: ``(conn, scorer, hits, omit)``.
Then = Callable[[Connection, "ScopeScorer", list[Hit], Omit], None]
#: Work a search does in its snapshot while an HNSW query it started early is under way (`Planner.run`).
Meanwhile = Callable[[Connection], None]


@dataclass
class _Scope:
    collection: str
    whole: bool  # every item of the collection is in the namespace scope
    n_items: int  # items in scope
    n_collection: int  # items in the collection
    n_vectors: int  # vectors of the items in scope
    n_collection_vectors: int  # vectors of the collection
    ns_ids: np.ndarray  # the namespaces in scope that hold items (empty when whole)
    sql: ScopeSql  # the catalog's condition on items selecting the scope
    bounds: tuple[str, str, str] | None = None  # the prefix's name range (None when whole): exact, lo, hi
    candidates: int = 0  # estimated items in scope matching the filter
    matches: int | None = None  # items anywhere matching the filter index (capped), None without a filter
    strategy: str = "exact"
    heads: Heads | None = None  # read with the counts (None when they were read without)


@dataclass
class Plan:
    """What a search will do (or did): the strategy, per collection, and the estimates behind it."""

    strategy: str
    collections: list[str] = field(default_factory=list)
    scope_items: int = 0
    candidates: int = 0
    filter_exact: bool = True
    fetch: int = 0
    rounds: int = 0
    notes: list[str] = field(default_factory=list)
    #: An SQL condition on items ``i`` selecting the namespace scope (not the filter), with its parameters;
    #: hybrid search scopes keyword candidates with it. None when nothing is in scope.
    scope_sql: tuple[str, tuple[Any, ...]] | None = field(default=None, repr=False)
    #: The ids of the items an ``exact`` plan scored (the scope's items matching the filter index, with
    #: vectors): hybrid search keeps the keyword matches among them without listing them again.
    exact_ids: list[np.ndarray] | None = field(default=None, repr=False)

    def __str__(self) -> str:
        parts = [
            f"{self.strategy} over {', '.join(self.collections) or 'nothing'}",
            f"{self.scope_items} items in scope",
            f"~{self.candidates} candidates",
        ]
        if not self.filter_exact:
            parts.append("filter checked on values")
        if self.fetch:
            parts.append(f"HNSW n_results {self.fetch} ({self.rounds} round{'s' if self.rounds != 1 else ''})")
        parts.extend(self.notes)
        return "; ".join(parts)


_NO_IDS = np.zeros(0, dtype=np.int64)


class Planner:
    """Plans and runs searches over one catalog, its vectors in memory and its Chroma index.

    Args:
        catalog: the data directory's catalog.
        index: the Chroma index of the catalog's vectors.
        vectors: the in-memory copy of the catalog's vectors (None: read them from the catalog).
        exact_max: the most candidate items scored exactly (0: always through Chroma).

    Examples:
        >>> plan = store.explain(("research",), query="risk", filter={"source": "macro"})
        >>> plan.strategy
        'exact'
    """

    def __init__(
        self,
        catalog: Catalog,
        index: ChromaIndex,
        vectors: VectorCache | None = None,
        *,
        exact_max: int = EXACT_MAX,
        collections: CollectionRegistry | None = None,
    ) -> None:
        self.catalog = catalog
        self.collections = collections if collections is not None else default_collections()
        self.index = index
        self.vectors = vectors
        self.exact_max = exact_max
        self.recall = RecallWatch()
        self.early = EarlyQueries()
        # How far Chroma had applied changes at a snapshot read earlier (see `_check_early`).
        self._applied_seen: tuple[int, str | None] | None = None

    def close(self) -> None:
        """Stop the workers that start HNSW queries early."""
        self.early.close()

    # ----------------------------------------------------------- estimates

    def _scopes(self, conn: Connection, prefix: tuple[str, ...]) -> list[_Scope]:
        specs = [self.collections.for_namespace(prefix)] if prefix else list(self.collections)
        out: list[_Scope] = []
        known: dict[str, tuple[int, int, np.ndarray, _scope.ScopeSql]] = {}
        heads: Heads | None = None
        if prefix and len(specs) == 1 and not (specs[0].typed and len(prefix) == 1):
            # The usual search (under a prefix of one collection): its counts, its scope and the heads its
            # caches compare with, in one read.
            counts, known[specs[0].name], heads = _scope.planning_read(
                conn, specs[0].name, _scope.prefix_bounds(prefix)
            )
        else:
            counts, heads = _scope.counts_and_heads(conn)
        for spec in specs:
            n_coll, v_coll = counts.get(spec.name, (0, 0))
            if not n_coll:
                continue
            if not prefix or (spec.typed and len(prefix) == 1):
                out.append(
                    _Scope(
                        spec.name,
                        True,
                        n_coll,
                        n_coll,
                        v_coll,
                        v_coll,
                        _NO_IDS,
                        _scope.collection_scope(spec.name),
                        heads=heads,
                    )
                )
                continue
            bounds = _scope.prefix_bounds(prefix)
            n_scope, v_scope, ids, sql = known.get(spec.name) or _scope.namespace_scope(conn, spec.name, bounds)
            if n_scope:
                whole = n_scope == n_coll
                out.append(
                    _Scope(
                        spec.name,
                        whole,
                        n_scope,
                        n_coll,
                        v_scope,
                        v_coll,
                        _NO_IDS if whole else ids,
                        sql,
                        None if whole else bounds,
                        heads=heads,
                    )
                )
        return out

    def candidate_ids(self, conn: Connection, plan: Plan, filter: dict[str, Any] | None) -> list[int]:
        """Ids of the items in ``plan``'s scope matching the indexed part of ``filter`` (for few candidates).

        Hybrid search intersects keyword matches with them when the plan is ``exact``.
        """
        if plan.scope_sql is None:
            return []
        return _scope.item_ids_in_scope(conn, plan.scope_sql, compile_filter(filter)[0]).tolist()

    def _sampled_candidates(self, conn: Connection, scope: _Scope, conds: list[Condition]) -> int:
        """Items in scope matching ``conds``, estimated from `SAMPLE` random items of the collection.

        For filters too common to count cheaply (the estimate sets how far an
        HNSW round over-fetches): drawn from the vectors in memory when the
        collection is loaded (a 14% filter at 100,000 items: about 0.3 ms
        against 2.5 ms to count), else from random item ids in the catalog.
        The draw is seeded, so a search gets the same plan every time.
        """
        col = self.vectors.resident(scope.collection) if self.vectors is not None else None
        rng = np.random.default_rng(0)
        if col is not None and col.n_alive:
            rows = rng.integers(0, col.n, size=min(SAMPLE, col.n))
            rows = rows[col.alive[rows]]
            ids, ns = col.item_ids[rows], col.ns_ids[rows]
        else:
            span = _scope.item_id_range(conn)
            if span is None:
                return 0
            draw = np.unique(rng.integers(span[0], span[1] + 1, size=SAMPLE * 2))
            ids, ns = _scope.sample_collection(conn, scope.collection, draw)
        if not len(ids):
            return 0
        drawn = len(ids)
        if not scope.whole:
            ids = ids[np.isin(ns, scope.ns_ids)]
        hits = len(self._passing(conn, conds, np.unique(ids)))
        return min(scope.n_items, int(max(hits, 1) / drawn * scope.n_collection))

    def _choose(self, scope: _Scope, conds: list[Condition]) -> str:
        """``exact`` or ``hnsw``, by the work each would do (see the module's docstring)."""
        if (
            scope.collection in self.index.broken
            or not self.index.serving()
            or not getattr(self.index, "searchable", True)
        ):
            return "exact"
        if self.exact_max <= 0:
            return "hnsw"
        # The work of an exact plan is the candidates' vectors, not their items.
        vectors = scope.candidates * scope.n_vectors / max(scope.n_items, 1)
        if self.vectors is None or not self.vectors.fits(scope.collection, scope.n_collection_vectors):
            return "exact" if vectors <= min(self.exact_max, UNCACHED_MAX) else "hnsw"
        if not conds or scope.candidates == scope.n_items:
            # A namespace prefix is a run of rows, scored in place.
            if scope.n_vectors <= self.exact_max * FULL_SCAN_FACTOR or self._weak(scope, conds):
                return "exact"
            return "hnsw"
        return "exact" if vectors <= self.exact_max else "hnsw"

    def _weak(self, scope: _Scope, conds: list[Condition]) -> bool:
        """Whether the scope is scored in place because HNSW measured poorly on its collection."""
        return (
            not conds
            and self.exact_max * FULL_SCAN_FACTOR < scope.n_vectors <= WEAK_SCAN_MAX
            and self.recall.weak(scope.collection)
        )

    # --------------------------------------------------------------- entry

    def explain(self, op: SearchOp, *, has_query: bool) -> Plan:
        """The plan ``op`` would get, without running it (nothing is loaded into memory)."""
        with self._vectors_lock(), self.catalog.snapshot() as conn:
            return self._plan(conn, op, has_query)[0]

    def _vectors_lock(self) -> Any:
        return self.vectors.lock if self.vectors is not None else contextlib.nullcontext()

    def _plan(
        self, conn: Connection, op: SearchOp, has_query: bool, *, load: bool = False
    ) -> tuple[Plan, list[_Scope], list[Condition]]:
        scopes = self._scopes(conn, op.namespace_prefix)
        conds, exact = compile_filter(op.filter)
        fcount: int | None = None
        for s in scopes:
            s.candidates = s.n_items
            if load and has_query:
                self._load_for(conn, s)
            if not conds:
                continue
            # In memory, a sample costs less than a count; a count only for filters it finds rare.
            sampled = self._sampled_candidates(conn, s, conds) if self._is_resident(s) else None
            if sampled is None or sampled < COUNT_CAP:
                if fcount is None:
                    fcount = _scope.filter_count(conn, conds, COUNT_CAP)
                assert fcount is not None  # a filter gives conditions to count
                s.matches = fcount
                s.candidates = min(s.n_items, fcount)
                if fcount >= COUNT_CAP:
                    estimate = sampled if sampled is not None else self._sampled_candidates(conn, s, conds)
                    s.candidates = max(estimate, min(s.n_items, COUNT_CAP))
            else:
                s.matches = sampled
                s.candidates = sampled
        scopes = [s for s in scopes if s.candidates]
        plan = Plan(
            "scan",
            [s.collection for s in scopes],
            sum(s.n_items for s in scopes),
            sum(s.candidates for s in scopes),
            exact,
        )
        if scopes:
            plan.scope_sql = _scope.any_scope([s.sql for s in scopes])
        if not scopes:
            plan.strategy = "empty"
        elif has_query:
            for s in scopes:
                s.strategy = self._choose(s, conds)
            strategies = {s.strategy for s in scopes}
            plan.strategy = strategies.pop() if len(strategies) == 1 else "mixed"
            broken = [s.collection for s in scopes if s.collection in self.index.broken]
            if broken:
                plan.notes.append(f"index of {', '.join(broken)} waiting for a rebuild")
            if not self.index.serving():
                plan.notes.append("Chroma server unavailable: scored exactly")
            if not getattr(self.index, "searchable", True):
                plan.notes.append("read-only: scored exactly from the catalog's vectors")
            for s in scopes:
                if s.strategy == "exact" and self._weak(s, conds):
                    plan.notes.append(
                        f"{s.collection}: HNSW recall measured {self.recall.recall(s.collection):.2f} here; scored exactly"
                    )
        return plan, scopes, conds

    def run(
        self,
        op: SearchOp,
        qvec: np.ndarray | None,
        *,
        omit: Omit | None = None,
        omit_for: LateOmit | None = None,
        then: Then | None = None,
        meanwhile: Meanwhile | None = None,
    ) -> tuple[list[Hit], Plan]:
        """Run ``op`` (``qvec``: the embedded query, or None for a listing); return hits and the plan.

        What to leave out is ``omit``, or ``omit_for(conn, status version)`` decided inside the search's snapshot.
        ``then`` (a search with a query only) runs in the same snapshot after the vector search, given a
        `ScopeScorer` of the search's scope and what the search left out: hybrid search scores its keyword
        candidates there, from the same vectors, without a second read transaction.
        ``meanwhile`` runs (at most once, in the same snapshot) when the search
        would wait for an HNSW query it started before planning: hybrid search
        reads its posting lists while Chroma answers.
        """
        need = op.offset + op.limit
        early_key = None
        if qvec is not None:
            self.index.catch_up()  # after a Chroma server outage (a no-op otherwise)
            early_key = _early_key(op, need)
        with self._vectors_lock(), self.catalog.snapshot() as conn:
            applied = self._applied_seen
            early = self._start_early(early_key, qvec) if applied is not None else None
            plan, scopes, conds = self._plan(conn, op, qvec is not None, load=True)
            if early_key is not None:
                early = self._check_early(early, applied, scopes)
                self._remember_fetch(early_key, scopes, conds, op.filter, need)
            if plan.strategy == "empty" or need <= 0:
                return [], plan
            if omit_for is not None:
                heads = scopes[0].heads if scopes else None
                omit = omit_for(conn, None if heads is None else heads.status_version)
            if omit is None:
                omit = keep_all
            if qvec is None:
                hits: list[Hit] = [(None, it) for it in self._scan(conn, scopes, conds, op, need, omit)]
                return hits[op.offset : need], plan
            scored: list[Hit] = []
            if plan.strategy == "exact":
                plan.exact_ids = []
            for s in scopes:
                if s.strategy == "exact":
                    exact = self._exact(conn, s, conds, op.filter, qvec, need, omit, plan.exact_ids)
                    if self._weak(s, conds) and not op.filter and self.recall.due(s.collection):
                        # Keep measuring HNSW where it is not used, so that a collection that changes wins it back.
                        with contextlib.suppress(IndexUnavailable, StorageError):
                            hnsw = self._hnsw(conn, s, conds, op.filter, Plan("hnsw"), qvec, need, omit, check=False)
                            self._record(s.collection, hnsw, exact, need)
                    scored.extend(exact)
                    continue
                hook, meanwhile = meanwhile, None  # the first hnsw scope's wait only, even if that scope fails
                try:
                    scored.extend(
                        self._hnsw(conn, s, conds, op.filter, plan, qvec, need, omit, early=early, meanwhile=hook)
                    )
                except (IndexUnavailable, StorageError):
                    plan.notes.append(f"{s.collection}: index failed, searched exactly")
                    scored.extend(self._exact(conn, s, conds, op.filter, qvec, need, omit))
            scored.sort(key=lambda h: (-(h[0] or 0.0), h[1].id or 0))
            hits = scored[:need]
            if len(hits) < need:
                # Like InMemoryStore: fewer items with vectors than asked for are
                # followed by matching items that have none, unscored.
                unindexed = self._scan(conn, scopes, conds, op, need - len(hits), omit, unindexed_only=True)
                hits.extend((None, it) for it in unindexed)
            if then is not None:
                then(conn, ScopeScorer(self, conn, plan, scopes, conds, qvec), hits[op.offset : need], omit)
            return hits[op.offset : need], plan

    # --------------------------------------------------------------- plans

    def _scan(
        self,
        conn: Connection,
        scopes: list[_Scope],
        conds: list[Condition],
        op: SearchOp,
        need: int,
        omit: Omit,
        *,
        unindexed_only: bool = False,
    ) -> list[StoredItem]:
        """Items in scope matching the filter, newest first, at most ``need``."""
        out: list[StoredItem] = []
        if need <= 0:
            return out
        where = _scope.any_scope([s.sql for s in scopes])
        for it in _scope.newest_items(conn, where, conds, page=max(need, 100), unindexed_only=unindexed_only):
            if _filters.matches(it.value, op.filter) and not omit(it):
                out.append(it)
                if len(out) >= need:
                    break
        return out

    def _is_resident(self, scope: _Scope) -> bool:
        return self.vectors is not None and self.vectors.cached(scope.collection)

    def _resident(self, conn: Connection, scope: _Scope) -> CollectionVectors | None:
        """The scope's collection in memory, brought up to date, or None when it is not loaded."""
        if self.vectors is None or not self.vectors.cached(scope.collection):
            return None
        return self.vectors.get(conn, scope.collection, _log_head(scope))

    def _load_for(self, conn: Connection, scope: _Scope) -> None:
        """Load the scope's collection into memory when the search is big enough to gain from it.

        Not for a small search: a process that only ever searches small
        namespaces never pays for the load (about 1 s per 100,000 vectors).
        """
        if (
            self.vectors is not None
            and not self.vectors.cached(scope.collection)
            and scope.n_items > min(self.exact_max, UNCACHED_MAX)
            and self.vectors.fits(scope.collection, scope.n_collection_vectors)
        ):
            self.vectors.get(conn, scope.collection, _log_head(scope))

    def _exact(
        self,
        conn: Connection,
        scope: _Scope,
        conds: list[Condition],
        filter: dict[str, Any] | None,
        qvec: np.ndarray,
        need: int,
        omit: Omit,
        scored_ids: list[np.ndarray] | None = None,
    ) -> list[Hit]:
        """Score every candidate's vectors; the best ``need`` that match (the candidates' ids to ``scored_ids``)."""
        col = self._resident(conn, scope)
        if col is None and scope.n_items <= WITH_VALUES_MAX and _scope.reads_items_with_vectors(conn):
            vecs, rows = _scope.scope_vectors_with_items(conn, scope.sql, conds)
            ranked = _rank_rows(vecs, qvec)
            if scored_ids is not None:
                scored_ids.append(np.fromiter((i for i, _s in ranked), dtype=np.int64, count=len(ranked)))
            return self._materialize(conn, ranked, filter, need, omit, rows)
        if col is None:
            ranked = self._exact_from_catalog(conn, scope, conds, qvec)
            if scored_ids is not None:
                scored_ids.append(np.fromiter((i for i, _s in ranked), dtype=np.int64, count=len(ranked)))
            return self._materialize(conn, ranked, filter, need, omit)
        segments = self._candidates(conn, col, scope, conds)
        if scored_ids is not None:
            scored_ids.append(col.items_of(segments))
        top = need
        while True:
            ranked = col.rank(segments, qvec, top)
            hits = self._materialize(conn, ranked, filter, need, omit)
            if len(hits) >= need or len(ranked) < top:
                return hits
            top *= 4  # the filter or TTL dropped some: rank further down

    def _candidates(self, conn: Connection, col: CollectionVectors, scope: _Scope, conds: list[Condition]) -> Segments:
        """The rows of the scope's items that match the filter index.

        From the smaller side: the scope's rows checked against the filter
        index, or the filter's items checked against the scope.
        """
        in_scope = _scope_rows(col, scope)
        if not conds:
            return in_scope
        if scope.matches is not None and len(in_scope) <= scope.matches:
            rows = in_scope.rows
            if in_scope.runs:
                rows = np.concatenate([np.arange(a, b) for a, b in in_scope.runs] + [rows])
            ids = np.unique(col.item_ids[rows[col.alive[rows]]])
            return Segments(rows=col.rows_of_items(self._passing(conn, conds, ids)))
        rows = col.rows_of_items(_scope.filter_matches(conn, conds))
        if not scope.whole:
            rows = rows[np.isin(col.ns_ids[rows], scope.ns_ids)]
        return Segments(rows=rows)

    def _exact_from_catalog(
        self, conn: Connection, scope: _Scope, conds: list[Condition], qvec: np.ndarray
    ) -> list[tuple[int, float]]:
        """Every candidate scored from the vectors read out of the catalog, best first."""
        return _rank_rows(_scope.scope_vectors(conn, scope.sql, conds, scope.n_vectors), qvec)

    def _hnsw(
        self,
        conn: Connection,
        scope: _Scope,
        conds: list[Condition],
        filter: dict[str, Any] | None,
        plan: Plan,
        qvec: np.ndarray,
        need: int,
        omit: Omit,
        *,
        check: bool = True,
        early: EarlyQuery | None = None,
        meanwhile: Meanwhile | None = None,
    ) -> list[Hit]:
        """An unfiltered Chroma query, over-fetched and widened, each hit checked in the catalog.

        With ``check``, a search that `RecallWatch` says is due is also scored
        exactly (for a scope small enough to be scored in place), and the
        recall of the HNSW answer is recorded. ``meanwhile`` runs before
        waiting for ``early``'s answer, if it is not in yet.
        """
        unapplied = scope.heads.unapplied if scope.heads is not None else None
        if unapplied is not None and scope.collection not in unapplied:
            pending: list[int] = []  # read with the counts: Chroma holds every change of the collection
        else:
            pending = sorted(_queue.pending_items(conn, scope.collection))
        col = self._resident(conn, scope)
        share = _share(scope)
        n = self._first_fetch(scope, conds, filter, need, first=plan.fetch == 0)
        if scope.n_items <= n:
            # One fetch would already ask for every item in scope: scoring them exactly costs no more and, unlike
            # HNSW, never misses one of two equal vectors (which made pages of one query overlap).
            plan.notes.append(
                f"{scope.collection}: {scope.n_items} items in scope, no more than one fetch: scored exactly"
            )
            return self._exact(conn, scope, conds, filter, qvec, need, omit)
        scope_ns = scope.ns_ids
        pending_set = set(pending)
        probes = 0
        while True:
            plan.rounds += 1
            found = None
            if early is not None and plan.rounds == 1:
                if meanwhile is not None and early.running:
                    meanwhile(conn)
                found = early.take(scope.collection, n)
                if found is not None:
                    n = early.n  # as many records or more: read the answer as that round's
                    plan.notes.append(f"{scope.collection}: HNSW queried while planning ({n} records)")
            if found is None:
                found = self.index.query(scope.collection, qvec, n)
            plan.fetch = max(plan.fetch, n)
            if check and col is not None and probes < 2 and self._missed(col, scope, qvec, found, need / share):
                probes += 1
                if probes == 2 or n * PROBE_WIDEN > scope.n_collection // 2:
                    plan.notes.append(f"{scope.collection}: an exact sample beat HNSW's answer twice; scored exactly")
                    return self._exact(conn, scope, conds, filter, qvec, need, omit)
                plan.notes.append(f"{scope.collection}: an exact sample beat HNSW's answer; asked for more")
                n *= PROBE_WIDEN  # a wider beam usually finds the way out
                continue
            probes = 2  # checked once: the rounds that widen for the filter need no other check
            best: dict[int, float] = {}
            for item_id, _idx, dist in found:
                if item_id in pending_set:
                    continue
                score = 1.0 - dist
                if score > best.get(item_id, -2.0):
                    best[item_id] = score
            ids = np.fromiter(best, dtype=np.int64, count=len(best))
            ids = self._in_scope(conn, col, scope, scope_ns, ids)
            ids = self._passing(conn, conds, ids)
            if col is not None:
                ranked = col.rank(Segments(rows=col.rows_of_items(ids)), qvec, len(ids))  # exact, from memory
                hits = self._materialize(conn, ranked, filter, need, omit)
            else:
                hits = self._rescored(conn, ids, best, qvec, filter, need, omit)
            if pending:
                hits.extend(self._exact_items(conn, col, pending, scope, conds, filter, qvec, need, omit))
            exhausted = len(found) < n
            if sum(1 for h in hits if h[1].id not in pending_set) >= need or exhausted:
                if (
                    check
                    and col is not None  # scored in memory: never a read of the scope's vectors from the catalog
                    and not conds
                    and not filter
                    and scope.n_vectors <= WEAK_SCAN_MAX
                    and self.recall.due(scope.collection)
                ):
                    self._record(
                        scope.collection, hits, self._exact(conn, scope, conds, filter, qvec, need, omit), need
                    )
                return hits
            if n * 4 > max(self.exact_max * 4, scope.n_collection // 2):
                plan.notes.append(f"{scope.collection}: widening would read most of the index; scored exactly")
                return self._exact(conn, scope, conds, filter, qvec, need, omit)
            n *= 4

    def _rescored(
        self,
        conn: Connection,
        ids: np.ndarray,
        hnsw: dict[int, float],
        qvec: np.ndarray,
        filter: dict[str, Any] | None,
        need: int,
        omit: Omit,
    ) -> list[Hit]:
        """HNSW's candidates scored from the catalog's vectors, reading only those that can make the answer.

        Chroma's distance for one vector differs in its last bits from query to query (equal vectors swap
        places between pages), so the answer is ranked by the catalog's vectors. Those are random reads of a
        large table (at 1,000,000 items a third of a search went to reading 50 candidates' vectors), and only
        the ``need`` best can be returned: candidates are read in HNSW's order, each read ending where
        HNSW's score drops clearly below the last one needed, which no rounding can reverse. The next read
        happens only when the first leaves fewer than ``need`` (items left out by ``omit`` or ``filter``).
        """
        order = sorted(ids.tolist(), key=lambda i: -hnsw[i])
        hits: list[Hit] = []
        start = 0
        while start < len(order) and len(hits) < need:
            end = min(start + need - len(hits), len(order))
            floor = hnsw[order[end - 1]] - _RESCORE_MARGIN
            while end < len(order) and hnsw[order[end]] >= floor:
                end += 1
            ranked = _rank_rows(_vectors.vectors_of(conn, order[start:end]), qvec)
            hits.extend(self._materialize(conn, ranked, filter, need - len(hits), omit))
            start = end
        return hits

    def _first_fetch(
        self, scope: _Scope, conds: list[Condition], filter: dict[str, Any] | None, need: int, *, first: bool
    ) -> int:
        """How many records the first HNSW round over ``scope`` asks Chroma for (``first``: the search's first round)."""
        if first and scope.whole and not conds and not filter:
            return max(need, MIN_FETCH)
        # An item's records sit near one another (its fields say related things), so fewer distinct items
        # than records come back: with three fields a third of searches widened and paid a second fetch and
        # read. Asking for sqrt(records per item) times more, 3 searches in 55 widened (100,000 items, three
        # fields: p50 unchanged, mean 15.0 against 17.0 ms, recall 0.986 against 0.978); the full factor
        # made every HNSW query dearer than the widening it saved.
        per_item = math.sqrt(max(scope.n_vectors / max(scope.n_items, 1), 1.0))
        return max(MIN_FETCH, math.ceil(need * per_item / _share(scope) * OVERFETCH))

    def _start_early(self, key: tuple[Any, ...] | None, qvec: np.ndarray | None) -> EarlyQuery | None:
        """Start the HNSW query that the last search of ``key`` began with (see `EarlyQueries`)."""
        guess = self.early.guess(key) if key is not None and qvec is not None else None
        if guess is None or qvec is None:
            return None
        collection, n = guess
        return self.early.start(collection, n, lambda: self.index.query_quietly(collection, qvec, n))

    def _check_early(
        self, early: EarlyQuery | None, applied: tuple[int, str | None] | None, scopes: list[_Scope]
    ) -> EarlyQuery | None:
        """``early`` if Chroma applied nothing between its start and this search's snapshot, else None.

        ``applied`` is what an earlier snapshot read, before ``early`` started.
        A change Chroma applied after the query started, and marked applied
        before the snapshot, would be in neither the answer nor the changes
        the snapshot still lists as unapplied: with the same total, there was
        none.
        """
        heads = scopes[0].heads if scopes else None
        now = None if heads is None or heads.unapplied is None else (heads.applied, heads.epoch)
        if now is not None:
            self._applied_seen = now
        return early if early is not None and now is not None and now == applied else None

    def _remember_fetch(
        self,
        key: tuple[Any, ...],
        scopes: list[_Scope],
        conds: list[Condition],
        filter: dict[str, Any] | None,
        need: int,
    ) -> None:
        """Note the first HNSW query of a one-collection search, for the next search of ``key`` to start early."""
        if len(scopes) == 1 and scopes[0].strategy == "hnsw" and not self._weak(scopes[0], conds):
            n = self._first_fetch(scopes[0], conds, filter, need, first=True)
            if scopes[0].n_items > n:
                self.early.remember(key, scopes[0].collection, n)
                return
        self.early.forget(key)

    def _missed(
        self, col: CollectionVectors, scope: _Scope, qvec: np.ndarray, found: list[tuple[int, int, float]], depth: float
    ) -> bool:
        """Whether HNSW's ``found`` lacks an item of the scope that belongs among its best ``depth`` records.

        HNSW can settle in the wrong part of the graph and return only far
        items (measured on 100,000 clustered vectors: 5 queries in 50 got
        none of their true 10 until asked for 300 records). A sample of the
        scope scored exactly shows it: one of its items, absent from the
        answer, scores above the answer's ``depth``-th record.
        """
        if not found:
            return False
        scores = np.sort(np.fromiter((1.0 - d for _i, _x, d in found), dtype=np.float64, count=len(found)))[::-1]
        bar = float(scores[min(len(scores), max(1, math.ceil(depth))) - 1]) + _SCORE_SLACK
        segments = _scope_rows(col, scope)
        got = np.fromiter((i for i, _x, _d in found), dtype=np.int64, count=len(found))
        return col.beaten(segments, qvec, bar, got, PROBE_ROWS)

    def _record(self, collection: str, hnsw: list[Hit], exact: list[Hit], need: int) -> None:
        """Record how many of the exact best ``need`` the HNSW answer held."""
        best = sorted(exact, key=lambda h: -(h[0] or 0.0))[:need]
        ranked = sorted(hnsw, key=lambda h: -(h[0] or 0.0))[:need]
        truth = {h[1].id for h in best}
        self.recall.record(collection, found=len(truth & {h[1].id for h in ranked}), of=len(truth))

    def _in_scope(
        self,
        conn: Connection,
        col: CollectionVectors | None,
        scope: _Scope,
        scope_ns: np.ndarray,
        ids: np.ndarray,
    ) -> np.ndarray:
        """The ids (in their order) of items in the scope's namespaces."""
        if scope.whole or not len(ids):
            return ids
        if col is not None:
            return ids[col.in_namespaces(ids, scope_ns)]
        have, ns = _scope.namespaces_of(conn, ids)
        return ids[np.isin(ids, have[np.isin(ns, scope_ns)])]

    @staticmethod
    def _passing(conn: Connection, conds: list[Condition], ids: np.ndarray) -> np.ndarray:
        """The ids (in their order) whose index rows meet every condition (each is checked on its value later)."""
        return _scope.passing(conn, conds, ids)

    def _exact_items(
        self,
        conn: Connection,
        col: CollectionVectors | None,
        item_ids: Sequence[int],
        scope: _Scope,
        conds: list[Condition],
        filter: dict[str, Any] | None,
        qvec: np.ndarray,
        need: int,
        omit: Omit,
    ) -> list[Hit]:
        """These items (Chroma has not applied them yet) scored exactly, if in scope and matching."""
        ids = self._passing(conn, conds, np.asarray(item_ids, dtype=np.int64))
        ids = self._in_scope(conn, col, scope, scope.ns_ids, ids)
        if not len(ids):
            return []
        if col is not None:
            ranked = col.rank(Segments(rows=col.rows_of_items(ids)), qvec, len(ids))
        else:
            ranked = _rank_rows(_vectors.vectors_of(conn, ids), qvec)
        return self._materialize(conn, ranked, filter, need, omit)

    def _materialize(
        self,
        conn: Connection,
        ranked: list[tuple[int, float]],
        filter: dict[str, Any] | None,
        need: int,
        omit: Omit,
        rows: dict[int, tuple[Any, ...]] | None = None,
    ) -> list[Hit]:
        """Read ranked items in order (from ``rows`` read already, else the catalog), keep those that match."""
        out: list[Hit] = []
        pos = 0
        batch = max(need, 16)
        # Items ``omit`` is known to leave out by id (a read as of a moment: those changed since) are not read.
        skip: Container[int] = getattr(omit, "skip_ids", ())
        while pos < len(ranked) and len(out) < need:
            chunk = ranked[pos : pos + batch]
            pos += batch
            if skip:
                chunk = [c for c in chunk if c[0] not in skip]
            if rows is not None:
                items = {i: _items.item_from_row(rows[i]) for i, _ in chunk if i in rows}
            else:
                items = _items.get_by_ids(conn, [i for i, _ in chunk])
            for item_id, score in chunk:
                it = items.get(item_id)
                if it is None or not _filters.matches(it.value, filter) or omit(it):
                    continue
                out.append((score, it))
                if len(out) >= need:
                    break
            batch *= 2
        return out


class ScopeScorer:
    """Scores items named by id within one search's scope, as that search scores its own candidates.

    Made by `Planner.run()` for its ``then`` callback, inside the search's
    snapshot and vectors lock; valid only there.
    """

    def __init__(
        self,
        planner: Planner,
        conn: Connection,
        plan: Plan,
        scopes: list[_Scope],
        conds: list[Condition],
        qvec: np.ndarray,
    ) -> None:
        self._planner = planner
        self._conn = conn
        self._plan = plan
        #: The search scored every candidate exactly (``exact_ids`` lists them).
        self.exact = plan.strategy == "exact"
        #: The filter index decides the filter alone (no condition is left to check on values).
        self.filter_exact = plan.filter_exact
        self._scopes = scopes
        self._conds = conds
        self._qvec = qvec

    def exact_ids(self, most: int) -> np.ndarray | None:
        """The ids of every item an ``exact`` search scored (in scope, with vectors, meeting the filter index),
        increasing and distinct; None for another plan or when there are more than ``most`` of them."""
        parts = self._plan.exact_ids
        if not self.exact or parts is None or sum(len(p) for p in parts) > most:
            return None
        ids = np.sort(np.concatenate(parts)) if parts else _NO_IDS
        # (not np.unique: its hashing cost 2 ms for 10,000 ids here, a sort 0.1 ms)
        return ids[np.concatenate(([True], ids[1:] != ids[:-1]))] if len(ids) else ids

    def rank(self, item_ids: Sequence[int], *, filter_index: bool = True) -> dict[int, float]:
        """The cosine of each of ``item_ids`` that is in scope, has vectors and meets the filter index.

        With the collection in memory, scope and cosine come from there (no
        read of items or vectors); else from the catalog. Without
        ``filter_index`` the filter index is not checked: the caller checks it
        as it reads the items (`items()`), in the same statement.
        """
        ids = np.asarray(item_ids, dtype=np.int64)
        out: dict[int, float] = {}
        if not len(ids):
            return out
        conn, planner = self._conn, self._planner
        for s in self._scopes:
            col = planner._resident(conn, s)
            if col is not None:
                rows = col.rows_of_items(ids)
                if not s.whole:
                    rows = rows[np.isin(col.ns_ids[rows], s.ns_ids)]
                if filter_index and self._conds:
                    owners = col.item_ids[rows]
                    rows = rows[np.isin(owners, planner._passing(conn, self._conds, np.unique(owners)))]
                out.update(col.best_cosines(rows, self._qvec))
                continue
            where, params = s.sql
            kept = np.asarray(sorted(_keywords.in_scope(conn, ids.tolist(), where, params)), dtype=np.int64)
            if filter_index:
                kept = planner._passing(conn, self._conds, kept)
            out.update(_rank_rows(_vectors.vectors_of(conn, kept), self._qvec))
        return out

    def items(self, item_ids: Sequence[int]) -> dict[int, StoredItem]:
        """The items among ``item_ids`` that meet the filter index, read with that check in one statement."""
        return _scope.passing_items(self._conn, self._conds, item_ids)


def keep_all(_it: StoredItem) -> bool:
    """The `Omit` that leaves nothing out (a search may then count items it has not read)."""
    return False


def _scope_rows(col: CollectionVectors, scope: _Scope) -> Segments:
    """The rows of ``col`` in the scope: all of them for a whole collection, else its namespaces' runs."""
    return col.everything() if scope.bounds is None else col.namespace_rows(*scope.bounds, scope.ns_ids)


def _share(scope: _Scope) -> float:
    """The candidates' share of the index's records (items can have several vectors each)."""
    return max(scope.candidates * scope.n_vectors / max(scope.n_items, 1) / max(scope.n_collection_vectors, 1), 1e-6)


def _early_key(op: SearchOp, need: int) -> tuple[Any, ...] | None:
    """What makes two searches plan the same first HNSW query: the prefix, the filter and the depth."""
    if not op.namespace_prefix:
        return None  # several collections: several queries
    try:
        filter_key = json.dumps(op.filter, sort_keys=True, default=repr) if op.filter else ""
    except (TypeError, ValueError):
        return None
    return (tuple(op.namespace_prefix), filter_key, need)


def _log_head(scope: _Scope) -> tuple[int, str | None] | None:
    """The change log's head read with the scope's counts, if it was."""
    return None if scope.heads is None else (scope.heads.log_seq, scope.heads.epoch)


def _rank_rows(rows: list[tuple[int, bytes]], qvec: np.ndarray) -> list[tuple[int, float]]:
    """``(item id, best cosine)`` for each item among ``rows`` of ``(item id, float32 bytes)``, best first."""
    if not rows:
        return []
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    dims = len(rows[0][1]) // 4
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dims)
    q = qvec.astype(np.float32)
    qn = float(np.linalg.norm(q)) or 1.0
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    scores = dot_rows(matrix, q) / (norms * qn)
    best: dict[int, float] = {}
    for item_id, score in zip(ids.tolist(), scores.tolist(), strict=True):
        if score > best.get(item_id, -2.0):
            best[item_id] = score
    return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
