"""Crash benchmark: SIGKILL a writing process 200 times; count what was lost; time the open after a crash.

    python bench/faults/crash_bench.py                   # 200 kills, then the open time at 100,000 items
    python bench/faults/crash_bench.py --kills 20 --items 10000     # quick
    python bench/faults/crash_bench.py --write           # also write bench/results/RESULTS_crash.md
    python bench/faults/crash_bench.py --bulk 1000 --kills 30 --write   # SIGKILL during bulk batches (appends)
    python bench/faults/crash_bench.py --bitrot 200 --seal-cost --write   # bit rot instead: bench/results/RESULTS_bitrot.md
    python bench/faults/crash_bench.py --bitrot 50 --bitrot-unsealed --write   # crash then flip, above REBUILD_MAX
    python bench/faults/crash_bench.py --hnsw-check-cost --write   # the HNSW structure check at 100,000 and 1,000,000

``--bitrot N`` and ``--seal-cost`` run instead of the kills: see ``bench/faults/_bitrot.py``;
``--bitrot-unsealed`` and ``--hnsw-check-cost``: see ``bench/faults/_bitrot_unsealed.py``.

Part 1 runs the SIGKILL suite's worker (``bench/common/crash_worker.py``:
put, update and delete batches, typed-API calls with lineage and versions,
``rebuild_index``) against one data directory, kills it with SIGKILL at a
random moment (uniform 0.05-1.5 s after it is ready), reopens the directory
and checks every acknowledged write (``bench/common/crash_check.py``):
value, vector, Chroma record, listing, filter, lineage and version; and the
reverse, nothing present that was never acknowledged. A batch cut short by
the kill must have happened entirely or not at all (a "torn" batch counts
against it). Every 25th kill it kills during ``rebuild_index`` instead.
The directory stays under ``REBUILD_MAX`` vectors, so a default open after a
crash rebuilds the index; every other open is made to probe it instead
(``REBUILD_MAX`` 0, as for a larger index), and the table gives each path's
failures apart.

Part 2 builds a data directory of ``--items`` items with 384-d vectors,
kills a writer into it, and times the next open (the probe subprocess, the
count comparison, applying queued changes), against a clean open.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the checkout: its langgraph_memory and bench.common

from bench.common.crash_check import check  # noqa: E402
from bench.common.report import git_state, machine, markdown_table  # noqa: E402

WORKER = ROOT / "bench" / "common" / "crash_worker.py"
RESULTS_PATH = Path(__file__).resolve().parents[1] / "results" / "RESULTS_crash.md"
DIMS = 384

_BIG_WRITER = textwrap.dedent(
    """
    import sys
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langgraph.store.base import PutOp
    from langgraph_memory.store import ChromaStore
    store = ChromaStore(data_dir=sys.argv[1], index={"dims": 384, "embed": DeterministicFakeEmbedding(size=384)})
    print("ready", flush=True)
    i = 0
    while True:
        store.batch([PutOp(("notes", "live"), f"w{i + j}", {"text": f"written while killed {i + j}"}) for j in range(50)])
        i += 50
    """
)


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")


def _kill(cmd: list[str], delay: float) -> None:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if line.strip() != "ready":
            raise RuntimeError(f"the worker did not start: {proc.stderr.read()[-2000:] if proc.stderr else ''}")
        time.sleep(delay)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def kills(n: int, seed: int, log: Callable[[str], None], *, bulk: int = 0) -> list[list[str]]:
    tmp = Path(tempfile.mkdtemp(prefix="lgm-crash-bench-"))
    data_dir, log_path = tmp / "memory", tmp / "log.jsonl"
    rng = random.Random(seed)
    totals = {"lost": 0, "orphaned": 0, "torn": 0, "probed": 0, "rebuilt": 0}
    by_path = {True: 0, False: 0}  # failures after opens that probed / that rebuilt by default
    opens: dict[bool, list[float]] = {True: [], False: []}
    failures: list[str] = []
    last = None
    started = time.perf_counter()
    try:
        for k in range(n):
            mode = "bulk" if bulk else "rebuild" if k % 25 == 24 else "mix"
            delay = rng.uniform(0.02, 0.4) if mode == "rebuild" else rng.uniform(0.05, 1.5)
            extra = [str(bulk)] if bulk else []
            seed_k = str(rng.randrange(10**6))
            _kill([sys.executable, str(WORKER), str(data_dir), str(log_path), seed_k, mode, *extra], delay)
            probe = k % 2 == 0
            last = check(data_dir, log_path, probe=probe, filter_sample=300 if bulk else None)
            opens[probe].append(last.open_seconds)
            by_path[probe] += len(last.lost) + len(last.orphaned) + len(last.torn)
            totals["lost"] += len(last.lost)
            totals["orphaned"] += len(last.orphaned)
            totals["torn"] += len(last.torn)
            totals["probed"] += last.probed
            totals["rebuilt"] += last.rebuilt
            if not last.ok:
                failures.append(f"kill {k + 1}: {last.summary()}")
            if (k + 1) % 10 == 0:
                log(
                    f"  {k + 1}/{n} kills, {last.acknowledged} acknowledged items live, problems so far: "
                    f"{totals['lost'] + totals['orphaned'] + totals['torn']}"
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert last is not None
    minutes = (time.perf_counter() - started) / 60
    what = (
        f"kills (SIGKILL at a random moment of a stream of bulk batches: {bulk:,} new items, or up to 300 updates)"
        if bulk
        else "kills (SIGKILL at a random moment; every 25th during rebuild_index)"
    )
    rows = [
        [what, f"{n} in {minutes:.1f} min"],
        ["acknowledged writes checked after the last kill (items live, typed items)", f"{last.acknowledged:,}"],
        [
            "lost: acknowledged, then missing or wrong (value, vector, listing, filter, lineage, version)",
            str(totals["lost"]),
        ],
        [
            "orphaned: present without acknowledgement or counterpart (item, Chroma record, lineage, version)",
            str(totals["orphaned"]),
        ],
        ["torn: an interrupted batch applied in part", str(totals["torn"])],
        [
            "  of which after opens made to probe (every other one) / after default opens (rebuild)",
            f"{by_path[True]} / {by_path[False]}",
        ],
        ["opens that found no seal and probed the index in a subprocess", f"{totals['probed']} of {n}"],
        [
            "opens that rebuilt the index from the catalog (default below REBUILD_MAX vectors, or the probe failed)",
            f"{totals['rebuilt']} of {n}",
        ],
        [
            "open after a crash, small directory, made to probe: median / max",
            f"{statistics.median(opens[True]):.2f} s / {max(opens[True]):.2f} s",
        ],
        [
            "open after a crash, small directory, default (rebuild): median / max",
            f"{statistics.median(opens[False]):.2f} s / {max(opens[False]):.2f} s",
        ],
    ]
    for f in failures[:10]:
        log("FAIL " + f)
    return rows


def open_after_crash(items: int, repeats: int, log: Callable[[str], None]) -> list[list[str]]:
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langgraph.store.base import PutOp

    from langgraph_memory.store import ChromaStore

    tmp = Path(tempfile.mkdtemp(prefix="lgm-crash-open-"))
    data_dir = tmp / "memory"
    rows: list[list[str]] = []
    try:
        log(f"building {items:,} items (384-d)...")
        t = time.perf_counter()
        store = ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)})
        for start in range(0, items, 1000):
            store.batch(
                [
                    PutOp(("notes", f"u{i % 100}"), f"k{i}", {"text": f"note {i}"})
                    for i in range(start, min(items, start + 1000))
                ]
            )
        store.close()
        log(f"  built in {time.perf_counter() - t:.0f} s")
        clean: list[float] = []
        crashed: list[float] = []
        probes: list[float] = []
        for r in range(repeats):
            t = time.perf_counter()
            s = ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)})
            clean.append(time.perf_counter() - t)
            s.close()
            _kill([sys.executable, "-c", _BIG_WRITER, str(data_dir)], 0.5 + r * 0.37)
            t = time.perf_counter()
            s = ChromaStore(data_dir=data_dir, index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)})
            crashed.append(time.perf_counter() - t)
            probes.append(s.vector_index.probe_seconds or 0.0)
            rebuilt = s.vector_index.last_rebuild
            n = s.items.count("memories")
            s.close()
            log(
                f"  crash {r + 1}: open {crashed[-1]:.2f} s (probe {probes[-1]:.2f} s), {n:,} items"
                + (f", rebuilt {rebuilt.total:,} vectors" if rebuilt else "")
            )
        rows = [
            [
                f"open after a crash, {items:,} items (384-d): median / max of {repeats}",
                f"{statistics.median(crashed):.2f} s / {max(crashed):.2f} s",
            ],
            [
                "  of which the probe subprocess (import chromadb, open, count; the records written since the last check "
                "and 32 others must find themselves)",
                f"{statistics.median(probes):.2f} s",
            ],
            [f"clean open, {items:,} items (sealed: no probe)", f"{statistics.median(clean) * 1000:.0f} ms"],
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5, help="crashes at --items to time the open after")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--write", action="store_true", help="write bench/results/RESULTS_crash.md (or RESULTS_bitrot.md)")
    ap.add_argument("--bitrot", type=int, default=0, help="bit flips, each checked by a fresh process (no kills)")
    ap.add_argument("--bitrot-items", type=int, default=3000)
    ap.add_argument("--bitrot-dims", type=int, default=16)
    ap.add_argument("--bitrot-checked", type=int, default=100, help="acknowledged items each child checks")
    ap.add_argument("--bitrot-chains", type=int, default=1, help="directories flipped and checked side by side")
    ap.add_argument(
        "--bitrot-unsealed",
        action="store_true",
        help="with --bitrot N: crash then flip, in an unsealed index above REBUILD_MAX (see bench/faults/_bitrot_unsealed.py)",
    )
    ap.add_argument(
        "--bulk",
        type=int,
        default=0,
        metavar="N",
        help="kill during bulk batches of N items instead (no part 2); --write appends to RESULTS_crash.md",
    )
    ap.add_argument("--hnsw-check-cost", action="store_true", help="time the HNSW structure check (no kills)")
    ap.add_argument("--seal-cost", action="store_true", help="time the content seal (no kills)")
    ap.add_argument("--seal-items", type=int, default=100_000)
    ap.add_argument("--seal-target", type=int, default=1_000_000)
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if args.bitrot or args.seal_cost or args.hnsw_check_cost:
        return _bitrot_main(args, log, argv if argv is not None else sys.argv[1:])

    started = time.time()
    if args.bulk:
        return _bulk_main(args, log, started)
    log(f"part 1: {args.kills} kills")
    rows = kills(args.kills, args.seed, log)
    log(f"part 2: open after a crash at {args.items:,} items")
    rows += open_after_crash(args.items, args.repeats, log)
    table = markdown_table(["measure", "result"], rows)
    print(table)
    if args.write:
        m = machine(["chromadb", "langgraph"])
        text = "\n".join(
            [
                "# Crash benchmark (bench/faults/crash_bench.py)",
                "",
                f"Command: `python bench/faults/crash_bench.py --write` (whole run {(time.time() - started) / 60:.1f} min)",
                "",
                *m.lines(),
                f"- Code: library at {git_state(ROOT, ['langgraph_memory'])}",
                "",
                table,
                "",
                "How it was measured: see the docstring of `bench/faults/crash_bench.py`. A lost, orphaned or torn count",
                "above zero is a failure; the SIGKILL suite in the tests (`tests/test_crash.py`) runs 27 kills.",
                "",
            ]
        )
        RESULTS_PATH.write_text(text)
        log(f"wrote {RESULTS_PATH}")
    return 0


def _bulk_main(args: argparse.Namespace, log: Callable[[str], None], started: float) -> int:
    log(f"{args.kills} kills during bulk batches of {args.bulk:,}")
    table = markdown_table(["measure", "result"], kills(args.kills, args.seed, log, bulk=args.bulk))
    print(table)
    if args.write:
        m = machine(["chromadb", "langgraph"])
        cmd = f"python bench/faults/crash_bench.py --bulk {args.bulk} --kills {args.kills} --write"
        text = "\n".join(
            [
                "",
                "## SIGKILL during bulk batches",
                "",
                f"Command: `{cmd}` (whole run {(time.time() - started) / 60:.1f} min)",
                "",
                *m.lines(),
                f"- Code: library at {git_state(ROOT, ['langgraph_memory'])}",
                "",
                table,
                "",
                "Batches of this size take the catalog's bulk path (`langgraph_memory/catalog/bulk.py`). Lost: an",
                "acknowledged item missing or wrong; orphaned (duplicated): an item or Chroma record present",
                "without its acknowledgement or its counterpart; torn: an interrupted batch applied in part.",
                "",
            ]
        )
        with RESULTS_PATH.open("a") as fh:
            fh.write(text)
        log(f"appended to {RESULTS_PATH}")
    return 0


def _bitrot_main(args: argparse.Namespace, log: Callable[[str], None], argv: list[str]) -> int:
    from bench.faults._bitrot import bitrot, seal_cost

    started = time.time()
    m = machine(["chromadb", "xxhash"])
    rows: list[list[str]] = []
    if args.bitrot and args.bitrot_unsealed:
        from bench.faults._bitrot_unsealed import unsealed

        items = args.bitrot_items if "--bitrot-items" in " ".join(argv) else 26_000
        log(f"bit rot after crashes: {args.bitrot} flips, {items:,} items")
        rows += unsealed(args.bitrot, items, args.bitrot_dims, args.bitrot_checked, args.seed, log, args.bitrot_chains)
    elif args.bitrot:
        log(f"bit rot: {args.bitrot} flips")
        rows += bitrot(
            args.bitrot, args.bitrot_items, args.bitrot_dims, args.bitrot_checked, args.seed, log, args.bitrot_chains
        )
    if args.seal_cost:
        log(f"seal cost at {args.seal_items:,} and {args.seal_target:,} vectors")
        rows += seal_cost(args.seal_items, args.seal_target, 3, log)
    if args.hnsw_check_cost:
        from bench.faults._bitrot_unsealed import check_cost

        log(f"HNSW structure check at {args.seal_items:,} and {args.seal_target:,} vectors")
        rows += check_cost([args.seal_items, args.seal_target], 3, log)
    m.load_end = os.getloadavg()
    table = markdown_table(["measure", "result"], rows)
    print(table)
    if args.write:
        # One section per part, so that the flips and the seal's cost can be measured in separate runs.
        path = RESULTS_PATH.with_name("RESULTS_bitrot.md")
        title = (
            "## Bit flips after a crash, above REBUILD_MAX (unsealed index)"
            if args.bitrot and args.bitrot_unsealed
            else "## HNSW structure check cost"
            if args.hnsw_check_cost and not args.bitrot and not args.seal_cost
            else "## Bit flips"
            if args.bitrot and not args.seal_cost
            else "## Seal cost"
            if args.seal_cost and not args.bitrot
            else "## Bit flips and seal cost"
        )
        section = "\n".join(
            [
                title,
                "",
                f"Command: `python bench/faults/crash_bench.py {' '.join(argv)}` (whole run {(time.time() - started) / 60:.1f} min)",
                "",
                *m.lines(),
                f"- Code: library at {git_state(ROOT, ['langgraph_memory'])}",
                "",
                table,
                "",
            ]
        )
        head = [
            "# Bit rot benchmark (bench/faults/crash_bench.py --bitrot, --seal-cost)",
            "",
            "How it was measured: see the docstring of `bench/faults/_bitrot.py`. Crashes, lost items and wrong answers",
            "above zero are failures; `tests/test_bitrot.py` runs 10 rounds of 8 flips, and",
            "`tests/test_bitrot_unsealed.py` flips neighbour ids and random bits in an index a crash left unsealed.",
            "",
        ]
        sections = {}
        if path.exists():
            for part in path.read_text().split("\n## ")[1:]:
                sections["## " + part.split("\n", 1)[0]] = "## " + part.rstrip("\n") + "\n"
        sections[title] = section
        path.write_text("\n".join(head) + "\n" + "\n".join(sections[k] for k in sorted(sections)))
        log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
