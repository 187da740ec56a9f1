"""The tools the MCP server offers: one method of `MemoryTools` per tool, over one ``Memory``.

``store_memory`` and ``search_memory``; the typed research calls
for every collection (findings, hypotheses, strategies,
backtests, lessons, market regimes, tool and workflow definitions);
``get_memory``, ``get_lineage``, ``strategy_versions``;
``get_memory_stats``; and ``retire_memory``, ``supersede_memory`` and
``reinstate_memory`` so an agent can stop a wrong or outdated memory from
coming back in searches. There is no hard-delete tool on purpose: retiring
is reversible and keeps the memory for review, while a delete cannot be
undone, so it stays with people (``langgraph-memory delete``, dry run
first), not with an agent that a bad prompt may steer.

Arguments are checked by `langgraph_memory.validation` (the same
checks and messages as the LangChain tools) and by the typed API; a bad
argument raises a typed error before anything is written, which
`langgraph_memory.mcp_server` turns into an MCP tool error.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import Field

from langgraph_memory.collections import BacktestCosts, HypothesisStatus
from langgraph_memory.config import MAX_SEARCH_LIMIT, MAX_TAG_CHARS, MAX_TAGS, MIN_RELEVANCE
from langgraph_memory.errors import NotFoundError
from langgraph_memory.memory import Hit, Memory
from langgraph_memory.ranking import keep_relevant
from langgraph_memory.validation import check_content, check_limit, check_tags

__all__ = ["MemoryTools"]

# Argument types: the limits are advertised in each tool's JSON schema for the agent to read, and
# enforced by langgraph_memory.validation (one check, one message, for these tools and tools.py).
Limit = Annotated[
    int, Field(description=f"how many results, 1-{MAX_SEARCH_LIMIT}",
               json_schema_extra={"minimum": 1, "maximum": MAX_SEARCH_LIMIT}),
]
Tags = Annotated[
    list[str] | None,
    Field(description=f"at most {MAX_TAGS} tags of at most {MAX_TAG_CHARS} characters",
          json_schema_extra={"maxItems": MAX_TAGS}),
]
Text = Annotated[str, Field(description="the text; not empty", json_schema_extra={"minLength": 1})]
Ids = Annotated[list[str] | None, Field(description="ids of stored items")]
Namespace = Annotated[
    list[str] | None,
    Field(description="the namespace's labels, e.g. [\"memories\", \"u1\"]; only for a memory that is neither "
                      "a typed record nor in this server's namespace"),
]


def _relevance(score: float | None) -> float | None:
    """The relevance percentage: cosine similarity (1 - cosine distance) times 100."""
    return None if score is None else round(float(score) * 100.0, 1)


def _iso(value: Any) -> str | None:
    return value.isoformat() if hasattr(value, "isoformat") else value


def _hits(hits: Sequence[Hit[Any]]) -> dict[str, Any]:
    results = [
        {"id": h.id, "relevance_score": _relevance(h.score), "namespace": list(h.namespace),
         "record": h.record.model_dump(mode="json")}
        for h in hits
    ]
    return {"results": results, "total_results": len(results)}


class MemoryTools:
    """The tools the server offers, over one [`Memory`][langgraph_memory.Memory].

    Each public method is one MCP tool (registered by `build_server()`
    from `TOOLS`); they can be called directly too. Plain memories
    (``store_memory``, ``search_memory``) live under ``namespace``
    (default ``("memories",)``): searches cover it and every namespace below
    it, such as the ``("memories", "<user>")`` of the LangGraph tools.

    Examples:
        >>> tools = MemoryTools(mem)  # needs an open Memory (mem) holding the records named  # doctest: +SKIP
        >>> tools.store_memory("User prefers TypeScript", ["preference"])["success"]  # needs an open Memory (mem) holding the records named  # doctest: +SKIP
        True
    """

    #: The tools, in the order clients list them. Adding one is a method and a name here.
    TOOLS: tuple[str, ...] = (
        "store_memory", "search_memory", "get_memory",
        "store_research_finding", "query_research_findings",
        "store_hypothesis", "update_hypothesis", "query_hypotheses",
        "store_strategy", "get_similar_strategies", "set_strategy_status", "strategy_versions",
        "store_backtest", "query_backtests",
        "store_lesson", "get_relevant_lessons", "resolve_lesson",
        "store_market_regime", "query_market_regimes",
        "store_tool_definition", "get_tool_definition", "query_tool_definitions",
        "get_lineage", "get_memory_stats",
        "retire_memory", "supersede_memory", "reinstate_memory",
    )

    def __init__(self, memory: Memory, *, namespace: Sequence[str] = ("memories",),
                 min_relevance: float = MIN_RELEVANCE) -> None:
        self.memory = memory
        self.namespace = tuple(namespace)
        self.min_relevance = min_relevance

    # ------------------------------------------------------------ memories

    def store_memory(self, content: Text, tags: Tags = None) -> dict[str, Any]:
        """Store a memory (a fact, preference or note) with optional tags; returns its id."""
        content = check_content(content)
        tags = check_tags(tags)
        store = self.memory.store
        key = str(uuid.uuid4())
        # Only the text is embedded: tags in the vector would pull its relevance down.
        store.put(self.namespace, key, {"content": content, "tags": tags}, index=["content"])
        item = store.get(self.namespace, key, refresh_ttl=False)
        return {
            "memory_id": key,
            "success": True,
            "timestamp": _iso(item.created_at) if item else None,
            "embedding_dimensions": store.items.writer.dims,
        }

    def search_memory(self, query: Text, limit: Limit = 5) -> dict[str, Any]:
        """Search memories by meaning; results under 30% relevance are dropped, best first."""
        query = check_content(query, field="query")
        limit = check_limit(limit)
        found = keep_relevant(self.memory.store.search(self.namespace, query=query, limit=limit), self.min_relevance)
        results = [
            {
                "memory_id": it.key,
                "content": it.value.get("content", it.value.get("text")),
                "timestamp": _iso(it.created_at),
                "relevance_score": _relevance(it.score),
                "tags": list(it.value.get("tags") or []),
                "namespace": list(it.namespace),
            }
            for it in found
        ]
        return {"results": results, "total_results": len(results), "query_embedding_generated": True}

    def get_memory(self, memory_id: Text) -> dict[str, Any]:
        """A memory by id: a typed record (finding, hypothesis, strategy, backtest, lesson, regime, tool) or a
        plain memory; ``status`` says when it is retired or superseded (searches leave it out)."""
        memory_id = check_content(memory_id, field="memory_id")
        try:
            record = self.memory.get(memory_id)
        except NotFoundError:
            item = self.memory.store.get(self.namespace, memory_id, refresh_ttl=False)
            if item is None:
                raise
            st = self.memory.store.items.statuses([(self.namespace, memory_id)]).get((self.namespace, memory_id))
            return {"memory_id": item.key, "namespace": list(item.namespace), "value": item.value,
                    "created_at": _iso(item.created_at), "updated_at": _iso(item.updated_at),
                    "status": st.as_dict() if st is not None else None}
        st = self.memory.status(memory_id)
        return {"memory_id": memory_id, "record": record.model_dump(mode="json"),
                "status": st.as_dict() if st is not None else None}

    # ---------------------------------------------------- typed research

    def store_research_finding(
        self, content: Text, source: str | None = None, topic: str | None = None,
        confidence: float | None = None, parent_id: str | None = None, tags: Tags = None,
    ) -> dict[str, Any]:
        """Store a research finding (confidence 0-1); parent_id links it to what it came from."""
        f = self.memory.store_research_finding(
            check_content(content), source=source, topic=topic, confidence=confidence, parent_id=parent_id,
            tags=check_tags(tags),
        )
        return f.model_dump(mode="json")

    def query_research_findings(
        self, query: Text, limit: Limit = 5, source: str | None = None, min_confidence: float = 0.0
    ) -> dict[str, Any]:
        """Findings most similar to the query, optionally of one source and above a confidence."""
        return _hits(self.memory.query_research_findings(
            check_content(query, field="query"), k=check_limit(limit), source=source,
            min_confidence=min_confidence, min_relevance=self.min_relevance,
        ))

    def store_hypothesis(
        self, statement: Text, rationale: str | None = None, confidence: float | None = None,
        status: HypothesisStatus = "proposed", evidence_ids: Ids = None, parent_id: str | None = None,
        tags: Tags = None,
    ) -> dict[str, Any]:
        """State a testable hypothesis (confidence 0-1); parent_id names the finding it came from,
        evidence_ids the items that bear on it. Strategies that test it name it as hypothesis_id."""
        return self.memory.store_hypothesis(
            check_content(statement, field="statement"), rationale=rationale, confidence=confidence, status=status,
            evidence_ids=evidence_ids or (), parent_id=parent_id, tags=check_tags(tags),
        ).model_dump(mode="json")

    def update_hypothesis(
        self, hypothesis_id: Text, status: HypothesisStatus | None = None, confidence: float | None = None,
        add_evidence: Ids = None, rationale: str | None = None,
    ) -> dict[str, Any]:
        """Move a hypothesis along (testing, confirmed, rejected), adjust its confidence, add evidence ids."""
        return self.memory.update_hypothesis(
            check_content(hypothesis_id, field="hypothesis_id"), status=status, confidence=confidence,
            add_evidence=add_evidence or (), rationale=rationale,
        ).model_dump(mode="json")

    def query_hypotheses(
        self, query: Text, limit: Limit = 5, status: HypothesisStatus | None = None, min_confidence: float = 0.0
    ) -> dict[str, Any]:
        """Hypotheses most similar to the query, optionally of one status and above a confidence."""
        return _hits(self.memory.query_hypotheses(
            check_content(query, field="query"), k=check_limit(limit), status=status, min_confidence=min_confidence,
            min_relevance=self.min_relevance,
        ))

    def store_strategy(
        self, name: Text, description: Text, code: str | None = None, parameters: dict[str, Any] | None = None,
        metrics: dict[str, Any] | None = None, parent_id: str | None = None,
        status: Literal["draft", "tested", "approved", "deprecated"] = "draft",
    ) -> dict[str, Any]:
        """Store a strategy; storing the same name again makes its next version."""
        s = self.memory.store_strategy(
            check_content(name, field="name"), check_content(description, field="description"), code=code,
            parameters=parameters, metrics=metrics, parent_id=parent_id, status=status,
        )
        return s.model_dump(mode="json")

    def get_similar_strategies(
        self, description: Text, limit: Limit = 5,
        status: Literal["draft", "tested", "approved", "deprecated"] | None = None,
    ) -> dict[str, Any]:
        """Strategies whose description is most similar, optionally of one status."""
        return _hits(self.memory.get_similar_strategies(
            check_content(description, field="description"), k=check_limit(limit), status=status,
            min_relevance=self.min_relevance,
        ))

    def set_strategy_status(
        self, strategy_id: Text, status: Literal["draft", "tested", "approved", "deprecated"]
    ) -> dict[str, Any]:
        """Move a strategy to a status; approved stamps approved_at."""
        return self.memory.set_strategy_status(check_content(strategy_id, field="strategy_id"), status).model_dump(
            mode="json"
        )

    def strategy_versions(self, name: Text) -> dict[str, Any]:
        """Every version of the named strategy, oldest first."""
        versions = self.memory.versions(check_content(name, field="name"))
        return {
            "name": name,
            "versions": [
                {"version": v.version, "id": v.id, "status": v.status, "created_at": v.created_at.isoformat(),
                 "live": v.record is not None}
                for v in versions
            ],
        }

    def store_backtest(
        self, strategy_id: Text, period_start: str | None = None, period_end: str | None = None,
        universe: list[str] | None = None, sharpe: float | None = None, sortino: float | None = None,
        max_drawdown: float | None = None, cagr: float | None = None, volatility: float | None = None,
        trades: int | None = None, win_rate: float | None = None, turnover: float | None = None,
        costs: BacktestCosts | None = None, parameters: dict[str, Any] | None = None,
        equity_curve: list[float] | None = None, passed: bool | None = None, summary: str | None = None,
        parent_id: str | None = None, tags: Tags = None,
    ) -> dict[str, Any]:
        """Store one backtest of a strategy (dates ISO 8601; max_drawdown a positive fraction, 0.18 = 18%;
        win_rate 0-1). The strategy's name, version and parameters are filled in; a full equity_curve is
        summarised; summary (the searchable text) is written from the numbers unless given."""
        return self.memory.store_backtest(
            check_content(strategy_id, field="strategy_id"), period_start=period_start, period_end=period_end,
            universe=universe or (), sharpe=sharpe, sortino=sortino, max_drawdown=max_drawdown, cagr=cagr,
            volatility=volatility, trades=trades, win_rate=win_rate, turnover=turnover, costs=costs,
            parameters=parameters, equity_curve=equity_curve, passed=passed,
            summary=check_content(summary, field="summary") if summary is not None else None,
            parent_id=parent_id, tags=check_tags(tags),
        ).model_dump(mode="json")

    def query_backtests(
        self, query: str | None = None, limit: Limit = 5, strategy_id: str | None = None,
        strategy_name: str | None = None, min_sharpe: float | None = None, max_drawdown: float | None = None,
        passed: bool | None = None, parameter_hash: str | None = None,
    ) -> dict[str, Any]:
        """Backtests most similar to the query (newest first without one), filtered by strategy and numbers:
        max_drawdown keeps those whose drawdown is at most that, parameter_hash finds runs of one parameter set."""
        if query is not None:
            query = check_content(query, field="query")
        return _hits(self.memory.query_backtests(
            query, k=check_limit(limit), strategy_id=strategy_id, strategy_name=strategy_name, min_sharpe=min_sharpe,
            max_drawdown=max_drawdown, passed=passed, parameter_hash=parameter_hash,
            min_relevance=self.min_relevance if query is not None else None,  # no query, no score to drop on
        ))

    def store_lesson(
        self, lesson: Text, strategy_id: str | None = None, iteration: int | None = None,
        failure_type: str | None = None, severity: Literal["minor", "major", "critical"] = "major",
        feedback: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Store a lesson learned, linked to the strategy that produced it."""
        return self.memory.store_lesson(
            check_content(lesson, field="lesson"), strategy_id=strategy_id, iteration=iteration,
            failure_type=failure_type, severity=severity, feedback=feedback,
        ).model_dump(mode="json")

    def get_relevant_lessons(self, context: Text, limit: Limit = 5, include_resolved: bool = False) -> dict[str, Any]:
        """Lessons most relevant to the context: unresolved ones unless include_resolved."""
        return _hits(self.memory.get_relevant_lessons(
            check_content(context, field="context"), k=check_limit(limit), include_resolved=include_resolved,
            min_relevance=self.min_relevance,
        ))

    def resolve_lesson(self, lesson_id: Text, resolution_id: str | None = None) -> dict[str, Any]:
        """Mark a lesson resolved; resolution_id (what resolved it) becomes its child in the lineage."""
        return self.memory.resolve_lesson(check_content(lesson_id, field="lesson_id"), resolution_id).model_dump(
            mode="json"
        )

    def store_market_regime(
        self, description: Text,
        regime_type: Literal["bull", "bear", "sideways", "volatile"] | None = None,
        start_date: str | None = None, end_date: str | None = None, volatility: float | None = None,
        trend_strength: float | None = None, parent_id: str | None = None,
    ) -> dict[str, Any]:
        """Store a market regime (dates as ISO 8601)."""
        return self.memory.store_market_regime(
            check_content(description, field="description"), regime_type=regime_type, start_date=start_date,
            end_date=end_date, volatility=volatility, trend_strength=trend_strength, parent_id=parent_id,
        ).model_dump(mode="json")

    def query_market_regimes(
        self, query: Text, limit: Limit = 5,
        regime_type: Literal["bull", "bear", "sideways", "volatile"] | None = None,
    ) -> dict[str, Any]:
        """Regimes most similar to the query, optionally of one type."""
        return _hits(self.memory.query_market_regimes(
            check_content(query, field="query"), k=check_limit(limit), regime_type=regime_type,
            min_relevance=self.min_relevance,
        ))

    # ---------------------------------------------- procedural memory

    def store_tool_definition(
        self, name: Text, description: Text, kind: Literal["tool", "workflow"] = "tool",
        parameters: dict[str, Any] | None = None, steps: list[dict[str, Any]] | None = None,
        definition: dict[str, Any] | None = None, parent_id: str | None = None, tags: Tags = None,
    ) -> dict[str, Any]:
        """Store a tool (its argument JSON Schema in parameters) or a workflow (its steps) as JSON; storing a
        name again makes its next version and supersedes the previous one."""
        return self.memory.store_tool_definition(
            check_content(name, field="name"), check_content(description, field="description"), kind=kind,
            parameters=parameters, steps=steps or (), definition=definition, parent_id=parent_id,
            tags=check_tags(tags),
        ).model_dump(mode="json")

    def get_tool_definition(self, name: Text, version: int | None = None) -> dict[str, Any]:
        """The current definition of a tool or workflow by name (or one version of it)."""
        return self.memory.get_tool_definition(check_content(name, field="name"), version).model_dump(mode="json")

    def query_tool_definitions(
        self, query: Text, limit: Limit = 5, kind: Literal["tool", "workflow"] | None = None
    ) -> dict[str, Any]:
        """Current tool and workflow definitions most similar to the query."""
        return _hits(self.memory.query_tool_definitions(
            check_content(query, field="query"), k=check_limit(limit), kind=kind, min_relevance=self.min_relevance,
        ))

    # ------------------------------------------------------ lineage, stats

    def get_lineage(self, item_id: Text) -> dict[str, Any]:
        """Where an item came from (ancestors, root first) and what came from it (a tree)."""
        return self.memory.lineage(check_content(item_id, field="item_id")).as_dict()

    def get_memory_stats(self) -> dict[str, Any]:
        """What is in memory: per collection, items, items with vectors, storage bytes, oldest and newest,
        archived, retired and superseded; plus namespaces, lineage links, sessions and threads."""
        return self.memory.stats().as_dict()

    # -------------------------------------------- retire, supersede, undo

    def _where(self, memory_id: str, namespace: list[str] | None) -> tuple[str, ...] | None:
        """The namespace to name ``memory_id`` by: the one given, else None for a typed record (its lineage
        knows), else this server's namespace (a plain memory that ``store_memory`` wrote)."""
        if namespace is not None:
            return tuple(check_content(label, field="namespace label") for label in namespace)
        if self.memory.lineage_store.item(memory_id) is not None:
            return None
        return self.namespace

    def retire_memory(self, memory_id: Text, reason: Text, namespace: Namespace = None) -> dict[str, Any]:
        """Retire a wrong or useless memory: searches stop returning it. Reversible (reinstate_memory); the
        memory is kept, readable by id, for review."""
        memory_id = check_content(memory_id, field="memory_id")
        st = self.memory.retire(memory_id, check_content(reason, field="reason"),
                                namespace=self._where(memory_id, namespace))
        return {"memory_id": memory_id, "namespace": list(st.namespace), **st.as_dict()}

    def supersede_memory(
        self, old_id: Text, new_id: Text, reason: str | None = None, namespace: Namespace = None,
        new_namespace: Namespace = None,
    ) -> dict[str, Any]:
        """Mark old_id replaced by new_id (a corrected or newer memory): searches return the new one only."""
        old_id, new_id = check_content(old_id, field="old_id"), check_content(new_id, field="new_id")
        st = self.memory.supersede(old_id, new_id, reason, namespace=self._where(old_id, namespace),
                                   new_namespace=self._where(new_id, new_namespace))
        return {"memory_id": old_id, "namespace": list(st.namespace), **st.as_dict()}

    def reinstate_memory(self, memory_id: Text, namespace: Namespace = None) -> dict[str, Any]:
        """Undo retire_memory or supersede_memory: searches find the memory again."""
        memory_id = check_content(memory_id, field="memory_id")
        had = self.memory.reinstate(memory_id, namespace=self._where(memory_id, namespace))
        return {"memory_id": memory_id, "reinstated": had}
