"""A repair of the index and an applier of the change log in turn: Chroma ends as the catalog is.

A repair lists Chroma's ids, reads from the catalog which records are
missing and their vectors, then writes them. An applier that applied a
delete or an update of such an item between that read and that write was
undone by it: the deleted item came back as a Chroma record without its
item, the updated one got its old vector back. The repair cannot be held up
by the index lock between its two steps without a hook, so this test stops
its thread there with a trace function (in that thread only), and then lets
the applier run as far as it can.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

import numpy as np
import pytest

from bench.common.crash_check import index_problems
from langgraph_memory.catalog import item_rows
from langgraph_memory.index.chroma import ChromaIndex, record_id
from langgraph_memory.index.repair import IndexRepair
from langgraph_memory.store import ChromaStore
from tests.helpers.index_order import catalog_vector, waiting_for

_NS = ("u", "a")
_REPAIR = IndexRepair._repair_claimed.__code__
_LAST_READ = item_rows.load_vectors.__code__  # the repair's last read of the catalog: the vectors it writes
_EXIT = contextlib._GeneratorContextManager.__exit__.__code__  # the end of a `with` block (the read's)


class _StopBeforeWrite:
    """Runs a repair in a thread that stops where it has read the catalog and calls on to write to Chroma.

    There it records whether it holds the index lock, and waits for ``go``.
    """

    def __init__(self, index: ChromaIndex) -> None:
        self.index = index
        self.stopped = threading.Event()
        self.go = threading.Event()
        self.holding = False
        self.error: BaseException | None = None
        self._read = False

    def run(self, repair: Callable[[], object]) -> None:
        sys.settrace(self._call)
        try:
            repair()
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            self.error = exc
        finally:
            sys.settrace(None)

    def _call(self, frame: FrameType, event: str, _arg: Any) -> Any:
        if frame.f_back is None or frame.f_back.f_code is not _REPAIR:
            return None
        if frame.f_code is _LAST_READ:
            return self._returned
        if self._read and frame.f_code is not _EXIT and not self.stopped.is_set():
            self.holding = self.index._holding() > 0
            self.stopped.set()
            self.go.wait(120)
        return None

    def _returned(self, frame: FrameType, event: str, _arg: Any) -> Any:
        if event == "return":
            self._read = True
        return self._returned


@pytest.mark.parametrize("change", ["delete", "update"])
def test_a_repair_that_read_before_a_change_does_not_undo_it_in_chroma(store: ChromaStore, change: str) -> None:
    store.put(_NS, "other", {"text": "memory other"})
    store.put(_NS, "x", {"text": "memory before"})
    assert store.wait_for_index(timeout=60)
    index = store.vector_index
    assert isinstance(index, ChromaIndex)
    lock = index.handle.lock
    before = catalog_vector(store, _NS, "x")
    assert before is not None
    rid = record_id(before[0], 0)
    col = index.chroma_collection("memories")
    assert col is not None
    with lock.hold():
        col.delete(ids=[rid])  # Chroma lost x's record: the repair adds it back from the catalog

    stop = _StopBeforeWrite(index)
    repair = threading.Thread(target=stop.run, args=(index.reconcile,))
    repair.start()
    try:
        assert stop.stopped.wait(60), f"the repair never got to its write ({stop.error!r})"
        if change == "delete":
            store.delete(_NS, "x")
        else:
            store.put(_NS, "x", {"text": "memory after, another text"})
        # The second applier. While the repair holds the index lock it can only wait for it; otherwise it
        # applies the change now, and the repair writes afterwards what it read before.
        applier = threading.Thread(target=index.sync, args=(["memories"],))
        applier.start()
        deadline = time.monotonic() + 60
        while applier.is_alive() and not (stop.holding and waiting_for(applier, lock)):
            assert time.monotonic() < deadline, "the applier neither applied the change nor waited for the index"
            time.sleep(0.005)
    finally:
        stop.go.set()
        repair.join(120)
    assert not repair.is_alive() and stop.error is None, stop.error
    applier.join(120)
    assert store.wait_for_index(timeout=60)

    got = col.get(ids=[rid], include=["embeddings"])
    if change == "delete":
        assert got["ids"] == [], "the repair brought the deleted item back into Chroma"
    else:
        after = catalog_vector(store, _NS, "x")
        assert after is not None and after[0] == before[0] and not np.allclose(after[1], before[1])
        assert got["ids"] == [rid]
        assert np.allclose(np.asarray(got["embeddings"][0]), after[1]), "the repair wrote the vector from before"
    assert index_problems(store) == []
