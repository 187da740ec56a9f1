"""Round trips of the calls a load mix makes most, with the catalog on PostgreSQL.

On a busy machine every round trip to the server costs a scheduling delay,
and a write's round trips are made while holding the lock every machine's
writes wait for. These tests count the statements one call sends: a search
reads its collection's counts and its namespace scope in one statement, and a
version bump reads its version state (own version, newest version, its
lineage, the item's children) in one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp

from langgraph_memory import Memory
from langgraph_memory.catalog import scope as _scope
from langgraph_memory.catalog.postgres.connection import _FLUSH, PgConnection
from langgraph_memory.config import Settings
from langgraph_memory.store import ChromaStore

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def mem(pg_database: str, tmp_path: Path, fake_embeddings: Any) -> Iterator[Memory]:
    with Memory.open(pg_database, local_dir=tmp_path / "local", embeddings=fake_embeddings) as m:
        yield m


def _sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    sent: list[str] = []
    for cls in (psycopg.ClientCursor, psycopg.Cursor):  # statements bound on the client, and on the server

        def execute(cur: Any, query: Any, params: Any = None, *, _original: Any = cls.execute, **kw: Any) -> Any:
            sent.append(str(query))
            return _original(cur, query, params, **kw)

        monkeypatch.setattr(cls, "execute", execute)
    script = PgConnection._send_script  # a commit: its statements bound, in one round trip

    def send_script(conn: PgConnection, sql: str) -> None:
        sent.append(sql)
        script(conn, sql)

    monkeypatch.setattr(PgConnection, "_send_script", send_script)
    return sent


def test_a_search_reads_its_counts_and_scope_in_one_statement(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    store = mem.store
    for i in range(6):
        store.put(("load", f"w{i % 2}"), f"k{i}", {"text": f"spreads widened on day {i}"})
    store.put(("other",), "x", {"text": "elsewhere"})
    sent = _sent(monkeypatch)
    hits = store.search(("load", "w0"), query="spreads widened", limit=10)
    assert sorted(h.key for h in hits) == ["k0", "k2", "k4"]
    counts = [s for s in sent if "collection_counts" in s]
    assert len(counts) == 1 and "FROM namespaces" in counts[0], sent
    assert not any("FROM namespaces" in s and "collection_counts" not in s and "sum(n_items)" in s for s in sent)


def test_the_one_statement_reads_what_the_two_read(mem: Memory) -> None:
    store = mem.store
    for ns in [("load", "a"), ("load", "a", "b"), ("load", "ab"), ("load", "c"), ("other",)]:
        store.put(ns, "k", {"text": "t"})
        store.put(ns, "k2", {"text": "u"}, index=False)
    for prefix in [("load",), ("load", "a"), ("load", "c"), ("load", "none"), ("other",)]:
        bounds = _scope.prefix_bounds(prefix)
        with store.catalog.snapshot() as conn:
            name = store.planner.collections.for_namespace(prefix).name
            counts, (n, v, ids, sql) = _scope.counts_and_namespace_scope(conn, name, bounds)
            want_counts = _scope.collection_counts(conn)
            wn, wv, wids, wsql = _scope.namespace_scope(conn, name, bounds)
        assert counts == want_counts
        assert (n, v, sorted(ids.tolist()), sql) == (wn, wv, sorted(wids.tolist()), wsql), prefix


def test_a_version_bump_reads_its_version_state_in_one_statement(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    first = mem.store_strategy("trend", "20-day momentum")
    sent = _sent(monkeypatch)
    second = mem.store_strategy("trend", "30-day momentum")
    assert (first.version, second.version) == (1, 2)
    assert [e.parent_id for e in mem.lineage_store.parents(second.id)] == [first.id]
    assert sum("FROM versions" in s for s in sent) == 1, sent
    assert not any(s.startswith("SELECT collection FROM lineage_nodes") for s in sent), sent
    assert not any(s.startswith("SELECT 1 FROM lineage_edges") for s in sent), sent


def test_a_typed_write_reads_its_item_before_the_write_lock(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    first = mem.store_strategy("carry", "long the high yielder")
    mem.store_lesson("sized too big", failure_type="overfit")
    sent = _sent(monkeypatch)
    lesson = mem.store_lesson("stopped out at the open", failure_type="overfit")
    # A lesson (no version, no parent): its item is read first; the lock goes with its changes and COMMIT.
    locked = [s for s in sent if "pg_advisory_xact_lock" in s]
    assert len(locked) == 1 and "COMMIT" in locked[0] and "INSERT INTO items" in locked[0], sent
    assert any("FROM items WHERE (ns_id, key)" in s for s in sent[: sent.index(locked[0])]), sent
    sent.clear()
    second = mem.store_strategy("carry", "long the high yielder, hedged")
    # A version: the lock goes with the read of the version numbers, after the item's read.
    locked = [s for s in sent if "pg_advisory_xact_lock" in s]
    assert len(locked) == 1 and "FROM versions" in locked[0], sent
    assert any("FROM items WHERE (ns_id, key)" in s for s in sent[: sent.index(locked[0])]), sent
    assert (first.version, second.version) == (1, 2)
    assert mem.store.get(mem.namespace("lessons"), lesson.id) is not None


def test_a_write_commits_without_waiting_under_the_lock_then_waits_for_the_disk_in_the_same_round_trip(
    mem: Memory, monkeypatch: pytest.MonkeyPatch, pg_database: str
) -> None:
    with psycopg.connect(pg_database, autocommit=True) as conn:
        configured = conn.execute("SHOW synchronous_commit").fetchone()[0]  # CI's shared cluster runs with it off
    mem.store.put(("load", "w0"), "k", {"text": "first"})
    sent = _sent(monkeypatch)
    mem.store.put(("load", "w0"), "k", {"text": "second"})
    final = sent[-1]
    assert "synchronous_commit = off" in sent[0] and any("pg_advisory_xact_lock" in s for s in sent), sent
    # The lock ends with the first COMMIT; the second transaction's synchronous commit flushes the WAL past it.
    assert final.endswith(f"COMMIT; {_FLUSH}"), final
    with psycopg.connect(pg_database, autocommit=True) as conn:
        assert conn.execute("SHOW synchronous_commit").fetchone()[0] == configured  # the server's setting is untouched
    assert mem.store.get(("load", "w0"), "k").value == {"text": "second"}  # type: ignore[union-attr]


def _plain_store(url: str, local: Path, emb: Any) -> ChromaStore:
    """A store as LangGraph code opens it (no keyword ranking), its catalog on the server."""
    return ChromaStore(
        settings=Settings.resolve(url, local_dir=local), index={"dims": 16, "embed": emb, "fields": ["text"]}
    )


@pytest.fixture
def two(pg_database: str, tmp_path: Path, fake_embeddings: Any) -> Iterator[tuple[ChromaStore, ChromaStore]]:
    """This machine's store and another machine's, on one catalog."""
    store = _plain_store(pg_database, tmp_path / "one", fake_embeddings)
    other = _plain_store(pg_database, tmp_path / "other", fake_embeddings)
    try:
        yield store, other
    finally:
        other.close()
        store.close()


def test_a_one_namespace_search_is_two_round_trips_and_sees_another_machines_writes(
    two: tuple[ChromaStore, ChromaStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The status version and the change log's head come with the counts, and a small scope's values with its
    # vectors: what another machine changed in between must still show (a value replaced, an item retired).
    ns = ("load", "w0")
    store, other = two
    for i in range(5):
        other.put(ns, f"k{i}", {"text": f"spreads widened on day {i}"})
    store.search(ns, query="spreads widened", limit=10)  # connected, caches warm
    sent = _sent(monkeypatch)
    hits = store.search(ns, query="spreads widened", limit=3)  # fewer than in scope: no listing of the rest
    assert len(hits) == 3
    assert len(sent) == 2, sent
    assert "FROM meta" in sent[0] and "collection_counts" in sent[0], sent
    assert "i.value" in sent[1] and "v.vec" in sent[1], sent
    other.put(ns, "k1", {"text": "replaced on the other machine"})
    other.items.set_status([(ns, "k2")], "retired", reason="stale")
    got = {h.key: h.value["text"] for h in store.search(ns, query="spreads widened", limit=10)}
    assert sorted(got) == ["k0", "k1", "k3", "k4"], got
    assert got["k1"] == "replaced on the other machine"
    assert len(store.search(ns, query="spreads widened", limit=10, include_retired=True)) == 5
    other.items.set_status([(ns, "k3")], "retired", reason="stale too")
    assert sorted(h.key for h in store.search(ns, query="spreads", limit=10)) == ["k0", "k1", "k4"]
    other.delete(ns, "k4")
    assert sorted(h.key for h in store.search(ns, query="spreads", limit=10)) == ["k0", "k1"]


def test_a_search_whose_collection_is_in_memory_sees_another_machines_puts(
    two: tuple[ChromaStore, ChromaStore],
) -> None:
    # The change log's head read with the counts brings the in-memory vectors up to date.
    from langgraph.store.base import PutOp

    ns = ("load", "big")
    store, other = two
    other.batch([PutOp(ns, f"k{i}", {"text": f"filler note {i}"}) for i in range(600)])
    store.search(ns, query="filler note 3", limit=3)  # 600 items: the collection is loaded into memory
    assert store.planner.vectors is not None and store.planner.vectors.cached("memories")
    other.put(ns, "fresh", {"text": "a completely new thought"})
    assert [h.key for h in store.search(ns, query="a completely new thought", limit=1)] == ["fresh"]
    other.delete(ns, "fresh")
    assert "fresh" not in {h.key for h in store.search(ns, query="a completely new thought", limit=5)}


def test_a_search_of_whole_collections_reads_its_heads_with_the_counts(
    two: tuple[ChromaStore, ChromaStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    # No prefix: every collection whole, the collection in memory (600 items). The status version and the change
    # log's head come with the counts, not in statements of their own, and still follow another machine.
    from langgraph.store.base import PutOp

    ns = ("load", "big")
    store, other = two
    other.batch([PutOp(ns, f"k{i}", {"text": f"filler note {i}"}) for i in range(600)])
    store.search((), query="filler note 3", limit=3)  # connected, the collection loaded
    sent = _sent(monkeypatch)
    assert store.search((), query="filler note 7", limit=3)
    assert "collection_counts" in sent[0] and "FROM meta" in sent[0], sent
    assert sum("FROM meta" in s for s in sent) == 1, sent
    other.put(ns, "fresh", {"text": "a completely new thought"})
    assert [h.key for h in store.search((), query="a completely new thought", limit=1)] == ["fresh"]
    other.items.set_status([(ns, "fresh")], "retired", reason="stale")
    assert "fresh" not in {h.key for h in store.search((), query="a completely new thought", limit=5)}


def test_a_bulk_load_leaves_postgresql_counting_the_items(
    pg_database: str, tmp_path: Path, fake_embeddings: Any
) -> None:
    # Autovacuum would analyze the tables too, a minute or more later: off here, so only the store's ANALYZE counts.
    with Memory.open(pg_database, local_dir=tmp_path / "local", embeddings=fake_embeddings) as m:
        with psycopg.connect(pg_database, autocommit=True) as admin:
            for table in ("items", "vectors", "fields"):
                admin.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
            (before,) = admin.execute("SELECT reltuples FROM pg_class WHERE relname = 'items'").fetchone()
            assert before <= 0  # never analyzed (-1) or empty
            for start in range(0, 3000, 500):
                m.store.batch(
                    [PutOp(("load",), f"k{i}", {"text": f"fill {i} of the load"}) for i in range(start, start + 500)]
                )
            counted = dict(
                admin.execute(
                    "SELECT relname, reltuples FROM pg_class WHERE relname IN ('items', 'vectors', 'fields')"
                ).fetchall()
            )
    # Analyzed as the items doubled (1,000 and 2,000): what the planner then knows is within 2x of the truth.
    assert counted["items"] >= 1500 and counted["vectors"] >= 1500 and counted["fields"] >= 1500
