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
import math
from collections.abc import Callable, Container, Sequence
from typing import Any

import numpy as np
from langgraph.store.base import SearchOp

from langgraph_memory.catalog import StoredItem
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import keywords as _keywords
from langgraph_memory.catalog import queue as _queue
from langgraph_memory.catalog import scope as _scope
from langgraph_memory.catalog import vectors as _vectors
from langgraph_memory.catalog.connection import Connection
from langgraph_memory.catalog.fields import Condition
from langgraph_memory.errors import StorageError
from langgraph_memory.index.chroma import IndexBusy, IndexUnavailable
from langgraph_memory.search import filters as _filters
from langgraph_memory.search.plan import (
    _NO_IDS,
    _RESCORE_MARGIN,
    _SCORE_SLACK,
    EXACT_MAX,
    MIN_FETCH,
    OVERFETCH,
    PROBE_ROWS,
    PROBE_WIDEN,
    WEAK_SCAN_MAX,
    WITH_VALUES_MAX,
    Hit,
    LateOmit,
    Omit,
    Plan,
    PlanChoice,
    Scope,
    _scope_rows,
    _share,
    keep_all,
)
from langgraph_memory.search.vectors import CollectionVectors, Segments, dot_rows

__all__ = ["Plan", "Planner", "EXACT_MAX", "OVERFETCH"]

#: Called by `Planner.run()` inside the search's snapshot, after the vector search: ``(conn, scorer, hits, omit)``.
Then = Callable[[Connection, "ScopeScorer", list[Hit], Omit], None]
#: Accepted by `Planner.run()` for its callers; never called (no HNSW query runs while a search plans).
Meanwhile = Callable[[Connection], None]


class Planner(PlanChoice):
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
        ``meanwhile`` is not called: a search's HNSW query starts after it plans.
        """
        need = op.offset + op.limit
        if qvec is not None:
            self.index.catch_up()  # after a Chroma server outage (a no-op otherwise)
        with self._vectors_lock(), self.catalog.snapshot() as conn:
            plan, scopes, conds = self._plan(conn, op, qvec is not None, load=True)
            if plan.strategy == "empty" or need <= 0:
                return [], plan
            if omit_for is not None:
                heads = scopes[0].heads if scopes else None
                omit = omit_for(conn, None if heads is None else heads.status_version)
            if omit is None:
                omit = keep_all
            keeps = getattr(omit, "keeps", None)
            if keeps == 0:
                return [], plan  # the omit keeps nothing at all (a cut-off before every known date)
            if keeps is not None and qvec is not None:
                self._narrow(plan, scopes, conds, keeps)
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
                try:
                    scored.extend(self._hnsw(conn, s, conds, op.filter, plan, qvec, need, omit))
                except IndexBusy:
                    # Applying changes (for up to a second a chunk); an HNSW search may miss an item too.
                    plan.notes.append(f"{s.collection}: index busy, the best by sketch scored exactly")
                    scored.extend(self._exact(conn, s, conds, op.filter, qvec, need, omit, coarse=True))
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

    def _scan(
        self,
        conn: Connection,
        scopes: list[Scope],
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
        skip: Container[int] = getattr(omit, "skip_ids", ())  # known to be left out: not parsed
        # An as-of view's omit leaves out what became current after its moment: the SQL does, before paging.
        at: float | None = getattr(omit, "current_at", None)
        # As of a moment long ago most of the newest rows changed since: SQLite walks past them to fill a page, so
        # the first page is only as long as asked for (the next ones grow fourfold).
        page = need if at is not None else max(need, 100)
        for it in _scope.newest_items(
            conn, where, conds, page=page, unindexed_only=unindexed_only, skip=skip, current_at=at
        ):
            if _filters.matches(it.value, op.filter) and not omit(it):
                out.append(it)
                if len(out) >= need:
                    break
        return out

    def _exact(
        self,
        conn: Connection,
        scope: Scope,
        conds: list[Condition],
        filter: dict[str, Any] | None,
        qvec: np.ndarray,
        need: int,
        omit: Omit,
        scored_ids: list[np.ndarray] | None = None,
        *,
        coarse: bool = False,
    ) -> list[Hit]:
        """Score every candidate's vectors; the best ``need`` that match (the candidates' ids to ``scored_ids``).

        ``coarse``: candidates in memory are first ranked by their sketch (`CollectionVectors.rank()`).
        """
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
        # An omit that keeps a known share (a data cut-off) drops most of a short list: rank deep enough at once.
        top = max(need, math.ceil(OVERFETCH * need / max(getattr(omit, "keeps", 1.0), 1e-3)))
        while True:
            ranked = col.rank(segments, qvec, top, coarse=coarse)
            hits = self._materialize(conn, ranked, filter, need, omit)
            if len(hits) >= need or len(ranked) < top:
                return hits
            top *= 4  # the filter or TTL dropped some: rank further down

    def _candidates(self, conn: Connection, col: CollectionVectors, scope: Scope, conds: list[Condition]) -> Segments:
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
        self, conn: Connection, scope: Scope, conds: list[Condition], qvec: np.ndarray
    ) -> list[tuple[int, float]]:
        """Every candidate scored from the vectors read out of the catalog, best first."""
        return _rank_rows(_scope.scope_vectors(conn, scope.sql, conds, scope.n_vectors), qvec)

    def _hnsw(
        self,
        conn: Connection,
        scope: Scope,
        conds: list[Condition],
        filter: dict[str, Any] | None,
        plan: Plan,
        qvec: np.ndarray,
        need: int,
        omit: Omit,
        *,
        check: bool = True,
    ) -> list[Hit]:
        """An unfiltered Chroma query, over-fetched and widened, each hit checked in the catalog.

        With ``check``, a search that `RecallWatch` says is due is also scored
        exactly (for a scope small enough to be scored in place), and the
        recall of the HNSW answer is recorded.
        """
        unapplied = scope.heads.unapplied if scope.heads is not None else None
        # Read once Chroma has answered: while the index applies changes a query mostly raises `IndexBusy` and the
        # search is scored exactly, and reading the pending ids first cost that search 50-70 ms at 60,000 pending
        # (bench/load/bulk_load_bench.py --catch-up, 90,000 items: 95% of whole-collection searches were busy).
        pending: list[int] | None = None if unapplied is None or scope.collection in unapplied else []
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
        pending_set: set[int] = set()
        # Items the omit leaves out by id (as of a moment: two thirds of them may have changed since), dropped
        # before the filter index is asked about them and ignored by the check of HNSW's answer.
        left_out: Callable[[np.ndarray], np.ndarray] | None = getattr(getattr(omit, "skip_ids", None), "among", None)
        probes = 0
        while True:
            plan.rounds += 1
            found = self.index.query(scope.collection, qvec, n)
            if pending is None:  # in the search's snapshot, like the counts
                pending = sorted(_queue.pending_items(conn, scope.collection))
                pending_set = set(pending)
            plan.fetch = max(plan.fetch, n)
            if (
                check
                and col is not None
                and probes < 2
                and self._missed(col, scope, qvec, found, need / share, left_out)
            ):
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
            if left_out is not None:
                ids = ids[~left_out(ids)]
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
        self, scope: Scope, conds: list[Condition], filter: dict[str, Any] | None, need: int, *, first: bool
    ) -> int:
        """How many records the first HNSW round over ``scope`` asks Chroma for (``first``: the search's first round)."""
        if first and scope.whole and not conds and not filter and scope.candidates >= scope.n_items:
            return max(need, MIN_FETCH)
        # (An omit that keeps a share of the items, an as-of view's or a data cut-off's, narrowed the candidates
        # (`_narrow`): over-fetched by it at once. As of half way at 100,000 items a hybrid search's first round
        # of 50 records kept 17 of the 20 it needed, and 96 rounds in 100 widened.)
        # An item's records sit near one another (its fields say related things), so fewer distinct items
        # than records come back: with three fields a third of searches widened and paid a second fetch and
        # read. Asking for sqrt(records per item) times more, 3 searches in 55 widened (100,000 items, three
        # fields: p50 unchanged, mean 15.0 against 17.0 ms, recall 0.986 against 0.978); the full factor
        # made every HNSW query dearer than the widening it saved.
        per_item = math.sqrt(max(scope.n_vectors / max(scope.n_items, 1), 1.0))
        return max(MIN_FETCH, math.ceil(need * per_item / _share(scope) * OVERFETCH))

    def _missed(
        self,
        col: CollectionVectors,
        scope: Scope,
        qvec: np.ndarray,
        found: list[tuple[int, int, float]],
        depth: float,
        left_out: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> bool:
        """Whether HNSW's ``found`` lacks an item of the scope that belongs among its best ``depth`` records
        (and that ``left_out``, a mask of item ids the search leaves out anyway, does not mark).

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
        if left_out is None:
            return col.beaten(segments, qvec, bar, lambda ids: np.isin(ids, got), PROBE_ROWS)
        return col.beaten(segments, qvec, bar, lambda ids: np.isin(ids, got) | left_out(ids), PROBE_ROWS)

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
        scope: Scope,
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

    def _exact_items(
        self,
        conn: Connection,
        col: CollectionVectors | None,
        item_ids: Sequence[int],
        scope: Scope,
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
            if skip:  # a chunk of ``batch`` items to read: one read, however many the skipped are
                chunk: list[tuple[int, float]] = []
                while pos < len(ranked) and len(chunk) < batch:
                    if ranked[pos][0] not in skip:
                        chunk.append(ranked[pos])
                    pos += 1
            else:
                chunk = ranked[pos : pos + batch]
                pos += batch
            if rows is not None:
                items = {i: _item_rows.item_from_row(rows[i]) for i, _ in chunk if i in rows}
            else:
                items = _item_rows.get_by_ids(conn, [i for i, _ in chunk])
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
        scopes: list[Scope],
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
