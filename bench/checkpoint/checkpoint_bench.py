"""Benchmark: SqliteCheckpointer against LangGraph's own savers.

Prints one table:

* steps per second of the same graph (a two-node chat graph with a
  ``messages`` channel) with InMemorySaver, SqliteSaver, AsyncSqliteSaver and
  SqliteCheckpointer (sync ``invoke`` and async ``ainvoke``);
* ``get_tuple`` and ``list(limit=10)`` latency (median) on a thread with 100
  and with 10,000 checkpoints;
* the file size after the run.

Durability is equal across SQLite savers: every SQLite file is in WAL mode
with the same ``synchronous`` setting (``NORMAL`` by default: an acknowledged
write survives a process crash; ``--durability full`` also survives power loss).

Run::

    .venv/bin/python bench/checkpoint/checkpoint_bench.py            # full run (a few minutes)
    .venv/bin/python bench/checkpoint/checkpoint_bench.py --quick    # smaller, for a smoke test
    .venv/bin/python bench/checkpoint/checkpoint_bench.py --postgres # PostgresCheckpointer vs PostgresSaver (_postgres.py)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common

import aiosqlite  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench.checkpoint._graph import (  # noqa: E402
    STEPS_PER_INVOKE,
    Row,
    fill_thread,
    read_latency_async,
    read_latency_sync,
    steps_per_second_async,
    steps_per_second_sync,
)
from bench.checkpoint._postgres import main as postgres_main  # noqa: E402
from bench.common.report import cpu_flags, cpu_model  # noqa: E402
from langgraph_memory.checkpoint import SqliteCheckpointer  # noqa: E402


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def _sqlite_conn(path: Path, synchronous: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    return conn


async def _aio_saver(path: Path, synchronous: str) -> tuple[AsyncSqliteSaver, aiosqlite.Connection]:
    conn = await aiosqlite.connect(path)
    await conn.execute("PRAGMA journal_mode=WAL")
    await conn.execute(f"PRAGMA synchronous={synchronous}")
    return AsyncSqliteSaver(conn), conn


def run(invokes: int, long_thread: int, repeats: int, durability: str, workdir: Path, rounds: int) -> list[Row]:
    sync_pragma = durability.upper()
    rows: list[Row] = []

    # -- sync: the three savers, rounds interleaved --------------------------
    path = workdir / "sqlitesaver.sqlite"
    conn = _sqlite_conn(path, sync_pragma)
    lg_sync = SqliteSaver(conn)
    ours_path = workdir / "ours.sqlite"
    ours = SqliteCheckpointer(ours_path, durability=durability)  # type: ignore[arg-type]
    rates = steps_per_second_sync(
        {"InMemorySaver": InMemorySaver(), "SqliteSaver": lg_sync, "SqliteCheckpointer": ours}, invokes, rounds
    )
    mem_row = Row("InMemorySaver", "sync", rates["InMemorySaver"])
    lg_row = Row("SqliteSaver", "sync", rates["SqliteSaver"])
    ours_row = Row("SqliteCheckpointer", "sync", rates["SqliteCheckpointer"], peer="SqliteSaver")

    # Long-thread reads on each file.
    fill_thread(lg_sync, "short", 100)
    fill_thread(lg_sync, "long", long_thread)
    for label, thread in (("100", "short"), ("long", "long")):
        lg_row.latency[f"get@{label}"], lg_row.latency[f"list@{label}"] = read_latency_sync(lg_sync, thread, repeats)
    conn.close()
    lg_row.file_bytes = _size(path)
    fill_thread(ours, "short", 100)
    fill_thread(ours, "long", long_thread)
    for label, thread in (("100", "short"), ("long", "long")):
        ours_row.latency[f"get@{label}"], ours_row.latency[f"list@{label}"] = read_latency_sync(ours, thread, repeats)
    ours.close()
    ours_row.file_bytes = _size(ours_path)  # after close, like the others: WAL folded in
    rows += [mem_row, lg_row, ours_row]

    # -- async ---------------------------------------------------------------
    async def async_rows() -> list[Row]:
        aio_path = workdir / "asyncsqlitesaver.sqlite"
        aio_saver, aio_conn = await _aio_saver(aio_path, sync_pragma)
        async_path = workdir / "ours-async.sqlite"
        ours_async = SqliteCheckpointer(async_path, durability=durability)  # type: ignore[arg-type]
        rates = await steps_per_second_async(
            {"InMemorySaver": InMemorySaver(), "AsyncSqliteSaver": aio_saver, "SqliteCheckpointer": ours_async},
            invokes,
            rounds,
        )
        await aio_conn.close()
        await asyncio.get_running_loop().run_in_executor(None, ours_async.close)
        mem = Row("InMemorySaver", "async", rates["InMemorySaver"])
        aio = Row("AsyncSqliteSaver", "async", rates["AsyncSqliteSaver"], file_bytes=_size(aio_path))
        mine = Row(
            "SqliteCheckpointer",
            "async",
            rates["SqliteCheckpointer"],
            peer="AsyncSqliteSaver",
            file_bytes=_size(async_path),
        )

        # Long-thread reads on the files the sync savers filled (same schema each).
        saver, conn = await _aio_saver(path, sync_pragma)
        for label, thread in (("100", "short"), ("long", "long")):
            aio.latency[f"get@{label}"], aio.latency[f"list@{label}"] = await read_latency_async(saver, thread, repeats)
        await conn.close()
        async with SqliteCheckpointer(ours_path, durability=durability) as ours_reads:  # type: ignore[arg-type]
            for label, thread in (("100", "short"), ("long", "long")):
                mine.latency[f"get@{label}"], mine.latency[f"list@{label}"] = await read_latency_async(
                    ours_reads, thread, repeats
                )
        return [mem, aio, mine]

    rows.extend(asyncio.run(async_rows()))
    return rows


def render(rows: list[Row], args: argparse.Namespace) -> Table:
    by_name = {(r.saver, r.mode): r for r in rows}
    long_label = f"{args.long_thread:,}"
    table = Table(
        title=f"Checkpointer benchmark — {args.invokes} invokes x {STEPS_PER_INVOKE} steps per round, "
        f"median of {args.rounds} interleaved rounds, WAL + synchronous={args.durability.upper()} "
        "for every SQLite saver",
    )
    for col in (
        "saver",
        "mode",
        "steps/s",
        "min-max",
        "vs peer",
        "get_tuple µs @100",
        f"get_tuple µs @{long_label}",
        "list(10) µs @100",
        f"list(10) µs @{long_label}",
        "file size",
    ):
        table.add_column(col, justify="left" if col in ("saver", "mode") else "right")
    for r in rows:
        peer = by_name.get((r.peer, "sync" if r.mode == "sync" else "async")) if r.peer else None
        ratio = f"{r.ratio_to(peer):.2f}x {peer.saver}" if peer else ""

        def lat(key: str, row: Row = r) -> str:
            return f"{row.latency[key]:,.0f}" if key in row.latency else "-"

        size = f"{r.file_bytes / 1e6:.1f} MB" if r.file_bytes is not None else "(memory)"
        spread = f"{min(r.rounds):,.0f}-{max(r.rounds):,.0f}"
        table.add_row(
            r.saver,
            r.mode,
            f"{r.steps_per_s:,.0f}",
            spread,
            ratio,
            lat("get@100"),
            lat("get@long"),
            lat("list@100"),
            lat("list@long"),
            size,
        )
    table.caption = (
        f"python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, {os.cpu_count()} CPUs; "
        f"vs peer = median over rounds of the per-round ratio; "
        f"latency = median of {args.repeats}; file size = the graph run plus threads of 100 and "
        f"{long_label} checkpoints (sync rows), the graph run only (async rows)"
    )
    return table


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small run: 100 invokes, 2,000-checkpoint thread")
    parser.add_argument("--invokes", type=int, default=None)
    parser.add_argument("--long-thread", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per saver")
    parser.add_argument("--durability", choices=("normal", "full"), default="normal")
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="run the PostgreSQL section instead (PostgresCheckpointer against PostgresSaver; it takes --url)",
    )
    args, rest = parser.parse_known_args(argv)
    if args.postgres:
        passed = [
            *rest,
            *(["--quick"] if args.quick else []),
            "--rounds",
            str(args.rounds),
            "--repeats",
            str(args.repeats),
        ]
        passed += [
            *(["--invokes", str(args.invokes)] if args.invokes else []),
            *(["--long-thread", str(args.long_thread)] if args.long_thread else []),
        ]
        postgres_main(passed)
        return
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.invokes = args.invokes or (100 if args.quick else 500)
    args.long_thread = args.long_thread or (2_000 if args.quick else 10_000)
    started = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
    load_start = _load()
    with tempfile.TemporaryDirectory(prefix="lgm-cp-bench-") as tmp:
        rows = run(args.invokes, args.long_thread, args.repeats, args.durability, Path(tmp), args.rounds)
    console = Console(width=200)
    console.print(render(rows, args))
    console.print(
        f"Machine: nproc={os.cpu_count()}; CPU {cpu_model()} ({cpu_flags()}); Python {platform.python_version()}; "
        f"SQLite {sqlite3.sqlite_version}; started {started}; load average (1/5/15 min) "
        f"{load_start} at start, {_load()} at end."
    )


if __name__ == "__main__":
    main()
