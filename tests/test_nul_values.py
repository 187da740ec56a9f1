"""Text holding a NUL character (U+0000): both catalogs store, read back and match the same values.

Runs on the SQLite catalog, and on PostgreSQL with ``LGM_TEST_CATALOG=postgres`` (whose TEXT and JSONB
cannot hold U+0000 at all); the last test moves such a memory from SQLite to a PostgreSQL server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from langgraph_memory.cli import main
from langgraph_memory.errors import InvalidArgumentError
from langgraph_memory.store import ChromaStore


def test_a_value_holding_nul_is_stored_read_back_and_matched_by_a_filter(store: ChromaStore) -> None:
    store.put(("docs",), "n", {"access": "pub\x00lic", "meta": {"a\x00b": 1}, "text": "hello\x00world"})
    store.put(("docs",), "p", {"access": "public", "text": "plain"})
    assert store.get(("docs",), "n").value == {"access": "pub\x00lic", "meta": {"a\x00b": 1}, "text": "hello\x00world"}
    assert [i.key for i in store.search(("docs",), filter={"access": "pub\x00lic"})] == ["n"]
    assert [i.key for i in store.search(("docs",), filter={"access": {"$eq": "pub\x00lic"}})] == ["n"]
    assert [i.key for i in store.search(("docs",), filter={"meta": {"a\x00b": 1}})] == ["n"]
    assert {i.key for i in store.search(("docs",), filter={"access": {"$ne": "pub\x00lic"}})} == {"p"}
    assert [i.key for i in store.search(("docs",), filter={"access": "public"})] == ["p"]


def test_a_filter_holding_nul_matches_nothing_when_nothing_holds_it(store: ChromaStore) -> None:
    """LangGraph's own store tests expect an injection-shaped filter to match nothing, not to fail."""
    store.put(("docs",), "a", {"access": "public"})
    store.put(("docs",), "b", {"access": "private"})
    assert store.search(("docs",), filter={"access": "public\x00' OR '1'='1"}) == []
    assert store.search(("docs",), query="public", filter={"access": "public\x00"}) == []


def test_a_key_holding_nul_is_refused_on_every_backend_and_never_found(store: ChromaStore) -> None:
    with pytest.raises(InvalidArgumentError, match="NUL"):
        store.put(("docs",), "k\x00y", {"text": "x"})
    assert store.get(("docs",), "k\x00y") is None


@pytest.mark.sqlite_only("copies a memory from a data directory (SQLite) to the server")
def test_a_sqlite_memory_with_nul_values_migrates_to_postgresql(
    tmp_path: Path, pg_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    emb = DeterministicFakeEmbedding(size=8)
    src = tmp_path / "memory"
    with Memory.open(src, embeddings=emb) as mem:
        mem.store.put(("docs",), "n", {"access": "pub\x00lic", "text": "hello\x00world"})
        mem.store.put(("docs",), "p", {"access": "public", "text": "plain"})
    code = main(["migrate", str(src), pg_database, "--local-dir", str(tmp_path / "local"), "--json"])
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == 0 and report["verified"] is True, report
    with Memory.open(pg_database, local_dir=tmp_path / "machine-b", embeddings=emb) as mem:
        assert mem.store.get(("docs",), "n").value["access"] == "pub\x00lic"
        assert [i.key for i in mem.store.search(("docs",), filter={"access": "pub\x00lic"})] == ["n"]
        assert [i.key for i in mem.store.search(("docs",), filter={"access": "public"})] == ["p"]


@pytest.mark.sqlite_only("copies a memory from a data directory (SQLite) to the server")
def test_a_sqlite_catalog_whose_filter_index_holds_nul_from_an_older_version_migrates(
    tmp_path: Path, pg_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    emb = DeterministicFakeEmbedding(size=8)
    src = tmp_path / "memory"
    with Memory.open(src, embeddings=emb) as mem:
        mem.store.put(("docs",), "n", {"access": "pub\x00lic", "meta": {"a\x00b": 1}, "text": "x"})
    # Versions before this one indexed such leaves on SQLite: put the rows they wrote back in the file.
    with sqlite3.connect(src / "catalog.sqlite") as raw:
        item_id = raw.execute("SELECT id FROM items WHERE key = 'n'").fetchone()[0]
        raw.executemany(
            "INSERT INTO fields(path, kind, val, item_id) VALUES (?, ?, ?, ?)",
            [("access", 1, "pub\x00lic", item_id), ("meta\x1fa\x00b", 0, 1, item_id)],
        )
    code = main(["migrate", str(src), pg_database, "--local-dir", str(tmp_path / "local"), "--json"])
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == 0 and report["verified"] is True, report
    with Memory.open(pg_database, local_dir=tmp_path / "machine-b", embeddings=emb) as mem:
        assert [i.key for i in mem.store.search(("docs",), filter={"access": "pub\x00lic"})] == ["n"]
        assert [i.key for i in mem.store.search(("docs",), filter={"meta": {"a\x00b": 1}})] == ["n"]
