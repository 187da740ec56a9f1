"""What the backends of one PostgreSQL database wait on, sampled during a load run.

Samples ``pg_stat_activity`` every ``--every`` seconds for ``--seconds`` and
prints, per sample on average, how many client backends were in each state
and wait event, and which statements the active ones were running (the
first 60 characters). Run it beside ``bench/load/pg_load_bench.py``, against the
database of the store under test::

    python bench/load/pg_wait_sampler.py --host /tmp/lgm_pgload/pg --database lgm_load_ours --seconds 30

``--host`` is a socket folder (pgserver's data folder) or a host name.
"""

from __future__ import annotations

import argparse
import collections
import time

import psycopg


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", required=True)
    p.add_argument("--database", required=True, help="the database whose backends are sampled")
    p.add_argument("--user", default="postgres")
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--every", type=float, default=0.02)
    args = p.parse_args()
    states: collections.Counter[str] = collections.Counter()
    active: collections.Counter[str] = collections.Counter()
    samples = 0
    with psycopg.connect(host=args.host, dbname="postgres", user=args.user, autocommit=True) as conn:
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            rows = conn.execute(
                "SELECT state, wait_event_type, wait_event, left(query, 60) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
                (args.database,),
            ).fetchall()
            if rows:
                samples += 1
                for state, wtype, event, query in rows:
                    states[f"{state} | {wtype or '-'} | {event or '-'}"] += 1
                    if state == "active":
                        active[f"{wtype or 'CPU'}:{event or '-'} :: {query}"] += 1
            time.sleep(args.every)
    print(f"{samples} samples; backends per sample, by state | wait type | wait event:")
    for key, n in states.most_common(15):
        print(f"{n / max(samples, 1):6.2f}  {key}")
    print("active backends per sample, by wait and statement:")
    for key, n in active.most_common(15):
        print(f"{n / max(samples, 1):6.2f}  {key}")


if __name__ == "__main__":
    main()
