"""Benchmark: PostgresCheckpointer before and after a change, against LangGraph's savers, in one process.

Graph invokes (steps/s) of the two-node chat graph of ``bench/checkpoint/checkpoint_bench.py``
with, in interleaved rounds (A, B, C, A, B, C, ...), LangGraph's
``PostgresSaver``, our checkpointer as of ``--before`` (a git ref, default
``main``) and as in this checkout; then the same with ``AsyncPostgresSaver``
and ``ainvoke``. Ratios are medians of per-round ratios, so load that drifts
during the run hits every saver alike.

The ``--before`` code is extracted with ``git archive`` and imported as the
package ``lgm_before``: both versions live in one interpreter. Every saver
has its own database on one server (``--url``, else a throwaway cluster from
``scripts/pg.sh``), all with ``synchronous_commit=on``.

Run::

    python bench/checkpoint/checkpoint_pg_ab.py                  # main against this checkout
    python bench/checkpoint/checkpoint_pg_ab.py --before HEAD~3 --rounds 7 --invokes 100
    python bench/checkpoint/checkpoint_pg_ab.py --before-dir /tmp/variant   # a copy of the package with a change tried
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from langgraph.checkpoint.postgres import PostgresSaver  # noqa: E402
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver  # noqa: E402
from psycopg.rows import dict_row  # noqa: E402

from bench.checkpoint._ab import load_average, load_before, ratio_of  # noqa: E402
from bench.checkpoint._graph import STEPS_PER_INVOKE, steps_per_second_async, steps_per_second_sync  # noqa: E402
from langgraph_memory._infra.pg_cluster import PgCluster, create_database, drop_database  # noqa: E402
from langgraph_memory.checkpoint.postgres import PostgresCheckpointer  # noqa: E402


def _their_conn(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)


def run(server: str, before_cls: Any, invokes: int, rounds: int) -> dict[str, dict[str, list[float]]]:
    urls = {name: create_database(server) for name in ("t", "b", "a", "at", "ab", "aa")}
    try:
        theirs = PostgresSaver(_their_conn(urls["t"]))
        theirs.setup()
        before = before_cls(urls["b"])
        before.setup()
        after = PostgresCheckpointer(urls["a"])
        after.setup()
        sync = steps_per_second_sync({"theirs": theirs, "before": before, "after": after}, invokes, rounds)
        theirs.conn.close()  # type: ignore[union-attr]
        before.close()
        after.close()

        async def arun() -> dict[str, list[float]]:
            conn = await psycopg.AsyncConnection.connect(
                urls["at"], autocommit=True, prepare_threshold=0, row_factory=dict_row
            )
            atheirs = AsyncPostgresSaver(conn)
            await atheirs.setup()
            abefore = before_cls(urls["ab"])
            await abefore.asetup()
            aafter = PostgresCheckpointer(urls["aa"])
            await aafter.asetup()
            rates = await steps_per_second_async(
                {"theirs": atheirs, "before": abefore, "after": aafter}, invokes, rounds
            )
            await conn.close()
            await abefore.aclose()
            await aafter.aclose()
            return rates

        return {"sync": sync, "async": asyncio.run(arun())}
    finally:
        for url in urls.values():
            drop_database(url)


def report(results: dict[str, dict[str, list[float]]], args: argparse.Namespace, load: str) -> str:
    peer = {"sync": "PostgresSaver", "async": "AsyncPostgresSaver"}
    lines = [
        f"{args.invokes} invokes x {STEPS_PER_INVOKE} steps per round, {args.rounds} interleaved rounds; "
        f"before = {args.before} ({args.before_sha}), after = this checkout",
        "",
        "| mode | peer steps/s | before steps/s | after steps/s | before / peer | after / peer | after / before |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, rates in results.items():
        t, b, a = rates["theirs"], rates["before"], rates["after"]
        lines.append(
            f"| {mode} ({peer[mode]}) | {statistics.median(t):.1f} | {statistics.median(b):.1f} | "
            f"{statistics.median(a):.1f} | {ratio_of(b, t):.2f}x | {ratio_of(a, t):.2f}x | {ratio_of(a, b):.2f}x |"
        )
    lines.append("")
    for mode, rates in results.items():
        rounds = zip(rates["theirs"], rates["before"], rates["after"], strict=True)
        lines.append(
            f"{mode} per round (peer/before/after): " + ", ".join(f"{t:.0f}/{b:.0f}/{a:.0f}" for t, b, a in rounds)
        )
    lines.append(f"load average (1/5/15 min) {load} at start, {load_average()} at end")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=os.environ.get("LANGGRAPH_MEMORY_TEST_PG"))
    parser.add_argument("--before", default="main", help="git ref of the code to compare against")
    parser.add_argument(
        "--before-dir",
        type=Path,
        default=None,
        help="compare against the langgraph_memory package in this folder instead (a variant being tried)",
    )
    parser.add_argument("--invokes", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    if args.before_dir is not None:
        args.before, args.before_sha = str(args.before_dir), "folder"
    else:
        args.before_sha = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", args.before], check=True, capture_output=True, text=True
        ).stdout.strip()
    cluster = None
    if not args.url:
        cluster = PgCluster.temporary()
        cluster.start()
        args.url = cluster.url
    load = load_average()
    started = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
    try:
        with tempfile.TemporaryDirectory(prefix="lgm-ab-") as tmp:
            before_cls = load_before(args.before, Path(tmp), args.before_dir)
            results = run(args.url, before_cls, args.invokes, args.rounds)
    finally:
        if cluster is not None:
            cluster.remove()
    print(f"started {started}")
    print(report(results, args, load))


if __name__ == "__main__":
    main()
