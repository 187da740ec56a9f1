"""The typed research API: the semantic and episodic research collections as typed calls, each with an async twin.

Findings, hypotheses, strategies (versions, status), backtests, lessons and
market regimes are written, searched and read back as typed models (tool
definitions, the procedural memory, are in `_procedural_api`). They are
ordinary store items in the typed namespaces (``("research",)``,
``("hypotheses",)``, ``("strategies",)``, ``("backtests",)``,
``("lessons",)``, ``("regimes",)``, plus the optional ``scope`` labels),
keyed by UUID. Each record is written with
its lineage in one catalog transaction; a research iteration chains

    finding -> hypothesis -(tests)-> strategy -(backtest_of)-> backtest -(learned_from)-> lesson

Every call has an async twin with an ``a`` prefix and the same arguments.
``Memory`` builds a [`ResearchAPI`][langgraph_memory.ResearchAPI] and offers all its calls directly:

    from langgraph_memory.memory import Memory

    with Memory.open("/tmp/lgm-demo") as mem:
        h = mem.store_hypothesis("Momentum persists in trending regimes", confidence=0.6)
        s = mem.store_strategy("mom", "60-day momentum", hypothesis_id=h.id)
        b = mem.store_backtest(s.id, sharpe=1.1, max_drawdown=0.18, period_start="2015-01-01")
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Unpack, get_args

from langgraph_memory.catalog.evidence import CutoffArgs
from langgraph_memory.config import DEFAULT_K, MIN_RELEVANCE
from langgraph_memory.errors import ValidationError
from langgraph_memory.research.collections import (
    BacktestCosts,
    BacktestResult,
    EquityCurve,
    Hypothesis,
    HypothesisStatus,
    Lesson,
    LessonSeverity,
    MarketRegime,
    RegimeType,
    ResearchFinding,
    Strategy,
    StrategyStatus,
)
from langgraph_memory.research.collections import parameter_hash as _hash_parameters
from langgraph_memory.research.lineage import ItemRef
from langgraph_memory.research.procedures import TOOL_VERSION_PREFIX
from langgraph_memory.research.typed import Hit, ParentIds, TypedItems, athread, now_iso, parent_list
from langgraph_memory.research.units import (
    CAGR,
    CONFIDENCE,
    DRAWDOWN,
    ITERATION,
    RELEVANCE,
    SHARPE,
    SORTINO,
    TRADES,
    TREND_STRENGTH,
    TURNOVER,
    VOLATILITY,
    WIN_RATE,
    check_units,
)

__all__ = ["STRATEGY_STATUSES", "HYPOTHESIS_STATUSES", "Hit", "ResearchAPI", "StrategyVersion"]

STRATEGY_STATUSES: tuple[str, ...] = get_args(StrategyStatus)
HYPOTHESIS_STATUSES: tuple[str, ...] = get_args(HypothesisStatus)


@dataclass(frozen=True)
class StrategyVersion:
    """One version of a named strategy; ``record`` is None once it left the store.

    Its three states have three names, as in lineage: `status` (the
    strategy's own: draft, tested, approved), `storage` (``"live"`` in the
    store, else ``"unknown"``: archived or deleted) and ``lifecycle``
    (``"active"``, ``"superseded"``, ``"retired"``).
    """

    name: str
    version: int
    id: str
    created_at: datetime
    record: Strategy | None
    lifecycle: Literal["active", "retired", "superseded"] = "active"
    superseded_by: str | None = None

    @property
    def status(self) -> str | None:
        """The strategy's own status (draft, tested, approved); None once it left the store."""
        return self.record.status if self.record is not None else None

    @property
    def storage(self) -> Literal["live", "unknown"]:
        """``"live"`` while the version is in the store; ``"unknown"`` once archived or deleted."""
        return "live" if self.record is not None else "unknown"


def _check_choice(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise ValidationError(f"{what} must be one of {', '.join(allowed)}, got {value!r}")


def _floats(**values: Any) -> dict[str, Any]:
    """Numbers as floats (the schemas are strict: 1 is not a Sharpe ratio of 1.0), None left out."""
    out = {}
    for name, v in values.items():
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValidationError(f"{name} must be a number, got {v!r}")
        out[name] = float(v)
    return out


def _given(**conditions: Any) -> dict[str, Any]:
    """The store filter of a typed query: each condition asked for (None: not asked for)."""
    return {name: cond for name, cond in conditions.items() if cond is not None}


def _bound(op: str, value: float | None) -> dict[str, float] | None:
    """A numeric bound (``{"$gte": 1.0}``), or None when there is none."""
    return None if value is None else {op: float(value)}


def _backtest_summary(name: str | None, version: int | None, value: dict[str, Any]) -> str:
    """The embedded text of a backtest: what ran, when, on what, and how it did."""
    head = f"{name or 'strategy'} v{version or '?'} backtest"
    if value.get("period_start") or value.get("period_end"):
        head += f" {(value.get('period_start') or '?')[:10]} to {(value.get('period_end') or '?')[:10]}"
    if value.get("universe"):
        head += f" on {', '.join(value['universe'][:5])}"
    parts = []
    for field, label, fmt in (
        ("sharpe", "Sharpe", "{:.2f}"),
        ("sortino", "Sortino", "{:.2f}"),
        ("max_drawdown", "max drawdown", "{:.0%}"),
        ("cagr", "CAGR", "{:.1%}"),
        ("win_rate", "win rate", "{:.0%}"),
        ("trades", "trades", "{}"),
    ):
        if value.get(field) is not None:
            parts.append(f"{label} {fmt.format(value[field])}")
    if value.get("passed") is not None:
        parts.append("passed" if value["passed"] else "failed")
    return head + (": " + ", ".join(parts) if parts else "")


class ResearchAPI:
    """Typed calls for six research collections, over `TypedItems`.

    Examples:
        >>> from langgraph_memory.memory import Memory
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> import tempfile
        >>> with Memory.open(tempfile.mkdtemp(), embeddings=DeterministicFakeEmbedding(size=16)) as mem:
        ...     h = mem.store_hypothesis("Trends persist", confidence=0.6)
        ...     s = mem.store_strategy("trend", "60-day momentum", hypothesis_id=h.id)
        ...     b = mem.store_backtest(s.id, sharpe=1.2, max_drawdown=0.15)
        ...     (b.strategy_name, b.strategy_version), mem.lineage(b.id).ancestor_ids == [h.id, s.id]
        (('trend', 1), True)
    """

    def __init__(self, typed: TypedItems) -> None:
        self.typed = typed

    def namespace(self, label: str) -> tuple[str, ...]:
        """The namespace the typed API uses for ``label`` (e.g. ``("lessons", *scope)``)."""
        return self.typed.namespace(label)

    def get(self, item_id: str) -> Any:
        """The typed record stored under ``item_id`` (any typed collection).

        Raises:
            ArchivedError: the item left the store for the archive (the message says how to restore it).
            NotFoundError: the id is unknown, or the item was deleted.
        """
        return self.typed.get(item_id)

    # ------------------------------------------------------------ research

    @check_units
    def store_research_finding(
        self,
        content: str,
        *,
        source: str | None = None,
        topic: str | None = None,
        confidence: Annotated[float | None, CONFIDENCE] = None,
        data_start: str | None = None,
        data_end: str | None = None,
        parent_id: ParentIds = None,
        session_id: str | None = None,
        agent_id: str | None = None,
        tags: Sequence[str] = (),
        **extra: Any,
    ) -> ResearchFinding:
        """Store a research finding; ``content`` is embedded. Returns it with its new ``id``.

        ``data_start`` and ``data_end`` (ISO dates) are the market dates of the data behind it; ``data_end``
        is its evidence end, which a search's ``data_cutoff`` compares with.

        Examples:
            >>> f = mem.store_research_finding("Carry unwinds in vol spikes", source="macro", confidence=0.7,
            ...                                data_start="2010-01-04", data_end="2018-12-31")
        """
        parents = parent_list(parent_id)
        stamp = now_iso()
        value = {
            **extra,
            "content": content,
            "source": source,
            "topic": topic,
            **_floats(confidence=confidence),
            "data_start": data_start,
            "data_end": data_end,
            "parent_id": parents[0] if parents else None,
            "session_id": session_id,
            "agent_id": agent_id,
            "tags": list(tags),
            "created_at": stamp,
            "updated_at": stamp,
        }
        return self.typed.put("research", value, [(p, "derived_from") for p in parents])  # type: ignore[return-value]

    @check_units
    def query_research_findings(
        self,
        query: str,
        *,
        k: int = DEFAULT_K,
        source: str | None = None,
        min_confidence: Annotated[float, CONFIDENCE] = 0.0,
        min_relevance: Annotated[float | None, RELEVANCE] = MIN_RELEVANCE,
        include_retired: bool = False,
        **cutoff: Unpack[CutoffArgs],
    ) -> list[Hit[ResearchFinding]]:
        """Findings most similar to ``query``, best first.

        ``source`` keeps one source only; ``min_confidence`` drops findings
        below it (and those without a confidence); ``min_relevance`` drops
        results scoring lower (default 0.3, a relevance of 30 %; None keeps them all; see
        `langgraph_memory.search.ranking` for what a score means); retired and superseded findings
        come back only with ``include_retired`` (their ``Hit.status`` says which).
        """
        flt = _given(source=source, confidence=_bound("$gte", min_confidence or None))
        return self.typed.search(
            "research", query, k=k, filter=flt, min_relevance=min_relevance, include_retired=include_retired, **cutoff
        )

    # ---------------------------------------------------------- hypotheses

    @check_units
    def store_hypothesis(
        self,
        statement: str,
        *,
        rationale: str | None = None,
        confidence: Annotated[float | None, CONFIDENCE] = None,
        status: HypothesisStatus = "proposed",
        evidence_ids: Sequence[str] = (),
        parent_id: ParentIds = None,
        session_id: str | None = None,
        tags: Sequence[str] = (),
        **extra: Any,
    ) -> Hypothesis:
        """State a hypothesis (``proposed``, ``testing``, ``confirmed`` or ``rejected``); ``statement`` is embedded.

        ``parent_id`` names what it was derived from (findings, say: lineage
        edges ``derived_from``); ``evidence_ids`` name items that bear on it,
        recorded in the value only. Strategies that test it name it as
        ``hypothesis_id``.

        Examples:
            >>> h = mem.store_hypothesis("Momentum persists in trending regimes", confidence=0.6,
            ...                          rationale="Finding f1: trends last months", parent_id=f.id)
        """
        _check_choice(status, HYPOTHESIS_STATUSES, "hypothesis status")
        parents = parent_list(parent_id)
        stamp = now_iso()
        value = {
            **extra,
            "statement": statement,
            "rationale": rationale,
            **_floats(confidence=confidence),
            "status": status,
            "evidence_ids": list(dict.fromkeys(evidence_ids)),
            "parent_id": parents[0] if parents else None,
            "session_id": session_id,
            "tags": list(tags),
            "created_at": stamp,
            "updated_at": stamp,
        }
        return self.typed.put("hypotheses", value, [(p, "derived_from") for p in parents])  # type: ignore[return-value]

    @check_units
    def update_hypothesis(
        self,
        hypothesis_id: str,
        *,
        status: HypothesisStatus | None = None,
        confidence: Annotated[float | None, CONFIDENCE] = None,
        add_evidence: Sequence[str] = (),
        rationale: str | None = None,
    ) -> Hypothesis:
        """Move a hypothesis along (``testing``, ``confirmed``, ``rejected``), adjust confidence, add evidence.

        Examples:
            >>> mem.update_hypothesis(h.id, status="confirmed", confidence=0.8, add_evidence=[b.id]).status
            'confirmed'
        """
        changes: dict[str, Any] = {"updated_at": now_iso(), **_floats(confidence=confidence)}
        if status is not None:
            _check_choice(status, HYPOTHESIS_STATUSES, "hypothesis status")
            changes["status"] = status
        if rationale is not None:
            changes["rationale"] = rationale

        def change(value: dict[str, Any]) -> dict[str, Any]:
            if add_evidence:
                changes["evidence_ids"] = list(dict.fromkeys([*(value.get("evidence_ids") or []), *add_evidence]))
            return changes

        return self.typed.update(hypothesis_id, "hypotheses", change)  # type: ignore[return-value]

    @check_units
    def query_hypotheses(
        self,
        query: str,
        *,
        k: int = DEFAULT_K,
        status: HypothesisStatus | None = None,
        min_confidence: Annotated[float, CONFIDENCE] = 0.0,
        min_relevance: Annotated[float | None, RELEVANCE] = MIN_RELEVANCE,
        include_retired: bool = False,
        **cutoff: Unpack[CutoffArgs],
    ) -> list[Hit[Hypothesis]]:
        """Hypotheses most similar to ``query``, optionally of one ``status`` and at least ``min_confidence``."""
        if status is not None:
            _check_choice(status, HYPOTHESIS_STATUSES, "hypothesis status")
        flt = _given(status=status, confidence=_bound("$gte", min_confidence or None))
        return self.typed.search(
            "hypotheses", query, k=k, filter=flt, min_relevance=min_relevance, include_retired=include_retired, **cutoff
        )

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
        hypothesis_id: str | None = None,
        status: StrategyStatus = "draft",
        asset_class: str | None = None,
        time_horizon: str | None = None,
        tags: Sequence[str] = (),
        **extra: Any,
    ) -> Strategy:
        """Store a strategy. Storing again under the same ``name`` makes the next version.

        The version number is allocated in the catalog inside the item's
        transaction, so concurrent writers never share a number, and the
        previous version becomes a parent (relation ``previous_version``).
        ``hypothesis_id`` names the hypothesis it tests (relation ``tests``).
        ``sharpe_ratio``, ``max_drawdown`` and ``win_rate`` are copied from
        ``metrics`` so they can be filtered on.

        Examples:
            >>> s = mem.store_strategy("mom", "20-day momentum", parameters={"lookback": 20})
            >>> s.version
            1
        """
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("a strategy needs a non-empty name; versions are counted per name")
        if name.startswith(TOOL_VERSION_PREFIX):
            raise ValidationError(f"strategy names cannot start with {TOOL_VERSION_PREFIX!r} (tool versions use it)")
        _check_choice(status, STRATEGY_STATUSES, "status")
        if hypothesis_id is not None:
            self.typed.ref(hypothesis_id, "hypotheses")
        parameters = dict(parameters or {})
        metrics = dict(metrics or {})
        parents = parent_list(parent_id)
        links = [(p, "derived_from") for p in parents if p != hypothesis_id]
        if hypothesis_id is not None:
            links.insert(0, (hypothesis_id, "tests"))
        value: dict[str, Any] = {
            **extra,
            "name": name,
            "description": description,
            "code": code,
            "parameters": parameters,
            "metrics": metrics,
            "status": status,
            "hypothesis_id": hypothesis_id,
            "asset_class": asset_class or parameters.get("asset_class"),
            "time_horizon": time_horizon or parameters.get("time_horizon"),
            "parent_id": links[0][0] if links else None,
            "tags": list(tags),
        }
        for field in ("sharpe_ratio", "max_drawdown", "win_rate"):
            if isinstance(metrics.get(field), (int, float)) and not isinstance(metrics.get(field), bool):
                value[field] = float(metrics[field])
        if status == "approved":
            value["approved_at"] = now_iso()
        return self.typed.put("strategies", value, links, version_name=name)  # type: ignore[return-value]

    @check_units
    def get_similar_strategies(
        self,
        description: str,
        *,
        k: int = DEFAULT_K,
        status: StrategyStatus | None = None,
        name: str | None = None,
        min_relevance: Annotated[float | None, RELEVANCE] = MIN_RELEVANCE,
        include_retired: bool = False,
        **cutoff: Unpack[CutoffArgs],
    ) -> list[Hit[Strategy]]:
        """Strategies whose description is most similar, optionally of one ``status`` or ``name``."""
        if status is not None:
            _check_choice(status, STRATEGY_STATUSES, "status")
        flt = _given(status=status, name=name)
        return self.typed.search(
            "strategies",
            description,
            k=k,
            filter=flt,
            min_relevance=min_relevance,
            include_retired=include_retired,
            **cutoff,
        )

    def set_strategy_status(self, strategy_id: str, status: StrategyStatus) -> Strategy:
        """Move a strategy to ``status``; ``approved`` stamps ``approved_at``."""
        _check_choice(status, STRATEGY_STATUSES, "status")
        changes: dict[str, Any] = {"status": status}
        if status == "approved":
            changes["approved_at"] = now_iso()
        return self.typed.update(strategy_id, "strategies", changes)  # type: ignore[return-value]

    def approve_strategy(self, strategy_id: str) -> Strategy:
        """``set_strategy_status(strategy_id, "approved")``."""
        return self.set_strategy_status(strategy_id, "approved")

    def versions(self, name: str) -> list[StrategyVersion]:
        """Every version of the strategy ``name``, oldest first (empty if unknown)."""
        self.typed.check_open()
        lineage = self.typed.lineage
        rows = lineage.versions(name)
        refs = lineage.items(r.id for r in rows)
        # Versions are strategies: look each up in the strategy collection, where its lineage says.
        fallback = self.namespace("strategies")
        live = self.typed.live_items(
            ItemRef(r.id, "strategy_library", refs[r.id].namespace if r.id in refs else fallback) for r in rows
        )
        records = {key: Strategy.model_validate(it.value) for key, it in live.items()}
        where = {r.id: refs[r.id].namespace if r.id in refs else fallback for r in rows}
        standing = self.typed.store.items.statuses([(ns, key) for key, ns in where.items()])
        out = []
        for r in rows:
            st = standing.get((where[r.id], r.id))
            out.append(
                StrategyVersion(
                    name=r.name,
                    version=r.version,
                    id=r.id,
                    created_at=datetime.fromtimestamp(r.created_at, tz=UTC),
                    record=records.get(r.id),
                    lifecycle=st.status if st is not None else "active",
                    superseded_by=st.superseded_by if st is not None and st.status == "superseded" else None,
                )
            )
        return out

    # ----------------------------------------------------------- backtests

    @check_units
    def store_backtest(
        self,
        strategy_id: str,
        *,
        period_start: str | None = None,
        period_end: str | None = None,
        universe: Sequence[str] = (),
        sharpe: Annotated[float | None, SHARPE] = None,
        sortino: Annotated[float | None, SORTINO] = None,
        max_drawdown: Annotated[float | None, DRAWDOWN] = None,
        cagr: Annotated[float | None, CAGR] = None,
        volatility: Annotated[float | None, VOLATILITY] = None,
        trades: Annotated[int | None, TRADES] = None,
        win_rate: Annotated[float | None, WIN_RATE] = None,
        turnover: Annotated[float | None, TURNOVER] = None,
        costs: BacktestCosts | dict[str, float] | None = None,
        parameters: dict[str, Any] | None = None,
        equity_curve: Sequence[float] | EquityCurve | None = None,
        passed: bool | None = None,
        summary: str | None = None,
        parent_id: ParentIds = None,
        tags: Sequence[str] = (),
        **extra: Any,
    ) -> BacktestResult:
        """Store one backtest of the strategy ``strategy_id`` (relation ``backtest_of``).

        The strategy's name and version are filled in, and its parameters
        when ``parameters`` is not given; ``parameter_hash`` identifies the
        parameter set. ``equity_curve`` may be the full curve (summarised to
        its statistics and `EQUITY_CURVE_POINTS`
        points) or an `EquityCurve`.
        ``summary``, the embedded text, is written from the numbers unless given.

        Examples:
            >>> b = mem.store_backtest(s.id, period_start="2015-01-02", period_end="2024-12-31",
            ...                        universe=["SPY"], sharpe=1.1, sortino=1.6, max_drawdown=0.18,
            ...                        cagr=0.09, trades=42, win_rate=0.55, turnover=4.2,
            ...                        costs={"commission_bps": 1, "slippage_bps": 2}, equity_curve=curve)
        """
        ref = self.typed.ref(strategy_id, "strategies")
        if parameters is None:
            live = self.typed.live_items([ref]).get(strategy_id)
            parameters = dict(live.value.get("parameters") or {}) if live is not None else {}
        if isinstance(equity_curve, EquityCurve):
            curve: dict[str, Any] | None = equity_curve.model_dump()
        elif equity_curve is not None:
            try:
                curve = EquityCurve.from_values(equity_curve).model_dump()
            except (TypeError, ValueError) as exc:
                raise ValidationError(f"equity_curve: {exc}") from None
        else:
            curve = None
        if isinstance(costs, BacktestCosts):
            costs = costs.model_dump(exclude_none=True)
        elif costs is not None:
            costs = _floats(**costs)
        parents = [(p, "derived_from") for p in parent_list(parent_id) if p != strategy_id]
        value: dict[str, Any] = {
            **extra,
            "strategy_id": strategy_id,
            "strategy_name": ref.name,
            "strategy_version": ref.version,
            "period_start": period_start,
            "period_end": period_end,
            "universe": list(universe),
            **_floats(
                sharpe=sharpe,
                sortino=sortino,
                max_drawdown=max_drawdown,
                cagr=cagr,
                volatility=volatility,
                win_rate=win_rate,
                turnover=turnover,
            ),
            "trades": trades,
            "costs": costs,
            "parameters": parameters,
            "parameter_hash": _hash_parameters(parameters),
            "equity_curve": curve,
            "passed": passed,
            "parent_id": strategy_id,
            "tags": list(tags),
        }
        value["summary"] = summary or _backtest_summary(ref.name, ref.version, value)
        return self.typed.put(  # type: ignore[return-value]
            "backtests", value, [(strategy_id, "backtest_of"), *parents]
        )

    @check_units
    def query_backtests(
        self,
        query: str | None = None,
        *,
        k: int = DEFAULT_K,
        strategy_id: str | None = None,
        strategy_name: str | None = None,
        min_sharpe: Annotated[float | None, SHARPE] = None,
        max_drawdown: Annotated[float | None, DRAWDOWN] = None,
        passed: bool | None = None,
        parameter_hash: str | None = None,
        min_relevance: Annotated[float | None, RELEVANCE] = MIN_RELEVANCE,
        include_retired: bool = False,
        **cutoff: Unpack[CutoffArgs],
    ) -> list[Hit[BacktestResult]]:
        """Backtests most similar to ``query`` (newest first without one), filtered by strategy and numbers.

        ``max_drawdown`` keeps backtests whose drawdown is at most that;
        ``parameter_hash`` finds runs of one parameter set.

        Examples:
            >>> [h.record.sharpe for h in mem.query_backtests(strategy_id=s.id, min_sharpe=1.0)]
            [1.3]
        """
        flt = _given(
            strategy_id=strategy_id,
            strategy_name=strategy_name,
            sharpe=_bound("$gte", min_sharpe),
            max_drawdown=_bound("$lte", max_drawdown),
            passed=None if passed is None else bool(passed),
            parameter_hash=parameter_hash,
        )
        return self.typed.search(
            "backtests",
            query or None,
            k=k,
            filter=flt,
            min_relevance=min_relevance,
            include_retired=include_retired,
            **cutoff,
        )

    # -------------------------------------------------------------- lessons

    @check_units
    def store_lesson(
        self,
        lesson: str,
        *,
        strategy_id: str | None = None,
        backtest_id: str | None = None,
        iteration: Annotated[int | None, ITERATION] = None,
        failure_type: str | None = None,
        feedback: dict[str, Any] | None = None,
        severity: LessonSeverity = "major",
        parent_id: ParentIds = None,
        improvement_applied: str | None = None,
        **extra: Any,
    ) -> Lesson:
        """Store a lesson, linked to the backtest it was learnt from (``learned_from``) or the strategy (``produced``).

        With ``backtest_id`` the lesson hangs under the backtest (whose
        strategy fills ``strategy_id`` when not given), so lineage reads
        hypothesis -> strategy -> backtest -> lesson.

        Examples:
            >>> lesson = mem.store_lesson("Lookback too short: whipsaw", backtest_id=b.id, iteration=1,
            ...                           failure_type="backtest", feedback={"trades": 140})
            >>> lesson.strategy_id == b.strategy_id
            True
        """
        if backtest_id is not None:
            ref = self.typed.ref(backtest_id, "backtests")
            if strategy_id is None:
                live = self.typed.live_items([ref]).get(backtest_id)
                strategy_id = live.value.get("strategy_id") if live is not None else None
            first: tuple[str, str] | None = (backtest_id, "learned_from")
        else:
            first = (strategy_id, "produced") if strategy_id is not None else None
        skip = {strategy_id, backtest_id}
        parents = [(p, "derived_from") for p in parent_list(parent_id) if p not in skip]
        if first is not None:
            parents.insert(0, first)
        value = {
            **extra,
            "lesson": lesson,
            "strategy_id": strategy_id,
            "backtest_id": backtest_id,
            "iteration": iteration,
            "failure_type": failure_type,
            "severity": severity,
            "resolved": False,
            "resolution_id": None,
            "feedback": dict(feedback or {}),
            "improvement_applied": improvement_applied,
            "parent_id": parents[0][0] if parents else None,
        }
        return self.typed.put("lessons", value, parents)  # type: ignore[return-value]

    @check_units
    def get_relevant_lessons(
        self,
        context: str,
        *,
        k: int = DEFAULT_K,
        include_resolved: bool = False,
        failure_type: str | None = None,
        min_relevance: Annotated[float | None, RELEVANCE] = MIN_RELEVANCE,
        include_retired: bool = False,
        **cutoff: Unpack[CutoffArgs],
    ) -> list[Hit[Lesson]]:
        """Lessons most relevant to ``context``: unresolved ones unless ``include_resolved``.

        ``data_cutoff`` (a ``datetime.date``), here as on every typed query, keeps only memories whose
        evidence ends on or before it: a backtest's ``period_end``, a finding's ``data_end``, a regime's
        ``end_date``, and for the rest the latest of what they derive from through lineage. Memories with
        no known evidence end are left out unless ``include_undated``.

        Examples:
            >>> from datetime import date
            >>> [len(mem.get_relevant_lessons("whipsaw", data_cutoff=date(y, 12, 31), min_relevance=None))
            ...  for y in (2023, 2024)]  # the lesson was learnt from a backtest of 2015-2024
            [0, 1]
        """
        flt = _given(resolved=None if include_resolved else False, failure_type=failure_type)
        return self.typed.search(
            "lessons", context, k=k, filter=flt, min_relevance=min_relevance, include_retired=include_retired, **cutoff
        )

    def resolve_lesson(self, lesson_id: str, resolution_id: str | None = None) -> Lesson:
        """Mark a lesson resolved; ``resolution_id`` (what resolved it) becomes its child.

        Raises:
            LineageCycleError: ``resolution_id`` is an ancestor of the lesson
                (for instance the strategy that produced it).
        """
        self.typed.ref(lesson_id, "lessons")
        if resolution_id is not None:
            self.typed.lineage.link(resolution_id, lesson_id, "resolves")
        return self.typed.update(  # type: ignore[return-value]
            lesson_id, "lessons", {"resolved": True, "resolution_id": resolution_id}
        )

    # -------------------------------------------------------------- regimes

    @check_units
    def store_market_regime(
        self,
        description: str,
        *,
        regime_type: RegimeType | None = None,
        start_date: str | None = None,
        end_date: str | None = None,
        volatility: Annotated[float | None, VOLATILITY] = None,
        trend_strength: Annotated[float | None, TREND_STRENGTH] = None,
        indicators: dict[str, Any] | None = None,
        characteristics: dict[str, Any] | None = None,
        parent_id: ParentIds = None,
        **extra: Any,
    ) -> MarketRegime:
        """Store a market regime (``bull``, ``bear``, ``sideways``, ``volatile``); ``description`` is embedded."""
        parents = parent_list(parent_id)
        value = {
            **extra,
            "description": description,
            "regime_type": regime_type,
            "start_date": start_date,
            "end_date": end_date,
            **_floats(volatility=volatility, trend_strength=trend_strength),
            "indicators": dict(indicators or {}),
            "characteristics": dict(characteristics or {}),
            "parent_id": parents[0] if parents else None,
        }
        return self.typed.put("regimes", value, [(p, "derived_from") for p in parents])  # type: ignore[return-value]

    @check_units
    def query_market_regimes(
        self,
        query: str,
        *,
        k: int = DEFAULT_K,
        regime_type: RegimeType | None = None,
        min_relevance: Annotated[float | None, RELEVANCE] = MIN_RELEVANCE,
        include_retired: bool = False,
        **cutoff: Unpack[CutoffArgs],
    ) -> list[Hit[MarketRegime]]:
        """Regimes most similar to ``query``, optionally of one ``regime_type``."""
        flt = _given(regime_type=regime_type)
        return self.typed.search(
            "regimes", query, k=k, filter=flt, min_relevance=min_relevance, include_retired=include_retired, **cutoff
        )

    # --------------------------------------------------------- async twins

    aget = athread(get)
    astore_research_finding = athread(store_research_finding)
    aquery_research_findings = athread(query_research_findings)
    astore_hypothesis = athread(store_hypothesis)
    aupdate_hypothesis = athread(update_hypothesis)
    aquery_hypotheses = athread(query_hypotheses)
    astore_strategy = athread(store_strategy)
    aget_similar_strategies = athread(get_similar_strategies)
    aset_strategy_status = athread(set_strategy_status)
    aapprove_strategy = athread(approve_strategy)
    aversions = athread(versions)
    astore_backtest = athread(store_backtest)
    aquery_backtests = athread(query_backtests)
    astore_lesson = athread(store_lesson)
    aget_relevant_lessons = athread(get_relevant_lessons)
    aresolve_lesson = athread(resolve_lesson)
    astore_market_regime = athread(store_market_regime)
    aquery_market_regimes = athread(query_market_regimes)
