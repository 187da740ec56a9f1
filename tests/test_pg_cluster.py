"""scripts/pg.sh and the helper behind it: a throwaway cluster that keeps its address across a crash."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest

from langgraph_memory._infra.pg_cluster import create_database, with_database

ROOT = Path(__file__).resolve().parents[1]


def _pg_sh(verb: str, folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "pg.sh"), verb, str(folder)], capture_output=True, text=True, timeout=180
    )


def test_pg_sh_starts_a_cluster_that_comes_back_on_the_same_address_after_a_crash() -> None:
    folder = Path(tempfile.mkdtemp(prefix="lgm-pg-", dir="/tmp"))
    try:
        started = _pg_sh("start", folder)
        if started.returncode != 0 and "binaries not found" in started.stderr:
            pytest.skip(started.stderr.strip())
        assert started.returncode == 0, started.stderr
        url = started.stdout.strip()
        assert url.startswith("postgresql://postgres@127.0.0.1:")
        assert _pg_sh("url", folder).stdout.strip() == url
        assert _pg_sh("status", folder).returncode == 0

        db = create_database(url, "lgm_cluster_check")
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (n int)")
            conn.execute("INSERT INTO kept VALUES (7)")

        assert _pg_sh("crash", folder).returncode == 0
        assert _pg_sh("status", folder).returncode != 0
        url_missing = _pg_sh("url", folder)
        assert url_missing.returncode == 1 and "no cluster running" in url_missing.stderr

        assert _pg_sh("start", folder).stdout.strip() == url  # the same port: clients reconnect as they were
        with psycopg.connect(db, autocommit=True) as conn:
            assert conn.execute("SELECT n FROM kept").fetchall() == [(7,)]  # committed before the crash
        fresh = create_database(url, "lgm_cluster_check")  # a name given again starts from nothing
        with psycopg.connect(fresh, autocommit=True) as conn:
            assert conn.execute("SELECT to_regclass('kept')").fetchone() == (None,)
    finally:
        _pg_sh("stop", folder)
        shutil.rmtree(folder, ignore_errors=True)


def test_pg_sh_refuses_an_unknown_verb_with_its_usage() -> None:
    done = _pg_sh("restart", Path("/tmp/nowhere"))
    assert done.returncode == 2 and "usage: pg.sh start|stop|crash|url|status DIR" in done.stderr


def test_with_database_names_another_database_in_every_address_form() -> None:
    assert (
        with_database("postgresql://postgres@127.0.0.1:5432/postgres", "x") == "postgresql://postgres@127.0.0.1:5432/x"
    )
    # pgserver's socket addresses keep their query string
    assert (
        with_database("postgresql://postgres:@/postgres?host=/tmp/pg", "y") == "postgresql://postgres:@/y?host=/tmp/pg"
    )
    assert "dbname=z" in with_database("host=/tmp port=5432 dbname=postgres user=postgres", "z")


def test_create_database_refuses_a_name_that_would_need_quoting() -> None:
    with pytest.raises(ValueError, match="bad database name"):
        create_database("postgresql://postgres@127.0.0.1:1/postgres", 'x"; DROP DATABASE postgres; --')
