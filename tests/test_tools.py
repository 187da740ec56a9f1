"""Agent tools: recall and store memories from a ToolNode in a compiled graph, sync and async."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from langgraph_memory.config import MIN_RELEVANCE
from langgraph_memory.errors import ConfigError
from langgraph_memory.graph.tools import create_recall_tool, create_store_tool
from langgraph_memory.store import ChromaStore
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


@pytest.mark.slow
def test_store_tool_stores_the_text_alone_so_it_scores_like_langmems_copy(data_dir: Path, real_embeddings) -> None:
    langmem = pytest.importorskip("langmem")
    store = ChromaStore(data_dir=data_dir, index={"dims": 384, "embed": real_embeddings})
    try:
        text = "The user prefers short morning briefings with charts"
        cfg = {"configurable": {"user_id": "ours"}}
        key = create_store_tool(store=store).invoke({"content": text}, cfg)
        assert store.get(("memories", "ours"), key).value == {"content": text}  # no "id" beside the text
        g = react_graph(
            store,
            [langmem.create_manage_memory_tool(namespace=("memories", "{user_id}"))],
            [{"name": "manage_memory", "args": {"content": text, "action": "create"}}],
        )
        g.invoke({"messages": [HumanMessage("remember")]}, {"configurable": {"user_id": "langmem"}})
        query = "what format does the user like for briefings?"
        ours = store.search(("memories", "ours"), query=query)[0].score
        theirs = store.search(("memories", "langmem"), query=query)[0].score
        assert ours >= MIN_RELEVANCE and ours == pytest.approx(theirs, abs=1e-6)
        recalled = json.loads(
            create_recall_tool(store=store, min_relevance=MIN_RELEVANCE).invoke({"query": query}, cfg)
        )
        assert [h["key"] for h in recalled] == [key]
    finally:
        store.close()
