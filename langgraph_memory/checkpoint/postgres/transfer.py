"""Moving threads between checkpointers: a SQLite file to and from PostgreSQL, and LangGraph's PostgresSaver in.

::

    from langgraph_memory.checkpoint.postgres import PostgresCheckpointer
    from langgraph_memory.checkpoint.postgres.transfer import copy_from_sqlite, copy_to_sqlite

    with PostgresCheckpointer("postgresql://postgres@127.0.0.1:5432/postgres") as saver:
        report = copy_from_sqlite("memory/checkpoints.sqlite", saver)   # counts verified
        report = copy_to_sqlite(saver, "exported/checkpoints.sqlite")   # and back
        report = import_from_postgres_saver("postgresql://.../db", saver)  # PostgresSaver's tables

Both checkpointers store the same rows (a checkpoint without its channel
values, one blob per channel version, pending writes, the hidden ancestors a
DeltaChannel needs), so rows are copied as they are and the counts verified.
All are safe to run again: rows already copied are left as they are.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from psycopg import Connection
from psycopg.rows import tuple_row

from langgraph_memory.checkpoint.postgres.saver import PostgresCheckpointer
from langgraph_memory.errors import CheckpointError, ConfigError

__all__ = ["TransferReport", "copy_from_sqlite", "copy_to_sqlite", "import_from_postgres_saver"]

logger = logging.getLogger(__name__)

Progress = Callable[[str, int, "int | None"], None]

_BATCH = 500
# The columns both backends share; PostgreSQL's checkpoints add channel_versions (read from the checkpoint).
_COLUMNS = {
    "checkpoints": (
        *("thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type", "checkpoint"),
        *("metadata", "run_id", "created_at", "delta_channels", "hidden"),
    ),
    "blobs": ("thread_id", "checkpoint_ns", "channel", "version", "type", "blob"),
    "writes": (
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "task_id",
        "task_path",
        "idx",
        "channel",
        "type",
        "value",
    ),
}


@dataclass(frozen=True)
class TransferReport:
    """What was copied: threads, and rows per table (equal in source and target when verified)."""

    threads: int
    checkpoints: int
    blobs: int
    writes: int


def _sqlite_path(source: str | os.PathLike[str]) -> Path:
    path = Path(source).expanduser()
    if path.is_dir():
        path = path / "checkpoints.sqlite"
    if not path.is_file():
        raise ConfigError(f"no checkpoint file at {path}: give a checkpoints.sqlite file or its data directory")
    return path


def _target(target: PostgresCheckpointer | str) -> tuple[PostgresCheckpointer, bool]:
    if isinstance(target, PostgresCheckpointer):
        return target, False
    return PostgresCheckpointer(target, check_conflicts=False), True


def copy_from_sqlite(
    source: str | os.PathLike[str],
    target: PostgresCheckpointer | str,
    *,
    serde: Any = None,
    progress: Progress | None = None,
) -> TransferReport:
    """Copy every thread of a ``checkpoints.sqlite`` into PostgreSQL, rows as they are, and verify.

    Hidden rows (ancestors a DeltaChannel needs), activity times and pending
    writes are kept. An older file is first brought to the current schema by
    opening it with ``SqliteCheckpointer``. Raises ``CheckpointError`` if the
    counts of the copied threads differ afterwards (for instance because the
    target already held other checkpoints under the same thread ids).
    """
    from langgraph_memory.checkpoint import SqliteCheckpointer

    path = _sqlite_path(source)
    SqliteCheckpointer(path, serde=serde).close()  # migrates an old file in place, else a no-op
    saver, owned = _target(target)
    reader = serde if serde is not None else saver.serde
    src = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        threads = [t for (t,) in src.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY 1")]
        expected = {table: src.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in _COLUMNS}
        saver.setup()
        s = f'"{saver.schema}"'

        def convert(table: str, row: tuple[Any, ...]) -> tuple[Any, ...]:
            if table != "checkpoints":
                return row
            try:
                versions = reader.loads_typed((row[4], row[5])).get("channel_versions") or {}
            except Exception as exc:
                raise CheckpointError(
                    f"checkpoint {row[2]} of thread {row[0]!r} does not deserialize ({exc!r}); pass the "
                    "serde (e.g. the EncryptedSerializer) that wrote the file"
                ) from exc
            metadata = row[6] or "{}"
            return (*row[:6], metadata, *row[7:], json.dumps({k: str(v) for k, v in versions.items()}))

        def copy(conn: Connection[Any]) -> None:
            for table, columns in _COLUMNS.items():
                names = (*columns, "channel_versions") if table == "checkpoints" else columns
                insert = (
                    f"INSERT INTO {s}.{table} ({', '.join(names)}) VALUES ({', '.join(['%s'] * len(names))}) "
                    "ON CONFLICT DO NOTHING"
                )
                cur = src.execute(f"SELECT {', '.join(columns)} FROM {table}")
                done = 0
                while rows := cur.fetchmany(_BATCH):
                    with conn.cursor() as pg:
                        pg.executemany(insert, [convert(table, r) for r in rows])
                    done += len(rows)
                    if progress is not None:
                        progress(table, done, expected[table])

        saver.database.run(copy, "copy checkpoints from SQLite", transaction=True)
        report = TransferReport(len(threads), expected["checkpoints"], expected["blobs"], expected["writes"])
        _verify(saver, threads, expected)
        logger.info("copied %s from %s", report, path)
        return report
    finally:
        src.close()
        if owned:
            saver.close()


def _verify(saver: PostgresCheckpointer, threads: Sequence[str], expected: dict[str, int]) -> None:
    s = f'"{saver.schema}"'

    def count(conn: Connection[Any]) -> dict[str, int]:
        with conn.cursor(row_factory=tuple_row) as cur:
            found = {}
            for table in expected:
                cur.execute(f"SELECT count(*) FROM {s}.{table} WHERE thread_id = ANY(%s)", (list(threads),))
                row = cur.fetchone()
                found[table] = int(row[0]) if row else 0
            return found

    found = saver.database.run(count, "verify copied checkpoints")
    if found != expected:
        raise CheckpointError(
            f"copied threads do not match their source: expected rows {expected}, found {found} in PostgreSQL. "
            "Did the target already hold checkpoints under the same thread ids?"
        )


def copy_to_sqlite(
    source: PostgresCheckpointer | str, target: str | os.PathLike[str], *, progress: Progress | None = None
) -> TransferReport:
    """Copy every thread of ``source`` into the SQLite file ``target`` (created if missing), then verify the counts.

    Raises:
        CheckpointError: the file holds other rows under the same keys, so its counts differ afterwards.
    """
    from langgraph_memory.checkpoint import SqliteCheckpointer

    path = Path(target).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    SqliteCheckpointer(path).close()  # creates (or migrates) the tables
    saver, owned = _target(source)
    s = f'"{saver.schema}"'

    def read(conn: Connection[Any]) -> dict[str, list[tuple[Any, ...]]]:
        with conn.cursor(row_factory=tuple_row) as cur:
            out = {}
            for table, columns in _COLUMNS.items():
                cur.execute(f"SELECT {', '.join(columns)} FROM {s}.{table}")
                out[table] = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in cur.fetchall()]
            # JSONB metadata comes back parsed
            out["checkpoints"] = [(*r[:6], json.dumps(r[6]), *r[7:]) for r in out["checkpoints"]]
            return out

    try:
        saver.setup()
        rows = saver.database.run(read, "export checkpoints")
    finally:
        if owned:
            saver.close()
    dst = sqlite3.connect(path, timeout=30)
    try:
        with dst:
            for table, columns in _COLUMNS.items():
                marks = ", ".join("?" * len(columns))
                dst.executemany(f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows[table])
                if progress is not None:
                    progress(table, len(rows[table]), len(rows[table]))
        found = {table: dst.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in _COLUMNS}
    finally:
        dst.close()
    expected = {table: len(r) for table, r in rows.items()}
    if found != expected:
        raise CheckpointError(
            f"the exported threads do not match their source: expected rows {expected}, found {found} in {path}. "
            "Export into a file that holds no other checkpoints."
        )
    report = TransferReport(len({r[0] for r in rows["checkpoints"]}), *expected.values())
    logger.info("exported %s into %s", report, path)
    return report


def import_from_postgres_saver(
    source: str | Connection[Any],
    target: PostgresCheckpointer | str,
    *,
    thread_ids: Iterable[str] | None = None,
    progress: Progress | None = None,
) -> TransferReport:
    """Import threads written by LangGraph's ``PostgresSaver`` (its ``public.checkpoints`` tables).

    Each checkpoint is read with ``PostgresSaver`` itself (so any version of
    its schema it can read is understood) and stored with its id, parent,
    metadata and pending writes; a graph compiled with the target resumes
    every thread where it stopped. ``source`` is a connection string or an
    autocommit psycopg connection with ``dict_row`` rows, as PostgresSaver
    needs. Needs ``langgraph-checkpoint-postgres``.
    """
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError(
            "importing PostgresSaver threads needs langgraph-checkpoint-postgres: "
            "pip install langgraph-checkpoint-postgres"
        ) from exc
    import psycopg
    from psycopg.rows import dict_row

    saver, owned = _target(target)
    own_conn = isinstance(source, str)
    conn = (
        psycopg.connect(source, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        if isinstance(source, str)
        else source
    )
    try:
        reader = PostgresSaver(conn, serde=saver.serde)
        wanted = None if thread_ids is None else {str(t) for t in thread_ids}
        threads: set[str] = set()
        checkpoints = writes = 0
        for tup in reader.list(None):
            configurable = tup.config["configurable"]
            thread_id = str(configurable["thread_id"])
            if wanted is not None and thread_id not in wanted:
                continue
            threads.add(thread_id)
            parent: dict[str, Any] = {
                "configurable": {"thread_id": thread_id, "checkpoint_ns": configurable.get("checkpoint_ns", "")}
            }
            if tup.parent_config is not None:
                parent["configurable"]["checkpoint_id"] = tup.parent_config["configurable"]["checkpoint_id"]
            checkpoint = tup.checkpoint
            versions = dict(checkpoint.get("channel_versions") or {})
            saved = saver.put(parent, checkpoint, tup.metadata, versions)  # type: ignore[arg-type]
            by_task: dict[str, list[tuple[str, Any]]] = {}
            for task_id, channel, value in tup.pending_writes or ():
                by_task.setdefault(task_id, []).append((channel, value))
            for task_id, task_writes in by_task.items():
                saver.put_writes(saved, task_writes, task_id)
                writes += len(task_writes)
            checkpoints += 1
            if progress is not None:
                progress("checkpoints", checkpoints, None)
        report = TransferReport(len(threads), checkpoints, 0, writes)
        _verify_import(saver, reader, sorted(threads))
        logger.info("imported %s from PostgresSaver", report)
        return report
    finally:
        if own_conn:
            conn.close()
        if owned:
            saver.close()


def _verify_import(saver: PostgresCheckpointer, reader: Any, threads: Sequence[str]) -> None:
    for thread_id in threads:
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        source = sum(1 for _ in reader.list(config))
        copied = sum(1 for _ in saver.list(config))
        if copied < source:
            raise CheckpointError(
                f"thread {thread_id!r}: {source} checkpoints in PostgresSaver, only {copied} imported"
            )
