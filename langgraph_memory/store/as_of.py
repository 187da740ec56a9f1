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
from its kept value (the text a put of it indexes), scored by the keyword
index's BM25 against the index's statistics as of ``t`` (`keywords.Corpus`),
and so do current items': every item scores what it scored at ``t``. Reads
are not kept per moment, so every version ranks as unread (the ranking's
``access_boost_factor`` taken as 0): the answer depends on ``t`` and the
history only, never on reads made since.
"""

from __future__ import annotations

import asyncio
import dataclasses
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
from langgraph_memory.errors import InvalidArgumentError, ReadOnlyError
from langgraph_memory.search import filters as _filters
from langgraph_memory.search.hybrid import Candidate, explain_candidates
from langgraph_memory.search.plan import keep_all
from langgraph_memory.search.ranking import HybridRanking
from langgraph_memory.store.namespaces import select_namespaces, validate_namespace

__all__ = ["AsOfStore"]

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
        # The past versions valid at `at`, read once for every search of this view while the history's rows
        # stay as they were (`history.moment_stamp`): reading and scoring them from the
        # catalog was most of a search as of long ago.
        self._moment: tuple[tuple[Any, ...], _history.Moment] | None = None
        # Their values and indexed texts, read under the same stamp (searches with keywords only).
        self._texts: tuple[tuple[Any, ...], dict[int, tuple[_history.PastVersion, str]]] | None = None
        # Which of those texts hold each query term seen (under the same stamp): a term's texts are matched once.
        self._holding: dict[str, set[int]] = {}

    def _past(self) -> _history.Moment:
        """The past versions valid at `at` (read again when the history changed after it)."""
        with self.store.catalog.read() as conn:
            stamp = _history.moment_stamp(conn)
            held = self._moment
            if held is None or held[0] != stamp:
                held = self._moment = (stamp, _history.at_moment(conn, self.at))
        return held[1]

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
                with self.store.catalog.read() as conn:
                    out.append(select_namespaces(_history.namespaces_at(conn, self.at), op))
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
        moment = self._past()

        def omit_for(conn: Any, status_version: int | None) -> Callable[[StoredItem], bool]:
            hidden = None if include_retired else store._hidden.snapshot(conn, status_version)
            return store._cut(
                conn, _ChangedSince(at, store._omitter(at, hidden), moment.changed), cutoff, include_undated
            )

        ranking = store.ranking
        hybrid = ranking is not None and qvec is not None and bool(op.query)
        if hybrid:
            assert ranking is not None and qvec is not None and op.query
            # Reads are not kept per moment: every version ranks as unread (see the module).
            temporal = ranking.temporal and dataclasses.replace(ranking.temporal, access_boost_factor=0.0)
            ranking = dataclasses.replace(ranking, clock=lambda: at, temporal=temporal)
            if ranking.keyword_weight != 0.0:
                return self._keyword_search(
                    op, qvec, ranking, omit_for, include_retired, moment, cutoff, include_undated
                )
            current, _plan = store.hybrid.run(inner, qvec, ranking, omit_for=omit_for)
        else:
            current, _plan = store.planner.run(inner, qvec, omit_for=omit_for)
        scored: list[tuple[float, StoredItem]] = [(s, it) for s, it in current if s is not None]
        unscored = [it for s, it in current if s is None]
        # Past versions current at ``at``, unread; only those ranked first have their values read (and filtered).
        m = moment
        past = np.flatnonzero(m.in_prefix(op.namespace_prefix) & (m.live | include_retired))
        newest_first = past
        with store.catalog.read() as conn:
            cut = store._cut(conn, keep_all, cutoff, include_undated)  # past versions by their item's evidence end
            if len(past) and qvec is not None:
                best = _best_cosines(m, qvec)
                has = ~np.isnan(best)
                with_vec = past[has[past]]
                first = max(4 * need, 64)
                order = _first(with_vec, -best[with_vec], m.item_ids[with_vec], first)
                got = _read_first(conn, m.ids[order], op.filter, need, store._omits_expired, at, cut)
                if len(got) < need and len(order) < len(with_vec):  # the filter left too few of the best
                    order = _first(with_vec, -best[with_vec], m.item_ids[with_vec], len(with_vec))
                    got = _read_first(conn, m.ids[order], op.filter, need, store._omits_expired, at, cut)
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
                newest_first = newest_first[~has[newest_first]]
            if len(newest_first) and len(scored) < need:  # listings, and items without vectors after the scored
                newest_first = _first(newest_first, -m.updated[newest_first], -m.item_ids[newest_first], len(past))
                unscored.extend(
                    it
                    for _k, it in _read_first(conn, m.ids[newest_first], op.filter, need, store._omits_expired, at, cut)
                )
        return _results(op, scored, unscored)

    def _keyword_search(
        self,
        op: SearchOp,
        qvec: np.ndarray,
        ranking: HybridRanking,
        omit_for: Callable[[Any, int | None], Callable[[StoredItem], bool]],
        include_retired: bool,
        moment: _history.Moment,
        cutoff: date | None = None,
        include_undated: bool = False,
    ) -> list[SearchItem]:
        """A hybrid search with keywords as of `at`: every version scored against the keyword index of then.

        The index's statistics are those of ``at`` (`Corpus`): the items
        indexed now that were not then are taken out, and the past versions
        valid then put in, their texts read from their kept values as the
        writer reads a put's. Each past version in scope is scored from its
        kept vectors and that text by the ranking that scores current items.
        """
        store, at = self.store, self.at
        assert op.query is not None
        need = op.offset + op.limit
        terms = _keywords.query_terms(op.query)
        prefix = op.namespace_prefix
        stamp = self._moment[0] if self._moment is not None else None
        with store.catalog.read() as conn:
            if self._texts is None or self._texts[0] != stamp or stamp is None:
                self._texts = (stamp or (), _past_texts(conn, store, at))
                self._holding = {}
            past = self._texts[1]
            new = [t for t in terms if t not in self._holding]
            if new:
                got = _keywords.terms_held(conn, {h: t for h, (_v, t) in past.items() if t}, new)
                for term in new:
                    self._holding[term] = {h for h, have in got.items() if term in have}
            held: dict[int, set[str]] = {}
            for term in terms:
                for h in self._holding[term]:
                    held.setdefault(h, set()).add(term)
            corpus = _corpus_at(conn, at, past, held)
            found = store.hybrid._match(conn, op.query, ranking, corpus=corpus)
            cut = store._cut(conn, keep_all, cutoff, include_undated)
        best = _best_cosines(moment, qvec)
        sims = {h: s for h, s in zip(moment.ids.tolist(), best.tolist(), strict=True) if s == s}  # NaN: no vectors
        current, _plan = store.hybrid.run_explained(
            op._replace(offset=0, limit=need), qvec, ranking, omit_for=omit_for, corpus=corpus
        )
        ranked = [(parts, it) for parts, it in current if parts is not None]
        unscored = [it for parts, it in current if parts is None]
        in_scope = {
            h: v
            for h, (v, _t) in past.items()
            if v.namespace[: len(prefix)] == prefix
            and (include_retired or v.status is None)
            and _filters.matches(v.value, op.filter)
            and not (store._omits_expired and v.expires_at is not None and v.expires_at < at)
            and not cut(_stored(v))
        }
        cands = []
        for h, v in in_scope.items():
            if h not in sims:
                unscored.append(_stored(v))
                continue
            text = past[h][1]
            kw = _keywords.score_held(found, held.get(h, set()), _keywords.count_tokens(text), ranking.length_norm)
            cands.append(Candidate(_stored(v), sims[h], kw, found.evidence(kw), vector=True))
        for parts, c in explain_candidates(cands, ranking, now=at, collections=store.collections)[:need]:
            ranked.append((parts, c.item))
        # Ties broken as the hybrid search breaks them: the stronger side, the cosine, the item id.
        ranked.sort(key=lambda h: (-h[0].final, -max(h[0].cosine, h[0].keyword), -h[0].cosine, h[1].id or 0))
        return _results(op, [(parts.final, it) for parts, it in ranked], unscored, ordered=True)


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
    """Leaves out items whose current version began after ``at``, and what ``base`` leaves out.

    ``skip_ids``: the items a change after ``at`` replaced, known from the history without reading them; the
    planner does not read those (as of a moment long ago, most of the best-ranked current items may be such).
    """

    def __init__(self, at: float, base: Callable[[StoredItem], bool], skip_ids: set[int]) -> None:
        self.at = at
        self.base = base
        self.skip_ids = skip_ids

    def __call__(self, it: StoredItem) -> bool:
        return it.valid_since > self.at or self.base(it)


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
) -> list[tuple[int, StoredItem]]:
    """The first ``need`` past versions of ``ids`` (history ids, in that order) that match ``filter``, read a
    chunk at a time; each with its position in ``ids``."""
    out: list[tuple[int, StoredItem]] = []
    pos, chunk = 0, max(need, 16)
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


def _past_texts(conn: Any, store: Any, at: float) -> dict[int, tuple[_history.PastVersion, str]]:
    """Every past version valid at ``at`` (all namespaces: the keyword statistics are the whole index's), by
    history id, with the text the keyword index held for it ("" for none): the texts at its vectors' record
    paths, as `keywords.indexed_text` reads an item's, the paths those a put of its value embeds."""
    ids = [h for h, _u, _i, _s in _history.valid_at(conn, at)]
    out: dict[int, tuple[_history.PastVersion, str]] = {}
    for h, v in _history.read(conn, ids).items():
        text = None
        if v.n_vectors:
            pairs = store._writer.texts_for(
                PutOp(v.namespace, v.key, v.value), store.collections.for_namespace(v.namespace)
            )
            text = _keywords.indexed_text(v.value, [p for p, _t in pairs], [t for _p, t in pairs])
        out[h] = (v, text or "")
    return out


def _corpus_at(
    conn: Any, at: float, past: dict[int, tuple[_history.PastVersion, str]], held: dict[int, set[str]]
) -> _keywords.Corpus:
    """The keyword index's statistics at ``at``: now's, less the items indexed since, plus the past versions'."""
    docs, tokens, later = _history.keyword_totals_since(conn, at)
    texts = [t for _v, t in past.values() if t]
    counts: dict[str, int] = {}
    for terms in held.values():
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
    return _keywords.Corpus(
        docs=docs - len(later) + len(texts),
        tokens=tokens - sum(n for _i, n in later) + sum(_keywords.count_tokens(t) for t in texts),
        gone=np.sort(np.fromiter((i for i, _n in later), dtype=np.int64, count=len(later))),
        held=counts,
    )


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


def _best_cosines(m: _history.Moment, qvec: np.ndarray) -> np.ndarray:
    """Each past version's best cosine similarity of ``qvec`` with its vectors, by position (NaN: none)."""
    out = np.full(len(m.ids), np.nan)
    if not len(m.owner):
        return out
    q = qvec.astype(np.float32)
    norms = m.norms * (float(np.linalg.norm(q)) or 1.0)
    norms[norms == 0] = 1.0
    sims = (m.vectors @ q) / norms
    if m.one_each:
        out[m.owner] = sims
    else:
        np.fmax.at(out, m.owner, sims)
    return out
