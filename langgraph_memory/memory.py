"""Memory: the one owner of a data directory, handing out the store, the checkpointer and the archiver.

::

    from langgraph_memory.memory import Memory

    with Memory.open("/tmp/lgm-demo") as mem:
        graph = builder.compile(checkpointer=mem.checkpointer, store=mem.store)
        finding = mem.store_research_finding("Momentum decays after earnings", source="technical", confidence=0.8)
        strategy = mem.store_strategy("earnings-momentum", "Buy 20-day winners, exit before earnings",
                                      parameters={"lookback": 20}, parent_id=finding.id)
        print(mem.lineage(strategy.id).ancestor_ids)          # [finding.id]

``Memory.open`` resolves the [`Settings`][langgraph_memory.Settings]
once and builds everything from them: the store (and its catalog, which
holds the lineage), the checkpointer, and on first use the archiver. All of
them share that one settings object and the store's one
`LineageStore` (``mem.lineage_store``), as
do the graph nodes that write through ``mem.store``.

``Memory`` is composed of parts that each take their collaborators
explicitly. The typed research calls are its own, reached one way
(``mem.store_backtest(...)``): each is declared once, in
[`ResearchAPI`][langgraph_memory.ResearchAPI] (six collections:
``store_backtest``, ``query_hypotheses``, ``store_lesson``, ...) or
[`ProceduralAPI`][langgraph_memory.ProceduralAPI] (the seventh, tool and
workflow definitions), which ``Memory`` inherits; the CLI and the MCP
tools are derived from those declarations (`langgraph_memory.research.calls`).
The other parts are attributes:

* ``mem.lifecycle`` (`ItemLifecycle`):
  ``retire``, ``supersede``, ``reinstate``, ``status`` and the hard ``delete``;
* ``mem.sessions`` ([`SessionMemory`][langgraph_memory.SessionMemory]):
  conversation turns by session, promoted to episodic memory in
  ``("episodes", *scope)`` when a session ends
  ([`Memory.schedule_session_cleanup()`][langgraph_memory.Memory.schedule_session_cleanup]
  runs its cleanup on the archive job's scheduler);
* [`Memory.stats()`][langgraph_memory.Memory.stats] (`langgraph_memory.lifecycle.stats`) and
  [`Memory.cleanup_decayed()`][langgraph_memory.Memory.cleanup_decayed] (`langgraph_memory.lifecycle.decay`);
* [`Memory.lineage()`][langgraph_memory.Memory.lineage], with each item's summary and state.

Every call has an async twin with an ``a`` prefix and the same arguments.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, TypeVar

from langchain_core.embeddings import Embeddings
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import IndexConfig, TTLConfig

from langgraph_memory._infra.closing import close_all, unwind
from langgraph_memory.config import DEFAULT_K, Settings
from langgraph_memory.errors import ConfigError, InvalidArgumentError
from langgraph_memory.ingest import DOCUMENTS_NAMESPACE, ChunkHit, IngestConfig, Ingestor, IngestProgress, IngestReport
from langgraph_memory.ingest import recall as _recall_chunks
from langgraph_memory.lifecycle.decay import DecayReport, cleanup_decayed
from langgraph_memory.lifecycle.items import ItemLifecycle
from langgraph_memory.lifecycle.states import value_status as _value_status
from langgraph_memory.lifecycle.stats import MemoryStats, collect_stats
from langgraph_memory.research.api import (
    HYPOTHESIS_STATUSES,
    STRATEGY_STATUSES,
    Hit,
    ResearchAPI,
    StrategyVersion,
)
from langgraph_memory.research.as_of import ResearchAsOf
from langgraph_memory.research.collections import COLLECTIONS, collection_by_name
from langgraph_memory.research.lineage import ItemRef, Lineage, LineageStore, NodeSummary, build_lineage
from langgraph_memory.research.procedures import ProceduralAPI
from langgraph_memory.research.typed import TypedItems, athread
from langgraph_memory.search.ranking import HybridRanking, TemporalConfig
from langgraph_memory.sessions import (
    EPISODES_NAMESPACE,
    SESSIONS_COLLECTION,
    THREADS_COLLECTION,
    SessionConfig,
    SessionMemory,
)
from langgraph_memory.sessions.promotion import session_summaries
from langgraph_memory.store import ChromaStore

if TYPE_CHECKING:
    from langgraph_memory.archive import ArchivedItem

__all__ = ["Memory", "Hit", "StrategyVersion", "STRATEGY_STATUSES", "HYPOTHESIS_STATUSES"]

logger = logging.getLogger(__name__)

#: Memory.open's default ranking (HybridRanking is frozen: one instance serves every store).
_HYBRID = HybridRanking()

P = ParamSpec("P")
T = TypeVar("T")

_SUMMARY_CHARS = 100


def _embedding_dims(emb: Embeddings) -> int:
    for attr in ("dims", "size", "dimensions"):
        value = getattr(emb, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    return len(emb.embed_query("dimension probe"))


def _scope(scope: str | Sequence[str] | None) -> tuple[str, ...]:
    if scope is None:
        return ()
    labels = (scope,) if isinstance(scope, str) else tuple(scope)
    for label in labels:
        if not isinstance(label, str) or not label or "." in label:
            raise ConfigError(f"scope labels must be non-empty strings without dots, got {label!r}")
    return labels


def _clip(text: str, n: int = _SUMMARY_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _summary(label: str, value: dict[str, Any]) -> str:
    spec = COLLECTIONS.get(label)
    text = str(value.get(spec.embed_field, "")) if spec and spec.embed_field else ""
    if label == "strategies":
        head = f"{value.get('name') or 'strategy'} v{value.get('version') or '?'} [{value.get('status', 'draft')}]"
        return _clip(f"{head}: {text}")
    if label == "lessons":
        state = "resolved" if value.get("resolved") else "open"
        return _clip(f"[{state}] {text}")
    if label == "hypotheses":
        return _clip(f"[{value.get('status', 'proposed')}] {text}")
    if label == "backtests":
        head = f"v{value.get('strategy_version') or '?'} backtest"
        if value.get("passed") is not None:
            head += " [passed]" if value["passed"] else " [failed]"
        stats = [
            f"{name} {fmt.format(value[field])}"
            for field, name, fmt in (
                ("sharpe", "Sharpe", "{:.2f}"),
                ("max_drawdown", "max DD", "{:.0%}"),
                ("cagr", "CAGR", "{:.1%}"),
                ("trades", "trades", "{}"),
            )
            if isinstance(value.get(field), (int, float))
        ]
        return _clip(f"{head}: {', '.join(stats)}" if stats else f"{head}: {text}")
    if label == "tools":
        return _clip(
            f"{value.get('name') or 'tool'} v{value.get('version') or '?'} [{value.get('kind', 'tool')}]: {text}"
        )
    if not text:
        text = str(value.get("content") or value.get("text") or value)
    return _clip(text)


def _forward(part: str, fn: Callable[Concatenate[Any, P], T]) -> Callable[Concatenate[Memory, P], T]:
    """A Memory method calling the same-named method of its part ``part`` (signature and docstring kept)."""
    name = fn.__name__
    if asyncio.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def acall(self: Memory, *args: P.args, **kwargs: P.kwargs) -> Any:
            return await getattr(getattr(self, part), name)(*args, **kwargs)

        return acall  # type: ignore[return-value]

    @functools.wraps(fn)
    def call(self: Memory, *args: P.args, **kwargs: P.kwargs) -> T:
        return getattr(getattr(self, part), name)(*args, **kwargs)  # type: ignore[no-any-return]

    return call


def _lifecycle(fn: Callable[Concatenate[Any, P], T]) -> Callable[Concatenate[Memory, P], T]:
    return _forward("lifecycle", fn)


def _check_parent(data_dir: Path, create_parents: bool) -> None:
    # "./no/such/deep/dir" silently made an empty memory at a typo's path: one missing level is created
    # (a new memory), more is refused, as the CLI refuses a missing data directory.
    if create_parents or data_dir.exists() or data_dir.parent.is_dir():
        return
    missing = data_dir.parent
    while not missing.parent.exists() and missing.parent != missing:
        missing = missing.parent
    raise ConfigError(
        f"cannot create the data directory {data_dir}: {missing} does not exist (a typo?). "
        "Create the folders first, or pass create_parents=True."
    )


class Memory(ResearchAPI, ProceduralAPI):
    """One data directory: the store, the checkpointer, lineage, the typed research API, stats and cleanup.

    The typed research calls ([ResearchAPI][langgraph_memory.ResearchAPI] and
    [ProceduralAPI][langgraph_memory.ProceduralAPI]) are Memory's own, reached one way:
    ``mem.store_backtest(...)``, declared once, in the research API.

    Build it with `open()`. Closing it (or leaving its ``with`` block)
    flushes and closes the store and the checkpointer if Memory opened them,
    the archiver and any archival scheduler.

    Examples:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> import tempfile
        >>> with Memory.open(tempfile.mkdtemp(), embeddings=DeterministicFakeEmbedding(size=16)) as mem:
        ...     f = mem.store_research_finding("Volatility clusters", source="technical", confidence=0.9)
        ...     s = mem.store_strategy("vol-breakout", "Trade breakouts after calm weeks", parent_id=f.id)
        ...     mem.lineage(s.id).ancestor_ids == [f.id], mem.settings is mem.store.settings
        (True, True)
    """

    def __init__(
        self,
        store: ChromaStore,
        checkpointer: BaseCheckpointSaver,
        *,
        scope: str | Sequence[str] | None = None,
        owns_store: bool = True,
        owns_checkpointer: bool = True,
        session_config: SessionConfig | None = None,
    ) -> None:
        self.store = store
        self.checkpointer = checkpointer
        #: The settings every part was built from (the store's: one object per data directory).
        self.settings: Settings = store.settings
        #: The one lineage of the data directory (in the store's catalog), shared with nodes and the archiver.
        self.lineage_store: LineageStore = store.lineage
        self.scope = _scope(scope)
        self._owns_store = owns_store
        self._owns_checkpointer = owns_checkpointer
        self._closed = False
        typed = TypedItems(store, self.lineage_store, scope=self.scope, guard=self._check_open, archived=self.archived)
        # The research calls are Memory's own (ResearchAPI and ProceduralAPI share these typed items).
        ResearchAPI.__init__(self, typed)
        #: Retire, supersede, reinstate and hard-delete items.
        self.lifecycle = ItemLifecycle(store, self.lineage_store, self._existing_archiver, guard=self._check_open)
        #: Session memory (short-term), promoted to episodic memory in ``("episodes", *scope)``.
        self.sessions = SessionMemory(
            store, session_config, namespace=(*EPISODES_NAMESPACE, *self.scope), guard=self._check_open
        )
        # The archive's lookup by key; found on first use (see _archived_values) unless set.
        self._archive_lookup: Callable[[list[str]], dict[str, dict[str, Any]]] | None = None
        self._archiver: Any | None = None
        # The APScheduler scheduler of the archive and session jobs (one for both), once one is scheduled.
        self._scheduler: Any | None = None

    # ----------------------------------------------------------- lifecycle

    @classmethod
    def open(
        cls,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        embeddings: Embeddings | Literal[False] | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        ranking: HybridRanking | None = _HYBRID,
        store: ChromaStore | None = None,
        checkpointer: BaseCheckpointSaver | None = None,
        chroma_client: Any | None = None,
        scope: str | Sequence[str] | None = None,
        lock_timeout: float | None = None,
        session_config: SessionConfig | None = None,
        create_parents: bool = False,
        index_process: bool | None = None,
        local_dir: str | os.PathLike[str] | None = None,
        read_only: bool = False,
        create: bool = True,
    ) -> Memory:
        """Open (creating if needed) a data directory.

        Args:
            data_dir: argument > ``LANGGRAPH_MEMORY_URL`` > ``LANGGRAPH_MEMORY_DIR`` >
                config file > ``./memory``. A ``postgresql://`` address opens the
                memory on that server (threads go to its ``PostgresCheckpointer``).
                A missing data directory is created when the folder above it
                exists; a deeper missing path (often a typo) is a `ConfigError`
                unless ``create_parents=True``.
            embeddings: a LangChain ``Embeddings`` (short for ``index={"dims": ..., "embed": embeddings}``).
                ``False``: no model at all, for tools that only read, list or
                delete (searches by meaning then raise; nothing is ever embedded).
            index: the store's ``IndexConfig``, as ``ChromaStore`` takes it
                (``dims``, ``embed``, ``fields``). Default: the offline
                all-MiniLM-L6-v2 model (loaded on first use).
            ttl: the store's ``TTLConfig`` (minutes), as ``ChromaStore`` takes it.
            ranking: how the store ranks searches with a query: hybrid keyword +
                vector search with temporal weighting (``HybridRanking()``, the
                default here) or ``None`` for plain cosine, as ``InMemoryStore``
                (with ``store=``, the store keeps its own).
            store: an open ``ChromaStore`` to use instead of opening one (its
                data directory and settings are used; it is not closed by
                `close()`). Leave the store options above unset.
            checkpointer: any LangGraph checkpointer; default our
                ``SqliteCheckpointer`` at ``<data_dir>/checkpoints.sqlite``.
                A checkpointer passed in is not closed by `close()`.
            chroma_client: any ``chromadb`` client (e.g. an ``HttpClient``);
                default an embedded client in ``<data_dir>/chroma``.
            scope: extra namespace labels for the typed API (e.g. a desk id):
                findings go to ``("research", *scope)``.
            lock_timeout: seconds to wait for another process's write
                (argument > ``LANGGRAPH_MEMORY_LOCK_TIMEOUT`` > config file > 30).
            session_config: session boundaries, promotion and cleanup for
                ``mem.sessions`` (``SessionConfig``'s defaults).
            index_process: run the embedded Chroma index in a child process
                (default: yes, unless ``LANGGRAPH_MEMORY_INDEX_PROCESS=0``), so its
                writes never hold this process's GIL (see ``ChromaStore``'s ``index_process``).
            local_dir: with a ``postgresql://`` address, the folder for what
                stays local (embedding cache, archive files); argument >
                ``LANGGRAPH_MEMORY_LOCAL_DIR`` > config file > a folder under
                ``~/.cache/langgraph-memory`` named after the server.
            read_only: open an existing memory for reading only: searches,
                listings, gets, lineage and stats work, with no access tracking,
                no index repair and nothing written to the directory (it may
                be a folder this process cannot write, or a copy of a live
                one); every write raises
                [`ReadOnlyError`][langgraph_memory.errors.ReadOnlyError].
                Searches are scored exactly from the catalog's vectors
                (Chroma is not opened).
            create: ``False`` opens only a folder that already holds a
                memory, to read or change what is there: any other folder
                (missing, empty, or holding other files) raises
                [`MemoryNotFoundError`][langgraph_memory.errors.MemoryNotFoundError]
                and is left untouched.

        Raises:
            ConfigError: ``data_dir`` is empty, or a path that cannot hold a folder (``/proc/...``).
            ReadOnlyError: the data directory cannot be written (permissions, a read-only mount).
            MemoryNotFoundError: ``create=False`` or ``read_only=True`` on a folder that holds no memory.
            MissingExtraError: a ``postgresql://`` address without the ``postgres`` extra installed.

        Examples:
            >>> mem = Memory.open("./memory", ttl={"default_ttl": 60 * 24 * 30})
            >>> graph = builder.compile(checkpointer=mem.checkpointer, store=mem.store)  # a line of a graph definition (builder is the caller's StateGraph)  # doctest: +SKIP
        """
        if data_dir is not None and not isinstance(data_dir, (str, os.PathLike)):
            raise InvalidArgumentError(
                f"data_dir must be a path (a str or pathlib.Path), got {type(data_dir).__name__} {data_dir!r}"
            )
        if embeddings is not None and index is not None:
            raise ConfigError("pass embeddings= or index=, not both (index={'dims': ..., 'embed': embeddings})")
        owns_store = store is None
        if store is not None:
            given = {
                "data_dir": data_dir,
                "embeddings": embeddings,
                "index": index,
                "ttl": ttl,
                "chroma_client": chroma_client,
                "lock_timeout": lock_timeout,
                "local_dir": local_dir,
            }
            clash = [k for k, v in given.items() if v is not None]
            if clash:
                raise ConfigError(f"store= is already configured; drop {', '.join(clash)} (set them on the store)")
            if not isinstance(store, ChromaStore):
                raise ConfigError(f"store must be a ChromaStore (Memory needs its catalog), got {type(store).__name__}")
        opened: list[Callable[[], None]] = []
        try:
            if store is None:
                settings = Settings.resolve(data_dir, lock_timeout=lock_timeout, local_dir=local_dir)
                if settings.catalog_url is None and not read_only and create:
                    _check_parent(settings.data_dir, create_parents)
                if embeddings is False:
                    index = None
                elif embeddings is not None:
                    index = {"dims": _embedding_dims(embeddings), "embed": embeddings}
                elif index is None:
                    index = ChromaStore.default_index(settings.embedding_model)
                store = ChromaStore(
                    chroma_client,
                    index=index,
                    ttl=ttl,
                    settings=settings,
                    ranking=ranking,
                    index_process=index_process,
                    read_only=read_only,
                    create=create,
                )
                opened.append(store.close)
            owns_checkpointer = checkpointer is None
            if checkpointer is None:
                from langgraph_memory.checkpoint.factory import open_checkpointer

                # On a server, threads go beside the memory, so every worker resumes every thread.
                checkpointer = open_checkpointer(store.settings, read_only=store.read_only)
        except BaseException:
            unwind(opened, "Memory.open")
            raise
        logger.debug("opened memory at %s", store.settings.where)
        return cls(
            store,
            checkpointer,
            scope=scope,
            owns_store=owns_store,
            owns_checkpointer=owns_checkpointer,
            session_config=session_config,
        )

    @property
    def read_only(self) -> bool:
        """Whether this memory was opened with ``read_only=True`` (every write raises ``ReadOnlyError``)."""
        return self.store.read_only

    @property
    def data_dir(self) -> os.PathLike[str]:
        return self.settings.data_dir

    def _check_open(self) -> None:
        if self._closed:
            raise ConfigError("this Memory is closed; open it again with Memory.open()")

    def close(self) -> None:
        """Stop the scheduler, close the archiver and what Memory opened (store, checkpointer). Idempotent."""
        if self._closed:
            return
        self._closed = True
        steps: list[Callable[[], Any]] = []
        if self._scheduler is not None:
            steps.append(self._stop_scheduler)
        if self._archiver is not None and hasattr(self._archiver, "close"):
            steps.append(self._archiver.close)
        if self._owns_store:
            steps.append(self.store.close)
        if self._owns_checkpointer and hasattr(self.checkpointer, "close"):
            steps.append(self.checkpointer.close)
        close_all(steps)

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Memory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)

    def as_of(self, at: datetime | float) -> ResearchAsOf:
        """The typed research calls as they would have answered at ``at`` (naive datetimes are UTC); read-only.

        ``mem.as_of(t).store`` is ``mem.store.as_of(t)``; see `langgraph_memory.research.as_of`.

        Examples:
            >>> from datetime import datetime, UTC
            >>> mem.as_of(datetime(2000, 1, 1, tzinfo=UTC)).get_relevant_lessons("stops", min_relevance=None)
            []
        """
        self._check_open()
        return ResearchAsOf(self.store.as_of(at), self.lineage_store, scope=self.scope, guard=self._check_open)

    def compile(self, builder: Any, **kwargs: Any) -> Any:
        """``builder.compile(checkpointer=self.checkpointer, store=self.store, **kwargs)``."""
        kwargs.setdefault("checkpointer", self.checkpointer)
        kwargs.setdefault("store", self.store)
        return builder.compile(**kwargs)

    # -------------------------------------------------------------- archive

    @property
    def archiver(self) -> Any:
        """The archiver of this data directory (``langgraph_memory.archive``), built on first use.

        Read-only (``read_only=True``) it lists, searches, reads and verifies
        the archive; runs, restores and forgetting raise ``ReadOnlyError``.
        """
        if self._archiver is None:
            from langgraph_memory import archive as _archive

            self._archiver = _archive.Archiver(
                self.store,
                checkpointer=self.checkpointer,
                archive_dir=self.settings.archive_dir,
                lineage=self.lineage_store,
            )
        return self._archiver

    def _existing_archiver(self) -> Any | None:
        """The archiver if this data directory has an archive (no manifest is created just to look)."""
        if self._archiver is None and not self.settings.manifest_path.exists():
            return None
        return self.archiver

    def schedule_archival(
        self,
        *,
        cron: str | None = None,
        interval: float | timedelta | None = None,
        **kwargs: Any,
    ) -> Any:
        """Start the archive job in the background (see ``archive.schedule_archival``); stopped by `close()`.

        Give ``cron`` (a crontab expression) or ``interval`` (seconds or a
        ``timedelta``); neither means 03:00 daily. Other keywords are those
        of ``archive.schedule_archival`` (``dry_run``, ``timezone``...).

        It shares one scheduler with [`schedule_session_cleanup()`][langgraph_memory.schedule_session_cleanup].

        Examples:
            >>> job = mem.schedule_archival(cron="0 3 * * *")  # starts a scheduler job  # doctest: +SKIP
        """
        from langgraph_memory import archive as _archive

        return self._on_scheduler(
            _archive.schedule_archival, self.archiver, {"cron": cron, "interval": interval, **kwargs}
        )

    def schedule_session_cleanup(self, **kwargs: Any) -> Any:
        """Run ``mem.sessions.cleanup()`` every 15 minutes (``cleanup_interval_minutes``) beside the archive job.

        See ``archive.schedule_session_cleanup``; both jobs run on one
        scheduler, stopped by `close()`.

        Examples:
            >>> job = mem.schedule_session_cleanup()  # starts a scheduler job  # doctest: +SKIP
        """
        from langgraph_memory import archive as _archive

        self._check_open()
        return self._on_scheduler(_archive.schedule_session_cleanup, self.sessions, kwargs)

    def _on_scheduler(self, schedule: Callable[..., Any], target: Any, kwargs: dict[str, Any]) -> Any:
        if self._scheduler is not None and "scheduler" not in kwargs:
            kwargs = {**kwargs, "scheduler": self._scheduler, "start": True}
        job = schedule(target, **kwargs)
        self._scheduler = job._scheduler
        return job

    def _stop_scheduler(self) -> None:
        sched = self._scheduler
        self._scheduler = None
        shutdown = getattr(sched, "shutdown", None)
        if callable(shutdown) and getattr(sched, "running", True):
            shutdown(wait=False)

    def archived(self, key: str, *, namespace: Sequence[str] | None = None) -> ArchivedItem | None:
        """The archived copy of ``key`` (in ``namespace``, if given; the latest one), or None.

        Only the archive is looked at: an item back in live memory may still have an old archived copy.
        A data directory without an archive gets none made by looking.

        Examples:
            >>> mem.archived(lesson_id).explain()  # needs an open Memory (mem) whose archive holds the lesson  # doctest: +SKIP
        """
        self._check_open()
        archiver = self._existing_archiver()
        if archiver is None:
            return None
        return archiver.find(key, namespace=tuple(namespace) if namespace is not None else None)  # type: ignore[no-any-return]

    def _archived_values(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Values of archived items by key, via the archive's lookup when there is one."""
        if not ids:
            return {}
        lookup = self._archive_lookup
        if lookup is None:
            archiver = self._existing_archiver()
            if archiver is None:
                return {}
            lookup = functools.partial(_latest_archived, archiver)
        try:
            return lookup(ids)
        except Exception:  # the lineage view must not fail because the archive did
            logger.warning("archive lookup failed for %d ids", len(ids), exc_info=True)
            return {}

    # -------------------------------------------------------------- lineage

    def link(self, child_id: str, parent_id: str, relation: str = "derived_from") -> None:
        """Link two stored items after the fact (refuses cycles with ``LineageCycleError``).

        The child, and everything derived from it, now rests on the parent's data too: a later evidence
        end of the parent moves theirs forward (see the data cut-off in ``docs/research.md``).
        """
        self._check_open()
        self.lineage_store.link(child_id, parent_id, relation)

    def lineage(self, item_id: str) -> Lineage:
        """Ancestors (root first) and the descendant tree of ``item_id``, with summaries and states.

        Items that left the store are looked up in the archive when it offers
        a lookup, else shown by id with status ``"unknown"``; retired and
        superseded items are shown with ``lifecycle`` set (``node.label``
        adds it to the summary).

        Examples:
            >>> lin = mem.lineage(strategy.id)
            >>> [(a.collection, a.label) for a in lin.ancestors]
            [('research_findings', 'Carry unwinds in vol spikes'), ('hypotheses', '[proposed] Momentum persists in trending regimes')]
        """
        self._check_open()
        return build_lineage(self.lineage_store, item_id, self._summarize)

    def _summarize(self, refs: list[ItemRef]) -> dict[str, NodeSummary]:
        nodes = [r for r in refs if r.collection in (SESSIONS_COLLECTION, THREADS_COLLECTION)]
        refs = [r for r in refs if r.collection not in (SESSIONS_COLLECTION, THREADS_COLLECTION)]
        with self.store.catalog.read() as conn:
            out = session_summaries(conn, nodes)
        for ref in nodes:
            if ref.collection == THREADS_COLLECTION:
                thread = ref.name or ref.id
                out[ref.id] = NodeSummary(f"thread {thread}", "live" if self._thread_exists(thread) else "unknown")
        out.update(self._summarize_items(refs))
        return out

    def _thread_exists(self, thread_id: str) -> bool:
        """Whether the checkpointer still holds ``thread_id`` (the archive job may have pruned it)."""
        try:
            return (
                self.checkpointer.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}) is not None
            )
        except Exception:  # noqa: BLE001 - the lineage view must not fail because the checkpointer did
            logger.debug("could not look thread %s up", thread_id, exc_info=True)
            return False

    def _summarize_items(self, refs: list[ItemRef]) -> dict[str, NodeSummary]:
        standing = self.store.items.statuses([(r.namespace, r.id) for r in refs])
        live = self.typed.live_items(refs)
        out: dict[str, NodeSummary] = {}
        missing: list[ItemRef] = []
        for ref in refs:
            it = live.get(ref.id)
            if it is None:
                missing.append(ref)
                continue
            out[ref.id] = NodeSummary(
                _summary(_label(ref.collection), it.value),
                "live",
                standing.get((ref.namespace, ref.id)),
                _value_status(it.value),
            )
        archived = self._archived_values([r.id for r in missing])
        for ref in missing:
            value = archived.get(ref.id)
            st = standing.get((ref.namespace, ref.id))
            if value is not None:
                out[ref.id] = NodeSummary(_summary(_label(ref.collection), value), "archived", st, _value_status(value))
            else:
                out[ref.id] = NodeSummary(f"{ref.id} (archived/unknown)", "unknown", st)
        return out

    # --------------------------------------------------------------- ingest

    def ingest(
        self,
        path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        *,
        episode_id: str | None = None,
        namespace: Sequence[str] = DOCUMENTS_NAMESPACE,
        chunker: Literal["contextual", "fixed", "conversation"] | None = None,
        config: IngestConfig | None = None,
        errors: Literal["raise", "report"] = "raise",
        progress: Callable[[IngestProgress], None] | None = None,
    ) -> IngestReport:
        """Read files and folders (recursively) into memory: chunked, embedded, deduplicated by content.

        Reads ``.md .txt .py .csv .pdf .yaml .yml``. Each file is hashed
        (SHA-256) and copied to ``raw/{hash}{ext}``; bytes already ingested
        into ``namespace`` are skipped without a model call, whatever their
        name, across restarts and processes. Chunks (the contextual
        chunker by default, or ``chunker="fixed"``: a plain window) and
        their parent records are stored in ``namespace`` of the general
        collection; see `langgraph_memory.ingest.pipeline` for the keys
        and fields. ``chunker="conversation"`` reads each file as a chat
        transcript (``.txt``/``.md`` lines ``Speaker: text``, ``.json``,
        ``.jsonl``) and stores each message as a conversation turn, ranked
        with its neighbours (`langgraph_memory.ingest.transcripts`).

        Raises (for a path given by name; inside a folder such files are
        reported and skipped): ``MissingPathError``, ``SymlinkLoopError``,
        ``UnreadableFileError``, ``UnsupportedFileTypeError``,
        ``EmptyFileError``, and while reading (unless ``errors="report"``)
        ``FileEncodingError`` (with the byte offset) or ``DamagedDocumentError``.
        Nothing of a file that fails is left stored.

        Examples:
            >>> report = mem.ingest("papers/", episode_id="DS-25-002")  # needs files to ingest  # doctest: +SKIP
            >>> report.counts()  # needs files to ingest  # doctest: +SKIP
            {'ingested': 3, 'duplicate': 0, 'busy': 0, 'skipped': 1, 'failed': 0}
        """
        self._check_open()
        cfg = config or IngestConfig()
        if chunker is not None:
            cfg = cfg.replace(chunker=chunker)
        ingestor = Ingestor(self.store, raw_dir=self.settings.raw_dir, config=cfg)
        return ingestor.ingest(path, namespace=namespace, episode_id=episode_id, errors=errors, progress=progress)

    def recall(
        self,
        query: str,
        *,
        k: int = DEFAULT_K,
        namespace: Sequence[str] = DOCUMENTS_NAMESPACE,
        include_parents: bool = False,
        filter: dict[str, Any] | None = None,
    ) -> list[ChunkHit]:
        """The ``k`` ingested chunks nearest ``query``, with score and source; ``include_parents`` adds context.

        Examples:
            >>> hit = mem.recall("signup success metric", k=3, include_parents=True)[0]  # needs ingested documents  # doctest: +SKIP
            >>> hit.source_uri, hit.score, hit.full_context[:60]  # needs ingested documents  # doctest: +SKIP
        """
        self._check_open()
        return _recall_chunks(
            self.store, query, k=k, namespace=namespace, include_parents=include_parents, filter=filter
        )

    aingest = athread(ingest)
    arecall = athread(recall)

    # ------------------------------------------- retire, supersede, delete
    # (mem.retire is mem.lifecycle.retire; see ItemLifecycle for each call)

    retire = _lifecycle(ItemLifecycle.retire)
    supersede = _lifecycle(ItemLifecycle.supersede)
    reinstate = _lifecycle(ItemLifecycle.reinstate)
    status = _lifecycle(ItemLifecycle.status)
    history = _lifecycle(ItemLifecycle.history)
    delete = _lifecycle(ItemLifecycle.delete)

    # ------------------------------------------------------ stats, cleanup

    def stats(self) -> MemoryStats:
        """Per collection: items, items with vectors, bytes, oldest and newest, archived, retired, superseded;
        plus namespaces, lineage links, sessions, the checkpointer's threads and the files' sizes.

        Examples:
            >>> s = mem.stats()
            >>> s.collections["backtest_results"].items, s.threads
            (1, 0)
        """
        self._check_open()
        self.store.flush_access()
        return collect_stats(self.store, archiver=self._existing_archiver(), checkpointer=self.checkpointer)

    def cleanup_decayed(
        self,
        *,
        dry_run: bool = True,
        config: TemporalConfig | None = None,
        now: float | None = None,
        collections: Iterable[str] | None = None,
    ) -> DecayReport:
        """Find the memories whose decayed weight fell under the forgetting threshold; retire them unless ``dry_run``.

        See `langgraph_memory.lifecycle.decay`: a dry run (the default) reports,
        a real run retires (nothing is deleted; the next archive run moves
        them to the archive).

        Examples:
            >>> report = mem.cleanup_decayed()                   # what would go
            >>> mem.cleanup_decayed(dry_run=False).retired  # a young memory: nothing has decayed yet
            0
        """
        self._check_open()
        return cleanup_decayed(self.store.items, config=config, now=now, collections=collections, dry_run=dry_run)

    # ------------------------------------------- async twins of Memory's own

    alink = athread(link)
    alineage = athread(lineage)
    aretire = athread(retire)
    asupersede = athread(supersede)
    areinstate = athread(reinstate)
    astatus = athread(status)
    adelete = athread(delete)
    astats = athread(stats)
    acleanup_decayed = athread(cleanup_decayed)


def _label(collection: str) -> str:
    """The namespace label of a collection (its name for the general one)."""
    return collection_by_name(collection).label or collection


def _latest_archived(archiver: Any, ids: list[str]) -> dict[str, dict[str, Any]]:
    """The value of the latest archived copy of each key in ``ids``."""
    found: dict[str, Any] = {}
    for a in archiver.get_archived(keys=ids):
        if a.key not in found or a.archived_at > found[a.key].archived_at:
            found[a.key] = a
    return {k: a.value for k, a in found.items()}
