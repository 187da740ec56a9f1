"""Benchmark: PostgresCheckpointer against LangGraph's PostgresSaver and AsyncPostgresSaver, one server.

Prints one table, the PostgreSQL section of ``bench/checkpoint/checkpoint_bench.py``
(which runs it with ``--postgres``):

* steps per second of the same two-node chat graph as the SQLite rows:
  PostgresSaver against PostgresCheckpointer (``invoke``), then
  AsyncPostgresSaver against PostgresCheckpointer (``ainvoke``), rounds
  interleaved (A, B, A, B, ...) so load drift hits both alike;
* median ``put`` and ``put_writes`` latency while a thread of N checkpoints
  is written, and ``get_tuple`` and ``list(limit=10)`` on threads of 100 and
  N (10,000 by default) checkpoints, the two savers taking turns call by
  call (lockstep), so load that drifts during the run hits both alike;
* the size of each saver's tables afterwards (``pg_total_relation_size``,
  indexes and TOAST included).

Every saver gets its own database on the same server, with PostgreSQL's
defaults (``synchronous_commit=on``: an acknowledged checkpoint survives a
crash of the server). The server is ``--url``, else a throwaway cluster
started with ``scripts/pg.sh`` and removed afterwards.

Run::

    python bench/checkpoint/checkpoint_bench.py --postgres             # full run (a few minutes)
    python bench/checkpoint/checkpoint_bench.py --postgres --quick     # smaller, a smoke test
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common

import psycopg
from langchain_core.messages import AIMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.rows import dict_row
from rich.console import Console
from rich.table import Table

from bench.checkpoint._graph import (
    STEPS_PER_INVOKE,
    Row,
    make_checkpoint,
    median_us,
    steps_per_second_async,
    steps_per_second_sync,
)
from bench.common.report import cpu_flags, cpu_model
from langgraph_memory._infra.pg_cluster import PgCluster, create_database, drop_database
from langgraph_memory.checkpoint.postgres import PostgresCheckpointer

_THEIR_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations")
_OUR_TABLES = (
    '"langgraph_memory".checkpoints',
    '"langgraph_memory".blobs',
    '"langgraph_memory".writes',
    '"langgraph_memory".schema_version',
)


def _table_bytes(url: str, tables: tuple[str, ...]) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        total = 0
        for table in tables:
            row = conn.execute("SELECT pg_total_relation_size(to_regclass(%s))", (table,)).fetchone()
            total += int(row[0] or 0) if row else 0
        return total


def fill_timed(saver: BaseCheckpointSaver, thread_id: str, n: int) -> tuple[list[float], list[float]]:
    """Write a thread of ``n`` checkpoints (as _graph.fill_thread); return put and put_writes times."""
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    puts, writes = [], []
    for i in range(n):
        t0 = time.perf_counter()
        config = saver.put(
            config, make_checkpoint(i), {"source": "loop", "step": i}, {"messages": i + 1, "turns": i + 1}
        )
        t1 = time.perf_counter()
        puts.append(t1 - t0)
        if i % 3 == 0:
            saver.put_writes(config, [("messages", [AIMessage("pending")])], f"task-{i}")
            writes.append(time.perf_counter() - t1)
    return puts, writes


async def afill_timed(saver: BaseCheckpointSaver, thread_id: str, n: int) -> tuple[list[float], list[float]]:
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    puts, writes = [], []
    for i in range(n):
        t0 = time.perf_counter()
        config = await saver.aput(
            config, make_checkpoint(i), {"source": "loop", "step": i}, {"messages": i + 1, "turns": i + 1}
        )
        t1 = time.perf_counter()
        puts.append(t1 - t0)
        if i % 3 == 0:
            await saver.aput_writes(config, [("messages", [AIMessage("pending")])], f"task-{i}")
            writes.append(time.perf_counter() - t1)
    return puts, writes


def fill_interleaved(
    savers: list[BaseCheckpointSaver], thread_id: str, n: int
) -> list[tuple[list[float], list[float]]]:
    """`fill_timed` on several savers in lockstep: checkpoint i goes to each saver in turn."""
    configs: list[dict[str, Any]] = [{"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}} for _ in savers]
    times: list[tuple[list[float], list[float]]] = [([], []) for _ in savers]
    for i in range(n):
        for k, saver in enumerate(savers):
            t0 = time.perf_counter()
            configs[k] = saver.put(
                configs[k], make_checkpoint(i), {"source": "loop", "step": i}, {"messages": i + 1, "turns": i + 1}
            )
            t1 = time.perf_counter()
            times[k][0].append(t1 - t0)
            if i % 3 == 0:
                saver.put_writes(configs[k], [("messages", [AIMessage("pending")])], f"task-{i}")
                times[k][1].append(time.perf_counter() - t1)
    return times


async def afill_interleaved(
    savers: list[BaseCheckpointSaver], thread_id: str, n: int
) -> list[tuple[list[float], list[float]]]:
    """Async `fill_interleaved`."""
    configs: list[dict[str, Any]] = [{"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}} for _ in savers]
    times: list[tuple[list[float], list[float]]] = [([], []) for _ in savers]
    for i in range(n):
        for k, saver in enumerate(savers):
            t0 = time.perf_counter()
            configs[k] = await saver.aput(
                configs[k], make_checkpoint(i), {"source": "loop", "step": i}, {"messages": i + 1, "turns": i + 1}
            )
            t1 = time.perf_counter()
            times[k][0].append(t1 - t0)
            if i % 3 == 0:
                await saver.aput_writes(configs[k], [("messages", [AIMessage("pending")])], f"task-{i}")
                times[k][1].append(time.perf_counter() - t1)
    return times


def read_interleaved(
    savers: list[BaseCheckpointSaver], thread_id: str, repeats: int
) -> list[tuple[list[float], list[float]]]:
    """``get_tuple`` and ``list(limit=10)`` times per saver, the savers taking turns."""
    config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    times: list[tuple[list[float], list[float]]] = [([], []) for _ in savers]
    for _ in range(repeats):
        for k, saver in enumerate(savers):
            t0 = time.perf_counter()
            assert saver.get_tuple(config) is not None
            t1 = time.perf_counter()
            assert len(list(saver.list(config, limit=10))) == 10
            times[k][0].append(t1 - t0)
            times[k][1].append(time.perf_counter() - t1)
    return times


async def aread_interleaved(
    savers: list[BaseCheckpointSaver], thread_id: str, repeats: int
) -> list[tuple[list[float], list[float]]]:
    """Async `read_interleaved`."""
    config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    times: list[tuple[list[float], list[float]]] = [([], []) for _ in savers]
    for _ in range(repeats):
        for k, saver in enumerate(savers):
            t0 = time.perf_counter()
            assert await saver.aget_tuple(config) is not None
            t1 = time.perf_counter()
            assert len([t async for t in saver.alist(config, limit=10)]) == 10
            times[k][0].append(t1 - t0)
            times[k][1].append(time.perf_counter() - t1)
    return times


def _their_conn(url: str) -> psycopg.Connection[Any]:
    # As PostgresSaver.from_conn_string opens it.
    return psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)


def run(server: str, invokes: int, long_thread: int, repeats: int, rounds: int) -> list[Row]:
    urls = {name: create_database(server) for name in ("theirs", "ours", "atheirs", "aours")}
    try:
        return _run(urls, invokes, long_thread, repeats, rounds)
    finally:
        for url in urls.values():
            drop_database(url)


def _run(urls: dict[str, str], invokes: int, long_thread: int, repeats: int, rounds: int) -> list[Row]:
    rows: list[Row] = []
    # -- sync ------------------------------------------------------------------
    conn = _their_conn(urls["theirs"])
    theirs = PostgresSaver(conn)
    theirs.setup()
    ours = PostgresCheckpointer(urls["ours"])
    ours.setup()
    rates = steps_per_second_sync({"PostgresSaver": theirs, "PostgresCheckpointer": ours}, invokes, rounds)
    lg = Row("PostgresSaver", "sync", rates["PostgresSaver"])
    mine = Row("PostgresCheckpointer", "sync", rates["PostgresCheckpointer"], peer="PostgresSaver")
    # Both savers write and read in lockstep (one call each, in turn), so load that drifts hits both alike.
    pair = ((lg, theirs), (mine, ours))
    fill_interleaved([saver for _, saver in pair], "short", 100)
    for (row, _), (puts, writes) in zip(
        pair, fill_interleaved([saver for _, saver in pair], "long", long_thread), strict=True
    ):
        row.latency["put"], row.latency["put_writes"] = median_us(puts), median_us(writes)
    for label, thread in (("100", "short"), ("long", "long")):
        for (row, _), (gets, lists) in zip(
            pair, read_interleaved([saver for _, saver in pair], thread, repeats), strict=True
        ):
            row.latency[f"get@{label}"], row.latency[f"list@{label}"] = median_us(gets), median_us(lists)
    conn.close()
    ours.close()
    lg.file_bytes = _table_bytes(urls["theirs"], _THEIR_TABLES)
    mine.file_bytes = _table_bytes(urls["ours"], _OUR_TABLES)
    rows += [lg, mine]

    # -- async -----------------------------------------------------------------
    async def async_rows() -> list[Row]:
        aconn = await psycopg.AsyncConnection.connect(
            urls["atheirs"], autocommit=True, prepare_threshold=0, row_factory=dict_row
        )
        atheirs = AsyncPostgresSaver(aconn)
        await atheirs.setup()
        aours = PostgresCheckpointer(urls["aours"])
        await aours.asetup()
        rates = await steps_per_second_async(
            {"AsyncPostgresSaver": atheirs, "PostgresCheckpointer": aours}, invokes, rounds
        )
        alg = Row("AsyncPostgresSaver", "async", rates["AsyncPostgresSaver"])
        amine = Row("PostgresCheckpointer", "async", rates["PostgresCheckpointer"], peer="AsyncPostgresSaver")
        short_fill = max(100, long_thread // 10)
        apair = ((alg, atheirs), (amine, aours))
        for (row, _), (puts, writes) in zip(
            apair, await afill_interleaved([saver for _, saver in apair], "afill", short_fill), strict=True
        ):
            row.latency["put"], row.latency["put_writes"] = median_us(puts), median_us(writes)
        await aconn.close()
        await aours.aclose()
        alg.file_bytes = _table_bytes(urls["atheirs"], _THEIR_TABLES)
        amine.file_bytes = _table_bytes(urls["aours"], _OUR_TABLES)
        # Reads on the long threads the sync savers wrote (same schema each).
        aconn = await psycopg.AsyncConnection.connect(
            urls["theirs"], autocommit=True, prepare_threshold=0, row_factory=dict_row
        )
        reader = AsyncPostgresSaver(aconn)
        async with PostgresCheckpointer(urls["ours"]) as mine_reader:
            for label, thread in (("100", "short"), ("long", "long")):
                timed = await aread_interleaved([reader, mine_reader], thread, repeats)
                for row, (gets, lists) in zip((alg, amine), timed, strict=True):
                    row.latency[f"get@{label}"], row.latency[f"list@{label}"] = median_us(gets), median_us(lists)
        await aconn.close()
        return [alg, amine]

    rows.extend(asyncio.run(async_rows()))
    return rows


def render(rows: list[Row], args: argparse.Namespace, server_version: str) -> Table:
    by_name = {(r.saver, r.mode): r for r in rows}
    long_label = f"{args.long_thread:,}"
    table = Table(
        title=f"PostgreSQL checkpointers — {args.invokes} invokes x {STEPS_PER_INVOKE} steps per round, median of "
        f"{args.rounds} interleaved rounds, one server, synchronous_commit=on",
    )
    for col in (
        "saver",
        "mode",
        "steps/s",
        "min-max",
        "vs peer",
        "put µs",
        "put_writes µs",
        "get_tuple µs @100",
        f"get_tuple µs @{long_label}",
        "list(10) µs @100",
        f"list(10) µs @{long_label}",
        "table size",
    ):
        table.add_column(col, justify="left" if col in ("saver", "mode") else "right")
    for r in rows:
        peer = by_name.get((r.peer, r.mode)) if r.peer else None
        ratio = f"{r.ratio_to(peer):.2f}x {peer.saver}" if peer else ""

        def lat(key: str, row: Row = r) -> str:
            return f"{row.latency[key]:,.0f}" if key in row.latency else "-"

        size = f"{r.file_bytes / 1e6:.1f} MB" if r.file_bytes is not None else "-"
        table.add_row(
            r.saver,
            r.mode,
            f"{r.steps_per_s:,.0f}",
            f"{min(r.rounds):,.0f}-{max(r.rounds):,.0f}",
            ratio,
            lat("put"),
            lat("put_writes"),
            lat("get@100"),
            lat("get@long"),
            lat("list@100"),
            lat("list@long"),
            size,
        )
    table.caption = (
        f"PostgreSQL {server_version}, python {platform.python_version()}, psycopg {psycopg.__version__}, "
        f"{os.cpu_count()} CPUs ({cpu_model()}; {cpu_flags()}); vs peer = median of per-round ratios; latency = median of {args.repeats} "
        f"(put/put_writes: of every write of the {long_label}-checkpoint thread, sync; of a "
        f"{max(100, args.long_thread // 10):,}-checkpoint thread, async); table size = graph run plus threads of "
        f"100 and {long_label} checkpoints (sync rows), graph run plus the async fill (async rows)"
    )
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--url",
        default=os.environ.get("LANGGRAPH_MEMORY_TEST_PG"),
        help="server address (default: $LANGGRAPH_MEMORY_TEST_PG, else a throwaway cluster)",
    )
    parser.add_argument("--quick", action="store_true", help="small run: 100 invokes, 2,000-checkpoint thread")
    parser.add_argument("--invokes", type=int, default=None)
    parser.add_argument("--long-thread", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    args.invokes = args.invokes or (100 if args.quick else 300)
    args.long_thread = args.long_thread or (2_000 if args.quick else 10_000)
    cluster = None
    if not args.url:
        cluster = PgCluster.temporary()
        cluster.start()
        args.url = cluster.url
    started = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
    load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    try:
        with psycopg.connect(args.url) as conn:
            version = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
        rows = run(args.url, args.invokes, args.long_thread, args.repeats, args.rounds)
    finally:
        if cluster is not None:
            cluster.remove()
    console = Console(width=220)
    console.print(render(rows, args, version))
    console.print(
        f"started {started}; load average (1/5/15 min) {load} at start, "
        f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())} at end."
    )
    for r in rows:
        if r.peer:
            peer = next(p for p in rows if p.saver == r.peer and p.mode == r.mode)
            print(
                f"{r.saver} {r.mode}: {r.ratio_to(peer):.2f}x {r.peer} steps/s; per-round "
                + ", ".join(f"{a:,.0f}/{b:,.0f}" for a, b in zip(r.rounds, peer.rounds, strict=False))
            )


if __name__ == "__main__":
    main()
