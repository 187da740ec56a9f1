"""A password in the address never shows: not in logs, exceptions, ``explain()``, stats or CLI output.

The test cluster trusts loopback, so any password is accepted: the address
carries ``SECRETPW`` and every path that could print the address is run
(store, search, explain, stats, the archive, the CLI with ``-v``, migrate,
MCP's banner, and the fault paths: a wrong port, a refused SSL). libpq
parameters (``sslmode``, ``application_name``) pass through.
"""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from langgraph_memory.checkpoint.postgres import PostgresCheckpointer
from langgraph_memory.cli import main
from langgraph_memory.errors import LangGraphMemoryError, ServerUnavailableError
from langgraph_memory.memory import Memory
from tests.helpers.server_memory import counter_graph, isolate

SECRET = "SECRETPW"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_embeddings: Any) -> None:
    isolate(monkeypatch, tmp_path, fake_embeddings)


def _with(url: str, *, user: str | None = None, password: str | None = None, port: int | None = None) -> str:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    netloc = f"{user or parts.username or 'postgres'}{':' + password if password else ''}@{host}:{port or parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def secret_url(pg_database: str) -> str:
    """The test database through a role that has a password, the password in the address."""
    with psycopg.connect(pg_database, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'lgm_secret'").fetchone() is None:
            conn.execute(f"CREATE ROLE lgm_secret LOGIN SUPERUSER PASSWORD '{SECRET}'")
    return _with(pg_database, user="lgm_secret", password=SECRET)


def _text_of(exc: BaseException) -> str:
    """Everything an exception would print: its message, args, and its causes'."""
    out = []
    seen: BaseException | None = exc
    while seen is not None:
        out.append(f"{type(seen).__name__}: {seen} {seen.args!r} {getattr(seen, 'path', '')}")
        seen = seen.__cause__ or (None if seen.__suppress_context__ else seen.__context__)
    return "\n".join(out)


def test_the_password_never_shows(
    secret_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    fake_embeddings: Any,
) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    with Memory.open(secret_url, local_dir=tmp_path / "local", embeddings=fake_embeddings) as mem:
        mem.store.put(("memories", "u1"), "m1", {"content": "the password stays out of sight"})
        finding = mem.store_research_finding("Momentum decays after earnings", source="technical", confidence=0.8)
        mem.compile(counter_graph()).invoke({"n": 1}, {"configurable": {"thread_id": "t1"}})
        seen.append(repr(mem.store.search(("memories",), query="password", limit=3)))
        seen.append(repr(mem.store.explain(("memories",), query="password")))
        seen.append(json.dumps(mem.stats().as_dict(), default=str))
        seen.append(repr(mem.lineage(finding.id)))
        seen.append(repr(mem.settings) + mem.settings.where)
        seen.append(str(mem.store.catalog.path))
        seen.append(repr(mem.archiver.run(dry_run=True).as_dict()))
    local = str(tmp_path / "cli-local")
    for argv in (
        ["-v", "--url", secret_url, "--local-dir", local, "stats"],
        ["-v", "--url", secret_url, "--local-dir", local, "search", "password"],
        ["--url", secret_url, "--local-dir", local, "list", "--json"],
        ["--url", secret_url, "--local-dir", local, "threads", "list"],
        ["--url", secret_url, "--local-dir", local, "index", "check"],
        ["-v", "--url", secret_url, "--local-dir", local, "archive", "run", "--dry-run"],
    ):
        assert main(argv) == 0, argv
    # Moving the memory (both ways) prints both addresses.
    assert main(["migrate", secret_url, str(tmp_path / "exported"), "--local-dir", local]) == 0
    captured = capsys.readouterr()
    seen += [captured.out, captured.err]
    seen += [r.getMessage() for r in caplog.records] + [str(r.args) for r in caplog.records]
    everything = "\n".join(seen)
    assert "lgm_secret" in everything or "postgresql://" in everything  # the address itself is shown...
    assert SECRET not in everything  # ...never its password


def test_fault_paths_hide_the_password(
    secret_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    dead = _with(secret_url, password=SECRET, port=_free_port())  # nothing listens there
    with pytest.raises(ServerUnavailableError) as caught:
        Memory.open(dead, local_dir=tmp_path / "l", embeddings=False, lock_timeout=2)
    assert SECRET not in _text_of(caught.value)
    assert "unreachable" in str(caught.value)
    with PostgresCheckpointer(dead, timeout=2) as saver, pytest.raises(LangGraphMemoryError) as caught_cp:
        saver.list_threads()
    assert SECRET not in _text_of(caught_cp.value)
    # The command line: a typed error on stderr, exit 3, never a traceback or the password.
    code = main(["--url", dead, "--local-dir", str(tmp_path / "cli"), "list"])
    err = capsys.readouterr().err
    assert code == 3 and "unreachable" in err and "Traceback" not in err
    code = main(["migrate", str(tmp_path / "nothing"), dead])
    err += capsys.readouterr().err
    assert code == 2
    everything = err + "\n".join(r.getMessage() + str(r.args) + (r.exc_text or "") for r in caplog.records)
    assert SECRET not in everything


def test_libpq_parameters_pass_through(
    secret_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_embeddings: Any
) -> None:
    url = f"{secret_url}?sslmode=disable&application_name=lgm-desk-7"
    with Memory.open(url, local_dir=tmp_path / "l", embeddings=fake_embeddings) as mem:
        mem.store.put(("memories",), "k", {"content": "through libpq parameters"})
        with mem.store.catalog.read() as conn:
            # The address's parameters reach the server (the catalog's own default name gives way).
            assert conn.execute("SELECT current_setting('application_name')").fetchone()[0] == "lgm-desk-7"
            assert conn.execute("SELECT count(*) FROM items").fetchone()[0] == 1
        mem.compile(counter_graph()).invoke({"n": 1}, {"configurable": {"thread_id": "t"}})
        assert [t.thread_id for t in mem.checkpointer.list_threads()] == ["t"]
    # sslmode=require against a server without SSL: a typed error that says so, not a traceback.
    required = f"{secret_url}?sslmode=require"
    with pytest.raises(ServerUnavailableError) as caught:
        Memory.open(required, local_dir=tmp_path / "ssl", embeddings=False, lock_timeout=2)
    assert "SSL" in str(caught.value) and SECRET not in _text_of(caught.value)
    code = main(["--url", required, "--local-dir", str(tmp_path / "cli"), "list"])
    err = capsys.readouterr().err
    assert code == 3 and "SSL" in err and SECRET not in err and "Traceback" not in err
