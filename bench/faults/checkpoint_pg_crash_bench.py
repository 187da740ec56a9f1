"""Crash bench: PostgresCheckpointer under SIGKILLs of its workers and crashes of the server.

Two drills on a throwaway cluster started with ``scripts/pg.sh``:

1. **SIGKILL**: a worker process invokes a 3-step graph round-robin over 4
   threads and is SIGKILLed at a random moment, ``--kills`` times (20); a new
   worker takes over each time. Target: 0 acknowledged checkpoints lost,
   every thread resumable.
2. **Server crash**: 4 worker processes invoke while the server is stopped
   with ``pg_ctl stop -m immediate`` ``--stops`` times (5), left down for
   ``--down`` seconds, and started again. Target: the same, only
   ``CheckpointUnavailableError`` while the server is down, and every worker
   acknowledging again within 5 s of the restart.

Run::

    python bench/faults/checkpoint_pg_crash_bench.py                 # 20 kills, 5 server crashes
    python bench/faults/checkpoint_pg_crash_bench.py --kills 3 --stops 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common

from rich.console import Console
from rich.table import Table

from bench.common.pg_crash import kill_drill, server_drill
from langgraph_memory._infra.pg_cluster import PgCluster, create_database
from langgraph_memory.checkpoint.postgres import PostgresCheckpointer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--stops", type=int, default=5)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--down", type=float, default=2.0, help="seconds the server stays down")
    parser.add_argument("--timeout", type=float, default=5.0, help="the workers' checkpointer timeout")
    args = parser.parse_args(argv)
    started = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
    load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    cluster = PgCluster.temporary()
    cluster.start()
    try:
        with tempfile.TemporaryDirectory(prefix="lgm-pg-crash-") as tmp:
            kill_url = create_database(cluster.url)
            with PostgresCheckpointer(kill_url) as saver:
                saver.setup()
            t0 = time.monotonic()
            kills = kill_drill(kill_url, Path(tmp), kills=args.kills, threads=4)
            kill_s = time.monotonic() - t0
            server_url = create_database(cluster.url)
            with PostgresCheckpointer(server_url) as saver:
                saver.setup()
            t0 = time.monotonic()
            stops = server_drill(
                server_url,
                cluster,
                Path(tmp),
                stops=args.stops,
                workers=args.workers,
                down_s=args.down,
                timeout=args.timeout,
            )
            stop_s = time.monotonic() - t0
    finally:
        cluster.remove()
    table = Table(title="PostgresCheckpointer crash bench")
    for col in (
        "drill",
        "events",
        "acknowledged",
        "lost",
        "threads resumed",
        "untyped errors",
        "typed errors while down",
        "failures after restart",
        "recovery s (median / max)",
        "wall s",
    ):
        table.add_column(col, justify="left" if col == "drill" else "right")
    table.add_row(
        "SIGKILL of the worker mid-invoke",
        str(args.kills),
        str(kills.acknowledged),
        str(kills.lost),
        f"{kills.resumed}/{kills.threads}",
        str(len(kills.untyped_errors)),
        "-",
        "-",
        "-",
        f"{kill_s:.0f}",
    )
    rec = stops.recovery_s
    table.add_row(
        f"pg_ctl stop -m immediate, {args.workers} workers, {args.down:g} s down",
        str(args.stops),
        str(stops.acknowledged),
        str(stops.lost),
        f"{stops.resumed}/{stops.threads}",
        str(len(stops.untyped_errors)),
        str(stops.down_errors),
        str(stops.errors_after_restart),
        f"{statistics.median(rec):.2f} / {max(rec):.2f}" if rec else "-",
        f"{stop_s:.0f}",
    )
    console = Console(width=220)
    console.print(table)
    console.print(
        f"started {started}; workers' timeout {args.timeout:g} s; recovery = restart finished "
        f"(pg.sh start returned) to the worker's next acknowledged invoke; load average {load} at start, "
        f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())} at end."
    )
    for line in kills.untyped_errors + stops.untyped_errors:
        console.print(f"untyped: {line}", markup=False)


if __name__ == "__main__":
    main()
