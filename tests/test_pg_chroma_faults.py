"""A Chroma server that dies (SIGKILL) or comes back empty, under a memory whose catalog is on PostgreSQL.

The catalog holds every vector, so the server is only an index: writes are
acknowledged while it is down, searches are scored exactly meanwhile, and
once it answers again the index catches up (or is refilled, when it came back
on an empty directory) by itself, so every acknowledged item finds itself by
its own vector. Nothing here sees a raw HTTP error.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from bench.common.pg_index_check import DIMS, checker, index_integrity, item_ids
from langgraph_memory import Memory
from langgraph_memory.catalog import item_rows as catalog_items
from langgraph_memory.index.chroma import IndexServerUnavailable, IndexUnavailable
from langgraph_memory.store import ChromaStore
from tests.helpers.chroma_server import ChromaServer, chroma_server  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow  # a real Chroma server, killed and restarted


def _whole(report: dict, store: ChromaStore | None = None) -> dict:
    """The problems of an integrity report (empty when every record is there once and finds itself).

    With ``store``, a record the server's HNSW graph does not reach with its own vector counts only if the
    memory's search does not find it either: Chroma 1.5.9 can leave a record its graph never reaches
    (chroma-core/chroma#7758), and the planner's check of each HNSW answer scores such a scope exactly.
    """
    out = {}
    for name, r in report.items():
        unfound = r["not_first"] if store is None else _not_found_by(store, r["not_first"])
        if r["missing"] or r["extra"] or unfound:
            out[name] = {"missing": r["missing"], "extra": r["extra"], "not_first": r["not_first"], "unfound": unfound}
    return out


def _not_found_by(store: ChromaStore, records: list[str]) -> list[str]:
    with store.catalog.read() as conn:
        items = catalog_items.get_by_ids(conn, sorted(item_ids(records)))
    return [
        f"{item.key}"
        for item in items.values()
        if store.search(item.namespace, query=item.value.get("text", ""), limit=1)[0].key != item.key
    ]


def _put(store, i: int, ns: tuple[str, ...] = ("notes", "desk")) -> None:
    store.put(ns, f"k{i}", {"text": f"acknowledged note {i}"}, index=["text"])


def test_writes_and_searches_go_on_while_the_chroma_server_is_killed_and_it_catches_up(
    pg_database: str,
    chroma_server: ChromaServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LANGGRAPH_MEMORY_LOCAL_DIR", str(tmp_path / "machine-a"))
    mem = Memory.open(
        pg_database, embeddings=DeterministicFakeEmbedding(size=DIMS), chroma_client=chroma_server.client()
    )
    other = checker(pg_database, chroma_server, tmp_path / "machine-b")
    try:
        store = mem.store
        for i in range(30):
            _put(store, i)
        lesson = mem.store_lesson("Tight stops get hit in high volatility regimes")
        assert other.search(("notes",), query="acknowledged note 3", limit=1)[0].key == "k3"

        chroma_server.kill()
        # Writes: acknowledged (committed in PostgreSQL) although the index cannot take them.
        for i in range(30, 60):
            _put(store, i)
        during = mem.store_lesson("Carry unwinds when funding costs jump")
        _put(other, 60)
        # The index catches up after each commit, in a thread of its own: it meets the dead server, and
        # waiting for it says that the index does not hold the writes.
        assert store.wait_for_index(1) is False and other.wait_for_index(1) is False
        # Small scopes: scored exactly, from either machine.
        assert store.search(("notes", "desk"), query="acknowledged note 45", limit=1)[0].key == "k45"
        hit = other.search(("notes", "desk"), query="acknowledged note 60", limit=1)[0]
        assert hit.key == "k60" and hit.score == pytest.approx(1.0, abs=1e-5)
        got = mem.get_relevant_lessons("Carry unwinds when funding costs jump", k=1, min_relevance=None)
        assert [h.id for h in got] == [during.id]
        # Large scopes (plans that would use the index): they still work, scored exactly.
        for s in (store, other):
            s.planner.exact_max = 4
            assert s.explain(("notes",), query="x").strategy == "exact"
            assert s.search(("notes",), query="acknowledged note 51", limit=1)[0].key == "k51"
        # The index itself says what is wrong, with a typed error.
        with pytest.raises(IndexServerUnavailable, match="unavailable"):
            store.vector_index.query("memories", store._embed_query("x"), 1)
        assert issubclass(IndexServerUnavailable, IndexUnavailable)

        chroma_server.start()  # same directory, same port
        # Back: searches go on, and the index catches up by itself within the index's retry interval
        # (MAX_BACKOFF after the server's return), which wait_for_index waits out.
        assert store.search(("notes",), query="acknowledged note 55", limit=1)[0].key == "k55"
        assert store.wait_for_index(30) and store.vector_index.serving()
        assert other.search(("notes",), query="acknowledged note 33", limit=1)[0].key == "k33"
        report = index_integrity(other)
        assert report["memories"]["catalog"] == 61 and not _whole(report, other), _whole(report, other)
        assert store.explain(("notes",), query="x").strategy == "hnsw"

        chroma_server.kill()
        chroma_server.start(empty=True)  # the server lost everything
        _put(store, 61)
        assert store.search(("notes",), query="acknowledged note 61", limit=1)[0].key == "k61"
        assert other.search(("notes",), query="acknowledged note 7", limit=1)[0].key == "k7"
        got = other.search(("lessons",), query="Tight stops get hit in high volatility regimes", limit=1)
        assert got[0].key == lesson.id
        report = index_integrity(other)
        assert report["memories"]["catalog"] == 62 and not _whole(report, other), _whole(report, other)
        assert report["lessons_learned"]["catalog"] == report["lessons_learned"]["server"] == 2
        # Each outage was caught up from the catalog by a machine (which one sees it first depends on timing).
        assert store.vector_index.health.recoveries + other.vector_index.health.recoveries >= 2
    finally:
        other.close()
        mem.close()


def test_a_store_opened_while_the_chroma_server_is_down_works_and_catches_up_later(
    pg_database: str,
    chroma_server: ChromaServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    first = checker(pg_database, chroma_server, tmp_path / "a")
    for i in range(10):
        _put(first, i)
    first.close()
    client = chroma_server.client()  # built while the server answers, as an application's would be
    chroma_server.kill()
    from langchain_core.embeddings import DeterministicFakeEmbedding as Fake

    from langgraph_memory.config import Settings

    store = ChromaStore(
        client,
        settings=Settings.resolve(pg_database, local_dir=tmp_path / "b"),
        index={"dims": DIMS, "embed": Fake(size=DIMS)},
    )
    try:
        _put(store, 10)
        assert store.search(("notes",), query="acknowledged note 10", limit=1)[0].key == "k10"
        assert not store.vector_index.broken  # not damage: nothing waits for a rebuild
        chroma_server.start()
        assert store.search(("notes",), query="acknowledged note 2", limit=1)[0].key == "k2"
        report = index_integrity(store)
        assert report["memories"]["catalog"] == 11 and not _whole(report, store), _whole(report, store)
    finally:
        store.close()
