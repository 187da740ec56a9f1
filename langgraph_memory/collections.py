"""The typed collections: namespace label, Chroma collection, schema, embedded field, retention.

The first label of a namespace picks the Chroma collection an item lives in::

    ("research", ...)   -> research_findings   (embeds "content")
    ("strategies", ...) -> strategy_library    (embeds "description")
    ("lessons", ...)    -> lessons_learned     (embeds "lesson")
    ("regimes", ...)    -> market_regimes      (embeds "description")
    ("tools", ...)      -> tool_definitions    (embeds "description")
    anything else       -> memories            (embeds the store's index fields)

Values written to a typed collection are checked against its pydantic
schema (built from seed 004); unknown fields are kept as they are::

    from langgraph_memory.collections import collection_for

    spec = collection_for(("research", "desk-1"))
    spec.validate({"content": "Momentum decays after earnings", "confidence": 0.8})
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, field_validator

from langgraph_memory.config import ARCHIVE_AFTER_DAYS, LOW_CONFIDENCE_THRESHOLD
from langgraph_memory.errors import NotFoundError, ValidationError

__all__ = [
    "CollectionSpec",
    "RetentionPolicy",
    "ResearchFinding",
    "Strategy",
    "Lesson",
    "MarketRegime",
    "ToolDefinition",
    "COLLECTIONS",
    "GENERAL",
    "collection_for",
    "collection_by_name",
]


def _iso_datetime(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        datetime.fromisoformat(value)
    except ValueError as exc:
        raise ValueError(f"expected an ISO 8601 date-time string, got {value!r}") from exc
    return value


def _iso_date(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        date.fromisoformat(value[:10])
        if len(value) > 10:
            datetime.fromisoformat(value)
    except ValueError as exc:
        raise ValueError(f"expected an ISO 8601 date string, got {value!r}") from exc
    return value


class _Schema(BaseModel):
    # Strict: "0.8" is not a confidence; extra fields are the user's own and kept.
    model_config = ConfigDict(extra="allow", strict=True)


class ResearchFinding(_Schema):
    """A research finding (collection ``research_findings``); ``content`` is embedded."""

    content: str = Field(min_length=1)
    id: str | None = None
    parent_id: str | None = None
    source: str | None = None
    topic: str | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    session_id: str | None = None
    agent_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    created_at: str | None = None
    updated_at: str | None = None

    _check_dates = field_validator("created_at", "updated_at")(_iso_datetime)


StrategyStatus = Literal["draft", "tested", "approved", "deprecated"]


class Strategy(_Schema):
    """A trading strategy (collection ``strategy_library``); ``description`` is embedded."""

    description: str = Field(min_length=1)
    name: str | None = Field(default=None, min_length=1)
    id: str | None = None
    parent_id: str | None = None
    version: int | None = Field(default=None, ge=1)
    status: StrategyStatus = "draft"
    asset_class: str | None = None
    time_horizon: str | None = None
    sharpe_ratio: float | None = None
    max_drawdown: float | None = None
    win_rate: float | None = Field(default=None, ge=0.0, le=1.0)
    created_at: str | None = None
    approved_at: str | None = None
    tags: list[str] = Field(default_factory=list)
    code: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict)

    _check_dates = field_validator("created_at", "approved_at")(_iso_datetime)


class Lesson(_Schema):
    """A lesson learned (collection ``lessons_learned``); ``lesson`` is embedded."""

    lesson: str = Field(min_length=1)
    id: str | None = None
    parent_id: str | None = None
    strategy_id: str | None = None
    iteration: int | None = Field(default=None, ge=0)
    failure_type: str | None = None
    severity: Literal["minor", "major", "critical"] = "major"
    resolved: bool = False
    resolution_id: str | None = None
    created_at: str | None = None
    feedback: dict[str, Any] = Field(default_factory=dict)
    improvement_applied: str | None = None

    _check_dates = field_validator("created_at")(_iso_datetime)


class MarketRegime(_Schema):
    """A market regime (collection ``market_regimes``); ``description`` is embedded."""

    description: str = Field(min_length=1)
    regime_type: Literal["bull", "bear", "sideways", "volatile"] | None = None
    id: str | None = None
    parent_id: str | None = None
    start_date: str | None = None
    end_date: str | None = None
    volatility: float | None = Field(default=None, ge=0.0)
    trend_strength: float | None = None
    created_at: str | None = None
    indicators: dict[str, Any] = Field(default_factory=dict)
    characteristics: dict[str, Any] = Field(default_factory=dict)

    _check_dates = field_validator("start_date", "end_date")(_iso_date)


class ToolDefinition(_Schema):
    """A tool or workflow definition (collection ``tool_definitions``); ``description`` is embedded."""

    description: str = Field(min_length=1)
    name: str | None = Field(default=None, min_length=1)
    id: str | None = None
    parent_id: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class RetentionPolicy:
    """When items of a collection go to the archive.

    An item is archived once it has been inactive (neither updated nor read)
    for ``after_days``, and, when ``field`` is set, its value at ``field`` is
    below ``below`` (a missing value counts as below).
    """

    after_days: float
    field: str | None = None
    below: float | None = None

    def applies_to(self, value: dict[str, Any]) -> bool:
        """Whether the value-based part of the policy selects ``value``."""
        if self.field is None or self.below is None:
            return True
        got = value.get(self.field)
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            return True
        return got < self.below


@dataclass(frozen=True)
class CollectionSpec:
    """One Chroma collection and how the store treats it."""

    name: str
    label: str | None
    schema: type[BaseModel] | None
    embed_field: str | None
    retention: RetentionPolicy | None = None

    @property
    def typed(self) -> bool:
        return self.schema is not None

    @property
    def text_field(self) -> str:
        """The field a plain string fills (nodes, tools): the embedded field, else ``content``."""
        return self.embed_field or "content"

    def validate(self, value: dict[str, Any]) -> None:
        """Raise :class:`~langgraph_memory.errors.ValidationError` naming the bad field."""
        if self.schema is None:
            return
        try:
            self.schema.model_validate(value)
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '<value>'}: {err['msg']}" for err in exc.errors()
            )
            fields = sorted({str(err["loc"][0]) for err in exc.errors() if err["loc"]})
            raise ValidationError(
                f"invalid value for collection {self.name!r} (namespace label {self.label!r}): {problems}. "
                f"Fix the field(s) {', '.join(fields) or 'shown'} and put again."
            ) from None


GENERAL = CollectionSpec(name="memories", label=None, schema=None, embed_field=None)

COLLECTIONS: dict[str, CollectionSpec] = {
    spec.label: spec  # type: ignore[misc]
    for spec in (
        CollectionSpec(
            "research_findings",
            "research",
            ResearchFinding,
            "content",
            RetentionPolicy(ARCHIVE_AFTER_DAYS, field="confidence", below=LOW_CONFIDENCE_THRESHOLD),
        ),
        CollectionSpec("strategy_library", "strategies", Strategy, "description"),
        CollectionSpec("lessons_learned", "lessons", Lesson, "lesson", RetentionPolicy(ARCHIVE_AFTER_DAYS)),
        CollectionSpec("market_regimes", "regimes", MarketRegime, "description"),
        CollectionSpec("tool_definitions", "tools", ToolDefinition, "description"),
    )
}

_BY_NAME = {spec.name: spec for spec in (*COLLECTIONS.values(), GENERAL)}


def collection_for(namespace: tuple[str, ...]) -> CollectionSpec:
    """The collection that holds items of ``namespace`` (by its first label)."""
    if namespace and namespace[0] in COLLECTIONS:
        return COLLECTIONS[namespace[0]]
    return GENERAL


def collection_by_name(name: str) -> CollectionSpec:
    """Look a collection up by its Chroma name or its namespace label."""
    if name in _BY_NAME:
        return _BY_NAME[name]
    if name in COLLECTIONS:
        return COLLECTIONS[name]
    raise NotFoundError(
        f"no collection named {name!r}; known: {', '.join(sorted(_BY_NAME))} "
        f"(or labels {', '.join(sorted(COLLECTIONS))})"
    )
