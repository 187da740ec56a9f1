"""Reads of the catalog and its writes do not wait for each other across threads, on SQLite and PostgreSQL.

A search reads its vectors inside one read snapshot (scoring up to 100,000 of them exactly while the index
catches up); a put is one write transaction. With one connection for both, each put waited for the whole
search. WAL lets SQLite readers beside the writer, PostgreSQL lets any number of connections read beside a
writer: so on either each read takes a connection of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import psycopg
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from langgraph_memory.catalog.catalog import Catalog
from langgraph_memory.catalog.postgres.catalog import READERS, PgCatalog
from langgraph_memory.errors import LockTimeoutError, StoreBackendError

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


@pytest.fixture(params=["sqlite", "postgres"])
def cat(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog | PgCatalog]:
    """A catalog on each backend."""
    if request.param == "sqlite":
        with Catalog(tmp_path / "catalog.sqlite") as sqlite_cat:
            yield sqlite_cat
        return
    pg = PgCatalog(request.getfixturevalue("pg_database"), timeout=PROMPT)
    try:
        yield pg
    finally:
        pg.close()


def test_a_read_does_not_wait_for_another_threads_write_and_sees_the_last_commit(cat: Catalog | PgCatalog) -> None:
    with cat.write() as conn:
        cat.set_meta(conn, "k", "committed")

    @contextmanager
    def uncommitted_write() -> Iterator[None]:
        with cat.write() as conn:
            cat.set_meta(conn, "k", "uncommitted")
            if isinstance(cat, PgCatalog):
                conn.flush()  # on the server, under the write lock (SQLite ran the statement already)
            yield

    assert _while_held(uncommitted_write, lambda: cat.meta("k")) == "committed"
    assert cat.meta("k") == "uncommitted"  # committed when the block ended


@pytest.mark.parametrize("hold", ["read", "snapshot"])
def test_a_write_does_not_wait_for_another_threads_read(cat: Catalog | PgCatalog, hold: str) -> None:
    @contextmanager
    def reading() -> Iterator[None]:
        with getattr(cat, hold)() as conn:
            assert cat.get_meta(conn, "k") is None  # the read has begun
            yield

    def write() -> str | None:
        with cat.write() as conn:
            cat.set_meta(conn, "k", "v")
        return cat.meta("k")

    assert _while_held(reading, write) == "v"


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
        store.put(("notes",), "a", {"text": "momentum in rates"})
        # A search holds a read snapshot of the catalog for as long as it scores.
        _while_held(store.catalog.snapshot, lambda: store.put(("notes",), "b", {"text": "carry in fx"}))
        assert _while_held(store.catalog.write, lambda: store.get(("notes",), "b")) is not None
        assert {it.key for it in store.search(("notes",), query="carry")} == {"a", "b"}


# The PostgreSQL catalog: the same guarantees, and its read connections a bounded pool.


@pytest.fixture
def pg_cat(pg_database: str) -> Iterator[PgCatalog]:
    cat = PgCatalog(pg_database, timeout=PROMPT)
    try:
        yield cat
    finally:
        cat.close()


def test_on_postgres_reads_inside_a_write_see_its_changes_and_a_write_inside_a_snapshot_is_refused(
    pg_cat: PgCatalog,
) -> None:
    cat = pg_cat
    with cat.write() as conn:
        cat.set_meta(conn, "k", "mine")
        with cat.read() as r, cat.snapshot() as s:
            assert r is s is conn  # this thread's transaction
            assert cat.get_meta(r, "k") == "mine"
    with cat.snapshot() as s:
        assert cat.get_meta(s, "k") == "mine"
        with cat.read() as r, cat.snapshot() as inner:
            assert r is inner is s  # nested in a snapshot: its view
        with pytest.raises(RuntimeError, match="inside a read snapshot"):
            with cat.write():
                pass
    with cat.read() as r:  # a write inside a plain read of this thread is allowed, on the writer's connection
        with cat.write() as w:
            assert w is not r
            cat.set_meta(w, "k", "again")
        assert cat.get_meta(r, "k") == "again"
    cat.close()
    with pytest.raises(StoreBackendError, match="closed"):
        with cat.read():
            pass


def test_on_postgres_read_connections_are_reused_and_bounded(pg_database: str) -> None:
    with PgCatalog(pg_database, timeout=1.0) as cat:
        for _ in range(5):
            assert cat.meta("catalog_id") == cat.catalog_id
        with cat.read() as first:
            pass
        with cat.snapshot() as again:
            assert again is first  # one thread reading again and again: one connection

        # READERS reads held by other threads: the next one waits, then gives up with a typed error.
        holding = [threading.Event() for _ in range(READERS)]
        release = threading.Event()

        def hold(entered: threading.Event) -> None:
            with cat.read():
                entered.set()
                release.wait(PROMPT)

        threads = [threading.Thread(target=hold, args=(e,)) for e in holding]
        for t in threads:
            t.start()
        try:
            assert all(e.wait(PROMPT) for e in holding)
            with pytest.raises(LockTimeoutError, match="read connections"):
                with cat.read():
                    pass
            with cat.write() as conn:  # the writer's connection is not one of them
                cat.set_meta(conn, "k", "v")
        finally:
            release.set()
            for t in threads:
                t.join()
        assert cat.meta("k") == "v"
        with psycopg.connect(pg_database, autocommit=True) as watcher:
            (ours,) = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
        assert ours == READERS + 1  # the readers, kept for the next reads, and the writer


def test_on_postgres_a_read_in_progress_when_the_catalog_closes_closes_its_connection_after(
    pg_cat: PgCatalog,
) -> None:
    with pg_cat.read() as conn:
        pg_cat.close()
        assert pg_cat.get_meta(conn, "catalog_id") == pg_cat.catalog_id  # the read ends as it began
    assert conn.closed
