"""For tests that drive two writers of the Chroma index into one order: where a thread waits, what the catalog holds."""

from __future__ import annotations

import sys
import threading

import numpy as np

from langgraph_memory._infra.lock import WriteLock
from langgraph_memory.catalog.connection import both
from langgraph_memory.store import ChromaStore


def waiting_for(thread: threading.Thread, lock: WriteLock) -> bool:
    """Whether ``thread`` is inside ``lock.hold()``, acquiring it (the frame leaves the stack once it is held)."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code is WriteLock.hold.__wrapped__.__code__ and frame.f_locals.get("self") is lock:  # type: ignore[attr-defined]
            return True
        frame = frame.f_back
    return False


def catalog_vector(store: ChromaStore, namespace: tuple[str, ...], key: str) -> tuple[int, np.ndarray] | None:
    """The item's id and its first vector as the catalog holds them (None: no such item)."""
    item = store.items.get(namespace, key)
    if item is None or item.id is None:
        return None
    with store.catalog.read() as conn:
        (row,) = conn.execute(
            both(conn, "SELECT vec FROM vectors WHERE item_id = ? AND idx = 0"), (item.id,)
        ).fetchall()
    return item.id, np.frombuffer(row[0], dtype=np.float32)
