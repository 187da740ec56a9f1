"""Two appliers of the change log in turn: Chroma ends as the catalog is, whichever read first.

The store's catch-up thread and an inline sync (a delete of the archive, a
restore, a close) both apply the queue. One of them that read an item's
vectors before a change of it committed must not write them after the other
one applied that change: a deleted item came back as a Chroma record without
its item, an updated one kept its old vector. The interleaving is driven
here by holding the index lock while the first applier waits for it.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from bench.common.crash_check import index_problems
from langgraph_memory.index.chroma import record_id
from langgraph_memory.store import ChromaStore
from tests.helpers.index_order import catalog_vector, waiting_for

_NS = ("u", "a")


@pytest.mark.parametrize("change", ["delete", "update"])
def test_an_applier_that_read_before_a_change_does_not_undo_it_in_chroma(store: ChromaStore, change: str) -> None:
    store.put(_NS, "other", {"text": "memory other"})
    assert store.wait_for_index(timeout=60)
    index = store.vector_index
    lock = index.handle.lock
    with lock.hold():  # nothing reaches Chroma until the change below was applied by the second applier
        store.put(_NS, "x", {"text": "memory before"})
        before = catalog_vector(store, _NS, "x")
        assert before is not None
        # The first applier: the store's catch-up thread, on its way to apply the put (having read it, if it
        # reads before it takes the lock). No other thread of the store asks for the index here.
        deadline = time.monotonic() + 60
        while not any(waiting_for(t, lock) for t in threading.enumerate()):
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
        after = catalog_vector(store, _NS, "x")
        assert after is not None and after[0] == before[0] and not np.allclose(after[1], before[1])
        assert got["ids"] == [rid]
        assert np.allclose(np.asarray(got["embeddings"][0]), after[1]), "Chroma kept the vector from before"
    assert index_problems(store) == []
