"""LangMem's store-backed memory tools work against ChromaStore unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS
from tests.helpers.graphs import react_graph

langmem = pytest.importorskip("langmem")


@pytest.fixture
def chroma(data_dir: Path, fake_embeddings):
    s = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    yield s
    s.close()


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
    g = react_graph(chroma, [manage, search], calls)
    cfg = {"configurable": {"user_id": "u1"}}
    out = g.invoke({"messages": [HumanMessage("remember")]}, cfg)
    items = chroma.search(("memories", "u1"))
    assert len(items) == 1
    assert items[0].value == {"content": "User prefers light mode"}
    found = json.loads(_last_tool(out))
    assert [f["key"] for f in found] == [items[0].key]

    # delete through the tool, asynchronously
    key = items[0].key
    g = react_graph(chroma, [manage], [{"name": "manage_memory", "args": {"action": "delete", "id": key}}])
    await g.ainvoke({"messages": [HumanMessage("forget")]}, cfg)
    assert chroma.get(("memories", "u1"), key) is None
    assert chroma.search(("memories", "u1")) == []
