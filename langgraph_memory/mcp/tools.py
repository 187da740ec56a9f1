"""The tools the MCP server offers: one method of :class:`MemoryTools` per tool, over one ``Memory``.

Seed 001's ``store_memory`` and ``search_memory``; the typed research calls
of seed 004 for every collection (findings, hypotheses, strategies,
backtests, lessons, market regimes, tool and workflow definitions);
``get_memory``, ``get_lineage``, ``strategy_versions``; seed 002's
``get_memory_stats``; and ``retire_memory``, ``supersede_memory`` and
``reinstate_memory`` so an agent can stop a wrong or outdated memory from
coming back in searches. There is no hard-delete tool on purpose: retiring
is reversible and keeps the memory for review, while a delete cannot be
undone, so it stays with people (``langgraph-memory delete``, dry run
first), not with an agent that a bad prompt may steer.

Arguments are checked by :mod:`langgraph_memory.validation` (the same
checks and messages as the LangChain tools) and by the typed API; a bad
argument raises a typed error before anything is written, which
:mod:`langgraph_memory.mcp_server` turns into an MCP tool error.
"""

from __future__ import annotations

import collections.abc
import inspect
import typing
import uuid
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, Field

from langgraph_memory.research.api import ResearchAPI
from langgraph_memory.research.collections import BacktestCosts, EquityCurve
from langgraph_memory.research.procedures import ProceduralAPI
from langgraph_memory.research.typed import Hit, ParentIds
from langgraph_memory.config import MAX_SEARCH_LIMIT, MAX_TAG_CHARS, MAX_TAGS, MIN_RELEVANCE
from langgraph_memory.errors import NotFoundError
from langgraph_memory.memory import Memory
from langgraph_memory.store.ranking import keep_relevant
from langgraph_memory.research.validation import check_content, check_limit, check_tags

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


#: The typed research calls an agent may make, each declared once, in the research API: a tool takes the
#: call's parameters (less those in ``_HIDDEN``; ``k`` is offered as ``limit``) with the same types and
#: defaults, and returns its record as JSON. Adding a tool is a line here.
RESEARCH_TOOLS: dict[str, Callable[..., Any]] = {
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
}

# Parameters an agent does not set: who is calling is the server's business (session_id, agent_id), the
# relevance threshold is the server's (``min_relevance``), and retired memories stay hidden from agents.
_HIDDEN = frozenset({"self", "session_id", "agent_id", "min_relevance", "include_retired"})


def _agent_type(name: str, hint: Any) -> tuple[Any, Callable[[Any], Any] | None]:
    """The type a tool's schema gives one parameter of a research call, and the check its value passes.

    Text is never empty, tags follow the tag limits, and sequences are JSON arrays; everything else keeps the
    research API's own type (its Literals become the schema's enums).
    """
    if name == "tags":
        return Tags, lambda v: check_tags(v)
    args = set(typing.get_args(hint))
    if hint is str:
        return Text, lambda v: check_content(v, field=name)
    if hint == (str | None) and name in ("query", "summary"):
        return str | None, lambda v: None if v is None else check_content(v, field=name)
    if hint == ParentIds:
        return str | None, None
    if typing.get_origin(hint) in (Sequence, collections.abc.Sequence) or Sequence[str] in args:
        return list[str] | None, lambda v: () if v is None else v
    if EquityCurve in args:
        return list[float] | None, None
    if BacktestCosts in args:
        return BacktestCosts | None, None
    return hint, None


def _as_json(result: Any) -> Any:
    """A research call's result as the JSON a tool returns."""
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json")
    if isinstance(result, list) and all(isinstance(h, Hit) for h in result):
        return _hits(result)
    return result


def _research_tool(tools: MemoryTools, name: str, call: Callable[..., Any]) -> Callable[..., Any]:
    """The MCP tool ``name``: ``call``'s declaration, offered to an agent, run on ``tools.memory``."""
    sig = inspect.signature(call)
    hints = typing.get_type_hints(call)
    params: list[inspect.Parameter] = []
    checks: dict[str, Callable[[Any], Any]] = {}
    renames: dict[str, str] = {}
    for p in sig.parameters.values():
        if p.name in _HIDDEN or p.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        if p.name == "k":
            renames["limit"] = "k"
            checks["limit"] = check_limit
            params.append(inspect.Parameter("limit", inspect.Parameter.KEYWORD_ONLY, default=p.default,
                                            annotation=Limit))
            continue
        kind, check = _agent_type(p.name, hints[p.name])
        if check is not None:
            checks[p.name] = check
        default = p.default
        if isinstance(default, tuple) and not default:
            default = None  # JSON has no tuples: an empty sequence is sent as nothing
        params.append(inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind))
    takes_relevance = "min_relevance" in sig.parameters
    method = call.__name__

    def tool(**kwargs: Any) -> Any:
        args = {renames.get(k, k): checks[k](v) if k in checks else v for k, v in kwargs.items()}
        if takes_relevance:
            # A search without a query has no score to drop on.
            args["min_relevance"] = tools.min_relevance if args.get("query", "") is not None else None
        result = getattr(tools.memory, method)(**args)
        if name == "strategy_versions":
            return {"name": kwargs["name"], "versions": [
                {"version": v.version, "id": v.id, "status": v.status, "created_at": v.created_at.isoformat(),
                 "live": v.record is not None} for v in result]}
        return _as_json(result)

    tool.__name__ = name
    tool.__qualname__ = f"MemoryTools.{name}"
    tool.__doc__ = _summary(call)
    tool.__signature__ = inspect.Signature(params, return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    return tool


def _summary(call: Callable[..., Any]) -> str:
    """The first paragraph of a research call's docstring: what the agent reads about the tool."""
    doc = inspect.getdoc(call) or call.__name__
    return " ".join(doc.split("\n\n", 1)[0].split())


def _relevance(score: float | None) -> float | None:
    """Seed 001's relevance percentage: cosine similarity (1 - cosine distance) times 100."""
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
    """The tools the server offers, over one :class:`~langgraph_memory.memory.Memory`.

    Each public method is one MCP tool (registered by :func:`~langgraph_memory.mcp_server.build_server`
    from :attr:`TOOLS`); they can be called directly too. Plain memories
    (``store_memory``, ``search_memory``) live under ``namespace``
    (default ``("memories",)``): searches cover it and every namespace below
    it, such as the ``("memories", "<user>")`` of the LangGraph tools.

    Example:
        >>> tools = MemoryTools(mem)                                        # doctest: +SKIP
        >>> tools.store_memory("User prefers TypeScript", ["preference"])["success"]   # doctest: +SKIP
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
        for tool, call in RESEARCH_TOOLS.items():
            setattr(self, tool, _research_tool(self, tool, call))

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
