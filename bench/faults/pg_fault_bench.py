"""Fault bench for a memory shared through PostgreSQL and a Chroma server.

Two drills, each on a throwaway PostgreSQL cluster (``scripts/pg.sh``) and a
real ``chroma run`` server, with writer processes (``bench/faults/_pg_fault_worker.py``,
each with its own local directory) doing puts and version bumps of one shared
strategy without pause:

1. **PostgreSQL crashes**: ``pg_ctl stop -m immediate`` at ``--crashes`` (10)
   random points under ``--workers`` (4) writers, down ``--down`` seconds, then
   started again. Reported: acknowledged writes lost (target 0), duplicate
   versions (0), untyped errors (0), the slowest typed error while down, and the
   seconds from the restart (``pg.sh start`` returned) until every writer
   acknowledged a write again (target <= 5).
2. **Chroma server kills**: SIGKILL ``--kills`` (5) times, then once more and
   restarted on an EMPTY directory. Writes must be acknowledged throughout;
   after each restart, once every writer's index serves again, every item
   acknowledged so far must find its own record first when Chroma is queried
   with its vector (read from the catalog; the check itself repairs nothing).

Run::

    python bench/faults/pg_fault_bench.py                      # the full drills, writes bench/results/RESULTS_pg_faults.md
    python bench/faults/pg_fault_bench.py --short --json r.json  # what the test suite runs
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.common.report import machine, markdown_table  # noqa: E402

WORKER = Path(__file__).with_name("_pg_fault_worker.py")
NAMESPACE = ("notes", "bench")
STRATEGY = "fault-bench"


@dataclass
class Worker:
    """One writer process and every line it printed, as ``(fields, monotonic time)``."""

    name: str
    proc: subprocess.Popen[str]
    lines: list[list[str]] = field(default_factory=list)
    err: str = ""

    @classmethod
    def start(cls, url: str, server: Any, local: Path, name: str, stop: Path, timeout: float) -> Worker:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
        env.pop("LANGGRAPH_MEMORY_DIR", None)
        proc = subprocess.Popen(
            [
                sys.executable,
                str(WORKER),
                url,
                f"{server.host}:{server.port}",
                str(local),
                name,
                str(stop),
                str(timeout),
            ],
            stdout=subprocess.PIPE,
            stderr=open(local.parent / f"{name}.log", "w"),  # noqa: SIM115 - the child keeps it
            text=True,
            env=env,
        )
        w = cls(name, proc)
        threading.Thread(target=w._read, daemon=True).start()
        return w

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.split())

    def acks(self) -> list[list[str]]:
        return [f for f in list(self.lines) if f and f[0] == "ack"]

    @staticmethod
    def at(f: list[str]) -> float:
        return float(f[-2]) if f[0] == "ack" else float(f[2])

    def wait(self, pred: Any, deadline: float) -> bool:
        while time.monotonic() < deadline:
            if pred(self):
                return True
            if self.proc.poll() is not None:
                time.sleep(0.2)  # let the reader take the last lines
                return pred(self)
            time.sleep(0.02)
        return False

    def finish(self) -> None:
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        time.sleep(0.2)


def _start_workers(n: int, url: str, server: Any, tmp: Path, tag: str, timeout: float) -> tuple[list[Worker], Path]:
    stop = tmp / f"stop-{tag}"
    workers = [Worker.start(url, server, tmp / f"{tag}-w{i}", f"{tag}w{i}", stop, timeout) for i in range(n)]
    deadline = time.monotonic() + 300
    for w in workers:
        if not w.wait(lambda w: len(w.acks()) >= 3, deadline):
            raise RuntimeError(f"writer {w.name} did not start: {(tmp / f'{w.name}.log').read_text()[-2000:]}")
    return workers, stop


def _stop_workers(workers: list[Worker], stop: Path) -> None:
    stop.touch()
    for w in workers:
        w.finish()


def _acked(workers: list[Worker], before: float = float("inf")) -> tuple[dict[str, int], list[tuple[int, str]]]:
    """Keys put (with their ``n``) and versions acknowledged before ``before``."""
    puts: dict[str, int] = {}
    versions: list[tuple[int, str]] = []
    for w in workers:
        for f in w.acks():
            if Worker.at(f) >= before:
                continue
            if f[1] == "put":
                puts[f[2]] = int(f[2].rsplit("-", 1)[1])
            else:
                versions.append((int(f[2]), f[3]))
    return puts, versions


def _checker(url: str, server: Any, local: Path) -> Any:
    from bench.common.pg_index_check import checker

    return checker(url, server, local)


def _verify_catalog(url: str, server: Any, local: Path, workers: list[Worker]) -> dict[str, Any]:
    """Acknowledged puts present with their values; versions 1..N, each acknowledged one where it was said."""
    from langgraph_memory.catalog import item_rows as _item_rows

    puts, versions = _acked(workers)
    store = _checker(url, server, local)
    try:
        with store.catalog.read() as conn:
            found = {
                it.key: it.value
                for it in _item_rows.get_by_uids(conn, "memories", [_item_rows.item_uid(NAMESPACE, k) for k in puts])
            }
        rows = store.lineage.versions(STRATEGY)
    finally:
        store.close()
    lost = [k for k, n in puts.items() if found.get(k, {}).get("n") != n]
    numbers = [r.version for r in rows]
    by_number = {r.version: r.id for r in rows}
    acked_numbers = [v for v, _ in versions]
    return {
        "acked_puts": len(puts),
        "acked_versions": len(versions),
        "lost": len(lost) + sum(1 for v, i in versions if by_number.get(v) != i),
        "lost_samples": lost[:5],
        "duplicate_versions": len(acked_numbers) - len(set(acked_numbers)) + len(numbers) - len(set(numbers)),
        "version_gaps": (max(numbers) - len(numbers)) if numbers else 0,
        "versions_stored": len(numbers),
        # Stored although the caller saw an error (the commit's answer was lost with the server): not lost.
        "unacknowledged_stored": len(numbers) - len(set(acked_numbers)),
    }


def _errors(workers: list[Worker]) -> dict[str, Any]:
    down = [f for w in workers for f in w.lines if f and f[0] == "down"]
    typed = [f for w in workers for f in w.lines if f and f[0] == "typed"]
    untyped = [f for w in workers for f in w.lines if f and f[0] == "error"]
    return {
        "typed_errors": len(down),
        "other_typed_errors": len(typed),
        "other_typed_samples": [" ".join(f[3:])[:200] for f in typed[:3]],
        "untyped_errors": len(untyped),
        "untyped_samples": [" ".join(f[3:])[:300] for f in untyped[:3]],
        "slowest_error_s": max((float(f[1]) for f in down + typed + untyped), default=0.0),
    }


def pg_drill(args: argparse.Namespace, tmp: Path, server: Any) -> dict[str, Any]:
    from langgraph_memory._infra.pg_cluster import PgCluster, create_database

    cluster = PgCluster.temporary()
    cluster.start()
    rng = random.Random(args.seed)
    recovery: list[float] = []
    try:
        url = create_database(cluster.url)
        _checker(url, server, tmp / "pg-setup").close()  # the schema, once
        workers, stop = _start_workers(args.workers, url, server, tmp, "pg", args.timeout)
        try:
            for _ in range(args.crashes):
                time.sleep(rng.uniform(0.2, 1.5))  # a random point in the writes
                cluster.crash()
                time.sleep(args.down)
                cluster.start()
                back = time.monotonic()
                deadline = back + 120
                firsts = []
                for w in workers:
                    ok = w.wait(lambda w, back=back: any(Worker.at(f) > back for f in w.acks()), deadline)
                    if not ok:
                        raise RuntimeError(f"writer {w.name} did not recover")
                    firsts.append(min(Worker.at(f) for f in w.acks() if Worker.at(f) > back))
                recovery.append(max(firsts) - back)
        finally:
            _stop_workers(workers, stop)
        report = {"crashes": args.crashes, "workers": args.workers, "down_s": args.down}
        report.update(_errors(workers))
        report.update(_verify_catalog(url, server, tmp / "pg-check", workers))
        report["acked"] = report["acked_puts"] + report["acked_versions"]
        report["recovery_s"] = recovery
        report["all_back"] = len(recovery) == args.crashes
    finally:
        cluster.remove()
    return report


def _not_found(url: str, server: Any, local: Path, puts: dict[str, int]) -> int:
    """Acknowledged items whose vector (from the catalog) does not find their own record first on the server."""
    import numpy as np

    from langgraph_memory.catalog import item_rows as _item_rows
    from langgraph_memory.catalog import queue as _queue
    from langgraph_memory.index.chroma import record_id

    store = _checker(url, server, local)
    try:
        with store.catalog.read() as conn:
            stored = _item_rows.get_by_uids(conn, "memories", [_item_rows.item_uid(NAMESPACE, k) for k in puts])
            ids = [int(it.id) for it in stored if it.id is not None]
            vectors = _item_rows.load_vectors(conn, ids)
            name = _queue.chroma_name(conn, "memories")
    finally:
        store.close()
    missing_items = len(puts) - len(ids)
    col = server.client().get_collection(name, embedding_function=None)
    records = [(record_id(i, idx), vec) for i in ids for idx, _path, vec in vectors.get(i, [])]
    bad = 0
    for start in range(0, len(records), 200):
        part = records[start : start + 200]
        q = np.stack([np.frombuffer(v, dtype=np.float32) for _, v in part])
        res = col.query(query_embeddings=q, n_results=1, include=["distances"])
        for (rid, _), top, dist in zip(part, res["ids"], res["distances"], strict=True):
            if not top or (top[0] != rid and dist[0] > 1e-6):
                bad += 1
    return bad + missing_items


def chroma_drill(args: argparse.Namespace, tmp: Path, server: Any) -> dict[str, Any]:
    from langgraph_memory._infra.pg_cluster import PgCluster, create_database

    cluster = PgCluster.temporary()
    cluster.start()
    rng = random.Random(args.seed + 1)
    after: list[dict[str, Any]] = []
    try:
        url = create_database(cluster.url)
        _checker(url, server, tmp / "ch-setup").close()
        workers, stop = _start_workers(args.workers, url, server, tmp, "ch", args.timeout)
        try:
            events = ["kill"] * args.kills + ["empty"]
            for event in events:
                time.sleep(rng.uniform(0.2, 1.5))
                server.kill()
                killed = time.monotonic()
                counts = [len(w.acks()) for w in workers]
                time.sleep(args.down)
                acked_while_down = sum(len(w.acks()) - c for w, c in zip(workers, counts, strict=True))
                server.start(empty=event == "empty")
                back = time.monotonic()
                deadline = back + 120
                serving = []
                for w in workers:  # each writer's index serves again (it caught up by itself)
                    if not w.wait(
                        lambda w, back=back: any(Worker.at(f) > back and f[-1] == "1" for f in w.acks()), deadline
                    ):
                        raise RuntimeError(f"writer {w.name}'s index did not catch up")
                    serving.append(min(Worker.at(f) for f in w.acks() if Worker.at(f) > back and f[-1] == "1"))
                checked_at = time.monotonic()
                puts, _ = _acked(workers, before=min(serving))
                bad = _not_found(url, server, tmp / "ch-check", puts)
                after.append(
                    {
                        "event": "SIGKILL, restart on an empty directory" if event == "empty" else "SIGKILL, restart",
                        "down_s": round(back - killed, 2),
                        "acked_while_down": acked_while_down,
                        "caught_up_s": round(max(serving) - back, 2),
                        "checked": len(puts),
                        "not_found": bad,
                        "check_s": round(time.monotonic() - checked_at, 2),
                    }
                )
        finally:
            _stop_workers(workers, stop)
        report = {"kills": args.kills + 1, "empty_restarts": 1, "workers": args.workers}
        report.update(_errors(workers))
        report.update(_verify_catalog(url, server, tmp / "ch-verify", workers))
        report["after_restart"] = after
    finally:
        cluster.remove()
    return report


def _tables(pg: dict[str, Any], ch: dict[str, Any]) -> tuple[str, str]:
    rec = pg["recovery_s"]
    t1 = markdown_table(
        [
            "PostgreSQL crashes",
            "writers",
            "acknowledged (puts + versions)",
            "lost",
            "duplicate versions",
            "version gaps",
            "typed errors while down",
            "other typed",
            "untyped errors",
            "slowest error s",
            "all working again after restart, s (median / max)",
        ],
        [
            [
                f"{pg['crashes']} x pg_ctl stop -m immediate, {pg['down_s']:g} s down",
                str(pg["workers"]),
                f"{pg['acked']} ({pg['acked_puts']} + {pg['acked_versions']})",
                str(pg["lost"]),
                str(pg["duplicate_versions"]),
                str(pg["version_gaps"]),
                str(pg["typed_errors"]),
                str(pg["other_typed_errors"]),
                str(pg["untyped_errors"]),
                f"{pg['slowest_error_s']:.2f}",
                f"{statistics.median(rec):.2f} / {max(rec):.2f}" if rec else "-",
            ]
        ],
        [False] + [True] * 10,
    )
    t2 = markdown_table(
        [
            "Chroma server",
            "down s",
            "writes acknowledged while down",
            "index caught up s",
            "acknowledged items checked",
            "not found by own vector",
        ],
        [
            [
                r["event"],
                f"{r['down_s']:.1f}",
                str(r["acked_while_down"]),
                f"{r['caught_up_s']:.2f}",
                str(r["checked"]),
                str(r["not_found"]),
            ]
            for r in ch["after_restart"]
        ],
        [False] + [True] * 5,
    )
    return t1, t2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--crashes", type=int, default=10)
    parser.add_argument("--kills", type=int, default=5, help="SIGKILLs of the Chroma server (then one empty restart)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--down", type=float, default=1.5, help="seconds a server stays down")
    parser.add_argument("--timeout", type=float, default=5.0, help="the writers' configured timeout (lock_timeout)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--short", action="store_true", help="2 crashes, 2 kills, 2 writers (the test suite's run)")
    parser.add_argument("--json", type=Path, help="write the report as JSON here")
    parser.add_argument("--results", type=Path, help="write the markdown results here (default for full runs)")
    args = parser.parse_args(argv)
    if args.short:
        args.crashes, args.kills, args.workers, args.down = 2, 1, 2, 1.0
    from bench.common.chroma_server import ChromaServer

    info = machine(["chromadb", "psycopg"])
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lgm-pg-faults-") as tmp_s:
        tmp = Path(tmp_s)
        server = ChromaServer(tmp / "chroma")
        server.start()
        try:
            try:
                pg = pg_drill(args, tmp, server)
            except BaseException as exc:
                if type(exc).__name__ not in ("Skipped", "Failed"):  # pytest's outcomes: no PostgreSQL here
                    raise
                print(f"no PostgreSQL server: {exc}", file=sys.stderr)
                return 3
            ch = chroma_drill(args, tmp, server)
        finally:
            server.stop()
    wall = time.monotonic() - started
    info.load_end = os.getloadavg()
    t1, t2 = _tables(pg, ch)
    print(t1)
    print()
    print(t2)
    print()
    for sample in pg["untyped_samples"] + ch["untyped_samples"] + pg["other_typed_samples"] + ch["other_typed_samples"]:
        print("sample error:", sample)
    print(f"wall {wall:.0f} s; load average {'/'.join(f'{x:.2f}' for x in info.load_end)} at end")
    report = {"postgres": pg, "chroma": ch, "wall_s": wall}
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    results = args.results or (
        None if args.short else Path(__file__).resolve().parents[1] / "results" / "RESULTS_pg_faults.md"
    )
    if results is not None:
        cmd = "python bench/faults/pg_fault_bench.py " + " ".join(argv if argv is not None else sys.argv[1:])
        results.write_text(
            "# Fault bench: PostgreSQL crashes and Chroma server kills (bench/faults/pg_fault_bench.py)\n\n"
            f"Command: `{cmd.strip()}`\n\n"
            + "\n".join(info.lines())
            + f"\n- Load: {args.workers} writer processes per drill, each a Memory on one PostgreSQL database and "
            f"one `chroma run` server, without pause: 70% puts, 30% version bumps of one shared strategy; "
            f"timeout {args.timeout:g} s; each server down {args.down:g} s per fault; wall {wall:.0f} s.\n\n"
            "## PostgreSQL stopped with `pg_ctl stop -m immediate` at random points\n\n"
            + t1
            + "\n\nLost: acknowledged puts missing (or with another value) plus acknowledged versions whose number "
            "holds another id. Typed errors: `ServerUnavailableError`, one per failed call (each writer tries "
            "again every 50 ms while the server is down); 'slowest error': the longest a failed call took. "
            "'All working again': from `pg.sh start` returning to every writer's next acknowledged write. "
            f"Versions stored although the caller saw an error: {pg['unacknowledged_stored']}.\n\n"
            "## Chroma server SIGKILLed, and once restarted on an empty directory\n\n"
            + t2
            + "\n\nAfter each restart, once every writer reported its index serving again (it caught up by itself), "
            "every item acknowledged until then was queried on the server with its own vector (read from the "
            "catalog): 'not found' counts those whose nearest record was another. The check repairs nothing.\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
