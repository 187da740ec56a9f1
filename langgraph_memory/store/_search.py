"""Search: query search with max pooling, filtered listing, and paging after Python filters."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from langgraph.store.base import SearchItem, SearchOp

from langgraph_memory.collections import COLLECTIONS, GENERAL, CollectionSpec, collection_for
from langgraph_memory.store import filters as _filters
from langgraph_memory.store.namespaces import prefix_clauses
from langgraph_memory.store.records import (
    K_EXTRA,
    K_HAS_VECTOR,
    PAGE_SIZE as _PAGE,
    StoredItem,
    decode_metadata,
    now as _now,
    to_datetime as _dt,
)

__all__ = ["SearchMixin"]


class SearchMixin:
    """The ``SearchOp`` half of :class:`~langgraph_memory.store.ChromaStore`."""

    ttl_config: Any
    _access: Any
    _omits_expired: bool

    # ---------------------------------------------------------------- searches

    def _specs_for_prefix(self, prefix: tuple[str, ...]) -> list[CollectionSpec]:
        if prefix:
            return [collection_for(prefix)]
        return [*COLLECTIONS.values(), GENERAL]

    def _run_search(self, op: SearchOp, qvec: list[float] | None) -> list[SearchItem]:
        now = _now()
        need = op.offset + op.limit
        if need <= 0 or op.limit <= 0:
            return []
        hits: list[tuple[float | None, StoredItem, str]] = []
        scoreless: list[tuple[StoredItem, str]] = []
        searched: list[tuple[CollectionSpec, Any, list[dict[str, Any]]]] = []  # reused by the fill-up
        for spec in self._specs_for_prefix(op.namespace_prefix):
            col = self._collection(spec, create=False)
            if col is None:
                continue
            clauses = prefix_clauses(spec, op.namespace_prefix)
            where_f, exact = _filters.compile_where(op.filter, unflattened=spec.embed_field)
            if where_f:
                clauses.append(where_f)
            searched.append((spec, col, clauses))
            if qvec is not None:
                hits.extend(self._query_collection(spec, col, op, qvec, clauses, need, now))
            else:
                hits.extend((None, it, spec.name) for it in self._scan_collection(col, op, clauses, exact, need, now))
        if qvec is not None:
            hits.sort(key=lambda h: h[0], reverse=True)  # type: ignore[arg-type, return-value]
            kept = hits[op.offset : need]
            if len(kept) < op.limit:
                # Like InMemoryStore: when fewer items have vectors than asked
                # for, fill up with matching items that have none.
                for spec, col, clauses in searched:
                    if len(kept) + len(scoreless) >= op.limit:
                        break
                    unindexed = [*clauses, {K_HAS_VECTOR: False}]
                    for it in self._scan_collection(col, op, unindexed, False, op.limit - len(kept) - len(scoreless), now):
                        scoreless.append((it, spec.name))
                kept = kept + [(None, it, name) for it, name in scoreless[: op.limit - len(kept)]]
        else:
            kept = hits[op.offset : need]
        if op.refresh_ttl:
            touched: dict[str, list[StoredItem]] = defaultdict(list)
            for _, it, name in kept:
                touched[name].append(it)
            for name, items in touched.items():
                self._access.note(name, items, now)
        return [
            SearchItem(
                namespace=it.namespace,
                key=it.key,
                value=it.value,
                created_at=_dt(it.created_at),
                updated_at=_dt(it.updated_at),
                score=score,
            )
            for score, it, _ in kept
        ]

    def _query_collection(
        self,
        spec: CollectionSpec,
        col: Any,
        op: SearchOp,
        qvec: list[float],
        clauses: list[dict[str, Any]],
        need: int,
        now: float,
    ) -> list[tuple[float, StoredItem, str]]:
        where = _filters.combine_where(clauses)
        n = need
        while True:
            res = col.query(query_embeddings=[qvec], n_results=n, where=where, include=["metadatas", "distances"])
            ids = res["ids"][0]
            metas = res["metadatas"][0] if res["metadatas"] else []
            dists = res["distances"][0] if res["distances"] else []
            best: dict[str, tuple[float, StoredItem]] = {}
            extras: dict[str, float] = {}
            for rid, meta, dist in zip(ids, metas, dists):
                if not meta or not meta.get(K_HAS_VECTOR, True):
                    continue
                score = 1.0 - float(dist)
                if meta.get(K_EXTRA):
                    uid = rid.rsplit(":", 1)[0]
                    if uid not in best and uid not in extras:
                        extras[uid] = score
                    continue
                item = decode_metadata(meta)
                if item is None or rid in best:
                    continue
                best[rid] = (score, item)
            if extras:
                # An extra vector won: read the primary record, the item's truth.
                got = col.get(ids=list(extras), include=["metadatas"])
                for rid, meta in zip(got["ids"], got["metadatas"] or []):
                    item = decode_metadata(meta)
                    if item is not None and rid not in best:
                        best[rid] = (extras[rid], item)
            out = [
                (score, item, spec.name)
                for score, item in best.values()
                if _filters.matches(item.value, op.filter) and not self._omit(item, now, spec.name)
            ]
            if len(out) >= need or len(ids) < n:
                return out
            n *= 4

    def _scan_collection(
        self,
        col: Any,
        op: SearchOp,
        clauses: list[dict[str, Any]],
        exact: bool,
        need: int,
        now: float,
    ) -> list[StoredItem]:
        """Items in storage order (primaries only), at most ``need`` of them."""
        where = _filters.combine_where([*clauses, {K_EXTRA: 0}])
        omit = self._omits_expired
        if exact and not omit:
            got = col.get(where=where, limit=need, include=["metadatas"])
            items = [decode_metadata(m) for m in got["metadatas"] or []]
            return [it for it in items if it is not None]
        out: list[StoredItem] = []
        offset = 0
        while len(out) < need:
            got = col.get(where=where, limit=_PAGE, offset=offset, include=["metadatas"])
            metas = got["metadatas"] or []
            for meta in metas:
                it = decode_metadata(meta)
                if it is not None and _filters.matches(it.value, op.filter) and not self._omit(it, now, col.name):
                    out.append(it)
                    if len(out) >= need:
                        break
            if len(metas) < _PAGE:
                break
            offset += _PAGE
        return out
