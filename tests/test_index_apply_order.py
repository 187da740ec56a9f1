"""Two appliers of the change log in turn: Chroma ends as the catalog is, whichever read first.

The store's catch-up thread and an inline sync (a delete of the archive, a
restore, a close) both apply the queue. One of them that read an item's
vectors before a change of it committed must not write them after the other
one applied that change: a deleted item came back as a Chroma record without
its item, an updated one kept its old vector. The interleaving is driven
here by holding the index lock while the first applier waits for it.
"""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest

from bench.common.crash_check import index_problems
from langgraph_memory._infra.lock import WriteLock
from langgraph_memory.catalog.connection import both
from langgraph_memory.index.chroma import record_id
from langgraph_memory.store import ChromaStore

_NS = ("u", "a")


def _waiting_for(thread: threading.Thread, lock: WriteLock) -> bool:
    """Whether ``thread`` is inside ``lock.hold()``, acquiring it (the frame leaves the stack once it is held)."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code is WriteLock.hold.__wrapped__.__code__ and frame.f_locals.get("self") is lock:  # type: ignore[attr-defined]
            return True
        frame = frame.f_back
    return False


def _catalog_vector(store: ChromaStore, key: str) -> tuple[int, np.ndarray] | None:
    item = store.items.get(_NS, key)
    if item is None or item.id is None:
        return None
    with store.catalog.read() as conn:
        (row,) = conn.execute(
            both(conn, "SELECT vec FROM vectors WHERE item_id = ? AND idx = 0"), (item.id,)
        ).fetchall()
    return item.id, np.frombuffer(row[0], dtype=np.float32)


@pytest.mark.parametrize("change", ["delete", "update"])
def test_an_applier_that_read_before_a_change_does_not_undo_it_in_chroma(store: ChromaStore, change: str) -> None:
    store.put(_NS, "other", {"text": "memory other"})
    assert store.wait_for_index(timeout=60)
    index = store.vector_index
    lock = index.handle.lock
    with lock.hold():  # nothing reaches Chroma until the change below was applied by the second applier
        store.put(_NS, "x", {"text": "memory before"})
        before = _catalog_vector(store, "x")
        assert before is not None
        # The first applier: the store's catch-up thread, on its way to apply the put (having read it, if it
        # reads before it takes the lock). No other thread of the store asks for the index here.
        deadline = time.monotonic() + 60
        while not any(_waiting_for(t, lock) for t in threading.enumerate()):
            assert time.monotonic() < deadline, "the catch-up thread never asked for the index"
            time.sleep(0.005)
        if change == "delete":
            store.delete(_NS, "x")
        else:
            store.put(_NS, "x", {"text": "memory after, another text"})
        index.sync(["memories"])  # the second applier, in this thread (the lock is re-entrant)
    assert store.wait_for_index(timeout=60)

    col = index.chroma_collection("memories")
    assert col is not None
    rid = record_id(before[0], 0)
    got = col.get(ids=[rid], include=["embeddings"])
    if change == "delete":
        assert got["ids"] == [], "the deleted item is back in Chroma"
    else:
        after = _catalog_vector(store, "x")
        assert after is not None and after[0] == before[0] and not np.allclose(after[1], before[1])
        assert got["ids"] == [rid]
        assert np.allclose(np.asarray(got["embeddings"][0]), after[1]), "Chroma kept the vector from before"
    assert index_problems(store) == []
