"""SQL for writing checkpoints: a checkpoint and its blobs, a task's writes, as statements.

The saver's sync and async paths serialize here, off any lock, then hand the
statements to the connection pool (``put``) or the writer (``aput``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph_memory.checkpoint import _delta
from langgraph_memory.checkpoint._base import metadata_json
from langgraph_memory.checkpoint._pool import Statement
from langgraph_memory.checkpoint.schema import PUT_ROWS_SQL

__all__ = ["put_statements", "put_writes_statements"]

_PUT_ROW_MARKS = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_WRITES_COLUMNS = "(thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value)"


def put_statements(
    serde: SerializerProtocol,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> tuple[list[Statement], RunnableConfig]:
    """The INSERTs that store a checkpoint and its new blobs (serialized here), and put's config."""
    configurable = config["configurable"]
    thread_id = str(configurable["thread_id"])
    checkpoint_ns = configurable.get("checkpoint_ns", "")
    full_metadata = get_checkpoint_metadata(config, metadata)
    values = checkpoint["channel_values"]
    versions = checkpoint["channel_versions"]
    # Rows of the put_rows view (schema.py): blobs first, the checkpoint last.
    params: list[Any] = []
    for channel, version in new_versions.items():
        # A new version without a value (a DeltaChannel between
        # snapshots, a cleared channel) stores nothing: absent reads as empty.
        if channel in values:
            params.extend(
                (
                    thread_id,
                    checkpoint_ns,
                    str(version),
                    None,
                    *serde.dumps_typed(values[channel]),
                    None,
                    None,
                    None,
                    None,
                    channel,
                )
            )
    stripped: dict[str, Any] = {k: v for k, v in checkpoint.items() if k != "channel_values"}
    if any(channel not in versions for channel in values):
        # A value with no channel version cannot live in blobs; keep it here.
        stripped["channel_values"] = {k: v for k, v in values.items() if k not in versions}
    type_, blob = serde.dumps_typed(stripped)
    metadata_text = metadata_json(full_metadata)
    delta = _delta.delta_channels_of(full_metadata, versions, values)
    run_id = full_metadata.get("run_id")
    params.extend(
        (
            thread_id,
            checkpoint_ns,
            checkpoint["id"],
            configurable.get("checkpoint_id"),
            type_,
            blob,
            metadata_text,
            None if run_id is None else str(run_id),
            time.time(),
            None if delta is None else json.dumps(delta),
            None,
        )
    )

    saved: RunnableConfig = {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint["id"],
        }
    }
    rows = len(params) // 11
    if rows <= 100:  # the usual case: one INSERT, atomic by itself
        marks = ",".join([_PUT_ROW_MARKS] * rows)
        return [(PUT_ROWS_SQL.format(marks=marks), params, False)], saved
    one_row = PUT_ROWS_SQL.format(marks=_PUT_ROW_MARKS)
    return [(one_row, [params[i : i + 11] for i in range(0, len(params), 11)], True)], saved


def put_writes_statements(
    serde: SerializerProtocol,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> list[Statement]:
    """The INSERTs that store a task's writes (serialized here); none if no writes."""
    if not writes:
        return []
    configurable = config["configurable"]
    key = (
        str(configurable["thread_id"]),
        configurable.get("checkpoint_ns", ""),
        str(configurable["checkpoint_id"]),
    )
    regular: list[tuple[Any, ...]] = []
    special: list[tuple[Any, ...]] = []
    for idx, (channel, value) in enumerate(writes):
        write_idx = WRITES_IDX_MAP.get(channel, idx)
        row = (*key, task_id, task_path, write_idx, channel, *serde.dumps_typed(value))
        (special if write_idx < 0 else regular).append(row)
    if bool(regular) != bool(special) and len(writes) <= 100:
        # The usual case: one multi-row INSERT, atomic on its own.
        rows = regular or special
        verb = "INSERT OR IGNORE" if regular else "INSERT OR REPLACE"
        marks = ",".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(rows))
        params = [value for row in rows for value in row]
        return [(f"{verb} INTO writes {_WRITES_COLUMNS} VALUES {marks}", params, False)]
    one_row = f"INTO writes {_WRITES_COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    statements: list[Statement] = []
    if regular:
        statements.append((f"INSERT OR IGNORE {one_row}", regular, True))
    if special:
        statements.append((f"INSERT OR REPLACE {one_row}", special, True))
    return statements
