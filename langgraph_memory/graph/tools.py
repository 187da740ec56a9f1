"""Agent tools (LangChain ``StructuredTool``) to recall and store memories, for ReAct-style agents.

::

    from langgraph.prebuilt import ToolNode
    from langgraph_memory.graph.tools import create_recall_tool, create_store_tool

    tools = [create_recall_tool(("memories", "{user_id}")), create_store_tool(("memories", "{user_id}"))]
    graph = builder.compile(store=mem.store)       # a ToolNode(tools) inside
    graph.invoke(state, {"configurable": {"user_id": "u1"}})

The namespace is filled at call time from the run's ``context=`` or
``config["configurable"]`` (``{user_id}`` and LangMem's ``{langgraph_user_id}``
both work), so one tool serves every user or desk. The store is the one passed
to the factory, else the store of the graph the tool runs in (``get_store()``).
With a ``ChromaStore`` the recall tool leaves out retired and superseded
items unless built with ``include_retired=True``.

Arguments are checked as the MCP server checks them
(`langgraph_memory.research.validation`): content must not be empty, at most 10
tags of at most 50 characters, a limit from 1 to 20. A stored value is
exactly ``{<text field>: content}`` (plus ``tags`` when given), the same
value LangMem's tools store, so the text scores against queries as LangMem's
copy does.

No ``from __future__ import annotations`` here: LangChain builds the tool's
argument schema and finds the injected ``config`` from real annotations.
"""

import json
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool
from langgraph.store.base import BaseStore

from langgraph_memory.config import DEFAULT_K, MIN_RELEVANCE
from langgraph_memory.errors import ConfigError
from langgraph_memory.graph.nodes import NamespaceSpec, format_namespace, search_options
from langgraph_memory.research.collections import collection_for
from langgraph_memory.research.validation import check_content, check_limit, check_tags
from langgraph_memory.search.ranking import keep_relevant

__all__ = ["create_recall_tool", "create_store_tool"]

logger = logging.getLogger(__name__)


def _resolve_store(store: BaseStore | None, tool: str) -> BaseStore:
    if store is not None:
        return store
    try:
        from langgraph.config import get_store

        found = get_store()
    except (RuntimeError, KeyError):  # called outside a graph run
        found = None
    if found is None:
        raise ConfigError(
            f"tool {tool!r} has no store: pass store= to the factory, or run it inside a graph compiled with store="
        )
    return found


def _render(items: list[Any]) -> str:
    return json.dumps(
        [{"key": it.key, "namespace": list(it.namespace), "value": it.value, "score": it.score} for it in items],
        ensure_ascii=False,
        default=str,
    )


def create_recall_tool(
    namespace: NamespaceSpec = ("memories", "{user_id}"),
    *,
    k: int = DEFAULT_K,
    min_relevance: float | None = MIN_RELEVANCE,
    filter: dict[str, Any] | None = None,
    store: BaseStore | None = None,
    name: str = "recall_memory",
    description: str | None = None,
    include_retired: bool = False,
) -> StructuredTool:
    """A tool that searches memories; it returns JSON: ``[{key, namespace, value, score}, ...]``.

    Results scoring under ``min_relevance`` (default 0.3, a relevance of 30 %
    relevance; None keeps them all) are left out.
    ``include_retired`` makes it return retired and superseded items too
    (a ``ChromaStore`` leaves them out by default).

    Examples:
        >>> store.put(("memories", "u1"), "m1", {"content": "likes espresso"})
        >>> tool = create_recall_tool(("memories", "{user_id}"), store=store, min_relevance=None)
        >>> [h["key"] for h in json.loads(tool.invoke({"query": "coffee"}, {"configurable": {"user_id": "u1"}}))]
        ['m1']
    """

    def _args(query: str, limit: int | None) -> tuple[str, int]:
        return check_content(query, field="query"), check_limit(k if limit is None else limit)

    def recall_memory(query: str, limit: int | None = None, *, config: RunnableConfig) -> str:
        ns = format_namespace(namespace, config)
        query, limit = _args(query, limit)
        found = _resolve_store(store, name)
        items = found.search(ns, query=query, filter=filter, limit=limit, **search_options(found, include_retired))
        return _render(keep_relevant(items, min_relevance))

    async def arecall_memory(query: str, limit: int | None = None, *, config: RunnableConfig) -> str:
        ns = format_namespace(namespace, config)
        query, limit = _args(query, limit)
        found = _resolve_store(store, name)
        opts = search_options(found, include_retired)
        items = await found.asearch(ns, query=query, filter=filter, limit=limit, **opts)
        return _render(keep_relevant(items, min_relevance))

    return StructuredTool.from_function(
        func=recall_memory,
        coroutine=arecall_memory,
        name=name,
        description=description
        or "Search long-term memory for information relevant to a query (limit: 1-20 results). "
        "Returns the best matches as JSON.",
    )


def create_store_tool(
    namespace: NamespaceSpec = ("memories", "{user_id}"),
    *,
    store: BaseStore | None = None,
    name: str = "store_memory",
    description: str | None = None,
) -> StructuredTool:
    """A tool that stores (or, given a ``key``, overwrites) one memory; it returns the key.

    In a typed namespace the text goes to the collection's embedded field
    (``lesson`` in ``("lessons", ...)``, ``content`` in ``("research", ...)``).

    Examples:
        >>> tool = create_store_tool(("memories", "{user_id}"), store=store)
        >>> key = tool.invoke({"content": "likes espresso"}, {"configurable": {"user_id": "u1"}})
    """

    def _value(
        ns: tuple[str, ...], content: str, key: str | None, tags: Sequence[str] | None
    ) -> tuple[str, dict[str, Any]]:
        spec = collection_for(ns)
        key = key or str(uuid.uuid4())
        # The key is not copied into the value: with an index over the whole value, a UUID in it
        # would be embedded with the text and pull its score down (LangMem stores the text alone).
        value: dict[str, Any] = {spec.text_field: check_content(content)}
        if tags:
            value["tags"] = check_tags(tags)
        spec.validate(value)
        return key, value

    def store_memory(
        content: str, key: str | None = None, tags: list[str] | None = None, *, config: RunnableConfig
    ) -> str:
        ns = format_namespace(namespace, config)
        key, value = _value(ns, content, key, tags)
        _resolve_store(store, name).put(ns, key, value)
        return key

    async def astore_memory(
        content: str, key: str | None = None, tags: list[str] | None = None, *, config: RunnableConfig
    ) -> str:
        ns = format_namespace(namespace, config)
        key, value = _value(ns, content, key, tags)
        await _resolve_store(store, name).aput(ns, key, value)
        return key

    return StructuredTool.from_function(
        func=store_memory,
        coroutine=astore_memory,
        name=name,
        description=description
        or "Save a fact to long-term memory, with up to 10 short tags. Pass `key` to overwrite an existing memory. "
        "Returns the memory's key.",
    )
