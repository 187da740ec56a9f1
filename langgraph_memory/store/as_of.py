"""A read-only view of a store as it stood at a past moment: `ChromaStore.as_of()`.

An item's state at ``t`` is the version current then: the item's current
version if it became current at or before ``t`` (``valid_from <= t``), else
the past version with ``valid_from <= t < valid_to`` in the catalog's
history (`langgraph_memory.catalog.history`). A change made at ``t``
exactly is seen.

A search runs the store's own plan (exact or HNSW, hybrid ranking
included) over the items whose current version was already current at ``t``,
leaving out those changed since, then scores the past versions valid at
``t`` exactly from their kept vectors and merges both; the plan is asked for
``offset + limit`` results after its omissions, so the merged top is exact.
Ages in hybrid ranking are measured at ``t``. Retired and superseded versions
are hidden as they were then.

The store keeps its past versions' scan data in memory (`PastVersionIndex`:
ids, times, statuses, vectors), read from the history on the first search
as of any moment and then only as the history grows, so a moment costs a
vectorised mask, not a read. The mask, and what searches derive from it
(each scope's versions, their texts' keyword masks), is kept for the last
few moments and shared by every view of one (a reader may make a view per
read at one checkpoint time): a new view's first search costs about what
its later ones do.

    >>> from datetime import datetime, UTC
    >>> store.put(("notes",), "n1", {"text": "first draft"})
    >>> then = datetime.now(UTC)
    >>> store.put(("notes",), "n1", {"text": "final text"})
    >>> store.as_of(then).get(("notes",), "n1").value
    {'text': 'first draft'}

It is a LangGraph ``BaseStore``: ``builder.compile(store=store.as_of(t))``
gives a graph whose nodes read the memory of ``t``. Every write raises
[`ReadOnlyError`][langgraph_memory.errors.ReadOnlyError].

In hybrid ranking with keywords, a past version's keyword evidence comes
from its kept value (the text a put of it indexes, read once per version
and store), scored by the keyword index's BM25 against the index's
statistics as of ``t`` (`keywords.Corpus`), and so do current items': every
item scores what it scored at ``t``. Under ``noisy-or`` fusion on the
query's scale a version's final score is known from the arrays (its
relevance times the weight its age leaves it), so only the past versions
among the best are read; only those holding a query word are scored for
keywords. Reads
are not kept per moment, so every version ranks as unread (the ranking's
``access_boost_factor`` taken as 0): the answer depends on ``t`` and the
history only, never on reads made since.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime
from typing import Any, Unpack

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from langgraph_memory.catalog import StoredItem
from langgraph_memory.catalog import evidence as _evidence
from langgraph_memory.catalog import history as _history
from langgraph_memory.catalog import items as _items
from langgraph_memory.catalog import keywords as _keywords
from langgraph_memory.catalog import past_versions as _pv
from langgraph_memory.catalog.connection import POSTGRESQL, dialect_of
from langgraph_memory.errors import InvalidArgumentError, ReadOnlyError
from langgraph_memory.search import filters as _filters
from langgraph_memory.search import neighbours as _neighbours
from langgraph_memory.search.hybrid import Candidate, explain_candidates
from langgraph_memory.search.plan import keep_all
from langgraph_memory.search.ranking import HybridRanking, importance_multiplier
from langgraph_memory.search.vectors import dot_rows
from langgraph_memory.store.namespaces import select_namespaces, validate_namespace

__all__ = ["AsOfStore", "PastVersionIndex", "PROBED_SCOPE"]

Hit = tuple[float | None, StoredItem]


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


class AsOfStore(BaseStore):
    """``store`` as it stood at ``at`` (epoch seconds): gets, searches and namespace listings; no writes.

    Made by `ChromaStore.as_of()`; see the module for what "as it stood" covers.
    """

    supports_ttl: bool = False
    #: ``search(..., data_cutoff=date)`` keeps only items whose evidence ends by that date, as the store does.
    supports_data_cutoff: bool = True

    # ``store`` is the ChromaStore read (typed loosely: its module imports this one, and the layout allows no cycle).
    def __init__(self, store: Any, at: float) -> None:
        self.store = store
        #: the moment read, in epoch seconds.
        self.at = float(at)
        # The store's past versions masked to this moment (shared with the store's other views of it): made
        # again only when the history changed.
        self._moment: _pv.Moment | None = None

    def _past(self, conn: Any | None = None, stamp: tuple[Any, ...] | None = None) -> _pv.Moment:
        """The past versions valid at `at` (masked again when the history changed), read on ``conn`` (a snapshot)
        or in a snapshot of their own; ``stamp``: the history's, read already on ``conn``."""
        if conn is None:
            with self.store.catalog.snapshot() as conn:
                return self._past(conn)
        past = self.store._past_versions.versions
        versions = past.current(conn, stamp)
        m = self._moment
        if m is None or m.versions is not versions:
            m = self._moment = past.moment(versions, self.at)
        return m

    @property
    def moment(self) -> datetime:
        """The moment this view reads, as a UTC datetime."""
        return _dt(self.at)

    def __repr__(self) -> str:
        return f"AsOfStore({self.moment.isoformat()})"

    # ------------------------------------------------------------ batch

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` as of `at`; a ``PutOp`` raises ``ReadOnlyError`` before anything runs."""
        ops = list(ops)
        self.store._check_open()
        for op in ops:
            if isinstance(op, PutOp):
                raise ReadOnlyError(
                    f"this store view reads the memory as of {self.moment.isoformat()} and cannot be written; "
                    "write through the store itself"
                )
        out: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                out.append(self._get(validate_namespace(op.namespace, for_write=False), op.key))
            elif isinstance(op, SearchOp):
                out.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                with self.store.catalog.snapshot() as conn:
                    m = self._past(conn)
                    past = (m.versions.names[i] for i in np.unique(m.versions.ns[m.pos]))
                    out.append(select_namespaces(_history.namespaces_at(conn, self.at, past), op))
            else:
                raise InvalidArgumentError(f"unknown operation type: {type(op).__name__}")
        return out

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async `batch` (the catalog work runs in a worker thread)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        include_retired: bool = False,
        **cutoff: Unpack[_evidence.CutoffArgs],
    ) -> list[SearchItem]:
        """``BaseStore.search`` as of `at`; retired and superseded versions are left out unless ``include_retired``.

        A ``data_cutoff`` keeps the versions of items whose evidence ends by it as the store knows the
        evidence ends now: they only move forward as lineage grows, so what passes now passed at `at` too
        (an item whose lineage grew past the cut-off since is left out; see ``ChromaStore.search``).
        """
        day, undated = _evidence.cutoff_of(dict(cutoff))
        op = self.store._search_op(namespace_prefix, query, filter, limit, offset, False, include_retired)
        return self._search(op, day, undated)

    async def asearch(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        include_retired: bool = False,
        **cutoff: Unpack[_evidence.CutoffArgs],
    ) -> list[SearchItem]:
        """Async `search()`."""
        return await asyncio.to_thread(
            self.search,
            namespace_prefix,
            query=query,
            filter=filter,
            limit=limit,
            offset=offset,
            include_retired=include_retired,
            **cutoff,
        )

    # ------------------------------------------------------------ reads

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        store, at = self.store, self.at
        with store.catalog.read() as conn:
            live = _items.get_items(conn, [(namespace, key)]).get((namespace, key))
            if live is not None and live.valid_since <= at:
                it = live
            else:
                past = _history.version_at(conn, _items.item_uid(namespace, key), at)
                if past is None:
                    return None
                it = _stored(past)
        if store._omits_expired and it.expires_at is not None and it.expires_at < at:
            return None
        return Item(
            value=it.value,
            key=it.key,
            namespace=it.namespace,
            created_at=_dt(it.created_at),
            updated_at=_dt(it.updated_at),
        )

    def _search(self, op: SearchOp, cutoff: date | None = None, include_undated: bool = False) -> list[SearchItem]:
        store, at = self.store, self.at
        op = store._check_search(op)
        # A SearchAllOp (store.search(include_retired=True)); its class lives in store.searching, which imports this.
        include_retired = type(op) is not SearchOp
        qvec = store._embed_query(op.query) if op.query and store.cached_embeddings is not None else None
        need = op.offset + op.limit
        if need <= 0:
            return []
        inner = op._replace(offset=0, limit=need)
        seen: list[_pv.Moment] = []

        def omit_for(conn: Any, status_version: int | None) -> Callable[[StoredItem], bool]:
            # In the search's own snapshot: the past versions and the current items it reads agree.
            stamp, n_items = _pv.stamp_and_items(conn)
            seen.append(self._past(conn, stamp))
            hidden = None if include_retired else store._hidden.snapshot(conn, status_version)
            omit = _ChangedSince(at, store._omitter(at, hidden), seen[-1].changed)
            if len(omit.skip_ids):
                # The share of today's items unchanged since: the planner over-fetches by it at once
                # instead of widening round after round (as for a data cut-off).
                omit.keeps = max(0.01, 1.0 - len(omit.skip_ids) / max(n_items, 1))
            return store._cut(conn, omit, cutoff, include_undated)

        ranking = store.ranking
        hybrid = ranking is not None and qvec is not None and bool(op.query)
        if hybrid:
            assert ranking is not None and qvec is not None and op.query
            # Reads are not kept per moment: every version ranks as unread (see the module).
            temporal = ranking.temporal and dataclasses.replace(ranking.temporal, access_boost_factor=0.0)
            ranking = dataclasses.replace(ranking, clock=lambda: at, temporal=temporal)
            if ranking.keyword_weight != 0.0:
                return self._keyword_search(op, qvec, ranking, omit_for, seen, include_retired, cutoff, include_undated)
            current, _plan = store.hybrid.run(inner, qvec, ranking, omit_for=omit_for)
        else:
            current, _plan = store.planner.run(inner, qvec, omit_for=omit_for)
        scored: list[tuple[float, StoredItem]] = [(s, it) for s, it in current if s is not None]
        unscored = [it for s, it in current if s is None]
        # Past versions current at ``at``, unread; only those ranked first have their values read (and filtered).
        m = seen[-1] if seen else self._past()  # the planner found nothing to search, or none in scope
        past = self._in_scope(m, op.namespace_prefix, include_retired)
        newest_first = past
        with store.catalog.read() as conn:
            cut = store._cut(conn, keep_all, cutoff, include_undated)  # past versions by their item's evidence end
            if len(past) and qvec is not None:
                bounded = not hybrid and len(scored) >= need
                if bounded:  # only those above the current items' need-th can enter
                    current = np.fromiter((sc for sc, _it in scored), dtype=np.float64, count=len(scored))
                    floor = -np.partition(-current, need - 1)[need - 1]
                first, omits = max(4 * need, 64), store._omits_expired
                # A large scope's nearest clusters first; all of them when those leave the page short.
                for probe in (True, False):
                    best, complete = _best_cosines(m, qvec, past, probe)  # by position in ``past``
                    take = need
                    if bounded:
                        with_vec = np.flatnonzero(best >= floor - 1e-9)  # (NaN, -inf: False)
                        if not op.filter and cutoff is None:
                            # Nothing leaves out a version read (expired ones are out of scope already): only
                            # those among the best ``need`` of both are read.
                            union = np.concatenate([current, best[with_vec]])
                            bar = -np.partition(-union, need - 1)[need - 1]
                            take = int(np.count_nonzero(best[with_vec] >= bar - 1e-9))
                    else:
                        with_vec = np.flatnonzero(best > -np.inf)  # scored (NaN: no vector; -inf: not probed)
                    order = _first(with_vec, -best[with_vec], m.item_ids[past[with_vec]], first)
                    # With a filter, the best above the current items' bar (a few dozen) are read in one
                    # statement: read in growing chunks until ``take`` matched, they took two or three.
                    chunk = len(order) if op.filter and bounded else None
                    got = _read_first(conn, m.ids[past[order]], op.filter, take, omits, at, cut, chunk)
                    if len(got) < take and len(order) < len(with_vec):  # the filter left too few of the best
                        order = _first(with_vec, -best[with_vec], m.item_ids[past[with_vec]], len(with_vec))
                        got = _read_first(conn, m.ids[past[order]], op.filter, take, omits, at, cut)
                    if complete or len(scored) + len(got) >= need:
                        break
                for k, it in got:
                    sim = float(best[order[k]])
                    if not hybrid:
                        scored.append((sim, it))
                        continue
                    assert ranking is not None
                    parts, _c = explain_candidates(
                        [Candidate(it, sim, vector=True)], ranking, now=at, collections=store.collections
                    )[0]
                    scored.append((parts.final, it))
                newest_first = past[np.isnan(best)]
            if len(newest_first) and len(scored) < need:  # listings, and items without vectors after the scored
                if not scored and len(unscored) >= need:  # only those newer than the current items' need-th can enter
                    floor = sorted((it.updated_at for it in unscored), reverse=True)[need - 1]
                    newest_first = newest_first[m.updated[newest_first] >= floor]
                newest_first = _first(newest_first, -m.updated[newest_first], -m.item_ids[newest_first], len(past))
                unscored.extend(
                    it
                    for _k, it in _read_first(conn, m.ids[newest_first], op.filter, need, store._omits_expired, at, cut)
                )
        return _results(op, scored, unscored)

    def _in_scope(self, m: _pv.Moment, prefix: tuple[str, ...], include_retired: bool) -> np.ndarray:
        """The moment's past versions (positions in it, increasing) under ``prefix``, shown (``include_retired``),
        not expired then; kept on the moment for its next search of the same scope."""
        omits_expired = bool(self.store._omits_expired)
        key = ("scope", prefix, include_retired, omits_expired)
        got: np.ndarray | None = m.cache.get(key)
        if got is None:
            mask = m.in_prefix(prefix) & (m.live | include_retired)
            if omits_expired:
                mask &= ~(m.expires < self.at)  # NaN (no expiry) compares False
            got = m.keep(key, np.flatnonzero(mask))
        return got

    def _keyword_search(
        self,
        op: SearchOp,
        qvec: np.ndarray,
        ranking: HybridRanking,
        omit_for: Callable[[Any, int | None], Callable[[StoredItem], bool]],
        seen: list[_pv.Moment],
        include_retired: bool,
        cutoff: date | None = None,
        include_undated: bool = False,
    ) -> list[SearchItem]:
        """A hybrid search with keywords as of `at`: every version scored against the keyword index of then.

        The index's statistics are those of ``at`` (`Corpus`): the items
        indexed now that were not then are taken out, and the past versions
        valid then put in, their texts read from their kept values as the
        writer reads a put's. Each past version in scope is scored from its
        kept vectors and that text by the ranking that scores current items;
        where each scores by itself alone, only those whose relevance (an upper
        bound of the final score) can reach the best are read.
        """
        store, at = self.store, self.at
        assert op.query is not None
        need = op.offset + op.limit
        terms = _keywords.query_terms(op.query)
        texts = store._past_versions.texts
        stats: list[tuple[Any, ...]] = []

        def statistics(conn: Any) -> _keywords.Corpus:
            # Read in the hybrid search's own snapshot (one transaction, not two: on a server each costs round
            # trips), where ``omit_for`` took the moment first: the moment's texts, the index's statistics then.
            assert op.query is not None
            m = seen[-1] if seen else self._past(conn)
            holding, n_tokens, turns = texts.of(conn, store, m, terms)
            corpus = self._corpus(texts.lengths(conn), m, n_tokens, holding)
            # The terms' weights, the mean length and the idf mass, which score the past versions' texts; no
            # item is scored here (the hybrid search scores the current ones).
            found = store.hybrid._match(conn, op.query, ranking, np.zeros(0, dtype=np.int64), corpus)
            stats.append((m, holding, n_tokens, turns, found, store._cut(conn, keep_all, cutoff, include_undated)))
            return corpus

        current, _plan = store.hybrid.run_explained(
            op._replace(offset=0, limit=need), qvec, ranking, omit_for=omit_for, corpus=statistics
        )
        if not stats:  # the planner found nothing to search (no current item in scope): the past versions remain
            with store.catalog.snapshot() as conn:
                statistics(conn)
        m, holding, n_tokens, turns, found, cut = stats[0]
        ranked = [(parts, it) for parts, it in current if parts is not None]
        unscored = [it for parts, it in current if parts is None]
        scope = self._in_scope(m, op.namespace_prefix, include_retired)
        # A large scope's nearest clusters first; all of them when those leave the page short.
        first_ranked, first_unscored = ranked, unscored
        # Under noisy-or on the query's scale a version's score depends on itself alone (turns aside: their
        # neighbours raise them); a relative fusion scores every version together, so it needs them all.
        alone = ranking.fusion == "noisy-or" and ranking.keyword_scale == "query"
        for probe in (True, False):
            ranked, unscored = list(first_ranked), list(first_unscored)
            best, complete = _best_cosines(m, qvec, scope, probe and alone)
            has = ~np.isnan(best)
            if not complete:  # only the versions scored take part, and those a query term holds (scored below)
                has &= best > -np.inf
                for t, _idf in found.weights:
                    if t in holding:
                        has |= holding[t][scope] & ~np.isnan(best)
            if has.all():  # every version in scope has vectors: no copies
                scored, bare, sims = scope, scope[:0], best
            else:
                scored, bare, sims = scope[has], scope[np.isnan(best)], best[has]
            # Every version valid then (a whole collection's search): its arrays as they are, no copies.
            rows = None if len(scored) == len(m.ids) else scored

            def of_scored(a: np.ndarray, rows: np.ndarray | None = rows) -> np.ndarray:
                return a if rows is None else a[rows]

            # Only the versions holding a weighted query term have keyword evidence: they alone are scored (each the
            # same float as over every version), the others keep 0 (a whole collection's are tens of thousands).
            weighted = {t: of_scored(holding[t]) for t, _idf in found.weights if t in holding}
            held = np.flatnonzero(np.logical_or.reduce(list(weighted.values()))) if weighted else scope[:0]
            kw, evidence = np.zeros(len(scored)), np.zeros(len(scored))
            if len(held):
                kw[held] = _keywords.score_texts(
                    found,
                    {t: h[held] for t, h in weighted.items()},
                    np.maximum(of_scored(n_tokens)[held], 0),
                    ranking.length_norm,
                )
                if found.mass > 0:
                    evidence[held] = kw[held] / found.mass
                missed = held[np.isneginf(sims[held])]  # keyword evidence in a cluster not probed: scored alone
                if len(missed):
                    sims[missed] = _best_cosines(m, qvec, scored[missed])[0]
            finals = [parts.final for parts, _it in ranked]  # the bar counts the current items too
            turned = bool(ranking.neighbours and of_scored(turns).any())
            if turned and not complete:
                continue  # turns are raised by their neighbours: every version is scored
            if alone and not turned:  # the relevance bounds a version's score
                # Read in order of relevance, which the final score never exceeds, until the rest cannot reach. Without
                # keyword evidence a relevance is the cosine (clipped to [0, 1], as `_relevance` takes it).
                bound = np.clip(sims, 0.0, 1.0)
                bound[held] = _relevance(sims[held], evidence[held], ranking)
                every = np.arange(len(scored)) if complete else np.flatnonzero(sims > -np.inf)
                if len(finals) >= need:  # only those whose relevance reaches the current items' need-th can enter
                    every = np.flatnonzero(bound * (1.0 + 1e-9) >= sorted(finals, reverse=True)[need - 1])
                # Times the weight its age leaves it (a version is never accessed here), a version's relevance is its
                # final score, to rounding (`score_parts_many`'s arithmetic on the same floats).
                bound[every] *= _age_weight(m, scored[every], ranking, at, store.collections)
                if not op.filter and cutoff is None:
                    # Nothing leaves out a version read (expired ones are out of scope already): only those among the
                    # best ``need`` of both are read.
                    union = np.concatenate([np.asarray(finals, dtype=np.float64), bound[every] * (1.0 - 1e-9)])
                    if len(union) >= need:
                        every = every[bound[every] * (1.0 + 1e-9) >= -np.partition(-union, need - 1)[need - 1]]
                elif len(finals) >= need:
                    every = every[bound[every] * (1.0 + 1e-9) >= sorted(finals, reverse=True)[need - 1]]
                item_ids = of_scored(m.item_ids)[every]
                # Ordered only as far as the first reads go (a whole collection's past versions are thousands).
                order = _first(every, -bound[every], item_ids, max(4 * need, 64))
                todo = len(every)
            else:  # a score relative to the other candidates: every one is read and scored together
                bound, order, todo = None, np.arange(len(scored)), len(scored)
            pos, chunk = 0, max(need, 16)
            with store.catalog.read() as conn:
                while pos < todo:
                    if pos >= len(order):
                        assert bound is not None
                        order = _first(every, -bound[every], item_ids, todo)  # begins as the part did
                    part = order[pos : pos + chunk] if bound is not None else order
                    pos, chunk = pos + len(part), chunk * 2
                    if bound is not None and len(finals) >= need:
                        kth = sorted(finals, reverse=True)[need - 1]
                        part = part[bound[part] * (1.0 + 1e-9) >= kth]
                        if not len(part):
                            break
                    read = _history.read(conn, m.ids[scored[part]].tolist())
                    got = []
                    for j in part.tolist():
                        v = read.get(int(m.ids[scored[j]]))
                        if v is None or not _filters.matches(v.value, op.filter):
                            continue
                        it = _stored(v)
                        if not cut(it):  # a data cut-off
                            got.append(Candidate(it, float(sims[j]), float(kw[j]), float(evidence[j]), vector=True))
                    for parts, c in explain_candidates(got, ranking, now=at, collections=store.collections):
                        finals.append(parts.final)
                        ranked.append((parts, c.item))
                if len(bare) and len(ranked) < need:  # versions without vectors follow the scored, newest first
                    newest = _first(bare, -m.updated[bare], -m.item_ids[bare], len(bare))
                    unscored.extend(it for _k, it in _read_first(conn, m.ids[newest], op.filter, need, False, at, cut))
            if complete or len(ranked) >= need:
                break
        # Ties broken as the hybrid search breaks them: the stronger side, the cosine, the item id.
        ranked.sort(key=lambda h: (-h[0].final, -max(h[0].cosine, h[0].keyword), -h[0].cosine, h[1].id or 0))
        return _results(op, [(parts.final, it) for parts, it in ranked], unscored, ordered=True)

    def _corpus(
        self, now: _pv.KeywordLengths, m: _pv.Moment, n_tokens: np.ndarray, holding: dict[str, np.ndarray]
    ) -> _keywords.Corpus:
        """The keyword index's statistics at `at`: now's, less the items indexed since, plus the past versions'
        (``n_tokens`` and ``holding`` by position in ``m``); what of it depends on ``m`` alone is kept on it."""
        later_of = m.cache.get("later")
        if later_of is None or later_of[0] != now.stamp:  # what of the index now was indexed after `at`
            later = now.since > self.at
            ids = now.item_ids[later]
            gone = np.zeros(int(ids.max()) + 1 if len(ids) else 0, dtype=bool)
            gone[ids] = True
            later_of = m.cache["later"] = (now.stamp, gone, len(ids), int(now.n_tokens[later].sum()))
        _stamp, gone, n_later, later_tokens = later_of
        texts = m.cache.get("with text")
        if texts is None:
            with_text = n_tokens >= 0  # -1: no text (a version without vectors, or no text at its paths)
            texts = m.cache["with text"] = (int(np.count_nonzero(with_text)), int(n_tokens[with_text].sum()))
        return _keywords.Corpus(
            docs=now.docs - n_later + texts[0],
            tokens=now.tokens - later_tokens + texts[1],
            gone=gone,
            held={t: int(np.count_nonzero(h)) for t, h in holding.items()},
        )


class PastTexts:
    """The texts the keyword index held for the store's past versions, read once each (from their kept values,
    as the writer reads a put's) when a search as of a moment they were valid at first needs them; and the
    index's lengths now, read again only when it changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._epoch = -1
        self._known = 0
        # Per version position: its text's words (-1: no text; -2: not read yet), and whether it is a conversation turn.
        self._n_tokens = np.zeros(0, dtype=np.int64)
        self._turns = np.zeros(0, dtype=bool)
        self._texts: _keywords.OutsideTexts | None = None
        self._masks: dict[str, np.ndarray] = {}
        self._lengths: _pv.KeywordLengths | None = None

    def lengths(self, conn: Any) -> _pv.KeywordLengths:
        """The keyword index's lengths now (read again when the index changed)."""
        held = self._lengths
        if held is None or held.stamp != _pv.keyword_stamp(conn):
            held = self._lengths = _pv.keyword_lengths(conn)
        return held

    def of(
        self, conn: Any, store: Any, m: _pv.Moment, terms: list[str]
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """For the versions valid at ``m``, by position in it: a mask per query term of those whose text holds it,
        the words of each text, whether each is a turn (each read once; what is taken for ``m`` is kept on it)."""
        cache = m.cache
        held = cache.get("texts")
        if held is not None and all(("holding", t) in cache for t in terms):
            return {t: cache["holding", t] for t in terms}, *held
        v = m.versions
        with self._lock:
            if self._epoch != v.epoch or self._texts is None:
                self._epoch, self._n_tokens, self._turns, self._masks = (
                    v.epoch,
                    np.zeros(0, dtype=np.int64),
                    self._turns[:0],
                    {},
                )
                self._texts = _keywords.OutsideTexts(dialect_of(conn) == POSTGRESQL)
            grow = len(v.ids) - len(self._n_tokens)
            if grow > 0:
                self._n_tokens = np.concatenate([self._n_tokens, np.full(grow, -2, dtype=np.int64)])
                self._turns = np.concatenate([self._turns, np.zeros(grow, dtype=bool)])
                self._masks = {}
            todo = m.pos[self._n_tokens[m.pos] == -2]
            if len(todo):
                self._read(conn, store, v, todo)
                self._masks = {}
            n = len(self._n_tokens)
            masks = {}
            for t in terms:
                if t not in self._masks:
                    mask = self._masks[t] = np.zeros(n, dtype=bool)
                    mask[self._texts.holding(t)] = True
                masks[t] = m.keep(("holding", t), self._masks[t][m.pos])
            held = cache["texts"] = (self._n_tokens[m.pos], self._turns[m.pos])
            return masks, *held

    def _read(self, conn: Any, store: Any, v: _pv.Versions, todo: np.ndarray) -> None:
        assert self._texts is not None
        texts: dict[int, str] = {}
        for start in range(0, len(todo), 5000):
            part = todo[start : start + 5000]
            read = _history.read(conn, v.ids[part].tolist())
            for k in part.tolist():
                past = read[int(v.ids[k])]
                text = None
                if past.n_vectors:
                    pairs = store._writer.texts_for(
                        PutOp(past.namespace, past.key, past.value), store.collections.for_namespace(past.namespace)
                    )
                    text = _keywords.indexed_text(past.value, [p for p, _t in pairs], [t for _p, t in pairs])
                self._n_tokens[k] = -1 if text is None else _keywords.count_tokens(text)
                self._turns[k] = _neighbours.is_turn(_stored(past))
                if text:
                    texts[k] = text
        self._texts.add(texts)


class PastVersionIndex:
    """What searches as of any moment share, one per store: its past versions as arrays, and their texts."""

    def __init__(self) -> None:
        self.versions = _pv.PastVersions()
        self.texts = PastTexts()


def _relevance(sims: np.ndarray, evidence: np.ndarray, ranking: HybridRanking) -> np.ndarray:
    """`fuse()` of each cosine and keyword evidence on the query's scale, as `score_parts_many` makes relevance."""
    half = ranking.keyword_half
    x = evidence * evidence
    with np.errstate(invalid="ignore", divide="ignore"):
        keyword = np.where(evidence <= 0.0, 0.0, x / (x + half * half))
    sim = np.clip(sims, 0.0, 1.0)
    boost = ranking.keyword_weight * np.clip(keyword, 0.0, 1.0)
    return np.where(boost > 0.0, sim + (1.0 - sim) * boost, sim)


def _age_weight(m: _pv.Moment, idx: np.ndarray, ranking: HybridRanking, at: float, collections: Any) -> np.ndarray:
    """What the ranking's temporal weighting leaves of the relevance of each version ``idx`` (positions in
    ``m``) at ``at``, as `score_parts_many` weighs an item never accessed (1: no temporal weighting)."""
    cfg = ranking.temporal
    if cfg is None or not len(idx):
        return np.ones(len(idx))
    codes = m.versions.ns[m.pos[idx]]
    # By namespace code: its collection's memory type's decay rate (kept on the moment for its next searches).
    rate: np.ndarray | None = m.cache.get(("decay rates", cfg))
    if rate is None:
        types = [collections.for_namespace(tuple(n.split("\x1f")) if n else ()).memory_type for n in m.versions.names]
        rate = m.keep(("decay rates", cfg), np.array([cfg.decay_rate(t) for t in types], dtype=np.float64))
    kept = np.minimum(
        1.0, np.exp(-rate[codes] * np.maximum((at - m.updated[idx]) / 3600.0, 0.0)) * importance_multiplier(0, cfg)
    )
    share = ranking.temporal_share
    return 1.0 - share + share * kept


def _results(
    op: SearchOp, scored: list[tuple[float, StoredItem]], unscored: list[StoredItem], *, ordered: bool = False
) -> list[SearchItem]:
    """The page ``op`` asks for: scored results best first (``ordered``: already), then unscored ones newest first."""
    need = op.offset + op.limit
    if not ordered:
        scored.sort(key=lambda h: (-h[0], h[1].id or 0))
    # Unscored results (listings, and items without vectors after the scored ones) come newest first.
    unscored.sort(key=lambda it: (-it.updated_at, -(it.id or 0)))
    hits: list[Hit] = [*scored, *((None, it) for it in unscored)]
    return [
        SearchItem(
            namespace=it.namespace,
            key=it.key,
            value=it.value,
            created_at=_dt(it.created_at),
            updated_at=_dt(it.updated_at),
            score=score,
        )
        for score, it in hits[op.offset : need]
    ]


class _ChangedSince:
    """Leaves out items whose current version began after ``current_at``, and what ``base`` leaves out.

    ``current_at``: the moment; the planner's scan also leaves out in its SQL what became current after it.
    ``skip_ids``: the items a change after it replaced, known from the history without reading them; the
    planner does not read those (as of a moment long ago, most of the best-ranked current items may be such).
    """

    #: set when some items changed since: the share of items expected to pass, which the planner plans for
    #: (`Planner._narrow`); it reads the attribute only where it is set.
    keeps: float

    def __init__(self, at: float, base: Callable[[StoredItem], bool], skip_ids: _pv.IdSet) -> None:
        self.current_at = at
        self.base = base
        self.skip_ids = skip_ids

    def __call__(self, it: StoredItem) -> bool:
        return it.valid_since > self.current_at or self.base(it)


def _first(idx: np.ndarray, primary: np.ndarray, secondary: np.ndarray, k: int) -> np.ndarray:
    """``idx`` ordered by ``primary`` then ``secondary`` (both ascending), only as far as the first ``k``
    (ties at the ``k``-th kept): a search reads a few of thousands of past versions."""
    if k < len(idx):
        sel = primary <= np.partition(primary, k - 1)[k - 1]
        idx, primary, secondary = idx[sel], primary[sel], secondary[sel]
    return idx[np.lexsort((secondary, primary))]


def _read_first(
    conn: Any,
    ids: np.ndarray,
    filter: dict[str, Any] | None,
    need: int,
    omit_expired: bool,
    at: float,
    omit: Callable[[StoredItem], bool] = keep_all,
    first_chunk: int | None = None,
) -> list[tuple[int, StoredItem]]:
    """The first ``need`` past versions of ``ids`` (history ids, in that order) that match ``filter``, read a
    chunk at a time (``first_chunk`` at first, by default ``need``, with a filter a few more); each with its
    position in ``ids``."""
    out: list[tuple[int, StoredItem]] = []
    pos, chunk = 0, first_chunk or max(need, 16 if filter else 1)
    while pos < len(ids) and len(out) < need:
        part = ids[pos : pos + chunk].tolist()
        read = _history.read(conn, part)
        for k, hid in enumerate(part, pos):
            v = read.get(hid)
            if v is None or not _filters.matches(v.value, filter):
                continue
            if omit_expired and v.expires_at is not None and v.expires_at < at:
                continue
            it = _stored(v)
            if omit(it):  # a data cut-off
                continue
            out.append((k, it))
            if len(out) >= need:
                break
        pos += chunk
        chunk *= 2
    return out


def _stored(v: _history.PastVersion) -> StoredItem:
    """A past version as the search and get paths handle items (no access data: the history keeps none)."""
    return StoredItem(
        namespace=v.namespace,
        key=v.key,
        value=v.value,
        created_at=v.created_at,
        updated_at=v.updated_at,
        last_accessed_at=v.updated_at,
        expires_at=v.expires_at,
        indexed=v.n_vectors > 0,
        n_vectors=v.n_vectors,
        id=v.item_id,
        valid_from=v.valid_from,
    )


def _best_cosines(m: _pv.Moment, qvec: np.ndarray, scope: np.ndarray, probe: bool = False) -> tuple[np.ndarray, bool]:
    """The best cosine similarity of ``qvec`` with the vectors of each past version of ``scope`` (positions in
    ``m``), in the order of ``scope`` (NaN: it has none), and whether every one was scored.

    Computed as the planner scores current items in memory (`CollectionVectors.rank`: normalised rows, one dot
    product each, divided by the query's norm). With ``probe`` and a scope of `PROBED_SCOPE` versions or more,
    only the clusters nearest the query are scored (`Moment.probe()`: the share of the vectors measured to hold
    the nearest ones); the others' versions get -inf.
    """
    out = np.full(len(scope), np.nan)
    if not len(m.owner) or not len(scope):
        return out, True
    q = qvec.astype(np.float32)
    qn = float(np.linalg.norm(q)) or 1.0
    whole = len(scope) == len(m.ids)  # (``scope`` is increasing positions in ``m``)
    # One thread: BLAS's split costs more than the product on a busy machine (`dot_rows`).
    if m.one_each and len(scope) < len(m.ids) // 2:  # a namespace of a whole collection: its rows only
        rows = m.vector_of[scope]
        has = rows >= 0
        out[has] = dot_rows(m.vectors[rows[has]], q) / qn
        return out, True
    if whole and m.one_each and len(m.vectors) == len(m.ids) and m.bounds is None:
        return (dot_rows(m.vectors, q) / qn).astype(np.float64), True  # one vector each, in order: no gathers
    slices = m.probe(q / qn) if probe and len(scope) >= PROBED_SCOPE else [(0, len(m.vectors))]
    if slices == [(0, len(m.vectors))]:  # every vector
        scores = dot_rows(m.vectors, q) / qn
        if m.one_each:
            rows = m.vector_of[scope]
            has = rows >= 0
            out[has] = scores[rows[has]]
            return out, True
        every = np.full(len(m.ids), np.nan)
        np.fmax.at(every, m.owner, scores)
        return every[scope], True
    # The versions with vectors not scored stay at -inf.
    unscored = m.unscored()
    out = unscored.copy() if whole else unscored[scope]
    sims = np.concatenate([dot_rows(m.vectors[start:stop], q) for start, stop in slices]) / qn
    owners = np.concatenate([m.owner[start:stop] for start, stop in slices])
    if not whole:  # each position in ``m``'s place in ``scope`` (-1: out of it)
        into = np.full(len(m.ids), -1, dtype=np.int64)
        into[scope] = np.arange(len(scope))
        owners = into[owners]
        sims, owners = sims[owners >= 0], owners[owners >= 0]
    if m.one_each:
        out[owners] = sims
    else:
        np.fmax.at(out, owners, sims)
    return out, False


#: The past versions a scope needs before an as-of search scores only the clusters nearest the query
#: (`Partition`): a smaller one is scored whole.
PROBED_SCOPE = 20_000
