"""One address everywhere: a ``postgresql://`` address opens the memory through every entry point.

``ChromaStore.from_conn_string``, ``ChromaStore(data_dir=...)``, ``Memory.open``,
``LANGGRAPH_MEMORY_URL``, the config file's ``url``, the CLI's ``--url`` (with
``--local-dir``), its ``threads`` commands, the archive job's thread archiving,
the MCP server and the ``langgraph.json`` factories, each against a real
PostgreSQL server (a fresh database per test).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from langgraph_memory.checkpoint import SqliteCheckpointer
from langgraph_memory.checkpoint.postgres import PostgresCheckpointer
from langgraph_memory.cli import main
from langgraph_memory.errors import ConfigError
from langgraph_memory.memory import Memory
from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS
from tests.helpers.server_memory import counter_graph, isolate

MCP_HELPER = Path(__file__).resolve().parent / "helpers" / "mcp_fake_server.py"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_embeddings: Any) -> None:
    isolate(monkeypatch, tmp_path, fake_embeddings)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _index(fake_embeddings: Any) -> dict[str, Any]:
    return {"dims": FAKE_DIMS, "embed": fake_embeddings}


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


# ------------------------------------------------------------- the store alone


def test_store_from_conn_string_opens_the_memory_on_the_server(
    pg_database: str, tmp_path: Path, fake_embeddings: Any
) -> None:
    with ChromaStore.from_conn_string(pg_database, local_dir=tmp_path / "a", index=_index(fake_embeddings)) as a:
        assert a.settings.catalog_url == pg_database and a.catalog.dialect == "postgresql"
        assert a.settings.data_dir == (tmp_path / "a").resolve()
        a.put(("notes",), "k1", {"text": "written through from_conn_string"})
    # The same address from the constructor, another local folder: the same memory.
    with ChromaStore(data_dir=pg_database, local_dir=tmp_path / "b", index=_index(fake_embeddings)) as b:
        item = b.get(("notes",), "k1")
        assert item is not None and item.value["text"] == "written through from_conn_string"
        assert [r.key for r in b.search(("notes",), query="from_conn_string", limit=1)] == ["k1"]
    assert not Path("postgresql:").exists()


def test_an_address_is_never_taken_for_a_checkpoint_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="PostgresCheckpointer"):
        SqliteCheckpointer.from_conn_string("postgresql://u:pw@127.0.0.1:1/db")
    assert not (tmp_path / "postgresql:").exists()


def test_settings_local_dir_and_data_dir_clash(pg_database: str, tmp_path: Path) -> None:
    from langgraph_memory.config import Settings

    with pytest.raises(ConfigError, match="not both"):
        ChromaStore(settings=Settings.resolve(tmp_path / "m"), local_dir=tmp_path / "x")


# ------------------------------------------------------ environment and config


def test_environment_and_config_file_name_the_server(
    pg_database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_embeddings: Any
) -> None:
    monkeypatch.setenv("LANGGRAPH_MEMORY_URL", pg_database)
    monkeypatch.setenv("LANGGRAPH_MEMORY_LOCAL_DIR", str(tmp_path / "env-local"))
    with Memory.open(embeddings=fake_embeddings) as mem:
        assert mem.settings.catalog_url == pg_database
        assert isinstance(mem.checkpointer, PostgresCheckpointer)
        mem.store.put(("notes",), "env", {"text": "from the environment"})
    monkeypatch.delenv("LANGGRAPH_MEMORY_URL")
    monkeypatch.delenv("LANGGRAPH_MEMORY_LOCAL_DIR")
    config = _write(tmp_path / "lgm.toml", f'url = "{pg_database}"\nlocal_dir = "{tmp_path / "cfg-local"}"\n')
    monkeypatch.setenv("LANGGRAPH_MEMORY_CONFIG", str(config))
    with Memory.open(embeddings=fake_embeddings) as mem:
        assert mem.settings.data_dir == (tmp_path / "cfg-local").resolve()
        assert mem.store.get(("notes",), "env") is not None


# ------------------------------------------------------------------------- CLI


def test_cli_url_lists_searches_and_reports_the_server(
    pg_database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_embeddings: Any
) -> None:
    with Memory.open(pg_database, local_dir=tmp_path / "w", embeddings=fake_embeddings) as mem:
        mem.store.put(("memories", "u1"), "m1", {"content": "coffee in the morning"}, index=["content"])
        mem.store_lesson("Stops inside noise get hit", severity="major")
    local = str(tmp_path / "cli-local")
    code, listed = _cli(capsys, "--url", pg_database, "--local-dir", local, "list")
    assert code == 0 and ["memories", "u1"] in [r["namespace"] for r in listed["namespaces"]]
    code, hits = _cli(capsys, "--url", pg_database, "--local-dir", local, "search", "coffee")
    assert code == 0 and hits and hits[0]["key"] == "m1"
    code, stats = _cli(capsys, "stats", "--url", pg_database, "--local-dir", local)
    assert code == 0 and stats["items"] == 2
    assert Path(local).is_dir()
    # --url and --data-dir together is a usage error, as is an address that is not PostgreSQL's.
    assert main(["--url", pg_database, "--data-dir", str(tmp_path / "d"), "list"]) == 2
    assert main(["--url", "http://127.0.0.1:8000", "list"]) == 2
    capsys.readouterr()


def test_cli_takes_the_address_from_the_environment(
    pg_database: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fake_embeddings: Any,
) -> None:
    with Memory.open(pg_database, local_dir=tmp_path / "w", embeddings=fake_embeddings) as mem:
        mem.store.put(("memories", "env"), "e1", {"content": "from another machine"})
    monkeypatch.setenv("LANGGRAPH_MEMORY_URL", pg_database)
    monkeypatch.setenv("LANGGRAPH_MEMORY_LOCAL_DIR", str(tmp_path / "env-local"))
    code, listed = _cli(capsys, "list")
    assert code == 0 and [r["namespace"] for r in listed["namespaces"]] == [["memories", "env"]]


def test_cli_threads_on_the_postgres_checkpointer(
    pg_database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_embeddings: Any
) -> None:
    with Memory.open(pg_database, local_dir=tmp_path / "w", embeddings=fake_embeddings) as mem:
        graph = mem.compile(counter_graph())
        for t in ("t1", "t2"):
            graph.invoke({"n": 0}, {"configurable": {"thread_id": t}})
    opts = ("--url", pg_database, "--local-dir", str(tmp_path / "cli"))
    code, threads = _cli(capsys, "threads", "list", *opts)
    assert code == 0 and sorted(t["thread_id"] for t in threads) == ["t1", "t2"]
    assert all(t["checkpoints"] >= 1 for t in threads)
    code, dry = _cli(capsys, "threads", "prune", "--older-than", "0", *opts)
    assert code == 0 and dry["dry_run"] and sorted(dry["threads"]) == ["t1", "t2"]
    code, done = _cli(capsys, "threads", "prune", "--older-than", "0", "--strategy", "delete", "--yes", *opts)
    assert code == 0 and sorted(done["threads"]) == ["t1", "t2"]
    code, left = _cli(capsys, "threads", "list", *opts)
    assert code == 1 and left == []


# --------------------------------------------------------------------- archive


def test_archive_job_archives_threads_of_the_postgres_checkpointer(
    pg_database: str, tmp_path: Path, fake_embeddings: Any
) -> None:
    from langgraph_memory.archive import Archiver
    from langgraph_memory.archive.schedule import run_archive_job, schedule_archival

    with Memory.open(pg_database, local_dir=tmp_path / "w", embeddings=fake_embeddings) as mem:
        graph = mem.compile(counter_graph())
        graph.invoke({"n": 41}, {"configurable": {"thread_id": "idle"}})
        archiver = Archiver(mem.store, checkpointer=mem.checkpointer, thread_after_days=0, thread_strategy="archive")
        try:
            job = schedule_archival(archiver, interval=3600, start=False)
            assert job is not None
            report = run_archive_job(archiver)
            assert report.ok and report.threads == ["idle"]
            assert mem.checkpointer.list_threads() == []
            files = archiver.manifest.files(kind="threads")
            assert [f.state for f in files] == ["complete"] and files[0].items
            assert (tmp_path / "w" / "archive" / files[0].name).is_file()  # archive files stay local
        finally:
            archiver.close()


def test_cli_archive_run_on_the_server(pg_database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _cli(capsys, "archive", "run", "--dry-run", "--url", pg_database, "--local-dir", str(tmp_path))
    assert code == 0 and report["dry_run"] is True


# ------------------------------------------------------------------------- MCP


def test_mcp_server_serves_the_memory_on_the_server(pg_database: str, tmp_path: Path, fake_embeddings: Any) -> None:
    import asyncio

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "LANGGRAPH_MEMORY_URL": pg_database,
        "LANGGRAPH_MEMORY_LOCAL_DIR": str(tmp_path / "mcp-local"),
    }
    proc = subprocess.Popen(
        [sys.executable, str(MCP_HELPER), "mcp", "--transport", "http", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines: list[str] = []
    try:
        url = None
        while url is None:
            line = proc.stderr.readline() if proc.stderr else ""
            if not line:
                raise RuntimeError("the MCP server did not start:\n" + "".join(lines))
            lines.append(line)
            m = re.search(r"listening on (http://\S+)", line)
            url = m.group(1) if m else None
        threading.Thread(target=lambda: lines.extend(proc.stderr or ()), daemon=True).start()

        async def talk() -> Any:
            async with httpx2.AsyncClient(timeout=httpx2.Timeout(60.0)) as http:
                async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client:
                    stored = await client.call_tool("store_memory", {"content": "served from PostgreSQL"})
                    assert not stored.is_error, stored.content
                    return stored.structured_content

        stored = asyncio.run(talk())
        assert stored
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert any("postgresql://" in line for line in lines)  # it says which memory it serves
    with Memory.open(pg_database, local_dir=tmp_path / "check", embeddings=fake_embeddings) as mem:
        with mem.store.catalog.read() as conn:
            values = [json.loads(v) for (v,) in conn.execute("SELECT value FROM items").fetchall()]
    assert any("served from PostgreSQL" in json.dumps(v) for v in values)


# ------------------------------------------------------------- the factories


def test_platform_factories_open_the_server(
    pg_database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_embeddings: Any
) -> None:
    from langgraph_memory.platform import open_checkpointer, open_store

    monkeypatch.setenv("LANGGRAPH_MEMORY_URL", pg_database)
    monkeypatch.setenv("LANGGRAPH_MEMORY_LOCAL_DIR", str(tmp_path / "platform"))
    store = open_store({"index": {"dims": FAKE_DIMS, "embed": fake_embeddings}})
    try:
        assert store.catalog.dialect == "postgresql"
        store.put(("notes",), "p", {"text": "platform"})
    finally:
        store.close()
    with open_checkpointer() as saver:
        assert isinstance(saver, PostgresCheckpointer)
        counter_graph().compile(checkpointer=saver).invoke({"n": 1}, {"configurable": {"thread_id": "p1"}})
        assert [t.thread_id for t in saver.list_threads()] == ["p1"]
    # A Chroma address where the memory goes is still refused.
    monkeypatch.delenv("LANGGRAPH_MEMORY_URL")
    monkeypatch.setenv("LANGGRAPH_MEMORY_DIR", "http://127.0.0.1:8000")
    with pytest.raises(ConfigError, match="Chroma address"):
        open_checkpointer()


# ---------------------------------------------------- dialect gaps met on the way


def test_sessions_and_id_list_searches_on_the_server(pg_database: str, tmp_path: Path, fake_embeddings: Any) -> None:
    with Memory.open(pg_database, local_dir=tmp_path / "w", embeddings=fake_embeddings) as mem:
        for i in range(60):  # enough for the planner to go through the index and an id list
            mem.store.put(("memories", "u1"), f"m{i}", {"content": f"note {i} about coffee"})
        assert [r.key for r in mem.store.search(("memories",), query="note 7 about coffee", limit=1)] == ["m7"]
        mem.sessions.add_turn("what about coffee?", "it helps", thread_id="chat")
        assert [s.n_turns for s in mem.sessions.list_sessions()] == [1]
        mem.sessions.cleanup()
