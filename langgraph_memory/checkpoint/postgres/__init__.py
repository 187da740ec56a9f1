"""The checkpointer on PostgreSQL: LangGraph state shared by every machine.

::

    from langgraph_memory.checkpoint.postgres import PostgresCheckpointer  # noqa: E402

    with PostgresCheckpointer.from_conn_string("postgresql://postgres@127.0.0.1:5432/postgres") as saver:
        saver.setup()
        # graph = builder.compile(checkpointer=saver); graph.invoke(...) or await graph.ainvoke(...)

Needs ``psycopg`` and ``psycopg_pool``: the ``postgres`` extra (``pip install -e ".[postgres]"`` in the clone).
"""

from __future__ import annotations

from langgraph_memory._infra.extras import require_extra

# Before the modules below import psycopg: without the extra, say which one to install.
require_extra("postgres", "the PostgreSQL checkpointer")

from langgraph_memory.checkpoint.postgres._schema import DEFAULT_SCHEMA, SCHEMA_VERSION  # noqa: E402
from langgraph_memory.checkpoint.postgres.saver import PostgresCheckpointer  # noqa: E402
from langgraph_memory.checkpoint.postgres.transfer import (  # noqa: E402
    TransferReport,
    copy_from_sqlite,
    copy_to_sqlite,
    import_from_postgres_saver,
)

__all__ = [
    "DEFAULT_SCHEMA",
    "SCHEMA_VERSION",
    "PostgresCheckpointer",
    "TransferReport",
    "copy_from_sqlite",
    "copy_to_sqlite",
    "import_from_postgres_saver",
]
