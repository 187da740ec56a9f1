"""Time travel: a step of a graph reads the memory as of the checkpoint it starts from.

LangGraph replays a thread from an earlier checkpoint (``graph.get_state_history(config)``, then
``graph.invoke(None, old_state.config)``), but a node that recalls memory would read today's memory, not what
it read when the step first ran. With ``recall_node(..., as_of_checkpoint=True)``, or
``checkpoint_store(store, config)`` in a node of your own, a step reads the store as of the moment of the
checkpoint the step starts from, in the first run and in every replay:

- In the first run, step *n* reads as of the checkpoint it starts from (saved after step *n - 1*): it sees
  every memory written before that checkpoint, its own graph's earlier steps included.
- A replay (``graph.invoke(None, old_config)``, whose config names the checkpoint replayed) reads as of the
  replayed checkpoint, in every step. So the step replayed reads exactly the memory it read the first time,
  whatever was written, reworded or deleted since.
- Later steps of a replay read that same moment: what the memory knew then, without what it learnt since,
  which includes what the replay itself writes. A step that must see the replay's own writes reads the store
  itself.

The moment comes from the checkpoint's id (LangGraph's ids are UUIDv6, which carry their creation time to
100 ns), so nothing is read to find it. Without a checkpointer (nothing to travel back to) a step reads the
store itself. The memory's times come from the clock of the machine that wrote it, the checkpoint's from that of the
machine that ran the graph: on several machines, keep their clocks in step (NTP).

    def approve(state, config, *, store: BaseStore):
        memory_then = checkpoint_store(store, config)   # the store as of this step's checkpoint
        lessons = memory_then.search(("lessons",), query=state["strategy"])
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import BaseStore

from langgraph_memory.errors import ConfigError

__all__ = ["checkpoint_time", "checkpoint_store", "store_as_of"]

# 100-ns intervals between the Gregorian calendar's start (1582-10-15), which UUID times count from, and 1970.
_GREGORIAN_TO_UNIX = 0x01B21DD213814000


def _id_time(checkpoint_id: str) -> datetime | None:
    """The creation time a UUIDv6 checkpoint id carries (None for an id of another kind)."""
    try:
        u = uuid.UUID(str(checkpoint_id))
    except ValueError:
        return None
    if u.version != 6:
        return None
    ticks = ((u.int >> 80) << 12) | ((u.int >> 64) & 0x0FFF)
    return datetime.fromtimestamp((ticks - _GREGORIAN_TO_UNIX) / 1e7, tz=UTC)


def checkpoint_time(config: Any) -> datetime | None:
    """The moment a step reads memory as of (UTC); None outside a checkpointed run.

    In a replay (``graph.invoke(None, old_config)``: the run's config names the checkpoint replayed) it is
    the replayed checkpoint's time, in every step of the replay; otherwise the time of the checkpoint the step
    starts from. See the module.

    Examples:
        >>> checkpoint_time({"configurable": {"checkpoint_map": {"": "1f1f12d1-4adf-655f-8001-1573b29df285"}}})
        datetime.datetime(2026, 12, 6, 4, 25, 34, 796323, tzinfo=datetime.timezone.utc)
        >>> checkpoint_time({"configurable": {}}) is None
        True
    """
    config = config or {}
    # LangGraph copies the run's configurable into each step's metadata: a replay's names the replayed checkpoint.
    replayed = (config.get("metadata") or {}).get("checkpoint_id")
    # Else the root graph's checkpoint: a subgraph's steps read the moment of the run they belong to.
    started = ((config.get("configurable") or {}).get("checkpoint_map") or {}).get("")
    checkpoint_id = replayed or started
    return _id_time(checkpoint_id) if checkpoint_id else None


def store_as_of(store: BaseStore, at: datetime | None) -> BaseStore:
    """``store`` as of ``at`` (``store`` itself when ``at`` is None).

    Raises:
        ConfigError: ``store`` keeps no history (it has no ``as_of``), so it cannot be read as of a moment.
    """
    if at is None:
        return store
    as_of = getattr(store, "as_of", None)
    if as_of is None:
        raise ConfigError(
            f"{type(store).__name__} keeps no history, so a step cannot read it as of its checkpoint: compile "
            "the graph with a ChromaStore (mem.store), or leave as_of_checkpoint off"
        )
    return as_of(at)


def checkpoint_store(store: BaseStore, config: Any) -> BaseStore:
    """``store`` as of `checkpoint_time(config)`: what a step reads so that its replays read the same.

    Outside a checkpointed run (no checkpoint to go back to) it is ``store`` itself.

    Raises:
        ConfigError: ``store`` keeps no history (it has no ``as_of``), so it cannot be read as of a moment.
    """
    return store_as_of(store, checkpoint_time(config))
