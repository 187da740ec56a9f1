"""ChromaStore: LangGraph's ``BaseStore`` over a catalog of record, with Chroma as its vector index."""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypeVar, cast

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    NOT_PROVIDED,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
    TTLConfig,
)

from langgraph_memory._infra.chroma_process import index_process_wanted
from langgraph_memory._infra.closing import close_all, unwind
from langgraph_memory.catalog import evidence as _evidence
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import status as _status
from langgraph_memory.catalog.factory import open_catalog
from langgraph_memory.catalog.lineage_store import LineageStore
from langgraph_memory.config import MAX_KEY_CHARS, Settings
from langgraph_memory.embeddings import CachedEmbeddings, SentenceTransformerEmbeddings
from langgraph_memory.errors import (
    ConfigError,
    InvalidArgumentError,
    MemoryNotFoundError,
    ReadOnlyError,
    ValidationError,
)
from langgraph_memory.index._catchup import IndexCatchUp
from langgraph_memory.index._exact_index import ExactOnlyIndex
from langgraph_memory.index.chroma import ChromaIndex
from langgraph_memory.registry import DEFAULT, PLAIN, CollectionRegistry, Default, default_collections
from langgraph_memory.search.hybrid import HybridSearch
from langgraph_memory.search.planner import Planner
from langgraph_memory.search.ranking import HybridRanking
from langgraph_memory.search.vectors import DEFAULT_BUDGET_BYTES, VectorCache
from langgraph_memory.store._embedding_calls import aembedded, embedded, make_embeddings
from langgraph_memory.store._writer import PreparedPut, Writer, check_vectors, dumps_value, index_paths
from langgraph_memory.store.access import AccessLog
from langgraph_memory.store.as_of import AsOfStore, PastVersionIndex
from langgraph_memory.store.history import Version, as_timestamp, read_history
from langgraph_memory.store.items import Before, StoreItems
from langgraph_memory.store.namespaces import list_namespaces, validate_namespace
from langgraph_memory.store.searching import checked_count, utc_datetime
from langgraph_memory.store.ttl import Sweeper
from langgraph_memory.store.upkeep import UpkeepStore
from langgraph_memory.store.view import RecordView, ViewClient

__all__ = ["ChromaStore"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Stores still open, closed at interpreter exit: pending reads and queued index changes land.
_OPEN_STORES: weakref.WeakSet[ChromaStore] = weakref.WeakSet()


@atexit.register
def _close_open_stores() -> None:
    for store in list(_OPEN_STORES):
        try:
            store.close()
        except Exception:  # noqa: BLE001 - exiting anyway
            logger.debug("closing a store at exit failed", exc_info=True)


@dataclass
class _Prepared:
    results: list[Result]
    gets: list[tuple[int, GetOp]] = field(default_factory=list)
    searches: list[tuple[int, SearchOp]] = field(default_factory=list)
    lists: list[tuple[int, ListNamespacesOp]] = field(default_factory=list)
    puts: list[PreparedPut] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)


class ChromaStore(UpkeepStore):
    """A LangGraph ``BaseStore`` whose items live in a crash-safe catalog, indexed by Chroma.

    Put it wherever ``InMemoryStore``, ``SqliteStore`` or ``PostgresStore``
    was used; ``index=`` and ``ttl=`` take the same configuration. The first
    namespace label picks the collection (``research``, ``strategies``,
    ``lessons``, ``regimes``, ``tools``, else the general ``memories``);
    typed collections validate values and embed their schema's text field.

    Every item, vector, timestamp and access count lives in the catalog
    (``<data_dir>/catalog.sqlite``, SQLite in WAL mode): a put is acknowledged
    once the catalog committed it, and survives the process being killed at
    any instant. Chroma is an index derived from the catalog: checked on
    open, repaired or rebuilt from the catalog's vectors when it disagrees or
    is damaged (`rebuild_index()`), never the only copy of anything.
    Searches are planned from the catalog's counts (`explain()`).

    A search with a query ranks by cosine similarity, as ``InMemoryStore``
    does, unless ``ranking`` is a [`HybridRanking`][langgraph_memory.HybridRanking]:
    then keyword and vector candidates are fused and weighted by age and use
    (``Memory.open`` turns this on). The catalog keeps a keyword index (SQLite
    FTS5) of every item's embedded text either way.

    Args:
        client: any ``chromadb`` client to hold the index (a server's
            ``HttpClient``). Default: an embedded Chroma under ``<data_dir>/chroma``.
        index: LangGraph ``IndexConfig`` (``dims``, ``embed``, ``fields``).
            ``embed`` may be an ``Embeddings``, a function, a LangChain
            ``"provider:model"`` string, or a sentence-transformers name such as
            ``"sentence-transformers/all-MiniLM-L6-v2"`` (loaded offline).
            Without it the store has no semantic search, like LangGraph's.
        ttl: LangGraph ``TTLConfig`` (minutes).
        data_dir: the data directory (argument > ``LANGGRAPH_MEMORY_URL`` >
            ``LANGGRAPH_MEMORY_DIR`` > config file > ``./memory``), or a
            ``postgresql://`` address: the catalog then lives on that server.
        local_dir: with an address, the folder for what stays local (the
            embedding cache, archive files, an embedded index); argument >
            ``LANGGRAPH_MEMORY_LOCAL_DIR`` > config file > a folder under
            ``~/.cache/langgraph-memory`` named after the server.
        lock_timeout: seconds to wait for another process before raising
            ``LockTimeoutError`` (argument > ``LANGGRAPH_MEMORY_LOCK_TIMEOUT``
            > config file > 30).
        settings: already resolved [`Settings`][langgraph_memory.Settings]
            (``Memory.open`` passes its own); instead of ``data_dir`` and
            ``lock_timeout``.
        access_flush_interval: seconds between applying noted reads
            (access counts, last access, TTL refresh).
        durability: ``"normal"`` (a put survives a crash of the process) or
            ``"full"`` (also a power loss; an fsync per write).
        reindex: when the stored vectors were made by another model than
            ``index``'s, re-embed them all with this one while opening (with
            a progress bar), instead of refusing with ``ModelMismatchError``.
        vector_cache_mb: memory for the catalog's vectors, held to score
            candidate sets exactly without reading them from disk (4 bytes per
            dimension per vector: 154 MB for 100,000 vectors of 384 dims; a
            collection is loaded by its first search with more candidates
            than are cheap to read from disk, and kept in step after).
            Collections that do not fit are searched from the catalog and
            Chroma; 0 turns the cache off.
        ranking: ``None`` (plain cosine, scores identical to ``InMemoryStore``'s)
            or a [`HybridRanking`][langgraph_memory.HybridRanking] (hybrid keyword
            + vector search with temporal decay and reinforcement; scores in
            [0, 1]). Kept in the attribute ``ranking``, which may be changed.
        collections: the [CollectionRegistry][langgraph_memory.registry.CollectionRegistry]
            that maps a namespace's first label to a typed collection. Default:
            the research collections. ``None``: a plain LangGraph store, one
            general collection that takes any value in any namespace, exactly
            as ``InMemoryStore`` does.
        index_process: run the embedded Chroma index in a child process of
            its own (default: yes, unless ``LANGGRAPH_MEMORY_INDEX_PROCESS=0``).
            Chroma's embedded client holds the GIL for the whole of each write
            (an upsert of 500 vectors into 100,000: 0.3-0.6 s), which stops
            every thread of the process, puts and an async server's event
            loop included; from a child it cannot. Costs a process (it starts
            while the store opens, about 1.5 s of CPU) and a pipe round trip
            per call. Ignored with ``client``.
        read_only: open an existing data directory for reading only: gets,
            searches and listings work; nothing is written to the directory
            (no access counts, no TTL refresh, no index repair, no embedding
            cache file), and every write raises
            [`ReadOnlyError`][langgraph_memory.errors.ReadOnlyError]. Works on a
            folder this process cannot write and on a copy of a live folder.
            Chroma is not opened: searches are scored exactly from the
            catalog's vectors.
        create: ``False`` opens only a data directory that already holds a
            memory: any other folder (empty, missing, or holding other files)
            raises [`MemoryNotFoundError`][langgraph_memory.errors.MemoryNotFoundError]
            and is left untouched. For tools that only read or change what is there.

    Examples:
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
    #: Items can be retired or superseded, and searches hide them unless ``include_retired``.
    supports_status: bool = True
    #: ``store.lineage`` records parents and versions in the same transaction as a put.
    supports_lineage: bool = True
    #: ``search(..., data_cutoff=date)`` returns only items whose evidence ends by that date.
    supports_data_cutoff: bool = True

    def __init__(
        self,
        client: Any | None = None,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        lock_timeout: float | None = None,
        local_dir: str | os.PathLike[str] | None = None,
        access_flush_interval: float = 2.0,
        durability: Literal["normal", "full"] = "normal",
        reindex: bool = False,
        vector_cache_mb: float = DEFAULT_BUDGET_BYTES / 2**20,
        settings: Settings | None = None,
        ranking: HybridRanking | None = None,
        collections: CollectionRegistry | None | Default = DEFAULT,
        index_process: bool | None = None,
        read_only: bool = False,
        create: bool = True,
    ) -> None:
        #: Opened with ``read_only=True``: reads only, every write raises ``ReadOnlyError``.
        self.read_only = bool(read_only)
        if collections is DEFAULT:
            collections = default_collections()
        elif collections is None:
            collections = PLAIN
        elif not isinstance(collections, CollectionRegistry):
            raise ConfigError(f"collections must be a CollectionRegistry or None, got {collections!r}")
        #: The collections this store keeps: which namespaces are typed, and how.
        self.collections: CollectionRegistry = collections
        if ranking is not None and not isinstance(ranking, HybridRanking):
            raise ConfigError(f"ranking must be a HybridRanking or None (plain cosine), got {ranking!r}")
        #: How searches with a query rank: None (cosine) or a HybridRanking.
        self.ranking = ranking
        if settings is not None and (data_dir is not None or lock_timeout is not None or local_dir is not None):
            raise ConfigError("pass either settings= or data_dir=/lock_timeout=/local_dir=, not both")
        self.settings = (
            settings
            if settings is not None
            else Settings.resolve(data_dir, lock_timeout=lock_timeout, local_dir=local_dir)
        )
        # Before anything opens a file (the embedding cache does): a folder that is no memory, or that cannot
        # be written, is refused with a typed error before a single file is made.
        if read_only:
            if reindex:
                raise ReadOnlyError("reindex=True re-embeds and writes; it cannot be used with read_only=True")
            if self.settings.catalog_url is not None:
                raise ConfigError("read_only=True opens a data directory; a memory on a server is read by its address")
            if not self.settings.catalog_path.is_file():
                raise MemoryNotFoundError(
                    f"no memory to read at {self.settings.data_dir} ({self.settings.catalog_path.name} is "
                    "missing); a read-only open never creates one. Check the path.",
                    self.settings.data_dir,
                )
        else:
            if not create and not self.settings.has_memory():
                raise MemoryNotFoundError(
                    f"{self.settings.data_dir} is not a memory ({self.settings.catalog_path.name} is missing), "
                    "and this open does not create one. Check the path (data_dir=, --data-dir or "
                    "$LANGGRAPH_MEMORY_DIR); a program that calls Memory.open, `langgraph-memory ingest` or a "
                    "store_ command creates a memory.",
                    self.settings.data_dir,
                )
            self.settings.ensure_dirs()
        self.ttl_config = ttl
        self.index_config: dict[str, Any] | None = None
        # The model behind the embedding cache; `embeddings` is the object given in index= (see below).
        self.cached_embeddings: CachedEmbeddings | None = None
        fields: list[tuple[str, Any]] = []
        dims: int | None = None
        if index:
            if not isinstance(index, dict):
                raise ConfigError(f"index must be a dict like {{'dims': 384, 'embed': ...}}, got {index!r}")
            if "embed" not in index:
                raise ConfigError("index config needs 'embed': an Embeddings, a function, or a model name")
            self.index_config = dict(index)
            inner = make_embeddings(index["embed"])
            # A read-only store keeps its query vectors in memory only: the cache file is a write.
            cache_path = None if read_only else self.settings.embedding_cache_path
            self.cached_embeddings = CachedEmbeddings(inner, path=cache_path)
            dims = index.get("dims")
            if dims is None and isinstance(inner, SentenceTransformerEmbeddings):
                dims = inner.dims
            if dims is None:
                raise ConfigError("index config needs 'dims', the size of the embedding vectors")
            if isinstance(dims, bool) or not isinstance(dims, int) or dims <= 0:
                raise ConfigError(f"index['dims'] must be a positive whole number, got {dims!r}")
            fields = index_paths(index.get("fields") or ["$"])
        self._fields = fields
        self._dims = dims
        self._closed = False
        #: the temporary data directory of ``from_conn_string(":memory:")``, removed on close.
        self._tempdir: Any = None
        opened: list[Callable[[], Any]] = []
        try:
            if read_only:
                self.catalog = open_catalog(self.settings, durability=durability, read_only=True)
            else:
                self.catalog = open_catalog(self.settings, durability=durability)
            opened.append(self.catalog.close)
            model = self.cached_embeddings.model_id if self.cached_embeddings is not None else None
            if read_only:
                # Chroma cannot be opened without writing to its folder: searches are scored exactly instead.
                self.vector_index = cast(ChromaIndex, ExactOnlyIndex(self.catalog, collections.names()))
            else:
                self.vector_index = ChromaIndex(
                    self.catalog,
                    root=self.settings.chroma_dir if client is None else None,
                    client=client,
                    lock_timeout=self.settings.lock_timeout,
                    collections=collections.names(),
                    process=index_process_wanted(index_process),
                )
            self._writer = Writer(self.catalog, self.vector_index, fields=fields, model=model, dims=dims)
            if not read_only:
                # A write is acknowledged at its commit; the derived index follows in a thread (searches score
                # what it lacks exactly). Inline, a single put waited for Chroma's upsert, which grows with the
                # collection (7.6 ms at 10,000 items, 34 ms at 100,000), where the commit alone stays flat.
                self._writer.catch_up = IndexCatchUp(self._writer.sync)
            if not (reindex and self._writer.needs_reembedding()):
                self._writer.check_model()
                reindex = False
            self.vector_index.open()
            opened.append(self.vector_index.close)
            if reindex:
                self._reembed(everything=False, progress=True)
        except BaseException:
            if self.cached_embeddings is not None:
                opened.insert(0, self.cached_embeddings.close)
            unwind(opened, "store open")
            raise
        self._access = AccessLog()
        if isinstance(vector_cache_mb, bool) or not isinstance(vector_cache_mb, (int, float)) or vector_cache_mb < 0:
            raise ConfigError(f"vector_cache_mb must be a number of megabytes >= 0, got {vector_cache_mb!r}")
        #: The catalog's vectors in memory, for exact scoring (None when ``vector_cache_mb=0``).
        self.vectors = VectorCache(self.catalog, budget_bytes=int(vector_cache_mb * 2**20)) if vector_cache_mb else None
        self.planner = Planner(self.catalog, self.vector_index, self.vectors, collections=collections)
        self.hybrid = HybridSearch(self.catalog, self.planner, collections)
        #: Raw item access for the archive and the typed API (not part of ``BaseStore``).
        self.items = StoreItems(self.catalog, self._writer, self.flush_access, self._put_many, collections)
        self._flusher = Sweeper("lgm-access-flush", self.flush_access, access_flush_interval)
        self._ttl_sweeper: Sweeper | None = None
        self._near_labels_warned: set[str] = set()
        self._close_lock = threading.Lock()
        self._lineage: LineageStore | None = None
        # Retired and superseded items, hidden from searches (cached until a status changes).
        self._hidden = _status.HiddenItems()
        # Each item's evidence end, for searches with a data cut-off (brought up to date at each such search).
        self._evidence = _evidence.EvidenceEnds()
        # The past versions as arrays, shared by every `as_of()` view (loaded on the first search of one).
        self._past_versions = PastVersionIndex()
        _OPEN_STORES.add(self)

    # ------------------------------------------------------------------ setup

    @property
    def embeddings(self) -> Embeddings | None:
        """The `Embeddings` given in ``index=`` (where LangGraph's stores keep it), or None without an index.

        The store embeds through `cached_embeddings`, which wraps this object
        with the embedding cache of the data directory.

        Examples:
            >>> import tempfile
            >>> from langchain_core.embeddings import DeterministicFakeEmbedding
            >>> emb = DeterministicFakeEmbedding(size=8)
            >>> with ChromaStore(data_dir=tempfile.mkdtemp(), index={"dims": 8, "embed": emb}) as store:
            ...     store.embeddings is emb
            True
        """
        return self.cached_embeddings.inner if self.cached_embeddings is not None else None

    @classmethod
    def default_index(cls, model_name: str | None = None) -> IndexConfig:
        """An ``IndexConfig`` for the configured offline sentence-transformers model."""
        from langgraph_memory.embeddings.model import default_embeddings

        emb = default_embeddings(model_name)
        return {"dims": emb.dims, "embed": emb}

    @classmethod
    def from_conn_string(cls, conn_string: str | os.PathLike[str], **kwargs: Any) -> ChromaStore:
        """Open the data directory ``conn_string`` names, as ``SqliteStore.from_conn_string`` opens a file.

        A ``postgresql://`` address opens the memory on that server (as
        ``PostgresStore.from_conn_string`` does; ``local_dir=`` names the folder
        for what stays local). ``":memory:"`` gives a temporary data directory, removed on close. The
        result is the store itself, which is a context manager (``with`` and
        ``async with``), so code written for LangGraph's stores runs unchanged.
        Other arguments are the constructor's (``index=``, ``ttl=``...).

        Examples:
            >>> with ChromaStore.from_conn_string(":memory:") as store:
            ...     store.setup()
            ...     store.put(("users", "u1"), "prefs", {"text": "short reports"})
            ...     store.get(("users", "u1"), "prefs").value
            {'text': 'short reports'}
        """
        from langgraph_memory._infra.conn_string import open_conn_string

        store: ChromaStore
        store, store._tempdir = open_conn_string(
            conn_string, lambda path, _tmp: cls(data_dir=path, **kwargs), address=True
        )
        return store

    def setup(self) -> None:
        """Nothing left to do: opening created (or migrated) the catalog and the index.

        Kept so code written for ``SqliteStore`` and ``PostgresStore``, which
        call ``store.setup()`` before use, runs unchanged. Raises
        ``StoreBackendError`` on a closed store.
        """
        self._check_open()

    async def asetup(self) -> None:
        """Async `setup()`."""
        self._check_open()

    @property
    def lineage(self) -> LineageStore:
        """The lineage (edges, versions) of this data directory, kept in the store's catalog."""
        if self._lineage is None:
            self._lineage = LineageStore(self.catalog)
        return self._lineage

    @property
    def client(self) -> Any:
        """The Chroma client holding the index."""
        return self.vector_index.handle.client

    def collection(self, label_or_name: str, *, include_retired: bool = False) -> RecordView:
        """A read-only view of one collection, as Chroma's collection API reads it.

        Retired and superseded items are left out, as searches leave them
        out, unless ``include_retired``.

        Examples:
            >>> store.collection("lessons").get(include=["documents"])["documents"]
            ['Stops too tight: whipsaw']
        """
        embed = self._embed_query if self.cached_embeddings is not None else None
        hidden = None if include_retired else self._hidden.snapshot
        # The view queries the Chroma index: with the catalog on a server that index catches up after each
        # write, in a thread, so the view first lets it take every write this store acknowledged.
        self.wait_for_index(self.settings.lock_timeout)
        return RecordView(
            self.catalog, self.vector_index, self.collections.by_name(label_or_name).name, embed, hidden=hidden
        )

    def as_vectorstore(self, label_or_name: str, *, include_retired: bool = False) -> Any:
        """One collection as a read-only LangChain ``langchain_chroma.Chroma`` vector store.

        Use it for retrievers and chains over the memories; write through the
        store, which keeps the catalog, timestamps and lineage consistent.
        Retired and superseded items are left out unless ``include_retired``.

        Examples:
            >>> retriever = store.as_vectorstore("research").as_retriever()
        """
        if self.cached_embeddings is None:
            raise ConfigError("as_vectorstore needs a store built with index= (an embedding model)")
        from langchain_chroma import Chroma

        view = self.collection(label_or_name, include_retired=include_retired)
        return Chroma(
            client=ViewClient(view),  # type: ignore[arg-type]  # duck-types the client calls Chroma makes
            collection_name=view.name,
            embedding_function=self.cached_embeddings,
            create_collection_if_not_exists=False,
        )

    # ------------------------------------------------------------ public ops

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Any = None,
        *,
        ttl: Any = NOT_PROVIDED,
    ) -> None:
        """Store or update an item (see ``BaseStore.put``); ``value=None`` is refused, use ``delete``."""
        namespace = validate_namespace(namespace, for_write=True)
        _check_key(key)
        super().put(namespace, key, value, index, ttl=ttl)

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Any = None,
        *,
        ttl: Any = NOT_PROVIDED,
    ) -> None:
        """Async ``put``."""
        namespace = validate_namespace(namespace, for_write=True)
        _check_key(key)
        await super().aput(namespace, key, value, index, ttl=ttl)

    def history(self, namespace: tuple[str, ...], key: str) -> list[Version]:
        """Every version of the item ``(namespace, key)``, newest first (the current one first, if it is live).

        See `langgraph_memory.store.history`.

        Examples:
            >>> [v.change for v in store.history(("research",), f.id)]
            [None]
        """
        self._check_open()
        _check_key(key)
        return read_history(self.catalog, validate_namespace(namespace, for_write=False), key)

    async def ahistory(self, namespace: tuple[str, ...], key: str) -> list[Version]:
        """Async `history()`."""
        return await asyncio.to_thread(self.history, namespace, key)

    def as_of(self, at: datetime | float) -> AsOfStore:
        """A read-only ``BaseStore`` answering as this store would have at ``at`` (naive datetimes are UTC).

        ``builder.compile(store=store.as_of(t))`` runs a graph against the memory of ``t``; see
        `langgraph_memory.store.as_of`.

        Examples:
            >>> from datetime import datetime, UTC
            >>> store.as_of(datetime(2000, 1, 1)).get(("research",), f.id) is None
            True
        """
        self._check_open()
        return AsOfStore(self, as_timestamp(at))

    # --------------------------------------------------------------- batching

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ops; results in op order (LangGraph's batch contract)."""
        prep = self._prepare(ops)
        doc_vecs = self._embed_documents(prep.texts)
        query_vecs = {q: self._embed_query(q) for q in prep.queries}
        return self._execute(prep, doc_vecs, query_vecs)

    def _embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts or self.cached_embeddings is None:
            return []
        emb = self.cached_embeddings
        return embedded(lambda: emb.embed_documents(texts), f"{len(texts)} texts")

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async ``batch``: embedding is awaited, catalog and Chroma work runs in a worker thread."""
        prep = await asyncio.to_thread(self._prepare, list(ops))
        doc_vecs: list[list[float]] = []
        query_vecs: dict[str, np.ndarray] = {}
        if self.cached_embeddings is not None:
            emb = self.cached_embeddings
            if prep.texts:
                doc_vecs = await aembedded(emb.aembed_documents(prep.texts), f"{len(prep.texts)} texts")
            if prep.queries:
                vecs = await asyncio.gather(*(aembedded(emb.aembed_query(q), "a query") for q in prep.queries))
                query_vecs = {
                    q: check_vectors([v], self._dims, "a query")[0] for q, v in zip(prep.queries, vecs, strict=True)
                }
        return await asyncio.to_thread(self._execute, prep, doc_vecs, query_vecs)

    def _put_many(self, ops: list[PutOp], before: Before | None) -> list[int | None]:
        prep = self._prepare(ops)
        return self._writer.write(prep.puts, self._embed_documents(prep.texts), now=time.time(), before=before)

    def _prepare(self, ops: Iterable[Op]) -> _Prepared:
        """Validate everything and collect texts to embed, before anything is written."""
        self._check_open()
        prep = _Prepared([])
        last_put: dict[tuple[tuple[str, ...], str], int] = {}
        puts: list[PreparedPut | None] = []
        queries: dict[str, None] = {}
        for i, op in enumerate(ops):
            prep.results.append(None)
            if isinstance(op, GetOp):
                ns = validate_namespace(op.namespace, for_write=False)
                if isinstance(op.key, str) and "\x00" in op.key:
                    continue  # no such key is ever stored (see _check_key): None, as for any missing key
                prep.gets.append((i, op._replace(namespace=ns)))
            elif isinstance(op, SearchOp):
                op = self._check_search(op)
                prep.searches.append((i, op))
                if op.query and self.cached_embeddings is not None:
                    queries[op.query] = None
            elif isinstance(op, ListNamespacesOp):
                for cond in op.match_conditions or ():
                    validate_namespace(tuple(p for p in cond.path if p != "*"), for_write=False)
                checked_count(op.limit, "limit")
                checked_count(op.offset, "offset")
                prep.lists.append((i, op))
            elif isinstance(op, PutOp):
                self._check_writable("put")
                p = self._prepare_put(op)
                key = (p.op.namespace, p.op.key)
                if key in last_put:  # the last put of a key in a batch wins, as in InMemoryStore
                    puts[last_put[key]] = None
                last_put[key] = len(puts)
                puts.append(p)
            else:
                raise InvalidArgumentError(f"unknown operation type: {type(op).__name__}")
        prep.puts = [p for p in puts if p is not None]
        for p in prep.puts:
            if p.value_json is not None:
                p.texts = self._writer.texts_for(p.op, p.spec)
                prep.texts.extend(t for _, t in p.texts)
        prep.queries = list(queries)
        return prep

    def _prepare_put(self, op: PutOp) -> PreparedPut:
        ns = validate_namespace(op.namespace, for_write=True)
        _check_key(op.key)
        op = op._replace(namespace=ns)
        self._warn_near_label(ns)
        spec = self.collections.for_namespace(ns)
        if op.value is None:
            return PreparedPut(op, spec, None)
        if not isinstance(op.value, dict):
            raise ValidationError(f"store values must be dicts, got {type(op.value).__name__}")
        if op.index is not None and op.index is not False:
            index_paths(op.index)
        ttl = op.ttl
        if ttl is not None and (
            isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0 or ttl == float("inf")
        ):
            raise InvalidArgumentError(f"ttl must be a positive number of minutes, got {ttl!r}")
        spec.validate(op.value)
        return PreparedPut(op, spec, dumps_value(op.value))

    def _execute(self, prep: _Prepared, doc_vecs: list[list[float]], query_vecs: dict[str, np.ndarray]) -> list[Result]:
        results = prep.results
        now = time.time()
        # Reads see the state before this batch's writes, as in InMemoryStore.
        if prep.gets:
            for i, item in self._run_gets(prep.gets, now):
                results[i] = item
        for i, op in prep.searches:
            results[i] = self._run_search(op, query_vecs.get(op.query) if op.query else None, now)
        if prep.lists:
            with self.catalog.read() as conn:
                for i, lop in prep.lists:
                    results[i] = list_namespaces(conn, lop)
        if prep.puts:
            self._writer.write(prep.puts, doc_vecs, now=now)
        self._start_flusher()
        return results

    def _run_gets(self, gets: list[tuple[int, GetOp]], now: float) -> list[tuple[int, Item | None]]:
        with self.catalog.read() as conn:
            found = _item_rows.get_items(conn, [(op.namespace, op.key) for _, op in gets])
        omit = self._omitter(now)
        out: list[tuple[int, Item | None]] = []
        touched: list[tuple[int, float | None]] = []
        for i, op in gets:
            it = found.get((op.namespace, op.key))
            if it is None or omit(it):
                out.append((i, None))
                continue
            if op.refresh_ttl and it.id is not None:
                touched.append((it.id, it.ttl_minutes))
            out.append(
                (
                    i,
                    Item(
                        value=it.value,
                        key=it.key,
                        namespace=it.namespace,
                        created_at=utc_datetime(it.created_at),
                        updated_at=utc_datetime(it.updated_at),
                    ),
                )
            )
        if not self.read_only:
            self._access.note(touched, now)
        return out

    # --------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Apply pending reads and queued index changes, stop background threads, release the files."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        _OPEN_STORES.discard(self)
        self.stop_ttl_sweeper(timeout=5)
        self._flusher.stop(timeout=5)
        steps: list[Callable[[], Any]] = [self._flush_access_best_effort]
        if self._writer.catch_up is not None:
            steps.append(self._writer.catch_up.stop)
        steps.append(self.planner.close)
        steps.append(self.vector_index.close)
        if self.cached_embeddings is not None:
            steps.append(self.cached_embeddings.close)
        steps.append(self.catalog.close)
        if self._tempdir is not None:
            steps.append(self._tempdir.cleanup)
        close_all(steps)

    def __enter__(self) -> ChromaStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> ChromaStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)


def _check_key(key: Any) -> None:
    # LangGraph's BaseStore.put would turn 5 into "5"; a key that comes back changed is refused.
    if not isinstance(key, str):
        raise InvalidArgumentError(f"a key must be a string, got {type(key).__name__} {key!r}")
    if not key:
        raise InvalidArgumentError("keys must be non-empty strings, got ''")
    if len(key) > MAX_KEY_CHARS:
        raise InvalidArgumentError(f"a key has {len(key):,} characters; at most {MAX_KEY_CHARS} are allowed")
    if "\x00" in key:
        # PostgreSQL's text cannot hold NUL; refused on both backends, so a memory moves between them whole.
        raise InvalidArgumentError(f"keys cannot contain a NUL character (\\x00), got {key!r}")
