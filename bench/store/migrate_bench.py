"""Benchmark: `langgraph-memory migrate` of N items (384-d vectors) into PostgreSQL and back.

    python bench/store/migrate_bench.py --url postgresql://postgres@127.0.0.1:5432/postgres            # 20,000 items
    python bench/store/migrate_bench.py --url postgresql://postgres@127.0.0.1:5432/postgres --items 2000

Start a throwaway server with ``scripts/pg.sh start DIR``. Each run creates
fresh databases on that server (dropped afterwards). Items get random 384-d
vectors through a fake embedding model (no model is loaded). Times the
copy into PostgreSQL, a second run over the finished copy (nothing to copy,
counts verified), and the export back into a data directory; prints a table
and writes ``bench/results/RESULTS_migrate.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psycopg
from langchain_core.embeddings import Embeddings

from bench.common.report import cpu_flags, cpu_model
from langgraph_memory.cli import main
from langgraph_memory.store import ChromaStore

DIMS = 384


class _Random(Embeddings):
    """Random unit vectors, one per text (the bench measures copying, not embedding)."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(7)

    def _one(self) -> list[float]:
        v = self.rng.standard_normal(DIMS).astype(np.float32)
        return (v / np.linalg.norm(v)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one() for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one()


def _database(server: str) -> str:
    name = f"lgm_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server.rsplit("/", 1)[0] + f"/{name}"


def _drop(url: str) -> None:
    server, name = url.rsplit("/", 1)
    with psycopg.connect(server + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _timed(argv: list[str]) -> float:
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the command's JSON report
        code = main([*argv, "--json"])
    if code != 0:
        raise SystemExit(f"migrate failed ({code}): {argv}")
    return time.perf_counter() - started


def run(url: str, items: int) -> list[tuple[str, float, float]]:
    work = Path(tempfile.mkdtemp(prefix="lgm-migrate-bench-"))
    src = work / "memory"
    store = ChromaStore(data_dir=src, index={"dims": DIMS, "embed": _Random()}, collections=None)
    batch = 500
    for start in range(0, items, batch):
        store.batch(
            [
                _put(("memories", f"u{i % 50}"), f"k{i}", {"content": f"note {i} about the tape", "n": i})
                for i in range(start, min(items, start + batch))
            ]
        )
    store.close()
    db = _database(url)
    rows: list[tuple[str, float, float]] = []
    try:
        t = _timed(["migrate", str(src), db, "--local-dir", str(work / "local"), "--no-checkpoints"])
        rows.append(("data directory -> PostgreSQL", t, items / t))
        t = _timed(["migrate", str(src), db, "--local-dir", str(work / "local"), "--no-checkpoints"])
        rows.append(("again (nothing to copy, verified)", t, items / t))
        t = _timed(["migrate", db, str(work / "exported"), "--local-dir", str(work / "local")])
        rows.append(("PostgreSQL -> data directory", t, items / t))
    finally:
        _drop(db)
    return rows


def _put(ns: tuple[str, ...], key: str, value: dict) -> object:
    from langgraph.store.base import PutOp

    return PutOp(ns, key, value)


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="postgresql:// address of a server (scripts/pg.sh start DIR)")
    parser.add_argument("--items", type=int, default=20_000)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows = run(args.url, args.items)
    load = max(load_before, os.getloadavg()[0])
    lines = [
        f"# migrate: {args.items:,} items with {DIMS}-d vectors",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {cpu_model()} ({cpu_flags()}), Python {platform.python_version()}, "
        f"PostgreSQL on loopback, load average {load:.1f} (other processes share the cores). "
        f"Command: `python bench/store/migrate_bench.py --url ... --items {args.items}`",
        "",
        "| direction | seconds | items/s |",
        "|---|---:|---:|",
        *(f"| {name} | {sec:.1f} | {rate:,.0f} |" for name, sec, rate in rows),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    (Path(__file__).resolve().parents[1] / "results" / "RESULTS_migrate.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main_()
