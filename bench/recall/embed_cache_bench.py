"""The embedding cache of this checkout against an older one, interleaved: file size per item, hit and miss times.

    .venv/bin/python bench/recall/embed_cache_bench.py [--before REF] [--items 20000] [--rounds 3]

Both caches wrap one table model: 384-d vectors handed out from memory after ``--model-ms`` of busy CPU per
text (0.5 ms: this checkout's threshold for using the file; the default ONNX model takes 2-10 ms), so a
cache that weighs the model's cost against the file's reads the file, and a miss costs about that.
Per round, each version in turn (which goes first alternates):

* fill: ``--items`` new texts in batches of 100 (embedded and written), then the file's size per item
  (with its ``-wal``);
* file hit: a fresh cache on that file, one text a call (its in-memory LRU empty);
* memory hit: the same texts again (now in the LRU);
* miss: one new text a call, written to the file.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langchain_core.embeddings import Embeddings  # noqa: E402

from bench.common.report import cpu_flags, cpu_model  # noqa: E402

DIMS = 384


class TableModel(Embeddings):
    """Vectors from a table filled on first sight of a text: the model costs microseconds."""

    model_name = "bench-table-384"

    def __init__(self, seconds: float) -> None:
        self._rng = np.random.default_rng(7)
        self._table: dict[str, list[float]] = {}
        self._seconds = seconds

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        out = []
        until = time.perf_counter() + self._seconds * len(texts)
        while time.perf_counter() < until:  # the model's work, on the CPU as a real one's would be
            pass
        for t in texts:
            if t not in self._table:
                self._table[t] = self._rng.standard_normal(DIMS).astype(np.float32).tolist()
            out.append(self._table[t])
        return out

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def load_cache_class(ref: str, into: Path) -> Any:
    """``CachedEmbeddings`` of the package as of git ``ref``, imported as ``lgm_before``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref, "langgraph_memory"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    (into / "langgraph_memory").rename(into / "lgm_before")
    for path in (into / "lgm_before").rglob("*.py"):
        path.write_text(path.read_text().replace("langgraph_memory", "lgm_before"))
    sys.path.insert(0, str(into))
    return importlib.import_module("lgm_before.embeddings").CachedEmbeddings


def open_cache(cls: Any, path: Path, model: Embeddings) -> Any:
    return cls(model, path=path)


def per_call_us(cache: Any, texts: list[str]) -> list[float]:
    out = []
    for t in texts:
        started = time.perf_counter()
        cache.embed_documents([t])
        out.append((time.perf_counter() - started) * 1e6)
    return out


def one_round(name: str, cls: Any, folder: Path, items: int, probes: int, r: int, model_ms: float) -> dict[str, float]:
    model = TableModel(model_ms / 1000)
    path = folder / f"{name}-{r}.sqlite"
    texts = [f"{name} round {r} memory number {i}: rates rose and growth stocks fell" for i in range(items)]
    cache = open_cache(cls, path, model)
    started = time.perf_counter()
    for i in range(0, items, 100):
        cache.embed_documents(texts[i : i + 100])
    cache.flush()
    fill_us = (time.perf_counter() - started) / items * 1e6
    cache.close()
    size = sum(p.stat().st_size for p in folder.glob(f"{name}-{r}.sqlite*"))
    picks = [texts[i] for i in np.random.default_rng(r).choice(items, probes, replace=False)]
    cache = open_cache(cls, path, model)
    file_hit = per_call_us(cache, picks)
    memory_hit = per_call_us(cache, picks)
    miss = per_call_us(cache, [f"{name} new text {r}-{i}" for i in range(probes)])
    cache.flush()
    cache.close()
    return {
        "fill µs/item": fill_us,
        "file bytes/item": size / items,
        "file hit p50 µs": statistics.median(file_hit),
        "memory hit p50 µs": statistics.median(memory_hit),
        "miss p50 µs": statistics.median(miss),
        # The older cache sent one lookup in 32 to the model on purpose, to time it again.
        "hits answered %": 100 * cache.hits / (2 * probes),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", default="main", help="git ref of the cache to compare against")
    p.add_argument("--items", type=int, default=20_000)
    p.add_argument("--probes", type=int, default=1000, help="single-text calls per measurement")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--model-ms", type=float, default=0.5, help="the model's CPU time per text")
    args = p.parse_args()
    from langgraph_memory.embeddings import CachedEmbeddings

    load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="lgm-embed-cache-") as tmp:
        versions = {"before": load_cache_class(args.before, Path(tmp) / "code"), "after": CachedEmbeddings}
        results: dict[str, list[dict[str, float]]] = {name: [] for name in versions}
        for r in range(args.rounds):
            order = list(versions) if r % 2 == 0 else list(reversed(versions))
            for name in order:
                results[name].append(
                    one_round(name, versions[name], Path(tmp), args.items, args.probes, r, args.model_ms)
                )
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.before], capture_output=True, text=True)
    print(f"before = {args.before} ({sha.stdout.strip()}), after = this checkout; {args.items:,} items;")
    print(
        f"model {args.model_ms} ms a text; {args.rounds} interleaved rounds; CPU {cpu_model()} ({cpu_flags()}); load {load} at start\n"
    )
    keys = list(results["after"][0])
    print("| cache | " + " | ".join(keys) + " |")
    print("|---|" + "---:|" * len(keys))
    for name, rounds in results.items():
        cells = [f"{statistics.median(x[k] for x in rounds):,.1f}" for k in keys]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\nper round (before / after):")
    for k in keys:
        pairs = zip(results["before"], results["after"], strict=True)
        print(f"  {k}: " + ", ".join(f"{b[k]:,.1f}/{a[k]:,.1f}" for b, a in pairs))


if __name__ == "__main__":
    main()
