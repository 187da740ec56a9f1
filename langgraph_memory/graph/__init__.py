"""Memory inside LangGraph graphs: recall and store nodes, agent tools, the conversation node."""

from __future__ import annotations

from langgraph_memory.graph.conversation import conversation_node, last_human_text
from langgraph_memory.graph.nodes import recall_node, store_node
from langgraph_memory.graph.time_travel import checkpoint_store, checkpoint_time
from langgraph_memory.graph.tools import create_recall_tool, create_store_tool

__all__ = [
    "recall_node",
    "store_node",
    "create_recall_tool",
    "create_store_tool",
    "conversation_node",
    "last_human_text",
    "checkpoint_store",
    "checkpoint_time",
]
