"""The checkpointers: LangGraph state on SQLite or PostgreSQL, for sync and async graphs alike.

::

    from langgraph_memory.checkpoint import SqliteCheckpointer

    saver = SqliteCheckpointer(data_dir="/tmp/lgm-demo")   # <data_dir>/checkpoints.sqlite
    # graph = builder.compile(checkpointer=saver); graph.invoke(...) or await graph.ainvoke(...)
    saver.close()

On a server, ``langgraph_memory.checkpoint.postgres.PostgresCheckpointer`` is the same API (it needs the
``postgres`` extra); ``Memory.open("postgresql://...")`` picks it for you.
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
