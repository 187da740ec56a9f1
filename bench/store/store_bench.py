"""Search latency and recall, and put throughput: ChromaStore against InMemoryStore, SqliteStore and bare Chroma.

Part 1 (issues 9 and 10) feeds every store the same precomputed 384-d vectors
through an ``Embeddings`` that looks them up by text, so no store pays for a
model. The vectors are drawn from a seeded mixture shaped like sentence
embeddings rather than uniform noise: a shared mean direction, 40 topics,
1,000 clusters of uneven size inside them, and a low-rank spread inside each
cluster, so that a query's nearest stored item has cosine ~0.7-0.9 and two
random items ~0.1. At each size N the stores hold three item sets:

* general: N items in namespaces ``("memories", "g<u % 10>", "u<u>")`` of 100
  items each, values ``{"content": text, "kind": kind, "n": i}``; ``kind`` is
  ``"rare"`` for 1% of the items, ``"occasional"`` for 14%, ``"common"`` for
  50% and ``"other"`` for the rest. Namespaces and kinds are assigned at
  random, independent of the vectors' clusters.
* typed: N items in the typed collection ``("research",)``, values
  ``{"content": text, "confidence": c}`` (the put rate is measured
  on this set, put first into a fresh store, as the earlier bench did).
* three fields: N/10 items under ``("docs", "s<i % 100>")``, put with
  ``index=["title", "body", "tags"]``: three vectors per item (drawn from one
  cluster), an item scoring by the best of its three.

Search cases, each with its own queries: one namespace of 100 items (a
random one per query); a prefix holding 10% (``("memories", "g<j % 10>")``);
the whole prefix ``("memories",)``; the whole prefix with the value filters
``{"kind": "rare"}`` (1%), ``{"kind": "occasional"}`` (14%) and
``{"kind": "common"}`` (50%); the typed collection; the three-field items.
At the big size (1,000,000 items) only the general set is built and only the
one-namespace and whole-prefix cases run. Half the queries of a case mix a
random matching item's vector with a fresh draw from its cluster (cosine ~0.87
to it: a question about something stored), half are fresh draws from the
mixture (a question about anything).

Stores: ChromaStore; LangGraph's InMemoryStore; LangGraph's SqliteStore
(sqlite-vec); bare Chroma holding the same vectors in the same collections
(the general and three-field sets in one, the typed set in another, as
ChromaStore lays them out), queried unfiltered (the floor) and with the
``where`` equivalent to each case. ChromaStore and the floor are timed
interleaved, query by query, rotating which goes first, so load drift hits
them alike; the ``where`` queries, InMemoryStore and SqliteStore (slow, brute
force for the last two) run alone afterwards, with a time budget per case.
Before each case the searched files are read through the page cache (this
machine pages out file pages left idle for a minute); the one-namespace case
is also probed with ChromaStore's catalog evicted. Recall@10 is the share of
the exact top 10 (numpy, over the case's matching items, max over an item's
vectors) that a store returns; for the floor, of the exact top 10 records of
the whole collection.

Part 2 runs the real default model (all-MiniLM-L6-v2) and measures the share
of ChromaStore's put time spent outside the model, at two text lengths.

LangGraph's SqliteStore needs ``sqlite3`` that can load extensions (for
sqlite-vec); this machine's stdlib ``sqlite3`` cannot, so the bench opens
SqliteStore's connection with ``pysqlite3`` (``pip install pysqlite3-binary``)
or ``sqlean`` (``pip install sqlean.py``) when either is installed, and says
so in the table when none is.

    python bench/store/store_bench.py                           # 10,000, 100,000 and 1,000,000 items, and the model
    python bench/store/store_bench.py --sizes 10000,100000 --skip-model
    python bench/store/store_bench.py --quick                   # 10,000 items, few queries: 1-2 minutes
    python bench/store/store_bench.py --write                   # also write bench/results/RESULTS_store.md
    python bench/store/store_bench.py --backend postgres --sizes 10000   # on PostgreSQL vs PostgresStore (_postgres.py)
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the checkout: its langgraph_memory and bench.common

from bench.common.items import (
    BIG,
    DIMS,
    NAMESPACE,
    Case,
    Data,
    K,
    Query,
    build_data,
    make_texts,
)
from bench.common.report import Stopwatch, fmt_ms, fmt_rate, git_state, machine, markdown_table, percentile
from bench.store._postgres import main as pg_main
from bench.store._stores import (
    BareChroma,
    StoreBackend,
    Timing,
    extension_sqlite,
    open_chromastore,
    open_inmemory,
    open_sqlite,
    release_chroma,
)

RESULTS_PATH = ROOT / "bench" / "results" / "RESULTS_store.md"

# Targets (issues 9 and 10).
MAX_VS_FLOOR = 2.0  # every case: ChromaStore p50 / bare unfiltered Chroma p50 at the same size
MAX_NS_GROWTH = 1.5  # one-namespace p50 at the largest size / at the smallest
MIN_VS_PEERS = 10.0  # InMemoryStore and SqliteStore p50 / ChromaStore's, where the searched set >= PEER_SCOPE
PEER_SCOPE = 10_000
MIN_RECALL = 0.95
MIN_PUT_RATE = {10_000: 2_094.0, 100_000: 1_096.0}  # items/s, typed set, batches of 1000 (the catalog issue's rates)
MAX_OUTSIDE_MODEL = {"100-200": 0.15, "400-600": 0.10}  # share of put time outside the model, by text length

STORES = ("chromastore", "floor", "where", "inmemory", "sqlite")
STORE_TITLES = {
    "chromastore": "ChromaStore",
    "floor": "bare Chroma (floor)",
    "where": "bare Chroma + where",
    "inmemory": "InMemoryStore",
    "sqlite": "SqliteStore",
}


@dataclass
class CaseRow:
    """What the table says about a case (the case's data is freed after its size ran)."""

    name: str
    scope: int
    matches: int


@dataclass
class SizeResult:
    n: int
    big: bool
    cases: list[CaseRow]
    search: dict[tuple[str, str], Timing] = field(default_factory=dict)  # (case, store)
    puts: dict[tuple[str, str], float | str] = field(default_factory=dict)  # (item set, store) -> items/s or why not
    plans: dict[str, str] = field(default_factory=dict)  # case -> ChromaStore's plan
    plan_details: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    set_sizes: dict[str, int] = field(default_factory=dict)


def rss_bytes() -> int:
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except ImportError:  # Linux without psutil
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def available_bytes() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:
        return None


class OutOfMemory(Exception):
    pass


def load(
    backend: Any,
    title: str,
    data: Data,
    res: SizeResult,
    store: str,
    *,
    batch: int,
    log: Callable,
    reserve: int | None = None,
) -> None:
    """Put every item set through ``backend`` in batches, timing each set (typed first, into a fresh store)."""
    order = sorted(data.sets, key=lambda s: s.name != "typed")
    for s in order:
        sw = Stopwatch()
        n = len(s)
        for start in range(0, n, batch):
            if reserve is not None and (avail := available_bytes()) is not None and avail < reserve:
                raise OutOfMemory(
                    f"{avail / 2**30:.1f} GB of RAM left after {start:,} {s.name} items "
                    f"(process RSS {rss_bytes() / 2**30:.1f} GB)"
                )
            with sw:
                backend.put(s, range(start, min(n, start + batch)))
        res.puts[(s.name, store)] = n / sw.seconds
        log(f"  {title}: put {n:,} {s.name} items in {sw.seconds:.1f} s ({n / sw.seconds:,.0f} items/s)")


@dataclass
class Runner:
    store: str
    search: Callable[[Query], list[str]]
    truth: str  # the Query attribute holding its exact answer: "exact" or "floor_exact"


def run_interleaved(runners: list[Runner], case: Case, res: SizeResult) -> None:
    """Every runner answers every query of the case, query by query, rotating which goes first."""
    for r in runners:
        for q in case.warmup:
            r.search(q)
    timings = [res.search.setdefault((case.name, r.store), Timing()) for r in runners]
    for j, q in enumerate(case.queries):
        rot = j % len(runners)
        for x in [*range(rot, len(runners)), *range(rot)]:
            r, t = runners[x], timings[x]
            t0 = time.perf_counter()
            got = r.search(q)
            t.add((time.perf_counter() - t0) * 1000.0, got, getattr(q, r.truth))


def run_alone(
    store: str, search: Callable[[Query], list[str]], case: Case, res: SizeResult, *, seconds: float, min_queries: int
) -> None:
    """A slow search alone: the case's queries until its time budget is spent (at least ``min_queries``)."""
    for q in case.warmup[:2]:
        search(q)
    t = res.search.setdefault((case.name, store), Timing())
    spent = 0.0
    for q in case.queries:
        if len(t.lat) >= min_queries and spent >= seconds:
            break
        t0 = time.perf_counter()
        got = search(q)
        ms = (time.perf_counter() - t0) * 1000.0
        spent += ms / 1000.0
        t.add(ms, got, q.exact)


class _PlanCatcher(logging.Handler):
    """Collects the plans ChromaStore logs (at debug level) for the searches it ran."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.plans: list[Any] = []

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        if args and hasattr(args[-1], "strategy"):
            self.plans.append(args[-1])


def describe_plans(cs: StoreBackend, case: Case, sample: int = 20) -> tuple[str, str]:
    """ChromaStore's plan for the case: ``explain``'s strategy, and what the searches did (untimed re-runs)."""
    strategies = Counter(cs.store.explain(q.prefix, query="x", filter=q.filter, limit=K).strategy for q in case.queries)
    total = sum(strategies.values())
    plan = " / ".join(s if c == total else f"{s} {100 * c / total:.0f}%" for s, c in strategies.most_common())
    log = logging.getLogger("langgraph_memory.store.searching")
    catcher, level = _PlanCatcher(), log.level
    log.addHandler(catcher)
    log.setLevel(logging.DEBUG)
    try:
        for q in case.queries[:sample]:
            cs.search(q)
    finally:
        log.removeHandler(catcher)
        log.setLevel(level)
    ran = catcher.plans
    if not ran:
        return plan, ""
    parts = [f"{c}x {s}" for s, c in Counter(p.strategy for p in ran).most_common()]
    fetches = [p.fetch for p in ran if p.fetch]
    if fetches:
        parts.append(f"HNSW n_results median {percentile(fetches, 50):.0f}, max {max(fetches)}")
        parts.append(f"rounds max {max(p.rounds for p in ran)}")
    notes = Counter(n for p in ran for n in p.notes)
    parts.extend(f"{c}x '{n}'" for n, c in notes.most_common(2))
    return plan, f"{len(ran)} searches re-run: " + ", ".join(parts)


def warm(files: Sequence[Path]) -> tuple[int, float]:
    """Read files (and their ``-wal``) through the page cache; return bytes and seconds.

    Some machines page out file pages left idle for a while (this one runs
    DAMON reclaim: file pages idle for ~60 s are paged out), so a store
    file written minutes earlier may be back on disk when its searches start.
    Stores whose data lives in files (ChromaStore's catalog, SqliteStore)
    would then pay disk reads that InMemoryStore and Chroma's in-memory HNSW
    never do; each case starts from the page cache instead, and
    :func:`cold_probe` measures the cold case on its own.
    """
    t0 = time.perf_counter()
    total = 0
    buf = bytearray(16 * 2**20)
    for f in files:
        for path in (f, f.with_name(f.name + "-wal")):
            try:
                with open(path, "rb", buffering=0) as fh:
                    while n := fh.readinto(buf):
                        total += n
            except FileNotFoundError:
                continue
    return total, time.perf_counter() - t0


def evict(files: Sequence[Path]) -> None:
    """Drop files' clean pages from the page cache (``POSIX_FADV_DONTNEED``; these files only)."""
    for f in files:
        for path in (f, f.with_name(f.name + "-wal")):
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def cold_probe(cs: StoreBackend, case: Case, files: Sequence[Path], n: int) -> str:
    """ChromaStore on the case's probe queries with its catalog evicted from the page cache first.

    The store keeps its own SQLite page cache, as a process that sat idle
    would; the probe asks about namespaces the timed queries did not touch.
    """
    if not hasattr(os, "posix_fadvise"):
        return f"{n:,} items: cold-catalog probe skipped (no posix_fadvise here)."
    evict(files)
    lat = []
    for q in case.probe:
        t0 = time.perf_counter()
        cs.search(q)
        lat.append((time.perf_counter() - t0) * 1000.0)
    warm(files)
    return (
        f"{n:,} items: ChromaStore {case.name}, catalog evicted from the page cache first: first query "
        f"{fmt_ms(lat[0])} ms, p50 {fmt_ms(percentile(lat, 50))} ms over {len(lat)} queries of namespaces "
        "not searched before (as after the file sat idle long enough to be paged out)."
    )


# ------------------------------------------------------------------ running


def run_size(n: int, args: argparse.Namespace, log: Callable) -> SizeResult:
    big = n == args.big
    t0 = time.perf_counter()
    data = build_data(n, big=big, n_queries=args.queries, warmup=args.warmup, seed=args.seed)
    # The data's millions of objects leave the collector's view: a full collection would otherwise
    # walk them in the middle of some store's timed query.
    gc.collect()
    gc.freeze()
    log(
        f"[{n:,} items] data built in {time.perf_counter() - t0:.1f} s: "
        + ", ".join(f"{s.name} {len(s):,} items" for s in data.sets)
        + f"; {len(data.cases)} cases x {args.queries} queries"
    )
    res = SizeResult(
        n, big, [CaseRow(c.name, c.scope, c.matches) for c in data.cases], set_sizes={s.name: len(s) for s in data.sets}
    )
    load_avg = "/".join(f"{x:.2f}" for x in os.getloadavg())
    tmp = Path(tempfile.mkdtemp(prefix=f"store_bench_{n}_"))
    try:
        if {"chromastore", "bare"} & set(args.backends):
            _run_chroma_group(data, res, tmp, args, log)
        if "inmemory" in args.backends:
            _run_brute("inmemory", open_inmemory, data, res, tmp, args, log)
        if "sqlite" in args.backends:
            _run_brute("sqlite", open_sqlite, data, res, tmp, args, log)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        del data
        gc.unfreeze()
        gc.collect()
    res.notes.append(
        f"{n:,} items: load average {load_avg} when this size started, "
        + "/".join(f"{x:.2f}" for x in os.getloadavg())
        + " when it ended."
    )
    return res


def _run_chroma_group(data: Data, res: SizeResult, tmp: Path, args: argparse.Namespace, log: Callable) -> None:
    """ChromaStore and bare Chroma loaded side by side, queried interleaved."""
    cs: StoreBackend | None = None
    bare: BareChroma | None = None
    try:
        if "chromastore" in args.backends:
            cs = open_chromastore(data, tmp)
            load(cs, "ChromaStore", data, res, "chromastore", batch=args.batch, log=log)
        if "bare" in args.backends:
            bare = BareChroma(data, tmp)
            load(bare, "bare Chroma", data, res, "floor", batch=args.batch, log=log)
        if cs is not None:
            # The searches time the store's search paths, so they start once its index holds every vector: a
            # catch-up pass's Chroma upserts hold the GIL, and in two runs at 100,000 items the first case's
            # searches took 6-114 ms instead of 1-2 ms on both sides. Searches while a load is still being
            # indexed are bulk_load_bench's "search while pending".
            sw = Stopwatch()
            with sw:
                cs.store.wait_for_index()
            res.notes.append(f"{res.n:,} items: ChromaStore's index caught up {sw.seconds:.1f} s after the loads.")
            log(f"  ChromaStore: index caught up {sw.seconds:.1f} s after the loads")
        files = []
        if cs is not None:
            files.append(Path(cs.store.settings.catalog_path))
        if bare is not None:
            files.append(tmp / "bare" / "chroma.sqlite3")
        for case in data.cases:
            warmed = warm(files)
            log(f"  {case.name}: read {warmed[0] / 2**20:,.0f} MB of files into the page cache in {warmed[1]:.1f} s")
            runners: list[Runner] = []
            coll = case.items.collection
            if cs is not None:
                runners.append(Runner("chromastore", cs.search, "exact"))
            if bare is not None:
                b = bare
                runners.append(Runner("floor", lambda q, b=b, c=coll: b.floor(q, c), "floor_exact"))
            run_interleaved(runners, case, res)
            if cs is not None:
                res.plans[case.name], res.plan_details[case.name] = describe_plans(cs, case)
                if case is data.cases[0]:
                    res.notes.append(cold_probe(cs, case, files[:1], res.n))
            if bare is not None and case.queries[0].where is None:
                res.search[(case.name, "where")] = Timing(note="= floor (no where needed)")
            elif bare is not None:
                # Alone, after the others: 10-200 ms queries that would slow whatever ran next
                # (measured: ChromaStore's one-namespace p50 0.78 ms alone, 1.79 ms right after a where query).
                run_alone(
                    "where",
                    lambda q, b=bare, c=coll: b.where(q, c),
                    case,
                    res,
                    seconds=args.brute_seconds,
                    min_queries=args.brute_min,
                )
            log(
                "  "
                + case.name
                + ": "
                + ", ".join(
                    f"{store} p50 {fmt_ms(t.p50)} ms recall {t.recall:.3f}"
                    for store in STORES
                    if (t := res.search.get((case.name, store))) and t.lat and t.recall is not None
                )
                + (f"; plan {res.plans[case.name]}" if case.name in res.plans else "")
            )
    finally:
        if cs is not None:
            cs.close()
        del bare
        release_chroma()


def _short_of_ram(case: Case, args: argparse.Namespace) -> str | None:
    """Why InMemoryStore's search of ``case`` would not fit in RAM, if it would not: each query copies every
    matching vector into a float64 array (3 GB at 1,000,000 items; a quarter more for its temporaries), on top
    of the reserve."""
    need = int(case.matches * DIMS * 8 * 1.25) + int(args.reserve_gb * 2**30)
    avail = available_bytes()
    if avail is None or avail >= need:
        return None
    return f"a query needs about {need / 2**30:.1f} GB and {avail / 2**30:.1f} GB is left"


def _run_brute(
    store: str,
    opener: Callable[[Data, Path], StoreBackend | str],
    data: Data,
    res: SizeResult,
    tmp: Path,
    args: argparse.Namespace,
    log: Callable,
) -> None:
    """InMemoryStore or SqliteStore alone: their scans leave BLAS threads spinning and caches cold for
    whatever runs next (measured: a bare Chroma query interleaved with InMemoryStore's went from 1.3 to 6 ms)."""
    title = STORE_TITLES[store]
    gc.collect()
    rss0 = rss_bytes()
    made = opener(data, tmp)
    if isinstance(made, str):
        log(f"  {title}: {made}")
        for s in data.sets:
            res.puts[(s.name, store)] = made
        return
    try:
        try:
            reserve = int(args.reserve_gb * 2**30) if store == "inmemory" else None
            load(made, title, data, res, store, batch=args.batch, log=log, reserve=reserve)
        except OutOfMemory as exc:
            why = f"not run: out of RAM while loading ({exc})"
            log(f"  {title}: {why}")
            res.notes.append(f"{res.n:,} items: {title} {why}.")
            for s in data.sets:
                res.puts.setdefault((s.name, store), "out of RAM")
            for c in data.cases:
                res.search[(c.name, store)] = Timing(note="out of RAM")
            return
        grown = rss_bytes() - rss0
        res.notes.append(f"{res.n:,} items: {title} loaded: process RSS +{grown / 2**30:.2f} GB.")
        log(f"  {title}: RSS +{grown / 2**30:.2f} GB")
        files = [tmp / "store.sqlite"] if store == "sqlite" else []
        for case in data.cases:
            if store == "inmemory" and (short := _short_of_ram(case, args)):
                log(f"  {case.name}: {store} not run: {short}")
                res.search[(case.name, store)] = Timing(note="out of RAM")
                res.notes.append(f"{res.n:,} items: {title}'s {case.name} not run: {short}.")
                continue
            warm(files)
            run_alone(store, made.search, case, res, seconds=args.brute_seconds, min_queries=args.brute_min)
            t = res.search[(case.name, store)]
            log(f"  {case.name}: {store} p50 {fmt_ms(t.p50)} ms over {len(t.lat)} queries, recall {t.recall:.3f}")
    finally:
        made.close()
        del made
        gc.collect()


# ------------------------------------------------------------------ output

HEADER = [
    "Items",
    "Case",
    "Searched / matching",
    "Plan",
    "ChromaStore",
    "Chroma floor",
    "Chroma + where",
    "InMemoryStore",
    "SqliteStore",
    "R@10 CS",
    "R@10 floor",
    "R@10 where",
    "R@10 IM",
    "R@10 SQ",
    "CS / floor",
    "IM / CS",
    "SQ / CS",
]
RIGHT = [True, False, True, False, *([True] * 13)]
_STORE_COLS = ("chromastore", "floor", "where", "inmemory", "sqlite")


def _cell(t: Timing | None, main_queries: int) -> str:
    if t is None:
        return "-"
    if not t.lat:
        return t.note or "-"
    s = f"{fmt_ms(t.p50)} / {fmt_ms(t.p95)}"
    return s + (f" ({len(t.lat)} q)" if len(t.lat) < main_queries else "")


def _ratio(a: float | None, b: float | None, fmt: str) -> str:
    return "-" if a is None or b is None or not b else format(a / b, fmt) + "x"


def table_rows(results: list[SizeResult], main_queries: int) -> list[list[str]]:
    rows: list[list[str]] = []
    for r in results:
        for name, size in sorted(r.set_sizes.items(), key=lambda kv: kv[0] != "typed"):
            cells = []
            for store in _STORE_COLS:
                v = r.puts.get((name, "floor" if store == "where" else store))
                if store == "where":
                    cells.append("(same load)" if v is not None else "-")
                else:
                    cells.append("-" if v is None else (f"{fmt_rate(v)} /s" if isinstance(v, float) else v))
            rows.append([f"{r.n:,}", f"puts, {name}", f"{size:,} items", "", *cells, *["-"] * 8])
        for c in r.cases:
            t = {s: r.search.get((c.name, s)) for s in _STORE_COLS}
            p50 = {s: (t[s].p50 if t[s] is not None else None) for s in _STORE_COLS}
            scope = f"{c.scope:,}" + (f" / {c.matches:,}" if c.matches != c.scope else "")
            rows.append(
                [
                    f"{r.n:,}",
                    c.name,
                    scope,
                    r.plans.get(c.name, "-"),
                    *(_cell(t[s], main_queries) for s in _STORE_COLS),
                    *(
                        f"{t[s].recall:.3f}" if t[s] is not None and t[s].recall is not None else "-"
                        for s in _STORE_COLS
                    ),
                    _ratio(p50["chromastore"], p50["floor"], ".2f"),
                    _ratio(p50["inmemory"], p50["chromastore"], ",.1f"),
                    _ratio(p50["sqlite"], p50["chromastore"], ",.1f"),
                ]
            )
    return rows


def model_table_rows(rows: list[Row]) -> list[list[str]]:
    return [[f"{r.items:,}", r.backend, fmt_rate(r.put_rate), r.ratio] for r in rows]


def print_table(results: list[SizeResult], model_rows: list[Row], title: str, main_queries: int) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=320)
    t = Table(title=title)
    for h, right in zip(HEADER, RIGHT, strict=False):
        t.add_column(h, justify="right" if right else "left", no_wrap=True)
    rows = table_rows(results, main_queries)
    for i, cells in enumerate(rows):
        t.add_row(*cells, end_section=i + 1 < len(rows) and rows[i + 1][0] != cells[0])
    console.print(t)
    if model_rows:
        m = Table(title="Puts with the real model (all-MiniLM-L6-v2)")
        for h in MODEL_HEADER:
            m.add_column(h)
        for cells in model_table_rows(model_rows):
            m.add_row(*cells)
        console.print(m)


MODEL_HEADER = ["Texts", "What", "Items/s", "Ratio"]


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def targets(results: list[SizeResult], model_rows: list[Row]) -> list[str]:
    """One PASS/MISS line per target and size, naming the cases that miss and by how much."""
    out: list[str] = []
    for r in results:

        def p50(case: str, store: str, r: SizeResult = r) -> float | None:
            t = r.search.get((case, store))
            return t.p50 if t is not None else None

        at = f"{r.n:,} items"
        # Every case at most 2x the bare unfiltered query.
        ratios = [
            (c.name, p50(c.name, "chromastore") / f)
            for c in r.cases
            if p50(c.name, "chromastore") and (f := p50(c.name, "floor"))
        ]
        if ratios:
            bad = [(n, x) for n, x in ratios if x > MAX_VS_FLOOR]
            worst = max(ratios, key=lambda nx: nx[1])
            out.append(
                f"- {_verdict(not bad)}: search at {at}, ChromaStore p50 <= {MAX_VS_FLOOR:g}x bare unfiltered "
                f"Chroma in every case: "
                + (
                    "; ".join(f"{n} {x:.2f}x" for n, x in bad) + f" over ({len(bad)} of {len(ratios)} cases)"
                    if bad
                    else f"worst {worst[0]} {worst[1]:.2f}x"
                )
            )
        # One namespace no slower than InMemoryStore.
        one = r.cases[0].name
        cs, im = p50(one, "chromastore"), p50(one, "inmemory")
        if cs and im:
            out.append(
                f"- {_verdict(cs <= im)}: {one} at {at}, ChromaStore {fmt_ms(cs)} ms vs InMemoryStore "
                f"{fmt_ms(im)} ms ({cs / im:.2f}x; target <= 1x)"
            )
        # >= 10x the brute-force stores where the searched set holds >= 10,000 items.
        for peer in ("inmemory", "sqlite"):
            xs = [
                (c.name, pp / cc)
                for c in r.cases
                if c.scope >= PEER_SCOPE and (cc := p50(c.name, "chromastore")) and (pp := p50(c.name, peer))
            ]
            if xs:
                bad = [(n, x) for n, x in xs if x < MIN_VS_PEERS]
                least = min(xs, key=lambda nx: nx[1])
                out.append(
                    f"- {_verdict(not bad)}: search at {at}, ChromaStore >= {MIN_VS_PEERS:g}x faster than "
                    f"{STORE_TITLES[peer]} where {PEER_SCOPE:,}+ items are searched: "
                    + (
                        "; ".join(f"{n} {x:.2f}x" for n, x in bad) + f" short ({len(bad)} of {len(xs)} cases)"
                        if bad
                        else f"least {least[0]} {least[1]:,.1f}x"
                    )
                )
        # Recall.
        recalls = [
            (c.name, t.recall) for c in r.cases if (t := r.search.get((c.name, "chromastore"))) and t.recall is not None
        ]
        if recalls:
            bad = [(n, x) for n, x in recalls if x < MIN_RECALL]
            low = min(recalls, key=lambda nx: nx[1])
            out.append(
                f"- {_verdict(not bad)}: ChromaStore recall@{K} >= {MIN_RECALL} in every case at {at}: "
                + ("; ".join(f"{n} {x:.3f}" for n, x in bad) if bad else f"lowest {low[0]} {low[1]:.3f}")
            )
        # Puts.
        rate = r.puts.get(("typed", "chromastore"))
        if isinstance(rate, float) and r.n in MIN_PUT_RATE:
            want = MIN_PUT_RATE[r.n]
            out.append(
                f"- {_verdict(rate >= want)}: ChromaStore puts at {at} (typed set, precomputed vectors): "
                f"{rate:,.0f} items/s (target >= {want:,.0f}, the rate after the catalog issue)"
            )
    # One namespace flat from the smallest size to the largest.
    grown = [(r.n, t.p50) for r in results if (t := r.search.get((r.cases[0].name, "chromastore"))) and t.p50]
    if len(grown) > 1:
        (n0, p0), (n1, p1) = min(grown), max(grown)
        out.append(
            f"- {_verdict(p1 / p0 <= MAX_NS_GROWTH)}: one-namespace search {n0:,} -> {n1:,} items: "
            f"{fmt_ms(p0)} -> {fmt_ms(p1)} ms ({p1 / p0:.2f}x; target <= {MAX_NS_GROWTH}x up to {BIG:,})"
        )
    for r in model_rows:
        if "ok" in r.extra:
            x = r.extra
            out.append(
                f"- {_verdict(x['ok'])}: store overhead on top of the model, {x['chars']}-character texts: "
                f"{100 * x['outside']:.1f}% of ChromaStore's put time is spent outside the model "
                f"(target <= {100 * x['max']:.0f}%; {x['ms_outside']:.2f} ms per item against {x['ms_model']:.2f} ms "
                f"in the model; {100 * x['first']:.1f}% is the first batch, which opens Chroma and creates the "
                f"collections). Put throughput vs the model alone: {x['x']:.3f} (a ratio of two separately timed "
                "runs, so load noise moves it more than the overhead does)"
            )
    return out


# ------------------------------------------------------------- real model


@dataclass
class Row:
    items: int
    backend: str
    put_rate: float | None = None
    ratio: str = ""
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def run_model(args: argparse.Namespace, log: Callable) -> list[Row]:
    """The real model: ChromaStore put (cold cache) vs the model's own embed_documents, per text length."""
    from langgraph_memory.store import ChromaStore

    index = ChromaStore.default_index()
    emb = index["embed"]  # one model object for both sides
    t0 = time.perf_counter()
    emb.embed_documents(make_texts(64, args.seed + 2, prefix="warm"))  # loads torch and the weights
    log(f"[model] loaded in {time.perf_counter() - t0:.1f} s")
    rows: list[Row] = []
    for k, (lo, hi) in enumerate(args.model_lengths):
        rows.extend(_run_model_lengths(args, log, index, lo, hi, seed=args.seed + 10 * (k + 1)))
    return rows


def _run_model_lengths(
    args: argparse.Namespace, log: Callable, index: Any, lo: int, hi: int, *, seed: int
) -> list[Row]:
    """One text length: ``model_rounds`` rounds of ``model_texts`` new texts each, one store throughout."""
    from langgraph.store.base import PutOp

    from langgraph_memory.store import ChromaStore

    emb = index["embed"]
    n = args.model_texts
    rounds = [make_texts(n, seed + r, lo=lo, hi=hi, prefix=f"r{r}.") for r in range(args.model_rounds)]
    t0 = time.perf_counter()
    for s in range(0, n, args.model_batch):  # untimed: torch warms up on texts of this length
        emb.embed_documents(make_texts(args.model_batch, seed - 1, lo=lo, hi=hi, prefix=f"w{s}."))
    log(
        f"[model] {lo}-{hi} chars: warmed in {time.perf_counter() - t0:.1f} s; {args.model_rounds} rounds of "
        f"{n} new texts, batches of {args.model_batch}"
    )
    # Time every model call, including the ones ChromaStore makes inside its puts:
    # the store's own share of a put is then measured directly, free of the
    # model's run-to-run noise. (An instance attribute, so the object keeps its type.)
    in_model = Stopwatch()
    model_call = emb.embed_documents

    def timed_embed(batch_texts: list[str]) -> list[list[float]]:
        with in_model:
            return model_call(batch_texts)

    emb.embed_documents = timed_embed  # type: ignore[method-assign]
    t_model = Stopwatch()
    t_store = Stopwatch()
    model_in_store = 0.0
    first_outside = 0.0  # store time outside the model in the first batch (opens Chroma, creates collections)
    fractions: list[float] = []
    tmp = Path(tempfile.mkdtemp(prefix="store_bench_model_"))
    try:
        # One store for all rounds, as an agent keeps its store open; every text
        # is new to it, so the embedding cache never hits.
        store = ChromaStore(data_dir=tmp, index=index)
        for r, texts in enumerate(rounds):
            # Model and store alternate batch by batch (and which goes first alternates too),
            # so load drift on a shared machine hits both alike.
            m0, s0 = t_model.seconds, t_store.seconds
            for b, s in enumerate(range(0, n, args.model_batch)):
                chunk = texts[s : s + args.model_batch]
                ops = [
                    PutOp(NAMESPACE, f"m{r}.{s + i:06d}", {"content": t, "confidence": 0.5})
                    for i, t in enumerate(chunk)
                ]
                for which in (0, 1) if (b + r) % 2 == 0 else (1, 0):
                    if which == 0:
                        with t_model:
                            emb.embed_documents(chunk)
                    else:
                        before, t_before = in_model.seconds, t_store.seconds
                        with t_store:
                            store.batch(ops)
                        model_in_store += in_model.seconds - before
                        if b == 0 and r == 0:
                            first_outside = (t_store.seconds - t_before) - (in_model.seconds - before)
            dm, ds = t_model.seconds - m0, t_store.seconds - s0
            fractions.append(dm / ds)
            log(f"  round {r + 1}: model {n / dm:.1f} texts/s, ChromaStore put {n / ds:.1f} items/s ({dm / ds:.3f})")
        cache = store.cached_embeddings
        assert cache is not None and cache.misses == n * len(rounds), "cache was not cold"
        store.close()
        release_chroma()
    finally:
        emb.embed_documents = model_call  # type: ignore[method-assign]
        shutil.rmtree(tmp, ignore_errors=True)
    total = n * len(rounds)
    frac = t_model.seconds / t_store.seconds  # = store throughput / model throughput, pooled over rounds
    outside = 1.0 - model_in_store / t_store.seconds
    outside_steady = (t_store.seconds - model_in_store - first_outside) / t_store.seconds
    log(
        f"  time outside the model: {100 * outside:.1f}% of ChromaStore's put time; first batch (opens Chroma, "
        f"creates collections) {100 * first_outside / t_store.seconds:.1f}%, the rest {100 * outside_steady:.1f}%"
    )
    ms_model = 1000 * model_in_store / total
    ms_outside = 1000 * (t_store.seconds - model_in_store) / total
    chars = f"{lo}-{hi}"
    limit = MAX_OUTSIDE_MODEL.get(chars, min(MAX_OUTSIDE_MODEL.values()))
    note = (
        f"{chars} chars; rounds: {', '.join(f'{f:.3f}' for f in fractions)}; per item: model {ms_model:.2f} ms, "
        f"store outside the model {ms_outside:.2f} ms"
    )
    return [
        Row(
            total,
            f"all-MiniLM-L6-v2 embed_documents alone, {chars} chars",
            put_rate=total / t_model.seconds,
            ratio=f"{len(rounds)} rounds pooled",
        ),
        Row(
            total,
            f"ChromaStore + all-MiniLM-L6-v2 (cold cache), {chars} chars",
            put_rate=total / t_store.seconds,
            ratio=f"{frac:.3f} of model throughput; {100 * outside:.1f}% of put time outside the model "
            f"(target <= {100 * limit:.0f}%) {_verdict(outside <= limit)}",
            note=note,
            extra={
                "ok": outside <= limit,
                "max": limit,
                "x": frac,
                "outside": outside,
                "first": first_outside / t_store.seconds,
                "chars": chars,
                "ms_model": ms_model,
                "ms_outside": ms_outside,
            },
        ),
    ]


# -------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--sizes",
        default=None,
        help=f"item counts, comma separated (default 10000,100000,{BIG}; --quick 10000); "
        f"at {BIG:,} only the one-namespace and whole-prefix cases run",
    )
    p.add_argument("--queries", type=int, default=None, help="timed queries per case (default 100; --quick 20)")
    p.add_argument(
        "--warmup", type=int, default=None, help="untimed queries per case and store first (default 5; --quick 3)"
    )
    p.add_argument(
        "--brute-seconds",
        type=float,
        default=None,
        help="InMemoryStore, SqliteStore and bare Chroma + where (run alone): stop a case's queries after "
        "this many seconds (default 30; --quick 5), once --brute-min ran",
    )
    p.add_argument(
        "--brute-min", type=int, default=10, help="fewest timed queries for a brute-force store (default 10)"
    )
    p.add_argument("--batch", type=int, default=1000, help="ops per store.batch (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--backends",
        default="chromastore,bare,inmemory,sqlite",
        help="subset of chromastore,bare,inmemory,sqlite (bare = the floor and the where queries)",
    )
    p.add_argument(
        "--reserve-gb",
        type=float,
        default=2.0,
        help="stop loading InMemoryStore when less RAM than this is left (default 2)",
    )
    p.add_argument(
        "--model-texts", type=int, default=None, help="texts for the real-model part (default 1000; --quick 200)"
    )
    p.add_argument(
        "--model-rounds", type=int, default=None, help="alternating model/store rounds (default 5; --quick 1)"
    )
    p.add_argument(
        "--model-batch",
        type=int,
        default=100,
        help="texts per embed_documents call and ops per store.batch in the model part (default 100)",
    )
    p.add_argument(
        "--model-lengths",
        default="100-200,400-600",
        help="text lengths in characters for the real-model part (default 100-200,400-600)",
    )
    p.add_argument("--skip-model", action="store_true", help="skip the real-model part")
    p.add_argument(
        "--quick", action="store_true", help="smoke run: 10,000 items, 20 queries per case, 200 model texts, 1 round"
    )
    p.add_argument(
        "--write",
        nargs="?",
        const=str(RESULTS_PATH),
        default=None,
        metavar="PATH",
        help="also write the tables as markdown (default bench/results/RESULTS_store.md)",
    )
    # Hidden: run the big-size code path (two cases, general set only) at N items instead of 1,000,000.
    p.add_argument("--big", type=int, default=BIG, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for name, full, quick in (
        ("sizes", f"10000,100000,{BIG}", "10000"),
        ("queries", 100, 20),
        ("warmup", 5, 3),
        ("brute_seconds", 30.0, 5.0),
        ("model_texts", 1000, 200),
        ("model_rounds", 5, 1),
    ):
        if getattr(args, name) is None:  # --quick changes the defaults only; explicit options win
            setattr(args, name, quick if args.quick else full)
    try:
        args.model_lengths = [
            tuple(int(x) for x in part.split("-", 1)) for part in args.model_lengths.split(",") if part.strip()
        ]
        sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        p.error("--sizes takes numbers like 10000,100000; --model-lengths ranges like 100-200,400-600")
    args.sizes_list = [args.big if s == BIG else s for s in sizes]
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(args.backends) - {"bare", "chromastore", "inmemory", "sqlite"})
    if unknown:
        p.error(f"unknown backend(s) {', '.join(unknown)}; choose from chromastore, bare, inmemory, sqlite")
    args.batch = max(1, args.batch)
    args.queries = max(1, args.queries)
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--backend" in argv or any(a.startswith("--backend=") for a in argv):
        # --backend postgres: the catalog on a PostgreSQL server against LangGraph's PostgresStore there.
        p = argparse.ArgumentParser(add_help=False)
        p.add_argument("--backend", choices=("embedded", "postgres"), default="embedded")
        known, rest = p.parse_known_args(argv)
        if known.backend == "postgres":
            return pg_main(rest)
        argv = rest
    args = parse_args(argv)
    mach = machine(
        [
            "chromadb",
            "langgraph",
            "langgraph-checkpoint-sqlite",
            "sqlite-vec",
            "pysqlite3-binary",
            "sentence-transformers",
            "torch",
            "numpy",
        ]
    )
    mach.code = "library at " + git_state(Path(__file__).resolve().parents[2], ["langgraph_memory"])
    started = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f}s] {msg}", flush=True)

    busy = mach.load_start[0] > 0.5 * mach.nproc
    log(
        f"load average {'/'.join(f'{x:.2f}' for x in mach.load_start)} on {mach.nproc} cores"
        + ("  (busy machine: results will be noisy)" if busy else "")
    )
    results = [run_size(n, args, log) for n in args.sizes_list]
    model_rows = [] if args.skip_model else run_model(args, log)
    mach.load_end = os.getloadavg()
    elapsed = time.perf_counter() - started

    title = (
        f"Store benchmark: search p50 / p95 in ms (puts: items/s), k={K}, seed {args.seed}; "
        "CS ChromaStore, IM InMemoryStore, SQ SqliteStore"
    )
    print_table(results, model_rows, title, args.queries)
    lines = targets(results, model_rows)
    print("\n".join(lines))
    for r in results:
        for case, detail in r.plan_details.items():
            if detail:
                print(f"  {r.n:,} items, {case}: {detail}")
        for note in r.notes:
            print(f"  {note}")
    print("\n".join(mach.lines()))
    if args.write:
        write_markdown(Path(args.write), results, model_rows, lines, mach, args, elapsed, argv)
        log(f"wrote {args.write}")
    return 0


def write_markdown(
    path: Path,
    results: list[SizeResult],
    model_rows: list[Row],
    lines: list[str],
    mach: Any,
    args: argparse.Namespace,
    elapsed: float,
    argv: list[str] | None,
) -> None:
    cmd = "python bench/store/store_bench.py " + " ".join(argv if argv is not None else sys.argv[1:])
    plan_lines = [
        f"- {r.n:,} items, {case}: {detail}" for r in results for case, detail in r.plan_details.items() if detail
    ]
    md = [
        "# Store benchmark",
        "",
        f"Command: `{cmd.strip()}` (whole run {elapsed / 60:.1f} min)",
        "",
        *mach.lines(),
        "",
        (
            f"Search cells: p50 / p95 in ms over {args.queries} timed queries per case (fewer for the brute-force "
            "stores where marked `(n q)`); put rows: items per second. R@10: recall@10 against exact search. "
            "CS: ChromaStore, IM: InMemoryStore, SQ: SqliteStore; the ratios compare p50s."
        ),
        "",
        markdown_table(HEADER, table_rows(results, args.queries), RIGHT),
        "",
        *(
            [markdown_table(MODEL_HEADER, model_table_rows(model_rows), [True, False, True, False]), ""]
            if model_rows
            else []
        ),
        "## Targets",
        "",
        *(lines or ["- (no targets evaluated in this run)"]),
        "",
        "## Plans and memory",
        "",
        *plan_lines,
        *(f"- {note}" for r in results for note in r.notes),
        "",
        "## How it was measured",
        "",
        (
            f"- Vectors: {DIMS}-d float32 from a seeded mixture shaped like sentence embeddings (a shared mean "
            "direction, 40 topics, 1,000 clusters of uneven size, a spread mostly within a 24-d subspace per topic); "
            "a fresh draw's nearest stored item has cosine ~0.7-0.9, two random items ~0.1. Every store gets the "
            "same vectors through an `Embeddings` that looks them up by text (no model time)."
        ),
        (
            '- Items at size N: the general set, N items in namespaces `("memories", "g<u % 10>", "u<u>")` '
            'of 100 items, values `{"content": <100-200 chars>, "kind": ..., "n": i}` with kind `rare` (1%), '
            '`occasional` (14%), `common` (50%) or `other`; the typed set, N items in `("research",)` '
            "(ChromaStore's typed collection `research_findings`); the three-field set, N/10 items under "
            '`("docs", ...)` put with `index=["title", "body", "tags"]` (three vectors each, from one cluster). '
            f"At {args.big:,} items only the general set, and only the one-namespace and whole-prefix cases. "
            "Namespaces and kinds are assigned at random, independent of the vectors' clusters (so a filter's "
            "matches are spread evenly over the vector space; real data may cluster them)."
        ),
        (
            "- Stores: every store indexes `content` (InMemoryStore `fields`, SqliteStore `text_fields`, ChromaStore "
            '`index["fields"]`; the typed collection embeds `content` by its schema). Bare Chroma holds the same '
            "vectors in the layout ChromaStore uses (general and three-field sets in one collection, the typed set in "
            "another; cosine HNSW with Chroma's defaults), with the value and namespace labels (`set`, `g`, `u`) as "
            'metadata. The floor is its unfiltered `query(n_results=10, include=["metadatas", "distances"])` on '
            'the case\'s collection; `+ where` adds the `where` equivalent to the case (`{"u": ...}`, `{"g": ...}`, '
            '`{"set": "mem"}`, `{"$and": [{"set": "mem"}, {"kind": ...}]}`, `{"set": "docs"}` with '
            "n_results 30 and the best record per item)."
        ),
        (
            f"- Puts: `store.batch([PutOp, ...])` in batches of {args.batch} for every store (bare Chroma: "
            "`collection.add` in the same batches), one item set after another, the typed set first into a fresh "
            "store (as the earlier bench measured puts); items/s = items / total batch time."
        ),
        (
            f"- Search: `store.search(prefix, query=..., filter=..., limit={K})`. Each case has its own "
            f"{args.warmup} warm-up and {args.queries} timed queries: even ones a random matching item's vector mixed "
            "with a fresh draw from its cluster (cosine ~0.87 to it), odd ones fresh draws from the mixture. "
            "ChromaStore and the floor answer each query in turn (rotating which goes first), so load drift hits "
            "them alike. The `where` queries run after them, and InMemoryStore and SqliteStore after the Chroma "
            "stores are closed, each alone (their 10-3,000 ms queries slow whatever runs next: ChromaStore's "
            "one-namespace p50 went from 0.78 to 1.79 ms when each followed a `where` query), each case until "
            f"{args.brute_seconds:g} s are spent (at least {args.brute_min} queries). Before each case the "
            "searched files (ChromaStore's catalog, bare Chroma's SQLite, SqliteStore's file) are read through "
            "the page cache: this machine pages out file pages idle for ~60 s (DAMON reclaim), which would "
            "otherwise hit the file-backed stores only; the cold case is measured on its own (Plans and memory). "
            "Per-query wall time (perf_counter); p50/p95."
        ),
        (
            f"- Recall@{K}: share of the exact top {K} (numpy over the case's matching items; an item scores the max "
            "over its vectors) that a store returns. For the floor, against the exact top 10 records of its whole "
            "collection (how good Chroma's HNSW is on this data, with no filter). ChromaStore's plan: "
            '`store.explain(prefix, query="x", filter=...).strategy` for every timed query; the plan details '
            "come from re-running up to 20 of them untimed with ChromaStore's debug log captured."
        ),
        (
            f"- Targets: every case at most {MAX_VS_FLOOR:g}x the floor at the same size; one namespace no slower "
            f"than InMemoryStore and within {MAX_NS_GROWTH}x from the smallest to the largest size; at least "
            f"{MIN_VS_PEERS:g}x InMemoryStore and SqliteStore where the prefix holds {PEER_SCOPE:,}+ items (filters "
            f"narrow that further); recall@{K} >= {MIN_RECALL}; typed-set puts at least "
            + ", ".join(f"{v:,.0f} items/s at {n:,}" for n, v in MIN_PUT_RATE.items())
            + "."
        ),
        (
            f"- Real model, for each text length ({', '.join(f'{lo}-{hi}' for lo, hi in args.model_lengths)} "
            f"characters): {args.model_rounds} round(s) of {args.model_texts} new seeded texts; the same "
            "`ChromaStore.default_index()` model object embeds them alone (`embed_documents`) and inside "
            '`ChromaStore(index=...)` puts (`{"content": text, "confidence": 0.5}` in `(\'research\',)`), one store '
            "on a fresh data dir for all rounds; every text is new to it, so the embedding cache never hits "
            f"(checked). {args.model_batch} texts per call/batch on both sides; model and store alternate batch by "
            "batch after an untimed warm-up. The bench times the model calls ChromaStore makes inside its puts and "
            "reports the share of put time spent outside the model: the store's own overhead, measured directly "
            "(the first batch, which opens Chroma and creates the collections, included)."
        ),
        (
            "- SqliteStore's vector search loads the sqlite-vec extension, which needs a `sqlite3` that can load "
            "extensions; this machine's stdlib one cannot. The bench opens SqliteStore's connection (a file in a "
            f"temp dir) with: {extension_sqlite()[1]}. sqlite-vec's `vec_distance_cosine` is a full scan (no ANN "
            "index); SqliteStore keeps the best `2 * limit` vector rows before removing duplicate items, so items "
            "with several vectors can crowd others out."
        ),
        "",
    ]
    path.write_text("\n".join(md), encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
