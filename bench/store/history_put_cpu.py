"""CPU time of a PostgreSQL put replacing a value, history kept and not, for several source trees interleaved.

    python bench/store/history_put_cpu.py --pg URL [--items 100000] [--blocks 30] base=/tmp/base new=$PWD
    ... --template DB    # copy a database an earlier run loaded (its --items) instead of loading one

On a shared, loaded machine a put's wall time measures the other work as
much as the put (at a load average of 10 on 2 cores a 3 ms put takes 8-30
ms). The CPU a put costs does not wait for a core: this adds, per put, the
CPU time of the catalog's server processes (``/proc/<pid>/schedstat`` of the
client backends on its database: not autovacuum's, which comes when it will) and
of the putting thread (``time.thread_time``), beside its wall p50.

Loads one database as ``history_bench`` does (``--items`` keys, each changed
0-5 times; with the first tree), copies it for each tree (``CREATE DATABASE
... TEMPLATE``), starts a worker per tree (``PYTHONPATH`` = the tree), and
runs blocks of 50 single puts replacing a value with the history kept and
with `catalog.history.record` a no-op. The trees take turns going first
block by block, and the order of the arms flips every second block, so that
over four blocks each arm of each tree comes once right after the other
tree (the arm that follows the switch from one process to the other pays
for it: flipping both orders on the same block put that cost on one arm of
each tree, always the same). Prints every block, then the medians. The
server must run on this machine (the workers read its processes' CPU time).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg

_ROOT = Path(__file__).resolve().parents[2]

# Run in each tree's interpreter, from a folder outside every tree (so its sys.path starts with the tree): argv =
# database URL, items, Chroma folder, 1 to load first.
_WORKER = r"""
import json, os, random, statistics, sys, time
os.environ["LANGGRAPH_MEMORY_LOCAL_DIR"] = sys.argv[3]
import psycopg
from langchain_core.embeddings import DeterministicFakeEmbedding
from bench.store._history_data import DIMS, load_store, value
from langgraph_memory.catalog import history as _history
from langgraph_memory.store import ChromaStore

url, n = sys.argv[1], int(sys.argv[2])
store = ChromaStore(data_dir=url, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)}, collections=None)
keys = [(("memories", f"u{i % 100}"), f"k{i}") for i in range(n)]
if sys.argv[4] == "1":
    print(load_store(store, keys, random.Random(48))[2], file=sys.stderr)
    store.close()
    sys.exit(0)
store.wait_for_index(timeout=3600)
mon = psycopg.connect(url, autocommit=True)
db = url.rsplit("/", 1)[1]
print(f"{db} runs {_history.__file__}", file=sys.stderr)
rng = random.Random(7)
record = _history.record

def server_ns():
    pids = mon.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'"
        " AND pid <> pg_backend_pid()",
        (db,),
    ).fetchall()
    total = 0
    for (pid,) in pids:
        try:
            with open(f"/proc/{pid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:  # a process that ended (its CPU time is lost to both arms alike)
            pass
    return total

def block(on):
    if not on:
        _history.record = lambda *a, **k: None
    try:
        wall = []
        s0, c0 = server_ns(), time.thread_time_ns()
        for i in range(50):
            ns, k = keys[rng.randrange(n)]
            v = value(rng, i)
            t = time.perf_counter()
            store.put(ns, k, v)
            wall.append((time.perf_counter() - t) * 1000)
        c1, s1 = time.thread_time_ns(), server_ns()
    finally:
        _history.record = record
    return [statistics.median(wall), (s1 - s0) / 50e6, (c1 - c0) / 50e6]

for _ in range(4):  # warm: the session's statements, caches
    block(True), block(False)
print("ready", flush=True)
for line in sys.stdin:
    arms = ("on", "off") if int(line) // 2 % 2 == 0 else ("off", "on")  # trees alternate on int(line) % 2
    print(json.dumps({a: block(a == "on") for a in arms}), flush=True)
store.close()
"""


def _run(args: argparse.Namespace) -> None:
    trees = [a.split("=", 1) for a in args.trees]
    base = args.pg.rsplit("/", 1)[0]
    tag = uuid.uuid4().hex[:6]
    template = args.template or f"hput_{tag}"
    local = Path(tempfile.mkdtemp(prefix="history-put-cpu-"))

    def env(tree: str) -> dict[str, str]:
        return dict(os.environ, PYTHONPATH=tree, HF_HUB_OFFLINE="1")

    if not args.template:
        with psycopg.connect(args.pg, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {template}")
        t = time.perf_counter()
        argv = [sys.executable, "-c", _WORKER, f"{base}/{template}", str(args.items), str(local / "load"), "1"]
        subprocess.run(argv, env=env(trees[0][1]), cwd=local, check=True)
        print(f"loaded {args.items:,} items in {time.perf_counter() - t:.0f} s", flush=True)
    procs = {}
    with psycopg.connect(args.pg, autocommit=True) as conn:
        for name, _ in trees:
            conn.execute(f"CREATE DATABASE hput_{tag}_{name} TEMPLATE {template}")
    for name, tree in trees:
        argv = [sys.executable, "-c", _WORKER, f"{base}/hput_{tag}_{name}", str(args.items), str(local / name), "0"]
        procs[name] = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env(tree), cwd=local
        )
    for name, p in procs.items():
        assert p.stdout is not None and p.stdout.readline().strip() == "ready", name
    got: dict[str, list[dict[str, list[float]]]] = {name: [] for name in procs}
    print(f"blocks from {time.strftime('%H:%M', time.gmtime())} UTC, load {os.getloadavg()[0]:.1f}", flush=True)
    for b in range(args.blocks):
        for name in list(procs) if b % 2 == 0 else list(procs)[::-1]:
            p = procs[name]
            assert p.stdin is not None and p.stdout is not None
            p.stdin.write(f"{b}\n")
            p.stdin.flush()
            r = json.loads(p.stdout.readline())
            got[name].append(r)
            print(
                f"block {b:2d} {name}: "
                + " | ".join(f"{a} wall {v[0]:.2f} server {v[1]:.3f} thread {v[2]:.3f}" for a, v in sorted(r.items())),
                flush=True,
            )
    print(f"to {time.strftime('%H:%M', time.gmtime())} UTC, load {os.getloadavg()[0]:.1f}\n")
    print("| tree | ms per put, median of blocks | history kept | without | difference | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for name, rows in got.items():
        for label, pick in (
            ("wall p50", lambda v: v[0]),
            ("server CPU", lambda v: v[1]),
            ("putting thread CPU", lambda v: v[2]),
            ("server + thread CPU", lambda v: v[1] + v[2]),
        ):
            on = statistics.median(pick(r["on"]) for r in rows)
            off = statistics.median(pick(r["off"]) for r in rows)
            print(f"| {name} | {label} | {on:.3f} | {off:.3f} | {on - off:+.3f} | {on / off:.3f}x |")
    for p in procs.values():
        assert p.stdin is not None
        p.stdin.close()
        p.wait()
    with psycopg.connect(args.pg, autocommit=True) as conn:
        for name in [*([] if args.template else [template]), *(f"hput_{tag}_{n}" for n, _ in trees)]:
            conn.execute(f"DROP DATABASE IF EXISTS {name}")
    shutil.rmtree(local, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pg", required=True, help="a PostgreSQL server on this machine (its maintenance database)")
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--blocks", type=int, default=30)
    ap.add_argument("--template", help="a database loaded by an earlier run (kept), instead of loading one")
    ap.add_argument("trees", nargs="+", help="NAME=PATH: a source tree (its langgraph_memory and bench) per arm")
    _run(ap.parse_args())


if __name__ == "__main__":
    main()
