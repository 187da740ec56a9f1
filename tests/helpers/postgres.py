"""PostgreSQL servers for the tests, started by ``scripts/pg.sh``.

Fixtures (imported by ``tests/conftest.py``):

* ``pg_url`` (session): the address of a server. ``$LANGGRAPH_MEMORY_TEST_PG``
  if set, else a throwaway cluster started for the session and stopped at its end.
* ``pg_database`` (function): a fresh, empty database on that server, dropped afterwards.
* ``pg_cluster`` (function): a private cluster the test may crash and restart
  (``pg_ctl stop -m immediate``), never the shared one.

When ``CI=true`` a server that cannot start fails the test, it is never
skipped; elsewhere the test is skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "pg.sh"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"PostgreSQL is required in CI: {reason}", pytrace=False)
    pytest.skip(f"no PostgreSQL server: {reason} (set LANGGRAPH_MEMORY_TEST_PG or install postgresql)")


@dataclass
class PgCluster:
    """A cluster run by ``scripts/pg.sh`` in ``directory``."""

    directory: Path
    url: str = ""

    def _run(self, verb: str) -> str:
        done = subprocess.run(
            [str(_SCRIPT), verb, str(self.directory)], capture_output=True, text=True, timeout=180, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"pg.sh {verb} failed: {done.stderr.strip()[-2000:]}")
        return done.stdout.strip()

    def start(self) -> str:
        """Start (or restart, on the same port) and wait until it accepts connections."""
        self.url = self._run("start")
        return self.url

    def stop(self) -> None:
        self._run("stop")

    def crash(self) -> None:
        """``pg_ctl stop -m immediate``: the server dies as in a power cut of its process."""
        self._run("crash")

    def remove(self) -> None:
        try:
            self._run("stop")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


def start_cluster() -> PgCluster:
    """A new cluster in a folder the ``postgres`` user can reach; skip or fail if impossible."""
    if not _SCRIPT.exists():
        _unavailable(f"{_SCRIPT} is missing")
    # Under /tmp itself: pytest's tmp_path is private to root, and the server runs as postgres.
    cluster = PgCluster(Path(tempfile.mkdtemp(prefix="lgm-pg-", dir="/tmp")))
    try:
        cluster.start()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(cluster.directory, ignore_errors=True)
        _unavailable(str(exc))
    return cluster


def create_database(server_url: str) -> str:
    """Create an empty database on ``server_url``; return its address."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = f"lgm_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    if server_url.startswith(("postgresql://", "postgres://")):
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(server_url)
        return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, ""))
    params = conninfo_to_dict(server_url)
    params["dbname"] = name
    return make_conninfo(**params)


def drop_database(url: str) -> None:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(url)
    name = params.pop("dbname")
    params["dbname"] = "postgres"
    try:
        with psycopg.connect(make_conninfo(**params), autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except psycopg.Error:
        pass  # the server is gone already (a crashed private cluster)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """The address of a PostgreSQL server for this test session."""
    env = os.environ.get("LANGGRAPH_MEMORY_TEST_PG")
    if env:
        yield env
        return
    cluster = start_cluster()
    try:
        yield cluster.url
    finally:
        cluster.remove()


@pytest.fixture
def pg_database(pg_url: str) -> Iterator[str]:
    """The address of a new, empty database, dropped after the test."""
    try:
        url = create_database(pg_url)
    except Exception as exc:  # the server named by the environment is not answering
        _unavailable(f"{exc}")
        raise
    try:
        yield url
    finally:
        drop_database(url)


@pytest.fixture
def pg_cluster() -> Iterator[PgCluster]:
    """A private cluster that the test may crash and restart."""
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        cluster.remove()
