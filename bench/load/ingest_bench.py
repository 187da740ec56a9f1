"""Files into memory on the Python standard library's own sources: speed against the bare model, and retrieval.

For each chunker (the contextual one, the fixed window) the
same sample of ``Lib/`` (``.py`` plus the ``.md``/``.txt`` files there) is

1. file by file, chunked and embedded by the bare model (no store, no
   cache), as ingest batches it: the model's own throughput; then
2. the same file ingested with ``Memory.ingest`` into a fresh data directory
   with the same model: files/s, chunks/s, the ratio to the bare model
   (target >= 0.85), the share of ingest time spent inside the model, peak
   RSS. Alternating the two per file exposes both to the same load;
3. queried with the first sentence of the docstrings of documented
   functions: a hit when one of the top 5 chunks of that file overlaps the
   function's ``def`` line through the end of its docstring (target >= 80 %).

The whole library (~1,900 files, ~32 MB, ~100,000 contextual chunks) takes
hours to embed on two shared cores, so the run takes a sample (fixed seed):
files drawn at random among those with documented functions until
``--queries`` functions are found, plus ``--text-files`` random ``.md``/
``.txt`` files and ``--files`` more random files as distractors. The bare
model runs on every ``--bare-every``-th file. ``--fake`` swaps in fake
embeddings to check the script in seconds (its figures mean nothing).

    .venv/bin/python bench/load/ingest_bench.py --write          # ~20 minutes on 2 busy cores
"""

from __future__ import annotations

import argparse
import ast
import inspect
import os
import random
import re
import resource
import shutil
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
from bench.common.report import git_state, machine, markdown_table  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")

EXTS = (".py", ".md", ".txt")


@dataclass
class Query:
    text: str
    path: Path
    start: int  # the def line
    end: int  # the end of the docstring


@dataclass
class Run:
    chunker: str
    files: int = 0
    failed: int = 0
    chunks: int = 0
    bare_seconds: float = 0.0
    bare_chunks: int = 0
    paired_seconds: float = 0.0  # ingest time of the files the bare model also ran on
    paired_chunks: int = 0
    ingest_seconds: float = 0.0
    model_seconds_in_ingest: float = 0.0
    rss_before: int = 0
    rss_peak: int = 0  # sampled while inside the ingest calls
    rss_process_peak: int = 0  # the process's, bare model runs included
    hits: list[bool] = field(default_factory=list)
    hits_at_1: list[bool] = field(default_factory=list)
    recall_ms: list[float] = field(default_factory=list)


def library() -> list[Path]:
    """Every ``.py``, ``.md`` and ``.txt`` file of the standard library's ``Lib/`` (site-packages excluded)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("site-packages", "__pycache__") and not d.startswith("."))
        files.extend(Path(dirpath) / f for f in sorted(filenames) if f.endswith(EXTS))
    return files


def sample(files: list[Path], n_queries: int, n_text: int, n_more: int, seed: int) -> tuple[list[Path], list[Query]]:
    """Files holding ``n_queries`` documented functions (files drawn at random until there are enough),
    ``n_text`` random ``.md``/``.txt`` files and ``n_more`` other random files; the queries."""
    rng = random.Random(seed)
    chosen: list[Path] = []
    found: list[Query] = []
    python = [p for p in files if p.suffix == ".py"]
    for path in rng.sample(python, len(python)):
        if len(found) >= n_queries:
            break
        if here := queries([path]):
            chosen.append(path)
            found.extend(here)
    texts = [p for p in files if p.suffix in (".md", ".txt")]
    chosen += rng.sample(texts, min(n_text, len(texts)))
    rest = [p for p in files if p not in set(chosen)]
    chosen += rng.sample(rest, min(n_more, len(rest)))
    qs = sorted(rng.sample(found, min(n_queries, len(found))), key=lambda q: (str(q.path), q.start))
    return sorted(set(chosen)), qs


def _first_sentence(doc: str) -> str | None:
    para = inspect.cleandoc(doc).split("\n\n", 1)[0]
    para = " ".join(para.split())
    m = re.match(r"(.+?[.!?])(\s|$)", para)
    sentence = m.group(1) if m else para
    return sentence if len(sentence.split()) >= 4 else None


def queries(files: list[Path]) -> list[Query]:
    """The first docstring sentence of documented functions, with the span they must be found in."""
    from langgraph_memory.ingest.readers import decode_pieces

    found: list[Query] = []
    for path in files:
        if path.suffix != ".py":
            continue
        try:
            text = "".join(decode_pieces(path, "python"))
            tree = ast.parse(path.read_bytes())
        except Exception:  # noqa: BLE001 - files the reader or parser refuses have no queries
            continue
        lines = text.splitlines(keepends=True)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            doc = ast.get_docstring(node, clean=False)
            sentence = _first_sentence(doc) if doc else None
            if sentence is None or not node.body or node.body[0].end_lineno is None:
                continue
            end_line = node.body[0].end_lineno
            line_bytes = lines[end_line - 1].encode("utf-8", "surrogatepass") if end_line <= len(lines) else b""
            end = starts[end_line - 1] + len(line_bytes[: node.body[0].end_col_offset].decode("utf-8", "replace"))
            found.append(Query(sentence, path, starts[node.lineno - 1], end))
    return found


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


class RssPeak:
    """The highest RSS seen while inside ``with`` blocks (sampled every 20 ms by a thread)."""

    def __init__(self) -> None:
        self.peak = 0
        self._inside = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            if self._inside.wait(0.1):
                self.peak = max(self.peak, _rss())
                time.sleep(0.02)

    def __enter__(self) -> RssPeak:
        self.peak = max(self.peak, _rss())
        self._inside.set()
        return self

    def __exit__(self, *exc: object) -> None:
        self._inside.clear()
        self.peak = max(self.peak, _rss())

    def close(self) -> None:
        self._stop.set()
        self._inside.set()
        self._thread.join()


class TimedEmbeddings:
    """Wraps the model to time the calls ingest makes to it."""

    def __init__(self, inner) -> None:  # noqa: ANN001
        from langchain_core.embeddings import Embeddings

        outer = self

        class _Timed(Embeddings):
            model_name = getattr(inner, "model_name", None)
            dims = getattr(inner, "dims", None)

            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                t0 = time.perf_counter()
                try:
                    return inner.embed_documents(texts)
                finally:
                    outer.seconds += time.perf_counter() - t0

            def embed_query(self, text: str) -> list[float]:
                return inner.embed_query(text)

        self.seconds = 0.0
        self.embeddings = _Timed()


def run_chunker(name: str, files: list[Path], qs: list[Query], model, work: Path, bare_every: int) -> Run:  # noqa: ANN001
    from langgraph_memory import Memory
    from langgraph_memory.ingest import IngestConfig, make_chunker
    from langgraph_memory.ingest.files import file_type_of
    from langgraph_memory.ingest.readers import read_blocks

    config = IngestConfig(chunker=name)
    run = Run(name)
    timed = TimedEmbeddings(model)
    data_dir = work / f"mem-{name}"
    results = []
    peak = RssPeak()
    with Memory.open(data_dir, embeddings=timed.embeddings) as mem:
        run.rss_before = _rss()
        # File by file, the bare model on the file's chunks (as ingest batches them), then ingest
        # of the file with the same model: load on the shared cores hits both alike. The bare
        # model runs on every ``bare_every``-th file; the ratio compares those files only.
        for i, path in enumerate(files):
            bare = i % bare_every == 0
            if bare:
                kind = file_type_of(path)
                try:
                    texts = [
                        c.content
                        for p in make_chunker(config).chunk_blocks(read_blocks(path, kind), kind)
                        for c in p.chunks
                    ]
                except Exception:  # noqa: BLE001 - ingest reports these files as failed; they embed nothing
                    texts = []
                t0 = time.perf_counter()
                model.embed_documents(texts) if texts else None
                run.bare_seconds += time.perf_counter() - t0
                run.bare_chunks += len(texts)
            t0 = time.perf_counter()
            with peak:
                report = mem.ingest(path, config=config, errors="report")
            spent = time.perf_counter() - t0
            run.ingest_seconds += spent
            if bare:
                run.paired_seconds += spent
                run.paired_chunks += sum(r.chunks for r in report.files)
            results.extend(report.files)
        peak.close()
        run.rss_peak = peak.peak
        run.rss_process_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        run.model_seconds_in_ingest = timed.seconds
        run.files = sum(r.status == "ingested" for r in results)
        run.failed = sum(r.status == "failed" for r in results)
        run.chunks = sum(r.chunks for r in results)
        shas = {r.path: r.sha256 for r in results}
        # 3. Retrieval.
        for q in qs:
            t0 = time.perf_counter()
            hits = mem.recall(q.text, k=5)
            run.recall_ms.append((time.perf_counter() - t0) * 1000)
            good = [h.content_hash == shas.get(q.path) and h.start_char < q.end and h.end_char > q.start for h in hits]
            run.hits.append(any(good))
            run.hits_at_1.append(bool(good) and good[0])
    return run


def main() -> None:
    parser = argparse.ArgumentParser(
        description="ingest the standard library: throughput against the bare model, retrieval"
    )
    parser.add_argument("--queries", type=int, default=200, help="documented functions to query (default 200)")
    parser.add_argument("--text-files", type=int, default=4, help="random .md/.txt files added (default 4)")
    parser.add_argument("--files", type=int, default=0, help="more random files of Lib/ added (default 0)")
    parser.add_argument("--bare-every", type=int, default=3, help="the bare model runs on every k-th file (default 3)")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--fake", action="store_true", help="fake embeddings: checks the script, figures mean nothing")
    parser.add_argument("--write", action="store_true", help="write bench/results/RESULTS_ingest.md")
    args = parser.parse_args()

    m = machine(["torch", "sentence-transformers", "chromadb", "pypdf"])
    m.code = git_state(Path(__file__).resolve().parents[2], ["langgraph_memory", "bench"])
    files, qs = sample(library(), args.queries, args.text_files, args.files, args.seed)
    size = sum(p.stat().st_size for p in files)
    print(f"{len(files)} files, {size / 1e6:.1f} MB; {len(qs)} queries; load {os.getloadavg()[0]:.2f}", flush=True)
    if args.fake:
        from langchain_core.embeddings import DeterministicFakeEmbedding

        model = DeterministicFakeEmbedding(size=32)
    else:
        from langgraph_memory.embeddings.model import SentenceTransformerEmbeddings

        model = SentenceTransformerEmbeddings()
        model.embed_query("warm up")
    work = Path(tempfile.mkdtemp(prefix="lgm-ingest-bench-"))
    runs = []
    try:
        for name in ("contextual", "fixed"):
            run = run_chunker(name, files, qs, model, work, args.bare_every)
            runs.append(run)
            print(
                f"{name}: {run.chunks} chunks, ingest {run.ingest_seconds:.1f} s, bare {run.bare_seconds:.1f} s, "
                f"hit@5 {sum(run.hits)}/{len(run.hits)}; load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    m.load_end = os.getloadavg()

    rows = []
    for r in runs:
        bare = r.bare_chunks / r.bare_seconds if r.bare_seconds else 0.0
        paired = r.paired_chunks / r.paired_seconds if r.paired_seconds else 0.0
        rate = r.chunks / r.ingest_seconds if r.ingest_seconds else 0.0
        recall_ms = sorted(r.recall_ms)
        rows.append(
            [
                r.chunker,
                f"{r.files:,} ({r.failed} failed)",
                f"{r.chunks:,}",
                f"{r.files / r.ingest_seconds:.2f}",
                f"{rate:.1f}",
                f"{bare:.1f}",
                f"{paired / bare:.2f}" if bare else "-",
                f"{1 - r.model_seconds_in_ingest / r.ingest_seconds:.1%}",
                f"{sum(r.hits) / len(r.hits):.1%}" if r.hits else "-",
                f"{sum(r.hits_at_1) / len(r.hits_at_1):.1%}" if r.hits_at_1 else "-",
                f"{recall_ms[len(recall_ms) // 2]:.0f}" if recall_ms else "-",
                f"{r.rss_before / 2**20:,.0f} / {r.rss_peak / 2**20:,.0f} / {r.rss_process_peak / 2**20:,.0f}",
            ]
        )
    header = [
        "chunker",
        "files ingested",
        "chunks",
        "files/s",
        "chunks/s",
        "bare model chunks/s",
        "ingest / bare",
        "ingest time outside the model",
        "hit@5",
        "hit@1",
        "recall p50 ms",
        "RSS MB: before / peak in ingest / process peak",
    ]
    table = markdown_table(header, rows, [False] + [True] * (len(header) - 1))
    model_name = "fake embeddings (script check only)" if args.fake else "all-MiniLM-L6-v2 (default, offline)"
    md = [
        f"## Ingest: {len(files)} files of the standard library's Lib/ ({size / 1e6:.1f} MB), {model_name}",
        "",
        *m.lines(),
        f"- Command: `python bench/load/ingest_bench.py --queries {args.queries} --text-files {args.text_files} "
        f"--files {args.files} --bare-every {args.bare_every} --seed {args.seed}{' --fake' if args.fake else ''}`",
        "",
        table,
        "",
        f"The sample: files of Lib/ drawn at random among those with documented functions until {args.queries} are",
        f"found, plus {args.text_files} random .md/.txt files and {args.files} other random files. {len(qs)} queries: the first",
        "sentence of each function's docstring; a hit is a chunk of its file overlapping the function's `def` line",
        "through the end of its docstring. Targets: ingest at least 0.85 of the bare model's chunks/s on the same",
        f'chunks (the bare model ran on one file in {args.bare_every}; "ingest / bare" compares those files),',
        'hit@5 at least 80%. "Ingest time outside the',
        'model" is measured inside the ingest calls (read, hash, copy, chunk, catalog, Chroma); the bare model runs',
        "on each file's chunks just before that file is ingested, so both see the same load on the shared cores.",
        "RSS: before the first ingest, the highest sampled during the ingest calls, and the process's own peak",
        "(the bare model runs and the earlier chunker included).",
    ]
    print("\n".join(md))
    if args.write:
        (Path(__file__).resolve().parents[1] / "results" / "RESULTS_ingest.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
