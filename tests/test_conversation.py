"""The conversation node in compiled chat graphs (invoke and ainvoke), with the recall node over episodes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from langgraph_memory import Memory, conversation_node, last_human_text, recall_node
from langgraph_memory.errors import ConfigError
from langgraph_memory.graph.conversation import approx_tokens, exchanges, format_buffer
from langgraph_memory.sessions import SessionTurn
from tests.helpers.session_data import TopicEmbeddings


class ChatState(MessagesState):
    conversation: str
    memories: list[dict[str, Any]]


def echo_model(state: ChatState) -> dict[str, Any]:
    """A stand-in chat model: answers from what recall found, else acknowledges."""
    found = state.get("memories") or []
    said = last_human_text(state) or ""
    answer = f"From memory: {found[0]['value']['content']}" if found and said.endswith("?") else f"Noted: {said}"
    return {"messages": [AIMessage(answer)]}


def chat_graph(mem: Memory, **node_args: Any) -> Any:
    builder = StateGraph(ChatState)
    builder.add_node(
        "recall", recall_node(("episodes",), query=last_human_text, output_key="memories", min_relevance=None)
    )
    builder.add_node("chat", echo_model)
    builder.add_node("conversation", conversation_node(mem.sessions, **node_args))
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "chat")
    builder.add_edge("chat", "conversation")
    builder.add_edge("conversation", END)
    return mem.compile(builder)


@pytest.fixture
def mem(data_dir: Path):
    m = Memory.open(data_dir, embeddings=TopicEmbeddings())
    yield m
    m.close()


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def test_the_node_records_each_turn_with_its_thread_under_invoke(mem: Memory) -> None:
    graph = chat_graph(mem, max_turns=2)
    out = graph.invoke({"messages": [("user", "rates: my risk limit is 2% per trade on Treasury futures")]}, cfg("t1"))
    assert out["conversation"] == (
        "User: rates: my risk limit is 2% per trade on Treasury futures\n"
        "Assistant: Noted: rates: my risk limit is 2% per trade on Treasury futures"
    )
    graph.invoke({"messages": [("user", "rates: and I never hold over weekends")]}, cfg("t1"))
    out = graph.invoke({"messages": [("user", "rates: and I log every trade")]}, cfg("t1"))
    turns = mem.sessions.get_session_context(thread_id="t1")
    assert [t.user for t in turns] == [
        "rates: my risk limit is 2% per trade on Treasury futures",
        "rates: and I never hold over weekends",
        "rates: and I log every trade",
    ]
    assert {t.thread_id for t in turns} == {"t1"} and len({t.session_id for t in turns}) == 1
    assert out["conversation"].count("User:") == 2  # the turn budget
    # Running over the same history again records nothing twice.
    graph.update_state(cfg("t1"), {"conversation": ""}, as_node="chat")
    graph.invoke(None, cfg("t1"))
    assert len(mem.sessions.get_session_context(thread_id="t1")) == 3
    # A second thread is its own session.
    graph.invoke({"messages": [("user", "crypto: what happened to bitcoin?")]}, cfg("t2"))
    assert mem.sessions.current_session("t2").id != turns[0].session_id  # type: ignore[union-attr]


async def test_two_nodes_give_a_chat_graph_long_term_memory_under_ainvoke(mem: Memory) -> None:
    graph = chat_graph(mem)
    await graph.ainvoke({"messages": [("user", "rates: my risk limit is 2% per trade on Treasury futures")]}, cfg("a"))
    await graph.ainvoke({"messages": [("user", "football: Arsenal won again")]}, cfg("a"))  # a topic change
    # The first session ended on the topic change and was promoted: another thread recalls it.
    out = await graph.ainvoke({"messages": [("user", "rates: what is my risk limit?")]}, cfg("b"))
    assert out["memories"] and "2% per trade" in out["memories"][0]["value"]["content"]
    assert out["messages"][-1].content.startswith("From memory: rates: my risk limit is 2%")
    assert out["memories"][0]["value"]["thread_id"] == "a"
    assert mem.stats().promoted_turns == 1


def test_token_budget_and_recent_turns_across_threads(mem: Memory) -> None:
    graph = chat_graph(mem, max_tokens=60, across_threads=True)
    graph.invoke({"messages": [("user", "rates: first thread speaking")]}, cfg("x"))
    out = graph.invoke({"messages": [("user", "rates: second thread now")]}, cfg("y"))
    text = out["conversation"]
    assert "[thread x]" in text and "User: rates: second thread now" in text
    assert approx_tokens(text) <= 60 + 1  # blocks within the budget, plus the separator
    long = chat_graph(mem, max_tokens=15)
    out = long.invoke({"messages": [("user", "rates: " + "very long words " * 20)]}, cfg("z"))
    assert out["conversation"] == ""  # even the newest turn does not fit


def test_the_node_placed_before_the_model_records_the_previous_turn(mem: Memory) -> None:
    builder = StateGraph(ChatState)
    builder.add_node("conversation", conversation_node(mem.sessions, output_key=None))
    builder.add_node("chat", echo_model)
    builder.add_edge(START, "conversation")
    builder.add_edge("conversation", "chat")
    builder.add_edge("chat", END)
    graph = mem.compile(builder)
    graph.invoke({"messages": [("user", "rates: one")]}, cfg("p"))
    assert mem.sessions.get_session_context(thread_id="p") == []  # not answered yet when the node ran
    graph.invoke({"messages": [("user", "rates: two")]}, cfg("p"))
    assert [t.user for t in mem.sessions.get_session_context(thread_id="p")] == ["rates: one"]


def test_exchanges_skip_tool_work_and_unanswered_messages() -> None:
    msgs = [
        HumanMessage("price of SPY?", id="h1"),
        AIMessage("", id="a1", tool_calls=[{"name": "quote", "args": {"s": "SPY"}, "id": "c1"}]),
        ToolMessage("512.3", tool_call_id="c1", id="t1"),
        AIMessage("SPY is at 512.3", id="a2"),
        HumanMessage("thanks", id="h2"),
    ]
    (e,) = exchanges(msgs, "th")
    assert (e.user, e.assistant, e.source) == ("price of SPY?", "SPY is at 512.3", "conversation:th:h1:a2")
    # without ids: a hash of the place and the texts, stable across calls
    plain = [("user", "a"), ("ai", "b")]
    assert (
        exchanges(plain)[0].source
        == exchanges(list(plain))[0].source
        != exchanges([("user", "a"), ("ai", "c")])[0].source
    )
    assert exchanges([]) == []


def test_node_arguments_are_checked(mem: Memory) -> None:
    with pytest.raises(ConfigError):
        conversation_node(mem.store)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        conversation_node(mem.sessions, max_turns=0)
    with pytest.raises(ConfigError):
        conversation_node(mem.sessions, max_tokens=0)


def test_format_buffer_keeps_the_newest_turns() -> None:
    turns = [SessionTurn("s", i, f"q{i}", f"a{i}", float(i), thread_id="t") for i in range(5)]
    assert format_buffer(turns, thread_id="t").count("User:") == 5
    budget = format_buffer(turns, max_tokens=12, thread_id="t", token_counter=lambda s: 5)
    assert budget == "User: q3\nAssistant: a3\n\nUser: q4\nAssistant: a4"
