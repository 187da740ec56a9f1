"""A ReAct graph whose 'LLM' is a script of tool calls, for tests of memory tools in a real ToolNode."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

Call = dict[str, Any] | Callable[[Any], dict[str, Any]]


def react_graph(store: Any, tools: Sequence[Any], calls: Sequence[Call], **graph_kwargs: Any) -> Any:
    """Agent -> tools -> agent ...: the agent emits ``calls`` one per turn (a dict, or a function of the state), then stops."""

    def agent(state: MessagesState) -> dict[str, Any]:
        turn = sum(isinstance(m, AIMessage) for m in state["messages"])
        if turn < len(calls):
            call = calls[turn](state) if callable(calls[turn]) else calls[turn]
            return {"messages": [AIMessage("", tool_calls=[{**call, "id": f"c{turn}"}])]}
        return {"messages": [AIMessage("done")]}

    b = StateGraph(MessagesState, **graph_kwargs)
    b.add_node("agent", agent)
    b.add_node("tools", ToolNode(list(tools)))
    b.add_edge(START, "agent")
    b.add_conditional_edges("agent", lambda s: "tools" if s["messages"][-1].tool_calls else END, ["tools", END])
    b.add_edge("tools", "agent")
    return b.compile(store=store)
