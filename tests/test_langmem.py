"""LangMem's store-backed memory tools work against ChromaStore unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS

langmem = pytest.importorskip("langmem")


@pytest.fixture
def chroma(data_dir: Path, fake_embeddings):
    s = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    yield s
    s.close()


def _graph(store, tools, calls):
    def agent(state: MessagesState) -> dict:
        turn = sum(isinstance(m, AIMessage) for m in state["messages"])
        if turn < len(calls):
            call = calls[turn](state) if callable(calls[turn]) else calls[turn]
            return {"messages": [AIMessage("", tool_calls=[{**call, "id": f"c{turn}"}])]}
        return {"messages": [AIMessage("done")]}

    b = StateGraph(MessagesState)
    b.add_node("agent", agent)
    b.add_node("tools", ToolNode(tools))
    b.add_edge(START, "agent")
    b.add_conditional_edges("agent", lambda s: "tools" if s["messages"][-1].tool_calls else END, ["tools", END])
    b.add_edge("tools", "agent")
    return b.compile(store=store)


def _last_tool(state) -> str:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)][-1].content


def _created_key(state) -> str:
    text = _last_tool(state)  # "created memory <uuid>"
    return text.split()[-1]


async def test_manage_and_search_memory_tools_against_chroma(chroma: ChromaStore) -> None:
    ns = ("memories", "{user_id}")
    manage = langmem.create_manage_memory_tool(namespace=ns)
    search = langmem.create_search_memory_tool(namespace=ns)
    calls = [
        {"name": "manage_memory", "args": {"content": "User prefers dark mode", "action": "create"}},
        lambda s: {
            "name": "manage_memory",
            "args": {"content": "User prefers light mode", "action": "update", "id": _created_key(s)},
        },
        {"name": "search_memory", "args": {"query": "display preference"}},
    ]
    g = _graph(chroma, [manage, search], calls)
    cfg = {"configurable": {"user_id": "u1"}}
    out = g.invoke({"messages": [HumanMessage("remember")]}, cfg)
    items = chroma.search(("memories", "u1"))
    assert len(items) == 1
    assert items[0].value == {"content": "User prefers light mode"}
    found = json.loads(_last_tool(out))
    assert [f["key"] for f in found] == [items[0].key]

    # delete through the tool, asynchronously
    key = items[0].key
    g = _graph(chroma, [manage], [{"name": "manage_memory", "args": {"action": "delete", "id": key}}])
    await g.ainvoke({"messages": [HumanMessage("forget")]}, cfg)
    assert chroma.get(("memories", "u1"), key) is None
    assert chroma.search(("memories", "u1")) == []
