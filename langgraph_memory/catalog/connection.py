"""The connection the catalog's named queries take, named so that the store never names the driver.

The store holds connections only to pass them back to the catalog's functions
(`scope`, `vectors`, `items`, ...); it annotates them with
`Connection`, so a second catalog backend widens this one alias instead
of every signature in the store.

    >>> from langgraph_memory.catalog.connection import Connection
    >>> def newest(conn: Connection) -> int: ...
"""

from __future__ import annotations

import sqlite3
from typing import TypeAlias

__all__ = ["Connection"]

#: An open connection to the catalog, inside one of its transactions (SQLite today).
Connection: TypeAlias = sqlite3.Connection
