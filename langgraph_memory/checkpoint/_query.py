"""SQLite's SQL: writing checkpoints and writes, reading them back (filters, rows and blobs to ``CheckpointTuple``), and `QUERIES`.

Writes are serialized here, off any lock, and handed to the connection pool
as statements.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph_memory.checkpoint._delta import Queries
from langgraph_memory.checkpoint._pool import Statement
from langgraph_memory.checkpoint._rows import checkpoint_tuple, put_row, write_rows
from langgraph_memory.checkpoint.schema import PUT_ROWS_SQL

CHECKPOINT_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"
_SELECT = f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints c"
CheckpointRow = tuple[str, str, str, "str | None", str, bytes, "str | None"]

# One primary-key lookup per wanted (channel, version): CROSS JOIN keeps
# SQLite from scanning the thread's blobs instead.
BLOBS_SQL = (
    "WITH want(channel, version) AS (VALUES {marks}) "
    "SELECT w.channel, w.version, b.type, b.blob FROM want w CROSS JOIN blobs b "
    "ON b.thread_id = ? AND b.checkpoint_ns = ? AND b.channel = w.channel AND b.version = w.version"
)
_BLOB_CHUNK = 400  # (channel, version) pairs per query: two bound parameters each
_WRITES_CHUNK = 500  # checkpoint ids per query

WRITES_SQL = (
    "SELECT checkpoint_id, task_id, channel, type, value, task_path, idx FROM writes "
    "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id IN ({marks})"
)


def _json_array(values: Sequence[Any]) -> str:
    return json.dumps(list(values))


_IN = "IN (SELECT value FROM json_each(?))"  # a list bound as one JSON parameter

QUERIES = Queries(
    array=_json_array,
    mark="?",
    select=_SELECT,
    get_by_id=f"{_SELECT} WHERE c.thread_id = ? AND c.checkpoint_ns = ? AND c.checkpoint_id = ? AND c.hidden = 0",
    get_latest=f"{_SELECT} WHERE c.thread_id = ? AND c.checkpoint_ns = ? AND c.hidden = 0 "
    "ORDER BY c.checkpoint_id DESC LIMIT 1",
    latest_id="SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND hidden = 0 "
    "ORDER BY checkpoint_id DESC LIMIT 1",
    # Target first, then its ancestors nearest first, following
    # parent_checkpoint_id (ids are monotonic only within one process, so an
    # id range scan could miss a parent). CROSS JOIN keeps each step a
    # primary-key lookup. Hidden rows take part: they exist for this walk.
    ancestors="WITH RECURSIVE ancestors(checkpoint_id, parent_checkpoint_id, type, checkpoint) AS ("
    "SELECT checkpoint_id, parent_checkpoint_id, type, checkpoint FROM checkpoints "
    "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? "
    "UNION ALL "
    "SELECT c.checkpoint_id, c.parent_checkpoint_id, c.type, c.checkpoint "
    "FROM ancestors a CROSS JOIN checkpoints c ON c.checkpoint_id = a.parent_checkpoint_id "
    "WHERE c.thread_id = ? AND c.checkpoint_ns = ?) "
    "SELECT checkpoint_id, type, checkpoint FROM ancestors",
    has_blob="SELECT 1 FROM blobs WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?",
    blob="SELECT type, blob FROM blobs WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?",
    delta_writes="SELECT checkpoint_id, channel, task_path, task_id, idx, type, value FROM writes "
    f"WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id {_IN} AND channel {_IN}",
    namespace_rows="SELECT checkpoint_id, delta_channels, hidden FROM checkpoints "
    "WHERE thread_id = ? AND checkpoint_ns = ?",
    delete_writes_of=f"DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id {_IN}",
    delete_checkpoints_of=f"DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id {_IN}",
    hide=f"UPDATE checkpoints SET hidden = 1 WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id {_IN}",
    blob_refs="SELECT type, checkpoint, hidden, delta_channels FROM checkpoints "
    "WHERE thread_id = ? AND checkpoint_ns = ?",
    blob_keys="SELECT channel, version FROM blobs WHERE thread_id = ? AND checkpoint_ns = ?",
    delete_blobs="DELETE FROM blobs WHERE thread_id = ? AND checkpoint_ns = ? AND (channel, version) IN "
    "(SELECT c.value, v.value FROM json_each(?) c JOIN json_each(?) v ON v.key = c.key)",
    delete_thread=(
        "DELETE FROM checkpoints WHERE thread_id = ?",
        "DELETE FROM writes WHERE thread_id = ?",
        "DELETE FROM blobs WHERE thread_id = ?",
    ),
    checkpoints_of_runs=f"SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints WHERE run_id {_IN} "
    "AND hidden = 0",
    namespaces="SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = ?",
    visible_ids="SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND hidden = 0 "
    "ORDER BY checkpoint_id DESC",
    delete_orphan_writes="DELETE FROM writes WHERE thread_id = ? AND NOT EXISTS (SELECT 1 FROM checkpoints c "
    "WHERE c.thread_id = writes.thread_id AND c.checkpoint_ns = writes.checkpoint_ns "
    "AND c.checkpoint_id = writes.checkpoint_id)",
    copy_thread=(
        "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
        "checkpoint, metadata, run_id, created_at, delta_channels, hidden) SELECT ?, checkpoint_ns, checkpoint_id, "
        "parent_checkpoint_id, type, checkpoint, metadata, run_id, ?, delta_channels, hidden FROM checkpoints "
        "WHERE thread_id = ?",
        "INSERT OR REPLACE INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, "
        "type, value) SELECT ?, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value "
        "FROM writes WHERE thread_id = ?",
        "INSERT OR REPLACE INTO blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
        "SELECT ?, checkpoint_ns, channel, version, type, blob FROM blobs WHERE thread_id = ?",
    ),
    list_threads="SELECT thread_id, MAX(created_at), COUNT(*) FILTER (WHERE hidden = 0) FROM checkpoints "
    "GROUP BY thread_id ORDER BY 2 DESC, 1",
    thread_size="SELECT (SELECT coalesce(sum(length(checkpoint) + coalesce(length(metadata), 0)), 0) "
    "FROM checkpoints WHERE thread_id = ?), (SELECT coalesce(sum(length(blob)), 0) FROM blobs WHERE thread_id = ?), "
    "(SELECT coalesce(sum(length(value)), 0) FROM writes WHERE thread_id = ?)",
    inactive_threads="SELECT thread_id FROM checkpoints GROUP BY thread_id HAVING MAX(created_at) < ? "
    "ORDER BY MAX(created_at), thread_id",
)


def _filter_value(value: Any) -> tuple[str, Any]:
    # Mirrors SqliteSaver: json_extract yields SQL scalars, and JSON text
    # without whitespace for objects and arrays.
    if value is None:
        return "IS ?", None
    if isinstance(value, bool):
        return "= ?", 1 if value else 0
    if isinstance(value, (str, int, float)):
        return "= ?", value
    if isinstance(value, (dict, list)):
        return "= ?", json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return "= ?", str(value)


def metadata_filter(filter: dict[str, Any]) -> tuple[list[str], list[Any]]:
    predicates, params = [], []
    for key, value in filter.items():
        operator, param = _filter_value(value)
        predicates.append(f"json_extract(c.metadata, '$.{key}') {operator}")
        params.append(param)
    return predicates, params


def load_writes(
    conn: sqlite3.Connection,
    serde: SerializerProtocol,
    thread_id: str,
    checkpoint_ns: str,
    checkpoint_ids: Sequence[str],
) -> dict[str, list[PendingWrite]]:
    """Pending writes of some checkpoints of one namespace, in ``writes_sort_key`` order."""
    rows: list[Any] = []
    for start in range(0, len(checkpoint_ids), _WRITES_CHUNK):
        chunk = checkpoint_ids[start : start + _WRITES_CHUNK]
        rows += conn.execute(
            WRITES_SQL.format(marks=",".join("?" * len(chunk))), (thread_id, checkpoint_ns, *chunk)
        ).fetchall()
    rows.sort(key=lambda r: (r[0], *writes_sort_key(r[5], r[1], r[6])))
    out: dict[str, list[PendingWrite]] = {cid: [] for cid in checkpoint_ids}
    for cid, task_id, channel, type_, value, _path, _idx in rows:
        out[cid].append((task_id, channel, serde.loads_typed((type_, value))))
    return out


def load_blobs(
    conn: sqlite3.Connection,
    thread_id: str,
    checkpoint_ns: str,
    wanted: Sequence[tuple[str, str]],
) -> dict[tuple[str, str], tuple[str, bytes]]:
    """Serialized values of ``(channel, version)`` pairs of one namespace; absent ones left out."""
    found: dict[tuple[str, str], tuple[str, bytes]] = {}
    for start in range(0, len(wanted), _BLOB_CHUNK):
        chunk = wanted[start : start + _BLOB_CHUNK]
        rows = conn.execute(
            BLOBS_SQL.format(marks=",".join(["(?, ?)"] * len(chunk))),
            (*(part for pair in chunk for part in pair), thread_id, checkpoint_ns),
        ).fetchall()
        for channel, version, type_, blob in rows:
            found[(channel, version)] = (type_, blob)
    return found


def load_checkpoints(
    conn: sqlite3.Connection, serde: SerializerProtocol, rows: Sequence[CheckpointRow]
) -> list[Checkpoint]:
    """The checkpoints of rows, ``channel_values`` reassembled from their versions' blobs.

    Each value is deserialized once per checkpoint, as LangGraph's savers do,
    so no two returned checkpoints share a mutable value.
    """
    checkpoints: list[Checkpoint] = []
    wanted: dict[tuple[str, str], dict[tuple[str, str], None]] = {}
    for row in rows:
        checkpoint: Checkpoint = serde.loads_typed((row[4], row[5]))
        checkpoints.append(checkpoint)
        pairs = wanted.setdefault((row[0], row[1]), {})
        for channel, version in checkpoint["channel_versions"].items():
            pairs[(channel, str(version))] = None
    blobs: dict[tuple[str, str], dict[tuple[str, str], tuple[str, bytes]]] = {
        key: load_blobs(conn, key[0], key[1], list(pairs)) for key, pairs in wanted.items()
    }
    for row, checkpoint in zip(rows, checkpoints, strict=True):
        found = blobs[(row[0], row[1])]
        # Values without a channel version were kept in the checkpoint itself.
        values = checkpoint.get("channel_values") or {}
        for channel, version in checkpoint["channel_versions"].items():
            stored = found.get((channel, str(version)))
            if stored is not None:
                values[channel] = serde.loads_typed(stored)
        checkpoint["channel_values"] = values
    return checkpoints


def to_tuple(row: CheckpointRow, checkpoint: Checkpoint, pending_writes: list[PendingWrite]) -> CheckpointTuple:
    """Build a ``CheckpointTuple`` from a row selected with ``CHECKPOINT_COLUMNS``."""
    metadata = row[6]
    return checkpoint_tuple(row[:3], row[3], checkpoint, json.loads(metadata) if metadata else None, pending_writes)


def fetch_tuples(
    conn: sqlite3.Connection, serde: SerializerProtocol, rows: Sequence[CheckpointRow]
) -> list[CheckpointTuple]:
    """Tuples for rows, loading blobs and writes with one query each per namespace."""
    groups: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        groups.setdefault((row[0], row[1]), []).append(row[2])
    writes: dict[tuple[str, str, str], list[PendingWrite]] = {}
    for (thread_id, checkpoint_ns), ids in groups.items():
        for cid, pending in load_writes(conn, serde, thread_id, checkpoint_ns, ids).items():
            writes[(thread_id, checkpoint_ns, cid)] = pending
    checkpoints = load_checkpoints(conn, serde, rows)
    return [
        to_tuple(row, checkpoint, writes[(row[0], row[1], row[2])])
        for row, checkpoint in zip(rows, checkpoints, strict=True)
    ]


_PUT_ROW_MARKS = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_WRITES_INTO = "INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value)"
_MULTI_ROW = 100  # rows one INSERT takes; more go through executemany in a transaction


def put_statements(
    serde: SerializerProtocol,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> tuple[list[Statement], RunnableConfig]:
    """The INSERT that stores a checkpoint and its new blobs (serialized here), and put's config."""
    row = put_row(serde, config, checkpoint, metadata, new_versions)
    # Rows of the put_rows view (schema.py): blobs first, the checkpoint last.
    rows: list[tuple[Any, ...]] = [
        (row.thread_id, row.checkpoint_ns, version, None, type_, value, None, None, None, None, channel)
        for channel, version, type_, value in row.blobs
    ]
    rows.append(
        (
            *(row.thread_id, row.checkpoint_ns, row.checkpoint_id, row.parent_id, row.type, row.checkpoint),
            *(row.metadata, row.run_id, row.created_at, row.delta_channels, None),
        )
    )
    if len(rows) <= _MULTI_ROW:  # the usual case: one INSERT, atomic by itself
        marks = ",".join([_PUT_ROW_MARKS] * len(rows))
        return [(PUT_ROWS_SQL.format(marks=marks), [v for r in rows for v in r], False)], row.config
    return [(PUT_ROWS_SQL.format(marks=_PUT_ROW_MARKS), rows, True)], row.config


def put_writes_statements(
    serde: SerializerProtocol,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> list[Statement]:
    """The INSERTs that store a task's writes (serialized here); none if no writes."""
    regular, special = write_rows(serde, config, writes, task_id, task_path)
    if bool(regular) != bool(special) and len(writes) <= _MULTI_ROW:
        # The usual case: one multi-row INSERT, atomic on its own.
        rows = regular or special
        verb = "INSERT OR IGNORE" if regular else "INSERT OR REPLACE"
        marks = ",".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(rows))
        return [(f"{verb} {_WRITES_INTO} VALUES {marks}", [v for r in rows for v in r], False)]
    one_row = f"{_WRITES_INTO} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    return [
        (f"{verb} {one_row}", rows, True)
        for verb, rows in (("INSERT OR IGNORE", regular), ("INSERT OR REPLACE", special))
        if rows
    ]
