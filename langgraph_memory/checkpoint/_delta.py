"""DeltaChannel support: the ancestor walk, and what pruning must keep.

A ``DeltaChannel`` stores its value only every ``snapshot_frequency`` steps
(a ``_DeltaSnapshot`` blob under a new channel version); in between, its
new versions have no blob and its value is
rebuilt by replaying the channel's writes stored under each ancestor back to
the nearest one that holds a value (the *seed*). Two consequences here:

* `delta_channel_history()` answers LangGraph's
  ``get_delta_channel_history`` with one recursive query over the parent
  chain, a primary-key blob lookup per ancestor and channel still walking,
  and one query for the writes, instead of a ``get_tuple`` per ancestor.
* `plan_removal()` decides, before ``prune`` or ``delete_for_runs``
  removes checkpoints, which of them a surviving checkpoint still needs to
  rebuild its delta channels. Those are kept but *hidden* (never listed, not
  returned by ``get_tuple``), so what survives reconstructs exactly.

Which channels of a checkpoint may need the walk is decided at ``put`` time
from LangGraph's ``counters_since_delta_snapshot`` metadata (its keys are the
delta channels) and stored in the ``delta_channels`` column. It is an upper
bound: a channel whose version has not moved since a snapshot still reads
that snapshot's blob, which the walk checks at the target first.

After removal, `collect_blobs()` deletes the blobs no remaining
checkpoint reads (hidden ones keep only their delta channels' blobs).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import (
    ChannelVersions,
    DeltaChannelHistory,
    PendingWrite,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

__all__ = [
    "apply_removal",
    "collect_blobs",
    "delta_channel_history",
    "delta_channels_of",
    "plan_removal",
    "Queries",
]


@dataclass(frozen=True)
class Queries:
    """The statements ``_delta`` and the shared methods run, written out once per backend.

    Each takes the parameters its comment names; a list parameter is bound
    as one value through ``array`` (a JSON text that SQLite's ``json_each``
    reads, a PostgreSQL array), so no statement is built from a list's length.
    """

    array: Callable[[Sequence[Any]], Any]
    mark: str  # the placeholder
    select: str  # checkpoints c, with what the backend's `_tuples` reads from each row
    get_by_id: str  # (thread, ns, id) -> select's row of a visible checkpoint
    get_latest: str  # (thread, ns) -> select's row of the newest visible checkpoint
    latest_id: str  # (thread, ns) -> checkpoint_id of the newest visible checkpoint
    ancestors: str  # (thread, ns, id, thread, ns) -> checkpoint_id, type, checkpoint; target first
    has_blob: str  # (thread, ns, channel, version)
    blob: str  # (thread, ns, channel, version) -> type, blob
    delta_writes: str  # (thread, ns, ids[], channels[]) -> id, channel, task_path, task_id, idx, type, value
    namespace_rows: str  # (thread, ns) -> checkpoint_id, delta_channels, hidden
    delete_writes_of: str  # (thread, ns, ids[])
    delete_checkpoints_of: str  # (thread, ns, ids[])
    hide: str  # (thread, ns, ids[])
    blob_refs: str  # (thread, ns) -> type, checkpoint, hidden, delta_channels
    blob_keys: str  # (thread, ns) -> channel, version
    delete_blobs: str  # (thread, ns, channels[], versions[]): the pairs of the two lists
    delete_thread: tuple[str, ...]  # each (thread,)
    checkpoints_of_runs: str  # (run_ids[]) -> thread, ns, id
    namespaces: str  # (thread,) -> checkpoint_ns
    visible_ids: str  # (thread, ns) -> checkpoint_id, newest first
    delete_orphan_writes: str  # (thread,)
    copy_thread: tuple[str, str, str]  # checkpoints (target, now, source), writes and blobs (target, source)
    list_threads: str  # () -> thread, last created_at, visible checkpoints
    thread_size: str  # (thread, thread, thread) -> bytes of checkpoints, blobs, writes
    inactive_threads: str  # (cutoff,) -> thread, oldest activity first


def delta_channels_of(
    metadata: Mapping[str, Any], channel_versions: ChannelVersions, channel_values: Mapping[str, Any]
) -> list[str] | None:
    """Delta channels of a checkpoint that have a version but no stored value."""
    counters = metadata.get("counters_since_delta_snapshot") or {}
    missing = sorted(c for c in counters if c in channel_versions and c not in channel_values)
    return missing or None


def _has_value(
    conn: Any, q: Queries, thread_id: str, checkpoint_ns: str, checkpoint: Mapping[str, Any], channel: str
) -> bool:
    if channel in (checkpoint.get("channel_values") or ()):
        return True  # kept inline: a value without a channel version
    version = checkpoint["channel_versions"].get(channel)
    if version is None:
        return False
    return conn.execute(q.has_blob, (thread_id, checkpoint_ns, channel, str(version))).fetchone() is not None


def _value(
    conn: Any,
    q: Queries,
    serde: SerializerProtocol,
    thread_id: str,
    checkpoint_ns: str,
    checkpoint: Mapping[str, Any],
    channel: str,
) -> Any:
    inline = checkpoint.get("channel_values") or {}
    if channel in inline:
        return inline[channel]
    version = str(checkpoint["channel_versions"][channel])
    type_, blob = conn.execute(q.blob, (thread_id, checkpoint_ns, channel, version)).fetchone()
    return serde.loads_typed((type_, blob))


def _walk(
    conn: Any,
    q: Queries,
    serde: SerializerProtocol,
    thread_id: str,
    checkpoint_ns: str,
    target_id: str,
    channels: Iterable[str],
    *,
    visited: set[tuple[str, str]] | None = None,
    seeds: bool = True,
    from_target: bool = False,
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Per channel, the ancestors (nearest first, seed ancestor last) and seed.

    A checkpoint holds a channel's value when the blob of its version of the
    channel is stored. With ``visited``, a channel stops as soon as it
    reaches an ancestor an earlier walk already covered for it: the rest of
    its chain is known. With ``from_target``, channels the target itself
    holds a value for need no walk (LangGraph only asks for the others).
    Without ``seeds`` the seed values are not deserialized.
    """
    active = set(channels)
    chain_by_ch: dict[str, list[str]] = {c: [] for c in active}
    seed_values: dict[str, Any] = {}
    walked: set[str] = set()
    cur = conn.execute(q.ancestors, (thread_id, checkpoint_ns, target_id, thread_id, checkpoint_ns))
    try:
        for index, (cid, type_, blob) in enumerate(cur):
            if cid in walked:  # a loop
                break
            walked.add(cid)
            if index == 0 and not from_target:
                continue
            checkpoint = serde.loads_typed((type_, blob))
            holding = [c for c in active if _has_value(conn, q, thread_id, checkpoint_ns, checkpoint, c)]
            if index == 0:  # the target, with from_target
                active.difference_update(holding)
                if not active:
                    break
                continue
            if visited is not None:
                for c in [c for c in active if (cid, c) in visited]:
                    active.discard(c)
                visited.update((cid, c) for c in active)
            for c in active:
                chain_by_ch[c].append(cid)
            for c in holding:
                if c in active:
                    if seeds:
                        seed_values[c] = _value(conn, q, serde, thread_id, checkpoint_ns, checkpoint, c)
                    active.discard(c)
            if not active:
                break
    finally:
        cur.close()
    return chain_by_ch, seed_values


def delta_channel_history(
    conn: Any,
    q: Queries,
    serde: SerializerProtocol,
    thread_id: str,
    checkpoint_ns: str,
    target_id: str,
    channels: Sequence[str],
) -> dict[str, DeltaChannelHistory]:
    """Writes (oldest first, ``writes_sort_key`` within a step) and seed per channel."""
    chain_by_ch, seeds = _walk(conn, q, serde, thread_id, checkpoint_ns, target_id, channels)
    wanted_ids = sorted({cid for chain in chain_by_ch.values() for cid in chain})
    by_key: dict[tuple[str, str], list[tuple[str, str, int, str, bytes]]] = {}
    wanted_channels = [c for c in channels if chain_by_ch[c]]
    if wanted_ids:
        params = (thread_id, checkpoint_ns, q.array(wanted_ids), q.array(wanted_channels))
        for cid, ch, task_path, task_id, idx, type_, value in conn.execute(q.delta_writes, params).fetchall():
            by_key.setdefault((cid, ch), []).append((task_path, task_id, idx, type_, value))
    result: dict[str, DeltaChannelHistory] = {}
    for ch in channels:
        collected: list[PendingWrite] = []
        for cid in reversed(chain_by_ch[ch]):
            stored = sorted(by_key.get((cid, ch), ()), key=lambda w: writes_sort_key(w[0], w[1], w[2]))
            collected.extend((task_id, ch, serde.loads_typed((t, v))) for _, task_id, _, t, v in stored)
        entry: DeltaChannelHistory = {"writes": collected}
        if ch in seeds:
            entry["seed"] = seeds[ch]
        result[ch] = entry
    return result


def plan_removal(
    conn: Any,
    q: Queries,
    serde: SerializerProtocol,
    thread_id: str,
    checkpoint_ns: str,
    remove: set[str],
) -> tuple[list[str], list[str]]:
    """Split checkpoints to remove from one namespace into (delete, hide).

    Survivors are the visible checkpoints not in ``remove``. Anything a
    survivor's delta channels need is hidden rather than deleted; hidden rows
    no survivor needs any more are deleted too.
    """
    rows = conn.execute(q.namespace_rows, (thread_id, checkpoint_ns)).fetchall()
    needed: set[str] = set()
    visited: set[tuple[str, str]] = set()
    # Newest first: a newer survivor's walk covers most of an older one's.
    for cid, delta_json, hidden in sorted(rows, reverse=True):
        if hidden or cid in remove or not delta_json:
            continue
        chain_by_ch, _ = _walk(
            conn,
            q,
            serde,
            thread_id,
            checkpoint_ns,
            cid,
            json.loads(delta_json),
            visited=visited,
            seeds=False,
            from_target=True,
        )
        for chain in chain_by_ch.values():
            needed.update(chain)
    delete: list[str] = []
    hide: list[str] = []
    for cid, _delta_json, hidden in rows:
        if cid in needed:
            if cid in remove and not hidden:
                hide.append(cid)
        elif hidden or cid in remove:
            delete.append(cid)
    return delete, hide


def apply_removal(
    conn: Any,
    q: Queries,
    serde: SerializerProtocol,
    thread_id: str,
    checkpoint_ns: str,
    delete: Sequence[str],
    hide: Sequence[str],
) -> None:
    """Delete checkpoints (their writes, and blobs left unreferenced); hide the ones still needed."""
    if delete:
        params = (thread_id, checkpoint_ns, q.array(delete))
        conn.execute(q.delete_writes_of, params)
        conn.execute(q.delete_checkpoints_of, params)
    if hide:
        conn.execute(q.hide, (thread_id, checkpoint_ns, q.array(hide)))
    if delete or hide:
        collect_blobs(conn, q, serde, thread_id, checkpoint_ns)


def collect_blobs(conn: Any, q: Queries, serde: SerializerProtocol, thread_id: str, checkpoint_ns: str) -> None:
    """Delete the namespace's blobs no remaining checkpoint can read.

    A visible checkpoint reads the blob of each of its channel versions; a
    hidden one is only walked through for the delta channels of visible
    ones, so only those of its blobs are kept.
    """
    rows = conn.execute(q.blob_refs, (thread_id, checkpoint_ns)).fetchall()
    walked: set[str] = set()
    for _type, _blob, hidden, delta_json in rows:
        if not hidden and delta_json:
            walked.update(json.loads(delta_json))
    referenced: set[tuple[str, str]] = set()
    for type_, blob, hidden, _delta_json in rows:
        versions = serde.loads_typed((type_, blob)).get("channel_versions") or {}
        referenced.update(
            (channel, str(version)) for channel, version in versions.items() if not hidden or channel in walked
        )
    unused = [
        key for key in conn.execute(q.blob_keys, (thread_id, checkpoint_ns)).fetchall() if tuple(key) not in referenced
    ]
    if unused:
        channels, versions = zip(*unused, strict=True)
        conn.execute(q.delete_blobs, (thread_id, checkpoint_ns, q.array(channels), q.array(versions)))
