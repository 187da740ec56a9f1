"""The research calls offered outside Python (MCP tools, the ``research`` CLI command), declared once.

Each call is a method of the research API; what an agent or a shell passes is derived from its signature:
the same parameters (less the ones in ``HIDDEN``; ``k`` is offered as ``limit``), the same types, Literal
choices and defaults, with the agent-facing checks of `langgraph_memory.research.validation` on text,
tags and limits. The result comes back as JSON.

```python
from langgraph_memory.research.calls import research_calls

call = {c.name: c for c in research_calls()}["store_lesson"]
assert list(call.signature.parameters)[:2] == ["lesson", "strategy_id"]
```
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from typing import Annotated, Any, Unpack

from pydantic import BaseModel, Field

from langgraph_memory.errors import InvalidArgumentError
from langgraph_memory.lifecycle.items import ItemLifecycle
from langgraph_memory.research.api import ResearchAPI
from langgraph_memory.research.collections import BacktestCosts, EquityCurve
from langgraph_memory.research.procedures import ProceduralAPI
from langgraph_memory.research.typed import Hit, ParentIds
from langgraph_memory.research.units import unit_of
from langgraph_memory.research.validation import Limit, Tags, Text, check_content, check_limit, check_tags

__all__ = [
    "CALLS",
    "HIDDEN",
    "AS_OF_CALLS",
    "AsOf",
    "DataCutoff",
    "ResearchCall",
    "research_calls",
    "hits_json",
    "history_json",
    "parse_day",
    "parse_moment",
    "plain_text",
    "relevance_percent",
]

#: The research calls offered outside Python, by the name they are offered under.
CALLS: Mapping[str, Callable[..., Any]] = {
    "store_research_finding": ResearchAPI.store_research_finding,
    "query_research_findings": ResearchAPI.query_research_findings,
    "store_hypothesis": ResearchAPI.store_hypothesis,
    "update_hypothesis": ResearchAPI.update_hypothesis,
    "query_hypotheses": ResearchAPI.query_hypotheses,
    "store_strategy": ResearchAPI.store_strategy,
    "get_similar_strategies": ResearchAPI.get_similar_strategies,
    "set_strategy_status": ResearchAPI.set_strategy_status,
    "strategy_versions": ResearchAPI.versions,
    "store_backtest": ResearchAPI.store_backtest,
    "query_backtests": ResearchAPI.query_backtests,
    "store_lesson": ResearchAPI.store_lesson,
    "get_relevant_lessons": ResearchAPI.get_relevant_lessons,
    "resolve_lesson": ResearchAPI.resolve_lesson,
    "store_market_regime": ResearchAPI.store_market_regime,
    "query_market_regimes": ResearchAPI.query_market_regimes,
    "store_tool_definition": ProceduralAPI.store_tool_definition,
    "get_tool_definition": ProceduralAPI.get_tool_definition,
    "query_tool_definitions": ProceduralAPI.query_tool_definitions,
    "get_memory_history": ItemLifecycle.history,
}

#: The calls that read, offered with an ``as_of`` moment too: they then answer from `Memory.as_of()`.
AS_OF_CALLS = frozenset(
    {
        "query_research_findings",
        "query_hypotheses",
        "get_similar_strategies",
        "query_backtests",
        "get_relevant_lessons",
        "query_market_regimes",
        "get_tool_definition",
        "query_tool_definitions",
    }
)

AsOf = Annotated[
    str | None,
    Field(
        description="read the memory as it stood at this moment: an ISO date (2026-03-03, the end of that day, "
        "UTC) or date and time (2026-03-03T14:30, UTC unless it names its offset); default now"
    ),
]

DataCutoff = Annotated[
    str | None,
    Field(
        description="recall only memories whose evidence (the market data behind them, through lineage) ends on "
        "or before this ISO date (2019-12-31); memories with no known evidence end are left out unless "
        "include_undated"
    ),
]

#: Parameters not offered: who calls is the caller's business (``session_id``, ``agent_id``), the relevance
#: threshold is the server's (``min_relevance``), and retired memories stay hidden outside Python.
HIDDEN = frozenset({"self", "session_id", "agent_id", "min_relevance", "include_retired"})

Check = Callable[[Any], Any]


def plain_text(doc: str) -> str:
    """Docstring prose as plain text for a terminal or an agent: no reST or mkdocs markup, one line.

    Examples:
        >>> plain_text("Store a lesson (``learned_from``); see [`Hit`][langgraph_memory.Hit] and `EquityCurve`.")
        'Store a lesson (learned_from); see Hit and EquityCurve.'
    """
    text = re.sub(r"\[`?([^\]`]+)`?\]\[[^\]]*\]", r"\1", doc)  # [`Name`][module.Name]: a cross-reference
    text = re.sub(r"``(.+?)``|`([^`]+)`", lambda m: m.group(1) or m.group(2), text)
    return " ".join(text.split())


def relevance_percent(score: float | None) -> float | None:
    """A score as a relevance percentage (cosine similarity times 100), as agents read it."""
    return None if score is None else round(float(score) * 100.0, 1)


def hits_json(hits: Sequence[Hit[Any]]) -> dict[str, Any]:
    """Search hits as JSON: each record with its id, namespace and relevance percentage."""
    results = [
        {
            "id": h.id,
            "relevance_score": relevance_percent(h.score),
            "namespace": list(h.namespace),
            "record": h.record.model_dump(mode="json"),
            "lifecycle": h.lifecycle,
        }
        for h in hits
    ]
    return {"results": results, "total_results": len(results)}


def parse_moment(text: str) -> datetime:
    """A moment to read memory as of: an ISO date (the end of that day) or date and time; UTC unless it says.

    A date alone means what was known by the end of that day, as "as of 3 March" does.

    Examples:
        >>> parse_moment("2026-03-03")
        datetime.datetime(2026, 3, 3, 23, 59, 59, 999999, tzinfo=datetime.timezone.utc)
        >>> parse_moment("2026-03-03T14:30Z")
        datetime.datetime(2026, 3, 3, 14, 30, tzinfo=datetime.timezone.utc)

    Raises:
        InvalidArgumentError: ``text`` is neither.
    """
    if isinstance(text, datetime):
        return text if text.tzinfo is not None else text.replace(tzinfo=UTC)
    raw = str(text).strip()
    try:
        if len(raw) == 10:
            return datetime.combine(date.fromisoformat(raw), time.max, tzinfo=UTC)
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidArgumentError(
            f"as_of must be an ISO date (2026-03-03) or date and time (2026-03-03T14:30, UTC unless it names "
            f"its offset), got {text!r}"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def parse_day(text: str | date | None) -> date | None:
    """A data cut-off from JSON or the command line: an ISO date (a ``datetime.date`` passes as it is).

    Examples:
        >>> parse_day("2019-12-31")
        datetime.date(2019, 12, 31)

    Raises:
        InvalidArgumentError: ``text`` is not an ISO date.
    """
    if text is None or isinstance(text, date):
        return text
    try:
        return date.fromisoformat(str(text).strip())
    except ValueError:
        raise InvalidArgumentError(f"data_cutoff must be an ISO date (2019-12-31), got {text!r}") from None


def _changes(older: Any, newer: Any) -> list[dict[str, Any]]:
    """What differs from ``older`` to ``newer`` (two `Version`): each field's old and new value, the
    lifecycle (retired, superseded) as the field ``lifecycle``."""
    out = [
        {"field": name, "old": older.value.get(name), "new": newer.value.get(name)}
        for name in dict.fromkeys([*older.value, *newer.value])
        if older.value.get(name) != newer.value.get(name)
    ]
    if older.status != newer.status:
        out.append({"field": "lifecycle", "old": older.status or "active", "new": newer.status or "active"})
    return out


def history_json(versions: Sequence[Any]) -> dict[str, Any]:
    """An item's versions (newest first) as JSON, each with what made it and what changed.

    ``created`` is true for a version no other version just preceded (the first, or one put again after a
    delete, TTL expiry or archive move): its ``changes`` are empty and ``made_by`` is None (the history
    records a change's thread and run with the version it ends). Otherwise ``made_by`` is the change that
    made it (``change``, ``thread_id``, ``run_id``: the LangGraph run, when it ran in one) and ``changes``
    lists each field's old and new value (``lifecycle`` for retire, supersede, restore). ``change``,
    ``thread_id`` and ``run_id`` of the version itself say what ended it.
    """
    rows = []
    for i, v in enumerate(versions):
        older = versions[i + 1] if i + 1 < len(versions) else None
        created = older is None or older.change in ("delete", "ttl", "archive")
        made_by = (
            None
            if created or older is None
            else {"change": older.change, "thread_id": older.thread_id, "run_id": older.run_id}
        )
        changes = [] if created or older is None else _changes(older, v)
        rows.append({**v.as_dict(), "created": created, "made_by": made_by, "changes": changes})
    return {"versions": rows, "total": len(rows)}


def _bare(hint: Any) -> Any:
    """``hint`` without its ``Annotated`` metadata."""
    return typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Annotated else hint


def _offered(name: str, hint: Any) -> tuple[Any, Check | None]:
    """The type one parameter is offered with, and the check its value passes.

    Text is never empty, tags follow the tag limits, and sequences are JSON arrays; everything else keeps
    the research API's own type (its Literals become enums).
    """
    if name == "tags":
        return Tags, check_tags
    if name == "namespace":  # an item's namespace, as its labels; none: where its lineage says
        return list[str] | None, lambda v: None if v is None else tuple(v)
    args = set(typing.get_args(hint))
    if hint is str:
        return Text, functools.partial(check_content, field=name)
    if hint == (str | None) and name in ("query", "summary"):
        return str | None, lambda v: None if v is None else check_content(v, field=name)
    if hint == ParentIds:
        return str | None, None
    if hint == (date | None):  # a data cut-off: JSON and the command line have no date type
        return DataCutoff, parse_day
    if typing.get_origin(hint) is collections.abc.Sequence or Sequence[str] in args:
        return list[str] | None, lambda v: () if v is None else v
    if EquityCurve in args:
        return list[float] | None, None
    if BacktestCosts in args:
        return BacktestCosts | None, None
    return hint, None


@dataclass(frozen=True)
class ResearchCall:
    """One research call as offered outside Python."""

    name: str
    method: Callable[..., Any]
    #: The parameters offered, keyword-only, with their offered types and defaults.
    signature: inspect.Signature
    #: The first paragraph of the method's docstring.
    summary: str
    checks: Mapping[str, Check] = field(default_factory=dict)
    #: offered name -> the method's parameter name
    renames: Mapping[str, str] = field(default_factory=dict)

    @property
    def takes_relevance(self) -> bool:
        return "min_relevance" in inspect.signature(self.method).parameters

    def invoke(self, memory: Any, arguments: Mapping[str, Any], *, min_relevance: float | None) -> Any:
        """Check ``arguments``, run the call on ``memory`` (a ``Memory``) and return its result as JSON.

        With ``as_of`` (the calls of `AS_OF_CALLS`) it runs on ``memory.as_of(moment)``.
        """
        args = {self.renames.get(k, k): self.checks[k](v) if k in self.checks else v for k, v in arguments.items()}
        as_of = args.pop("as_of", None)
        if as_of is not None:
            memory = memory.as_of(parse_moment(as_of))
        if self.takes_relevance:
            # A search without a query has no score to drop on.
            args["min_relevance"] = min_relevance if args.get("query", "") is not None else None
        result = getattr(memory, self.method.__name__)(**args)
        if self.name == "get_memory_history":
            return {"item_id": arguments["item_id"], **history_json(result)}
        if self.name == "strategy_versions":
            return {
                "name": arguments["name"],
                "versions": [
                    {
                        "version": v.version,
                        "id": v.id,
                        "status": v.status,
                        "storage": v.storage,
                        "lifecycle": v.lifecycle,
                        "superseded_by": v.superseded_by,
                        "created_at": v.created_at.isoformat(),
                        # Deprecated: "storage" == "live". Kept so that older clients still read it.
                        "live": v.record is not None,
                    }
                    for v in result
                ],
            }
        if isinstance(result, BaseModel):
            return result.model_dump(mode="json")
        if isinstance(result, list) and all(isinstance(h, Hit) for h in result):
            return hits_json(result)
        return result


def _declared(method: Callable[..., Any], hints: dict[str, Any]) -> list[inspect.Parameter]:
    """``method``'s parameters, with ``**kwargs: Unpack[SomeTypedDict]`` (the data cut-off's `CutoffArgs`)
    spelt out as keyword parameters: None by default where None is allowed, else False. A bare ``**extra``
    is not offered."""
    out = []
    for p in inspect.signature(method).parameters.values():
        if p.kind is not inspect.Parameter.VAR_KEYWORD:
            out.append(p)
            continue
        if typing.get_origin(hints[p.name]) is not Unpack:
            continue
        for field_name, hint in typing.get_type_hints(typing.get_args(hints[p.name])[0]).items():
            default = None if type(None) in typing.get_args(hint) else False
            hints[field_name] = hint
            out.append(inspect.Parameter(field_name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint))
    return out


def _build(name: str, method: Callable[..., Any]) -> ResearchCall:
    hints = typing.get_type_hints(method, include_extras=True)
    params: list[inspect.Parameter] = []
    checks: dict[str, Check] = {}
    renames: dict[str, str] = {}
    for p in _declared(method, hints):
        if p.name in HIDDEN:
            continue
        offered, kind = p.name, hints[p.name]
        check: Check | None
        if p.name == "k":
            offered, kind, check = "limit", Limit, check_limit
            renames["limit"] = "k"
        elif unit_of(kind) is not None:
            check = None  # offered with its unit (the schema's description and bounds); the method checks it
        else:
            kind, check = _offered(p.name, _bare(kind))
        if check is not None:
            checks[offered] = check
        # JSON has no tuples: an empty sequence is offered as nothing.
        default = None if isinstance(p.default, tuple) and not p.default else p.default
        params.append(inspect.Parameter(offered, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind))
    if name in AS_OF_CALLS:
        params.append(inspect.Parameter("as_of", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=AsOf))
    doc = inspect.getdoc(method) or name
    summary = plain_text(doc.split("\n\n", 1)[0])
    return ResearchCall(
        name, method, inspect.Signature(params, return_annotation=dict[str, Any]), summary, checks, renames
    )


@functools.cache
def research_calls() -> tuple[ResearchCall, ...]:
    """Every call of `CALLS`, derived from its declaration."""
    return tuple(_build(name, method) for name, method in CALLS.items())
