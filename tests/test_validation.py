"""One check of agent-facing arguments, shared by the LangChain tools and the MCP server."""

from __future__ import annotations

import pytest

from langgraph_memory.errors import InvalidArgumentError, ValidationError
from langgraph_memory.graph.tools import create_recall_tool, create_store_tool
from langgraph_memory.mcp.server import MemoryTools
from langgraph_memory.memory import Memory
from langgraph_memory.research.validation import check_content, check_limit, check_tags


def test_content() -> None:
    assert check_content("a fact") == "a fact"
    for bad in ("", "   \n", None, 3, ["a"]):
        with pytest.raises(ValidationError):
            check_content(bad)


def test_tags() -> None:
    assert check_tags(None) == [] and check_tags(()) == []
    assert check_tags(["t"] * 10) == ["t"] * 10 and check_tags(("x" * 50,)) == ["x" * 50]
    for bad, why in (
        (["t"] * 11, "11 tags"),
        (["x" * 51], "51 characters"),
        (["ok", " "], "tag 2 is empty"),
        ("risk", "list of strings"),
        ([1], "must be a string"),
    ):
        with pytest.raises(ValidationError, match=why):
            check_tags(bad)


def test_limit() -> None:
    assert check_limit(1) == 1 and check_limit(20) == 20
    for bad in (0, 21, -1, True, "5", 2.0, None):
        with pytest.raises(InvalidArgumentError, match="from 1 to 20"):
            check_limit(bad)


def test_the_langchain_tools_and_the_mcp_server_refuse_alike(store, data_dir, fake_embeddings) -> None:
    cfg = {"configurable": {"user_id": "u1"}}
    store_tool, recall_tool = create_store_tool(store=store), create_recall_tool(store=store)
    errors = []
    for call in (
        lambda: store_tool.invoke({"content": "x", "tags": ["t"] * 11}, cfg),
        lambda: store_tool.invoke({"content": " "}, cfg),
        lambda: recall_tool.invoke({"query": "x", "limit": 21}, cfg),
    ):
        with pytest.raises((ValidationError, InvalidArgumentError)) as exc:
            call()
        errors.append(str(exc.value))
    assert store.search(("memories",)) == []  # nothing was written
    assert store_tool.invoke({"content": "tagged", "tags": ["a", "b"]}, cfg)
    assert store.search(("memories", "u1"))[0].value == {"content": "tagged", "tags": ["a", "b"]}
    store.close()
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        tools = MemoryTools(mem)
        same = []
        for call in (
            lambda: tools.store_memory("x", ["t"] * 11),
            lambda: tools.store_memory(" "),
            lambda: tools.search_memory("x", 21),
        ):
            with pytest.raises((ValidationError, InvalidArgumentError)) as exc:
                call()
            same.append(str(exc.value))
    assert same == errors
