"""The checkpointer a memory's settings name: threads beside the catalog, on SQLite or PostgreSQL.

>>> import tempfile
>>> from langgraph_memory.config import Settings
>>> saver = open_checkpointer(Settings.resolve(tempfile.mkdtemp()))
>>> type(saver).__name__
'SqliteCheckpointer'
>>> saver.close()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph_memory.config import Settings

__all__ = ["open_checkpointer"]


def open_checkpointer(settings: Settings, *, read_only: bool = False) -> Any:
    """`PostgresCheckpointer` on the memory's server when its catalog is there, else `SqliteCheckpointer`.

    On a server, the checkpointer's tables go in the schema the address's
    ``search_path`` names (when it names one), beside the catalog's.
    ``read_only`` opens the SQLite file without writing anything beside it
    (a memory on a server is never opened read-only: see `Memory.open`).
    """
    if settings.catalog_url is not None:
        from langgraph_memory._infra.pg import search_path_schema
        from langgraph_memory.checkpoint.postgres import PostgresCheckpointer

        schema = search_path_schema(settings.catalog_url)
        if schema:
            return PostgresCheckpointer(settings.catalog_url, timeout=settings.lock_timeout, schema=schema)
        return PostgresCheckpointer(settings.catalog_url, timeout=settings.lock_timeout)
    from langgraph_memory.checkpoint import SqliteCheckpointer

    return SqliteCheckpointer(settings.checkpoints_path, lock_timeout=settings.lock_timeout, read_only=read_only)
