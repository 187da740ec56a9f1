"""The typed research API that :class:`~langgraph_memory.memory.Memory` carries.

Seed 004's research records - findings, strategies with versions and status,
lessons, market regimes - written, searched and read back as typed models.
They are ordinary store items in the typed namespaces (``("research",)``,
``("strategies",)``, ``("lessons",)``, ``("regimes",)``, plus the optional
``scope`` labels), keyed by UUID; their lineage and strategy versions live in
the :class:`~langgraph_memory.lineage.LineageStore`. Every call has an async
twin with an ``a`` prefix.

:class:`ResearchAPI` is the base class of ``Memory``, which supplies the
store, the lineage file, the scope and the open/closed state; use the API
through ``Memory``::

    from langgraph_memory.memory import Memory

    with Memory.open("/tmp/lgm-demo") as mem:
        finding = mem.store_research_finding("Momentum decays after earnings", source="technical")
        hits = mem.query_research_findings("earnings momentum", k=3)
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Generic, TypeVar, get_args

from pydantic import BaseModel

from langgraph_memory.collections import (
    COLLECTIONS,
    Lesson,
    MarketRegime,
    ResearchFinding,
    Strategy,
    StrategyStatus,
    collection_by_name,
)
from langgraph_memory.config import DEFAULT_K, MIN_RELEVANCE
from langgraph_memory.errors import ConfigError, NotFoundError, ValidationError
from langgraph_memory.lineage import ItemRef, LineageStore
from langgraph_memory.ranking import keep_relevant
from langgraph_memory.store import ChromaStore
from langgraph_memory.catalog import StoredItem, item_uid

__all__ = ["STRATEGY_STATUSES", "Hit", "ResearchAPI", "StrategyVersion"]

R = TypeVar("R", bound=BaseModel)

STRATEGY_STATUSES: tuple[str, ...] = get_args(StrategyStatus)

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


def _check_status(status: str) -> None:
    if status not in STRATEGY_STATUSES:
        raise ValidationError(f"status must be one of {', '.join(STRATEGY_STATUSES)}, got {status!r}")


def _parents(parent_id: ParentIds) -> list[str]:
    if parent_id is None:
        return []
    if isinstance(parent_id, str):
        return [parent_id]
    return [p for p in parent_id if p is not None]


class ResearchAPI:
    """Typed records over the store: findings, strategies (versions, status), lessons, regimes.

    A base class, not used alone: ``Memory`` sets ``store``,
    ``lineage_store``, ``scope`` and ``_closed`` and inherits every call
    below, so ``Memory`` is the one object users hold.

    Example:
        >>> from langgraph_memory.memory import Memory
        >>> issubclass(Memory, ResearchAPI) and Memory.store_strategy is ResearchAPI.store_strategy
        True
    """

    # Set by Memory.__init__.
    store: ChromaStore
    lineage_store: LineageStore
    scope: tuple[str, ...]
    _closed: bool

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
        """Validate, then write the item with its lineage (and version) in one transaction."""
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
        lineage = self.lineage_store

        def register(conn: Any) -> dict[int, dict[str, Any]]:
            # Inside the item's own transaction: the item, its lineage and its version commit together.
            version = lineage.register_in(
                conn, item_id, spec.name, namespace, parents=parents, name=version_name, version_name=version_name
            )
            if version is None:
                return {}
            value["version"] = version
            return {0: value}

        self.store.items.put(namespace, item_id, value, before=register)
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

    def _live_items(self, refs: Iterable[ItemRef]) -> dict[str, StoredItem]:
        """The items of ``refs`` still in the store, by id (one read per collection)."""
        uids: dict[str, dict[str, None]] = {}
        for ref in refs:
            uids.setdefault(ref.collection, {})[item_uid(ref.namespace, ref.id)] = None
        return {it.key: it for coll, group in uids.items() for it in self.store.items.get_items(coll, list(group))}

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
        return [
            Hit(record=model.model_validate(r.value), score=r.score, namespace=tuple(r.namespace))
            for r in keep_relevant(results, min_relevance)
        ]

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
        min_relevance: float | None = MIN_RELEVANCE,
    ) -> list[Hit[ResearchFinding]]:
        """Findings most similar to ``query``, best first.

        ``source`` keeps one source only; ``min_confidence`` drops findings
        below it (and those without a confidence); ``min_relevance`` drops
        results scoring lower (default 0.3, seed 001's 30 %; None keeps them all;
        see :mod:`langgraph_memory.ranking` for what a score means).
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
        _check_status(status)
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
        min_relevance: float | None = MIN_RELEVANCE,
    ) -> list[Hit[Strategy]]:
        """Strategies whose description is most similar, optionally of one ``status`` or ``name``."""
        flt: dict[str, Any] = {}
        if status is not None:
            _check_status(status)
            flt["status"] = status
        if name is not None:
            flt["name"] = name
        return self._search("strategies", description, k=k, filter=flt, min_relevance=min_relevance)

    def set_strategy_status(self, strategy_id: str, status: str) -> Strategy:
        """Move a strategy to ``status``; ``approved`` stamps ``approved_at``."""
        _check_status(status)
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
        # Versions are strategies: look each up in the strategy collection, where its lineage says.
        coll, fallback = COLLECTIONS["strategies"].name, self.namespace("strategies")
        live = self._live_items(
            ItemRef(r.id, coll, refs[r.id].namespace if r.id in refs else fallback) for r in rows
        )
        records = {key: Strategy.model_validate(it.value) for key, it in live.items()}
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
        min_relevance: float | None = MIN_RELEVANCE,
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
        min_relevance: float | None = MIN_RELEVANCE,
    ) -> list[Hit[MarketRegime]]:
        """Regimes most similar to ``query``, optionally of one ``regime_type``."""
        flt = {"regime_type": regime_type} if regime_type is not None else None
        return self._search("regimes", query, k=k, filter=flt, min_relevance=min_relevance)

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
