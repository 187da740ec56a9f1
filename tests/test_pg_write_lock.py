"""Many writers on one PostgreSQL catalog: a put holds the write lock only while the server runs its changes.

The catalog's write lock orders the change log and the allocations (versions,
namespace ids, claims). A plain put (``late``) reads the items it replaces
without the lock and takes it in front of its first change, so the lock is
never held across a round trip to a busy client; what it read is checked
again under the lock, and a put whose items another machine changed in
between runs again holding the lock from the start (nothing lost, nothing
doubled). One process at a time applies a collection's change log to the
shared Chroma index (`langgraph_memory.catalog.applier`).
PostgreSQL only: SQLite serializes every write with its file lock.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from langgraph_memory.catalog import applier
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import items as _items
from langgraph_memory.catalog import queue as _queue
from langgraph_memory.catalog.postgres.catalog import PgCatalog
from langgraph_memory.config import Settings
from langgraph_memory.errors import LockTimeoutError, WriteConflictError
from langgraph_memory.store import ChromaStore

pytestmark = pytest.mark.timeout(180)

NS = ("docs", "a")


@pytest.fixture
def cat(pg_database: str) -> Iterator[PgCatalog]:
    c = PgCatalog(pg_database, timeout=10)
    try:
        yield c
    finally:
        c.close()


def _put(key: str, text: str) -> _items.ItemWrite:
    value = {"text": text}
    return _items.ItemWrite(NS, key, "memories", json.dumps(value), value=value)


def _value(url: str, key: str) -> Any:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT i.value FROM items i JOIN namespaces n ON n.id = i.ns_id WHERE n.ns = %s AND i.key = %s",
            (_item_rows.join_ns(NS), key),
        ).fetchall()
    return [json.loads(r[0])["text"] for r in rows]


@pytest.fixture
def held(pg_database: str) -> Iterator[None]:
    """Another machine holding the catalog's write lock (an ordinary write, open) for the test's duration."""
    other = PgCatalog(pg_database, timeout=10)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with other.write() as conn:
            conn.execute("SELECT 1").fetchone()  # the lock goes to the server with the first statement
            holding.set()
            release.wait(120)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert holding.wait(60)
        yield
    finally:
        release.set()
        t.join(60)
        other.close()


@pytest.fixture
def short(pg_database: str) -> Iterator[PgCatalog]:
    """A catalog that waits at most 1 s for the write lock (opened before another machine takes it)."""
    c = PgCatalog(pg_database, timeout=1)
    try:
        yield c
    finally:
        c.close()


def test_a_late_write_reads_without_the_write_lock_and_takes_it_with_its_first_change(
    short: PgCatalog, held: None
) -> None:
    with short.write(late=True) as conn:  # an ordered write would fail here after 1 s
        assert conn.execute("SELECT count(*) FROM items").fetchone()[0] == 0
    with pytest.raises(LockTimeoutError):  # its change needs the lock, which the other machine holds
        with short.write(late=True) as conn:
            conn.execute("SELECT count(*) FROM items").fetchone()
            conn.execute("INSERT INTO meta(key, value) VALUES ('blocked', '1')")
            conn.execute("SELECT 1").fetchone()
    with pytest.raises(LockTimeoutError):  # as an ordered write waits at its start
        with short.write() as conn:
            conn.execute("SELECT count(*) FROM items").fetchone()


def test_a_late_put_fails_with_a_conflict_when_its_item_changed_before_the_lock(
    cat: PgCatalog, pg_database: str
) -> None:
    other = PgCatalog(pg_database, timeout=10)
    try:
        with cat.write() as conn:
            _items.write_items(conn, [_put("k", "first")], cat.names, now=1.0)
        with pytest.raises(WriteConflictError):
            with cat.write(late=True) as conn:
                _items.write_items(conn, [_put("k", "mine"), _put("new", "mine")], cat.names, now=2.0)
                # Another machine deletes and puts k again (a new row) before this put's changes are sent.
                with other.write() as oc:
                    _items.write_items(oc, [_items.ItemWrite(NS, "k", "memories", None)], other.names, now=3.0)
                with other.write() as oc:
                    _items.write_items(oc, [_put("k", "theirs")], other.names, now=3.0)
        assert _value(pg_database, "k") == ["theirs"] and _value(pg_database, "new") == []
        # Unchanged items pass the check: the same put again commits.
        with cat.write(late=True) as conn:
            _items.write_items(conn, [_put("k", "mine"), _put("new", "mine")], cat.names, now=4.0)
        assert _value(pg_database, "k") == ["mine"] and _value(pg_database, "new") == ["mine"]
    finally:
        other.close()


def test_a_late_put_of_a_key_another_machine_created_meanwhile_conflicts_instead_of_doubling(
    cat: PgCatalog, pg_database: str
) -> None:
    other = PgCatalog(pg_database, timeout=10)
    try:
        with cat.write() as conn:
            _items.write_items(conn, [_put("seed", "x")], cat.names, now=1.0)  # the namespace exists
        with pytest.raises(WriteConflictError):
            with cat.write(late=True) as conn:
                _items.write_items(conn, [_put("k", "mine")], cat.names, now=2.0)
                with other.write() as oc:
                    _items.write_items(oc, [_put("k", "theirs")], other.names, now=3.0)
        assert _value(pg_database, "k") == ["theirs"]
    finally:
        other.close()


def test_the_store_runs_a_conflicting_put_again_under_the_lock(
    tmp_path: Path, pg_database: str, fake_embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = str(tmp_path / "wl")
    store = ChromaStore(
        settings=Settings.resolve(pg_database, local_dir=local),
        index={"dims": 16, "embed": fake_embeddings, "fields": ["text"]},
    )
    other = PgCatalog(pg_database, timeout=10)
    try:
        store.put(NS, "k", {"text": "first"})
        original = _items.write_items
        check = _items._Known._check_when_ordered
        calls: list[bool] = []

        def racing(known: Any, conn: Any, pairs: Any) -> None:
            calls.append(True)
            if len(calls) == 1:  # between this put's reads and its changes, another machine replaces the item
                with other.write() as oc:
                    original(oc, [_items.ItemWrite(NS, "k", "memories", None)], other.names, now=1.0)
                with other.write() as oc:
                    original(oc, [_put("k", "theirs")], other.names, now=1.0)
            check(known, conn, pairs)

        monkeypatch.setattr(_items._Known, "_check_when_ordered", racing)
        store.put(NS, "k", {"text": "mine"})
        assert len(calls) == 4  # ours, the other's two, and ours again: the late try conflicted
        assert _value(pg_database, "k") == ["mine"]
        got = store.get(NS, "k")
        assert got is not None and got.value == {"text": "mine"}
        hits = store.search(("docs",), query="mine", limit=5)
        assert [h.key for h in hits] == ["k"]
    finally:
        other.close()
        store.close()


def test_one_process_at_a_time_claims_a_collections_log(cat: PgCatalog, short: PgCatalog, pg_database: str) -> None:
    other = PgCatalog(pg_database, timeout=10)
    try:
        with cat.read() as a, other.read() as b:
            assert applier.try_claim(a, "memories")
            assert not applier.try_claim(b, "memories")
            with pytest.raises(LockTimeoutError):  # claim() waits for it, up to the transaction's lock_timeout
                with short.write(ordered=False) as s:
                    applier.claim(s, "memories")
            assert applier.try_claim(b, "lessons")  # another collection's log is another claim
            applier.release(a, "memories")
            assert applier.try_claim(b, "memories")
            applier.release(b, "memories")
            applier.release(b, "lessons")
    finally:
        other.close()
    # A claim dies with its connection: a process that was killed leaves the log to the others.
    gone = PgCatalog(pg_database, timeout=10)
    with gone.read() as g:
        assert applier.try_claim(g, "memories")
    gone.close()
    deadline = time.monotonic() + 60
    with cat.read() as a:
        while not applier.try_claim(a, "memories"):  # the server ends the session soon after the client left
            assert time.monotonic() < deadline, "a closed connection's claim was never released"
            time.sleep(0.05)
        applier.release(a, "memories")


def test_a_write_whose_log_another_process_applies_is_applied_once_that_one_lets_go(
    tmp_path: Path, pg_database: str, fake_embeddings: Any
) -> None:
    local = str(tmp_path / "wl")
    store = ChromaStore(
        settings=Settings.resolve(pg_database, local_dir=local),
        index={"dims": 16, "embed": fake_embeddings, "fields": ["text"]},
    )
    claimer = PgCatalog(pg_database, timeout=10)
    try:
        store.put(NS, "first", {"text": "before the claim"})
        assert store.wait_for_index(60)
        with claimer.read() as c:
            assert applier.try_claim(c, "memories")
        store.put(NS, "k", {"text": "while another process applies"})
        with claimer.read() as c:
            assert _queue.pending(c, "memories")  # nobody else applied it
            applier.release(c, "memories")
        deadline = time.monotonic() + 60
        while True:  # the writer's catch-up takes the claim once it is free
            with claimer.read() as c:
                if not _queue.pending(c, "memories"):
                    break
            assert time.monotonic() < deadline, "the change log was never applied"
            time.sleep(0.05)
        assert store.wait_for_index(60)
        assert store.vector_index.count("memories") == 2
    finally:
        claimer.close()
        store.close()


def test_noted_reads_are_flushed_without_waiting_for_another_machines_write_lock(
    tmp_path: Path, pg_database: str, fake_embeddings: Any
) -> None:
    local = str(tmp_path / "wl")
    store = ChromaStore(
        settings=Settings.resolve(pg_database, local_dir=local, lock_timeout=2),
        index={"dims": 16, "embed": fake_embeddings, "fields": ["text"]},
    )
    other = PgCatalog(pg_database, timeout=10)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with other.write() as conn:
            conn.execute("SELECT 1").fetchone()
            holding.set()
            release.wait(120)

    t = threading.Thread(target=hold)
    try:
        store.put(NS, "a", {"text": "read twice"})
        store.put(NS, "b", {"text": "read once"})
        store.get(NS, "a")
        store.get(NS, "a")
        store.get(NS, "b")
        t.start()
        assert holding.wait(60)
        # An ordered write would wait 2 s for the lock, then fail with LockTimeoutError.
        assert store.flush_access() == 2
    finally:
        release.set()
        if t.is_alive():
            t.join(60)
        other.close()
    try:
        got = store.get(NS, "a", refresh_ttl=False)
        assert got is not None
        with psycopg.connect(pg_database, autocommit=True) as conn:
            counts = dict(conn.execute("SELECT key, access_count FROM items").fetchall())
        assert counts == {"a": 2, "b": 1}
    finally:
        store.close()
