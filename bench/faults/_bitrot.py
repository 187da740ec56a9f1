"""Bit rot for bench/faults/crash_bench.py: random bit flips in a closed data directory, each checked by a fresh process;
and what the content seal costs the open at 100,000 and 1,000,000 vectors.

Part 1 (``--bitrot N``): a directory of ``--bitrot-items`` items is built
and closed. Then N rounds: one random bit of one file is flipped, size and
modification time kept (half the rounds in the HNSW ``data_level0.bin``, the
others spread over every other non-empty file but the catalog: the other
HNSW files, Chroma's SQLite file, the embedding cache, the generation
counter), and a fresh process (``bench/common/bitrot.py``) opens the
directory, reads back a sample of the acknowledged items, searches each by
its own vector through Chroma and by its text, puts 50 more, and checks
those. A child that dies by a signal is a crash; an acknowledged item
missing or with a wrong value is lost; an item not found first by its own
vector or text is a wrong answer.

Part 2 (``--seal-cost``): builds ``--seal-items`` items of 384-d vectors
through the store, and times the content hash of the Chroma folder from the
page cache and from disk (each file's pages dropped with
``posix_fadvise(DONTNEED)``), a clean open of the store (which hashes the
folder), and SQLite's quick_check of the catalog (run on the open after an
unclean shutdown). For 1,000,000 vectors it writes files of the sizes that
folder would have (each file of the built folder scaled by the ratio, random
content) and times the hash of those: building 1,000,000 vectors through the
store takes too long on a shared 2-core machine.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from bench.common.bitrot import build, flip_bits, run_child, targets  # noqa: E402

Log = Callable[[str], None]


def build_logged(data_dir: Path, items: int, dims: int, log: Log) -> list[str]:
    t = time.perf_counter()
    keys = build(data_dir, items, dims, batch=1000)
    log(f"  built {items:,} items ({dims}-d) in {time.perf_counter() - t:.0f} s")
    return keys


@dataclass
class _Chain:
    """One directory's rounds: what its fresh processes found."""

    crashes: list[str] = field(default_factory=list)
    exits: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lost: int = 0
    wrong_vector: int = 0
    wrong_text: int = 0
    rebuilt: int = 0
    acknowledged: int = 0
    by_file: Counter[str] = field(default_factory=Counter)
    seconds: list[float] = field(default_factory=list)


def _chain(
    name: str,
    rounds: int,
    template: Path,
    keys: list[str],
    dims: int,
    checked: int,
    seed: int,
    progress: Callable[[_Chain], None],
) -> _Chain:
    tmp = Path(tempfile.mkdtemp(prefix=f"lgm-bitrot-bench-{name}-"))
    data_dir = tmp / "memory"
    rng = random.Random(seed)
    out = _Chain()
    try:
        shutil.copytree(template, data_dir)  # the same content: its seal holds
        ledger = list(keys)
        for r in range(rounds):
            files = targets(data_dir)
            level0 = [f for f in files if f.name == "data_level0.bin"]
            others = [f for f in files if f.name != "data_level0.bin"]
            target = level0[0] if level0 and (r % 2 == 0 or not others) else rng.choice(others)
            flip_bits(target, rng, 1)
            out.by_file[target.name] += 1
            new = [f"{name}-r{r}-{i}" for i in range(50)]
            t = time.perf_counter()
            res = run_child(data_dir, ledger, dims=dims, new=new, seed=seed + r, checked=checked)
            out.seconds.append(time.perf_counter() - t)
            ledger += res.acked
            out.acknowledged = len(ledger)
            out.rebuilt += res.rebuilt
            out.lost += len(res.missing) + len(res.wrong_value)
            out.wrong_vector += len(res.wrong_by_vector)
            out.wrong_text += len(res.wrong_by_text)
            where = f"{name} round {r + 1} ({target.name})"
            if res.crashed:
                out.crashes.append(f"{where}: {res.summary()}")
            elif res.returncode != 0:
                out.exits.append(f"{where}: {res.summary()}")
            elif res.problems:
                out.errors.append(f"{where}: {res.summary()}")
            progress(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def bitrot(rounds: int, items: int, dims: int, checked: int, seed: int, log: Log, chains: int = 1) -> list[list[str]]:
    """``rounds`` flips over ``chains`` directories checked side by side (each chain's rounds in sequence)."""
    started = time.perf_counter()
    done = [0]
    lock = threading.Lock()

    def progress(_c: _Chain) -> None:
        with lock:
            done[0] += 1
            if done[0] % 10 == 0:
                log(f"  {done[0]}/{rounds} flips")

    share = [rounds // chains + (1 if i < rounds % chains else 0) for i in range(chains)]
    tmp = Path(tempfile.mkdtemp(prefix="lgm-bitrot-template-"))
    try:
        keys = build_logged(tmp / "memory", items, dims, log)
        with ThreadPoolExecutor(chains) as pool:
            results = list(
                pool.map(
                    lambda i: _chain(f"c{i}", share[i], tmp / "memory", keys, dims, checked, seed + 1000 * i, progress),
                    range(chains),
                )
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    crashes = [x for c in results for x in c.crashes]
    exits = [x for c in results for x in c.exits]
    errors = [x for c in results for x in c.errors]
    lost = sum(c.lost for c in results)
    wrong_vector = sum(c.wrong_vector for c in results)
    wrong_text = sum(c.wrong_text for c in results)
    rebuilt = sum(c.rebuilt for c in results)
    by_file: Counter[str] = sum((c.by_file for c in results), Counter())
    seconds = [x for c in results for x in c.seconds]
    for line in (crashes + exits + errors)[:10]:
        log("FAIL " + line)
    minutes = (time.perf_counter() - started) / 60
    return [
        [
            f"bit flips (one per round, size and mtime kept), each checked by a fresh process; {chains} "
            f"directories of {items:,} items ({dims}-d) to start, checked side by side",
            f"{rounds} in {minutes:.1f} min",
        ],
        ["  flips per file", ", ".join(f"{name} {n}" for name, n in by_file.most_common())],
        ["process crashes (the child died by a signal: SIGSEGV, abort)", str(len(crashes))],
        ["other failures (the child exited with an error)", str(len(exits))],
        ["lost: acknowledged items missing or with a wrong value", str(lost)],
        [
            f"wrong answers: items (up to {checked} per round, plus its 50 new ones) not first by their own vector "
            "/ by their text",
            f"{wrong_vector} / {wrong_text}",
        ],
        [
            "opens that rebuilt the index from the catalog (the content no longer matched the seal)",
            f"{rebuilt} of {rounds}",
        ],
        [
            "one round (fresh process: open, checks, 50 puts, close): median / max",
            f"{statistics.median(seconds):.1f} s / {max(seconds):.1f} s",
        ],
    ]


def evict(folder: Path) -> None:
    for root, _dirs, files in os.walk(folder):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def folder_size(folder: Path) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _d, fs in os.walk(folder) for f in fs)


def _time_hash(folder: Path, repeats: int) -> tuple[float, float]:
    """Median seconds of the seal's hash of ``folder``: from the page cache, and from disk."""
    from langgraph_memory.index._session import fingerprint

    fingerprint(folder)
    warm, cold = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        fingerprint(folder)
        warm.append(time.perf_counter() - t)
        os.sync()
        evict(folder)
        t = time.perf_counter()
        fingerprint(folder)
        cold.append(time.perf_counter() - t)
    return statistics.median(warm), statistics.median(cold)


def seal_cost(items: int, target: int, repeats: int, log: Log) -> list[list[str]]:
    import sqlite3

    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langgraph_memory.store import ChromaStore

    dims = 384
    tmp = Path(tempfile.mkdtemp(prefix="lgm-seal-cost-"))
    data_dir = tmp / "memory"
    rows: list[list[str]] = []
    try:
        build_logged(data_dir, items, dims, log)
        (folder,) = [p for p in (data_dir / "chroma").iterdir() if p.is_dir() and p.name.startswith("index-")]
        size = folder_size(folder)
        warm, cold = _time_hash(folder, repeats)
        opens = []
        for _ in range(repeats):
            t = time.perf_counter()
            s = ChromaStore(data_dir=data_dir, index={"dims": dims, "embed": DeterministicFakeEmbedding(size=dims)})
            opens.append(time.perf_counter() - t)
            assert s.vector_index.last_rebuild is None and s.vector_index.probe_seconds is None
            s.close()
        catalog = data_dir / "catalog.sqlite"
        checks = []
        for _ in range(repeats):
            conn = sqlite3.connect(catalog)
            t = time.perf_counter()
            assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
            checks.append(time.perf_counter() - t)
            conn.close()
        rows += [
            [
                f"{items:,} vectors (384-d): the Chroma folder's size / the seal's hash from the page cache / from disk",
                f"{size / 1e6:,.0f} MB / {warm * 1000:.0f} ms / {cold * 1000:.0f} ms",
            ],
            [
                f"{items:,} vectors: a clean open of the store (hash included): median of {repeats}",
                f"{statistics.median(opens):.2f} s",
            ],
            [
                f"{items:,} vectors: quick_check of the catalog ({catalog.stat().st_size / 1e6:,.0f} MB; only on the open "
                "after an unclean shutdown)",
                f"{statistics.median(checks):.2f} s",
            ],
        ]
        # The folder at `target` vectors: every file scaled by the ratio, random content.
        scale = target / items
        big = tmp / "scaled"
        for root, _d, files in os.walk(folder):
            for name in files:
                src = Path(root) / name
                dst = big / src.relative_to(folder)
                dst.parent.mkdir(parents=True, exist_ok=True)
                left = int(src.stat().st_size * scale)
                chunk = os.urandom(1 << 24)
                with open(dst, "wb") as f:
                    while left > 0:
                        n = min(left, len(chunk))
                        f.write(chunk[:n])
                        left -= n
        shutil.rmtree(data_dir)
        warm, cold = _time_hash(big, repeats)
        rows.append(
            [
                f"{target:,} vectors (files of the sizes above times {scale:g}): size / hash from the page cache / "
                "from disk",
                f"{folder_size(big) / 1e6:,.0f} MB / {warm * 1000:.0f} ms / {cold * 1000:.0f} ms",
            ]
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run bench/faults/crash_bench.py --bitrot N or --seal-cost")
