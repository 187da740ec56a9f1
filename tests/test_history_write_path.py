"""Keeping a version costs the write no round trip of its own, and keeps every version when machines write at once.

The PostgreSQL tests name their own server (``pg_database``); the last test opens its data directory through
fixtures, so it runs on both catalogs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from langgraph_memory.catalog.postgres.connection import _FLUSH, PgConnection
from langgraph_memory.config import Settings
from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS
from tests.test_pg_round_trips import _Count

NS = ("notes", "shared")


def _store(url: str, local: Path, emb: Any) -> ChromaStore:
    return ChromaStore(
        settings=Settings.resolve(url, local_dir=str(local)),
        index={"dims": FAKE_DIMS, "embed": emb, "fields": ["text"]},
        collections=None,
    )


@pytest.mark.timeout(180)
def test_a_put_replacing_a_value_on_postgresql_keeps_its_version_in_its_commits_round_trip(
    tmp_path: Path, pg_database: str, fake_embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(pg_database, tmp_path / "a", fake_embeddings)
    try:
        store.put(NS, "k", {"text": "first"})
        store.put(NS, "k", {"text": "second"})  # this process put "k": the next put looks it up
        count = _Count(monkeypatch)
        store.put(NS, "k", {"text": "third"})
        # The lookup, then the changes with the commit: the history row travels with them, after the write lock.
        # (What follows the commit is the index catching up, in this process.)
        commit = next(i for i, sql in enumerate(count.sent) if sql.endswith(_FLUSH))
        assert commit == 1, count.sent[: commit + 1]
        script = count.sent[1]
        # The version's INSERT runs in a procedure whose plan the server keeps: no text planned per put, nothing
        # prepared on the session (a transaction-mode pooler may hand each transaction another one).
        assert "CALL lgm_keep_version(" in script and "INSERT INTO item_history" not in script
        assert script.index("pg_advisory_xact_lock") < script.index("CALL lgm_keep_version(")
        assert [v.value["text"] for v in store.history(NS, "k")] == ["third", "second", "first"]
    finally:
        store.close()


@pytest.mark.timeout(180)
def test_a_version_another_machine_wrote_between_a_puts_read_and_its_write_lock_is_kept(
    tmp_path: Path, pg_database: str, fake_embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A put reads the item it replaces before it takes the write lock. Another machine's put landing in between
    # changes neither the item's id nor its vector count, so the put goes on: the version it ends is the other
    # machine's, and that is the one its history row must hold.
    a = _store(pg_database, tmp_path / "a", fake_embeddings)
    b = _store(pg_database, tmp_path / "b", fake_embeddings)
    try:
        a.put(NS, "k", {"text": "one"})
        a.put(NS, "warm", {"text": "a's second put"})
        b.put(NS, "warm-b", {"text": "b's first put"})
        send = PgConnection._send_script
        pending = [True]

        def commit(conn: PgConnection, sql: str) -> None:
            if pending and "three" in sql:
                pending.clear()  # a's commit, its read done: b's put lands first
                b.put(NS, "k", {"text": "two, by the other machine"})
            send(conn, sql)

        monkeypatch.setattr(PgConnection, "_send_script", commit)
        a.put(NS, "k", {"text": "three"})
        assert not pending, "the other machine's put never ran"
        got = [(v.value["text"], v.change) for v in a.history(NS, "k")]
        assert got == [("three", None), ("two, by the other machine", "put"), ("one", "put")]
    finally:
        a.close()
        b.close()


def test_a_key_put_twice_in_one_batch_keeps_its_earlier_version_with_every_vector_once(
    data_dir: Path, fake_embeddings: Any
) -> None:
    from langgraph.store.base import PutOp

    from langgraph_memory.catalog import history
    from langgraph_memory.catalog.items import item_uid

    store = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings}, collections=None)
    try:
        store.put(
            ("n",), "multi", {"a": "momentum fades", "b": "carry unwinds", "c": "value waits"}, index=["a", "b", "c"]
        )
        store.batch(
            [
                PutOp(("n",), "multi", {"a": "breakouts fail", "b": "ranges hold"}, index=["a", "b"]),
                PutOp(("n",), "multi", {"a": "trends persist", "b": "stops widen"}, index=["a", "b"]),
            ]
        )
        past = store.history(("n",), "multi")[1:]
        assert [v.value["a"] for v in past] == ["momentum fades"]  # the middle one was never visible
        with store.catalog.read() as conn:
            (rec,) = history.records(conn, item_uid(("n",), "multi"))
            assert len(rec["vectors"]) == 3
            assert history.count(conn) == (1, 3)
    finally:
        store.close()
