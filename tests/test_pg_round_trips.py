"""The PostgreSQL catalog sends statements nobody waits for together, with the same results as one by one.

Inside a write transaction, BEGIN, the write lock and every INSERT/UPDATE/DELETE
without RETURNING travel with the next statement that returns rows, or with
the COMMIT; a batch of items is looked up and given ids in one statement each.
These tests check that the results are those of sending them one by one:
row counts, errors failing the whole transaction, a key written twice in one
batch, and that a write of several statements is one round trip.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp

from langgraph_memory.catalog.connection import Rows
from langgraph_memory.catalog.postgres.catalog import PgCatalog
from langgraph_memory.catalog.postgres.connection import _FLUSH, PgConnection
from langgraph_memory.config import Settings
from langgraph_memory.errors import LockTimeoutError, StorageError
from langgraph_memory.store import ChromaStore

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def cat(pg_database: str) -> Iterator[PgCatalog]:
    c = PgCatalog(pg_database, timeout=10)
    try:
        yield c
    finally:
        c.close()


class _Count:
    """Counts the statements (round trips) a connection sends: through a cursor, or as a script (a commit)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[str] = []
        original = psycopg.ClientCursor.execute
        script = PgConnection._send_script

        def execute(cur: Any, query: Any, params: Any = None, **kw: Any) -> Any:
            self.sent.append(str(query))
            return original(cur, query, params, **kw)

        def send_script(conn: PgConnection, sql: str) -> None:
            self.sent.append(sql)
            script(conn, sql)

        monkeypatch.setattr(psycopg.ClientCursor, "execute", execute)
        monkeypatch.setattr(PgConnection, "_send_script", send_script)


def _meta(url: str, key: str) -> str | None:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
    return None if row is None else str(row[0])


def test_a_write_of_several_statements_is_one_round_trip(
    cat: PgCatalog, pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with cat.read():
        pass  # connected
    count = _Count(monkeypatch)
    with cat.write() as conn:
        for i in range(3):
            conn.execute("INSERT INTO meta(key, value) VALUES (%s, %s)", (f"k{i}", f"it's {i}% done"))
    assert len(count.sent) == 1, count.sent
    assert _meta(pg_database, "k2") == "it's 2% done"


def test_executemany_sends_its_statement_as_written_and_rows_go_500_to_a_statement(
    cat: PgCatalog, pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing rewrites a statement: executemany runs the one it is given once per row. An INSERT declared
    # as Rows goes as one multi-row statement per 500 rows. Either way the write is one round trip.
    rows = [(f"r{i}", str(i)) for i in range(1200)]
    with cat.read():
        pass  # connected
    count = _Count(monkeypatch)
    with cat.write() as conn:
        conn.executemany("INSERT INTO meta(key, value) VALUES (%s, %s)", rows[:600])
        Rows.both("INSERT INTO meta(key, value)", "(?, ?)").insert(conn, rows[600:])
    assert len(count.sent) == 1
    assert count.sent[0].count("INSERT INTO meta(key, value) VALUES ('r") == 600 + 2
    with psycopg.connect(pg_database, autocommit=True) as c:
        got = c.execute("SELECT count(*), sum(CAST(value AS int)) FROM meta WHERE key LIKE 'r%%'").fetchone()
    assert got == (1200, sum(range(1200)))


def test_reads_inside_a_write_see_its_deferred_writes_and_row_counts_are_exact(cat: PgCatalog) -> None:
    with cat.write() as conn:
        conn.executemany("INSERT INTO meta(key, value) VALUES (%s, %s)", [(f"r{i}", "0") for i in range(1200)])
        cur = conn.execute("UPDATE meta SET value = '1' WHERE key IN ('r1', 'r2', 'nope')")
        assert cur.rowcount == 2
        assert conn.execute("SELECT count(*) FROM meta WHERE key LIKE 'r%%'").fetchone()[0] == 1200
        dup = conn.executemany(
            "INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            [("r5", "x"), ("new1", "x"), ("new1", "y")],
        )
        assert dup.rowcount == 1
        # r1, r10-r19, r100-r199, r1000-r1199
        assert conn.execute("DELETE FROM meta WHERE key LIKE 'r1%%'").rowcount == 311
    with cat.read() as conn:
        assert conn.execute("SELECT count(*) FROM meta WHERE key LIKE 'r%%'").fetchone()[0] == 889


def test_an_error_in_a_deferred_statement_fails_the_whole_transaction(cat: PgCatalog, pg_database: str) -> None:
    with pytest.raises(StorageError):
        with cat.write() as conn:
            conn.execute("INSERT INTO meta(key, value) VALUES (%s, %s)", ("first", "1"))
            conn.execute("INSERT INTO meta(key, value) VALUES (%s, %s)", ("first", "again"))  # duplicate key
    assert _meta(pg_database, "first") is None
    with cat.write() as conn:  # the connection is usable again
        conn.execute("INSERT INTO meta(key, value) VALUES (%s, %s)", ("first", "1"))
    assert _meta(pg_database, "first") == "1"


def test_empty_transactions_send_nothing(cat: PgCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    with cat.read():
        pass
    count = _Count(monkeypatch)
    with cat.write():
        pass
    with cat.snapshot():
        pass
    assert count.sent == []
    with cat.snapshot() as conn:
        assert conn.execute("SELECT 1").fetchone()[0] == 1
    assert len(count.sent) == 1  # BEGIN with the SELECT; the COMMIT leaves without waiting for its answer


def test_a_finished_read_transaction_ends_on_the_server_at_once_without_a_round_trip_of_its_own(
    cat: PgCatalog, pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with cat.snapshot() as conn:
        pid = conn.raw.info.backend_pid
        conn.execute("SELECT 1").fetchone()
    count = _Count(monkeypatch)
    with cat.snapshot() as again:  # BEGIN and the SELECT: one round trip; the last COMMIT's answer read first
        assert again is conn
        assert again.execute("SELECT 2").fetchone()[0] == 2
    assert count.sent == ["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT 2"], count.sent
    # The COMMIT left with the end of the block: the server ends the snapshot with no further call of ours.
    with psycopg.connect(pg_database, autocommit=True) as watcher:
        deadline = time.monotonic() + 60
        while True:
            state = watcher.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0]
            if state == "idle":
                break
            assert time.monotonic() < deadline, f"the read transaction was left open ({state})"
            time.sleep(0.01)
    assert not conn.in_transaction
    with cat.read() as conn:  # the answer is read before the next statement: the connection works on
        assert conn.execute("SELECT 3").fetchone()[0] == 3


def test_a_batch_writing_one_key_twice_or_putting_and_deleting_it_ends_as_one_by_one(
    tmp_path: Path, pg_database: str, fake_embeddings: Any
) -> None:
    local = str(tmp_path / "rt")
    store = ChromaStore(
        settings=Settings.resolve(pg_database, local_dir=local),
        index={"dims": 16, "embed": fake_embeddings, "fields": ["text"]},
    )
    try:
        ns = ("docs", "a")
        store.batch([PutOp(ns, "old", {"text": "kept"}), PutOp(ns, "gone", {"text": "deleted later"})])
        store.batch(
            [
                PutOp(ns, "k", {"text": "first"}),
                PutOp(ns, "k", {"text": "second"}),
                PutOp(ns, "old", {"text": "updated"}),
                PutOp(ns, "gone", None),
                PutOp(ns, "tmp", {"text": "put"}),
                PutOp(ns, "tmp", None),
                PutOp(("docs", "b"), "new-ns", {"text": "in a new namespace"}),
            ]
        )
        got = {it.key: it.value["text"] for it in store.search(("docs",), limit=20)}
        assert got == {"k": "second", "old": "updated", "new-ns": "in a new namespace"}
        assert store.get(ns, "gone") is None and store.get(ns, "tmp") is None
        hits = store.search(("docs",), query="second", limit=3)
        assert len(hits) == 3 and {h.key for h in hits} == {"k", "old", "new-ns"}
        assert store.get(ns, "old").created_at < store.get(ns, "k").created_at  # type: ignore[union-attr]
    finally:
        store.close()


def test_an_unordered_write_does_not_wait_for_another_machines_write_lock(cat: PgCatalog, pg_database: str) -> None:
    import threading

    other = PgCatalog(pg_database, timeout=10)
    short = PgCatalog(pg_database, timeout=1)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with other.write() as conn:
            conn.execute("INSERT INTO meta(key, value) VALUES ('held', '1')")
            conn.execute("SELECT 1").fetchone()  # the lock is taken with the first statement sent
            holding.set()
            release.wait(60)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert holding.wait(60)
        with cat.write(ordered=False) as conn:  # would wait up to the 10 s timeout, then fail, if it took the lock
            conn.execute("INSERT INTO meta(key, value) VALUES ('free', '1')")
        assert _meta(pg_database, "free") == "1"
        with pytest.raises(LockTimeoutError):  # an ordered write waits for the lock, up to its timeout
            with short.write() as conn:
                conn.execute("INSERT INTO meta(key, value) VALUES ('blocked', '1')")
    finally:
        release.set()
        t.join(60)
        other.close()
        short.close()
    assert _meta(pg_database, "held") == "1" and _meta(pg_database, "blocked") is None


def _store(url: str, local: str, emb: Any) -> ChromaStore:
    return ChromaStore(
        settings=Settings.resolve(url, local_dir=local), index={"dims": 16, "embed": emb, "fields": ["text"]}
    )


def test_a_put_of_a_key_this_process_never_put_is_one_round_trip_and_checked_against_other_machines(
    tmp_path: Path, pg_database: str, fake_embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A key this process did not put lately is sent as new, with no lookup and no check statement: the items'
    # UNIQUE (ns_id, key) refuses a key that exists. Another machine's items must never be duplicated or lost.
    a = _store(pg_database, str(tmp_path / "a"), fake_embeddings)
    b = _store(pg_database, str(tmp_path / "b"), fake_embeddings)
    ns = ("notes", "shared")
    try:
        a.put(ns, "warm", {"text": "first put: creates the namespace, draws ids ahead"})
        a.put(ns, "warm-2", {"text": "second put: the namespace's id"})
        b.put(ns, "warm-b", {"text": "first put of b"})
        count = _Count(monkeypatch)
        a.put(ns, "new", {"text": "a brand new note"})
        assert len(count.sent) == 1, count.sent
        assert count.sent[0].endswith(f"COMMIT; {_FLUSH}") and "pg_advisory_xact_lock" in count.sent[0]
        assert "DO $" not in count.sent[0]  # no plpgsql block compiled per put
        # b has never put "new": its guess is wrong, the UNIQUE constraint refuses it, and it runs again.
        count.sent.clear()
        b.put(ns, "new", {"text": "replaced by the other machine"})
        assert "FROM items WHERE (ns_id, key)" not in count.sent[0], count.sent  # sent as new: refused
        assert any("FROM items WHERE (ns_id, key)" in s for s in count.sent[1:]), count.sent  # then looked up
        got = a.get(ns, "new")
        assert got is not None and got.value == {"text": "replaced by the other machine"}
        hits = a.search(ns, query="replaced by the other machine", limit=10)
        assert [h.key for h in hits].count("new") == 1
        assert {h.key for h in hits} == {"warm", "warm-2", "warm-b", "new"}
        # a put "new" itself, so it looks it up; b deleted it meanwhile: a's put makes it anew.
        b.delete(ns, "new")
        a.put(ns, "new", {"text": "back again"})
        assert b.get(ns, "new").value == {"text": "back again"}  # type: ignore[union-attr]
        # b deletes a key it never put, and puts it back as new: no duplicate, the old keywords gone.
        b.delete(ns, "warm")
        b.put(ns, "warm", {"text": "warmed over"})
        with psycopg.connect(pg_database, autocommit=True) as conn:
            ((n, keys),) = conn.execute(
                "SELECT count(*), count(DISTINCT key) FROM items i JOIN namespaces n ON n.id = i.ns_id WHERE n.ns = %s",
                ("notes\x1fshared",),
            ).fetchall()
            assert n == keys == 4
            counted = conn.execute("SELECT n_items FROM namespaces WHERE ns = %s", ("notes\x1fshared",)).fetchone()[0]
            assert counted == 4
            docs, tokens = conn.execute("SELECT docs, tokens FROM keyword_stats").fetchone()
            assert (docs, tokens) == conn.execute(
                "SELECT count(*), coalesce(sum(n_tokens), 0) FROM keyword_lengths"
            ).fetchone()
            terms = {t for (t,) in conn.execute("SELECT DISTINCT term FROM keyword_postings")}
        from langgraph_memory.catalog import keywords as _keywords

        live = ["second put: the namespace's id", "first put of b", "back again", "warmed over"]
        assert terms == {t for text in live for t in _keywords.index_terms(text)}
    finally:
        a.close()
        b.close()


def test_the_row_count_of_a_statement_left_for_the_commit_is_read_inside_its_transaction(cat: PgCatalog) -> None:
    # The commit runs as one script whose intermediate results are not kept: a row count read only after it
    # is refused, never given as zero.
    with cat.write() as conn:
        inside = conn.execute("INSERT INTO meta(key, value) VALUES (%s, %s)", ("counted", "1"))
        assert inside.rowcount == 1
        late = conn.execute("INSERT INTO meta(key, value) VALUES (%s, %s)", ("late", "1"))
    assert inside.rowcount == 1
    with pytest.raises(RuntimeError, match="before its transaction commits"):
        _ = late.rowcount
    assert _meta(cat.url, "late") == "1"


def test_values_deferred_to_the_commit_are_spelled_as_psycopg_spells_them(cat: PgCatalog) -> None:
    from psycopg.adapt import Transformer

    values = [0, 7, -7, 2**70, -(2**70), 1.5, -1.5, 1e-05, 0.1 + 0.2, float("nan"), float("inf"), float("-inf")]
    values += [None, True, "it's", b"\x00\xff", -0.0]
    with cat.read() as conn:
        literals = Transformer(conn.raw)
        for v in values:
            assert conn._bind("%s", (v,)) == literals.as_literal(v).decode(), v
        assert conn._bind("SELECT %s - %s", (1, -1)) == "SELECT 1 -  -1"  # never "--", a comment
        assert conn.execute("SELECT %s - %s, %s * 2", (1, -1, -2.5)).fetchone() == (2, -5.0)
