"""SQL of the checkpointer on PostgreSQL, and what turns rows into tuples.

Statements are built once per schema name (`Statements`); the saver's
sync and async paths run the same text, so they cannot drift apart. Each
LangGraph call is one round trip: a put is one call of the
``put_checkpoint`` function, a read joins its blobs and writes in the same
query.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
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

from langgraph_memory.checkpoint import _rows
from langgraph_memory.checkpoint._delta import Queries
from langgraph_memory.checkpoint._rows import PutRow, checkpoint_tuple, write_rows

__all__ = ["Statements", "put_params", "put_row", "queries", "row_to_tuple", "writes_statement"]


# The checkpoint, its blobs (channel, type, value as a bytea triple) and its
# pending writes, for the rows a WHERE clause selects. The LIMIT 1 (the key
# is unique anyway) keeps the blob lookup a primary-key probe per channel:
# joined plainly, the planner may hash-join all of the thread's blobs for
# every checkpoint returned.
_SELECT = """SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id,
    c.type, c.checkpoint, c.metadata,
    (SELECT array_agg(array[convert_to(v.channel, 'UTF8'), convert_to(b.type, 'UTF8'), b.blob])
       FROM jsonb_each_text(c.channel_versions) AS v(channel, version)
       CROSS JOIN LATERAL (SELECT b.type, b.blob FROM {s}.blobs b
         WHERE b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns
           AND b.channel = v.channel AND b.version = v.version LIMIT 1) b) AS blobs,
    (SELECT array_agg(array[convert_to(w.task_id, 'UTF8'), convert_to(w.channel, 'UTF8'),
            convert_to(coalesce(w.type, ''), 'UTF8'), w.value, convert_to(w.task_path, 'UTF8'),
            convert_to(w.idx::text, 'UTF8')])
       FROM {s}.writes w WHERE w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns
        AND w.checkpoint_id = c.checkpoint_id) AS writes
FROM {s}.checkpoints c"""


_IN = "= ANY(%s::text[])"  # a list bound as one array parameter

# {s} is the quoted schema name (see queries()).
_QUERIES = Queries(
    array=list,
    mark="%s",
    select=_SELECT,
    get_by_id=f"{_SELECT} WHERE c.thread_id = %s AND c.checkpoint_ns = %s AND c.checkpoint_id = %s AND c.hidden = 0",
    get_latest=f"{_SELECT} WHERE c.thread_id = %s AND c.checkpoint_ns = %s AND c.hidden = 0 "
    "ORDER BY c.checkpoint_id DESC LIMIT 1",
    latest_id="SELECT checkpoint_id FROM {s}.checkpoints WHERE thread_id = %s AND checkpoint_ns = %s "
    "AND hidden = 0 ORDER BY checkpoint_id DESC LIMIT 1",
    # Target first, then its ancestors nearest first (see the SQLite twin in checkpoint/_query.py).
    ancestors="WITH RECURSIVE ancestors(checkpoint_id, parent_checkpoint_id, type, checkpoint) AS ("
    "SELECT checkpoint_id, parent_checkpoint_id, type, checkpoint FROM {s}.checkpoints "
    "WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s "
    "UNION ALL "
    "SELECT c.checkpoint_id, c.parent_checkpoint_id, c.type, c.checkpoint "
    "FROM ancestors a JOIN {s}.checkpoints c ON c.checkpoint_id = a.parent_checkpoint_id "
    "WHERE c.thread_id = %s AND c.checkpoint_ns = %s) "
    "SELECT checkpoint_id, type, checkpoint FROM ancestors",
    has_blob="SELECT 1 FROM {s}.blobs WHERE thread_id = %s AND checkpoint_ns = %s AND channel = %s AND version = %s",
    blob="SELECT type, blob FROM {s}.blobs WHERE thread_id = %s AND checkpoint_ns = %s AND channel = %s "
    "AND version = %s",
    delta_writes="SELECT checkpoint_id, channel, task_path, task_id, idx, type, value FROM {s}.writes "
    f"WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id {_IN} AND channel {_IN}",
    namespace_rows="SELECT checkpoint_id, delta_channels, hidden FROM {s}.checkpoints "
    "WHERE thread_id = %s AND checkpoint_ns = %s",
    delete_writes_of=f"DELETE FROM {{s}}.writes WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id {_IN}",
    delete_checkpoints_of="DELETE FROM {s}.checkpoints WHERE thread_id = %s AND checkpoint_ns = %s "
    f"AND checkpoint_id {_IN}",
    hide=f"UPDATE {{s}}.checkpoints SET hidden = 1 WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id {_IN}",
    blob_refs="SELECT type, checkpoint, hidden, delta_channels FROM {s}.checkpoints "
    "WHERE thread_id = %s AND checkpoint_ns = %s",
    blob_keys="SELECT channel, version FROM {s}.blobs WHERE thread_id = %s AND checkpoint_ns = %s",
    delete_blobs="DELETE FROM {s}.blobs WHERE thread_id = %s AND checkpoint_ns = %s AND (channel, version) IN "
    "(SELECT * FROM unnest(%s::text[], %s::text[]))",
    delete_thread=(
        "DELETE FROM {s}.checkpoints WHERE thread_id = %s",
        "DELETE FROM {s}.writes WHERE thread_id = %s",
        "DELETE FROM {s}.blobs WHERE thread_id = %s",
    ),
    checkpoints_of_runs=f"SELECT thread_id, checkpoint_ns, checkpoint_id FROM {{s}}.checkpoints WHERE run_id {_IN} "
    "AND hidden = 0",
    namespaces="SELECT DISTINCT checkpoint_ns FROM {s}.checkpoints WHERE thread_id = %s",
    visible_ids="SELECT checkpoint_id FROM {s}.checkpoints WHERE thread_id = %s AND checkpoint_ns = %s "
    "AND hidden = 0 ORDER BY checkpoint_id DESC",
    delete_orphan_writes="DELETE FROM {s}.writes w WHERE w.thread_id = %s AND NOT EXISTS (SELECT 1 FROM "
    "{s}.checkpoints c WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns "
    "AND c.checkpoint_id = w.checkpoint_id)",
    copy_thread=(
        "INSERT INTO {s}.checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
        "checkpoint, channel_versions, metadata, run_id, created_at, delta_channels, hidden) "
        "SELECT %s, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, channel_versions, "
        "metadata, run_id, %s, delta_channels, hidden FROM {s}.checkpoints WHERE thread_id = %s "
        "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET "
        "parent_checkpoint_id = EXCLUDED.parent_checkpoint_id, type = EXCLUDED.type, "
        "checkpoint = EXCLUDED.checkpoint, channel_versions = EXCLUDED.channel_versions, "
        "metadata = EXCLUDED.metadata, run_id = EXCLUDED.run_id, created_at = EXCLUDED.created_at, "
        "delta_channels = EXCLUDED.delta_channels, hidden = EXCLUDED.hidden",
        "INSERT INTO {s}.writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, "
        "value) SELECT %s, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value "
        "FROM {s}.writes WHERE thread_id = %s "
        "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET "
        "task_path = EXCLUDED.task_path, channel = EXCLUDED.channel, type = EXCLUDED.type, value = EXCLUDED.value",
        "INSERT INTO {s}.blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
        "SELECT %s, checkpoint_ns, channel, version, type, blob FROM {s}.blobs WHERE thread_id = %s "
        "ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO UPDATE SET type = EXCLUDED.type, "
        "blob = EXCLUDED.blob",
    ),
    list_threads="SELECT thread_id, MAX(created_at), COUNT(*) FILTER (WHERE hidden = 0) FROM {s}.checkpoints "
    "GROUP BY thread_id ORDER BY 2 DESC, 1",
    thread_size="SELECT (SELECT coalesce(sum(length(checkpoint) + octet_length(metadata::text)), 0) "
    "FROM {s}.checkpoints WHERE thread_id = %s), "
    "(SELECT coalesce(sum(length(blob)), 0) FROM {s}.blobs WHERE thread_id = %s), "
    "(SELECT coalesce(sum(length(value)), 0) FROM {s}.writes WHERE thread_id = %s)",
    inactive_threads="SELECT thread_id FROM {s}.checkpoints GROUP BY thread_id HAVING MAX(created_at) < %s "
    "ORDER BY MAX(created_at), thread_id",
)


def queries(schema: str) -> Queries:
    """`Queries` on the tables of ``schema`` (a name `_schema.check_schema_name` accepted)."""
    s = f'"{schema}"'
    fields: dict[str, Any] = {
        name: (value.format(s=s) if isinstance(value, str) else tuple(v.format(s=s) for v in value))
        for name, value in vars(_QUERIES).items()
        if name not in ("array", "mark")
    }
    return Queries(array=list, mark="%s", **fields)


@dataclass(frozen=True)
class Statements:
    """Every statement of the saver for one schema name (already quoted in the text)."""

    put: str
    writes_regular: str
    writes_special: str
    writes_both: str

    @classmethod
    def for_schema(cls, schema: str) -> Statements:
        s = f'"{schema}"'
        cols = "(thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value)"
        unnest = (
            "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
            "%s::int[], %s::text[], %s::text[], %s::bytea[])"
        )
        pk = "(thread_id, checkpoint_ns, checkpoint_id, task_id, idx)"
        regular = f"INSERT INTO {s}.writes {cols} {unnest} ON CONFLICT {pk} DO NOTHING"
        special = (
            f"INSERT INTO {s}.writes {cols} {unnest} ON CONFLICT {pk} DO UPDATE SET "
            "channel = EXCLUDED.channel, type = EXCLUDED.type, value = EXCLUDED.value, "
            "task_path = EXCLUDED.task_path"
        )
        return cls(
            put=f"SELECT {s}.put_checkpoint(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
            "%s::text[], %s::text[], %s::text[], %s::bytea[], %s)",
            writes_regular=regular,
            writes_special=special,
            writes_both=f"WITH r AS ({regular}) {special}",
        )


_SMALL_TEXT = 64  # longest string kept in the checkpoint row instead of a blob


def _is_small(value: Any) -> bool:
    # Small scalars (counters, flags, short strings) stay in the checkpoint
    # row, as in PostgresSaver: a blob row and its index entry would cost
    # more than the value.
    if value is None or isinstance(value, (bool, int, float)):
        return True
    return isinstance(value, str) and len(value) <= _SMALL_TEXT


def put_row(
    serde: SerializerProtocol,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> PutRow:
    """The checkpoint serialized (see `_rows.put_row`), small values kept in its row."""
    return _rows.put_row(serde, config, checkpoint, metadata, new_versions, inline=_is_small)


def put_params(row: PutRow, checkpoint: Checkpoint, expect_head: bool) -> list[Any]:
    """The parameters of ``Statements.put`` (one ``put_checkpoint`` call) for ``row``."""
    channels, versions, types, blobs = [list(c) for c in zip(*row.blobs, strict=True)] if row.blobs else [[]] * 4
    return [
        *(row.thread_id, row.checkpoint_ns, row.checkpoint_id, row.parent_id, row.type, row.checkpoint),
        json.dumps({k: str(v) for k, v in checkpoint["channel_versions"].items()}),
        row.metadata.replace("\\u0000", ""),  # JSONB rejects \u0000 in text; LangGraph's savers strip it too
        *(row.run_id, row.created_at, row.delta_channels, channels, versions, types, blobs, expect_head),
    ]


def writes_statement(
    statements: Statements,
    serde: SerializerProtocol,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> tuple[str, list[Any]] | None:
    """The statement that stores a task's writes and its parameters (an array per column); None if no writes."""
    regular, special = write_rows(serde, config, writes, task_id, task_path)

    def columns(rows: list[tuple[Any, ...]]) -> list[Any]:
        return [list(column) for column in zip(*rows, strict=True)]

    if regular and special:
        return statements.writes_both, [*columns(regular), *columns(special)]
    if regular:
        return statements.writes_regular, columns(regular)
    if special:
        return statements.writes_special, columns(special)
    return None


def _text(value: bytes | memoryview | None) -> str:
    return bytes(value).decode() if value is not None else ""


def row_to_tuple(serde: SerializerProtocol, row: Sequence[Any]) -> CheckpointTuple:
    """A ``CheckpointTuple`` from a row of ``Queries.select``."""
    thread_id, checkpoint_ns, checkpoint_id, parent_id, type_, blob, metadata, blobs, writes = row
    checkpoint: Checkpoint = serde.loads_typed((type_, bytes(blob)))
    values = checkpoint.get("channel_values") or {}
    for channel, btype, value in blobs or ():
        # An empty channel is stored as its type with no bytes; the serializer reads (type, None) back as such.
        values[_text(channel)] = serde.loads_typed((_text(btype), None if value is None else bytes(value)))  # type: ignore[arg-type]
    checkpoint["channel_values"] = values
    pending: list[PendingWrite] = []
    if writes:
        decoded = [
            (_text(path), _text(task), int(_text(idx)), _text(channel), _text(wtype), value)
            for task, channel, wtype, value, path, idx in writes
        ]
        decoded.sort(key=lambda w: writes_sort_key(w[0], w[1], w[2]))
        pending = [
            (task, channel, serde.loads_typed((wtype, None if value is None else bytes(value))))  # type: ignore[arg-type]
            for _path, task, _idx, channel, wtype, value in decoded
        ]
    if isinstance(metadata, (str, bytes)):
        metadata = json.loads(metadata)
    return checkpoint_tuple((thread_id, checkpoint_ns, checkpoint_id), parent_id, checkpoint, metadata, pending)
