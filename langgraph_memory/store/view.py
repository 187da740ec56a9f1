"""A store collection as Chroma and LangChain see it: each record's text as its document.

The store writes no Chroma ``documents`` (see :mod:`langgraph_memory.store.records`);
the text a record embeds is part of the item's value. :class:`RecordView`
wraps a collection so that reads return that text as the document, which is
what ``langchain_chroma.Chroma`` turns into ``Document.page_content``.
Everything other than reads passes through to the collection unchanged.
"""

from __future__ import annotations

from typing import Any

from langgraph_memory.store.records import K_ITEM, record_text

__all__ = ["RecordView"]

_GET_DEFAULT = ["metadatas", "documents"]
_QUERY_DEFAULT = ["metadatas", "documents", "distances"]


def _texts(metas: list[Any], docs: list[Any] | None) -> list[str | None]:
    docs = list(docs) if docs is not None else [None] * len(metas)
    return [
        (record_text(m) or "") if m and K_ITEM in m else d  # ours: the value's text; foreign: as stored
        for m, d in zip(metas, docs)
    ]


class RecordView:
    """A Chroma collection whose ``get``/``query``/``peek`` fill ``documents`` from the records.

    Example:
        >>> view = store.collection("research")          # doctest: +SKIP
        >>> view.get(limit=1)["documents"]               # doctest: +SKIP
        ['Carry trades unwind when volatility spikes']
    """

    def __init__(self, collection: Any) -> None:
        self._collection = collection

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)

    def __repr__(self) -> str:
        return f"RecordView({self._collection!r})"

    def get(self, *args: Any, include: list[str] | None = None, **kwargs: Any) -> Any:
        """``Collection.get``; documents are the records' texts."""
        wanted = list(include) if include is not None else list(_GET_DEFAULT)
        res = self._collection.get(*args, include=_with_metadatas(wanted), **kwargs)
        if "documents" in wanted:
            res["documents"] = _texts(res["metadatas"] or [], res.get("documents"))
        if "metadatas" not in wanted:
            res["metadatas"] = None
        return res

    def query(self, *args: Any, include: list[str] | None = None, **kwargs: Any) -> Any:
        """``Collection.query``; documents are the records' texts."""
        wanted = list(include) if include is not None else list(_QUERY_DEFAULT)
        res = self._collection.query(*args, include=_with_metadatas(wanted), **kwargs)
        if "documents" in wanted:
            docs = res.get("documents") or [None] * len(res["metadatas"] or [])
            res["documents"] = [_texts(m or [], d) for m, d in zip(res["metadatas"] or [], docs)]
        if "metadatas" not in wanted:
            res["metadatas"] = None
        return res

    def peek(self, limit: int = 10) -> Any:
        """``Collection.peek``; documents are the records' texts."""
        return self.get(limit=limit, include=["embeddings", "metadatas", "documents"])


def _with_metadatas(include: list[str]) -> list[str]:
    return include if "metadatas" in include or "documents" not in include else [*include, "metadatas"]
