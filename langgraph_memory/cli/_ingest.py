"""``langgraph-memory ingest``: files and folders into memory, with a progress bar and a summary.

::

    langgraph-memory ingest papers/ notes.md --episode-id DS-25-002
    langgraph-memory ingest data/results.csv --namespace documents/backtests --chunker fixed
    langgraph-memory ingest papers/ --json

The bar (on stderr) counts files and shows chunks stored and the embedding
rate; the summary table counts files ingested, skipped as duplicates (same
bytes already in memory: no model call), busy (another process is ingesting
them), skipped (unsupported, empty) and failed, then lists each failure.
Exit status 3 when a file failed, 2 for a path or namespace that cannot be
used, else 0.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from langgraph_memory.cli._common import EXIT_ERROR, EXIT_OK, Ctx, namespace_arg

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "ingest", parents=[common], help="read files and folders into memory (chunked, embedded, deduplicated)"
    )
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="files or folders (recursively): .md .txt .py .csv .pdf .yaml .yml"
    )
    p.add_argument("--episode-id", default=None, help="stored with every chunk, to recall by episode later")
    p.add_argument(
        "--namespace",
        type=namespace_arg,
        default=("documents",),
        help="namespace labels joined by '/' (default: documents)",
    )
    p.add_argument(
        "--chunker",
        choices=("contextual", "fixed", "conversation"),
        default="contextual",
        help="contextual (400 characters at semantic boundaries, the default), fixed (1,000/500), or conversation"
        " (each file a chat transcript: 'Speaker: text' lines, .json or .jsonl; each message a conversation turn)",
    )
    p.set_defaults(func=_ingest)


def _progress(ctx: Ctx) -> tuple[Any, Callable[[Any], None]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("{task.description}", style="bold"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files"),
        TextColumn("{task.fields[chunks]} chunks"),
        TextColumn("{task.fields[rate]:.1f} chunks/s"),
        TimeElapsedColumn(),
        console=ctx.err,
        transient=True,
    )
    state: dict[str, Any] = {"task": None, "chunks": 0, "started": time.monotonic()}

    def progress(event: Any) -> None:
        if event.kind == "found":
            state["task"] = bar.add_task("ingesting", total=event.files, chunks=0, rate=0.0)
            state["started"] = time.monotonic()
            return
        task = state["task"]
        if task is None:
            return
        if event.kind == "file":
            bar.update(task, description=event.path.name[:40])
        elif event.kind == "stored":
            state["chunks"] += event.chunks
            elapsed = max(time.monotonic() - state["started"], 1e-9)
            bar.update(task, chunks=state["chunks"], rate=state["chunks"] / elapsed)
        elif event.kind == "done":
            bar.advance(task)

    return bar, progress


def _ingest(ctx: Ctx) -> int:
    a = ctx.args
    bar, progress = _progress(ctx)
    with ctx.open_memory(embed=True, create=True) as mem, bar:
        report = mem.ingest(
            a.paths,
            episode_id=a.episode_id,
            namespace=a.namespace,
            chunker=a.chunker,
            errors="report",
            progress=progress,
        )
    code = EXIT_OK if report.ok else EXIT_ERROR
    if ctx.json:
        ctx.emit(
            {
                "counts": report.counts(),
                "chunks": report.chunks,
                "seconds": report.seconds,
                "files": [
                    {
                        "path": str(r.path),
                        "status": r.status,
                        "sha256": r.sha256,
                        "file_type": r.file_type,
                        "chunks": r.chunks,
                        "parents": r.parents,
                        "reason": r.reason,
                        "replaces": r.replaces,
                    }
                    for r in report.files
                ],
            }
        )
        return code
    labels = {
        "ingested": "ingested",
        "duplicate": "skipped: duplicates",
        "busy": "skipped: busy elsewhere",
        "skipped": "skipped: unsupported or empty",
        "failed": "failed",
    }
    rows = [
        (labels[status], n, sum(r.chunks for r in report.by_status(status))) for status, n in report.counts().items()
    ]
    ctx.table(f"Ingest into {'/'.join(a.namespace)} ({report.seconds:.1f} s)", ("files", "count", "chunks"), rows)
    if report.failed:
        ctx.table(
            "Failed files", ("file", "why"), [(str(r.path), r.reason or "") for r in report.failed], ids=("file",)
        )
    for r in report.ingested:
        if r.replaces:
            ctx.say(f"changed: {r.path} (was {r.replaces[:12]}): its older chunks are superseded.")
    return code
