"""What a checkpoint is stored as on either backend: its row and blobs for ``put``, a task's write rows, and the
``CheckpointTuple`` built back from what was read.

Serializing happens here, in the caller's thread and outside any lock; each backend's SQL module
(``checkpoint/_query.py``, ``checkpoint/postgres/_sql.py``) turns these into its own statements.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph_memory.checkpoint import _delta

__all__ = ["PutRow", "checkpoint_tuple", "metadata_json", "put_row", "write_rows"]


def metadata_json(metadata: Mapping[str, Any]) -> str:
    """Metadata as JSON text, so ``list(filter=...)`` can query it on either backend.

    What JSON cannot hold (rare: LangGraph writes str/int/float/bool) becomes
    text.
    """

    def default(value: Any) -> Any:
        return list(value) if isinstance(value, (set, frozenset, tuple)) else str(value)

    return json.dumps(metadata, ensure_ascii=False, default=default)


def checkpoint_tuple(
    key: tuple[str, str, str],
    parent_id: str | None,
    checkpoint: Checkpoint,
    metadata: Mapping[str, Any] | None,
    pending_writes: builtins.list[PendingWrite],
) -> CheckpointTuple:
    """The ``CheckpointTuple`` of a stored checkpoint, ``key`` being (thread, namespace, id)."""
    thread_id, checkpoint_ns, checkpoint_id = key
    return CheckpointTuple(
        config={
            "configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}
        },
        checkpoint=checkpoint,
        metadata=cast(CheckpointMetadata, metadata or {}),
        parent_config=(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": parent_id}}
            if parent_id
            else None
        ),
        pending_writes=pending_writes,
    )


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs a few microseconds per put
class PutRow:
    """A checkpoint serialized for storage: the values of its row, and a blob per new channel value."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    type: str
    checkpoint: bytes
    metadata: str
    run_id: str | None
    created_at: float
    delta_channels: str | None
    blobs: builtins.list[tuple[str, str, str, bytes]]  # (channel, version, type, value)

    @property
    def config(self) -> RunnableConfig:
        """The config ``put`` returns."""
        return {
            "configurable": {
                "thread_id": self.thread_id,
                "checkpoint_ns": self.checkpoint_ns,
                "checkpoint_id": self.checkpoint_id,
            }
        }


def put_row(
    serde: SerializerProtocol,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
    *,
    inline: Callable[[Any], bool] = lambda value: False,
) -> PutRow:
    """Serialize a checkpoint for ``put``: only the values of channels in ``new_versions`` become blobs.

    The others are already stored under their unchanged version. A value
    whose channel has no version cannot live in blobs and stays in the
    checkpoint row, as does any value ``inline`` picks. A new version without
    a value (a DeltaChannel between snapshots, a cleared channel) stores
    nothing: absent reads as empty.
    """
    configurable = config["configurable"]
    full_metadata = get_checkpoint_metadata(config, metadata)
    values = checkpoint["channel_values"]
    versions = checkpoint["channel_versions"]
    kept = {k: v for k, v in values.items() if k not in versions or inline(v)}
    blobs = [
        (channel, str(version), *serde.dumps_typed(values[channel]))
        for channel, version in new_versions.items()
        if channel in values and channel not in kept
    ]
    stripped: dict[str, Any] = {k: v for k, v in checkpoint.items() if k != "channel_values"}
    if kept:
        stripped["channel_values"] = kept
    type_, blob = serde.dumps_typed(stripped)
    delta = _delta.delta_channels_of(full_metadata, versions, values)
    run_id = full_metadata.get("run_id")
    return PutRow(
        thread_id=str(configurable["thread_id"]),
        checkpoint_ns=configurable.get("checkpoint_ns", ""),
        checkpoint_id=checkpoint["id"],
        parent_id=configurable.get("checkpoint_id"),
        type=type_,
        checkpoint=blob,
        metadata=metadata_json(full_metadata),
        run_id=None if run_id is None else str(run_id),
        created_at=time.time(),
        delta_channels=None if delta is None else json.dumps(delta),
        blobs=blobs,
    )


def write_rows(
    serde: SerializerProtocol,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> tuple[builtins.list[tuple[Any, ...]], builtins.list[tuple[Any, ...]]]:
    """A task's writes as (regular, special) rows of the ``writes`` table's nine columns.

    Regular writes are idempotent per (task, index): one already stored is
    kept. Special writes (error, interrupt, resume, scheduled) have fixed
    negative indices and replace the previous one, as in LangGraph's savers.
    """
    configurable = config["configurable"]
    key = (str(configurable["thread_id"]), configurable.get("checkpoint_ns", ""), str(configurable["checkpoint_id"]))
    regular: builtins.list[tuple[Any, ...]] = []
    special: builtins.list[tuple[Any, ...]] = []
    for idx, (channel, value) in enumerate(writes):
        write_idx = WRITES_IDX_MAP.get(channel, idx)
        row = (*key, task_id, task_path, write_idx, channel, *serde.dumps_typed(value))
        (special if write_idx < 0 else regular).append(row)
    return regular, special
