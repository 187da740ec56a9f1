"""One run of ``bulk_load_bench.py --catch-up``: puts and searches while the index catches up after a bulk load.

    python bench/load/_catch_up_child.py BASE BULK BATCH DIMS DESIGN FOLDER [FOREGROUND [URL]]  # one JSON line

``DESIGN`` is ``thread`` (``index_process=False``), ``process`` (``index_process=True``),
``default`` (what ``ChromaStore()`` does in the tree under test) or ``server`` (the index on a
``chroma run`` server on loopback, started for the run). A store of
``BASE`` items (precomputed clustered 384-d vectors, 50 namespaces, a filterable
field) is loaded and indexed; then ``BULK`` more go in through ``batch()`` in a
thread, and from its first batch until the index holds everything, this thread
puts single items (10 ms apart) while another thread runs a search of every
planner path (10 ms apart). Each sample is put in the window it started in:
*loading* (until the last ``batch()`` returned) or *catch-up* (until the index
applied the load's last change). The same is measured at rest afterwards.
The catalog's lock is timed for the putting thread: of the puts over 15 ms, how
much of their time went to waiting for it (the rest is the GIL, the commit, ...).
Searches during catch-up are also given per tenth of that window, beside the
changes of the load the index had still to apply (what a search scores exactly).

``FOREGROUND`` ``off`` runs the same load with nothing beside it and times the
catch-up until ``wait_for_index()`` returns. ``URL`` puts the catalog on that
PostgreSQL database (the index stays in ``FOLDER``).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp, SearchOp

from langgraph_memory.catalog import queue as _queue
from langgraph_memory.store import ChromaStore

base, bulk, batch, dims = (int(a) for a in sys.argv[1:5])
design, folder = sys.argv[5], Path(sys.argv[6])
foreground = (sys.argv[7] if len(sys.argv) > 7 else "on") == "on"
url = sys.argv[8] if len(sys.argv) > 8 else ""
n = base + bulk + 60_000  # room for the single puts (10 ms apart for up to 600 s)
rng = np.random.default_rng(25)
centers = rng.standard_normal((200, dims)).astype(np.float32)
vectors = centers[rng.integers(0, 200, n)] + 0.3 * rng.standard_normal((n, dims)).astype(np.float32)
words = np.array([f"w{i}" for i in range(20000)] + "momentum breakout carry trading whipsaw volume".split())
lens = rng.integers(10, 31, n)
picks = rng.integers(0, len(words), (n, 30))
texts = [" ".join(words[picks[i, : lens[i]]]) + f" doc {i}" for i in range(n)]
row = {t: i for i, t in enumerate(texts)}


class Lookup(Embeddings):
    def embed_documents(self, ts: list[str]) -> list[list[float]]:
        return vectors[[row[t] for t in ts]].tolist()

    def embed_query(self, t: str) -> list[float]:
        return vectors[row[t]].tolist()


index: Any = {"dims": dims, "embed": Lookup(), "fields": ["content"]}
kw = {"thread": {"index_process": False}, "process": {"index_process": True}, "default": {}, "server": {}}[design]
where: dict[str, Any] = {"data_dir": folder}
if url:
    from langgraph_memory.config import Settings

    where = {"settings": Settings.resolve(url, local_dir=folder)}
if design == "server":  # the index on a `chroma run` server on loopback, started for the run
    from bench.common.chroma_server import ChromaServer

    server = ChromaServer(folder / "chroma-server")
    server.start()
    store = ChromaStore(server.client(), index=index, **where)
else:
    store = ChromaStore(index=index, **kw, **where)


class TimedLock:
    """The catalog's lock, timing how long the measuring thread waits for it."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.waited, self.me = inner, 0.0, threading.get_ident()

    def acquire(self, *a: Any, **k: Any) -> bool:
        t = time.perf_counter()
        ok = self.inner.acquire(*a, **k)
        if threading.get_ident() == self.me:
            self.waited += time.perf_counter() - t
        return bool(ok)

    def release(self) -> None:
        self.inner.release()

    def __enter__(self) -> TimedLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


timed = TimedLock(store.catalog._lock)
store.catalog._lock = timed  # type: ignore[assignment]


def ops(start: int, stop: int) -> list[PutOp]:
    return [
        PutOp(("bulk", f"u{i % 50}"), f"k{i}", {"content": texts[i], "kind": int(i % 7)}) for i in range(start, stop)
    ]


def load(start: int, stop: int) -> None:
    for s in range(start, stop, batch):
        store.batch(ops(s, min(stop, s + batch)))


#: Every planner path a search takes here (the strategy each got is reported beside it).
SEARCHES: dict[str, tuple[tuple[str, ...], dict[str, Any] | None, bool]] = {
    "whole collection": (("bulk",), None, True),
    "one namespace": (("bulk", "u3"), None, True),
    "filtered, whole collection": (("bulk",), {"kind": 3}, True),
    "filtered, one namespace": (("bulk", "u3"), {"kind": 3}, True),
    "listing (no query)": (("bulk", "u3"), None, False),
}
next_key = [base + bulk]


def pct(v: list[float], p: float) -> float:
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] * 1000 if v else float("nan")


def applied_seq() -> int:
    """How far the index applied the log of the collection the items go to (``loaded``, after the first load)."""
    with store.catalog.read() as conn:
        return _queue.applied(conn, loaded[0])


loaded = [""]


def cpu() -> tuple[float, float]:
    """CPU seconds so far of this process (the load, the puts, the searches) and of the index's child process."""
    process = getattr(store.vector_index.handle, "process", None)  # None: the index in this process or a server
    pid = process.pid if process is not None else None
    child = 0.0
    if pid is not None:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        child = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    return time.process_time(), child


def measure(until: Any = None, least: int = 40, most_s: float = 180.0) -> dict[str, Any]:
    """Single puts here and searches in a thread until ``until()``; every sample with its start (s from ``started``)."""
    put: list[tuple[float, float, float]] = []  # (start, seconds, of them waiting for the catalog's lock)
    per: dict[str, list[tuple[float, float]]] = {k: [] for k in [*SEARCHES, "get"]}
    applied_at: list[tuple[float, int]] = []  # (start of a round of searches, log position the index had applied)
    stop = threading.Event()

    def searcher() -> None:
        j = 0
        while not stop.is_set():
            applied_at.append((time.perf_counter() - started, applied_seq()))
            q = texts[(j * 7919) % (base + bulk)]
            for name, (prefix, filt, query) in SEARCHES.items():
                ns = prefix if len(prefix) == 1 else ("bulk", f"u{j % 50}")
                t = time.perf_counter()
                store.search(ns, query=q if query else None, filter=filt, limit=10)
                per[name].append((t - started, time.perf_counter() - t))
            t = time.perf_counter()
            store.get(("bulk", f"u{j % 50}"), f"k{j * 50 + j % 50}")
            per["get"].append((t - started, time.perf_counter() - t))
            j += 1
            time.sleep(0.01)

    th = threading.Thread(target=searcher, daemon=True)
    th.start()
    first = time.perf_counter()
    while True:
        i = next_key[0]
        next_key[0] += 1
        w0 = timed.waited
        t = time.perf_counter()
        store.put(("bulk", f"u{i % 50}"), f"k{i}", {"content": texts[i], "kind": int(i % 7)})
        put.append((t - started, time.perf_counter() - t, timed.waited - w0))
        time.sleep(0.01)
        enough = len(put) >= least and min(len(v) for v in per.values()) >= least
        if (enough and (until is None or until())) or time.perf_counter() - first > most_s or next_key[0] >= n:
            break
    stop.set()
    th.join()
    return {"put": put, "search": per, "applied": applied_at}


def summary(m: dict[str, Any], lo: float = float("-inf"), hi: float = float("inf")) -> dict[str, Any]:
    """Percentiles of the samples of ``m`` that started in [lo, hi)."""
    put = [(p, w) for s, p, w in m["put"] if lo <= s < hi]
    per = {k: [x for s, x in v if lo <= s < hi] for k, v in m["search"].items()}
    slow = [(p, w) for p, w in put if p > 0.015]
    return {
        "puts": len(put),
        "search_rounds": min(len(v) for v in per.values()),
        "put_p50": pct([p for p, _ in put], 50),
        "put_p95": pct([p for p, _ in put], 95),
        "put_max": pct([p for p, _ in put], 100),
        "slow_puts": len(slow),
        "slow_put_ms": sum(p for p, _ in slow) * 1000,
        "slow_put_lock_ms": sum(w for _, w in slow) * 1000,
        "search_p50": {k: pct(v, 50) for k, v in per.items()},
        "search_p95": {k: pct(v, 95) for k, v in per.items()},
    }


def tenths(m: dict[str, Any], lo: float, hi: float, last: int) -> list[dict[str, Any]]:
    """Search p50 per tenth of [lo, hi), beside the load's changes still to apply at the tenth's first round."""
    out = []
    for k in range(10):
        a, b = lo + (hi - lo) * k / 10, lo + (hi - lo) * (k + 1) / 10
        at = [seq for s, seq in m["applied"] if a <= s < b]
        out.append(
            {
                "to_apply": max(0, last - at[0]) if at else None,
                "rounds": len(at),
                "search_p50": {name: pct([x for s, x in v if a <= s < b], 50) for name, v in m["search"].items()},
            }
        )
    return out


load(0, base)
store.wait_for_index()
with store.catalog.read() as c:  # the one collection that holds items (the others stay empty)
    loaded[0] = max(store.vector_index.collections, key=lambda name: _queue.applied(c, name))
started = time.perf_counter()
acked_at: list[float | None] = [None]
head: list[int] = [0]
cpu_at = {"start": cpu()}


def bulk_load() -> None:
    load(base, base + bulk)
    with store.catalog.read() as conn:
        head[0] = _queue.last_seq(conn)  # the load's last change: caught up once the index applied it
    acked_at[0] = time.perf_counter() - started
    cpu_at["acked"] = cpu()


def cpu_s() -> dict[str, list[float]]:
    """CPU seconds (this process, the index's child) while loading and while catching up."""
    a, b, c = cpu_at["start"], cpu_at["acked"], cpu_at["caught"]
    return {"loading": [b[0] - a[0], b[1] - a[1]], "catch_up": [c[0] - b[0], c[1] - b[1]]}


if not foreground:  # the same load with nothing beside it: how long the index takes on its own
    bulk_load()
    store.wait_for_index()
    indexed = time.perf_counter() - started
    cpu_at["caught"] = cpu()
    store.close()
    if design == "server":
        server.stop()
    print(
        json.dumps(
            {"design": design, "foreground": False, "acked_s": acked_at[0], "indexed_s": indexed, "cpu_s": cpu_s()}
        )
    )
    raise SystemExit(0)

before_load = applied_seq()
loader = threading.Thread(target=bulk_load)
loader.start()  # the agents keep working from the load's first batch on
caught: list[float | None] = [None]


def caught_up() -> bool:
    # Not "nothing pending": the single puts go on while the index applies, so something always is.
    if caught[0] is None and acked_at[0] is not None and applied_seq() >= head[0]:
        caught[0] = time.perf_counter() - started
        cpu_at["caught"] = cpu()
    return caught[0] is not None


during = measure(until=caught_up, most_s=600.0)
loader.join()
acked = acked_at[0]
assert acked is not None
if caught[0] is None:  # past the measuring window: how long until it does
    while not caught_up():
        time.sleep(0.1)
indexed = caught[0]
assert indexed is not None
rest = measure(least=60)
strategies = {
    name: store.planner.explain(SearchOp(prefix, filt, 10, 0, texts[0]), has_query=True).strategy
    for name, (prefix, filt, query) in SEARCHES.items()
    if query
}
in_child = getattr(store.vector_index.handle, "process", None) is not None
store.close()
if design == "server":
    server.stop()
print(
    json.dumps(
        {
            "design": design,
            "foreground": True,
            "index_process": in_child,
            "acked_s": acked,
            "indexed_s": indexed,
            "load_changes": head[0] - before_load,
            "cpu_s": cpu_s(),
            "strategies": strategies,
            "loading": summary(during, hi=acked),
            "catch_up": summary(during, lo=acked, hi=indexed),
            "catch_up_tenths": tenths(during, acked, indexed, head[0]),
            "rest": summary(rest),
        }
    )
)
