"""Reads of the SQLite catalog and its writes do not wait for each other across threads.

A search reads its vectors inside one read snapshot (scoring up to 100,000 of them exactly while the index
catches up); a put is one write transaction. With one connection for both, each put waited for the whole
search. WAL lets readers beside the writer, so each read takes a connection of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from langgraph_memory.catalog.catalog import Catalog
from langgraph_memory.errors import StoreBackendError

#: Longest a step may take when nothing makes it wait (a loaded, shared 2-core machine).
PROMPT = 10.0


def _while_held(hold: Callable[[], AbstractContextManager[object]], step: Callable[[], object]) -> object:
    """Run ``step`` while another thread is inside the context ``hold()``; fail if ``step`` waits for it."""
    entered, done, gave_up = threading.Event(), threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def holder() -> None:
        try:
            with hold():
                entered.set()
                # Old code: ``step`` waits for this block, so ``done`` never comes and the holder gives up.
                if not done.wait(PROMPT):
                    gave_up.set()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            entered.set()

    t = threading.Thread(target=holder)
    t.start()
    try:
        assert entered.wait(PROMPT)
        result = step()
        finished_while_held = not gave_up.is_set()
        done.set()
    finally:
        done.set()
        t.join()
    assert not errors
    assert finished_while_held, "the step waited for the other thread's block to end"
    return result


def test_a_read_does_not_wait_for_another_threads_write_and_sees_the_last_commit(tmp_path: Path) -> None:
    with Catalog(tmp_path / "catalog.sqlite") as cat:
        with cat.write() as conn:
            cat.set_meta(conn, "k", "committed")

        @contextmanager
        def uncommitted_write() -> Iterator[None]:
            with cat.write() as conn:
                cat.set_meta(conn, "k", "uncommitted")
                yield

        assert _while_held(uncommitted_write, lambda: cat.meta("k")) == "committed"
        assert cat.meta("k") == "uncommitted"  # committed when the block ended


def test_a_write_does_not_wait_for_another_threads_read_snapshot(tmp_path: Path) -> None:
    with Catalog(tmp_path / "catalog.sqlite") as cat:

        def write() -> str | None:
            with cat.write() as conn:
                cat.set_meta(conn, "k", "v")
            return cat.meta("k")

        assert _while_held(cat.snapshot, write) == "v"


def test_reads_inside_a_write_see_its_changes_and_a_write_inside_a_snapshot_is_refused(tmp_path: Path) -> None:
    with Catalog(tmp_path / "catalog.sqlite") as cat:
        with cat.write() as conn:
            cat.set_meta(conn, "k", "mine")
            with cat.read() as r, cat.snapshot() as s:
                assert cat.get_meta(r, "k") == cat.get_meta(s, "k") == "mine"
        with cat.snapshot() as s:
            with cat.read() as r:
                assert r is s  # a read nested in a snapshot keeps its view
            with pytest.raises(RuntimeError, match="inside a read snapshot"):
                with cat.write():
                    pass
    with pytest.raises(StoreBackendError, match="closed"):
        with cat.read():
            pass


def test_a_put_does_not_wait_for_a_search_in_another_thread(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "memory", embeddings=DeterministicFakeEmbedding(size=16)) as mem:
        store = mem.store
        if store.catalog.dialect != "sqlite":
            pytest.skip("the SQLite catalog's connections")
        store.put(("notes",), "a", {"text": "momentum in rates"})
        # A search holds a read snapshot of the catalog for as long as it scores.
        _while_held(store.catalog.snapshot, lambda: store.put(("notes",), "b", {"text": "carry in fx"}))
        assert _while_held(store.catalog.write, lambda: store.get(("notes",), "b")) is not None
        assert {it.key for it in store.search(("notes",), query="carry")} == {"a", "b"}
