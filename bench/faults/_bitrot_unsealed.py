"""Bit rot after a crash, above REBUILD_MAX, for bench/faults/crash_bench.py; and what the HNSW structure check costs.

Part 1 (``--bitrot N --bitrot-unsealed``): a directory of ``--bitrot-items``
items (default 26,000: above ``REBUILD_MAX``, so an open after a crash
probes the index instead of rebuilding it) is built and closed. A first
child opens it, puts 50 items and dies by SIGKILL: the index is unsealed.
Then N rounds: flip, in the current HNSW segment, size and modification
time kept, one of (in turn) a random bit of ``data_level0.bin``, a high bit
of a level-0 neighbour id (out of range), a random bit of
``link_lists.bin``, a high bit of an upper-level neighbour id, a random bit
of ``header.bin`` or ``length.bin``; then a fresh child
(``bench/common/bitrot.py``, default ``REBUILD_MAX``) opens the directory,
reads back a sample of the acknowledged items, finds each by its own vector
through Chroma and by its text, puts 50 more, checks those, and dies by
SIGKILL again, so that every round finds the index unsealed. A child that
dies by any other signal is a crash; an acknowledged item missing or with
a wrong value is lost; an item not found first is a wrong answer.

Part 2 (``--hnsw-check-cost``): times `_hnsw_check.check_segment` on
segments of 100,000 and 1,000,000 384-d vectors (M 16) from the page cache
and from disk (pages dropped with ``posix_fadvise(DONTNEED)``). The
segments are written by `synthetic_segment` in hnswlib's layout (random
in-range links, levels drawn as hnswlib draws them, unit vectors): building
them through Chroma takes too long on a shared 2-core machine; the check
reads exactly the bytes it would read of a real one. Part 1 also times
the check of its template's segment, as Chroma wrote it.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import statistics
import struct
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.common.bitrot import flip_bits, flip_neighbour_ids, run_child, segment_of
from bench.faults._bitrot import build_logged, evict, folder_size
from langgraph_memory.index._hnsw_check import check_segment

Log = Callable[[str], None]

KINDS = ["level0 random bit", "level0 neighbour id", "link_lists random bit", "upper neighbour id", "header/length bit"]


def _flip(kind: str, seg: Path, rng: random.Random) -> str:
    if kind == "level0 random bit":
        flip_bits(seg / "data_level0.bin", rng, 1)
    elif kind == "level0 neighbour id":
        flip_neighbour_ids(seg, rng, 1)
    elif kind == "link_lists random bit":
        flip_bits(seg / "link_lists.bin", rng, 1)
    elif kind == "upper neighbour id":
        flip_neighbour_ids(seg, rng, 1, upper=True)
    else:
        flip_bits(seg / rng.choice(["header.bin", "length.bin"]), rng, 1)
    return kind


@dataclass
class _Chain:
    crashes: list[str] = field(default_factory=list)
    exits: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lost: int = 0
    wrong_vector: int = 0
    wrong_text: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    structural: Counter[str] = field(default_factory=Counter)
    rebuilt: Counter[str] = field(default_factory=Counter)
    seconds: list[float] = field(default_factory=list)


def _chain(name: str, rounds: int, template: Path, keys: list[str], dims: int, checked: int, seed: int) -> _Chain:
    tmp = Path(tempfile.mkdtemp(prefix=f"lgm-bitrot-unsealed-{name}-"))
    data_dir = tmp / "memory"
    rng = random.Random(seed)
    out = _Chain()
    try:
        shutil.copytree(template, data_dir)
        first = [f"{name}-crash-{i}" for i in range(50)]
        res = run_child(data_dir, keys, dims=dims, new=first, seed=seed, checked=checked, unclean=True)
        if not res.ok:
            out.exits.append(f"{name} first crash: {res.summary()}")
            return out
        ledger = keys + res.acked
        for r in range(rounds):
            kind = _flip(KINDS[r % len(KINDS)], segment_of(data_dir), rng)
            out.by_kind[kind] += 1
            new = [f"{name}-r{r}-{i}" for i in range(50)]
            t = time.perf_counter()
            res = run_child(data_dir, ledger, dims=dims, new=new, seed=seed + r, checked=checked, unclean=True)
            out.seconds.append(time.perf_counter() - t)
            ledger += res.acked
            out.lost += len(res.missing) + len(res.wrong_value)
            out.wrong_vector += len(res.wrong_by_vector)
            out.wrong_text += len(res.wrong_by_text)
            if res.rebuilt:
                out.rebuilt[kind] += 1
            if "HNSW segment" in res.rebuild_reason:
                out.structural[kind] += 1
            where = f"{name} round {r + 1} ({kind})"
            if res.crashed:
                out.crashes.append(f"{where}: {res.summary()}")
            elif not res.reported:
                out.exits.append(f"{where}: {res.summary()}")
            elif res.problems:
                out.errors.append(f"{where}: {res.summary()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def unsealed(rounds: int, items: int, dims: int, checked: int, seed: int, log: Log, chains: int = 1) -> list[list[str]]:
    """``rounds`` crash-then-flip rounds over ``chains`` directories checked side by side."""
    started = time.perf_counter()
    share = [rounds // chains + (1 if i < rounds % chains else 0) for i in range(chains)]
    tmp = Path(tempfile.mkdtemp(prefix="lgm-bitrot-unsealed-template-"))
    lock = threading.Lock()
    try:
        keys = build_logged(tmp / "memory", items, dims, log)
        real = segment_of(tmp / "memory")
        warm, cold, _cpu = _time_check(real, 3)
        with ThreadPoolExecutor(chains) as pool:

            def one(i: int) -> _Chain:
                c = _chain(f"c{i}", share[i], tmp / "memory", keys, dims, checked, seed + 1000 * i)
                with lock:
                    log(f"  chain c{i}: {share[i]} rounds done")
                return c

            results = list(pool.map(one, range(chains)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    crashes = [x for c in results for x in c.crashes]
    exits = [x for c in results for x in c.exits]
    errors = [x for c in results for x in c.errors]
    by_kind: Counter[str] = sum((c.by_kind for c in results), Counter())
    structural: Counter[str] = sum((c.structural for c in results), Counter())
    rebuilt: Counter[str] = sum((c.rebuilt for c in results), Counter())
    seconds = [x for c in results for x in c.seconds]
    for line in (crashes + exits + errors)[:10]:
        log("FAIL " + line)
    minutes = (time.perf_counter() - started) / 60
    return [
        [
            f"crash then flip: rounds (each: flip one bit in the unsealed HNSW segment, then a fresh process opens "
            f"with the default REBUILD_MAX, checks, puts 50 and dies by SIGKILL); {chains} directories of "
            f"{items:,} items ({dims}-d) to start",
            f"{sum(share)} in {minutes:.1f} min",
        ],
        *[
            [
                f"  {kind}: flips / opens the structure check sent to a rebuild / all rebuilds",
                f"{by_kind[kind]} / {structural[kind]} / {rebuilt[kind]}",
            ]
            for kind in KINDS
        ],
        [
            f"the structure check of the template's segment as Chroma wrote it ({folder_size(real.parent) / 1e6:,.1f} MB "
            "folder): from the page cache / from disk",
            f"{warm * 1000:.0f} ms / {cold * 1000:.0f} ms",
        ],
        ["process crashes (the child died by a signal other than its own SIGKILL)", str(len(crashes))],
        ["other failures (the child exited with an error before its report)", str(len(exits))],
        ["lost: acknowledged items missing or with a wrong value", str(sum(c.lost for c in results))],
        [
            f"wrong answers: items (up to {checked} per round, plus its 50 new ones) not first by their own vector "
            "/ by their text",
            f"{sum(c.wrong_vector for c in results)} / {sum(c.wrong_text for c in results)}",
        ],
        [
            "one round (fresh process: probe, open, checks, 50 puts): median / max",
            f"{statistics.median(seconds):.1f} s / {max(seconds):.1f} s" if seconds else "-",
        ],
    ]


def synthetic_segment(seg: Path, n: int, dims: int = 384, m: int = 16, seed: int = 0) -> None:
    """Write an HNSW segment of ``n`` elements in the layout of Chroma's hnswlib (see `_hnsw_check`)."""
    rng = np.random.default_rng(seed)
    seg.mkdir(parents=True)
    m0 = 2 * m
    mult = 1 / math.log(m)
    levels = np.floor(-np.log(rng.random(n)) * mult).astype(np.int64)
    top = int(levels.max())
    entry = int(np.argmax(levels))
    offset_data = 4 + 4 * m0
    label_offset = offset_data + 4 * dims
    size = label_offset + 8
    header = struct.pack("<i6QiI3QdQ", 1, 0, n, n, size, label_offset, offset_data, top, entry, m, m0, m, mult, 100)
    (seg / "header.bin").write_bytes(header)
    labels = rng.permutation(n).astype(np.uint64) + 1
    with open(seg / "data_level0.bin", "wb") as f:
        for start in range(0, n, 32_768):
            k = min(32_768, n - start)
            rows = np.zeros((k, size), dtype=np.uint8)
            counts = rng.integers(m, m0 + 1, size=k).astype(np.uint32)
            rows[:, :4] = counts.view(np.uint8).reshape(k, 4)
            rows[:, 4:offset_data] = rng.integers(0, n, size=(k, m0), dtype=np.uint32).view(np.uint8)
            vec = rng.standard_normal((k, dims), dtype=np.float32)
            vec /= np.linalg.norm(vec, axis=1, keepdims=True)
            rows[:, offset_data:label_offset] = vec.view(np.uint8)
            rows[:, label_offset:] = labels[start : start + k].view(np.uint8).reshape(k, 8)
            f.write(rows.tobytes())
    per = 1 + m
    words = np.zeros(n + int(levels.sum()) * per, dtype=np.uint32)
    sizes = levels * per
    pos = np.arange(n) + np.concatenate([[0], np.cumsum(sizes)[:-1]])
    words[pos] = (levels * 4 * per).astype(np.uint32)
    for lvl in range(1, top + 1):
        owners = np.flatnonzero(levels >= lvl)
        pool = owners  # a level-l link leads to an element that reaches level l
        starts = pos[owners] + 1 + (lvl - 1) * per
        k = min(m, max(len(pool) - 1, 1))
        words[starts] = k
        words[starts[:, None] + 1 + np.arange(k)[None, :]] = rng.choice(pool, size=(len(owners), k))
    words.tofile(seg / "link_lists.bin")
    np.ones(n, dtype=np.float32).tofile(seg / "length.bin")


def _time_check(seg: Path, repeats: int) -> tuple[float, float, float]:
    """Median seconds of the check: wall from the page cache, wall from disk, CPU from the page cache."""
    assert check_segment(seg) == "", check_segment(seg)
    warm, cold, cpu = [], [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        check_segment(seg)
        warm.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        os.sync()
        evict(seg)
        t = time.perf_counter()
        check_segment(seg)
        cold.append(time.perf_counter() - t)
    return statistics.median(warm), statistics.median(cold), statistics.median(cpu)


def _time_seal(seg: Path, repeats: int) -> float:
    """Median wall seconds of the seal's content hash of the same files, from the page cache (for scale)."""
    from langgraph_memory.index._session import fingerprint

    fingerprint(seg)
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fingerprint(seg)
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def check_cost(sizes: list[int], repeats: int, log: Log) -> list[list[str]]:
    """Rows: the structure check's time on synthetic segments of ``sizes`` vectors."""
    rows: list[list[str]] = []
    for n in sizes:
        tmp = Path(tempfile.mkdtemp(prefix="lgm-hnsw-check-"))
        try:
            seg = tmp / "seg"
            t = time.perf_counter()
            synthetic_segment(seg, n)
            log(f"  wrote a {n:,}-vector segment in {time.perf_counter() - t:.0f} s")
            warm, cold, cpu = _time_check(seg, repeats)
            seal = _time_seal(seg, repeats)
            rows.append(
                [
                    f"{n:,} vectors (384-d, M 16; written in hnswlib's layout): segment size / check from the page "
                    f"cache / from disk / its CPU time (page cache) / the seal's xxh3 hash of the same files "
                    f"(page cache), medians of {repeats}",
                    f"{folder_size(seg) / 1e6:,.0f} MB / {warm * 1000:.0f} ms / {cold * 1000:.0f} ms / "
                    f"{cpu * 1000:.0f} ms / {seal * 1000:.0f} ms",
                ]
            )
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return rows
