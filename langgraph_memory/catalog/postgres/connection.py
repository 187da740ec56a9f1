"""A PostgreSQL connection that the catalog's named queries use as they use SQLite's.

`PgConnection` wraps one psycopg 3 connection and gives it the small part of
``sqlite3.Connection`` the catalog calls: ``execute``, ``executemany``,
``in_transaction``, and cursors with ``fetchone``, ``fetchall``,
``rowcount`` and iteration. Each statement comes written in PostgreSQL's SQL
with psycopg's ``%s`` placeholders (each catalog module keeps its
backend's text: `langgraph_memory.catalog.connection.Sql`).

Values are bound on the client (psycopg's ``ClientCursor``), as SQLite binds
them: a parameter's type comes from where it is used, so ``? IS NULL`` and an
integer compared with a float column work alike in both dialects. Python
booleans go in as 0 and 1 (the catalog keeps them in integer columns), numpy
scalars as the numbers they hold, and ``numeric`` results (a ``sum`` of
integers) come back as ``int`` when whole.

    conn = PgConnection(psycopg.connect(url, autocommit=True))
    conn.execute("SELECT value FROM meta WHERE key = %s", ("catalog_id",)).fetchone()
"""

from __future__ import annotations

import functools
import logging
import math
import re
import selectors
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg import ClientCursor, pq
from psycopg import errors as pg_errors
from psycopg.adapt import Dumper, Loader, Transformer
from psycopg.types.numeric import FloatDumper, IntDumper

from langgraph_memory.catalog.connection import POSTGRESQL

__all__ = ["PgConnection", "PgCursor", "configure"]

logger = logging.getLogger(__name__)

_ENDS_TRANSACTION = frozenset({"COMMIT", "ROLLBACK"})
# A transaction committed as the server is configured (synchronously, by default) that writes a row of this
# connection's own (no other waits for it) and removes it: its commit flushes the WAL past every record this
# connection wrote before it.
_MARK = "'commit_mark:' || pg_backend_pid()"
_FLUSH = (
    "BEGIN; "
    f"INSERT INTO meta(key, value) VALUES ({_MARK}, '') ON CONFLICT (key) DO NOTHING; "
    f"DELETE FROM meta WHERE key = {_MARK}; COMMIT"
)
_TOKEN = re.compile(r"(%%|%s)")
# A CALL is of a procedure that writes (`langgraph_memory.catalog.history.KEEP_VERSION_PROCEDURE`).
_DML = re.compile(r"^\s*(INSERT|UPDATE|DELETE|CALL)\b", re.I)
_RETURNING = re.compile(r"\bRETURNING\b", re.I)
# Rows per multi-row INSERT: far below PostgreSQL's 65,535 parameters, and a statement of a few hundred kB.
_ROWS_PER_INSERT = 500


@functools.lru_cache(maxsize=512)
def _split(pg: str) -> list[str]:
    """``pg`` cut at its placeholders (kept as parts): the catalog's statements are a few shapes, bound often."""
    return _TOKEN.split(pg)


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
    """The result of one statement: rows and ``rowcount``."""

    def __init__(self, cur: ClientCursor[Any]) -> None:
        self._cur = cur

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount

    def fetchone(self) -> Any:
        return self._cur.fetchone() if self._cur.description is not None else None

    def fetchall(self) -> list[Any]:
        return self._cur.fetchall() if self._cur.description is not None else []

    def fetchmany(self, size: int) -> list[Any]:
        return self._cur.fetchmany(size) if self._cur.description is not None else []

    def __iter__(self) -> Iterator[Any]:
        if self._cur.description is None:
            return iter(())
        return iter(self._cur)


class _Pending:
    """Where a deferred statement's row count lands once it has run."""

    __slots__ = ("_rowcount",)

    def __init__(self) -> None:
        self._rowcount: int | None = -1

    @property
    def rowcount(self) -> int:
        if self._rowcount is None:
            raise RuntimeError("the row count of a statement must be read before its transaction commits")
        return self._rowcount

    @rowcount.setter
    def rowcount(self, value: int | None) -> None:
        self._rowcount = value


class _Deferred(PgCursor):
    """The cursor of statements sent later (rows they changed, summed); reading it sends them now."""

    def __init__(self, conn: PgConnection, pending: list[_Pending]) -> None:  # no cursor: nothing ran yet
        self._conn = conn
        self._pending = pending

    @property
    def rowcount(self) -> int:
        self._conn.flush()
        return sum(max(p.rowcount, 0) for p in self._pending)

    def fetchone(self) -> Any:
        self._conn.flush()
        return None

    def fetchall(self) -> list[Any]:
        self._conn.flush()
        return []

    def fetchmany(self, size: int) -> list[Any]:
        self._conn.flush()
        return []

    def __iter__(self) -> Iterator[Any]:
        self._conn.flush()
        return iter(())


class PgConnection:
    """A psycopg connection with the calls the catalog's queries make on a ``sqlite3.Connection``.

    Each statement is a round trip to the server, and on a busy machine a
    round trip costs a scheduling delay of the server process (measured:
    10-15 ms at a load average of 12 on 2 cores, against 0.1-0.3 ms when
    quiet). So statements whose results nobody waits for travel together:
    ``BEGIN`` and the write lock go with the transaction's first statement,
    and inside a write transaction (`batching`) an ``INSERT``, ``UPDATE``,
    ``DELETE`` or ``CALL`` without ``RETURNING`` is bound on the client and
    sent with the next statement that returns rows, or the ``COMMIT``, or
    when its ``rowcount`` is read. An error of such a statement fails the
    transaction as SQLite's would, raised by the call that sent it.
    """

    dialect = POSTGRESQL

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.raw = conn
        #: Defer writes until a statement needs an answer (set inside write transactions).
        self.batching = False
        self._deferred: list[tuple[str, _Pending | None]] = []
        #: A lock to take in front of the transaction's first change (a write opened with ``late=True``).
        self.order_lock: str | None = None
        self._order_checks: list[str] = []
        #: Set by a put that sends its items as new without looking them up (under a late lock): a duplicate key
        #: then fails on the items' UNIQUE (ns_id, key), which the catalog reports as a write conflict.
        self.guessed_new = False
        #: A COMMIT was sent without waiting for its answer (`end_read`): read it before the next statement.
        self._unread = False
        #: Items the open write transaction added (`PgCatalog` keeps the planner's statistics in step with them).
        self.items_added = 0
        configure(conn)
        self._literals = Transformer(conn)

    @property
    def in_transaction(self) -> bool:
        self._read_answer()
        return bool(self._deferred) or self.raw.info.transaction_status != pq.TransactionStatus.IDLE

    @property
    def closed(self) -> bool:
        return self.raw.closed

    def defer(self, sql: str) -> None:
        """Send ``sql`` (PostgreSQL's dialect, no parameters) in front of the next statement."""
        self._deferred.append((sql, None))

    def check_when_ordered(self, stale: str, params: Sequence[Any] = ()) -> bool:
        """Fail the transaction (SQLSTATE 40001) if the query ``stale`` finds a row once `order_lock` is held.

        For a write that read before taking the lock: ``stale`` (PostgreSQL's
        SQL) finds what changed since. Returns False when the lock was
        taken already (what was read came after it: nothing to check).
        """
        if self.order_lock is None:
            return False
        body = self._bind(stale, tuple(params))
        tag = "$lgm$"
        while tag in body:  # a dollar quote ends only at its own tag: pick one the values do not contain
            tag = f"$lgm{len(tag)}$"
        self._order_checks.append(
            f"DO {tag} BEGIN IF EXISTS ({body}) THEN RAISE EXCEPTION 'read rows changed before the write lock' "
            f"USING ERRCODE = 'serialization_failure'; END IF; END {tag}"
        )
        return True

    def _order(self, pg: str) -> None:
        """Before the transaction's first change: its lock, then the checks of what was read before it."""
        if _DML.match(pg) is not None:
            self.order_now()

    def order_now(self) -> None:
        """Take `order_lock` (then check what was read before it) with the next statement, even a read.

        For a write that must read under the lock (a version number) after
        reads that need not (its items).
        """
        if self.order_lock is not None:
            self._deferred.append((self.order_lock, None))
            self._deferred.extend((sql, None) for sql in self._order_checks)
            self.order_lock = None
            self._order_checks = []

    def end_read(self) -> None:
        """End a read-only transaction: its ``COMMIT`` leaves now, its answer is read by the next statement.

        A read transaction has nothing to commit, so nobody needs to wait for
        the answer; sent at once, the snapshot ends on the server without a
        round trip on the reader's path (a search is then two round trips,
        not three) and without a thread to send it later. A transaction the
        server never saw (its ``BEGIN`` still deferred) sends nothing.
        """
        if self._deferred:
            self._deferred = []
            return
        self._read_answer()
        if not self.raw.closed and self.raw.info.transaction_status != pq.TransactionStatus.IDLE:
            self.raw.pgconn.send_query(b"COMMIT")
            self._unread = True

    def _read_answer(self) -> None:
        """Read the answer of the COMMIT `end_read` sent (waiting, if it is not there yet, without the GIL)."""
        if not self._unread:
            return
        self._unread = False
        pgconn = self.raw.pgconn
        pgconn.consume_input()  # OperationalError when the connection is gone
        if pgconn.is_busy():
            with selectors.DefaultSelector() as sel:  # bounded by the connection's TCP timeouts
                sel.register(pgconn.socket, selectors.EVENT_READ)
                while pgconn.is_busy():
                    sel.select()
                    pgconn.consume_input()
        encoding = self.raw.info.encoding
        while (result := pgconn.get_result()) is not None:
            if result.status == pq.ExecStatus.FATAL_ERROR:
                raise pg_errors.error_from_result(result, encoding=encoding)

    def alive(self) -> bool:
        """Whether an idle connection still reaches the server, as far as one can tell without a round trip.

        A server that went away (a crash, a restart) closed the socket, and may
        have said why: reading what has arrived sees either, so a pooled read
        connection from before a restart is replaced instead of failing a read.
        """
        try:
            self._read_answer()
            self.raw.pgconn.consume_input()
        except psycopg.Error:
            return False
        return self.raw.pgconn.status == pq.ConnStatus.OK

    def flush(self) -> None:
        """Send every deferred statement now."""
        if self._deferred:
            self._run(ClientCursor(self.raw), "", ())

    def send_deferred(self) -> None:
        """Run what is deferred now, on its own (before using `raw` directly)."""
        self.flush()

    def _run(self, cur: ClientCursor[Any], pg: str, params: tuple[Any, ...]) -> None:
        """``pg`` after everything deferred, in one round trip; the cursor ends on ``pg``'s result."""
        self._read_answer()
        if not self._deferred:
            cur.execute(pg, params)
            return
        deferred, self._deferred = self._deferred, []
        parts = [sql.replace("%", "%%") for sql, _ in deferred]
        if pg:
            parts.append(pg)
        # A failed statement raises here: the rest never ran, and the transaction is lost as a whole.
        cur.execute("; ".join(parts), params)
        for i, (_, pending) in enumerate(deferred):  # the results come in order
            if i and not cur.nextset():
                break
            if pending is not None:
                pending.rowcount = cur.rowcount
        if pg:
            while cur.nextset():
                pass

    def _bind(self, pg: str, params: Sequence[Any]) -> str:
        """``pg`` with its values in place, as the server will read it (psycopg's own quoting, per value)."""
        values = iter(params)
        out = []
        for tok in _split(pg):
            if tok == "%s":
                value = next(values)
                kind = type(value)
                # Numbers and NULL spelled as psycopg's dumpers spell them, without a dumper lookup per value
                # (a put binds about twenty: a fifth of its client time went to quoting).
                if value is None:
                    out.append("NULL")
                elif kind is int or (kind is float and math.isfinite(value)):
                    text = str(value)
                    out.append(f" {text}" if text[0] == "-" else text)  # after a minus, never "--" (a comment)
                else:
                    out.append(self._literals.as_literal(value).decode())
            elif tok == "%%":
                out.append("%")
            else:
                out.append(tok)
        return "".join(out)

    def _deferrable(self, pg: str) -> bool:
        return self.batching and _DML.match(pg) is not None and _RETURNING.search(pg) is None

    def _ends(self, pg: str) -> PgCursor | None:
        """``COMMIT``/``ROLLBACK`` of a transaction the server has not seen yet: nothing to send."""
        word = pg.strip().upper()
        if word not in _ENDS_TRANSACTION or not self._deferred:
            return None
        self._read_answer()
        idle = self.raw.info.transaction_status == pq.TransactionStatus.IDLE
        if word == "ROLLBACK":
            self._deferred = []
            return PgCursor(ClientCursor(self.raw)) if idle else None
        if idle and all(p is None for _, p in self._deferred):
            self._deferred = []
            return PgCursor(ClientCursor(self.raw))
        return None

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        """Run one statement (PostgreSQL's SQL, ``%s`` placeholders)."""
        pg = sql
        done = self._ends(pg)
        if done is not None:
            self.order_lock = None
            self._order_checks = []
            return done
        self._order(pg)
        try:
            if self._deferrable(pg):
                pending = _Pending()
                self._deferred.append((self._bind(pg, tuple(params or ())), pending))
                return _Deferred(self, [pending])
            cur = ClientCursor(self.raw)
            self._run(cur, pg, tuple(params or ()))
        except psycopg.Error:
            logger.debug("catalog statement failed: %s", pg)
            raise
        return PgCursor(cur)

    def fetch_binary(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Every row of one query, its values bound by the server and its results in binary.

        For reads of many vectors: ``bytea`` in text comes as hex, twice its
        size and decoded by the client (measured, 100 vectors of 384
        dimensions with their items: 2.9 ms against 1.5 ms in binary). The
        parameters must be of the types of the columns they meet (the
        server binds them: no ``? IS NULL``). Sent on its own, after what is
        deferred; psycopg prepares it once it has been run a few times.
        """
        pg = sql
        self._read_answer()
        self.flush()
        try:
            with self.raw.cursor(binary=True) as cur:
                cur.execute(pg, tuple(params))
                return cur.fetchall()
        except psycopg.Error:
            logger.debug("catalog statement failed: %s", pg)
            raise

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> PgCursor:
        """Run one statement for each row of parameters (for a plain INSERT of many rows, `insert_rows`)."""
        pg = sql
        params = [tuple(r) for r in rows]
        self._order(pg)
        try:
            if self._deferrable(pg):
                pendings = [_Pending() for _ in params]
                self._deferred.extend((self._bind(pg, args), p) for args, p in zip(params, pendings, strict=True))
                return _Deferred(self, pendings)
            cur = ClientCursor(self.raw)
            self._read_answer()
            self.flush()
            cur.executemany(pg, params)
        except psycopg.Error:
            logger.debug("catalog statement failed: %s", pg)
            raise
        return PgCursor(cur)

    def insert_rows(self, head: str, row: str, tail: str, rows: Iterable[Sequence[Any]]) -> None:
        """``{head} VALUES {row}, {row}, ... {tail}`` for ``rows``: one statement per 500 rows (see `Rows`)."""
        params = [tuple(r) for r in rows]
        for start in range(0, len(params), _ROWS_PER_INSERT):
            chunk = params[start : start + _ROWS_PER_INSERT]
            self.execute(f"{head} VALUES {', '.join([row] * len(chunk))}{tail}", tuple(x for r in chunk for x in r))

    def commit_durably(self) -> None:
        """``COMMIT`` a transaction run with ``synchronous_commit`` off, and return once it is on disk.

        A write holds the catalog's write lock until its transaction ends,
        and a synchronous COMMIT ends only once its WAL is flushed: every
        machine's writes then queued behind one disk flush at a time
        (sampled under load: five of eight backends waiting on the lock,
        its holder in ``WalSync``). So the transaction commits without
        waiting, which releases the lock, and in the same round trip a
        second, synchronous transaction that takes a transaction id commits:
        its commit flushes the WAL up to its own record, which comes after
        ours, so when this returns our commit is durable (it must write a
        row: a transaction that wrote nothing commits without a flush, even
        with an id); and flushes of
        several machines' writes now share one disk write. Others may read
        the write a moment before it is durable; a crash then loses it with
        everything committed after it, never a write acknowledged to anyone.
        """
        self.order_lock = None
        self._order_checks = []
        if self._ends("COMMIT") is not None:  # the transaction never reached the server
            return
        deferred, self._deferred = self._deferred, []
        for _, pending in deferred:  # nobody read them inside the transaction: nobody will
            if pending is not None:
                pending.rowcount = None
        self._send_script("; ".join([sql for sql, _ in deferred] + ["COMMIT", _FLUSH]))

    def _send_script(self, script: str) -> None:
        """Run ``script`` (statements bound already, none returning rows anyone reads) in one round trip.

        Through libpq's blocking ``PQexec``, which releases the GIL from
        sending to the last result, and keeps only that last result: the
        cursor's non-blocking wait wakes this thread up and takes the GIL
        back for each step, and while the process's other threads (the
        index catch-up, the embedding cache's writer) hold the GIL each
        wake-up waits for them (measured on the put's commit: 0.9 ms of a
        5.9 ms single put). A failed statement ends the script: its error
        is the result, raised as psycopg raises it. The call cannot be
        interrupted (Ctrl-C is seen when it returns): it is bounded by the
        write lock's ``lock_timeout`` and the connection's TCP timeouts.
        """
        self._read_answer()
        encoding = self.raw.info.encoding
        result = self.raw.pgconn.exec_(script.encode(encoding))  # OperationalError when the connection is gone
        if result.status == pq.ExecStatus.FATAL_ERROR:
            if not result.error_field(pq.DiagnosticField.SQLSTATE):  # from libpq: the connection broke
                raise psycopg.OperationalError(result.get_error_message(encoding) or "the connection was lost")
            raise pg_errors.error_from_result(result, encoding=encoding)
        if result.status not in (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK, pq.ExecStatus.EMPTY_QUERY):
            raise psycopg.InternalError(f"unexpected result of a catalog script: {pq.ExecStatus(result.status).name}")

    def commit(self) -> None:
        self.raw.commit()

    def rollback(self) -> None:
        self.raw.rollback()

    def close(self) -> None:
        self.raw.close()
