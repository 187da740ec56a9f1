"""``langgraph-memory ingest``: files and folders into memory, with a progress bar and a summary.

::

    langgraph-memory ingest papers/ notes.md --episode-id DS-25-002
    langgraph-memory ingest data/results.csv --namespace documents/backtests --chunker fixed
    langgraph-memory ingest papers/ --json

The bar counts files and shows chunks stored and the embedding rate; the
summary table counts files ingested, skipped as duplicates (same bytes
already in memory: no model call), busy (another process is ingesting
them), skipped (unsupported, empty) and failed, then lists each failure.
Exit status 1 when a file failed or a named path cannot be used, else 0.

Registered by :func:`add_ingest_command` on the main parser's subcommands.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

__all__ = ["add_ingest_command", "run_ingest"]


def add_ingest_command(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``ingest`` to the ``langgraph-memory`` subcommands; returns its parser."""
    p = subparsers.add_parser("ingest", help="read files and folders into memory (chunked, embedded, deduplicated)")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (recursively): .md .txt .py .csv .pdf .yaml .yml")
    p.add_argument("--episode-id", default=None, help="stored with every chunk, to recall by episode later")
    p.add_argument("--namespace", default="documents", help="namespace labels joined by '/' (default: documents)")
    p.add_argument("--chunker", choices=("contextual", "fixed"), default="contextual",
                   help="contextual (400 characters at semantic boundaries, the default) or fixed (1,000/500)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def _progress_display(console: Any, quiet: bool) -> tuple[Any, Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("{task.description}", style="bold"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files"),
        TextColumn("{task.fields[chunks]} chunks"),
        TextColumn("{task.fields[rate]:.1f} chunks/s"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=quiet,
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


def run_ingest(args: argparse.Namespace, console: Any) -> int:
    """Run ``ingest`` as parsed by :func:`add_ingest_command`; return the exit status."""
    from langgraph_memory.memory import Memory

    namespace = tuple(label for label in args.namespace.split("/") if label)
    bar, progress = _progress_display(console, quiet=args.json)
    with Memory.open(args.data_dir) as mem, bar:
        report = mem.ingest(
            args.paths, episode_id=args.episode_id, namespace=namespace, chunker=args.chunker,
            errors="report", progress=progress,
        )
    if args.json:
        console.print_json(json.dumps({
            "counts": report.counts(),
            "chunks": report.chunks,
            "seconds": report.seconds,
            "files": [
                {"path": str(r.path), "status": r.status, "sha256": r.sha256, "file_type": r.file_type,
                 "chunks": r.chunks, "parents": r.parents, "reason": r.reason, "replaces": r.replaces}
                for r in report.files
            ],
        }))
        return 0 if report.ok else 1
    from rich.table import Table

    table = Table(title=f"Ingest into {'/'.join(namespace)} ({report.seconds:.1f} s)")
    for col in ("files", "count", "chunks"):
        table.add_column(col, justify="right" if col != "files" else "left")
    labels = {"ingested": "ingested", "duplicate": "skipped: duplicates", "busy": "skipped: busy elsewhere",
              "skipped": "skipped: unsupported or empty", "failed": "failed"}
    for status, n in report.counts().items():
        chunks = sum(r.chunks for r in report.by_status(status))  # type: ignore[arg-type]
        style = "red" if status == "failed" and n else ""
        table.add_row(f"[{style}]{labels[status]}[/]" if style else labels[status], str(n), str(chunks))
    console.print(table)
    if report.failed:
        failures = Table(title="Failed files")
        failures.add_column("file", overflow="fold")
        failures.add_column("why", overflow="fold")
        for r in report.failed:
            failures.add_row(str(r.path), r.reason or "")
        console.print(failures)
    changed = [r for r in report.ingested if r.replaces]
    for r in changed:
        console.print(f"[yellow]changed:[/] {r.path} (was {r.replaces[:12]}): its older chunks are still live.")
    return 0 if report.ok else 1
