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

    from langgraph_memory.research.collections import collection_for

    spec = collection_for(("research", "desk-1"))
    spec.validate({"content": "Momentum decays after earnings", "confidence": 0.8})
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from langgraph_memory.config import ARCHIVE_AFTER_DAYS, EQUITY_CURVE_POINTS, LOW_CONFIDENCE_THRESHOLD
from langgraph_memory.registry import (
    GENERAL,
    CollectionRegistry,
    CollectionSpec,
    MemoryType,
    RetentionPolicy,
    writing,
)
from langgraph_memory.research.units import (
    BPS,
    CAGR,
    CONFIDENCE,
    COST_FRACTION,
    DRAWDOWN,
    ITERATION,
    SHARPE,
    SORTINO,
    TRADES,
    TREND_STRENGTH,
    TURNOVER,
    VOLATILITY,
    WIN_RATE,
    Unit,
)

__all__ = [
    "CollectionSpec",
    "RetentionPolicy",
    "ResearchFinding",
    "Hypothesis",
    "HypothesisStatus",
    "LessonSeverity",
    "RegimeType",
    "ToolKind",
    "Strategy",
    "StrategyStatus",
    "BacktestResult",
    "BacktestCosts",
    "EquityCurve",
    "Lesson",
    "MarketRegime",
    "ToolDefinition",
    "parameter_hash",
    "RESEARCH",
    "COLLECTIONS",
    "GENERAL",
    "MEMORY_TYPES",
    "memory_type_for",
    "collection_for",
    "collection_by_name",
    "preview",
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

    @field_validator("*", mode="after")
    @classmethod
    def _in_unit(cls, value: Any, info: ValidationInfo) -> Any:
        # Numbers are held to their unit's range when written; records written before a range was declared
        # must still read back, so reads (no write context) take them as stored.
        field = cls.model_fields.get(info.field_name or "")
        unit = next((m for m in field.metadata if isinstance(m, Unit)), None) if field is not None else None
        if unit is None or not writing(info.context):
            return value
        return unit.check(value, info.field_name or "value")


class ResearchFinding(_Schema):
    """A research finding (collection ``research_findings``); ``content`` is embedded.

    ``data_start`` and ``data_end`` are the market dates of the data it was drawn from; ``data_end`` is its
    evidence end (see the data cut-off in ``docs/research.md``).
    """

    content: str = Field(min_length=1)
    id: str | None = None
    parent_id: str | None = None
    source: str | None = None
    topic: str | None = None
    confidence: Annotated[float | None, CONFIDENCE] = None
    data_start: str | None = None
    data_end: str | None = None
    session_id: str | None = None
    agent_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    created_at: str | None = None
    updated_at: str | None = None

    _check_dates = field_validator("created_at", "updated_at")(_iso_datetime)
    _check_range = field_validator("data_start", "data_end")(_iso_date)

    @model_validator(mode="after")
    def _range_in_order(self) -> ResearchFinding:
        if self.data_start and self.data_end and self.data_end[:10] < self.data_start[:10]:
            raise ValueError(f"data_end {self.data_end} is before data_start {self.data_start}")
        return self


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
    confidence: Annotated[float | None, CONFIDENCE] = None
    evidence_ids: list[str] = Field(default_factory=list)
    id: str | None = None
    parent_id: str | None = None
    session_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    created_at: str | None = None
    updated_at: str | None = None

    _check_dates = field_validator("created_at", "updated_at")(_iso_datetime)


StrategyStatus = Literal["draft", "tested", "approved", "deprecated"]
LessonSeverity = Literal["minor", "major", "critical"]
RegimeType = Literal["bull", "bear", "sideways", "volatile"]
ToolKind = Literal["tool", "workflow"]


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
    sharpe_ratio: Annotated[float | None, SHARPE] = None
    max_drawdown: Annotated[float | None, DRAWDOWN] = None
    win_rate: Annotated[float | None, WIN_RATE] = None
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

    commission_bps: Annotated[float | None, BPS] = None
    slippage_bps: Annotated[float | None, BPS] = None
    total: Annotated[float | None, COST_FRACTION] = None


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
            start=1.0,
            end=round(scaled[-1], 6),
            peak=round(max(scaled), 6),
            trough=round(min(scaled), 6),
            length=len(scaled),
            points=[round(scaled[i], 6) for i in idx],
        )


class BacktestResult(_Schema):
    """One backtest of one strategy version (collection ``backtest_results``); ``summary`` is embedded.

    Every number has a unit (`langgraph_memory.research.units`): fractions
    are fractions (``max_drawdown`` 0.18 = 18 %, ``cagr`` 0.09 = 9 % a year),
    ratios are plain numbers, costs are basis points. ``parameter_hash`` identifies the parameter set
    (`parameter_hash()`), so identical runs can be found.
    """

    summary: str = Field(min_length=1)
    strategy_id: str | None = None
    strategy_name: str | None = None
    strategy_version: int | None = Field(default=None, ge=1)
    period_start: str | None = None
    period_end: str | None = None
    universe: list[str] = Field(default_factory=list)
    sharpe: Annotated[float | None, SHARPE] = None
    sortino: Annotated[float | None, SORTINO] = None
    max_drawdown: Annotated[float | None, DRAWDOWN] = None
    cagr: Annotated[float | None, CAGR] = None
    volatility: Annotated[float | None, VOLATILITY] = None
    trades: Annotated[int | None, TRADES] = None
    win_rate: Annotated[float | None, WIN_RATE] = None
    turnover: Annotated[float | None, TURNOVER] = None
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
    iteration: Annotated[int | None, ITERATION] = None
    failure_type: str | None = None
    severity: LessonSeverity = "major"
    resolved: bool = False
    resolution_id: str | None = None
    created_at: str | None = None
    feedback: dict[str, Any] = Field(default_factory=dict)
    improvement_applied: str | None = None

    _check_dates = field_validator("created_at")(_iso_datetime)


class MarketRegime(_Schema):
    """A market regime (collection ``market_regimes``); ``description`` is embedded."""

    description: str = Field(min_length=1)
    regime_type: RegimeType | None = None
    id: str | None = None
    parent_id: str | None = None
    start_date: str | None = None
    end_date: str | None = None
    volatility: Annotated[float | None, VOLATILITY] = None
    trend_strength: Annotated[float | None, TREND_STRENGTH] = None
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
    kind: ToolKind = "tool"
    version: int | None = Field(default=None, ge=1)
    id: str | None = None
    parent_id: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    steps: list[dict[str, Any]] = Field(default_factory=list)
    definition: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    created_at: str | None = None

    _check_dates = field_validator("created_at")(_iso_datetime)


RESEARCH = CollectionRegistry(
    [
        CollectionSpec(
            "research_findings",
            "research",
            ResearchFinding,
            "content",
            RetentionPolicy(ARCHIVE_AFTER_DAYS, field="confidence", below=LOW_CONFIDENCE_THRESHOLD),
            memory_type="semantic",
        ),
        # A hypothesis is a claim held until evidence confirms or rejects it (then it is updated or superseded).
        CollectionSpec("hypotheses", "hypotheses", Hypothesis, "statement", memory_type="semantic"),
        CollectionSpec("strategy_library", "strategies", Strategy, "description", memory_type="semantic"),
        # A backtest is a measurement that stays true for its strategy version and period; it leaves with them.
        CollectionSpec("backtest_results", "backtests", BacktestResult, "summary", memory_type="semantic"),
        # Lessons and regimes are things that happened: episodes, which fade.
        CollectionSpec(
            "lessons_learned", "lessons", Lesson, "lesson", RetentionPolicy(ARCHIVE_AFTER_DAYS), memory_type="episodic"
        ),
        CollectionSpec("market_regimes", "regimes", MarketRegime, "description", memory_type="episodic"),
        CollectionSpec("tool_definitions", "tools", ToolDefinition, "description", memory_type="semantic"),
    ]
)
"""The research collections: what ``ChromaStore()`` and ``Memory.open`` use unless told otherwise."""

#: The typed research collections by namespace label.
COLLECTIONS: dict[str, CollectionSpec] = dict(RESEARCH.typed)

#: The memory type of each collection by name, which sets how fast its items decay.
MEMORY_TYPES: dict[str, MemoryType] = {spec.name: spec.memory_type for spec in RESEARCH}


def collection_for(namespace: tuple[str, ...]) -> CollectionSpec:
    """The research collection that holds items of ``namespace`` (by its first label)."""
    return RESEARCH.for_namespace(namespace)


def collection_by_name(name: str) -> CollectionSpec:
    """Look a research collection up by its Chroma name or its namespace label."""
    return RESEARCH.by_name(name)


def memory_type_for(collection: str) -> MemoryType:
    """The memory type of ``collection`` (episodic for one not listed in ``MEMORY_TYPES``)."""
    return MEMORY_TYPES.get(collection, "episodic")


def preview(value: dict[str, Any], n: int = 100) -> str:
    """The text of a value for a table or a page: its prose field if it has one, else its JSON, cut to ``n``.

    Example:
        >>> preview({"lesson": "lookback   too short", "severity": "major"})
        'lookback too short'
    """
    for field in ("content", "text", "lesson", "description", *(s.embed_field for s in COLLECTIONS.values())):
        if field and isinstance(value.get(field), str):
            text = value[field]
            break
    else:
        text = json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
