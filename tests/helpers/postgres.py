"""PostgreSQL servers for the tests, from ``langgraph_memory._infra.pg_cluster`` (what ``scripts/pg.sh`` runs).

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
from collections.abc import Iterator

import pytest

from langgraph_memory._infra.pg_cluster import PgCluster, PgClusterError, create_database, drop_database

__all__ = ["PgCluster", "create_database", "drop_database", "pg_cluster", "pg_database", "pg_url", "start_cluster"]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"PostgreSQL is required in CI: {reason}", pytrace=False)
    pytest.skip(f"no PostgreSQL server: {reason} (set LANGGRAPH_MEMORY_TEST_PG or install postgresql)")


def start_cluster() -> PgCluster:
    """A new cluster in a folder the ``postgres`` user can reach; skip or fail if impossible."""
    cluster = PgCluster.temporary()
    try:
        cluster.start()
    except (PgClusterError, OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(cluster.directory, ignore_errors=True)
        _unavailable(str(exc))
    return cluster


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
