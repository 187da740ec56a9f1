"""Run the whole suite with the catalog on PostgreSQL: ``LGM_TEST_CATALOG=postgres``.

Tests name data directories (``ChromaStore(data_dir=tmp_path)``,
``Memory.open(path)``, ``langgraph-memory --data-dir path``). In this mode
every data directory a test resolves gets its catalog in a PostgreSQL schema
of its own, named after the directory, on one server for the session; the
directory itself becomes the memory's local directory (embedding cache,
archive files, the embedded index). So the same tests run on both backends
(those marked ``catalog``: which ones is said in ``tests/conftest.py``), and a
test that can only run on SQLite says why with ``@pytest.mark.sqlite_only("reason")``.

The mapping is installed in the test process by `install()` and in every
Python subprocess a test starts (CLI, MCP server, crash drills) by a ``.pth``
file that the run puts in the environment's site-packages and removes at its
end (`pth_line()`): tests build their subprocesses' environments in many
ways, and a ``.pth`` runs whatever ``PYTHONPATH`` they pass. It does nothing
in a process without `SERVER_ENV` set, so other users of the environment are
unaffected.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

#: The environment variable naming the backend of a test run ("sqlite", the default, or "postgres").
BACKEND_ENV = "LGM_TEST_CATALOG"
#: The server (a database address) every data directory's schema goes in, set for the whole run.
SERVER_ENV = "LGM_TEST_PG_SERVER"
#: The repository whose ``tests`` package subprocesses import the mapping from.
REPO_ENV = "LGM_TEST_REPO"

_made: set[str] = set()
_lock = threading.Lock()


def active() -> bool:
    return os.environ.get(BACKEND_ENV, "sqlite") == "postgres" and bool(os.environ.get(SERVER_ENV))


def schema_for(data_dir: Any) -> str:
    """The schema holding the catalog of ``data_dir`` (stable across processes)."""
    return "d_" + hashlib.sha1(str(data_dir).encode()).hexdigest()[:24]


def url_for(server: str, schema: str) -> str:
    parts = urlsplit(server)
    query = f"options={quote(f'-csearch_path={schema}', safe='')}"
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def _ensure_schema(server: str, schema: str) -> None:
    with _lock:
        if schema in _made:
            return
        import psycopg

        with psycopg.connect(server, autocommit=True, connect_timeout=10) as conn:
            try:
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            except psycopg.errors.UniqueViolation:  # another process made it at the same instant
                pass
        _made.add(schema)


def install() -> None:
    """Route every data directory that `Settings.resolve` returns to its PostgreSQL schema."""
    if not active():
        return
    from langgraph_memory.config import Settings

    if getattr(Settings.resolve, "_lgm_pg_mode", False):
        return
    original = Settings.resolve.__func__  # type: ignore[attr-defined]
    server = os.environ[SERVER_ENV]

    def resolve(cls: type[Settings], *args: Any, **kwargs: Any) -> Settings:
        settings = original(cls, *args, **kwargs)
        if settings.catalog_url is not None:
            return settings
        schema = schema_for(settings.data_dir)
        _ensure_schema(server, schema)
        return dataclasses.replace(settings, catalog_url=url_for(server, schema))

    resolve._lgm_pg_mode = True  # type: ignore[attr-defined]
    Settings.resolve = classmethod(resolve)  # type: ignore[method-assign,assignment]


def catalog_of(data_dir: Any) -> str | None:
    """The address of ``data_dir``'s catalog in this run (None on SQLite, where it is a file inside it).

    To open a copy of a data directory's local files with the original's
    catalog: ``ChromaStore(data_dir=catalog_of(a), local_dir=b)``.
    """
    if not active():
        return None
    schema = schema_for(data_dir)
    _ensure_schema(os.environ[SERVER_ENV], schema)
    return url_for(os.environ[SERVER_ENV], schema)


def has_catalog(data_dir: Any) -> bool:
    """Whether a program made ``data_dir``'s catalog: its SQLite file, or its tables in the run's schema."""
    from pathlib import Path

    if not active():
        return (Path(data_dir) / "catalog.sqlite").exists()
    import psycopg

    with psycopg.connect(os.environ[SERVER_ENV], autocommit=True, connect_timeout=10) as conn:
        row = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s AND table_name = 'items'",
            (schema_for(data_dir),),
        ).fetchone()
    return bool(row and row[0])


def copy_data_dir(source: Any, target: Any) -> None:
    """``cp -r source target`` of a data directory, its catalog included wherever this run keeps it.

    On PostgreSQL the target's schema gets a copy of the source's catalog
    (`copy_catalog`, the copy `langgraph-memory migrate` makes); its index
    is rebuilt from that catalog on the first open, as after a migration.
    """
    import shutil

    shutil.copytree(source, target)
    if not active():
        return
    from langgraph_memory.catalog.factory import open_catalog
    from langgraph_memory.catalog.transfer import copy_catalog
    from langgraph_memory.config import Settings

    src = open_catalog(Settings.resolve(source))
    try:
        dst = open_catalog(Settings.resolve(target))
        try:
            report = copy_catalog(src, dst)
        finally:
            dst.close()
    finally:
        src.close()
    if not report.verified:
        raise AssertionError(f"the catalog of {source} was not copied whole: {report}")


def child_env() -> dict[str, str]:
    """The variables a subprocess needs to map its data directories as this run does (none on SQLite).

    For subprocesses started with a bare environment (an MCP client passes
    only a few safe variables to the server it starts).
    """
    return {name: os.environ[name] for name in (BACKEND_ENV, SERVER_ENV, REPO_ENV) if name in os.environ}


def pth_line() -> str:
    """The line of the ``.pth`` file: install the mapping in a subprocess of a PostgreSQL-mode run."""
    return (
        "import os, sys; "
        f"os.environ.get({SERVER_ENV!r}) and os.environ.get({REPO_ENV!r}) and ("
        f"sys.path.append(os.environ[{REPO_ENV!r}]) or "
        "__import__('tests.helpers.catalog_backend', fromlist=['install']).install())\n"
    )
