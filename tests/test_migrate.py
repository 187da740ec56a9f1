"""``langgraph-memory migrate``: a data directory into PostgreSQL and back, counts verified, safe to re-run.

Runs the real command line against a real server (a fresh database per
test): every catalog table, the keyword index (rebuilt, ranking the same),
the Chroma index (rebuilt on first open), threads from ``checkpoints.sqlite``
and the archive's files; then re-runs, a target holding another memory, and
a target that diverged.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp

from langgraph_memory.catalog.catalog import Catalog
from langgraph_memory.catalog.item_rows import VECTOR_RUN_BITS
from langgraph_memory.catalog.postgres.catalog import PgCatalog
from langgraph_memory.catalog.transfer import TABLES, copy_catalog
from langgraph_memory.checkpoint.postgres import PostgresCheckpointer
from langgraph_memory.cli import main
from langgraph_memory.errors import MigrationError
from langgraph_memory.memory import Memory
from tests.helpers.server_memory import counter_graph, isolate


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_embeddings: Any) -> None:
    isolate(monkeypatch, tmp_path, fake_embeddings)


_RUNS = 1 << VECTOR_RUN_BITS  # the first vector row id of a namespace's run
QUERIES = ("coffee", "momentum earnings", "lookback whipsaws", "note 7", "ingested report on volatility")


def _seed(data_dir: Path, fake_embeddings: Any, tmp_path: Path) -> dict[str, Any]:
    """A data directory using every table: typed records, lineage, versions, a retired item, filters,
    an ingested file, a session with turns, threads, and an archive file."""
    doc = tmp_path / "report.md"
    doc.write_text("# Volatility\n\nAn ingested report on volatility clustering after calm weeks.\n", encoding="utf-8")
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        f = mem.store_research_finding("Momentum decays after earnings", source="technical", confidence=0.8)
        s1 = mem.store_strategy("mom", "Buy 20-day winners", parent_id=f.id)
        s2 = mem.store_strategy("mom", "Buy 60-day winners")
        lesson = mem.store_lesson("A 20-day lookback whipsaws", strategy_id=s1.id)
        gone = mem.store_lesson("Coffee breaks hurt fills", severity="minor")
        mem.lifecycle.retire(gone.id, reason="anecdote")
        for i in range(25):
            mem.store.put(("memories", "u1"), f"m{i}", {"content": f"note {i} about coffee", "n": i})
        mem.ingest(doc)
        mem.sessions.add_turn("what about coffee?", "it helps the morning review", thread_id="t-chat")
        mem.sessions.add_turn("and momentum?", "it decays after earnings", thread_id="t-chat")
        graph = mem.compile(counter_graph())
        for t in ("t1", "t2"):
            graph.invoke({"n": 0}, {"configurable": {"thread_id": t}})
        report = mem.archiver.run()  # the retired lesson goes to an archive file at once
        assert report.ok
        ranked = {q: [r.key for r in mem.store.search((), query=q, limit=8)] for q in QUERIES}
        ancestors = mem.lineage(lesson.id).ancestor_ids
    assert set(ancestors) >= {s1.id, f.id}
    return {"lesson": lesson.id, "s2": s2.id, "gone": gone.id, "ranked": ranked, "ancestors": ancestors}


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def _rows(catalog: Any, table: str, columns: str) -> list[tuple[Any, ...]]:
    with catalog.read() as conn:
        return sorted(tuple(r) for r in conn.execute(f"SELECT {columns} FROM {table}").fetchall())


def test_migrate_into_postgres_and_back(
    pg_database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_embeddings: Any
) -> None:
    src = tmp_path / "memory"
    seeded = _seed(src, fake_embeddings, tmp_path)
    local = tmp_path / "server-local"

    code, report = _cli(capsys, "migrate", str(src), pg_database, "--local-dir", str(local))
    assert code == 0 and report["verified"] is True
    assert report["rows"]["items"] > 25 and report["copied"] == report["rows"]
    assert all(report["rows"][t] > 0 for t in ("vectors", "fields", "lineage_edges", "versions", "item_status"))
    assert all(report["rows"][t] > 0 for t in ("ingested_files", "ingested_paths", "sessions", "session_turns"))
    assert report["keywords"] > 0
    assert report["threads"]["threads"] == 2 and report["threads"]["verified"] is True
    assert report["files"] >= 2  # the archive file and its manifest, the ingested original
    with sqlite3.connect(src / "catalog.sqlite") as raw:
        source_items = sorted(raw.execute("SELECT id, uid, value, created_at FROM items").fetchall())

    # The memory on the server is the same memory: every item, ranked the same, versions, lineage, statuses.
    with Memory.open(pg_database, local_dir=tmp_path / "machine-b", embeddings=fake_embeddings) as mem:
        assert _rows(mem.store.catalog, "items", "id, uid, value, created_at") == source_items
        assert {q: [r.key for r in mem.store.search((), query=q, limit=8)] for q in QUERIES} == seeded["ranked"]
        assert {r.key for r in mem.store.search(("memories", "u1"), filter={"n": {"$gte": 23}})} == {"m23", "m24"}
        assert [v.version for v in mem.lineage_store.versions("mom")] == [1, 2]
        assert mem.lineage(seeded["lesson"]).ancestor_ids == seeded["ancestors"]
        assert mem.store.get(("memories", "u1"), "m3") is not None
        assert sorted(t.thread_id for t in mem.checkpointer.list_threads()) == ["t1", "t2"]
        assert mem.checkpointer.get_tuple({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}) is not None
        assert len(_rows(mem.store.catalog, "session_turns", "user_text")) == 2
        # A new put gets a new id (the server's id sequences moved past the copied ones), its vector one below
        # the runs of row ids the copied vectors keep (see catalog.items.vector_run).
        mem.store.put(("memories", "u1"), "after", {"content": "written on the server after the move"})
        with mem.store.catalog.read() as conn:
            new = [
                int(i)
                for (i,) in conn.execute(
                    "SELECT v.id FROM vectors v JOIN items i ON i.id = v.item_id WHERE i.key = 'after'"
                )
            ]
            (below,) = conn.execute(f"SELECT count(*) FROM vectors WHERE id < {_RUNS}").fetchone()
        assert new and max(new) < _RUNS and below == len(new)
    # The archive came along: listed and restorable from the server's local folder.
    code, archives = _cli(capsys, "archive", "list", "--url", pg_database, "--local-dir", str(local))
    assert code == 0 and [a["items"] for a in archives] == [1]

    # Running it again is harmless: the target was written to since, so nothing is copied (a row deleted
    # there would come back).
    with PgCatalog(pg_database) as cat:
        before = _rows(cat, "items", "id, value")
    code = main(["migrate", str(src), pg_database, "--local-dir", str(local)])
    assert code == 3 and "written to since" in capsys.readouterr().err.replace("\n", " ")
    with PgCatalog(pg_database) as cat:
        assert _rows(cat, "items", "id, value") == before

    # The reverse direction exports the server's memory into a data directory.
    back = tmp_path / "exported"
    code, out = _cli(capsys, "migrate", pg_database, str(back), "--local-dir", str(local))
    assert code == 0 and out["verified"] is True and out["threads"]["threads"] == 2
    assert out["rows"]["items"] == len(source_items) + 1
    with Memory.open(back, embeddings=fake_embeddings) as mem:
        assert mem.store.get(("memories", "u1"), "after") is not None
        # The threads came back into checkpoints.sqlite, and resume there.
        assert sorted(t.thread_id for t in mem.checkpointer.list_threads()) == ["t1", "t2"]
        graph = mem.compile(counter_graph())
        assert graph.get_state({"configurable": {"thread_id": "t1"}}).values == {"n": 1}
        history = len(list(graph.get_state_history({"configurable": {"thread_id": "t1"}})))
        assert graph.invoke({"n": 5}, {"configurable": {"thread_id": "t1"}}) == {"n": 6}
        assert len(list(graph.get_state_history({"configurable": {"thread_id": "t1"}}))) > history
        assert [r.key for r in mem.store.search(("memories", "u1"), query="note 7 about coffee", limit=1)] == ["m7"]
        # The vector written on the server sits outside its namespace's run: the search finds it all the same.
        found = {r.key for r in mem.store.search(("memories", "u1"), query="written on the server", limit=50)}
        assert found == {f"m{i}" for i in range(25)} | {"after"}


def test_rerun_copies_nothing_and_verifies(
    pg_database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_embeddings: Any
) -> None:
    src = tmp_path / "memory"
    with Memory.open(src, embeddings=fake_embeddings) as mem:
        for i in range(7):
            mem.store.put(("memories",), f"k{i}", {"content": f"fact {i}"})
    args = ("migrate", str(src), pg_database, "--local-dir", str(tmp_path / "local"), "--batch", "3")
    code, first = _cli(capsys, *args)
    assert code == 0 and first["copied"]["items"] == 7
    code, second = _cli(capsys, *args)
    assert code == 0 and second["verified"] and sum(second["copied"].values()) == 0 and second["keywords"] == 0
    # The source grew (the old folder was still in use): the next run copies what is new.
    with Memory.open(src, embeddings=fake_embeddings) as mem:
        mem.store.put(("memories",), "late", {"content": "written to the folder after the copy"})
    code, third = _cli(capsys, *args)
    assert code == 0 and third["copied"]["items"] == 1 and third["copied"]["vectors"] == 1


def test_an_interrupted_copy_is_finished_by_the_next_run(
    pg_database: str, tmp_path: Path, fake_embeddings: Any
) -> None:
    src = tmp_path / "memory"
    with Memory.open(src, embeddings=fake_embeddings) as mem:
        for i in range(9):
            mem.store.put(("memories",), f"k{i}", {"content": f"fact {i}"})
    calls = 0

    def stop_midway(table: str, done: int, total: int | None) -> None:
        nonlocal calls
        calls += 1
        if table == "vectors" and done >= 4:
            raise KeyboardInterrupt  # the user pressed Ctrl-C while vectors were copied

    with Catalog(src / "catalog.sqlite") as source, PgCatalog(pg_database) as target:
        with pytest.raises(KeyboardInterrupt):
            copy_catalog(source, target, progress=stop_midway, batch=4)
        assert 0 < len(_rows(target, "vectors", "id")) < 9
        report = copy_catalog(source, target, batch=4)
    assert report.verified and report.copied["items"] == 0 and report.copied["vectors"] == 9 - 4


def test_a_target_holding_another_memory_is_refused(
    pg_database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_embeddings: Any
) -> None:
    with Memory.open(pg_database, local_dir=tmp_path / "other", embeddings=fake_embeddings) as mem:
        mem.store.put(("memories",), "theirs", {"content": "someone else's memory"})
    src = tmp_path / "memory"
    with Memory.open(src, embeddings=fake_embeddings) as mem:
        mem.store.put(("memories",), "ours", {"content": "our memory"})
    code = main(["migrate", str(src), pg_database, "--local-dir", str(tmp_path / "l")])
    err = capsys.readouterr().err
    assert code == 3 and "different memory" in err.replace("\n", " ")
    with PgCatalog(pg_database) as cat:
        assert _rows(cat, "items", "key") == [("theirs",)]
    with pytest.raises(MigrationError, match="different memory"):
        with Catalog(src / "catalog.sqlite") as source, PgCatalog(pg_database) as target:
            copy_catalog(source, target)


def test_bad_sides_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", str(tmp_path / "a"), str(tmp_path / "b")]) == 2  # no server on either side
    assert main(["migrate", str(tmp_path / "missing"), "postgresql://u@127.0.0.1:1/x"]) == 2  # no memory there
    err = capsys.readouterr().err
    assert "postgresql://" in err and "no memory at" in err


def test_progress_reports_every_table_to_its_total(pg_database: str, tmp_path: Path, fake_embeddings: Any) -> None:
    src = tmp_path / "memory"
    with Memory.open(src, embeddings=fake_embeddings) as mem:
        for i in range(5):
            mem.store.put(("memories",), f"k{i}", {"content": f"fact {i}"})
    seen: dict[str, tuple[int, int | None]] = {}
    with Catalog(src / "catalog.sqlite") as source, PgCatalog(pg_database) as target:
        report = copy_catalog(source, target, progress=lambda t, d, n: seen.__setitem__(t, (d, n)), batch=2)
    assert report.verified
    assert set(seen) == {t.name for t in TABLES} | {"keywords"}
    assert all(done == total for done, total in seen.values())
    assert seen["items"] == (5, 5)


def test_threads_copied_into_postgres_resume(
    pg_database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_embeddings: Any
) -> None:
    src = tmp_path / "memory"
    with Memory.open(src, embeddings=fake_embeddings) as mem:
        mem.compile(counter_graph()).invoke({"n": 40}, {"configurable": {"thread_id": "resume-me"}})
    code, _ = _cli(capsys, "migrate", str(src), pg_database, "--local-dir", str(tmp_path / "l"))
    assert code == 0
    with PostgresCheckpointer(pg_database) as saver:
        graph = counter_graph().compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "resume-me"}}
        assert graph.get_state(config).values == {"n": 41}
    code, threads = _cli(capsys, "threads", "list", "--url", pg_database, "--local-dir", str(tmp_path / "l"))
    assert code == 0 and [t["thread_id"] for t in threads] == ["resume-me"]


@pytest.fixture
def chroma_url(tmp_path: Path) -> Any:
    """A `chroma run` server started by the project's script (it waits until the server answers)."""
    import subprocess

    script = Path(__file__).resolve().parents[1] / "scripts" / "chroma_server.sh"
    folder = tmp_path / "chroma-server"
    folder.mkdir()
    import os
    import sys

    env = {**os.environ, "CHROMA_BIN": os.environ.get("CHROMA_BIN") or str(Path(sys.executable).parent / "chroma")}
    started = subprocess.run(
        ["bash", str(script), "start", str(folder)], capture_output=True, text=True, timeout=180, check=False, env=env
    )
    if started.returncode != 0:
        pytest.fail(f"chroma_server.sh start failed: {started.stderr[-2000:]}")
    try:
        yield started.stdout.strip()
    finally:
        subprocess.run(
            ["bash", str(script), "stop", str(folder)], capture_output=True, timeout=60, check=False, env=env
        )


def test_migrated_memory_on_two_machines_with_a_chroma_server(
    pg_database: str,
    chroma_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fake_embeddings: Any,
) -> None:
    from urllib.parse import urlsplit

    import chromadb

    src = tmp_path / "memory"
    with Memory.open(src, embeddings=fake_embeddings) as mem:
        for i in range(40):
            mem.store.put(("memories", "desk"), f"m{i}", {"content": f"observation {i} on the tape"})
    code, _ = _cli(capsys, "migrate", str(src), pg_database, "--local-dir", str(tmp_path / "a"))
    assert code == 0
    parts = urlsplit(chroma_url)

    def machine(name: str) -> Memory:
        client = chromadb.HttpClient(host=parts.hostname, port=parts.port)
        return Memory.open(pg_database, local_dir=tmp_path / name, chroma_client=client, embeddings=fake_embeddings)

    with machine("a") as a, machine("b") as b:
        # The first to open built the server's index from the catalog; both find what was migrated.
        for mem in (a, b):
            assert [r.key for r in mem.store.search(("memories",), query="observation 7 on the tape", limit=1)] == [
                "m7"
            ]
        a.store.put(("memories", "desk"), "fresh", {"content": "written on machine a"})
        assert [r.key for r in b.store.search(("memories",), query="written on machine a", limit=1)] == ["fresh"]
    # The command line reaches the same index through $LANGGRAPH_MEMORY_CHROMA_URL.
    monkeypatch.setenv("LANGGRAPH_MEMORY_CHROMA_URL", chroma_url)
    code, check = _cli(capsys, "index", "check", "--url", pg_database, "--local-dir", str(tmp_path / "c"))
    assert code == 0, check
    assert not (tmp_path / "c" / "chroma" / "index-1").exists()  # nothing embedded on this machine


def test_counts_that_differ_after_copying_are_a_typed_error(
    pg_database: str, tmp_path: Path, fake_embeddings: Any
) -> None:
    from langgraph_memory.catalog.transfer import MIGRATED_KEY

    src = tmp_path / "memory"
    with Memory.open(src, embeddings=fake_embeddings) as mem:
        mem.store.put(("memories",), "a", {"content": "one"})
    with Catalog(src / "catalog.sqlite") as source, PgCatalog(pg_database) as target:
        assert copy_catalog(source, target).verified
        # The target gains a lineage node the source never had, and forgets when it was copied.
        with target.write() as conn:
            conn.execute(
                "INSERT INTO lineage_nodes(id, collection, namespace, name, version, created_at)"
                " VALUES ('extra', 'general', 'x', NULL, NULL, 0)"
            )
            target.set_meta(conn, MIGRATED_KEY, None)
        with pytest.raises(MigrationError, match=r"lineage_nodes: 0 in the source, 1 in the target"):
            copy_catalog(source, target)


def test_a_copy_into_postgresql_leaves_it_counting_the_tables(
    pg_database: str, tmp_path: Path, fake_embeddings: Any
) -> None:
    src = tmp_path / "memory"
    with Memory.open(src, embeddings=fake_embeddings) as mem:
        mem.store.batch([PutOp(("memories",), f"k{i}", {"content": f"fact {i}"}) for i in range(70)])
    tables = ("items", "vectors", "fields")
    with Catalog(src / "catalog.sqlite") as source, PgCatalog(pg_database) as target:
        # Autovacuum would analyze the tables too, a minute or more later: off here, so only the copy's ANALYZE counts.
        with psycopg.connect(pg_database, autocommit=True) as admin:
            for table in tables:
                admin.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
            assert copy_catalog(source, target).verified
            counted = {
                name: (tuples, analyzed)
                for name, tuples, analyzed in admin.execute(
                    "SELECT c.relname, c.reltuples, s.last_analyze FROM pg_class c"
                    " JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.relname = ANY(%s)",
                    (list(tables),),
                )
            }
    # Analyzed once the rows were in: the planner knows the tables' sizes (a table never analyzed says -1).
    tuples = {name: n for name, (n, _analyzed) in counted.items()}
    assert tuples["items"] == 70 and tuples["vectors"] == 70 and tuples["fields"] >= 70
    assert all(analyzed is not None for _n, analyzed in counted.values())
