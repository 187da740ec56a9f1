"""Memory: one data directory, handing out the store, the checkpointer and the archiver.

::

    from langgraph_memory.memory import Memory

    with Memory.open("/tmp/lgm-demo") as mem:
        graph = builder.compile(checkpointer=mem.checkpointer, store=mem.store)
        finding = mem.store_research_finding("Momentum decays after earnings", source="technical", confidence=0.8)
        strategy = mem.store_strategy("earnings-momentum", "Buy 20-day winners, exit before earnings",
                                      parameters={"lookback": 20}, parent_id=finding.id)
        print(mem.lineage(strategy.id).ancestor_ids)          # [finding.id]

Besides the LangGraph pieces, ``Memory`` carries the typed research API of
seed 004 (findings, strategies with versions, lessons, market regimes). Its
records are ordinary store items in the typed namespaces (``("research",)``,
``("strategies",)``, ``("lessons",)``, ``("regimes",)``, plus the optional
``scope`` labels), keyed by UUID; their lineage lives in the store's catalog
(``<data_dir>/catalog.sqlite``, see :mod:`langgraph_memory.lineage`), written
in the same transaction as the item. Every method has an async twin with an
``a`` prefix.

This module holds the lifecycle (open, close, compile), the archive hooks and
the lineage view; the typed research API and its result types (:class:`Hit`,
:class:`StrategyVersion`) are defined in :mod:`langgraph_memory._research_api`,
which ``Memory`` inherits from, and are re-exported here.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph_memory._research_api import (
    STRATEGY_STATUSES,
    Hit,
    ResearchAPI,
    StrategyVersion,
)
from langgraph_memory.collections import COLLECTIONS, collection_by_name
from langgraph_memory.config import Settings
from langgraph_memory.errors import ConfigError
from langgraph_memory.lineage import (
    ItemRef,
    Lineage,
    LineageStore,
    build_lineage,
)
from langgraph_memory.ranking import HybridRanking
from langgraph_memory.store import ChromaStore

__all__ = ["Memory", "Hit", "StrategyVersion", "STRATEGY_STATUSES"]

logger = logging.getLogger(__name__)

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


def _label(collection: str) -> str:
    """The namespace label of a collection (its name for the general one)."""
    return collection_by_name(collection).label or collection


def _summary(label: str, value: dict[str, Any]) -> str:
    spec = COLLECTIONS.get(label)
    text = str(value.get(spec.embed_field, "")) if spec and spec.embed_field else ""
    if label == "strategies":
        head = f"{value.get('name') or 'strategy'} v{value.get('version') or '?'} [{value.get('status', 'draft')}]"
        return _clip(f"{head}: {text}")
    if label == "lessons":
        state = "resolved" if value.get("resolved") else "open"
        return _clip(f"[{state}] {text}")
    if not text:
        text = str(value.get("content") or value.get("text") or value)
    return _clip(text)


class Memory(ResearchAPI):
    """One data directory: the store, the checkpointer, lineage, and the typed research API.

    Build it with :meth:`open`. Closing it (or leaving its ``with`` block)
    flushes and closes the store, the checkpointer if Memory opened it, the
    lineage file and any archival scheduler.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> import tempfile
        >>> with Memory.open(tempfile.mkdtemp(), embeddings=DeterministicFakeEmbedding(size=16)) as mem:
        ...     f = mem.store_research_finding("Volatility clusters", source="technical", confidence=0.9)
        ...     s = mem.store_strategy("vol-breakout", "Trade breakouts after calm weeks", parent_id=f.id)
        ...     mem.lineage(s.id).ancestor_ids == [f.id]
        True
    """

    def __init__(
        self,
        store: ChromaStore,
        checkpointer: BaseCheckpointSaver,
        lineage: LineageStore,
        *,
        settings: Settings,
        scope: str | Sequence[str] | None = None,
        owns_checkpointer: bool = True,
    ) -> None:
        self.store = store
        self.checkpointer = checkpointer
        self.lineage_store = lineage
        self.settings = settings
        self.scope = _scope(scope)
        self._owns_checkpointer = owns_checkpointer
        # The archive's lookup by key; found on first use (see _find_archive_lookup) unless set.
        self._archive_lookup: Callable[[list[str]], dict[str, dict[str, Any]]] | None = None
        self._archiver: Any | None = None
        self._scheduler: Any | None = None
        self._closed = False

    # ----------------------------------------------------------- lifecycle

    @classmethod
    def open(
        cls,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        embeddings: Embeddings | None = None,
        chroma_client: Any | None = None,
        checkpointer: BaseCheckpointSaver | None = None,
        scope: str | Sequence[str] | None = None,
        lock_timeout: float | None = None,
    ) -> Memory:
        """Open (creating if needed) a data directory.

        Args:
            data_dir: argument > ``LANGGRAPH_MEMORY_DIR`` > config file > ``./memory``.
            embeddings: a LangChain ``Embeddings``; default the offline
                all-MiniLM-L6-v2 model (loaded on first use).
            chroma_client: any ``chromadb`` client (e.g. an ``HttpClient``);
                default an embedded client in ``<data_dir>/chroma``.
            checkpointer: any LangGraph checkpointer; default our
                ``SqliteCheckpointer`` at ``<data_dir>/checkpoints.sqlite``.
                A checkpointer passed in is not closed by :meth:`close`.
            scope: extra namespace labels for the typed API (e.g. a desk id):
                findings go to ``("research", *scope)``.
            lock_timeout: seconds to wait for another process's write.

        Example:
            >>> mem = Memory.open("./memory")                       # doctest: +SKIP
            >>> graph = builder.compile(checkpointer=mem.checkpointer, store=mem.store)  # doctest: +SKIP
        """
        settings = Settings.resolve(data_dir, lock_timeout=lock_timeout)
        settings.ensure_dirs()
        if embeddings is not None:
            index: Any = {"dims": _embedding_dims(embeddings), "embed": embeddings}
        else:
            index = ChromaStore.default_index(settings.embedding_model)
        opened: list[Callable[[], None]] = []
        try:
            store = ChromaStore(chroma_client, index=index, data_dir=settings.data_dir, lock_timeout=lock_timeout,
                                ranking=HybridRanking())
            opened.append(store.close)
            lineage = store.lineage
            owns = checkpointer is None
            if checkpointer is None:
                from langgraph_memory.checkpoint import SqliteCheckpointer

                checkpointer = SqliteCheckpointer(settings.checkpoints_path, busy_timeout=settings.lock_timeout)
        except BaseException:
            for close in reversed(opened):
                try:
                    close()
                except Exception:  # pragma: no cover - best effort on a failed open
                    logger.exception("error while closing after a failed Memory.open")
            raise
        logger.debug("opened memory at %s", settings.data_dir)
        return cls(store, checkpointer, lineage, settings=settings, scope=scope, owns_checkpointer=owns)

    @property
    def data_dir(self) -> os.PathLike[str]:
        return self.settings.data_dir

    def close(self) -> None:
        """Stop the scheduler, close the store, lineage file and our checkpointer. Idempotent."""
        if self._closed:
            return
        self._closed = True
        steps: list[Callable[[], Any]] = []
        if self._scheduler is not None:
            steps.append(self._stop_scheduler)
        if self._archiver is not None and hasattr(self._archiver, "close"):
            steps.append(self._archiver.close)
        steps.append(self.store.close)
        if self._owns_checkpointer and hasattr(self.checkpointer, "close"):
            steps.append(self.checkpointer.close)  # type: ignore[attr-defined]
        errors: list[BaseException] = []
        for step in steps:
            try:
                step()
            except Exception as exc:  # close everything, then report the first failure
                errors.append(exc)
        if errors:
            raise errors[0]

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Memory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)

    def compile(self, builder: Any, **kwargs: Any) -> Any:
        """``builder.compile(checkpointer=self.checkpointer, store=self.store, **kwargs)``."""
        kwargs.setdefault("checkpointer", self.checkpointer)
        kwargs.setdefault("store", self.store)
        return builder.compile(**kwargs)

    # -------------------------------------------------------------- archive

    @property
    def archiver(self) -> Any:
        """The archiver of this data directory (``langgraph_memory.archive``), built on first use."""
        if self._archiver is None:
            from langgraph_memory import archive as _archive

            self._archiver = _archive.Archiver(
                self.store,
                checkpointer=self.checkpointer,
                archive_dir=self.settings.archive_dir,
                lineage=self.lineage_store,
            )
        return self._archiver

    def schedule_archival(self, **kwargs: Any) -> Any:
        """Start the archive job in the background (see ``archive.schedule_archival``); stopped by :meth:`close`.

        Example:
            >>> job = mem.schedule_archival(cron="0 3 * * *")     # doctest: +SKIP
        """
        from langgraph_memory import archive as _archive

        self._scheduler = _archive.schedule_archival(self.archiver, **kwargs)
        return self._scheduler

    def _stop_scheduler(self) -> None:
        job = self._scheduler
        self._scheduler = None
        # schedule_archival returns an APScheduler Job; its scheduler is job._scheduler.
        sched = getattr(job, "_scheduler", job)
        shutdown = getattr(sched, "shutdown", None)
        if callable(shutdown) and getattr(sched, "running", True):
            shutdown(wait=False)

    def _archived_values(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Values of archived items by key, via the archive's lookup when there is one."""
        if not ids:
            return {}
        lookup = self._archive_lookup
        if lookup is None:
            lookup = _find_archive_lookup(self)
        if lookup is None:
            return {}
        try:
            return lookup(ids)
        except Exception:  # the lineage view must not fail because the archive did
            logger.warning("archive lookup failed for %d ids", len(ids), exc_info=True)
            return {}

    # -------------------------------------------------------------- lineage

    def link(self, child_id: str, parent_id: str, relation: str = "derived_from") -> None:
        """Link two stored items after the fact (refuses cycles with ``LineageCycleError``)."""
        self._check_open()
        self.lineage_store.link(child_id, parent_id, relation)

    def lineage(self, item_id: str) -> Lineage:
        """Ancestors (root first) and the descendant tree of ``item_id``, with summaries.

        Items that left the store are looked up in the archive when it offers
        a lookup, else shown by id with status ``"unknown"``.

        Example:
            >>> lin = mem.lineage(strategy.id)                          # doctest: +SKIP
            >>> [(a.collection, a.summary) for a in lin.ancestors]      # doctest: +SKIP
        """
        self._check_open()
        return build_lineage(self.lineage_store, item_id, self._summarize)

    def _summarize(self, refs: list[ItemRef]) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        live = self._live_items(refs)
        for ref in refs:
            it = live.get(ref.id)
            if it is not None:
                out[ref.id] = (_summary(_label(ref.collection), it.value), "live")
        missing = [r for r in refs if r.id not in out]
        archived = self._archived_values([r.id for r in missing])
        for ref in missing:
            value = archived.get(ref.id)
            if value is not None:
                out[ref.id] = (_summary(_label(ref.collection), value), "archived")
            else:
                out[ref.id] = (f"{ref.id} (archived/unknown)", "unknown")
        return out

    # --------------------------------------------------------- async twins
    # (those of the typed research API are defined with it, in ResearchAPI)

    async def alink(self, child_id: str, parent_id: str, relation: str = "derived_from") -> None:
        await asyncio.to_thread(self.link, child_id, parent_id, relation)

    async def alineage(self, item_id: str) -> Lineage:
        return await asyncio.to_thread(self.lineage, item_id)


def _find_archive_lookup(mem: Memory) -> Callable[[list[str]], dict[str, dict[str, Any]]] | None:
    """The archive's lookup by key, when this data directory has an archive."""
    if mem._archiver is None and not mem.settings.manifest_path.exists():
        return None

    def lookup(ids: list[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, Any] = {}
        for a in mem.archiver.get_archived(keys=ids):
            if a.key not in found or a.archived_at > found[a.key].archived_at:
                found[a.key] = a
        return {k: a.value for k, a in found.items()}

    return lookup
