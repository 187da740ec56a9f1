"""The checkpointer: LangGraph state on SQLite, for sync and async graphs alike.

::

    from langgraph_memory.checkpoint import SqliteCheckpointer

    saver = SqliteCheckpointer(data_dir="/tmp/lgm-demo")   # <data_dir>/checkpoints.sqlite
    # graph = builder.compile(checkpointer=saver); graph.invoke(...) or await graph.ainvoke(...)
    saver.close()
"""

from __future__ import annotations

from langgraph_memory.checkpoint.saver import PruneStrategy, SqliteCheckpointer, ThreadInfo
from langgraph_memory.checkpoint.schema import SCHEMA_VERSION, Durability

__all__ = [
    "SqliteCheckpointer",
    "ThreadInfo",
    "PruneStrategy",
    "Durability",
    "SCHEMA_VERSION",
]
