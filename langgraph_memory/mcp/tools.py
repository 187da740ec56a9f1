"""The tools the MCP server offers: one method of `MemoryTools` per tool, over one ``Memory``.

``store_memory`` and ``search_memory``; the typed research calls for every collection (findings, hypotheses,
strategies, backtests, lessons, market regimes, tool and workflow definitions), each derived from its one
declaration in the research API (see `langgraph_memory.research.calls`); ``get_memory``,
``get_memory_history`` (an item's versions, newest first, with what changed), ``get_lineage``,
``get_memory_stats``; and ``retire_memory``, ``supersede_memory`` and ``reinstate_memory`` so an agent can stop
a wrong or outdated memory from coming back in searches. There is no hard-delete tool on purpose: retiring is
reversible and keeps the memory for review, while a delete cannot be undone, so it stays with people
(``langgraph-memory delete``, dry run first), not with an agent that a bad prompt may steer.

Arguments are checked by `langgraph_memory.research.validation` (the same checks and messages as the
LangChain tools) and by the typed API. The tools that read take ``as_of`` (an ISO date or date and time) to
answer from the memory as it stood then; a bad argument raises a typed error before anything is written, which
`langgraph_memory.mcp.server` turns into an MCP tool error.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field

from langgraph_memory.config import MIN_RELEVANCE
from langgraph_memory.errors import NotFoundError
from langgraph_memory.lifecycle.states import item_states, lifecycle_json
from langgraph_memory.memory import Memory
from langgraph_memory.research.calls import (
    AsOf,
    DataCutoff,
    ResearchCall,
    parse_day,
    parse_moment,
    relevance_percent,
    research_calls,
)
from langgraph_memory.research.validation import Limit, Tags, Text, check_content, check_limit, check_tags
from langgraph_memory.search.ranking import keep_relevant

__all__ = ["MemoryTools"]

Namespace = Annotated[
    list[str] | None,
    Field(
        description='the namespace\'s labels, e.g. ["memories", "u1"]; only for a memory that is neither '
        "a typed record nor in this server's namespace"
    ),
]


def _iso(value: Any) -> str | None:
    return value.isoformat() if hasattr(value, "isoformat") else value


def _tool(tools: MemoryTools, call: ResearchCall) -> Callable[..., Any]:
    """The MCP tool of one research call, run on ``tools.memory`` with the server's relevance threshold."""

    def tool(**kwargs: Any) -> Any:
        return call.invoke(tools.memory, kwargs, min_relevance=tools.min_relevance)

    tool.__name__ = call.name
    tool.__qualname__ = f"MemoryTools.{call.name}"
    tool.__doc__ = call.summary
    tool.__signature__ = call.signature  # type: ignore[attr-defined]
    return tool


class MemoryTools:
    """The tools the server offers, over one [`Memory`][langgraph_memory.Memory].

    Each public method is one MCP tool (registered by `build_server()`
    from `TOOLS`); they can be called directly too. Plain memories
    (``store_memory``, ``search_memory``) live under ``namespace``
    (default ``("memories",)``): searches cover it and every namespace below
    it, such as the ``("memories", "<user>")`` of the LangGraph tools.

    Examples:
        >>> import tempfile
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> from langgraph_memory import Memory
        >>> with Memory.open(tempfile.mkdtemp(), embeddings=DeterministicFakeEmbedding(size=16)) as mem:
        ...     tools = MemoryTools(mem)
        ...     tools.store_memory("User prefers TypeScript", ["preference"])["success"]
        ...     tools.store_lesson(lesson="Short lookbacks whipsaw")["severity"]
        True
        'major'

    """

    #: The tools, in the order clients list them. Adding one is a method and a name here.
    TOOLS: tuple[str, ...] = (
        "store_memory",
        "search_memory",
        "get_memory",
        "get_memory_history",
        "store_research_finding",
        "query_research_findings",
        "store_hypothesis",
        "update_hypothesis",
        "query_hypotheses",
        "store_strategy",
        "get_similar_strategies",
        "set_strategy_status",
        "strategy_versions",
        "store_backtest",
        "query_backtests",
        "store_lesson",
        "get_relevant_lessons",
        "resolve_lesson",
        "store_market_regime",
        "query_market_regimes",
        "store_tool_definition",
        "get_tool_definition",
        "query_tool_definitions",
        "get_lineage",
        "get_memory_stats",
        "retire_memory",
        "supersede_memory",
        "reinstate_memory",
    )

    #: The tools that write; a server over a read-only memory (``--read-only``) does not offer them.
    WRITES: frozenset[str] = frozenset(
        {
            "store_memory",
            "store_research_finding",
            "store_hypothesis",
            "update_hypothesis",
            "store_strategy",
            "set_strategy_status",
            "store_backtest",
            "store_lesson",
            "resolve_lesson",
            "store_market_regime",
            "store_tool_definition",
            "retire_memory",
            "supersede_memory",
            "reinstate_memory",
        }
    )

    def __init__(
        self, memory: Memory, *, namespace: Sequence[str] = ("memories",), min_relevance: float = MIN_RELEVANCE
    ) -> None:
        self.memory = memory
        self.namespace = tuple(namespace)
        self.min_relevance = min_relevance
        for call in research_calls():
            setattr(self, call.name, _tool(self, call))

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

    def search_memory(
        self,
        query: Text,
        limit: Limit = 5,
        as_of: AsOf = None,
        data_cutoff: DataCutoff = None,
        include_undated: bool = False,
    ) -> dict[str, Any]:
        """Search memories by meaning; results under 30% relevance are dropped, best first. With as_of, the
        memories as they stood then; with data_cutoff, only those whose evidence ends by that date."""
        query = check_content(query, field="query")
        limit = check_limit(limit)
        day = parse_day(data_cutoff)
        cutoff = {"data_cutoff": day, "include_undated": include_undated} if day is not None else {}
        store: Any = self.memory.store if as_of is None else self.memory.store.as_of(parse_moment(as_of))
        found = keep_relevant(store.search(self.namespace, query=query, limit=limit, **cutoff), self.min_relevance)
        results = [
            {
                "memory_id": it.key,
                "content": it.value.get("content", it.value.get("text")),
                "timestamp": _iso(it.created_at),
                "relevance_score": relevance_percent(it.score),
                "tags": list(it.value.get("tags") or []),
                "namespace": list(it.namespace),
            }
            for it in found
        ]
        return {"results": results, "total_results": len(results), "query_embedding_generated": True}

    def get_memory(self, memory_id: Text, as_of: AsOf = None) -> dict[str, Any]:
        """A memory by id: a typed record (finding, hypothesis, strategy, backtest, lesson, regime, tool) or a
        plain memory; ``status`` says when it is retired or superseded (searches leave it out). With as_of,
        its value as it stood then (get_memory_history lists every version)."""
        memory_id = check_content(memory_id, field="memory_id")
        if as_of is not None:
            return self._get_as_of(memory_id, parse_moment(as_of))
        try:
            record = self.memory.get(memory_id)
        except NotFoundError:
            item = self.memory.store.get(self.namespace, memory_id, refresh_ttl=False)
            if item is None:
                raise
            st = self.memory.store.items.statuses([(self.namespace, memory_id)]).get((self.namespace, memory_id))
            return {
                "memory_id": item.key,
                "namespace": list(item.namespace),
                "value": item.value,
                "created_at": _iso(item.created_at),
                "updated_at": _iso(item.updated_at),
                **item_states(item.value, st),
            }
        st = self.memory.status(memory_id)
        return {
            "memory_id": memory_id,
            "record": record.model_dump(mode="json"),
            **item_states(record.model_dump(mode="json"), st),
        }

    def _get_as_of(self, memory_id: str, at: datetime) -> dict[str, Any]:
        """`get_memory` as of ``at``: the value then (the lifecycle of then is in get_memory_history)."""
        then = self.memory.as_of(at)
        try:
            record = then.get(memory_id)
        except NotFoundError:
            item = then.store.get(self.namespace, memory_id)
            if item is None:
                raise
            return {
                "memory_id": item.key,
                "namespace": list(item.namespace),
                "value": item.value,
                "created_at": _iso(item.created_at),
                "updated_at": _iso(item.updated_at),
                "as_of": at.isoformat(),
            }
        return {"memory_id": memory_id, "record": record.model_dump(mode="json"), "as_of": at.isoformat()}

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
        st = self.memory.retire(
            memory_id, check_content(reason, field="reason"), namespace=self._where(memory_id, namespace)
        )
        return {"memory_id": memory_id, "namespace": list(st.namespace), **lifecycle_json(st)}

    def supersede_memory(
        self,
        old_id: Text,
        new_id: Text,
        reason: str | None = None,
        namespace: Namespace = None,
        new_namespace: Namespace = None,
    ) -> dict[str, Any]:
        """Mark old_id replaced by new_id (a corrected or newer memory): searches return the new one only."""
        old_id, new_id = check_content(old_id, field="old_id"), check_content(new_id, field="new_id")
        st = self.memory.supersede(
            old_id,
            new_id,
            reason,
            namespace=self._where(old_id, namespace),
            new_namespace=self._where(new_id, new_namespace),
        )
        return {"memory_id": old_id, "namespace": list(st.namespace), **lifecycle_json(st)}

    def reinstate_memory(self, memory_id: Text, namespace: Namespace = None) -> dict[str, Any]:
        """Undo retire_memory or supersede_memory: searches find the memory again."""
        memory_id = check_content(memory_id, field="memory_id")
        had = self.memory.reinstate(memory_id, namespace=self._where(memory_id, namespace))
        return {"memory_id": memory_id, "reinstated": had}
