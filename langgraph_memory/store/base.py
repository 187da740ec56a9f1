"""ChromaStore: LangGraph's ``BaseStore`` over typed Chroma collections."""

from __future__ import annotations

import asyncio
import logging
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

from langgraph_memory._chroma import ChromaHandle
from langgraph_memory.collections import (
    CollectionSpec,
    collection_by_name,
    collection_for,
)
from langgraph_memory.config import Settings
from langgraph_memory.embeddings import (
    _DEFAULT_ALIASES,
    DEFAULT_DIMS,
    CachedEmbeddings,
    SentenceTransformerEmbeddings,
)
from langgraph_memory.errors import ConfigError, EmbeddingModelError, StoreBackendError
from langgraph_memory.store import filters as _filters
from langgraph_memory.store._maintenance import MaintenanceMixin
from langgraph_memory.store._search import SearchMixin
from langgraph_memory.store.access import AccessLog, AccessTable
from langgraph_memory.store.namespaces import (
    NamespaceRegistry,
    select_namespaces,
    validate_namespace,
)
from langgraph_memory.store.records import (
    K_NS,
    NS_SEP,
    StoredItem,
    decode_metadata,
    dumps_value,
    encode_metadata,
    extra_id,
    item_uid,
    removed_keys,
    text_path,
)
from langgraph_memory.store.records import (
    now as _now,
)
from langgraph_memory.store.records import (
    to_datetime as _dt,
)
from langgraph_memory.store.ttl import Sweeper
from langgraph_memory.store.view import RecordView

__all__ = ["ChromaStore"]

logger = logging.getLogger(__name__)

@dataclass
class _PreparedPut:
    op: PutOp
    spec: CollectionSpec
    uid: str
    value_json: str | None
    # (path, text, index of the text when the path yields several)
    texts: list[tuple[str, str, int | None]] = field(default_factory=list)


@dataclass
class _Prepared:
    results: list[Result]
    gets: list[tuple[int, GetOp]]
    searches: list[tuple[int, SearchOp]]
    lists: list[tuple[int, ListNamespacesOp]]
    puts: list[_PreparedPut]
    texts: list[str]
    queries: list[str]


def _make_embeddings(embed: Any) -> Embeddings:
    if isinstance(embed, str) and (
        embed in _DEFAULT_ALIASES or embed.startswith("sentence-transformers/") or Path(embed).is_dir()
    ):
        return SentenceTransformerEmbeddings(embed)
    return ensure_embeddings(embed)


def _index_paths(paths: Sequence[str]) -> list[tuple[str, Any]]:
    """Each index path with its tokens (``"$"``, the whole value, stays as is)."""
    return [(p, tokenize_path(p) if p != "$" else p) for p in paths]


class ChromaStore(SearchMixin, MaintenanceMixin, BaseStore):
    """A LangGraph ``BaseStore`` whose items live in typed Chroma collections.

    Put it wherever ``InMemoryStore``, ``SqliteStore`` or ``PostgresStore``
    was used; ``index=`` and ``ttl=`` take the same configuration. The first
    namespace label picks the collection (``research``, ``strategies``,
    ``lessons``, ``regimes``, ``tools``, else the general ``memories``);
    typed collections validate values and embed their schema's text field.

    Args:
        client: any ``chromadb`` client. Default: an embedded
            ``PersistentClient`` at ``<data_dir>/chroma``.
        index: LangGraph ``IndexConfig`` (``dims``, ``embed``, ``fields``).
            ``embed`` may be an ``Embeddings``, a function, a LangChain
            ``"provider:model"`` string, or a sentence-transformers name such as
            ``"sentence-transformers/all-MiniLM-L6-v2"`` (loaded offline).
            Without it the store has no semantic search, like LangGraph's.
        ttl: LangGraph ``TTLConfig`` (minutes).
        data_dir: the data directory (argument > ``LANGGRAPH_MEMORY_DIR`` >
            config file > ``./memory``); holds the Chroma folder, its write
            lock and the embedding cache.
        lock_timeout: seconds to wait for another process's write before
            raising ``LockTimeoutError`` (default 30).
        access_flush_interval: seconds between applying noted reads
            (access counts, last access, TTL refresh).

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> import tempfile
        >>> store = ChromaStore(data_dir=tempfile.mkdtemp(),
        ...                     index={"dims": 16, "embed": DeterministicFakeEmbedding(size=16)})
        >>> store.put(("research",), "f1", {"content": "Momentum fades after earnings", "confidence": 0.8})
        >>> store.get(("research",), "f1").value["confidence"]
        0.8
        >>> [r.key for r in store.search(("research",), query="momentum", limit=1)]
        ['f1']
        >>> store.close()
    """

    supports_ttl: bool = True

    def __init__(
        self,
        client: Any | None = None,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        lock_timeout: float | None = None,
        access_flush_interval: float = 2.0,
    ) -> None:
        self.settings = Settings.resolve(data_dir, lock_timeout=lock_timeout)
        owns_dir = client is None or data_dir is not None
        if client is None:
            self.settings.ensure_dirs()
            self._handle = ChromaHandle.embedded(self.settings.chroma_dir, self.settings.lock_timeout)
        else:
            self._handle = ChromaHandle.for_client(client, self.settings.lock_timeout)
        self._epoch = -1
        self.ttl_config = ttl
        self.index_config: dict[str, Any] | None = None
        self.embeddings: CachedEmbeddings | None = None
        self._fields: list[tuple[str, Any]] = []
        self._dims: int | None = None
        if index:
            if "embed" not in index:
                raise ConfigError("index config needs 'embed': an Embeddings, a function, or a model name")
            self.index_config = dict(index)
            inner = _make_embeddings(index["embed"])
            cache_path = self.settings.embedding_cache_path if owns_dir else None
            self.embeddings = CachedEmbeddings(inner, path=cache_path)
            dims = index.get("dims")
            if dims is None and isinstance(inner, SentenceTransformerEmbeddings):
                dims = inner.dims
            if dims is None:
                raise ConfigError("index config needs 'dims', the size of the embedding vectors")
            self._dims = int(dims)
            self._fields = _index_paths(index.get("fields") or ["$"])
        self._collections: dict[str, Any] = {}
        self._coll_dims: dict[str, int] = {}
        self._registry: NamespaceRegistry | None = None
        self._access = AccessLog()
        # Embedded folders keep applied reads in SQLite beside Chroma; a server keeps them in Chroma.
        self._access_table = (
            AccessTable(self._handle.path / "lgm-access.sqlite", timeout=self.settings.lock_timeout)
            if self._handle.path is not None
            else None
        )
        self._flusher = Sweeper("lgm-access-flush", self.flush_access, access_flush_interval)
        self._ttl_sweeper: Sweeper | None = None
        # The lineage file store_node registers into: opened on first use, closed with the store.
        self._lineage: Any | None = None
        self._closed = False

    # ------------------------------------------------------------------ setup

    @classmethod
    def default_index(cls, model_name: str | None = None) -> IndexConfig:
        """An ``IndexConfig`` for the configured offline sentence-transformers model."""
        from langgraph_memory.embeddings import default_embeddings

        emb = default_embeddings(model_name)
        return {"dims": emb.dims, "embed": emb}

    @property
    def client(self) -> Any:
        """The Chroma client in use (it is replaced when another process changed the folder)."""
        return self._handle.client

    @contextmanager
    def _using(self, *, write: bool = False) -> Iterator[Any]:
        """Every Chroma call runs inside this: the folder lock, a current client."""
        with self._handle.use(write=write) as client:
            if self._epoch != self._handle.epoch:
                self._collections.clear()
                self._registry = None
                self._epoch = self._handle.epoch
            yield client

    def _collection(self, spec: CollectionSpec, *, create: bool = True) -> Any | None:
        with self._using() as client:
            col = self._collections.get(spec.name)
            if col is not None:
                return col
            if not create:
                try:
                    col = client.get_collection(spec.name, embedding_function=None)
                except Exception:
                    return None
            else:
                meta: dict[str, Any] = {"hnsw:space": "cosine", "lgm:dims": self._dims or DEFAULT_DIMS}
                col = client.get_or_create_collection(spec.name, metadata=meta, embedding_function=None)
            have = int((col.metadata or {}).get("lgm:dims", self._dims or DEFAULT_DIMS))
            if self._dims is not None and have != self._dims:
                raise ConfigError(
                    f"collection {spec.name!r} holds {have}-dimensional vectors but this store embeds with "
                    f"dims={self._dims}. Use a model of {have} dimensions, or another data directory."
                )
            self._coll_dims[spec.name] = have
            self._collections[spec.name] = col
            return col

    def _registry_(self) -> NamespaceRegistry:
        with self._using() as client:
            if self._registry is None:
                self._registry = NamespaceRegistry(client, known=self._handle.registered)
            return self._registry

    def _placeholder(self, spec: CollectionSpec) -> list[float]:
        d = self._coll_dims.get(spec.name) or self._dims or DEFAULT_DIMS
        return [1.0 / math.sqrt(d)] * d

    def collection(self, label_or_name: str) -> RecordView:
        """The Chroma collection for a label (``"research"``) or name (``"research_findings"``).

        Reads return each record's embedded text as its document (the store
        itself writes none); everything else is the plain Chroma collection.

        Example:
            >>> store.collection("lessons").get(include=["documents"])["documents"]  # doctest: +SKIP
            ['Short lookbacks whipsaw in volatile regimes']
        """
        with self._using():
            return RecordView(self._collection(collection_by_name(label_or_name)))

    def as_vectorstore(self, label_or_name: str) -> Any:
        """The collection as a LangChain ``langchain_chroma.Chroma`` vector store.

        Use it for retrievers and chains over the memories; write through the
        store, which keeps timestamps, lineage and namespaces consistent.

        Example:
            >>> retriever = store.as_vectorstore("research").as_retriever()  # doctest: +SKIP
        """
        if self.embeddings is None:
            raise ConfigError("as_vectorstore needs a store built with index= (an embedding model)")
        from langchain_chroma import Chroma

        spec = collection_by_name(label_or_name)
        view = self.collection(spec.name)
        vs = Chroma(client=self.client, collection_name=spec.name, embedding_function=self.embeddings)
        vs._chroma_collection = view  # page_content comes from the records' values
        return vs

    # ------------------------------------------------------------ public ops

    def put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any], index: Any = None, *, ttl: Any = NOT_PROVIDED) -> None:  # type: ignore[override]
        """Store or update an item (see ``BaseStore.put``); ``value=None`` is refused, use ``delete``."""
        validate_namespace(namespace, for_write=True)
        super().put(namespace, key, value, index, ttl=ttl)

    async def aput(self, namespace: tuple[str, ...], key: str, value: dict[str, Any], index: Any = None, *, ttl: Any = NOT_PROVIDED) -> None:  # type: ignore[override]
        """Async ``put``."""
        validate_namespace(namespace, for_write=True)
        await super().aput(namespace, key, value, index, ttl=ttl)

    # --------------------------------------------------------------- batching

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ops in order of their results (LangGraph's batch contract)."""
        prep = self._prepare(ops)
        doc_vecs = self.embeddings.embed_documents(prep.texts) if prep.texts and self.embeddings else []
        query_vecs = self._embed_queries(prep.queries)
        return self._execute(prep, doc_vecs, query_vecs)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async ``batch``: embedding is awaited, Chroma work runs in a worker thread."""
        prep = await asyncio.to_thread(self._prepare, list(ops))
        doc_vecs: list[list[float]] = []
        query_vecs: dict[str, list[float]] = {}
        if self.embeddings is not None:
            if prep.texts:
                doc_vecs = await self.embeddings.aembed_documents(prep.texts)
            if prep.queries:
                vecs = await asyncio.gather(*(self.embeddings.aembed_query(q) for q in prep.queries))
                query_vecs = dict(zip(prep.queries, vecs))
        return await asyncio.to_thread(self._execute, prep, doc_vecs, query_vecs)

    def _embed_queries(self, queries: list[str]) -> dict[str, list[float]]:
        if not queries or self.embeddings is None:
            return {}
        return {q: self.embeddings.embed_query(q) for q in queries}

    def _prepare(self, ops: Iterable[Op]) -> _Prepared:
        """Validate everything and collect texts to embed, before anything is written."""
        if self._closed:
            raise StoreBackendError("this ChromaStore is closed; open a new one")
        prep = _Prepared([], [], [], [], [], [], [])
        last_put: dict[tuple[tuple[str, ...], str], int] = {}
        puts: list[_PreparedPut] = []
        queries: dict[str, None] = {}
        for i, op in enumerate(ops):
            prep.results.append(None)
            if isinstance(op, GetOp):
                validate_namespace(op.namespace, for_write=False)
                prep.gets.append((i, op))
            elif isinstance(op, SearchOp):
                validate_namespace(op.namespace_prefix, for_write=False)
                _filters.validate_filter(op.filter)
                prep.searches.append((i, op))
                if op.query and self.embeddings is not None:
                    queries[op.query] = None
            elif isinstance(op, ListNamespacesOp):
                for cond in op.match_conditions or ():
                    validate_namespace(tuple(p for p in cond.path if p != "*"), for_write=False)
                prep.lists.append((i, op))
            elif isinstance(op, PutOp):
                validate_namespace(op.namespace, for_write=True)
                if not isinstance(op.key, str):
                    raise StoreBackendError(f"keys must be strings, got {type(op.key).__name__}")
                spec = collection_for(op.namespace)
                value_json = None
                if op.value is not None:
                    if not isinstance(op.value, dict):
                        from langgraph_memory.errors import ValidationError

                        raise ValidationError(f"store values must be dicts, got {type(op.value).__name__}")
                    spec.validate(op.value)
                    value_json = dumps_value(op.value)
                    if op.ttl is not None and (not isinstance(op.ttl, (int, float)) or op.ttl <= 0):
                        raise ConfigError(f"ttl must be a positive number of minutes, got {op.ttl!r}")
                key = (op.namespace, op.key)
                if key in last_put:  # last put of a key in a batch wins, as in InMemoryStore
                    puts[last_put[key]] = None  # type: ignore[call-overload]
                last_put[key] = len(puts)
                puts.append(_PreparedPut(op, spec, item_uid(op.namespace, op.key), value_json))
            else:
                raise StoreBackendError(f"unknown operation type: {type(op).__name__}")
        prep.puts = [p for p in puts if p is not None]
        for p in prep.puts:
            if p.op.value is not None:
                p.texts = self._texts_for(p)
                prep.texts.extend(t for _, t, _ in p.texts)
        prep.queries = list(queries)
        return prep

    def _texts_for(self, p: _PreparedPut) -> list[tuple[str, str, int | None]]:
        op = p.op
        if self.embeddings is None or op.index is False:
            return []
        if op.index is None:
            if p.spec.embed_field is not None:
                paths = [(p.spec.embed_field, tokenize_path(p.spec.embed_field))]
            else:
                paths = self._fields
        else:
            paths = _index_paths(op.index)
        out: list[tuple[str, str, int | None]] = []
        for path, tokens in paths:
            texts = get_text_at_path(op.value, tokens)
            if len(texts) > 1:
                out.extend((text_path(path, i), t, i) for i, t in enumerate(texts))
            elif texts:
                out.append((path, texts[0], None))
        return out

    def _execute(
        self, prep: _Prepared, doc_vecs: list[list[float]], query_vecs: dict[str, list[float]]
    ) -> list[Result]:
        with self._using(write=bool(prep.puts)):
            return self._execute_locked(prep, doc_vecs, query_vecs)

    def _execute_locked(
        self, prep: _Prepared, doc_vecs: list[list[float]], query_vecs: dict[str, list[float]]
    ) -> list[Result]:
        results = prep.results
        # Reads see the state before this batch's writes, as in InMemoryStore.
        for i, value in self._run_gets(prep.gets):
            results[i] = value
        for i, op in prep.searches:
            results[i] = self._run_search(op, query_vecs.get(op.query) if op.query else None)
        if prep.lists:
            registered = [ns for ns, _ in self._registry_().all()]
            for i, op in prep.lists:
                results[i] = select_namespaces(registered, op)
        if prep.puts:
            self._run_puts(prep.puts, doc_vecs)
        if self._access and not self._flusher.running and not self._closed:
            self._flusher.start()
        return results

    # ------------------------------------------------------------------- gets

    @property
    def _omits_expired(self) -> bool:
        """Whether ``ttl={"omit_expired": True}``: reads hide expired items before any sweep."""
        return bool(self.ttl_config and self.ttl_config.get("omit_expired"))

    def _omit(self, item: StoredItem, now: float, collection: str) -> bool:
        """Whether ``omit_expired`` hides this item (a read may have refreshed its TTL since)."""
        if not self._omits_expired:
            return False
        if item.expires_at is None or item.expires_at >= now:
            return False
        if self._access_table is not None:
            self._access_table.merge_into(collection, [item])
        return item.expires_at < now

    def _run_gets(self, gets: list[tuple[int, GetOp]]) -> Iterator[tuple[int, Item | None]]:
        by_spec: dict[str, list[tuple[int, GetOp]]] = defaultdict(list)
        for i, op in gets:
            by_spec[collection_for(op.namespace).name].append((i, op))
        now = _now()
        for name, group in by_spec.items():
            col = self._collection(collection_by_name(name), create=False)
            if col is None:
                for i, _ in group:
                    yield i, None
                continue
            uids = [item_uid(op.namespace, op.key) for _, op in group]
            got = col.get(ids=list(dict.fromkeys(uids)), include=["metadatas"])
            found = {rid: decode_metadata(m) for rid, m in zip(got["ids"], got["metadatas"] or [])}
            touched: list[StoredItem] = []
            for (i, op), uid in zip(group, uids):
                item = found.get(uid)
                if item is None or item.namespace != op.namespace or item.key != op.key or self._omit(item, now, name):
                    yield i, None
                    continue
                if op.refresh_ttl:
                    touched.append(item)
                yield i, Item(
                    value=item.value,
                    key=item.key,
                    namespace=item.namespace,
                    created_at=_dt(item.created_at),
                    updated_at=_dt(item.updated_at),
                )
            self._access.note(name, touched, now)

    # -------------------------------------------------------------------- puts

    def _run_puts(self, puts: list[_PreparedPut], doc_vecs: list[list[float]]) -> None:
        vec_iter = iter(doc_vecs)
        vectors: dict[str, list[list[float]]] = {}
        for p in puts:
            vecs = [next(vec_iter) for _ in p.texts]
            for v in vecs:
                if self._dims is not None and len(v) != self._dims:
                    raise EmbeddingModelError(
                        f"the embedding model returned {len(v)}-dimensional vectors but index dims={self._dims}; "
                        "fix index['dims']"
                    )
            vectors[p.uid] = vecs
        by_spec: dict[str, list[_PreparedPut]] = defaultdict(list)
        for p in puts:
            by_spec[p.spec.name].append(p)
        with self._using(write=True):
            registry = self._registry_()
            added: dict[tuple[str, ...], str] = {}
            emptied: list[tuple[Any, tuple[str, ...]]] = []
            for group in by_spec.values():
                spec = group[0].spec
                col = self._collection(spec)
                self._write_group(spec, col, group, vectors, added, emptied)
            registry.add(added)
            gone = [ns for col, ns in emptied if ns not in added and not self._namespace_has_items(col, ns)]
            registry.remove(gone)

    def _write_group(
        self,
        spec: CollectionSpec,
        col: Any,
        group: list[_PreparedPut],
        vectors: dict[str, list[list[float]]],
        added: dict[tuple[str, ...], str],
        emptied: list[tuple[Any, tuple[str, ...]]],
    ) -> None:
        now = _now()
        got = col.get(ids=[p.uid for p in group], include=["metadatas"])
        old_meta = {rid: m for rid, m in zip(got["ids"], got["metadatas"] or [])}
        ids: list[str] = []
        embs: list[list[float]] = []
        metas: list[dict[str, Any]] = []
        to_delete: list[str] = []
        placeholder = self._placeholder(spec)
        for p in group:
            old = old_meta.get(p.uid)
            old_item = decode_metadata(old) if old else None
            old_n = old_item.n_vectors if old_item else 0
            if p.op.value is None:
                if old_item is not None:
                    to_delete.append(p.uid)
                    to_delete.extend(extra_id(p.uid, i) for i in range(1, old_n))
                    emptied.append((col, old_item.namespace))
                continue
            vecs = vectors[p.uid]
            ttl = p.op.ttl
            item = StoredItem(
                namespace=p.op.namespace,
                key=p.op.key,
                value=p.op.value,
                created_at=old_item.created_at if old_item else now,
                updated_at=now,
                last_accessed_at=now,
                access_count=old_item.access_count if old_item else 0,
                expires_at=(now + ttl * 60.0) if ttl else None,
                ttl_minutes=float(ttl) if ttl else None,
                indexed=bool(vecs),
                n_vectors=max(1, len(vecs)),
            )
            # (record id, vector, extra index, path, text index); an unindexed
            # item keeps one record with a placeholder vector.
            records: list[tuple[str, list[float], int, str, int | None]] = [
                (p.uid if i == 0 else extra_id(p.uid, i), vecs[i], i, p.texts[i][0], p.texts[i][2])
                for i in range(len(vecs))
            ] or [(p.uid, placeholder, 0, "", None)]
            for rid, vec, x, path, text_index in records:
                meta = encode_metadata(item, value_json=p.value_json, extra=x, path=path, text_index=text_index)
                if old:  # upsert merges metadata: drop fields the new value no longer has
                    meta = {**removed_keys(old, meta), **meta}
                ids.append(rid)
                embs.append(vec)
                metas.append(meta)
            to_delete.extend(extra_id(p.uid, i) for i in range(item.n_vectors, old_n))
            added[item.namespace] = spec.name
        try:
            if ids:
                # One float32 array, rather than a list Chroma converts row by row.
                col.upsert(ids=ids, embeddings=np.asarray(embs, dtype=np.float32), metadatas=metas)
            if to_delete:
                col.delete(ids=to_delete)
        except Exception as exc:
            raise StoreBackendError(f"Chroma rejected a write to {spec.name!r}: {exc}") from exc
        if self._access_table is not None:
            self._access_table.forget(spec.name, [p.uid for p in group if p.op.value is None])

    @staticmethod
    def _namespace_has_items(col: Any, namespace: tuple[str, ...]) -> bool:
        got = col.get(where={K_NS: NS_SEP.join(namespace)}, limit=1, include=[])
        return bool(got["ids"])

    # --------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Apply pending reads, stop background threads, release the cache file."""
        if self._closed:
            return
        self.stop_ttl_sweeper(timeout=5)
        self._flusher.stop(timeout=5)
        try:
            self.flush_access()
        finally:
            self._closed = True
            if self.embeddings is not None:
                self.embeddings.close()
            if self._access_table is not None:
                self._access_table.close()
            if self._lineage is not None:
                self._lineage.close()

    def __enter__(self) -> ChromaStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> ChromaStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)
