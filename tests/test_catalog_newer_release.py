"""A catalog written by a newer release is refused with a typed error that says to upgrade, on both backends."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from langgraph_memory.catalog._schema import SCHEMA_VERSION
from langgraph_memory.catalog.postgres.catalog import PgCatalog
from langgraph_memory.catalog.postgres.schema import SCHEMA_VERSION as PG_SCHEMA_VERSION
from langgraph_memory.errors import MigrationError
from langgraph_memory.memory import Memory


@pytest.mark.sqlite_only("writes the SQLite catalog file's schema version")
def test_a_catalog_file_from_a_newer_release_is_a_migration_error(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "memory") as mem:
        mem.store.put(("notes",), "n", {"text": "kept"})
    conn = sqlite3.connect(tmp_path / "memory" / "catalog.sqlite")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(MigrationError, match="newer than this package's.*upgrade langgraph-chroma-memory"):
        Memory.open(tmp_path / "memory")


def test_a_postgres_catalog_from_a_newer_release_is_a_migration_error(pg_database: str) -> None:
    PgCatalog(pg_database, timeout=10).close()
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("UPDATE meta SET value = %s WHERE key = 'schema_version'", (str(PG_SCHEMA_VERSION + 1),))
    with pytest.raises(MigrationError, match="newer than this package's.*upgrade langgraph-chroma-memory"):
        PgCatalog(pg_database, timeout=10)
