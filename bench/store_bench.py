"""Put throughput and search latency: ChromaStore vs InMemoryStore vs SqliteStore vs bare Chroma.

Every store is fed the same precomputed vectors (random unit 384-d float32,
seeded) through an ``Embeddings`` that looks vectors up by text, so no store
pays for a model. Puts go through each store's public ``batch`` API in the
same batch size; searches use the same ``limit`` and query vectors. A bare
Chroma collection holding the same vectors (cosine HNSW, ``add`` in the same
batches, ``query`` with ``include=["metadatas", "distances"]``) is the floor.

A second part runs the real default model (all-MiniLM-L6-v2) and compares
ChromaStore's put throughput, cold embedding cache, with the model's own
``embed_documents`` throughput on the same texts in the same batches.

LangGraph's SqliteStore needs ``sqlite3`` that can load extensions (for
sqlite-vec); this machine's stdlib ``sqlite3`` cannot, so the bench opens
SqliteStore's connection with ``pysqlite3`` (``pip install pysqlite3-binary``)
or ``sqlean`` (``pip install sqlean.py``) when either is installed, and says
plainly in the table when none is.

    python bench/store_bench.py                      # 10,000 and 100,000 items
    python bench/store_bench.py --quick              # smoke run, ~1 minute
    python bench/store_bench.py --write              # also write bench/RESULTS_store.md
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    Stopwatch,
    fmt_ms,
    fmt_rate,
    git_state,
    machine,
    markdown_table,
    percentile,
)
from langchain_core.embeddings import Embeddings

DIMS = 384
NAMESPACE = (
    "research",
)  # typed collection research_findings: embeds "content", validates values
RESULTS_PATH = Path(__file__).resolve().parent / "RESULTS_store.md"

# Targets from the issue.
SPEEDUP_VS_PEERS = (
    10.0  # ChromaStore search p50 at the largest size vs InMemoryStore / SqliteStore
)
MAX_VS_FLOOR = 1.2  # ChromaStore search p50 / bare Chroma query p50
MIN_MODEL_FRACTION = 0.90  # store overhead on top of embedding at most 10% of put time

_WORDS = [
    "momentum",
    "earnings",
    "drift",
    "volatility",
    "yield",
    "curve",
    "spread",
    "credit",
    "equity",
    "rates",
    "inflation",
    "carry",
    "liquidity",
    "factor",
    "value",
    "growth",
    "quality",
    "small",
    "caps",
    "large",
    "caps",
    "dividend",
    "buyback",
    "guidance",
    "revenue",
    "margin",
    "sector",
    "rotation",
    "energy",
    "utilities",
    "banks",
    "tech",
    "semis",
    "retail",
    "housing",
    "commodities",
    "gold",
    "oil",
    "dollar",
    "euro",
    "yen",
    "emerging",
    "markets",
    "duration",
    "convexity",
    "options",
    "skew",
    "term",
    "structure",
    "vix",
    "hedge",
    "drawdown",
    "sharpe",
    "sortino",
    "beta",
    "alpha",
    "residual",
    "mean",
    "reversion",
    "breakout",
    "trend",
    "following",
    "regime",
    "bull",
    "bear",
    "sideways",
    "volatile",
    "signal",
    "decay",
    "crowding",
    "short",
    "interest",
    "flows",
    "etf",
    "rebalance",
    "quarter",
    "end",
    "month",
    "end",
    "overnight",
    "intraday",
    "gap",
    "open",
    "close",
    "auction",
    "vwap",
    "slippage",
    "costs",
    "turnover",
    "after",
    "before",
    "during",
    "weak",
    "strong",
    "rising",
    "falling",
    "persistent",
    "fades",
    "reverses",
    "outperforms",
    "lags",
    "tends",
    "to",
    "across",
    "when",
    "while",
    "because",
    "despite",
    "although",
    "the",
    "a",
    "of",
    "in",
    "on",
    "for",
    "with",
]


# ------------------------------------------------------------------ data


def make_texts(n: int, seed: int, *, prefix: str = "", lo: int = 100, hi: int = 200) -> list[str]:
    """Seeded, varied pseudo-sentences of ``lo``-``hi`` characters, all distinct."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        target = rng.randint(lo, hi)
        words = [f"{prefix}{i}:"] if prefix else []
        while sum(len(w) + 1 for w in words) < target:
            words.append(rng.choice(_WORDS))
        out.append(" ".join(words)[:target])
    return out


def unit_vectors(n: int, rng: np.random.Generator) -> np.ndarray:
    x = rng.standard_normal((n, DIMS), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


@dataclass
class Dataset:
    """N items (text, vector, confidence) and Q query vectors, all seeded."""

    keys: list[str]
    texts: list[str]
    confidence: list[float]
    vectors: np.ndarray
    query_texts: list[str]
    query_vectors: np.ndarray
    exact_top: np.ndarray  # (Q, k) indices of the true nearest items by cosine

    @classmethod
    def build(cls, n: int, n_queries: int, k: int, seed: int) -> Dataset:
        rng = np.random.default_rng(seed)
        vectors = unit_vectors(n, rng)
        # Queries are stored vectors plus as much noise again (cosine ~0.7 to
        # their source), so each has a clear nearest item, as real queries do.
        src = rng.integers(0, n, size=n_queries)
        noise = rng.standard_normal((n_queries, DIMS), dtype=np.float32) / np.sqrt(DIMS)
        q = vectors[src] + noise
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        sims = q @ vectors.T
        top = np.argpartition(-sims, k, axis=1)[:, :k]
        order = np.take_along_axis(sims, top, axis=1).argsort(axis=1)[:, ::-1]
        exact_top = np.take_along_axis(top, order, axis=1)
        return cls(
            keys=[f"k{i:07d}" for i in range(n)],
            texts=make_texts(n, seed, prefix="f"),
            confidence=[round(float(c), 3) for c in rng.random(n)],
            vectors=vectors,
            query_texts=[f"query {j}" for j in range(n_queries)],
            query_vectors=q.astype(np.float32),
            exact_top=exact_top,
        )


class LookupEmbeddings(Embeddings):
    """Precomputed vectors by text: every store gets the same ones, no model time."""

    def __init__(self, data: Dataset) -> None:
        self.model_name = "bench-lookup"
        self._matrix = np.vstack([data.vectors, data.query_vectors])
        self._row = {t: i for i, t in enumerate(data.texts)}
        n = len(data.texts)
        self._row.update({t: n + j for j, t in enumerate(data.query_texts)})

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._matrix[[self._row[t] for t in texts]].tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._matrix[self._row[text]].tolist()


# --------------------------------------------------------------- backends


class Backend:
    """One thing under test: puts a batch of items, answers one query."""

    name = "?"
    exact = False  # brute force: gets fewer queries at large sizes

    def put(self, idx: range) -> None:
        raise NotImplementedError

    def search(self, j: int) -> list[str]:
        raise NotImplementedError

    def close(self) -> None:
        pass


def _put_ops(data: Dataset, idx: range) -> list[Any]:
    from langgraph.store.base import PutOp

    return [
        PutOp(
            NAMESPACE,
            data.keys[i],
            {"content": data.texts[i], "confidence": data.confidence[i]},
        )
        for i in idx
    ]


class StoreBackend(Backend):
    """Any LangGraph ``BaseStore``, through ``batch`` and ``search`` only."""

    def __init__(
        self,
        name: str,
        store: Any,
        data: Dataset,
        k: int,
        *,
        exact: bool,
        on_close: Callable[[], None],
    ):
        self.name = name
        self.store = store
        self.data = data
        self.k = k
        self.exact = exact
        self._on_close = on_close

    def put(self, idx: range) -> None:
        self.store.batch(_put_ops(self.data, idx))

    def search(self, j: int) -> list[str]:
        hits = self.store.search(
            NAMESPACE, query=self.data.query_texts[j], limit=self.k
        )
        return [h.key for h in hits]

    def close(self) -> None:
        self._on_close()


class BareChroma(Backend):
    """The floor: a Chroma collection holding the same vectors and the value a store returns."""

    name = "bare Chroma collection (floor)"

    def __init__(self, data: Dataset, k: int, tmp: Path) -> None:
        import chromadb
        from chromadb.config import Settings

        self.client = chromadb.PersistentClient(
            path=str(tmp / "bare"), settings=Settings(anonymized_telemetry=False)
        )
        self.col = self.client.create_collection(
            "bare", metadata={"hnsw:space": "cosine"}, embedding_function=None
        )
        self.data = data
        self.k = k

    def put(self, idx: range) -> None:
        d = self.data
        self.col.add(
            ids=[d.keys[i] for i in idx],
            embeddings=d.vectors[idx.start : idx.stop].tolist(),
            metadatas=[
                {"content": d.texts[i], "confidence": d.confidence[i]} for i in idx
            ],
        )

    def search(self, j: int) -> list[str]:
        res = self.col.query(
            query_embeddings=[self.data.query_vectors[j].tolist()],
            n_results=self.k,
            include=["metadatas", "distances"],
        )
        return res["ids"][0]


def _release_chroma() -> None:
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient.clear_system_cache()


def extension_sqlite() -> tuple[Any | None, str]:
    """A DB-API ``sqlite3`` module that can load extensions, and how it was found."""
    import sqlite3

    if hasattr(sqlite3.connect(":memory:"), "enable_load_extension"):
        return sqlite3, f"stdlib sqlite3 {sqlite3.sqlite_version}"
    for mod, dist in (
        ("pysqlite3.dbapi2", "pysqlite3-binary"),
        ("sqlean", "sqlean.py"),
    ):
        try:
            m = __import__(mod, fromlist=["connect"])
        except ImportError:
            continue
        return m, f"{dist} (SQLite {m.sqlite_version})"
    return None, (
        "not run: this Python's sqlite3 cannot load extensions (built without "
        "SQLITE_ENABLE_LOAD_EXTENSION), so sqlite-vec cannot load; pip install pysqlite3-binary"
    )


def make_backends(
    which: Sequence[str], data: Dataset, k: int, tmp: Path
) -> list[Callable[[], Backend | str]]:
    """Factories, so only one store holds memory at a time; a str means 'could not run: why'."""

    def bare() -> Backend:
        return BareChroma(data, k, tmp)

    def chroma_store() -> Backend:
        from langgraph_memory.store import ChromaStore

        store = ChromaStore(
            data_dir=tmp / "chromastore",
            index={"dims": DIMS, "embed": LookupEmbeddings(data)},
        )

        return StoreBackend(
            "ChromaStore", store, data, k, exact=False, on_close=store.close
        )

    def in_memory() -> Backend:
        from langgraph.store.memory import InMemoryStore

        store = InMemoryStore(
            index={"dims": DIMS, "embed": LookupEmbeddings(data), "fields": ["content"]}
        )
        return StoreBackend(
            "InMemoryStore", store, data, k, exact=True, on_close=lambda: None
        )

    def sqlite() -> Backend | str:
        mod, how = extension_sqlite()
        if mod is None:
            return how
        from langgraph.store.sqlite import SqliteStore

        conn = mod.connect(
            str(tmp / "store.sqlite"), check_same_thread=False, isolation_level=None
        )
        # SqliteStore names the embedded paths "text_fields" (InMemoryStore: "fields").
        index = {
            "dims": DIMS,
            "embed": LookupEmbeddings(data),
            "text_fields": ["content"],
        }
        store = SqliteStore(conn, index=index)  # type: ignore[arg-type]
        store.setup()
        return StoreBackend(
            "SqliteStore (sqlite-vec)", store, data, k, exact=True, on_close=conn.close
        )

    table = {
        "chromastore": chroma_store,
        "bare": bare,
        "inmemory": in_memory,
        "sqlite": sqlite,
    }
    return [table[w] for w in which]


# ----------------------------------------------------------------- running


@dataclass
class Row:
    items: int
    backend: str
    put_rate: float | None = None
    p50: float | None = None
    p95: float | None = None
    queries: int = 0
    recall: float | None = None
    top1: float | None = None
    ratio: str = ""
    note: str = ""
    kind: str = ""  # chromastore | peer | floor | model | model-store
    extra: dict[str, Any] = field(default_factory=dict)


def _kind(b: Backend) -> str:
    return (
        "chromastore"
        if b.name == "ChromaStore"
        else ("floor" if isinstance(b, BareChroma) else "peer")
    )


def _row_backend(r: Row) -> str:
    return {"floor": "bare", "chromastore": "chromastore"}.get(r.kind) or (
        "inmemory" if r.backend.startswith("InMemory") else "sqlite"
    )


def load_backend(
    factory: Callable[[], Backend | str], data: Dataset, *, batch: int, log: Callable
) -> tuple[Backend | None, Row]:
    """Build a backend and put every item through it, timed."""
    n = len(data.keys)
    made = factory()
    if isinstance(made, str):
        log(f"  SqliteStore: {made}")
        return None, Row(n, "SqliteStore (sqlite-vec)", note=made, kind="peer")
    sw = Stopwatch()
    for start in range(0, n, batch):
        with sw:
            made.put(range(start, min(n, start + batch)))
    row = Row(n, made.name, put_rate=n / sw.seconds, kind=_kind(made))
    log(f"  {made.name}: put {n:,} in {sw.seconds:.1f} s ({row.put_rate:,.0f} items/s)")
    return made, row


def search_all(
    live: list[tuple[Backend, Row, int]],
    data: Dataset,
    *,
    warmup: int,
    k: int,
    log: Callable,
) -> None:
    """Time queries on every live backend, interleaved query by query.

    Interleaving (and rotating which backend goes first) makes drift in the
    machine's load hit every backend alike, so the ratios stay fair on a
    shared machine. Each backend gets its own budget of queries.
    """
    for b, _, _ in live:
        for j in range(warmup):
            b.search(j % len(data.query_texts))
    lat: list[list[float]] = [[] for _ in live]
    hits = [0] * len(live)
    firsts = [0] * len(live)
    most = max((q for _, _, q in live), default=0)
    for j in range(most):
        want = {data.keys[i] for i in data.exact_top[j][:k]}
        order = list(range(len(live)))
        rot = j % len(order)
        for x in order[rot:] + order[:rot]:
            b, _, budget = live[x]
            if j >= budget:
                continue
            t0 = time.perf_counter()
            keys = b.search(j)
            lat[x].append((time.perf_counter() - t0) * 1000.0)
            hits[x] += len(want.intersection(keys))
            firsts[x] += bool(keys) and keys[0] == data.keys[data.exact_top[j][0]]
    for (b, row, budget), xs, hit, first in zip(live, lat, hits, firsts):
        row.p50, row.p95, row.queries = percentile(xs, 50), percentile(xs, 95), budget
        row.recall = hit / (budget * k) if budget else None
        row.top1 = first / budget if budget else None
        log(
            f"  {b.name}: search p50 {row.p50:.2f} ms, p95 {row.p95:.2f} ms over {budget} queries, "
            f"recall@{k} {row.recall:.3f}, top-1 {row.top1:.3f}"
        )


def run_size(n: int, args: argparse.Namespace, log: Callable) -> list[Row]:
    """Approximate (Chroma) backends are loaded together and queried interleaved;
    brute-force ones run alone afterwards, since their numpy/SQLite scans leave
    BLAS threads spinning and caches cold for whatever runs next (measured:
    a bare Chroma query interleaved with InMemoryStore's went from 1.3 to 6 ms)."""
    log(f"[{n:,} items] building data (seed {args.seed})")
    data = Dataset.build(n, args.queries, args.k, args.seed)
    rows: list[Row] = []
    tmp = Path(tempfile.mkdtemp(prefix=f"store_bench_{n}_"))
    factories = dict(
        zip(args.backends, make_backends(args.backends, data, args.k, tmp))
    )
    groups = [[b for b in args.backends if b in ("bare", "chromastore")]]
    groups += [[b] for b in args.backends if b not in ("bare", "chromastore")]
    try:
        for group in groups:
            if not group:
                continue
            live: list[tuple[Backend, Row, int]] = []
            try:
                for name in group:
                    b, row = load_backend(
                        factories[name], data, batch=args.batch, log=log
                    )
                    rows.append(row)
                    if b is not None:
                        q = args.queries
                        if b.exact and n >= args.brute_threshold:
                            q = min(q, args.brute_queries)
                        live.append((b, row, q))
                search_all(live, data, warmup=args.warmup, k=args.k, log=log)
            finally:
                for b, _, _ in live:
                    b.close()
                live.clear()
                _release_chroma()
                gc.collect()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    order = {
        name: i for i, name in enumerate(["bare", "chromastore", "inmemory", "sqlite"])
    }
    rows.sort(key=lambda r: order.get(_row_backend(r), 9))
    cs = next((r for r in rows if r.kind == "chromastore" and r.p50), None)
    judged = n == max(args.sizes_list)  # the targets are stated for the largest size
    if cs is not None:
        for r in rows:
            if r.p50 is None or r is cs:
                continue
            if r.kind == "floor":
                x = cs.p50 / r.p50
                r.ratio = f"ChromaStore = {x:.2f}x floor" + (
                    f" (target <= {MAX_VS_FLOOR}x)" if judged else ""
                )
                ok = x <= MAX_VS_FLOOR
            else:
                x = r.p50 / cs.p50
                r.ratio = f"ChromaStore {x:,.1f}x faster" + (
                    f" (target >= {SPEEDUP_VS_PEERS:.0f}x)" if judged else ""
                )
                ok = x >= SPEEDUP_VS_PEERS
            r.extra["x"] = x
            if judged:
                r.extra["ok"] = ok
        cs.ratio = "reference"
    return rows


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
            log(
                f"  round {r + 1}: model {n / dm:.1f} texts/s, ChromaStore put {n / ds:.1f} items/s "
                f"({dm / ds:.3f})"
            )
        assert store.embeddings is not None and store.embeddings.misses == n * len(rounds), "cache was not cold"
        store.close()
        _release_chroma()
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
    note = (
        f"{lo}-{hi} chars; rounds: {', '.join(f'{f:.3f}' for f in fractions)}; per item: model {ms_model:.2f} ms, "
        f"store outside the model {ms_outside:.2f} ms"
    )
    return [
        Row(
            total,
            f"all-MiniLM-L6-v2 embed_documents alone, {lo}-{hi} chars",
            put_rate=total / t_model.seconds,
            kind="model",
            note=f"{len(rounds)} rounds pooled",
        ),
        Row(
            total,
            f"ChromaStore + all-MiniLM-L6-v2 (cold cache), {lo}-{hi} chars",
            put_rate=total / t_store.seconds,
            kind="model-store",
            ratio=f"{frac:.3f} of model throughput; {100 * outside:.1f}% of put time outside the model "
            f"(target <= {100 * (1 - MIN_MODEL_FRACTION):.0f}%)",
            note=note,
            extra={
                "ok": outside <= 1 - MIN_MODEL_FRACTION,
                "x": frac,
                "outside": outside,
                "first": first_outside / t_store.seconds,
                "chars": f"{lo}-{hi}",
                "ms_model": ms_model,
                "ms_outside": ms_outside,
            },
        ),
    ]


# ------------------------------------------------------------------ output

HEADER = [
    "Items",
    "Backend",
    "Put (items/s)",
    "Search p50 (ms)",
    "Search p95 (ms)",
    "Queries",
    "Recall@10",
    "Top-1",
    "Ratio",
]
RIGHT = [True, False, True, True, True, True, True, True, False]


def table_rows(rows: list[Row]) -> list[list[str]]:
    out = []
    for r in rows:
        ratio = r.ratio
        if "ok" in r.extra:
            ratio += " PASS" if r.extra["ok"] else " MISS"
        if r.note and r.put_rate is None:
            ratio = r.note
        out.append(
            [
                f"{r.items:,}",
                r.backend,
                fmt_rate(r.put_rate),
                fmt_ms(r.p50),
                fmt_ms(r.p95),
                str(r.queries) if r.queries else "-",
                f"{r.recall:.3f}" if r.recall is not None else "-",
                f"{r.top1:.3f}" if r.top1 is not None else "-",
                ratio,
            ]
        )
    return out


def print_table(rows: list[Row], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for h, right in zip(HEADER, RIGHT):
        t.add_column(h, justify="right" if right else "left")
    for i, cells in enumerate(table_rows(rows)):
        end = i + 1 < len(rows) and rows[i + 1].items != rows[i].items
        t.add_row(*cells, end_section=end)
    Console(width=200).print(t)


def summary(rows: list[Row], sizes: list[int]) -> list[str]:
    out = []
    for r in rows:
        if "ok" not in r.extra:
            continue
        x = r.extra["x"]
        if r.kind == "peer":
            what = (
                f"search at {r.items:,} items, ChromaStore vs {r.backend.split(' (')[0]}: {x:.1f}x faster "
                f"(target >= {SPEEDUP_VS_PEERS:.0f}x)"
            )
        elif r.kind == "floor":
            what = f"search at {r.items:,} items, ChromaStore / bare Chroma: {x:.2f}x (target <= {MAX_VS_FLOOR}x)"
        else:
            what = (
                f"store overhead on top of the model, {r.extra['chars']}-character texts: "
                f"{100 * r.extra['outside']:.1f}% of ChromaStore's put time is spent outside the model "
                f"(target <= {100 * (1 - MIN_MODEL_FRACTION):.0f}%; {r.extra['ms_outside']:.2f} ms per item "
                f"against {r.extra['ms_model']:.2f} ms in the model; {100 * r.extra['first']:.1f}% is the first "
                f"batch, which opens Chroma and creates the collections). Put throughput vs the model alone: "
                f"{x:.3f} (a ratio of two separately timed runs, so load noise moves it more than the overhead does)"
            )
        out.append(f"- {'PASS' if r.extra['ok'] else 'MISS'}: {what}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--sizes",
        default=None,
        help="item counts, comma separated (default 10000,100000; --quick 2000)",
    )
    p.add_argument(
        "--queries",
        type=int,
        default=None,
        help="timed queries per store (default 200; --quick 50)",
    )
    p.add_argument(
        "--brute-queries",
        type=int,
        default=50,
        help="timed queries for brute-force stores (InMemoryStore, SqliteStore) at sizes >= --brute-threshold (default 50)",
    )
    p.add_argument("--brute-threshold", type=int, default=50_000)
    p.add_argument(
        "--warmup", type=int, default=5, help="untimed queries first (default 5)"
    )
    p.add_argument(
        "--batch",
        type=int,
        default=1000,
        help="ops per store.batch / texts per embed call (default 1000)",
    )
    p.add_argument("--k", type=int, default=10, help="search limit (default 10)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--backends",
        default="bare,chromastore,inmemory,sqlite",
        help="subset/order of bare,chromastore,inmemory,sqlite",
    )
    p.add_argument(
        "--model-texts",
        type=int,
        default=None,
        help="texts for the real-model part (default 1000; --quick 200)",
    )
    p.add_argument(
        "--model-rounds",
        type=int,
        default=None,
        help="alternating model/store rounds (default 5; --quick 1)",
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
        help="text lengths in characters for the real-model part, comma separated ranges (default 100-200,400-600)",
    )
    p.add_argument("--skip-model", action="store_true", help="skip the real-model part")
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 2,000 items, 50 queries, 200 model texts, 1 round",
    )
    p.add_argument(
        "--write",
        nargs="?",
        const=str(RESULTS_PATH),
        default=None,
        metavar="PATH",
        help=f"also write the table as markdown (default path {RESULTS_PATH.relative_to(Path.cwd()) if RESULTS_PATH.is_relative_to(Path.cwd()) else RESULTS_PATH})",
    )
    args = p.parse_args(argv)
    # --quick changes the defaults only; explicit options still win.
    for name, full, quick in (
        ("sizes", "10000,100000", "2000"),
        ("queries", 200, 50),
        ("model_texts", 1000, 200),
        ("model_rounds", 5, 1),
    ):
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    try:
        args.model_lengths = [
            tuple(int(x) for x in part.split("-", 1)) for part in args.model_lengths.split(",") if part.strip()
        ]
    except ValueError:
        p.error("--model-lengths takes ranges like 100-200,400-600")
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    args.sizes_list = sizes
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(args.backends) - {"bare", "chromastore", "inmemory", "sqlite"})
    if unknown:
        p.error(
            f"unknown backend(s) {', '.join(unknown)}; choose from bare, chromastore, inmemory, sqlite"
        )
    args.batch = max(1, args.batch)

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
    mach.code = "library at " + git_state(
        Path(__file__).resolve().parent.parent, ["langgraph_memory"]
    )
    started = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f}s] {msg}", flush=True)

    log(
        f"load average {'/'.join(f'{x:.2f}' for x in mach.load_start)} on {mach.nproc} cores"
        + (
            "  (busy machine: results will be noisy)"
            if mach.load_start[0] > 0.5 * mach.nproc
            else ""
        )
    )
    rows: list[Row] = []
    for n in sizes:
        rows.extend(run_size(n, args, log))
    if not args.skip_model:
        rows.extend(run_model(args, log))
    mach.load_end = os.getloadavg()
    elapsed = time.perf_counter() - started

    title = f"Store benchmark: k={args.k}, batches of {args.batch}, namespace {NAMESPACE}, seed {args.seed}"
    print_table(rows, title)
    lines = summary(rows, sizes)
    for line in lines:
        print(line)
    print("\n".join(mach.lines()))
    if args.write:
        write_markdown(Path(args.write), rows, lines, mach, args, sizes, elapsed, argv)
        log(f"wrote {args.write}")
    return 0


def write_markdown(
    path: Path,
    rows: list[Row],
    lines: list[str],
    mach: Any,
    args: argparse.Namespace,
    sizes: list[int],
    elapsed: float,
    argv: list[str] | None,
) -> None:
    cmd = "python bench/store_bench.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    brute = (
        f"InMemoryStore and SqliteStore search by brute force; at sizes >= {args.brute_threshold:,} "
        f"they get {args.brute_queries} timed queries instead of {args.queries}."
    )
    md = [
        "# Store benchmark",
        "",
        f"Command: `{cmd.strip()}` (whole run {elapsed / 60:.1f} min)",
        "",
        *mach.lines(),
        "",
        markdown_table(HEADER, table_rows(rows), RIGHT),
        "",
        "## Targets",
        "",
        *(lines or ["- (no targets evaluated in this run)"]),
        "",
        "## How it was measured",
        "",
        (
            f"- Items: namespace `{NAMESPACE}` (ChromaStore's typed collection `research_findings`, which validates "
            'values and embeds `content`), values `{"content": <100-200 char text>, "confidence": <float>}`. '
            'InMemoryStore indexes `fields=["content"]` and SqliteStore `text_fields=["content"]` (its name for it), so every store embeds the same text.'
        ),
        (
            f"- Vectors: random unit {DIMS}-d float32 (seeded), precomputed; each store's `embed` looks them up by text. "
            "Queries are stored vectors plus equal-norm noise (cosine ~0.7 to their source), also precomputed."
        ),
        (
            f"- Puts: `store.batch([PutOp, ...])`, {args.batch} ops per batch, for every store; bare Chroma "
            f"`collection.add` in the same batches with metadata `{{content, confidence}}`. Put (items/s) is items / total batch time."
        ),
        (
            f"- Search: `store.search({NAMESPACE}, query=..., limit={args.k})` (ChromaStore: no `where` clause); bare Chroma "
            f'`query(query_embeddings=[v], n_results={args.k}, include=["metadatas", "distances"])`. '
            f"ChromaStore and bare Chroma are loaded side by side and queried interleaved, query by query (rotating which goes "
            f"first), so load drift hits both alike; InMemoryStore and SqliteStore run alone afterwards. {args.warmup} warm-up queries each, then per-query wall time (perf_counter); p50/p95 over the timed queries. "
            f"{brute}"
        ),
        (
            f"- Recall@{args.k}: share of the exact top {args.k} (numpy brute force) returned. Top-1: share of queries whose first result is "
            "the exact nearest item (the query's noisy source, cosine ~0.7 against ~0.2 for the rest). Chroma's HNSW "
            "(chromadb 1.5.9 defaults: M 16, ef_search 100) is approximate, and random 384-d vectors are its hardest "
            "case, so recall here is a lower bound; ChromaStore and the floor share the same index, so their latency "
            "ratio compares like with like."
        ),
        "- Ratio: for peers, their search p50 / ChromaStore's; for the floor, ChromaStore's p50 / bare Chroma's.",
        (
            f"- Real model, for each text length ({', '.join(f'{lo}-{hi}' for lo, hi in args.model_lengths)} characters): "
            f"{args.model_rounds} round(s) of {args.model_texts} new seeded texts; the same `ChromaStore.default_index()` "
            "model object embeds them alone (`embed_documents`) and inside `ChromaStore(index=...)` puts "
            "(`{\"content\": text, \"confidence\": 0.5}` in `('research',)`), one store on a fresh data dir for all rounds, "
            "as an agent keeps its store open; every text is new to it, so the embedding cache never hits (checked). "
            f"{args.model_batch} texts per call/batch on both sides; model and store alternate batch by batch (which goes "
            "first alternates too) after an untimed warm-up on other texts of the same length; the fraction is total "
            "model time / total store time over all rounds. On a shared machine that "
            "difference of two noisy timings can swing either way by more than the overhead itself, so the "
            "bench also times the model calls ChromaStore makes inside its puts and reports the share of put "
            "time spent outside the model: the store's own overhead, measured directly. The first batch, which "
            "opens Chroma and creates the collections, is included and also reported on its own."
        ),
        (
            "- SqliteStore's vector search loads the sqlite-vec extension, which needs a `sqlite3` that can load "
            "extensions; this machine's stdlib one cannot (no `enable_load_extension`). The bench opens SqliteStore's "
            f"connection (a file in a temp dir) with: {extension_sqlite()[1]}. Only SqliteStore uses it; Chroma keeps "
            "the stdlib module. sqlite-vec's `vec_distance_cosine` is a full scan (no ANN index), hence exact recall."
        ),
        "",
    ]
    path.write_text("\n".join(md), encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
