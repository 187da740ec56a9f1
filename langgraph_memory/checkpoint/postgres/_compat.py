"""Run the SQLite checkpointer's delta and retention code on PostgreSQL.

``checkpoint/_delta.py`` and ``checkpoint/_maintenance.py`` decide what a
prune may delete and what a DeltaChannel needs, through ``conn.execute``
calls with SQLite placeholders. The tables here have the same columns, so
rather than keeping a second copy of that logic, `SyncConnection`
and `LoopConnection` give it a connection whose ``execute``
rewrites the few dialect differences and qualifies the table names.

``LoopConnection`` serves the async saver: the SQLite-style code runs on a
worker thread and each statement hops to the event loop, which runs it on
the async driver. The loop is never blocked.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Iterator, Sequence
from typing import Any

from psycopg import AsyncConnection, Connection
from psycopg.rows import tuple_row

__all__ = ["LoopConnection", "SyncConnection", "translate_sql"]

_TABLES = re.compile(r"\b(checkpoints|blobs|writes)\b")


@functools.lru_cache(maxsize=256)
def translate_sql(sql: str, schema: str) -> str:
    """SQLite text of the shared modules as PostgreSQL text for ``schema``."""
    out = sql.replace("%", "%%").replace("?", "%s")
    # PostgreSQL's CROSS JOIN takes no ON; SQLite uses it only to fix the join order.
    out = out.replace("CROSS JOIN", "JOIN")
    out = out.replace("SUM(hidden = 0)", "SUM((hidden = 0)::int)")
    return _TABLES.sub(lambda m: f'"{schema}".{m.group(1)}', out)


class _Rows:
    """The part of ``sqlite3.Cursor`` the shared modules use."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows
        self._at = 0

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchall(self) -> list[tuple[Any, ...]]:
        rest, self._at = self._rows[self._at :], len(self._rows)
        return rest

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row

    def close(self) -> None:
        self._at = len(self._rows)


def _plain(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)


class SyncConnection:
    """A psycopg connection that speaks the shared modules' SQLite dialect."""

    def __init__(self, conn: Connection[Any], schema: str) -> None:
        self._conn = conn
        self._schema = schema

    def execute(self, sql: str, params: Sequence[Any] = ()) -> _Rows:
        with self._conn.cursor(row_factory=tuple_row) as cur:
            cur.execute(translate_sql(sql, self._schema), tuple(params))
            return _Rows([_plain(r) for r in cur.fetchall()] if cur.description else [])

    def executemany(self, sql: str, seq: Sequence[Sequence[Any]]) -> None:
        seq = [tuple(p) for p in seq]
        if seq:
            with self._conn.cursor() as cur:
                cur.executemany(translate_sql(sql, self._schema), seq)


class LoopConnection:
    """Like `SyncConnection`, called from a worker thread, run on ``loop``'s async connection."""

    def __init__(self, conn: AsyncConnection[Any], schema: str, loop: asyncio.AbstractEventLoop) -> None:
        self._conn = conn
        self._schema = schema
        self._loop = loop

    async def _execute(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        async with self._conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(translate_sql(sql, self._schema), params)
            return [_plain(r) for r in await cur.fetchall()] if cur.description else []

    async def _executemany(self, sql: str, seq: list[tuple[Any, ...]]) -> None:
        async with self._conn.cursor() as cur:
            await cur.executemany(translate_sql(sql, self._schema), seq)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> _Rows:
        future = asyncio.run_coroutine_threadsafe(self._execute(sql, tuple(params)), self._loop)
        return _Rows(future.result())

    def executemany(self, sql: str, seq: Sequence[Sequence[Any]]) -> None:
        rows = [tuple(p) for p in seq]
        if rows:
            asyncio.run_coroutine_threadsafe(self._executemany(sql, rows), self._loop).result()
