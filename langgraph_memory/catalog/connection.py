"""The connection the catalog's named queries take, and how a query picks its backend's statement.

The store holds connections only to pass them back to the catalog's functions
(`scope`, `vectors`, `items`, ...); it annotates them with
`Connection`, so a second catalog backend widens this one alias instead
of every signature in the store.

Each module of the catalog keeps its statements as constants next to the
code that runs them, and the query takes the one its connection runs with
``Sql.of(conn)``:

* a statement whose SQL differs is written out for each backend, a `Sql`
  pair: SQLite's text with ``?`` placeholders, PostgreSQL's with psycopg's
  ``%s`` (a literal ``%`` written ``%%``);
* a statement both read alike is written once, `Sql.both`: only its
  placeholders are spelled per driver (sqlite3 takes ``?``, psycopg
  ``%s``), when the module is imported.

A statement put together at run time (a list of placeholders, a filter)
picks with `of()`, or with `both()` when it reads alike. The connection
carries its backend: the PostgreSQL catalog's connection has
``dialect = "postgresql"``; a ``sqlite3.Connection`` has none.

    >>> import sqlite3
    >>> BUMP = Sql(
    ...     "UPDATE t SET n = max(n, ?) WHERE id = ?",
    ...     "UPDATE t SET n = GREATEST(n, %s) WHERE id = %s",
    ... )
    >>> BUMP.of(sqlite3.connect(":memory:"))
    'UPDATE t SET n = max(n, ?) WHERE id = ?'
    >>> Sql.both("SELECT value FROM meta WHERE key = ?").pg
    'SELECT value FROM meta WHERE key = %s'
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, TypeAlias

__all__ = ["Connection", "Sql", "Rows", "of", "both", "pg_placeholders", "dialect_of", "POSTGRESQL", "SQLITE"]

#: An open connection to the catalog, inside one of its transactions (SQLite today).
Connection: TypeAlias = sqlite3.Connection

POSTGRESQL = "postgresql"
SQLITE = "sqlite"


def dialect_of(conn: object) -> str:
    """``"postgresql"`` for the PostgreSQL catalog's connection, ``"sqlite"`` for a ``sqlite3.Connection``.

    Example:
        >>> dialect_of(sqlite3.connect(":memory:"))
        'sqlite'
    """
    return POSTGRESQL if getattr(conn, "dialect", None) == POSTGRESQL else SQLITE


def of(conn: object, sqlite: str, pg: str) -> str:
    """``sqlite`` or ``pg``, whichever ``conn`` runs (for a statement put together at run time).

    Example:
        >>> of(sqlite3.connect(":memory:"), "SELECT ?", "SELECT %s")
        'SELECT ?'
    """
    return pg if getattr(conn, "dialect", None) == POSTGRESQL else sqlite


def pg_placeholders(sql: str) -> str:
    """``sql`` with psycopg's placeholders: ``%s`` for each ``?``, ``%%`` for a literal ``%``.

    For a piece both backends read alike (a scope's condition) inside a
    statement written for PostgreSQL.

    Example:
        >>> pg_placeholders("ns LIKE 'a%' AND id = ?")
        "ns LIKE 'a%%' AND id = %s"
    """
    return sql.replace("%", "%%").replace("?", "%s")


def both(conn: object, sql: str) -> str:
    """``sql`` (``?`` placeholders) with the placeholders ``conn``'s driver takes (a statement put together at run time).

    Only for SQL both backends read alike.

    Example:
        >>> both(sqlite3.connect(":memory:"), "SELECT ?")
        'SELECT ?'
    """
    return pg_placeholders(sql) if getattr(conn, "dialect", None) == POSTGRESQL else sql


class Sql:
    """One statement of the catalog, written for each backend (or once, `both`, when they read it alike).

    Example:
        >>> Sql.both("DELETE FROM keywords WHERE item_id = ?").of(sqlite3.connect(":memory:"))
        'DELETE FROM keywords WHERE item_id = ?'
    """

    __slots__ = ("sqlite", "pg")

    def __init__(self, sqlite: str, pg: str) -> None:
        self.sqlite = sqlite
        self.pg = pg

    @classmethod
    def both(cls, sql: str) -> Sql:
        """A statement both backends read alike, written with ``?`` placeholders (no ``?`` but those)."""
        return cls(sql, pg_placeholders(sql))

    def of(self, conn: object) -> str:
        """The text ``conn`` runs."""
        return self.pg if getattr(conn, "dialect", None) == POSTGRESQL else self.sqlite

    def __repr__(self) -> str:
        return f"Sql({self.sqlite!r}, {self.pg!r})"


class Rows:
    """A plain INSERT of many rows, written in parts so that PostgreSQL gets them in few statements.

    SQLite runs the whole statement once per row (``executemany``: no round
    trip to save). PostgreSQL gets ``pg_head VALUES row, row, ... pg_tail``,
    one statement per 500 rows: a statement per row is parsed and planned per
    row (measured, batches of 100 puts: 38 against 48 ms p50). Only for an
    INSERT whose rows cannot meet in one statement (no ``DO UPDATE``, which
    may not touch a row twice in one statement).

    Example:
        >>> ENQUEUE = Rows.both("INSERT INTO q(a, b)", "(?, ?)")
        >>> ENQUEUE.sqlite, ENQUEUE.pg_row
        ('INSERT INTO q(a, b) VALUES (?, ?)', '(%s, %s)')
        >>> conn = sqlite3.connect(":memory:"); _ = conn.execute("CREATE TABLE q(a, b)")
        >>> ENQUEUE.insert(conn, [(1, 2), (3, 4)])
        >>> conn.execute("SELECT count(*) FROM q").fetchone()[0]
        2
    """

    __slots__ = ("sqlite", "pg_head", "pg_row", "pg_tail")

    def __init__(self, sqlite: str, pg_head: str, pg_row: str, pg_tail: str = "") -> None:
        self.sqlite = sqlite
        self.pg_head = pg_head
        self.pg_row = pg_row
        self.pg_tail = pg_tail

    @classmethod
    def both(cls, head: str, row: str) -> Rows:
        """``head VALUES row`` read alike by both backends (``?`` placeholders)."""
        return cls(f"{head} VALUES {row}", pg_placeholders(head), pg_placeholders(row))

    def insert(self, conn: Any, rows: Iterable[Sequence[Any]]) -> None:
        """Insert ``rows`` through ``conn``."""
        if getattr(conn, "dialect", None) == POSTGRESQL:
            conn.insert_rows(self.pg_head, self.pg_row, self.pg_tail, rows)
        else:
            conn.executemany(self.sqlite, rows)
