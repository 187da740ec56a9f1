"""A read-only, Chroma-shaped view of one collection, for LangChain and for looking around.

Chroma holds only vectors (the catalog holds the rest), so
``store.collection("research")`` hands out a `RecordView`: the read
half of Chroma's collection API (``get``, ``query``, ``peek``, ``count``)
answered from the catalog and the index. Each record is one vector of an
item: its ``document`` is the text that vector embeds, its ``metadata`` the
item's value flattened to dotted keys (scalars only) plus ``namespace`` and
``key``. ``where`` and ``where_document`` filters work as in Chroma
(``$eq $ne $gt $gte $lt $lte $in $nin $and $or``, ``$contains``,
``$not_contains``). Writes raise [`ReadOnlyError`][langgraph_memory.errors.ReadOnlyError]:
write through the store, which keeps the catalog, lineage and index in step.

Retired and superseded items are left out, as the store's searches leave
them out: ``get``, ``query``, ``peek`` and ``count`` answer without them, and
so does a LangChain retriever over ``store.as_vectorstore(...)``. A view made
with ``include_retired=True`` shows them too.

    >>> view = store.collection("research")
    >>> view.get(where={"source": "macro"}, limit=2)["documents"]
    ['Carry unwinds in vol spikes', 'Carry unwinds in vol spikes, 2010-2024']
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from langgraph_memory.catalog import Catalog, StoredItem
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import vectors as _catalog_vectors
from langgraph_memory.catalog.connection import Connection
from langgraph_memory.errors import FilterError, ReadOnlyError
from langgraph_memory.index.chroma import ChromaIndex, IndexUnavailable, parse_record_id, record_id
from langgraph_memory.store.records import record_text

__all__ = ["RecordView", "ViewClient", "flat_metadata", "where_matches"]

_GET_DEFAULT = ["metadatas", "documents"]
_QUERY_DEFAULT = ["metadatas", "documents", "distances"]


def flat_metadata(item: StoredItem) -> dict[str, Any]:
    """The item's scalar leaves as dotted keys, plus its ``namespace`` (a list) and ``key``."""
    out: dict[str, Any] = {}
    stack: list[tuple[str, dict[str, Any]]] = [("", item.value)]
    while stack:
        base, node = stack.pop()
        for k, v in node.items():
            if isinstance(v, dict):
                stack.append((f"{base}{k}.", v))
            elif isinstance(v, (str, int, float, bool)):
                out[f"{base}{k}"] = v
    out["namespace"] = list(item.namespace)
    out["key"] = item.key
    return out


def _compare(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return value == operand and isinstance(value, bool) == isinstance(operand, bool)
    if op == "$ne":
        return not _compare(value, "$eq", operand)
    if op == "$in":
        return any(_compare(value, "$eq", x) for x in operand)
    if op == "$nin":
        return not _compare(value, "$in", operand)
    if value is None or isinstance(value, bool) or isinstance(operand, bool):
        return False
    try:
        if op == "$gt":
            return bool(value > operand)
        if op == "$gte":
            return bool(value >= operand)
        if op == "$lt":
            return bool(value < operand)
        if op == "$lte":
            return bool(value <= operand)
    except TypeError:
        return False
    raise FilterError(f"unsupported where operator {op!r}; use $eq $ne $gt $gte $lt $lte $in $nin $and $or")


def where_matches(meta: dict[str, Any], where: dict[str, Any] | None) -> bool:
    """Whether a record's metadata satisfies a Chroma ``where`` clause."""
    if not where:
        return True
    for key, cond in where.items():
        if key == "$and":
            if not all(where_matches(meta, c) for c in cond):
                return False
        elif key == "$or":
            if not any(where_matches(meta, c) for c in cond):
                return False
        elif isinstance(cond, dict):
            if not all(_compare(meta.get(key), op, operand) for op, operand in cond.items()):
                return False
        elif not _compare(meta.get(key), "$eq", cond):
            return False
    return True


def _document_matches(text: str | None, where_document: dict[str, Any] | None) -> bool:
    if not where_document:
        return True
    for op, operand in where_document.items():
        if op == "$and":
            ok = all(_document_matches(text, c) for c in operand)
        elif op == "$or":
            ok = any(_document_matches(text, c) for c in operand)
        elif op == "$contains":
            ok = text is not None and operand in text
        elif op == "$not_contains":
            ok = text is None or operand not in text
        else:
            raise FilterError(f"unsupported where_document operator {op!r}; use $contains, $not_contains, $and, $or")
        if not ok:
            return False
    return True


class RecordView:
    """One collection, read-only, with Chroma's read API (see the module docstring).

    Args:
        catalog: the store's catalog.
        index: the store's Chroma index.
        collection: the collection name (``"research_findings"``...).
        embed_query: turns ``query_texts`` into a vector (None: only ``query_embeddings``).
        hidden: ``hidden(conn)`` gives the retired and superseded items to
            leave out, as ``{uid: created_at}`` (the store's cached set); None
            shows every item.
    """

    def __init__(
        self,
        catalog: Catalog,
        index: ChromaIndex,
        collection: str,
        embed_query: Any = None,
        *,
        hidden: Callable[[Connection], dict[str, float]] | None = None,
    ) -> None:
        self._catalog = catalog
        self._index = index
        self.name = collection
        self.metadata = {"hnsw:space": "cosine"}
        self.configuration = {"hnsw": {"space": "cosine"}}
        self._embed_query = embed_query
        self._hidden = hidden

    def __repr__(self) -> str:
        shows = ", retired included" if self._hidden is None else ""
        return f"RecordView({self.name!r}, read-only{shows})"

    # ------------------------------------------------------------- records

    def _records(self, items: dict[int, StoredItem]) -> dict[str, tuple[StoredItem, str, np.ndarray]]:
        with self._catalog.read() as conn:
            if self._hidden is not None:  # a retired or superseded item has no records in the view
                hidden = self._hidden(conn)
                items = {i: it for i, it in items.items() if hidden.get(it.uid) != it.created_at}
            vectors = _item_rows.load_vectors(conn, list(items))
        out = {}
        for item_id, rows in vectors.items():
            for idx, path, vec in rows:
                out[record_id(item_id, idx)] = (items[item_id], path, np.frombuffer(vec, dtype=np.float32))
        return out

    def _iter_records(self) -> Iterator[tuple[str, StoredItem, str, np.ndarray]]:
        after = 0
        while True:
            with self._catalog.read() as conn:
                page = _item_rows.iter_collection(conn, self.name, after_id=after, limit=1000)
            if not page:
                return
            after = page[-1].id or after
            recs = self._records({it.id: it for it in page if it.id is not None})
            for rid in sorted(recs, key=parse_record_id):
                it, path, vec = recs[rid]
                yield rid, it, path, vec

    @staticmethod
    def _result(rows: list[tuple[str, StoredItem, str, np.ndarray]], include: list[str]) -> dict[str, Any]:
        res: dict[str, Any] = {"ids": [r[0] for r in rows], "included": include}
        res["documents"] = [record_text(r[1].value, r[2]) for r in rows] if "documents" in include else None
        res["metadatas"] = [flat_metadata(r[1]) for r in rows] if "metadatas" in include else None
        res["embeddings"] = np.asarray([r[3] for r in rows]) if "embeddings" in include else None
        return res

    # ---------------------------------------------------------------- reads

    def count(self) -> int:
        """How many vector records the collection holds (those of retired and superseded items left out)."""
        return self._count(shown_only=True)

    def _count(self, *, shown_only: bool) -> int:
        with self._catalog.read() as conn:
            return _catalog_vectors.count_vectors(conn, self.name, shown_only=shown_only and self._hidden is not None)

    def get(
        self,
        ids: str | list[str] | None = None,
        where: dict[str, Any] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        where_document: dict[str, Any] | None = None,
        include: list[str] | None = None,
    ) -> dict[str, Any]:
        """Records by id and/or filter, in id order (Chroma's ``Collection.get``)."""
        include = list(include) if include is not None else list(_GET_DEFAULT)
        if isinstance(ids, str):
            ids = [ids]
        rows: list[tuple[str, StoredItem, str, np.ndarray]] = []
        if ids is not None:
            wanted = [parse_record_id(rid) for rid in ids]
            with self._catalog.read() as conn:
                items = _item_rows.get_by_ids(conn, [i for i, _ in wanted])
            recs = self._records(items)
            source: Any = ((rid, *recs[rid]) for rid in ids if rid in recs)
        else:
            source = self._iter_records()
        skip = offset or 0
        for rid, it, path, vec in source:
            if not where_matches(flat_metadata(it), where) or not _document_matches(
                record_text(it.value, path), where_document
            ):
                continue
            if skip:
                skip -= 1
                continue
            rows.append((rid, it, path, vec))
            if limit is not None and len(rows) >= limit:
                break
        return self._result(rows, include)

    def peek(self, limit: int = 10) -> dict[str, Any]:
        """The first ``limit`` records, with embeddings."""
        return self.get(limit=limit, include=["embeddings", "metadatas", "documents"])

    def query(
        self,
        query_embeddings: Any = None,
        query_texts: list[str] | None = None,
        n_results: int = 10,
        where: dict[str, Any] | None = None,
        where_document: dict[str, Any] | None = None,
        include: list[str] | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        """The nearest records to each query (Chroma's ``Collection.query``), filtered as asked."""
        include = list(include) if include is not None else list(_QUERY_DEFAULT)
        if query_embeddings is None:
            if query_texts is None or self._embed_query is None:
                raise FilterError("query needs query_embeddings (or query_texts on a store with an embedding model)")
            query_embeddings = [self._embed_query(t) for t in query_texts]
        out: dict[str, Any] = {
            "ids": [],
            "documents": [],
            "metadatas": [],
            "distances": [],
            "embeddings": [],
            "included": include,
        }
        for q in np.asarray(query_embeddings, dtype=np.float32).reshape(-1, np.asarray(query_embeddings[0]).shape[-1]):
            rows, dists = self._nearest(q, n_results, where, where_document)
            res = self._result(rows, include)
            for key in ("ids", "documents", "metadatas", "embeddings"):
                out[key].append(res[key])
            out["distances"].append(dists)
        for key in ("documents", "metadatas", "embeddings", "distances"):
            if key not in include and not (key == "distances" and "distances" in include):
                out[key] = None
        return out

    def _nearest(
        self, q: np.ndarray, k: int, where: dict[str, Any] | None, where_document: dict[str, Any] | None
    ) -> tuple[list[tuple[str, StoredItem, str, np.ndarray]], list[float]]:
        total = self._count(shown_only=False)  # the index holds hidden items' vectors too
        n = max(k * 4, 50)
        while True:
            try:
                found = self._index.query(self.name, q, min(n, max(total, 1)))
            except IndexUnavailable:
                found = self._exact(q)
            with self._catalog.read() as conn:
                items = _item_rows.get_by_ids(conn, [i for i, _, _ in found])
            recs = self._records(items)
            rows, dists = [], []
            for item_id, idx, dist in found:
                rec = recs.get(record_id(item_id, idx))
                if rec is None:
                    continue
                it, path, vec = rec
                if where_matches(flat_metadata(it), where) and _document_matches(
                    record_text(it.value, path), where_document
                ):
                    rows.append((record_id(item_id, idx), it, path, vec))
                    dists.append(dist)
                    if len(rows) >= k:
                        return rows, dists
            if n >= total:
                return rows, dists
            n *= 4

    def _exact(self, q: np.ndarray) -> list[tuple[int, int, float]]:
        scored = []
        qn = float(np.linalg.norm(q)) or 1.0
        for rid, _it, _path, vec in self._iter_records():
            item_id, idx = parse_record_id(rid)
            scored.append((item_id, idx, 1.0 - float(vec @ q) / ((float(np.linalg.norm(vec)) or 1.0) * qn)))
        return sorted(scored, key=lambda r: r[2])

    # --------------------------------------------------------------- writes

    def _read_only(self, *_: Any, **__: Any) -> None:
        raise ReadOnlyError(
            f"the view of {self.name!r} is read-only: write through the store (store.put / store.delete), which "
            "keeps the catalog, lineage and index in step"
        )

    add = upsert = update = delete = modify = fork = _read_only


class ViewClient:
    """The client a LangChain ``Chroma`` gets for a view: hands out the view, refuses changes."""

    def __init__(self, view: RecordView) -> None:
        self._view = view

    def get_collection(self, name: str, **_: Any) -> RecordView:
        return self._view

    get_or_create_collection = get_collection

    def delete_collection(self, *_: Any, **__: Any) -> None:
        self._view._read_only()
