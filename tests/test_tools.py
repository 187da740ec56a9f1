"""Agent tools: recall and store memories from a ToolNode in a compiled graph, sync and async."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from langgraph_memory.errors import ConfigError
from langgraph_memory.graph.tools import create_recall_tool, create_store_tool
from tests.helpers.graphs import react_graph

CALLS = [
    {"name": "store_memory", "args": {"content": "prefers espresso"}},
    {"name": "store_memory", "args": {"content": "trades the Nikkei"}},
    {"name": "recall_memory", "args": {"query": "coffee", "limit": 5}},
]


def _tool_outputs(messages) -> list[str]:
    return [m.content for m in messages if isinstance(m, ToolMessage)]


def test_tools_in_a_react_graph_invoke(any_store) -> None:
    # Fake vectors have no meaning: the 30 % relevance default is tested with real scores in test_hybrid.py.
    tools = [
        create_recall_tool(("memories", "{user_id}"), min_relevance=None),
        create_store_tool(("memories", "{user_id}")),
    ]
    g = react_graph(any_store, tools, CALLS)
    out = g.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"user_id": "u1"}})
    key1, key2, recalled = _tool_outputs(out["messages"])
    assert any_store.get(("memories", "u1"), key1).value["content"] == "prefers espresso"
    assert any_store.get(("memories", "u2"), key1) is None
    hits = json.loads(recalled)
    assert {h["key"] for h in hits} == {key1, key2}
    assert all(h["namespace"] == ["memories", "u1"] for h in hits)


async def test_tools_in_a_react_graph_ainvoke(any_store) -> None:
    # Fake vectors have no meaning: the 30 % relevance default is tested with real scores in test_hybrid.py.
    tools = [
        create_recall_tool(("memories", "{user_id}"), min_relevance=None),
        create_store_tool(("memories", "{user_id}")),
    ]
    g = react_graph(any_store, tools, CALLS)
    out = await g.ainvoke({"messages": [HumanMessage("hi")]}, {"configurable": {"user_id": "u9"}})
    key1, key2, recalled = _tool_outputs(out["messages"])
    assert {h["key"] for h in json.loads(recalled)} == {key1, key2}
    # a different user recalls nothing
    other = await create_recall_tool(store=any_store).ainvoke({"query": "coffee"}, {"configurable": {"user_id": "u1"}})
    assert json.loads(other) == []


def test_tools_with_an_explicit_store_and_typed_namespace(any_store) -> None:
    store_tool = create_store_tool(("lessons", "{desk}"), store=any_store)
    recall_tool = create_recall_tool(("lessons", "{desk}"), store=any_store, k=1, min_relevance=None)
    cfg = {"configurable": {"desk": "rates"}}
    key = store_tool.invoke({"content": "auctions move the curve"}, cfg)
    assert any_store.get(("lessons", "rates"), key).value["lesson"] == "auctions move the curve"
    # passing the key overwrites
    assert store_tool.invoke({"content": "auctions move the long end", "key": key}, cfg) == key
    hits = json.loads(recall_tool.invoke({"query": "auction"}, cfg))
    assert [h["key"] for h in hits] == [key]
    assert hits[0]["value"]["lesson"] == "auctions move the long end"
    assert (
        json.loads(
            create_recall_tool(("lessons", "{desk}"), store=any_store, min_relevance=1.01).invoke(
                {"query": "auction"}, cfg
            )
        )
        == []
    )


def test_tool_errors_are_clear(any_store) -> None:
    with pytest.raises(ConfigError, match="user_id"):
        create_store_tool(store=any_store).invoke({"content": "x"})
    with pytest.raises(ConfigError, match="no store"):
        create_store_tool().invoke({"content": "x"}, {"configurable": {"user_id": "u"}})


def test_tool_schemas_hide_config() -> None:
    assert set(create_recall_tool().args) == {"query", "limit"}
    assert set(create_store_tool().args) == {"content", "key", "tags"}
