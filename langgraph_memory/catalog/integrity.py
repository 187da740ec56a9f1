"""Is the catalog file whole? SQLite's ``quick_check``, run on open after an unclean shutdown.

A catalog page damaged on disk shows only when a statement reads it, which
may be long after the open (and a search that skips the page answers without
it). After a clean close the files are as the last session left them, so
the check is run only when the previous session did not close: the store
knows that from its index seal (`langgraph_memory.index.chroma`). SQLite's
``quick_check`` reads every page and checks each b-tree's structure and
records (not the indexes' agreement with their tables, which
``integrity_check`` adds at several times the cost).
"""

from __future__ import annotations

import sqlite3
from typing import Any

__all__ = ["quick_check"]

_PROBLEMS_SHOWN = 20


def quick_check(conn: Any) -> list[str]:
    """The problems SQLite finds in the catalog's pages (empty when whole; always empty off SQLite).

    Raises sqlite3.DatabaseError when a page is too damaged to be checked;
    the caller's ``guarded`` block turns it into ``CorruptFileError``.
    """
    if not isinstance(conn, sqlite3.Connection):
        return []  # a server keeps its own pages whole
    rows = conn.execute(f"PRAGMA quick_check({_PROBLEMS_SHOWN})").fetchall()
    problems = [str(r[0]) for r in rows]
    return [] if problems == ["ok"] else problems
