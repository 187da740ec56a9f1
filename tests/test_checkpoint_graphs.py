"""Real LangGraph graphs on SqliteCheckpointer: sync and async on one instance."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from langgraph_memory.checkpoint import SqliteCheckpointer

# No catalog here: the checkpointers run in the SQLite-catalog run (PostgreSQL's too, on the session's server).
pytestmark = pytest.mark.sqlite_only("checkpointer tests: no catalog involved, both checkpointers run in the other run")


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: int


def _chat_graph(saver: SqliteCheckpointer) -> Any:
    def think(state: ChatState) -> dict[str, Any]:
        last = state["messages"][-1].content
        return {"messages": [AIMessage(f"thinking about {last}")], "turns": state.get("turns", 0) + 1}

    def answer(state: ChatState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"answer #{state['turns']}")]}

    builder = StateGraph(ChatState)
    builder.add_node("think", think)
    builder.add_node("answer", answer)
    builder.add_edge(START, "think")
    builder.add_edge("think", "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=saver)


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteCheckpointer]:
    with SqliteCheckpointer(tmp_path / "graphs.sqlite") as s:
        yield s


async def test_invoke_and_ainvoke_share_one_saver(any_saver: Any) -> None:
    saver = any_saver
    graph = _chat_graph(saver)
    config = {"configurable": {"thread_id": "chat"}}
    graph.invoke({"messages": [HumanMessage("hi")]}, config)
    await graph.ainvoke({"messages": [HumanMessage("again")]}, config)
    graph.invoke({"messages": [HumanMessage("third")]}, config)
    state = await graph.aget_state(config)
    contents = [m.content for m in state.values["messages"]]
    assert contents == [
        "hi",
        "thinking about hi",
        "answer #1",
        "again",
        "thinking about again",
        "answer #2",
        "third",
        "thinking about third",
        "answer #3",
    ]
    assert state.values["turns"] == 3
    # Streaming async sees the same thread.
    chunks = [c async for c in graph.astream({"messages": [HumanMessage("4")]}, config)]
    assert [next(iter(c)) for c in chunks] == ["think", "answer"]
    assert graph.get_state(config).values["turns"] == 4


async def test_state_history_and_time_travel(any_saver: Any) -> None:
    saver = any_saver
    graph = _chat_graph(saver)
    config = {"configurable": {"thread_id": "tt"}}
    graph.invoke({"messages": [HumanMessage("one")]}, config)
    graph.invoke({"messages": [HumanMessage("two")]}, config)
    history = list(graph.get_state_history(config))
    # Per invoke: the input checkpoint, then one per super-step; newest first.
    assert [(h.metadata["step"], h.metadata["source"], h.next) for h in history] == [
        (6, "loop", ()),
        (5, "loop", ("answer",)),
        (4, "loop", ("think",)),
        (3, "input", ("__start__",)),
        (2, "loop", ()),
        (1, "loop", ("answer",)),
        (0, "loop", ("think",)),
        (-1, "input", ("__start__",)),
    ]
    assert [h.config for h in graph.get_state_history(config, limit=3)] == [h.config for h in history[:3]]
    async_history = [h async for h in graph.aget_state_history(config)]
    assert [h.config for h in async_history] == [h.config for h in history]

    # Travel back to just before "answer" ran in turn one, and fork from there.
    before_answer = next(
        h
        for h in history
        if h.next == ("answer",) and h.values["messages"][0].content == "one" and len(h.values["messages"]) == 2
    )
    forked = await graph.ainvoke(None, before_answer.config)
    assert [m.content for m in forked["messages"]] == ["one", "thinking about one", "answer #1"]
    # The fork becomes the thread's head; the original turn two is still in history.
    head = graph.get_state(config)
    assert head.values["turns"] == 1
    assert head.parent_config is not None
    all_contents = {m.content for h in graph.get_state_history(config) for m in h.values.get("messages", [])}
    assert "two" in all_contents


def test_interrupt_and_resume_sync_then_async(saver: SqliteCheckpointer) -> None:
    # Reopens the SQLite file as a restarted process would; PostgreSQL's: test_checkpoint_postgres.py.

    class ApprovalState(TypedDict):
        request: str
        approved: bool

    def ask(state: ApprovalState) -> dict[str, Any]:
        answer = interrupt({"question": f"approve {state['request']}?"})
        return {"approved": answer == "yes"}

    builder = StateGraph(ApprovalState)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = builder.compile(checkpointer=saver)

    config = {"configurable": {"thread_id": "approval"}}
    result = graph.invoke({"request": "deploy", "approved": False}, config)
    assert result["__interrupt__"][0].value == {"question": "approve deploy?"}
    state = graph.get_state(config)
    assert state.next == ("ask",)
    assert state.tasks[0].interrupts[0].value == {"question": "approve deploy?"}

    # A second saver on the same file (a restarted process) resumes it, async.
    with SqliteCheckpointer(saver.path) as reopened:
        graph2 = builder.compile(checkpointer=reopened)
        final = asyncio.run(graph2.ainvoke(Command(resume="yes"), config))
    assert final == {"request": "deploy", "approved": True}
    assert graph.get_state(config).next == ()


async def test_subgraph_state_is_checkpointed(any_saver: Any) -> None:
    saver = any_saver

    class Inner(TypedDict):
        items: Annotated[list[str], lambda a, b: a + b]

    def inner_a(state: Inner) -> dict[str, Any]:
        return {"items": ["inner-a"]}

    def inner_b(state: Inner) -> dict[str, Any]:
        value = interrupt("need input")
        return {"items": [f"inner-b:{value}"]}

    inner = StateGraph(Inner)
    inner.add_node("a", inner_a)
    inner.add_node("b", inner_b)
    inner.add_edge(START, "a")
    inner.add_edge("a", "b")
    inner.add_edge("b", END)

    outer = StateGraph(Inner)
    outer.add_node("before", lambda s: {"items": ["outer"]})
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "before")
    outer.add_edge("before", "sub")
    outer.add_edge("sub", END)
    graph = outer.compile(checkpointer=saver)

    config = {"configurable": {"thread_id": "nested"}}
    await graph.ainvoke({"items": []}, config)
    state = graph.get_state(config, subgraphs=True)
    sub_state = state.tasks[0].state
    assert sub_state is not None
    assert sub_state.values["items"] == ["outer", "inner-a"]
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in saver.list(config)}
    assert "" in namespaces and any(ns.startswith("sub:") for ns in namespaces)

    result = graph.invoke(Command(resume="ok"), config)
    # The subgraph returns its whole state, which the outer reducer appends:
    # the same answer InMemorySaver gives.
    reference = outer.compile(checkpointer=InMemorySaver())
    await reference.ainvoke({"items": []}, config)
    assert result == reference.invoke(Command(resume="ok"), config)
    assert result["items"][-1] == "inner-b:ok"


async def test_async_calls_do_not_block_the_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "busy.sqlite"
    with SqliteCheckpointer(path, lock_timeout=5) as saver:
        graph = _chat_graph(saver)
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another writer holds the file
        ticks = 0
        run = asyncio.create_task(
            graph.ainvoke({"messages": [HumanMessage("x")]}, {"configurable": {"thread_id": "b"}})
        )
        while ticks < 20:  # the loop keeps running while the write waits
            await asyncio.sleep(0.01)
            ticks += 1
        assert not run.done()
        blocker.execute("ROLLBACK")
        blocker.close()
        result = await run
        assert result["turns"] == 1
