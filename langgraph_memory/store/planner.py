"""Search planning: pick the cheapest plan that is exact enough, from the catalog's counts.

A search names a namespace prefix, maybe a filter and maybe a query. The
planner estimates the candidate set from the catalog (items per namespace,
kept by every write; filter matches from the filter index, counted with a
cap) and picks one of:

``exact``
    few candidates (at most :data:`EXACT_MAX`): their vectors are read from
    the catalog and scored with numpy. No Chroma call, and the true top results.
``hnsw``
    many candidates: an unfiltered Chroma query over-fetched by the inverse of
    the candidates' share of the collection, each hit checked against the
    scope and the filter in the catalog, widened until ``offset + limit``
    matches are found (or the plan turns ``exact`` when widening would read
    most of the collection). Items whose latest vectors Chroma has not applied
    yet are scored exactly and merged in.
``scan``
    no query: items in the catalog, newest first (``updated_at``), through
    the namespace and filter indexes.

Chroma's ``where`` is never used: measured here, its cost grows with the
whole collection, not with the matches (see PITFALLS). :meth:`Planner.explain`
tells which plan a search gets, as a database's ``EXPLAIN`` does; the store
logs every plan at debug level.
"""

from __future__ import annotations

import logging
import math
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from langgraph.store.base import SearchOp

from langgraph_memory.catalog import Catalog, StoredItem
from langgraph_memory.catalog import items as _items
from langgraph_memory.catalog import queue as _queue
from langgraph_memory.catalog.fields import Condition, compile_filter
from langgraph_memory.collections import COLLECTIONS, GENERAL, collection_for
from langgraph_memory.errors import StorageError
from langgraph_memory.store import filters as _filters
from langgraph_memory.store.index import ChromaIndex, IndexUnavailable

__all__ = ["Plan", "Planner", "EXACT_MAX", "OVERFETCH"]

logger = logging.getLogger(__name__)

#: At most this many candidate items are scored exactly from the catalog.
EXACT_MAX = 2000
#: The first HNSW round fetches this many times what the candidates' share predicts.
OVERFETCH = 3.0
#: Fewest records an HNSW round asks for (a larger ``n_results`` also widens HNSW's beam: better recall).
MIN_FETCH = 50
#: Filter matches are counted up to this many per condition when planning.
COUNT_CAP = 20_000

Omit = Callable[[StoredItem], bool]
Hit = tuple[float | None, StoredItem]


@dataclass
class _Scope:
    collection: str
    whole: bool  # every item of the collection is in the namespace scope
    n_items: int  # items in scope
    n_collection: int  # items in the collection
    sql: str  # condition on i.ns_id
    params: tuple[Any, ...]


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


def _prefix_range(prefix: Sequence[str]) -> tuple[str, str, str]:
    joined = _items.join_ns(prefix)
    return joined, joined + _items.NS_SEP, joined + chr(ord(_items.NS_SEP) + 1)


class Planner:
    """Plans and runs searches over one catalog and its Chroma index.

    Example:
        >>> plan = store.explain(("memories", "u3"), query="risk", filter={"kind": "note"})  # doctest: +SKIP
        >>> plan.strategy                                                                    # doctest: +SKIP
        'exact'
    """

    def __init__(self, catalog: Catalog, index: ChromaIndex, *, exact_max: int = EXACT_MAX) -> None:
        self.catalog = catalog
        self.index = index
        self.exact_max = exact_max

    # ----------------------------------------------------------- estimates

    def _scopes(self, conn: sqlite3.Connection, prefix: tuple[str, ...]) -> list[_Scope]:
        specs = [collection_for(prefix)] if prefix else [*COLLECTIONS.values(), GENERAL]
        out: list[_Scope] = []
        for spec in specs:
            (n_coll,) = conn.execute(
                "SELECT coalesce(sum(n_items), 0) FROM namespaces WHERE collection = ?", (spec.name,)
            ).fetchone()
            if not n_coll:
                continue
            if not prefix or (spec.typed and len(prefix) == 1):
                out.append(_Scope(spec.name, True, n_coll, n_coll,
                                  "i.ns_id IN (SELECT id FROM namespaces WHERE collection = ?)", (spec.name,)))
                continue
            exact, lo, hi = _prefix_range(prefix)
            cond = "collection = ? AND (ns = ? OR (ns >= ? AND ns < ?))"
            params = (spec.name, exact, lo, hi)
            (n_scope,) = conn.execute(
                f"SELECT coalesce(sum(n_items), 0) FROM namespaces WHERE {cond}", params
            ).fetchone()
            if n_scope:
                out.append(_Scope(spec.name, n_scope == n_coll, n_scope, n_coll,
                                  f"i.ns_id IN (SELECT id FROM namespaces WHERE {cond})", params))
        return out

    @staticmethod
    def _filter_count(conn: sqlite3.Connection, conds: list[Condition]) -> int | None:
        """Matches of the most selective condition, counted up to :data:`COUNT_CAP` (None: no condition)."""
        best: int | None = None
        for cond in conds:
            sql, params = cond.sql()
            (n,) = conn.execute(f"SELECT count(*) FROM ({sql} LIMIT {COUNT_CAP})", params).fetchone()
            best = n if best is None else min(best, n)
            if best == 0:
                break
        return best

    @staticmethod
    def _filter_sql(conds: list[Condition]) -> tuple[str, tuple[Any, ...]]:
        parts, params = [], []
        for cond in conds:
            sql, p = cond.sql()
            parts.append(sql)
            params.extend(p)
        return " INTERSECT ".join(parts), tuple(params)

    def candidate_ids(self, conn: sqlite3.Connection, plan: Plan, filter: dict[str, Any] | None) -> list[int]:
        """Ids of the items in ``plan``'s scope matching the indexed part of ``filter`` (for few candidates).

        Hybrid search intersects keyword matches with them when the plan is ``exact``.
        """
        if plan.scope_sql is None:
            return []
        where, params = plan.scope_sql
        conds = compile_filter(filter)[0]
        if not conds:
            return [r[0] for r in conn.execute(f"SELECT i.id FROM items i WHERE {where}", params)]
        # The filter's matches drive the join: few of them, each checked against the scope by primary key.
        fsql, fparams = self._filter_sql(conds)
        return [r[0] for r in conn.execute(
            f"SELECT i.id FROM ({fsql}) f CROSS JOIN items i ON i.id = f.item_id WHERE {where}", (*fparams, *params))]

    # --------------------------------------------------------------- entry

    def explain(self, op: SearchOp, *, has_query: bool) -> Plan:
        """The plan ``op`` would get, without running it."""
        with self.catalog.read() as conn:
            return self._plan(conn, op, has_query)[0]

    def _plan(self, conn: sqlite3.Connection, op: SearchOp, has_query: bool) -> tuple[Plan, list[_Scope], list[Condition]]:
        scopes = self._scopes(conn, op.namespace_prefix)
        conds, exact = compile_filter(op.filter)
        fcount = self._filter_count(conn, conds) if conds and scopes else None
        scope_items = sum(s.n_items for s in scopes)
        candidates = scope_items if fcount is None else min(scope_items, fcount)
        plan = Plan("scan", [s.collection for s in scopes], scope_items, candidates, exact)
        if scopes:
            plan.scope_sql = f"({' OR '.join(s.sql for s in scopes)})", tuple(p for s in scopes for p in s.params)
        if not scopes or candidates == 0:
            plan.strategy = "empty"
        elif has_query:
            plan.strategy = "exact" if candidates <= self.exact_max else "hnsw"
            broken = [s.collection for s in scopes if s.collection in self.index.broken]
            if broken:
                plan.strategy = "exact"
                plan.notes.append(f"index of {', '.join(broken)} waiting for a rebuild")
        return plan, scopes, conds

    def run(self, op: SearchOp, qvec: np.ndarray | None, *, omit: Omit) -> tuple[list[Hit], Plan]:
        """Run ``op`` (``qvec``: the embedded query, or None for a listing); return hits and the plan."""
        need = op.offset + op.limit
        with self.catalog.read() as conn:
            plan, scopes, conds = self._plan(conn, op, qvec is not None)
            if plan.strategy == "empty" or need <= 0:
                return [], plan
            if qvec is None:
                hits: list[Hit] = [(None, it) for it in self._scan(conn, scopes, conds, op, need, omit)]
                return hits[op.offset : need], plan
        if plan.strategy == "exact":
            with self.catalog.read() as conn:
                scored = [h for s in scopes for h in self._exact(conn, s, conds, op.filter, plan, qvec, need, omit)]
        else:
            scored = []
            for s in scopes:
                try:
                    scored.extend(self._hnsw(s, conds, op.filter, plan, qvec, need, omit))
                except (IndexUnavailable, StorageError):
                    plan.notes.append(f"{s.collection}: index failed, searched exactly")
                    with self.catalog.read() as conn:
                        scored.extend(self._exact(conn, s, conds, op.filter, plan, qvec, need, omit, force=True))
        scored.sort(key=lambda h: (-(h[0] or 0.0), h[1].id or 0))
        hits = scored[:need]
        if len(hits) < need:
            # Like InMemoryStore: fewer items with vectors than asked for are
            # followed by matching items that have none, unscored.
            with self.catalog.read() as conn:
                unindexed = self._scan(conn, scopes, conds, op, need - len(hits), omit, unindexed_only=True)
            hits.extend((None, it) for it in unindexed)
        return hits[op.offset : need], plan

    # --------------------------------------------------------------- plans

    def _scan(
        self,
        conn: sqlite3.Connection,
        scopes: list[_Scope],
        conds: list[Condition],
        op: SearchOp,
        need: int,
        omit: Omit,
        *,
        unindexed_only: bool = False,
    ) -> list[StoredItem]:
        """Items in scope matching the filter, newest first, at most ``need``."""
        where = [f"({' OR '.join(s.sql for s in scopes)})"]
        params: list[Any] = [p for s in scopes for p in s.params]
        if conds:
            fsql, fparams = self._filter_sql(conds)
            where.append(f"i.id IN ({fsql})")
            params.extend(fparams)
        if unindexed_only:
            where.append("i.n_vectors = 0")
        sql = (
            f"SELECT {_items.ITEM_COLUMNS} FROM items i JOIN namespaces n ON n.id = i.ns_id "
            f"WHERE {' AND '.join(where)} ORDER BY i.updated_at DESC, i.id DESC LIMIT ? OFFSET ?"
        )
        out: list[StoredItem] = []
        page = max(need, 100)
        offset = 0
        while len(out) < need:
            rows = conn.execute(sql, (*params, page, offset)).fetchall()
            for row in rows:
                it = _items.item_from_row(row)
                if _filters.matches(it.value, op.filter) and not omit(it):
                    out.append(it)
                    if len(out) >= need:
                        break
            if len(rows) < page:
                break
            offset += page
            page *= 4
        return out

    def _exact(
        self,
        conn: sqlite3.Connection,
        scope: _Scope,
        conds: list[Condition],
        filter: dict[str, Any] | None,
        plan: Plan,
        qvec: np.ndarray,
        need: int,
        omit: Omit,
        *,
        force: bool = False,
        only: Sequence[int] | None = None,
    ) -> list[Hit]:
        """Score every candidate's vectors from the catalog; the best ``need`` that match."""
        where = [scope.sql]
        params: list[Any] = list(scope.params)
        if conds:
            fsql, fparams = self._filter_sql(conds)
            where.append(f"v.item_id IN ({fsql})")
            params.extend(fparams)
        if only is not None:
            if not only:
                return []
            where.append(f"v.item_id IN ({','.join(str(int(i)) for i in only)})")
        rows = conn.execute(
            f"SELECT v.item_id, v.vec FROM vectors v JOIN items i ON i.id = v.item_id WHERE {' AND '.join(where)}",
            tuple(params),
        ).fetchall()
        if not rows:
            return []
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        scores = _cosine(rows, qvec)
        best: dict[int, float] = {}
        for item_id, score in zip(ids.tolist(), scores.tolist()):
            if score > best.get(item_id, -2.0):
                best[item_id] = score
        ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
        return self._materialize(conn, ranked, filter, scope, need, omit, check_scope=False)

    def _hnsw(
        self,
        scope: _Scope,
        conds: list[Condition],
        filter: dict[str, Any] | None,
        plan: Plan,
        qvec: np.ndarray,
        need: int,
        omit: Omit,
    ) -> list[Hit]:
        """An unfiltered Chroma query, over-fetched and widened, each hit checked in the catalog."""
        with self.catalog.read() as conn:
            pending = {
                item_id for _seq, item_id, _n in _queue.pending(conn, scope.collection)
            }
            fcount = self._filter_count(conn, conds) if conds else None
        candidates = scope.n_items if fcount is None else min(scope.n_items, fcount)
        share = max(candidates / max(scope.n_collection, 1), 1e-6)
        if plan.fetch == 0 and scope.whole and not filter:
            n = max(need, MIN_FETCH)
        else:
            n = max(MIN_FETCH, math.ceil(need / share * OVERFETCH))
        limit = max(scope.n_collection * 2, need)  # vector records can outnumber items
        while True:
            plan.fetch = max(plan.fetch, n)
            plan.rounds += 1
            found = self.index.query(scope.collection, qvec, min(n, limit))
            best: dict[int, float] = {}
            for item_id, _idx, dist in found:
                if item_id in pending:
                    continue
                score = 1.0 - dist
                if score > best.get(item_id, -2.0):
                    best[item_id] = score
            ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
            with self.catalog.read() as conn:
                hits = self._materialize(conn, ranked, filter, scope, need, omit, check_scope=not scope.whole)
                if pending:
                    hits.extend(self._exact(conn, scope, conds, filter, plan, qvec, need, omit, only=sorted(pending)))
            exhausted = len(found) < min(n, limit)
            if len([h for h in hits if h[1].id not in pending]) >= need or exhausted or n >= limit:
                return hits
            if n * 4 > max(self.exact_max * 4, scope.n_collection // 2):
                plan.notes.append(f"{scope.collection}: widening would read most of the index; scored exactly")
                with self.catalog.read() as conn:
                    return self._exact(conn, scope, conds, filter, plan, qvec, need, omit, force=True)
            n *= 4

    def _materialize(
        self,
        conn: sqlite3.Connection,
        ranked: list[tuple[int, float]],
        filter: dict[str, Any] | None,
        scope: _Scope,
        need: int,
        omit: Omit,
        *,
        check_scope: bool,
    ) -> list[Hit]:
        """Read ranked items in order, keep those in scope that match, until ``need``."""
        in_scope: set[int] | None = None
        out: list[Hit] = []
        pos = 0
        batch = max(need * 2, 32)
        while pos < len(ranked) and len(out) < need:
            chunk = ranked[pos : pos + batch]
            pos += batch
            ids = [i for i, _ in chunk]
            if check_scope:
                marks = ",".join("?" * len(ids))
                in_scope = {
                    r[0]
                    for r in conn.execute(f"SELECT i.id FROM items i WHERE i.id IN ({marks}) AND {scope.sql}",
                                          (*ids, *scope.params))
                }
            items = _items.get_by_ids(conn, ids)
            for item_id, score in chunk:
                it = items.get(item_id)
                if it is None or (in_scope is not None and item_id not in in_scope):
                    continue
                if not _filters.matches(it.value, filter) or omit(it):
                    continue
                out.append((score, it))
                if len(out) >= need:
                    break
            batch *= 2
        return out


def _cosine(rows: list[tuple[int, bytes]], qvec: np.ndarray) -> np.ndarray:
    """Cosine similarity of ``qvec`` with each row's float32 vector."""
    dims = len(rows[0][1]) // 4
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dims)
    q = qvec.astype(np.float32)
    qn = float(np.linalg.norm(q)) or 1.0
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    return (matrix @ q) / (norms * qn)
