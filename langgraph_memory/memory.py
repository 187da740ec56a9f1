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
``scope`` labels), keyed by UUID; their lineage lives in
``<data_dir>/lineage.sqlite`` (see :mod:`langgraph_memory.lineage`). Every
method has an async twin with an ``a`` prefix.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Generic, TypeVar

from langchain_core.embeddings import Embeddings
from langgraph.checkpoint.base import BaseCheckpointSaver
from pydantic import BaseModel

from langgraph_memory.collections import (
    COLLECTIONS,
    Lesson,
    MarketRegime,
    ResearchFinding,
    Strategy,
    collection_by_name,
)
from langgraph_memory.config import DEFAULT_K, Settings
from langgraph_memory.errors import ConfigError, NotFoundError, ValidationError
from langgraph_memory.lineage import (
    LINEAGE_FILE,
    ItemRef,
    Lineage,
    LineageStore,
    build_lineage,
)
from langgraph_memory.store import ChromaStore
from langgraph_memory.store.records import item_uid

__all__ = ["Memory", "Hit", "StrategyVersion", "STRATEGY_STATUSES"]

logger = logging.getLogger(__name__)

R = TypeVar("R", bound=BaseModel)

STRATEGY_STATUSES = ("draft", "tested", "approved", "deprecated")
_SUMMARY_CHARS = 100

# The record model of each typed collection, by namespace label.
_MODELS: dict[str, type[BaseModel]] = {
    "research": ResearchFinding,
    "strategies": Strategy,
    "lessons": Lesson,
    "regimes": MarketRegime,
}

ParentIds = str | Sequence[str] | None


@dataclass(frozen=True)
class Hit(Generic[R]):
    """One search result: the typed ``record``, its cosine ``score`` and namespace."""

    record: R
    score: float | None
    namespace: tuple[str, ...]

    @property
    def id(self) -> str:
        return str(getattr(self.record, "id", ""))


@dataclass(frozen=True)
class StrategyVersion:
    """One version of a named strategy; ``record`` is None once it left the store."""

    name: str
    version: int
    id: str
    created_at: datetime
    record: Strategy | None

    @property
    def status(self) -> str | None:
        return self.record.status if self.record is not None else None


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


def _parents(parent_id: ParentIds) -> list[str]:
    if parent_id is None:
        return []
    if isinstance(parent_id, str):
        return [parent_id]
    return [p for p in parent_id if p is not None]


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
    if not text:
        text = str(value.get("content") or value.get("text") or value)
    return _clip(text)


class Memory:
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
        archive_lookup: Callable[[list[str]], dict[str, dict[str, Any]]] | None = None,
    ) -> None:
        self.store = store
        self.checkpointer = checkpointer
        self.lineage_store = lineage
        self.settings = settings
        self.scope = _scope(scope)
        self._owns_checkpointer = owns_checkpointer
        self._archive_lookup = archive_lookup
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
            store = ChromaStore(chroma_client, index=index, data_dir=settings.data_dir, lock_timeout=lock_timeout)
            opened.append(store.close)
            lineage = LineageStore(settings.data_dir / LINEAGE_FILE, busy_timeout=settings.lock_timeout)
            opened.append(lineage.close)
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
        steps.append(self.lineage_store.close)
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
            try:
                from langgraph_memory import archive as _archive
            except ImportError as exc:
                raise ConfigError(f"the archive module is not available: {exc}") from exc
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

    # ------------------------------------------------------------- plumbing

    def namespace(self, label: str) -> tuple[str, ...]:
        """The namespace the typed API uses for ``label`` (e.g. ``("lessons", *scope)``)."""
        return (label, *self.scope)

    def _check_open(self) -> None:
        if self._closed:
            raise ConfigError("this Memory is closed; open it again with Memory.open()")

    def _put_typed(
        self,
        label: str,
        value: dict[str, Any],
        parents: list[tuple[str, str]],
        *,
        version_name: str | None = None,
    ) -> BaseModel:
        """Validate, register lineage (and version) atomically, then write the item."""
        self._check_open()
        spec = COLLECTIONS[label]
        model = _MODELS[label]
        item_id = str(uuid.uuid4())
        value = {k: v for k, v in value.items() if v is not None or k in ("parent_id",)}
        value["id"] = item_id
        value.setdefault("created_at", _now_iso())
        if version_name is not None:
            value["version"] = 1  # validated now; the real number is allocated below
        spec.validate(value)
        namespace = self.namespace(label)
        version = self.lineage_store.register(
            item_id, spec.name, namespace, parents=parents, name=version_name, version_name=version_name
        )
        if version is not None:
            value["version"] = version
        try:
            self.store.put(namespace, item_id, value)
        except BaseException:
            self.lineage_store.forget(item_id)
            raise
        return model.model_validate(value)

    def _ref(self, item_id: str, label: str | None = None) -> ItemRef:
        ref = self.lineage_store.require(item_id)
        if label is not None and ref.collection != COLLECTIONS[label].name:
            raise ValidationError(
                f"item {item_id!r} is in collection {ref.collection!r}, not {COLLECTIONS[label].name!r}"
            )
        return ref

    def _load(self, item_id: str, label: str | None = None) -> tuple[ItemRef, dict[str, Any]]:
        ref = self._ref(item_id, label)
        item = self.store.get(ref.namespace, item_id)
        if item is None:
            raise NotFoundError(
                f"item {item_id!r} is no longer in the store (archived or deleted); restore it from the archive first"
            )
        return ref, dict(item.value)

    def _search(
        self,
        label: str,
        query: str,
        *,
        k: int,
        filter: dict[str, Any] | None,
        min_relevance: float | None,
    ) -> list[Hit[Any]]:
        self._check_open()
        if k <= 0:
            return []
        model = _MODELS[label]
        results = self.store.search(self.namespace(label), query=query, filter=filter or None, limit=k)
        hits: list[Hit[Any]] = []
        for r in results:
            if min_relevance is not None and (r.score is None or r.score < min_relevance):
                continue
            hits.append(Hit(record=model.model_validate(r.value), score=r.score, namespace=tuple(r.namespace)))
        return hits

    def get(self, item_id: str) -> BaseModel:
        """The typed record stored under ``item_id`` (any typed collection).

        Raises:
            NotFoundError: the id is unknown, or the item left the store.
        """
        ref, value = self._load(item_id)
        label = collection_by_name(ref.collection).label
        model = _MODELS.get(label or "")
        if model is None:
            raise ValidationError(f"item {item_id!r} is not in a typed collection ({ref.collection!r})")
        return model.model_validate(value)

    # ------------------------------------------------------------ research

    def store_research_finding(
        self,
        content: str,
        *,
        source: str | None = None,
        topic: str | None = None,
        confidence: float | None = None,
        parent_id: ParentIds = None,
        session_id: str | None = None,
        agent_id: str | None = None,
        tags: Sequence[str] = (),
        **extra: Any,
    ) -> ResearchFinding:
        """Store a research finding; ``content`` is embedded. Returns it with its new ``id``.

        Example:
            >>> f = mem.store_research_finding("Carry unwinds in vol spikes", source="macro", confidence=0.7)  # doctest: +SKIP
        """
        parents = _parents(parent_id)
        value = {
            **extra,
            "content": content,
            "source": source,
            "topic": topic,
            "confidence": float(confidence) if confidence is not None else None,
            "parent_id": parents[0] if parents else None,
            "session_id": session_id,
            "agent_id": agent_id,
            "tags": list(tags),
        }
        value["updated_at"] = value.get("created_at") or _now_iso()
        value["created_at"] = value["updated_at"]
        return self._put_typed("research", value, [(p, "derived_from") for p in parents])  # type: ignore[return-value]

    def query_research_findings(
        self,
        query: str,
        *,
        k: int = DEFAULT_K,
        source: str | None = None,
        min_confidence: float = 0.0,
        min_relevance: float | None = None,
    ) -> list[Hit[ResearchFinding]]:
        """Findings most similar to ``query``, best first.

        ``source`` keeps one source only; ``min_confidence`` drops findings
        below it (and those without a confidence); ``min_relevance`` drops
        results whose cosine score is lower.
        """
        flt: dict[str, Any] = {}
        if source is not None:
            flt["source"] = source
        if min_confidence > 0:
            flt["confidence"] = {"$gte": float(min_confidence)}
        return self._search("research", query, k=k, filter=flt, min_relevance=min_relevance)

    # ---------------------------------------------------------- strategies

    def store_strategy(
        self,
        name: str,
        description: str,
        *,
        code: str | None = None,
        parameters: dict[str, Any] | None = None,
        metrics: dict[str, Any] | None = None,
        parent_id: ParentIds = None,
        status: str = "draft",
        asset_class: str | None = None,
        time_horizon: str | None = None,
        tags: Sequence[str] = (),
        **extra: Any,
    ) -> Strategy:
        """Store a strategy. Storing again under the same ``name`` makes the next version.

        The version number is allocated in the lineage file inside one
        transaction, so concurrent writers never share a number, and the
        previous version becomes a parent (relation ``previous_version``).
        ``sharpe_ratio``, ``max_drawdown`` and ``win_rate`` are copied from
        ``metrics`` so they can be filtered on.

        Example:
            >>> s = mem.store_strategy("mom", "20-day momentum", parameters={"lookback": 20})  # doctest: +SKIP
            >>> s.version                                                                         # doctest: +SKIP
            1
        """
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("a strategy needs a non-empty name; versions are counted per name")
        if status not in STRATEGY_STATUSES:
            raise ValidationError(f"status must be one of {', '.join(STRATEGY_STATUSES)}, got {status!r}")
        parameters = dict(parameters or {})
        metrics = {k: (float(v) if isinstance(v, float) else v) for k, v in (metrics or {}).items()}
        parents = _parents(parent_id)
        value: dict[str, Any] = {
            **extra,
            "name": name,
            "description": description,
            "code": code,
            "parameters": parameters,
            "metrics": metrics,
            "status": status,
            "asset_class": asset_class or parameters.get("asset_class"),
            "time_horizon": time_horizon or parameters.get("time_horizon"),
            "parent_id": parents[0] if parents else None,
            "tags": list(tags),
        }
        for field in ("sharpe_ratio", "max_drawdown", "win_rate"):
            if isinstance(metrics.get(field), (int, float)) and not isinstance(metrics.get(field), bool):
                value[field] = float(metrics[field])
        if status == "approved":
            value["approved_at"] = _now_iso()
        return self._put_typed(  # type: ignore[return-value]
            "strategies", value, [(p, "derived_from") for p in parents], version_name=name
        )

    def get_similar_strategies(
        self,
        description: str,
        *,
        k: int = DEFAULT_K,
        status: str | None = None,
        name: str | None = None,
        min_relevance: float | None = None,
    ) -> list[Hit[Strategy]]:
        """Strategies whose description is most similar, optionally of one ``status`` or ``name``."""
        flt: dict[str, Any] = {}
        if status is not None:
            if status not in STRATEGY_STATUSES:
                raise ValidationError(f"status must be one of {', '.join(STRATEGY_STATUSES)}, got {status!r}")
            flt["status"] = status
        if name is not None:
            flt["name"] = name
        return self._search("strategies", description, k=k, filter=flt, min_relevance=min_relevance)

    def set_strategy_status(self, strategy_id: str, status: str) -> Strategy:
        """Move a strategy to ``status``; ``approved`` stamps ``approved_at``."""
        if status not in STRATEGY_STATUSES:
            raise ValidationError(f"status must be one of {', '.join(STRATEGY_STATUSES)}, got {status!r}")
        ref, value = self._load(strategy_id, "strategies")
        value["status"] = status
        if status == "approved":
            value["approved_at"] = _now_iso()
        self.store.put(ref.namespace, strategy_id, value)
        return Strategy.model_validate(value)

    def approve_strategy(self, strategy_id: str) -> Strategy:
        """``set_strategy_status(strategy_id, "approved")``."""
        return self.set_strategy_status(strategy_id, "approved")

    def versions(self, name: str) -> list[StrategyVersion]:
        """Every version of the strategy ``name``, oldest first (empty if unknown)."""
        self._check_open()
        rows = self.lineage_store.versions(name)
        refs = self.lineage_store.items(r.id for r in rows)
        by_ns: dict[tuple[str, ...], list[str]] = {}
        for r in rows:
            ns = refs[r.id].namespace if r.id in refs else self.namespace("strategies")
            by_ns.setdefault(ns, []).append(r.id)
        records: dict[str, Strategy] = {}
        for ns, ids in by_ns.items():
            uids = {item_uid(ns, i): i for i in ids}
            for it in self.store.get_items("strategy_library", list(uids)):
                records[it.key] = Strategy.model_validate(it.value)
        return [
            StrategyVersion(
                name=r.name,
                version=r.version,
                id=r.id,
                created_at=datetime.fromtimestamp(r.created_at, tz=timezone.utc),
                record=records.get(r.id),
            )
            for r in rows
        ]

    # -------------------------------------------------------------- lessons

    def store_lesson(
        self,
        lesson: str,
        *,
        strategy_id: str | None = None,
        iteration: int | None = None,
        failure_type: str | None = None,
        feedback: dict[str, Any] | None = None,
        severity: str = "major",
        parent_id: ParentIds = None,
        improvement_applied: str | None = None,
        **extra: Any,
    ) -> Lesson:
        """Store a lesson, linked to the strategy that produced it (relation ``produced``).

        Example:
            >>> mem.store_lesson("Lookback too short: whipsaw", strategy_id=s.id, iteration=1,  # doctest: +SKIP
            ...                  failure_type="backtest", feedback={"trades": 140})
        """
        parents = [(p, "derived_from") for p in _parents(parent_id) if p != strategy_id]
        if strategy_id is not None:
            parents.insert(0, (strategy_id, "produced"))
        value = {
            **extra,
            "lesson": lesson,
            "strategy_id": strategy_id,
            "iteration": iteration,
            "failure_type": failure_type,
            "severity": severity,
            "resolved": False,
            "resolution_id": None,
            "feedback": dict(feedback or {}),
            "improvement_applied": improvement_applied,
            "parent_id": parents[0][0] if parents else None,
        }
        return self._put_typed("lessons", value, parents)  # type: ignore[return-value]

    def get_relevant_lessons(
        self,
        context: str,
        *,
        k: int = DEFAULT_K,
        include_resolved: bool = False,
        failure_type: str | None = None,
        min_relevance: float | None = None,
    ) -> list[Hit[Lesson]]:
        """Lessons most relevant to ``context``: unresolved ones unless ``include_resolved``."""
        flt: dict[str, Any] = {}
        if not include_resolved:
            flt["resolved"] = False
        if failure_type is not None:
            flt["failure_type"] = failure_type
        return self._search("lessons", context, k=k, filter=flt, min_relevance=min_relevance)

    def resolve_lesson(self, lesson_id: str, resolution_id: str | None = None) -> Lesson:
        """Mark a lesson resolved; ``resolution_id`` (what resolved it) becomes its child.

        Raises:
            LineageCycleError: ``resolution_id`` is an ancestor of the lesson
                (for instance the strategy that produced it).
        """
        ref, value = self._load(lesson_id, "lessons")
        if resolution_id is not None:
            self.lineage_store.link(resolution_id, lesson_id, "resolves")
        value["resolved"] = True
        value["resolution_id"] = resolution_id
        self.store.put(ref.namespace, lesson_id, value)
        return Lesson.model_validate(value)

    # -------------------------------------------------------------- regimes

    def store_market_regime(
        self,
        description: str,
        *,
        regime_type: str | None = None,
        start_date: str | None = None,
        end_date: str | None = None,
        volatility: float | None = None,
        trend_strength: float | None = None,
        indicators: dict[str, Any] | None = None,
        characteristics: dict[str, Any] | None = None,
        parent_id: ParentIds = None,
        **extra: Any,
    ) -> MarketRegime:
        """Store a market regime (``bull``, ``bear``, ``sideways``, ``volatile``); ``description`` is embedded."""
        parents = _parents(parent_id)
        value = {
            **extra,
            "description": description,
            "regime_type": regime_type,
            "start_date": start_date,
            "end_date": end_date,
            "volatility": float(volatility) if volatility is not None else None,
            "trend_strength": float(trend_strength) if trend_strength is not None else None,
            "indicators": dict(indicators or {}),
            "characteristics": dict(characteristics or {}),
            "parent_id": parents[0] if parents else None,
        }
        return self._put_typed("regimes", value, [(p, "derived_from") for p in parents])  # type: ignore[return-value]

    def query_market_regimes(
        self,
        query: str,
        *,
        k: int = DEFAULT_K,
        regime_type: str | None = None,
        min_relevance: float | None = None,
    ) -> list[Hit[MarketRegime]]:
        """Regimes most similar to ``query``, optionally of one ``regime_type``."""
        flt = {"regime_type": regime_type} if regime_type is not None else None
        return self._search("regimes", query, k=k, filter=flt, min_relevance=min_relevance)

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
        by_coll: dict[str, dict[str, ItemRef]] = {}
        for ref in refs:
            by_coll.setdefault(ref.collection, {})[item_uid(ref.namespace, ref.id)] = ref
        for coll, uids in by_coll.items():
            label = collection_by_name(coll).label or coll
            for it in self.store.get_items(coll, list(uids)):
                out[it.key] = (_summary(label, it.value), "live")
        missing = [r for r in refs if r.id not in out]
        archived = self._archived_values([r.id for r in missing])
        for ref in missing:
            value = archived.get(ref.id)
            if value is not None:
                label = collection_by_name(ref.collection).label or ref.collection
                out[ref.id] = (_summary(label, value), "archived")
            else:
                out[ref.id] = (f"{ref.id} (archived/unknown)", "unknown")
        return out

    # --------------------------------------------------------- async twins

    async def aget(self, item_id: str) -> BaseModel:
        return await asyncio.to_thread(self.get, item_id)

    async def astore_research_finding(self, content: str, **kwargs: Any) -> ResearchFinding:
        return await asyncio.to_thread(functools.partial(self.store_research_finding, content, **kwargs))

    async def aquery_research_findings(self, query: str, **kwargs: Any) -> list[Hit[ResearchFinding]]:
        return await asyncio.to_thread(functools.partial(self.query_research_findings, query, **kwargs))

    async def astore_strategy(self, name: str, description: str, **kwargs: Any) -> Strategy:
        return await asyncio.to_thread(functools.partial(self.store_strategy, name, description, **kwargs))

    async def aget_similar_strategies(self, description: str, **kwargs: Any) -> list[Hit[Strategy]]:
        return await asyncio.to_thread(functools.partial(self.get_similar_strategies, description, **kwargs))

    async def aset_strategy_status(self, strategy_id: str, status: str) -> Strategy:
        return await asyncio.to_thread(self.set_strategy_status, strategy_id, status)

    async def aapprove_strategy(self, strategy_id: str) -> Strategy:
        return await asyncio.to_thread(self.approve_strategy, strategy_id)

    async def aversions(self, name: str) -> list[StrategyVersion]:
        return await asyncio.to_thread(self.versions, name)

    async def astore_lesson(self, lesson: str, **kwargs: Any) -> Lesson:
        return await asyncio.to_thread(functools.partial(self.store_lesson, lesson, **kwargs))

    async def aget_relevant_lessons(self, context: str, **kwargs: Any) -> list[Hit[Lesson]]:
        return await asyncio.to_thread(functools.partial(self.get_relevant_lessons, context, **kwargs))

    async def aresolve_lesson(self, lesson_id: str, resolution_id: str | None = None) -> Lesson:
        return await asyncio.to_thread(self.resolve_lesson, lesson_id, resolution_id)

    async def astore_market_regime(self, description: str, **kwargs: Any) -> MarketRegime:
        return await asyncio.to_thread(functools.partial(self.store_market_regime, description, **kwargs))

    async def aquery_market_regimes(self, query: str, **kwargs: Any) -> list[Hit[MarketRegime]]:
        return await asyncio.to_thread(functools.partial(self.query_market_regimes, query, **kwargs))

    async def alink(self, child_id: str, parent_id: str, relation: str = "derived_from") -> None:
        await asyncio.to_thread(self.link, child_id, parent_id, relation)

    async def alineage(self, item_id: str) -> Lineage:
        return await asyncio.to_thread(self.lineage, item_id)


def _find_archive_lookup(mem: Memory) -> Callable[[list[str]], dict[str, dict[str, Any]]] | None:
    """The archive's lookup by key, when this data directory has an archive."""
    if mem._archiver is None and not (mem.settings.archive_dir / "manifest.sqlite").exists():
        return None

    def lookup(ids: list[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, Any] = {}
        for a in mem.archiver.get_archived(keys=ids):
            if a.key not in found or a.archived_at > found[a.key].archived_at:
                found[a.key] = a
        return {k: a.value for k, a in found.items()}

    return lookup
