"""Recall over ingested files: chunks with their score and source, and their parent's context on request.

``recall(query, top_k, include_parents)`` for files: the chunks
nearest the query (through the store's ordinary search, so its ranking and
planning apply), each with where it came from; ``include_parents=True``
adds the full text of the section(s) each chunk belongs to, read in one
batch:

    >>> hits = recall(mem.store, "how is the lock timeout set", include_parents=True)  # needs an open Memory (mem) holding the records named  # doctest: +SKIP
    >>> hits[0].source_uri, round(hits[0].score, 2), hits[0].title  # needs ingested documents  # doctest: +SKIP
    ('file:///docs/setup.md', 0.71, 'Configuration > Locks')
    >>> len(hits[0].full_context)  # needs ingested documents  # doctest: +SKIP
    4123
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import GetOp

from langgraph_memory.config import DEFAULT_K
from langgraph_memory.errors import InvalidArgumentError
from langgraph_memory.ingest.config import DOCUMENTS_NAMESPACE

__all__ = ["ChunkHit", "ParentContext", "recall"]


@dataclass(frozen=True)
class ParentContext:
    """A chunk's parent record: the full text of the section(s) around it."""

    key: str
    content: str
    start_char: int
    end_char: int
    title: str | None = None
    page: int | None = None


@dataclass(frozen=True)
class ChunkHit:
    """One recalled chunk.

    Attributes:
        content: the chunk's text.
        score: similarity to the query (higher is closer), as the store's search scores it.
        source_uri: the file it came from (``file://`` URI).
        namespace, key: where it is stored.
        chunk_index, start_char, end_char: its place in the file.
        episode_id, content_hash, file_type, title, page: as stored at ingest.
        parent_key: the key of its parent record.
        parent: that record, with ``include_parents=True``.
    """

    content: str
    score: float | None
    source_uri: str
    namespace: tuple[str, ...]
    key: str
    chunk_index: int
    start_char: int
    end_char: int
    episode_id: str | None
    content_hash: str
    file_type: str
    title: str | None
    page: int | None
    parent_key: str
    parent: ParentContext | None = None

    @property
    def full_context(self) -> str | None:
        """The parent's full text (``full_context``), when parents were asked for."""
        return self.parent.content if self.parent is not None else None


def recall(
    store: Any,
    query: str,
    *,
    k: int = DEFAULT_K,
    namespace: Sequence[str] = DOCUMENTS_NAMESPACE,
    include_parents: bool = False,
    filter: dict[str, Any] | None = None,
) -> list[ChunkHit]:
    """The ``k`` chunks under ``namespace`` nearest ``query``, best first.

    ``filter`` narrows by any stored field (``{"file_type": "pdf"}``,
    ``{"episode_id": "DS-25-002"}``).
    """
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgumentError("recall needs a non-empty query string")
    where = {**(filter or {}), "kind": "chunk"}
    items = store.search(tuple(namespace), query=query, filter=where, limit=k)
    parents: dict[tuple[tuple[str, ...], str], Any] = {}
    if include_parents and items:
        wanted = list(dict.fromkeys((tuple(it.namespace), it.value["parent_key"]) for it in items))
        got = store.batch([GetOp(ns, key) for ns, key in wanted])
        parents = {w: g for w, g in zip(wanted, got, strict=True) if g is not None}
    hits = []
    for it in items:
        v, ns = it.value, tuple(it.namespace)
        parent = parents.get((ns, v["parent_key"]))
        context = None if parent is None else ParentContext(parent.key, *(parent.value.get(f) for f in _PARENT_FIELDS))
        own = {f: v.get(f) for f in _CHUNK_FIELDS.split()}
        hits.append(ChunkHit(score=it.score, namespace=ns, key=it.key, parent=context, **own))
    return hits


# The stored fields a hit and its parent carry, as ingest writes them (`langgraph_memory.ingest.pipeline`).
_CHUNK_FIELDS = (
    "content source_uri chunk_index start_char end_char episode_id content_hash file_type title page parent_key"
)

_PARENT_FIELDS = ("content", "start_char", "end_char", "title", "page")
