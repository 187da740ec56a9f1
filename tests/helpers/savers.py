"""The checkpointer under test: `SqliteCheckpointer` and `PostgresCheckpointer`, one fixture for both.

``any_saver`` runs a test once per checkpointer (PostgreSQL on a fresh
database of the session's server, tests/helpers/postgres.py); tests of what
only one of them has (SQLite's file and WAL; PostgreSQL's
JSONB and conflict errors) use ``saver`` in their own files.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(params=["sqlite", "postgres"])
def any_saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        from langgraph_memory.checkpoint import SqliteCheckpointer

        with SqliteCheckpointer(tmp_path / "cp.sqlite") as s:
            yield s
        return
    from langgraph_memory.checkpoint.postgres import PostgresCheckpointer

    url = request.getfixturevalue("pg_database")
    with PostgresCheckpointer(url, timeout=30) as s:
        s.setup()
        yield s
