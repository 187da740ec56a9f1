"""Choosing a search's plan: its scope per collection, the candidates expected, and the strategy.

`PlanChoice` estimates from the catalog's counts and picks ``exact``, ``hnsw`` or ``scan`` per collection;
`langgraph_memory.search.planner.Planner` runs the plan. The thresholds here were chosen by measurement
(``bench/store/store_bench.py``; see ``bench/results/RESULTS.md``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from langgraph.store.base import SearchOp

from langgraph_memory.catalog import Catalog, StoredItem
from langgraph_memory.catalog import scope as _scope
from langgraph_memory.catalog.connection import Connection
from langgraph_memory.catalog.fields import Condition, compile_filter
from langgraph_memory.catalog.scope import Heads, ScopeSql
from langgraph_memory.index.chroma import ChromaIndex
from langgraph_memory.registry import CollectionRegistry, default_collections
from langgraph_memory.search._recall import RecallWatch
from langgraph_memory.search.vectors import CollectionVectors, Segments, VectorCache

__all__ = ["Plan", "PlanChoice", "Scope", "keep_all", "EXACT_MAX", "OVERFETCH"]

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


@dataclass
class Scope:
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
#: The conditions `Planner._choose` is given for a scope narrowed by an omit's share: not all of it is candidates.
_NARROWED: list[Condition] = [Condition("", 0, "=", None)]


class PlanChoice:
    """The planning half of `langgraph_memory.search.planner.Planner`: scopes, estimates and the strategy."""

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

    def close(self) -> None:
        """Nothing to release: the planner runs no thread of its own."""

    # ----------------------------------------------------------- estimates

    def _scopes(self, conn: Connection, prefix: tuple[str, ...]) -> list[Scope]:
        specs = [self.collections.for_namespace(prefix)] if prefix else list(self.collections)
        out: list[Scope] = []
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
                    Scope(
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
                    Scope(
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

    def _sampled_candidates(self, conn: Connection, scope: Scope, conds: list[Condition]) -> int:
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

    def _choose(self, scope: Scope, conds: list[Condition]) -> str:
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

    def _weak(self, scope: Scope, conds: list[Condition]) -> bool:
        """Whether the scope is scored in place because HNSW measured poorly on its collection."""
        return (
            not conds
            and self.exact_max * FULL_SCAN_FACTOR < scope.n_vectors <= WEAK_SCAN_MAX
            and self.recall.weak(scope.collection)
        )

    # --------------------------------------------------------------- entry

    def explain(self, op: SearchOp, *, has_query: bool, keeps: float | None = None) -> Plan:
        """The plan ``op`` would get, without running it (nothing is loaded into memory).

        ``keeps``: the share of items an omit keeps (a data cut-off), as `Planner.run()` plans for it.
        """
        with self._vectors_lock(), self.catalog.snapshot() as conn:
            plan, scopes, conds = self._plan(conn, op, has_query)
            if keeps is not None and has_query and plan.strategy != "empty":
                self._narrow(plan, scopes, conds, keeps)
            return plan

    def _vectors_lock(self) -> Any:
        return self.vectors.lock if self.vectors is not None else contextlib.nullcontext()

    def _plan(
        self, conn: Connection, op: SearchOp, has_query: bool, *, load: bool = False
    ) -> tuple[Plan, list[Scope], list[Condition]]:
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

    def _narrow(self, plan: Plan, scopes: list[Scope], conds: list[Condition], keeps: float) -> None:
        """Plan again for an ``omit`` that says it keeps only a share ``keeps`` of the items (a data cut-off).

        Its share is known only inside the search's snapshot, after planning: the candidates shrink by it,
        so a scope that few items of pass is scored exactly (as a selective filter would be), and an HNSW
        round over-fetches by it instead of widening round after round.
        """
        for s in scopes:
            s.candidates = max(1, math.ceil(s.candidates * keeps))
            if s.strategy == "hnsw":
                s.strategy = self._choose(s, conds or _NARROWED)
        strategies = {s.strategy for s in scopes}
        plan.strategy = strategies.pop() if len(strategies) == 1 else "mixed"
        plan.candidates = sum(s.candidates for s in scopes)
        plan.notes.append(f"omit keeps ~{keeps:.0%} of items: planned for ~{plan.candidates} candidates")

    # --------------------------------------------------------------- plans

    def _is_resident(self, scope: Scope) -> bool:
        return self.vectors is not None and self.vectors.cached(scope.collection)

    def _resident(self, conn: Connection, scope: Scope) -> CollectionVectors | None:
        """The scope's collection in memory, brought up to date, or None when it is not loaded."""
        if self.vectors is None or not self.vectors.cached(scope.collection):
            return None
        return self.vectors.get(conn, scope.collection, _log_head(scope))

    def _load_for(self, conn: Connection, scope: Scope) -> None:
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

    @staticmethod
    def _passing(conn: Connection, conds: list[Condition], ids: np.ndarray) -> np.ndarray:
        """The ids (in their order) whose index rows meet every condition (each is checked on its value later)."""
        return _scope.passing(conn, conds, ids)


def keep_all(_it: StoredItem) -> bool:
    """The `Omit` that leaves nothing out (a search may then count items it has not read)."""
    return False


def _scope_rows(col: CollectionVectors, scope: Scope) -> Segments:
    """The rows of ``col`` in the scope: all of them for a whole collection, else its namespaces' runs."""
    return col.everything() if scope.bounds is None else col.namespace_rows(*scope.bounds, scope.ns_ids)


def _share(scope: Scope) -> float:
    """The candidates' share of the index's records (items can have several vectors each)."""
    return max(scope.candidates * scope.n_vectors / max(scope.n_items, 1) / max(scope.n_collection_vectors, 1), 1e-6)


def _log_head(scope: Scope) -> tuple[int, str | None] | None:
    """The change log's head read with the scope's counts, if it was."""
    return None if scope.heads is None else (scope.heads.log_seq, scope.heads.epoch)
