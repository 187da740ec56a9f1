"""recall_node and store_node inside real compiled graphs (InMemoryStore and ChromaStore, invoke and ainvoke)."""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph

from langgraph_memory.errors import ConfigError, LineageError
from langgraph_memory.graph.nodes import format_namespace, recall_node, store_node
from langgraph_memory.graph.tools import create_recall_tool, create_store_tool
from langgraph_memory.research.lineage import LineageStore
from tests.helpers.graphs import react_graph


class State(TypedDict, total=False):
    query: str
    texts: Any
    parent: str
    stored_ids: list[str]
    hits: list[dict[str, Any]]


def _graph(store, *nodes):
    b = StateGraph(State)
    prev = START
    for name, node in nodes:
        b.add_node(name, node)
        b.add_edge(prev, name)
        prev = name
    b.add_edge(prev, END)
    return b.compile(store=store)


def test_store_then_recall_invoke(any_store) -> None:
    g = _graph(
        any_store,
        ("store", store_node(("lessons", "{desk}"), values="texts")),
        ("recall", recall_node(("lessons", "{desk}"), query="query", output_key="hits", k=5, min_relevance=None)),
    )
    cfg = {"configurable": {"desk": "d1"}}
    out = g.invoke({"query": "whipsaw", "texts": ["whipsaw in chop", "drawdown too deep"]}, cfg)
    assert len(out["stored_ids"]) == 2
    stored = any_store.get(("lessons", "d1"), out["stored_ids"][0])
    assert stored is not None and stored.value["lesson"] == "whipsaw in chop"  # string -> embedded field
    assert stored.value["id"] == out["stored_ids"][0]
    assert {h["key"] for h in out["hits"]} == set(out["stored_ids"])
    assert all(set(h) >= {"namespace", "key", "value", "score"} for h in out["hits"])
    scores = [h["score"] for h in out["hits"]]
    assert scores == sorted(scores, reverse=True)
    # another desk sees nothing
    other = g.invoke({"query": "whipsaw", "texts": []}, {"configurable": {"desk": "d2"}})
    assert other["hits"] == [] and other["stored_ids"] == []


async def test_store_then_recall_ainvoke(any_store) -> None:
    g = _graph(
        any_store,
        ("store", store_node("lessons", values="texts")),
        (
            "recall",
            recall_node(
                ["lessons", "research"], query=lambda s: s["query"].upper(), output_key="hits", min_relevance=None
            ),
        ),
    )
    out = await g.ainvoke({"query": "chop", "texts": {"lesson": "dict value", "severity": "minor"}})
    assert len(out["stored_ids"]) == 1
    assert [h["key"] for h in out["hits"]] == out["stored_ids"]
    item = await any_store.aget(("lessons",), out["stored_ids"][0])
    assert item.value["severity"] == "minor"


def test_recall_k_min_relevance_filter_and_dedup(any_store) -> None:
    for i in range(8):
        any_store.put(("research", "a"), f"k{i}", {"content": f"finding {i}", "source": "x" if i % 2 else "y"})
    # Fake vectors have no meaning: the 30 % relevance default is tested with real scores in test_hybrid.py.
    g = _graph(
        any_store, ("recall", recall_node(["research", ("research", "a")], output_key="hits", k=3, min_relevance=None))
    )
    hits = g.invoke({"query": "finding"})["hits"]
    assert len(hits) == 3 and len({h["key"] for h in hits}) == 3  # overlapping prefixes, no duplicates
    g = _graph(
        any_store,
        ("recall", recall_node("research", output_key="hits", k=10, filter={"source": "x"}, min_relevance=None)),
    )
    assert {h["value"]["source"] for h in g.invoke({"query": "finding"})["hits"]} == {"x"}
    g = _graph(any_store, ("recall", recall_node("research", output_key="hits", min_relevance=1.01)))
    assert g.invoke({"query": "finding"})["hits"] == []
    g = _graph(any_store, ("recall", recall_node("research", output_key="hits")))
    assert g.invoke({"query": ""})["hits"] == []


def test_missing_configurable_is_a_clear_error(any_store) -> None:
    g = _graph(any_store, ("recall", recall_node(("memories", "{user_id}"), output_key="hits")))
    with pytest.raises(ConfigError, match="user_id"):
        g.invoke({"query": "x"})


def test_nodes_without_a_store_raise() -> None:
    b = StateGraph(State)
    b.add_node("recall", recall_node("lessons", output_key="hits"))
    b.add_edge(START, "recall")
    with pytest.raises(ConfigError, match="needs a store"):
        b.compile().invoke({"query": "x"})


def test_store_node_validates_typed_values(any_store) -> None:
    g = _graph(any_store, ("store", store_node("research", values="texts")))
    from langgraph_memory.errors import ValidationError

    with pytest.raises(ValidationError):
        g.invoke({"texts": {"content": "x", "confidence": 3.0}})


def test_store_node_records_lineage_with_chroma(data_dir: Path, fake_embeddings) -> None:
    from langgraph_memory.memory import Memory

    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        strategy = mem.store_strategy("mom", "momentum")
        g = _graph(mem.store, ("store", store_node("lessons", values="texts", parent="parent")))
        out = g.invoke({"texts": ["lesson from a node"], "parent": strategy.id})
        (lesson_id,) = out["stored_ids"]
        assert mem.store.get(("lessons",), lesson_id).value["parent_id"] == strategy.id
        assert mem.lineage(lesson_id).ancestor_ids == [strategy.id]
        assert mem.get(lesson_id).lesson == "lesson from a node"  # type: ignore[attr-defined]
        with pytest.raises(LineageError):
            g.invoke({"texts": ["orphan"], "parent": "no-such-id"})
    with LineageStore.for_data_dir(data_dir) as lin:
        assert lin.item(lesson_id) is not None


def test_checkpointed_graph_with_reducer(data_dir: Path, fake_embeddings) -> None:
    """The results written by recall_node are plain data: they checkpoint and reload."""
    from langgraph_memory.memory import Memory

    class S(TypedDict, total=False):
        query: str
        hits: Annotated[list, operator.add]

    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        mem.store_lesson("checkpoint me")
        b = StateGraph(S)
        b.add_node("recall", recall_node("lessons", output_key="hits", min_relevance=None))
        b.add_edge(START, "recall")
        g = mem.compile(b)
        cfg = {"configurable": {"thread_id": "t"}}
        g.invoke({"query": "x"}, cfg)
        g.invoke({"query": "x"}, cfg)
        assert len(g.get_state(cfg).values["hits"]) == 2


def test_format_namespace() -> None:
    assert format_namespace("lessons") == ("lessons",)
    assert format_namespace(("m", "{a}-{b}"), {"configurable": {"a": 1, "b": "x"}}) == ("m", "1-x")
    with pytest.raises(ConfigError):
        format_namespace(("m", "{a}"), {"configurable": {"a": ""}})


@dataclass
class UserContext:
    user_id: str


class NodeState(TypedDict, total=False):
    query: str
    texts: Any
    hits: list[dict[str, Any]]


def test_namespace_templates_read_the_runtime_context_and_langmems_placeholder(store) -> None:
    b = StateGraph(NodeState, context_schema=UserContext)
    b.add_node("remember", store_node(("memories", "{user_id}"), values="texts"))
    # Fake vectors: no relevance threshold (the 30 % rule is tested with real scores in test_hybrid.py).
    b.add_node(
        "recall", recall_node(("memories", "{langgraph_user_id}"), query="query", output_key="hits", min_relevance=None)
    )
    b.add_edge(START, "remember")
    b.add_edge("remember", "recall")
    b.add_edge("recall", END)
    graph = b.compile(store=store)
    out = graph.invoke({"texts": ["likes espresso"], "query": "coffee"}, context=UserContext(user_id="alice"))
    assert [h["namespace"] for h in out["hits"]] == [["memories", "alice"]]
    assert store.search(("memories", "alice"))[0].value["content"] == "likes espresso"

    # Tools in a ToolNode read it too, and a dict context works as well as a dataclass.
    tools = [
        create_store_tool(("memories", "{langgraph_user_id}")),
        create_recall_tool(("memories", "{user_id}"), min_relevance=None),
    ]
    g = react_graph(
        store,
        tools,
        [
            {"name": "store_memory", "args": {"content": "trades the Nikkei"}},
            {"name": "recall_memory", "args": {"query": "Nikkei"}},
        ],
        context_schema=dict,
    )
    msgs = g.invoke({"messages": [HumanMessage("hi")]}, context={"user_id": "bob"})["messages"]
    key, recalled = [m.content for m in msgs if isinstance(m, ToolMessage)]
    assert store.get(("memories", "bob"), key) is not None
    assert [h["key"] for h in json.loads(recalled)] == [key]

    # Outside a graph: either placeholder from either key; the context wins over configurable.
    assert format_namespace(("memories", "{user_id}"), {"configurable": {"langgraph_user_id": "u1"}}) == (
        "memories",
        "u1",
    )
    assert format_namespace("{langgraph_user_id}", {"configurable": {"user_id": "u2"}}) == ("u2",)
