"""The typed collections: namespace label, Chroma collection, schema, embedded field, retention.

The first label of a namespace picks the Chroma collection an item lives in:

    ("research", ...)   -> research_findings   (embeds "content")
    ("hypotheses", ...) -> hypotheses          (embeds "statement")
    ("strategies", ...) -> strategy_library    (embeds "description")
    ("backtests", ...)  -> backtest_results    (embeds "summary")
    ("lessons", ...)    -> lessons_learned     (embeds "lesson")
    ("regimes", ...)    -> market_regimes      (embeds "description")
    ("tools", ...)      -> tool_definitions    (embeds "description")
    anything else       -> memories            (embeds the store's index fields)

These are the seven research collections; a trading-research graph writes
hypothesis -> strategy -> backtest -> lesson on every iteration.

Values written to a typed collection are checked against its pydantic
schema; unknown fields are kept as they are:

    from langgraph_memory.collections import collection_for

    spec = collection_for(("research", "desk-1"))
    spec.validate({"content": "Momentum decays after earnings", "confidence": 0.8})
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from langgraph_memory.config import ARCHIVE_AFTER_DAYS, EQUITY_CURVE_POINTS, LOW_CONFIDENCE_THRESHOLD
from langgraph_memory.errors import NotFoundError, ValidationError

__all__ = [
    "CollectionSpec",
    "RetentionPolicy",
    "ResearchFinding",
    "Hypothesis",
    "HypothesisStatus",
    "Strategy",
    "StrategyStatus",
    "BacktestResult",
    "BacktestCosts",
    "EquityCurve",
    "Lesson",
    "MarketRegime",
    "ToolDefinition",
    "parameter_hash",
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


HypothesisStatus = Literal["proposed", "testing", "confirmed", "rejected"]


class Hypothesis(_Schema):
    """A testable claim about a market (collection ``hypotheses``); ``statement`` is embedded.

    It moves ``proposed`` -> ``testing`` -> ``confirmed`` or ``rejected`` as
    evidence comes in; ``evidence_ids`` name the findings and backtests that
    bear on it (any items, older or newer: they are not lineage edges).
    """

    statement: str = Field(min_length=1)
    rationale: str | None = None
    status: HypothesisStatus = "proposed"
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    evidence_ids: list[str] = Field(default_factory=list)
    id: str | None = None
    parent_id: str | None = None
    session_id: str | None = None
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
    hypothesis_id: str | None = None
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


def parameter_hash(parameters: dict[str, Any]) -> str:
    """A short, stable hash of strategy parameters (key order does not matter): finds identical runs.

    Examples:
        >>> parameter_hash({"lookback": 60, "vol_target": 0.1}) == parameter_hash({"vol_target": 0.1, "lookback": 60})
        True
    """
    canonical = json.dumps(parameters, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


class BacktestCosts(_Schema):
    """Trading costs a backtest assumed and paid."""

    commission_bps: float | None = Field(default=None, ge=0.0)
    slippage_bps: float | None = Field(default=None, ge=0.0)
    #: costs paid over the whole backtest, as a fraction of starting capital.
    total: float | None = Field(default=None, ge=0.0)


class EquityCurve(_Schema):
    """An equity curve kept small: its statistics and ``points`` evenly spaced values (start = 1.0)."""

    start: float
    end: float
    peak: float
    trough: float
    length: int = Field(ge=1)
    points: list[float] = Field(default_factory=list)

    @classmethod
    def from_values(cls, values: Sequence[float], *, points: int = EQUITY_CURVE_POINTS) -> EquityCurve:
        """Summarise a full equity curve (values are rescaled so it starts at 1.0).

        Examples:
            >>> curve = EquityCurve.from_values([100, 110, 90, 105, 120], points=3)
            >>> curve.points, curve.trough, curve.length
            ([1.0, 0.9, 1.2], 0.9, 5)
        """
        vals = [float(v) for v in values]
        if not vals or any(not math.isfinite(v) for v in vals) or vals[0] == 0:
            raise ValueError("an equity curve needs finite values and a non-zero start")
        base = vals[0]
        scaled = [v / base for v in vals]
        n = max(2, int(points))
        idx = sorted({round(i * (len(scaled) - 1) / (n - 1)) for i in range(n)}) if len(scaled) > 1 else [0]
        return cls(
            start=1.0, end=round(scaled[-1], 6), peak=round(max(scaled), 6), trough=round(min(scaled), 6),
            length=len(scaled), points=[round(scaled[i], 6) for i in idx],
        )


class BacktestResult(_Schema):
    """One backtest of one strategy version (collection ``backtest_results``); ``summary`` is embedded.

    Performance is annualised where it says so; ``max_drawdown`` is a
    positive fraction (0.18 = 18 %), ``turnover`` the annual one-way turnover
    as a multiple of capital. ``parameter_hash`` identifies the parameter set
    (`parameter_hash()`), so identical runs can be found.
    """

    summary: str = Field(min_length=1)
    strategy_id: str | None = None
    strategy_name: str | None = None
    strategy_version: int | None = Field(default=None, ge=1)
    period_start: str | None = None
    period_end: str | None = None
    universe: list[str] = Field(default_factory=list)
    sharpe: float | None = None
    sortino: float | None = None
    max_drawdown: float | None = Field(default=None, ge=0.0)
    cagr: float | None = None
    volatility: float | None = Field(default=None, ge=0.0)
    trades: int | None = Field(default=None, ge=0)
    win_rate: float | None = Field(default=None, ge=0.0, le=1.0)
    turnover: float | None = Field(default=None, ge=0.0)
    costs: BacktestCosts | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    parameter_hash: str | None = None
    equity_curve: EquityCurve | None = None
    passed: bool | None = None
    id: str | None = None
    parent_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    created_at: str | None = None

    _check_dates = field_validator("created_at")(_iso_datetime)
    _check_period = field_validator("period_start", "period_end")(_iso_date)

    @model_validator(mode="after")
    def _period_in_order(self) -> BacktestResult:
        if self.period_start and self.period_end and self.period_end[:10] < self.period_start[:10]:
            raise ValueError(f"period_end {self.period_end} is before period_start {self.period_start}")
        return self


class Lesson(_Schema):
    """A lesson learned (collection ``lessons_learned``); ``lesson`` is embedded."""

    lesson: str = Field(min_length=1)
    id: str | None = None
    parent_id: str | None = None
    strategy_id: str | None = None
    backtest_id: str | None = None
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
    """A tool or workflow definition (collection ``tool_definitions``); ``description`` is embedded.

    Procedural memory, stored as JSON: a ``tool`` has its argument
    schema in ``parameters`` (JSON Schema, as LLM tool calling takes it); a
    ``workflow`` lists its ``steps`` (each a dict, e.g. ``{"tool": ..., "args":
    {...}}``). ``definition`` holds anything else verbatim. Storing a name
    again makes the next ``version`` and supersedes the previous one.
    """

    description: str = Field(min_length=1)
    name: str | None = Field(default=None, min_length=1)
    kind: Literal["tool", "workflow"] = "tool"
    version: int | None = Field(default=None, ge=1)
    id: str | None = None
    parent_id: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    steps: list[dict[str, Any]] = Field(default_factory=list)
    definition: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    created_at: str | None = None

    _check_dates = field_validator("created_at")(_iso_datetime)


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
        """Raise [`ValidationError`][langgraph_memory.errors.ValidationError] naming the bad field."""
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
        CollectionSpec("hypotheses", "hypotheses", Hypothesis, "statement"),
        CollectionSpec("strategy_library", "strategies", Strategy, "description"),
        CollectionSpec("backtest_results", "backtests", BacktestResult, "summary"),
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
