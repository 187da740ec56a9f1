"""Benchmark: archive N stale items (384-d vectors) in one run; time per phase, peak memory, sizes.

    python bench/store/archive_bench.py                 # 100,000 items (a few minutes)
    python bench/store/archive_bench.py --items 5000    # quick

Items get precomputed random 384-d vectors and old timestamps through
``restore_items`` (no model is loaded). Peak RSS comes from
``resource.getrusage`` (whole process, including Chroma's native memory);
the tracemalloc peak covers Python allocations made during the archive run
only. The table is written to ``bench/results/RESULTS_archive.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.common.report import cpu_flags, cpu_model
from langgraph_memory.archive import Archiver
from langgraph_memory.catalog import StoredItem
from langgraph_memory.store import ChromaStore

DIMS = 384
DAY = 86400.0


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "RESULTS_archive.md"))
    ap.add_argument("--append", action="store_true", help="append to --out instead of replacing it")
    ap.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    ap.add_argument(
        "--restore",
        action="store_true",
        help="also restore everything, then archive it again under tracemalloc (Python peak; several times slower)",
    )
    args = ap.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="lgm-archive-bench-"))
    rng = np.random.default_rng(7)
    store = ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": lambda texts: [[0.0] * DIMS for _ in texts]})
    now = time.time()
    rows: list[tuple[str, str]] = []
    print(f"loading {args.items} items into {data_dir} ...", file=sys.stderr)
    t0 = time.perf_counter()
    for start in range(0, args.items, args.batch):
        n = min(args.batch, args.items - start)
        vecs = rng.standard_normal((n, DIMS), dtype=np.float32)
        items = []
        for j in range(n):
            i = start + j
            text = f"lesson {i}: after drawdown {i % 97} the sizing rule {i % 13} failed"
            t = now - (100 + i % 50) * DAY
            items.append(
                StoredItem(
                    namespace=("lessons", f"desk{i % 8}"),
                    key=f"l{i}",
                    value={"lesson": text, "strategy_id": f"s{i % 500}", "iteration": i, "severity": "major"},
                    created_at=t - 3600,
                    updated_at=t,
                    last_accessed_at=t,
                    access_count=i % 5,
                    vectors=[vecs[j].tolist()],
                    texts=[text],
                    paths=["lesson"],
                )
            )
        store.items.restore_items(items)
    load_s = time.perf_counter() - t0
    print(f"loaded in {load_s:.1f} s; archiving ...", file=sys.stderr, flush=True)
    live_bytes = _dir_size(data_dir / "chroma")
    rss_before = _rss_mb()

    archiver = Archiver(store, thread_after_days=None)
    phases: dict[str, float] = {}
    last = {"phase": None, "t": time.perf_counter()}

    def progress(phase: str, collection: str, done: int, total: int | None) -> None:
        t = time.perf_counter()
        if last["phase"] is not None:
            phases[last["phase"]] = phases.get(last["phase"], 0.0) + (t - last["t"])
        last["phase"], last["t"] = phase, t

    # Timed run first: tracemalloc slows allocation-heavy Python several-fold.
    t0 = time.perf_counter()
    report = archiver.run(progress=progress)
    run_s = time.perf_counter() - t0
    if last["phase"] is not None:
        phases[last["phase"]] = phases.get(last["phase"], 0.0) + (time.perf_counter() - last["t"])
    rss_after = _rss_mb()
    print(f"archive run took {run_s:.1f} s", file=sys.stderr, flush=True)
    cr = report.collections["lessons_learned"]
    assert cr.archived == args.items and cr.deleted == args.items and store.items.count("lessons") == 0, report

    archive_bytes = sum((archiver.archive_dir / f.name).stat().st_size for f in archiver.list_archives())
    t0 = time.perf_counter()
    hits = archiver.search_archive("lessons", None, filter={"strategy_id": "s42"}, k=5)
    search_filter_s = time.perf_counter() - t0
    q = rng.standard_normal(DIMS).astype(np.float32).tolist()
    archiver.store.embeddings.embed_query = lambda text: q  # a precomputed query vector, no model
    t0 = time.perf_counter()
    hits = archiver.search_archive("lessons", "any", k=5)
    search_s = time.perf_counter() - t0
    assert len(hits) == 5

    restore_s = py_peak = None
    if args.restore:
        # Restore everything, then archive it again under tracemalloc for the Python peak.
        t0 = time.perf_counter()
        restored = archiver.restore(collection="lessons", all_items=True)
        restore_s = time.perf_counter() - t0
        assert restored.restored == args.items and store.items.count("lessons") == args.items
        tracemalloc.start()
        again = archiver.run(now=time.time() + 200 * DAY)  # past the restore grace period
        _, py_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert again.collections["lessons_learned"].archived == args.items and archiver.count_archived() == args.items

    rows += [
        ("items", f"{args.items:,}"),
        ("load (restore_items)", f"{load_s:.1f} s"),
        ("archive run, total", f"{run_s:.1f} s ({args.items / run_s:,.0f} items/s)"),
    ]
    for phase in ("write", "verify", "delete"):
        if phase in phases:
            rows.append(
                (f"  phase: scan+{phase}" if phase == "write" else f"  phase: {phase}", f"{phases[phase]:.1f} s")
            )
    rows += [
        ("peak RSS before run / after run", f"{rss_before:,.0f} MB / {rss_after:,.0f} MB"),
        ("live Chroma folder before", f"{live_bytes / 2**20:,.1f} MB"),
        ("archive file(s)", f"{archive_bytes / 2**20:,.1f} MB ({archive_bytes / live_bytes:.0%} of live)"),
        ("search_archive, vector, k=5", f"{search_s:.1f} s"),
        ("search_archive, filter only", f"{search_filter_s:.1f} s"),
    ]
    if restore_s is not None and py_peak is not None:
        rows += [
            ("restore all", f"{restore_s:.1f} s ({args.items / restore_s:,.0f} items/s)"),
            ("tracemalloc peak (Python, second run only)", f"{py_peak / 2**20:,.1f} MB"),
        ]
    machine = f"nproc {os.cpu_count()}, {cpu_model()} ({cpu_flags()}), Python {platform.python_version()}, {datetime.now(UTC):%Y-%m-%d}"
    table = ["| measure | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows]
    text = (
        f"## Archive run ({args.items:,} items, {DIMS}-d vectors)\n\n"
        f"Machine: {machine}. Command: `python bench/store/archive_bench.py --items {args.items}"
        f"{' --restore' if args.restore else ''}`.\n\n" + "\n".join(table) + "\n"
    )
    print(text)
    out = Path(args.out)
    out.write_text((out.read_text() + "\n" if args.append and out.exists() else "") + text)
    archiver.close()
    store.close()
    if not args.keep:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
