"""The ``langgraph-memory`` command line: a thin layer over the library.

::

    langgraph-memory --data-dir ./memory archive run --dry-run
    langgraph-memory archive run
    langgraph-memory archive list
    langgraph-memory archive search "position sizing" --collection lessons -k 3
    langgraph-memory archive restore --key l-17 --key l-18
    langgraph-memory archive verify
    langgraph-memory scheduler --cron "0 3 * * *"
    langgraph-memory index check                  # catalog and Chroma agree?
    langgraph-memory index rebuild                # rebuild Chroma from the catalog (progress bar)
    langgraph-memory ingest papers/ notes.md --episode-id DS-25-002

Exit status: 0 on success, 1 when a command ran but reported errors (for
example a damaged archive file), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from langgraph_memory.errors import LangGraphMemoryError
from langgraph_memory.ingest.cli import add_ingest_command, run_ingest

__all__ = ["main", "build_parser"]

logger = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    p = argparse.ArgumentParser(prog="langgraph-memory", description="Durable, searchable memory for LangGraph agents.")
    p.add_argument("--data-dir", default=None, help="data directory (default: $LANGGRAPH_MEMORY_DIR, config file, ./memory)")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = p.add_subparsers(dest="command", required=True)

    arch = sub.add_parser("archive", help="archive stale memories; search, list and restore archives")
    asub = arch.add_subparsers(dest="action", required=True)
    run = asub.add_parser("run", help="archive stale items now")
    run.add_argument("--dry-run", action="store_true", help="report what would move; change nothing")
    run.add_argument("--collection", action="append", help="only this collection (repeatable)")
    run.add_argument("--json", action="store_true", help="print the report as JSON")
    lst = asub.add_parser("list", help="list archive files from the manifest")
    lst.add_argument("--collection")
    lst.add_argument("--all", action="store_true", help="include discarded and corrupt files")
    lst.add_argument("--json", action="store_true")
    srch = asub.add_parser("search", help="semantic search over archived items")
    srch.add_argument("query")
    srch.add_argument("--collection", default="memories", help="collection name or label (default: memories)")
    srch.add_argument("-k", type=int, default=5)
    srch.add_argument("--filter", type=json.loads, default=None, help='JSON filter, e.g. \'{"severity": "major"}\'')
    srch.add_argument("--json", action="store_true")
    rest = asub.add_parser("restore", help="bring archived items back to the live store")
    rest.add_argument("--key", action="append", default=[], help="item key (repeatable)")
    rest.add_argument("--uid", action="append", default=[], help="item uid (repeatable)")
    rest.add_argument("--collection")
    rest.add_argument("--filter", type=json.loads, default=None)
    rest.add_argument("--namespace", help="namespace prefix, labels joined by '/'")
    rest.add_argument("--all", action="store_true", help="restore every archived item selected by --collection")
    rest.add_argument("--dry-run", action="store_true")
    asub.add_parser("verify", help="check every archive file against its manifest checksum")

    idx = sub.add_parser("index", help="the Chroma index: check it against the catalog, or rebuild it")
    isub = idx.add_subparsers(dest="action", required=True)
    chk = isub.add_parser("check", help="compare Chroma with the catalog, repair what differs, print the counts")
    chk.add_argument("--json", action="store_true")
    reb = isub.add_parser("rebuild", help="rebuild the index from the catalog's vectors (no re-embedding)")
    reb.add_argument("--json", action="store_true")

    sch = sub.add_parser("scheduler", help="run the archive schedule in the foreground until interrupted")
    group = sch.add_mutually_exclusive_group()
    group.add_argument("--cron", help='crontab expression (default "0 3 * * *")')
    group.add_argument("--interval", type=float, help="seconds between runs")
    sch.add_argument("--run-now", action="store_true", help="also run once at start")
    add_ingest_command(sub)
    return p


def _console() -> Any:
    from rich.console import Console

    return Console()


def _stamp(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def _open(data_dir: str | None, *, embed: bool = False) -> tuple[Any, Any]:
    from langgraph_memory.archive import Archiver
    from langgraph_memory.store import ChromaStore

    # Only search embeds; everything else must not load the model.
    store = ChromaStore(data_dir=data_dir, index=ChromaStore.default_index()) if embed else ChromaStore(data_dir=data_dir)
    checkpointer = None
    if store.settings.checkpoints_path.exists():
        from langgraph_memory.checkpoint import SqliteCheckpointer

        checkpointer = SqliteCheckpointer(store.settings.checkpoints_path)
    return store, Archiver(store, checkpointer=checkpointer, archive_dir=store.settings.archive_dir)


def _close(store: Any, archiver: Any) -> None:
    archiver.close()
    if archiver.checkpointer is not None:
        archiver.checkpointer.close()
    store.close()


def _cmd_run(args: argparse.Namespace, console: Any) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    store, archiver = _open(args.data_dir)
    try:
        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console, transient=True, disable=args.json,
        ) as bar:
            tasks: dict[tuple[str, str], Any] = {}

            def progress(phase: str, collection: str, done: int, total: int | None) -> None:
                key = (phase, collection)
                if key not in tasks:
                    tasks[key] = bar.add_task(f"{phase} {collection}", total=total)
                bar.update(tasks[key], completed=done, total=total)

            report = archiver.run(dry_run=args.dry_run, collections=args.collection, progress=progress)
    finally:
        _close(store, archiver)
    if args.json:
        console.print_json(json.dumps(report.as_dict(), default=str))
        return 0 if report.ok else 1
    from rich.table import Table

    title = "Archive run (dry run: nothing changed)" if report.dry_run else f"Archive run {report.run_id}"
    table = Table(title=title)
    for col in ("collection", "policy", "would move" if report.dry_run else "archived", "deleted", "kept live", "file"):
        table.add_column(col)
    for cr in report.collections.values():
        table.add_row(
            cr.collection, cr.policy, str(cr.selected if report.dry_run else cr.archived),
            "-" if report.dry_run else str(cr.deleted), str(cr.kept_live), cr.error and "[red]FAILED[/]" or (cr.file or "-"),
        )
    console.print(table)
    verb = "would sweep" if report.dry_run else "swept"
    console.print(f"TTL: {verb} {report.ttl_swept} expired items.")
    if report.thread_strategy:
        console.print(f"Threads ({report.thread_strategy}): {len(report.threads)} {'would be ' if report.dry_run else ''}pruned.")
    for msg in report.recovered:
        console.print(f"[yellow]recovery:[/] {msg}")
    for err in report.errors:
        console.print(f"[red]error:[/] {err}")
    return 0 if report.ok else 1


def _cmd_list(args: argparse.Namespace, console: Any) -> int:
    from langgraph_memory.archive.manifest import Manifest
    from langgraph_memory.config import Settings

    settings = Settings.resolve(args.data_dir)
    path = settings.manifest_path
    if not path.exists():
        console.print("No archives yet.")
        return 0
    from langgraph_memory.collections import collection_by_name

    m = Manifest(path)
    try:
        coll = collection_by_name(args.collection).name if args.collection else None
        files = m.files(collection=coll, states=None if args.all else ("verified", "complete"))
    finally:
        m.close()
    if args.json:
        console.print_json(json.dumps([f.as_dict() for f in files]))
        return 0
    from rich.table import Table

    table = Table(title=f"Archives in {settings.archive_dir}")
    for col in ("file", "collection", "state", "items", "archived now", "activity range", "size", "sha256"):
        table.add_column(col)
    for f in files:
        table.add_row(
            f.name, f.collection, f.state, str(f.items if f.items is not None else "-"), str(f.live_items),
            f"{_stamp(f.min_activity)} .. {_stamp(f.max_activity)}",
            f"{(f.bytes or 0) / 1024:.1f} KiB", (f.sha256 or "-")[:12],
        )
    console.print(table)
    return 0


def _cmd_search(args: argparse.Namespace, console: Any) -> int:
    store, archiver = _open(args.data_dir, embed=True)
    try:
        hits = archiver.search_archive(args.collection, args.query, filter=args.filter, k=args.k)
    finally:
        _close(store, archiver)
    if args.json:
        console.print_json(json.dumps([
            {"key": h.key, "namespace": list(h.namespace), "score": h.score, "value": h.value, "file": h.archived.file}
            for h in hits
        ]))
        return 0
    if not hits:
        console.print("No archived matches.")
        return 0
    from rich.table import Table

    table = Table(title=f"Archive search: {args.query!r}")
    for col in ("score", "namespace", "key", "value"):
        table.add_column(col)
    for h in hits:
        table.add_row(f"{h.score:.3f}" if h.score is not None else "-", "/".join(h.namespace), h.key,
                      json.dumps(h.value, ensure_ascii=False)[:120])
    console.print(table)
    return 0


def _cmd_restore(args: argparse.Namespace, console: Any) -> int:
    store, archiver = _open(args.data_dir)
    try:
        report = archiver.restore(
            collection=args.collection, keys=args.key, uids=args.uid, filter=args.filter,
            namespace_prefix=tuple(args.namespace.split("/")) if args.namespace else None,
            all_items=args.all, dry_run=args.dry_run,
        )
    finally:
        _close(store, archiver)
    verb = "would restore" if report.dry_run else "restored"
    console.print(f"{verb} {report.restored} items; {report.already_live} were already live.")
    return 0


def _cmd_verify(args: argparse.Namespace, console: Any) -> int:
    store, archiver = _open(args.data_dir)
    try:
        results = archiver.verify()
    finally:
        _close(store, archiver)
    bad = 0
    for name, problem in results.items():
        if problem is None:
            console.print(f"[green]ok[/]      {name}")
        else:
            bad += 1
            console.print(f"[red]DAMAGED[/] {name}: {problem}")
    console.print(f"{len(results)} files checked, {bad} damaged.")
    return 1 if bad else 0


def _cmd_index_check(args: argparse.Namespace, console: Any) -> int:
    from langgraph_memory.store import ChromaStore
    from langgraph_memory.store.index import all_collections

    store = ChromaStore(data_dir=args.data_dir)
    try:
        index = store.vector_index
        repaired = index.reconcile()
        rows = [
            {"collection": name, "items": store.items.count(name), "vectors": index.count(name),
             "repaired": repaired.get(name, 0)}
            for name in all_collections()
        ]
        probe = index.probe_seconds
        rebuilt = index.last_rebuild
    finally:
        store.close()
    if args.json:
        console.print_json(json.dumps({"collections": rows, "probe_seconds": probe,
                                       "rebuilt": rebuilt.total if rebuilt else None}))
        return 0
    from rich.table import Table

    table = Table(title="Chroma index against the catalog")
    for col in ("collection", "items", "vectors in Chroma", "repaired"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["collection"], str(r["items"]), str(r["vectors"]), str(r["repaired"]))
    console.print(table)
    if probe is not None:
        console.print(f"The index was not sealed (a crash, or files changed): probed it in {probe:.2f} s.")
    if rebuilt is not None:
        console.print(f"[yellow]Rebuilt[/] {rebuilt.total} vectors: {rebuilt.reason}")
    return 0


def _cmd_index_rebuild(args: argparse.Namespace, console: Any) -> int:
    from langgraph_memory.store import ChromaStore

    store = ChromaStore(data_dir=args.data_dir)
    try:
        report = store.rebuild_index(progress=not args.json)
    finally:
        store.close()
    if args.json:
        console.print_json(json.dumps({"vectors": report.vectors, "seconds": report.seconds}))
    else:
        console.print(f"Rebuilt the index: {report.total} vectors in {report.seconds:.1f} s.")
    return 0


def _cmd_scheduler(args: argparse.Namespace, console: Any) -> int:
    from apscheduler.schedulers.background import BackgroundScheduler

    from langgraph_memory.archive import schedule_archival
    from langgraph_memory.archive.schedule import run_archive_job

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    store, archiver = _open(args.data_dir)
    scheduler = BackgroundScheduler()
    try:
        job = schedule_archival(archiver, cron=args.cron, interval=args.interval, scheduler=scheduler, start=True)
        console.print(f"Archive scheduler running (next run {job.next_run_time}); Ctrl-C to stop.")
        if args.run_now:
            run_archive_job(archiver)
        while True:  # until Ctrl-C
            time.sleep(1.0)
    except KeyboardInterrupt:
        console.print("Stopping the scheduler...")
    finally:
        if scheduler.running:
            scheduler.shutdown(wait=True)
        _close(store, archiver)
    return 0


_COMMANDS = {
    ("archive", "run"): _cmd_run,
    ("archive", "list"): _cmd_list,
    ("archive", "search"): _cmd_search,
    ("archive", "restore"): _cmd_restore,
    ("archive", "verify"): _cmd_verify,
    ("index", "check"): _cmd_index_check,
    ("index", "rebuild"): _cmd_index_rebuild,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status.

    Example:
        >>> main(["--data-dir", "/tmp/lgm", "archive", "run", "--dry-run"])   # doctest: +SKIP
        0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    console = _console()
    try:
        if args.command == "scheduler":
            return _cmd_scheduler(args, console)
        if args.command == "ingest":
            return run_ingest(args, console)
        return _COMMANDS[(args.command, args.action)](args, console)
    except LangGraphMemoryError as exc:
        console.print(f"[red]error:[/] {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
