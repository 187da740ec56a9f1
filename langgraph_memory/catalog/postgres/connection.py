"""A PostgreSQL connection that the catalog's named queries use as they use SQLite's.

`PgConnection` wraps one psycopg 3 connection and gives it the small part of
``sqlite3.Connection`` the catalog calls: ``execute``, ``executemany``,
``in_transaction``, and cursors with ``fetchone``, ``fetchall``,
``rowcount``, ``lastrowid`` and iteration. Each statement goes through
`langgraph_memory.catalog.postgres.dialect.translate` first.

Values are bound on the client (psycopg's ``ClientCursor``), as SQLite binds
them: a parameter's type comes from where it is used, so ``? IS NULL`` and an
integer compared with a float column work alike in both dialects. Python
booleans go in as 0 and 1 (the catalog keeps them in integer columns), numpy
scalars as the numbers they hold, and ``numeric`` results (a ``sum`` of
integers) come back as ``int`` when whole.

    conn = PgConnection(psycopg.connect(url, autocommit=True))
    conn.execute("SELECT value FROM meta WHERE key = ?", ("catalog_id",)).fetchone()
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg import ClientCursor, pq
from psycopg.adapt import Dumper, Loader
from psycopg.types.numeric import FloatDumper, IntDumper

from langgraph_memory.catalog.postgres.dialect import POSTGRESQL, translate

__all__ = ["PgConnection", "PgCursor", "configure"]

logger = logging.getLogger(__name__)

# Tables whose rows get their id from a sequence: an INSERT into them returns it (SQLite's lastrowid).
_SERIAL_INSERT = re.compile(r"^\s*INSERT INTO (namespaces|items|models|index_queue)\b(?!.*\bRETURNING\b)", re.I | re.S)


class _BoolAsInt(Dumper):
    """``True``/``False`` as ``1``/``0``: the catalog keeps flags in integer columns, as SQLite does."""

    oid = psycopg.adapters.types["int8"].oid

    def dump(self, obj: bool) -> bytes:
        return b"1" if obj else b"0"

    def quote(self, obj: bool) -> bytes:
        return self.dump(obj)


class _NumpyInt(IntDumper):
    def dump(self, obj: Any) -> bytes:
        return str(int(obj)).encode()

    def quote(self, obj: Any) -> bytes:
        value = int(obj)
        return f" {value}".encode() if value < 0 else str(value).encode()


class _NumpyFloat(FloatDumper):
    def dump(self, obj: Any) -> bytes:
        return bytes(super().dump(float(obj)) or b"")

    def quote(self, obj: Any) -> bytes:
        return bytes(super().quote(float(obj)))


class _WholeNumeric(Loader):
    """``numeric`` (what ``sum`` of integers gives) as an ``int`` when whole, else a ``float``."""

    def load(self, data: Any) -> int | float:
        text = bytes(data).decode()
        return int(text) if text.lstrip("-").isdigit() else float(text)


def configure(conn: psycopg.Connection[Any]) -> None:
    """Install the catalog's adapters on a new connection."""
    adapters = conn.adapters
    adapters.register_dumper(bool, _BoolAsInt)
    for t in (np.int64, np.int32, np.int16, np.int8, np.uint32, np.uint16, np.uint8):
        adapters.register_dumper(t, _NumpyInt)
    for f in (np.float32, np.float16):
        adapters.register_dumper(f, _NumpyFloat)
    adapters.register_loader("numeric", _WholeNumeric)


class PgCursor:
    """The result of one statement: rows, ``rowcount``, and the id an INSERT gave (``lastrowid``)."""

    def __init__(self, cur: ClientCursor[Any], lastrowid: int | None = None) -> None:
        self._cur = cur
        self.lastrowid = lastrowid

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount

    def _rows(self, fetch: Any) -> Any:
        # A statement without a result (an UPDATE) has no rows to give, as in sqlite3; in a pipeline the
        # description is only known once the result arrives, so ask for the rows and read the answer.
        try:
            return fetch()
        except psycopg.ProgrammingError:
            if self._cur.description is None:
                return None
            raise

    def fetchone(self) -> Any:
        return self._rows(self._cur.fetchone)

    def fetchall(self) -> list[Any]:
        return self._rows(self._cur.fetchall) or []

    def fetchmany(self, size: int) -> list[Any]:
        return self._rows(lambda: self._cur.fetchmany(size)) or []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class PgConnection:
    """A psycopg connection with the calls the catalog's queries make on a ``sqlite3.Connection``."""

    dialect = POSTGRESQL

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.raw = conn
        configure(conn)

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != pq.TransactionStatus.IDLE

    @property
    def closed(self) -> bool:
        return self.raw.closed

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        """Run one statement (SQLite dialect, ``?`` placeholders)."""
        pg = translate(sql)
        cur = ClientCursor(self.raw)
        try:
            if _SERIAL_INSERT.match(pg):
                cur.execute(f"{pg} RETURNING {'seq' if 'index_queue' in pg[:40] else 'id'}", tuple(params or ()))
                row = cur.fetchone()
                return PgCursor(cur, None if row is None else int(row[0]))
            cur.execute(pg, tuple(params or ()))
        except psycopg.Error:
            logger.debug("catalog statement failed: %s", pg)
            raise
        return PgCursor(cur)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> PgCursor:
        """Run one statement for each row of parameters."""
        cur = ClientCursor(self.raw)
        pg = translate(sql)
        try:
            cur.executemany(pg, [tuple(r) for r in rows])
        except psycopg.Error:
            logger.debug("catalog statement failed: %s", pg)
            raise
        return PgCursor(cur)

    def commit(self) -> None:
        self.raw.commit()

    def rollback(self) -> None:
        self.raw.rollback()

    def close(self) -> None:
        self.raw.close()
