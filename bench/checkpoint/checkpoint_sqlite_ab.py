"""Benchmark: SqliteCheckpointer before and after a change, against LangGraph's SQLite savers, in one process.

The SQLite twin of ``checkpoint_pg_ab.py`` (which also loads the ``--before`` code): graph invokes (steps/s)
of the chat graph of ``checkpoint_bench.py`` with ``SqliteSaver``, our checkpointer as of ``--before`` and as
in this checkout, rounds interleaved (A, B, C, A, B, C, ...); then the same with ``AsyncSqliteSaver`` and
``ainvoke``; then ``get_tuple`` and ``list(limit=10)`` latency on threads of 100 and ``--long`` checkpoints.
Every file is WAL with ``synchronous=NORMAL``. Ratios are medians of per-round ratios.

Run::

    python bench/checkpoint/checkpoint_sqlite_ab.py                      # main against this checkout
    python bench/checkpoint/checkpoint_sqlite_ab.py --before-dir /tmp/variant --rounds 15 --invokes 100
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import aiosqlite  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver  # noqa: E402

from bench.checkpoint._ab import BEFORE_PACKAGE, load_average, load_before, ratio_of  # noqa: E402
from bench.checkpoint._graph import (  # noqa: E402
    STEPS_PER_INVOKE,
    fill_thread,
    read_latency_async,
    read_latency_sync,
    steps_per_second_async,
    steps_per_second_sync,
)
from bench.common.report import cpu_flags, cpu_model  # noqa: E402
from langgraph_memory.checkpoint import SqliteCheckpointer  # noqa: E402


def run(tmp: Path, before_cls: Any, args: argparse.Namespace) -> tuple[dict[str, dict[str, list[float]]], list[str]]:
    conn = sqlite3.connect(tmp / "theirs.sqlite", check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    savers = {
        "theirs": SqliteSaver(conn),
        "before": before_cls(tmp / "b.sqlite"),
        "after": SqliteCheckpointer(tmp / "a.sqlite"),
    }
    rates = {"sync": steps_per_second_sync(savers, args.invokes, args.rounds)}
    for saver in savers.values():
        fill_thread(saver, "short", 100)
        fill_thread(saver, "long", args.long)
    latency = [
        f"| saver | mode | get_tuple µs @100 | get_tuple µs @{args.long:,} | list(10) µs @100 | list(10) µs @{args.long:,} |"
    ]
    latency.append("|---|---|---:|---:|---:|---:|")
    for name, saver in savers.items():
        (g1, l1), (g2, l2) = (read_latency_sync(saver, t, args.repeats) for t in ("short", "long"))
        latency.append(f"| {name} | sync | {g1:,.0f} | {g2:,.0f} | {l1:,.0f} | {l2:,.0f} |")

    async def arun() -> dict[str, list[float]]:
        aconn = await aiosqlite.connect(tmp / "atheirs.sqlite")
        await aconn.execute("PRAGMA journal_mode=WAL")
        await aconn.execute("PRAGMA synchronous=NORMAL")
        asavers = {
            "theirs": AsyncSqliteSaver(aconn),
            "before": before_cls(tmp / "ab.sqlite"),
            "after": SqliteCheckpointer(tmp / "aa.sqlite"),
        }
        found = await steps_per_second_async(asavers, args.invokes, args.rounds)
        for name in ("before", "after"):
            (g1, l1), (g2, l2) = [await read_latency_async(savers[name], t, args.repeats) for t in ("short", "long")]
            latency.append(f"| {name} | async | {g1:,.0f} | {g2:,.0f} | {l1:,.0f} | {l2:,.0f} |")
        await aconn.close()
        for name in ("before", "after"):
            await asavers[name].aclose()
        return found

    rates["async"] = asyncio.run(arun())
    conn.close()
    for name in ("before", "after"):
        savers[name].close()
    return rates, latency


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default="main", help="git ref of the code to compare against")
    parser.add_argument("--before-dir", type=Path, default=None, help="the langgraph_memory package in this folder")
    parser.add_argument("--invokes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--long", type=int, default=2000, help="checkpoints of the long thread read for latency")
    parser.add_argument("--repeats", type=int, default=100)
    args = parser.parse_args(argv)
    before = str(args.before_dir) if args.before_dir else args.before
    if args.before_dir is None:
        sha = ["git", "-C", str(ROOT), "rev-parse", "--short", args.before]
        before += " (" + subprocess.run(sha, check=True, capture_output=True, text=True).stdout.strip() + ")"
    load, started = load_average(), time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="lgm-sqlite-ab-") as tmp:
        load_before(args.before, Path(tmp), args.before_dir)
        before_cls = importlib.import_module(f"{BEFORE_PACKAGE}.checkpoint").SqliteCheckpointer
        rates, latency = run(Path(tmp), before_cls, args)
    print(f"started {started}; {args.invokes} invokes x {STEPS_PER_INVOKE} steps per round, {args.rounds} interleaved")
    print(f"rounds; before = {before}, after = this checkout; CPU {cpu_model()} ({cpu_flags()})\n")
    print("| mode | peer steps/s | before steps/s | after steps/s | before / peer | after / peer | after / before |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for mode, r in rates.items():
        t, b, a = r["theirs"], r["before"], r["after"]
        print(
            f"| {mode} | {statistics.median(t):.0f} | {statistics.median(b):.0f} | {statistics.median(a):.0f} | "
            f"{ratio_of(b, t):.2f}x | {ratio_of(a, t):.2f}x | {ratio_of(a, b):.2f}x |"
        )
    print("\n" + "\n".join(latency) + "\n")
    for mode, r in rates.items():
        rounds = zip(r["theirs"], r["before"], r["after"], strict=True)
        print(f"{mode} per round (peer/before/after): " + ", ".join(f"{t:.0f}/{b:.0f}/{a:.0f}" for t, b, a in rounds))
    print(f"load average (1/5/15 min) {load} at start, {load_average()} at end")


if __name__ == "__main__":
    main()
