"""Commands for the archive (run, list, search, restore, verify), its scheduler, and the Chroma index."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langgraph_memory.cli._common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOTHING,
    EXIT_OK,
    Ctx,
    json_object_arg,
    positive_int,
    stamp,
)
from langgraph_memory.lifecycle.states import lifecycle_json

__all__ = ["register"]

logger = logging.getLogger(__name__)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    arch = sub.add_parser("archive", parents=[common], help="archive stale memories; search, list and restore archives")
    asub = arch.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = asub.add_parser("run", parents=[common], help="archive stale items now")
    p.add_argument("--dry-run", action="store_true", help="report what would move; change nothing")
    p.add_argument("--collection", action="append", help="only this collection (repeatable)")
    p.set_defaults(func=_run)
    p = asub.add_parser("list", parents=[common], help="list archive files from the manifest")
    p.add_argument("--collection")
    p.add_argument("--all", action="store_true", help="include discarded and corrupt files")
    p.set_defaults(func=_list)
    p = asub.add_parser("search", parents=[common], help="search archived items by meaning (every collection)")
    p.add_argument("query")
    p.add_argument("--collection", default=None, help="only this collection (name or label); default: all")
    p.add_argument("-k", "--limit", dest="k", type=positive_int, default=5)
    p.add_argument("--filter", type=json_object_arg, default=None, help='JSON filter, e.g. \'{"severity": "major"}\'')
    p.set_defaults(func=_search)
    p = asub.add_parser("restore", parents=[common], help="bring archived items back to the live store")
    p.add_argument("--key", action="append", default=[], help="item key (repeatable)")
    p.add_argument("--uid", action="append", default=[], help="item uid (repeatable)")
    p.add_argument("--collection")
    p.add_argument("--filter", type=json_object_arg, default=None)
    p.add_argument("--namespace", help="namespace prefix, labels joined by '/'")
    p.add_argument("--all", action="store_true", help="restore every archived item selected by --collection")
    p.add_argument("--dry-run", action="store_true")
    p.set_defaults(func=_restore)
    p = asub.add_parser(
        "verify",
        parents=[common],
        aliases=["check"],
        help="check the manifest, and every archive file against its checksum",
    )
    p.set_defaults(func=_verify)

    idx = sub.add_parser(
        "index", parents=[common], help="the Chroma index: check it against the catalog, or rebuild it"
    )
    isub = idx.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = isub.add_parser("check", parents=[common], help="compare Chroma with the catalog, repair what differs")
    p.set_defaults(func=_index_check)
    p = isub.add_parser(
        "rebuild", parents=[common], help="rebuild the index from the catalog's vectors (no re-embedding)"
    )
    p.set_defaults(func=_index_rebuild)
    p = isub.add_parser(
        "reindex",
        parents=[common],
        help="re-embed every stored text with the configured model (or --model), then rebuild",
    )
    p.add_argument(
        "--model", default=None, help="move the data directory to this sentence-transformers model (name or folder)"
    )
    p.set_defaults(func=_index_reindex)

    sch = sub.add_parser(
        "scheduler", parents=[common], help="run the archive schedule in the foreground until interrupted"
    )
    group = sch.add_mutually_exclusive_group()
    group.add_argument("--cron", help='crontab expression (default "0 3 * * *")')
    group.add_argument("--interval", type=float, help="seconds between runs")
    sch.add_argument("--run-now", action="store_true", help="also run once at start")
    sch.set_defaults(func=_scheduler)


# ---------------------------------------------------------------- archive


def _phases(update: Any) -> Any:
    """The archive's progress callback: the bar, and (with ``-v``) one log line as each phase begins."""
    seen: set[tuple[str, str]] = set()

    def progress(phase: str, coll: str, done: int, total: int | None) -> None:
        if (phase, coll) not in seen:
            seen.add((phase, coll))
            logger.info("archive run: %s %s", phase, coll)
        update(f"{phase} {coll}", done, total)

    return progress


def _run(ctx: Ctx) -> int:
    a = ctx.args
    with ctx.open_memory() as mem, ctx.progress() as update:
        ctx.err.print(
            f"archive run on {mem.data_dir}{' (dry run)' if a.dry_run else ''}...", markup=False, soft_wrap=True
        )
        try:
            with _stoppable():
                report = mem.archiver.run(
                    dry_run=a.dry_run,
                    collections=a.collection,
                    progress=_phases(update),
                )
        except KeyboardInterrupt:
            return _cut_off(ctx, mem)
    if ctx.json:
        ctx.emit(report.as_dict())
        return EXIT_OK if report.ok else EXIT_ERROR
    title = "Archive run (dry run: nothing changed)" if report.dry_run else f"Archive run {report.run_id}"
    ctx.table(
        title,
        ("collection", "policy", "would move" if report.dry_run else "archived", "deleted", "kept live", "file"),
        [
            (
                cr.collection,
                cr.policy,
                cr.selected if report.dry_run else cr.archived,
                "-" if report.dry_run else cr.deleted,
                cr.kept_live,
                "FAILED" if cr.error else (cr.file or "-"),
            )
            for cr in report.collections.values()
        ],
        ids=("file",),
    )
    verb = "would sweep" if report.dry_run else "swept"
    ctx.say(f"TTL: {verb} {report.ttl_swept} expired items.")
    if report.thread_strategy:
        ctx.say(
            f"Threads ({report.thread_strategy}): {len(report.threads)} {'would be ' if report.dry_run else ''}pruned."
        )
    for msg in report.recovered:
        ctx.say(f"recovery: {msg}")
    for err in report.errors:
        ctx.err.print(f"error: {err}", markup=False, soft_wrap=True)
    return EXIT_OK if report.ok else EXIT_ERROR


def _cut_off(ctx: Ctx, mem: Any) -> int:
    """Ctrl-C stopped a run: say so, and what the next run does with what it left (exit 130)."""
    try:
        pending = mem.archiver.pending_recovery()
    except Exception as exc:  # noqa: BLE001 - the run was cut off; this only adds detail
        pending = [f"check the archive (could not read its manifest: {exc})"]
    advice = [p.replace("would ", "", 1) for p in pending]
    if ctx.json:
        ctx.emit({"interrupted": True, "lost": 0, "next_run": advice})
    ctx.err.print(
        "archive run cut off (interrupted). Nothing was lost: items leave memory only once their archive file "
        "is verified, and a file left unverified is never trusted.",
        markup=False,
        soft_wrap=True,
    )
    if advice:
        ctx.err.print("The next `langgraph-memory archive run` will:", markup=False, soft_wrap=True)
        for line in advice:
            ctx.err.print(f"  - {line}", markup=False, soft_wrap=True)
    else:
        ctx.err.print("Nothing was left half done; run it again to archive.", markup=False, soft_wrap=True)
    return EXIT_INTERRUPTED


def _list(ctx: Ctx) -> int:
    from langgraph_memory.archive.manifest import Manifest
    from langgraph_memory.research.collections import collection_by_name

    a = ctx.args
    settings = ctx.settings()
    files: list[Any] = []
    if settings.manifest_path.exists():
        m = Manifest(settings.manifest_path, read_only=ctx.read_only)
        try:
            coll = collection_by_name(a.collection).name if a.collection else None
            files = m.files(collection=coll, states=None if a.all else ("verified", "complete"))
        finally:
            m.close()
    if ctx.json:
        ctx.emit([f.as_dict() for f in files])
    elif files:
        ctx.table(
            f"Archives in {settings.archive_dir}",
            ("file", "collection", "state", "items", "archived now", "activity range", "size", "sha256"),
            [
                (
                    f.name,
                    f.collection,
                    f.state,
                    f.items if f.items is not None else "-",
                    f.live_items,
                    f"{stamp(f.min_activity)} .. {stamp(f.max_activity)}",
                    f"{(f.bytes or 0) / 1024:.1f} KiB",
                    (f.sha256 or "-")[:12],
                )
                for f in files
            ],
            ids=("file",),
        )
    else:
        ctx.say(f"No archives yet in {settings.archive_dir}.")
    return EXIT_OK if files else EXIT_NOTHING


def _search(ctx: Ctx) -> int:
    a = ctx.args
    with ctx.open_memory(embed=True) as mem:
        archiver = mem.archiver
        names = [a.collection] if a.collection else sorted({f.collection for f in archiver.list_archives()})
        hits: list[Any] = []
        if names:
            ctx.load_model(mem)
        for name in names:  # every collection unless one is named; merged by score
            hits.extend(archiver.search_archive(name, a.query, filter=a.filter, k=a.k))
    hits.sort(key=lambda h: h.score if h.score is not None else float("-inf"), reverse=True)
    hits = hits[: a.k]
    if ctx.json:
        ctx.emit(
            [
                {
                    "key": h.key,
                    "namespace": list(h.namespace),
                    "score": h.score,
                    "value": h.value,
                    "file": h.archived.file,
                    "collection": h.archived.collection,
                }
                for h in hits
            ]
        )
    elif hits:
        ctx.hits(f"Archive search: {a.query!r}", hits, digits=3)
    else:
        ctx.say("No archived matches.")
    return EXIT_OK if hits else EXIT_NOTHING


def _restore(ctx: Ctx) -> int:
    from langgraph_memory.archive.format import hidden_because
    from langgraph_memory.errors import InvalidArgumentError

    a = ctx.args
    if not (a.key or a.uid or a.filter or a.namespace or a.all):
        raise InvalidArgumentError("restore needs --key, --uid, --filter, --namespace, or --all (with --collection)")
    with ctx.open_memory() as mem:
        report = mem.archiver.restore(
            collection=a.collection,
            keys=a.key,
            uids=a.uid,
            filter=a.filter,
            namespace_prefix=tuple(a.namespace.split("/")) if a.namespace else None,
            all_items=a.all,
            dry_run=a.dry_run,
        )
    if ctx.json:
        ctx.emit(
            {
                "dry_run": report.dry_run,
                "restored": report.restored,
                "already_live": report.already_live,
                "matched": report.matched,
                # Back, but still left out of searches: retired or superseded when they were archived.
                "hidden": [
                    {"key": st.key, "namespace": list(st.namespace), **lifecycle_json(st)} for st in report.hidden
                ],
            }
        )
    else:
        verb = "would restore" if report.dry_run else "restored"
        ctx.say(f"{verb} {_items(report.restored)}; {report.already_live} were already live.")
        if not report.matched:
            ctx.say("Nothing in the archive matched.")
        if report.hidden:
            come = "would come" if report.dry_run else "came"
            ctx.say(
                f"{_items(len(report.hidden))} {come} back as {'they were' if len(report.hidden) > 1 else 'it was'} "
                "when archived, hidden from searches:"
            )
            for st in report.hidden:
                ctx.say(f"  {st.key}: {hidden_because(st)}")
            key = report.hidden[0].key if len(report.hidden) == 1 else "<key>"
            each = "" if len(report.hidden) == 1 else " (for each)"
            ctx.say(f"`langgraph-memory reinstate {key}`{each} makes it searchable again.")
    return EXIT_OK if report.matched else EXIT_NOTHING


def _items(n: int) -> str:
    return f"{n} item" if n == 1 else f"{n} items"


def _verify(ctx: Ctx) -> int:
    from rich.markup import escape

    from langgraph_memory.errors import CorruptFileError

    with ctx.open_memory() as mem:
        try:
            results = mem.archiver.verify()
        except CorruptFileError as exc:  # the manifest itself: live memory is unaffected, so report, not fail
            if ctx.json:
                ctx.emit({"manifest": "damaged", "reason": str(exc), "files": None, "damaged": None})
            else:
                ctx.say(f"[red]DAMAGED[/] manifest: {escape(str(exc))}", markup=True)
            return EXIT_ERROR

    bad = {name: problem for name, problem in results.items() if problem is not None}
    if ctx.json:
        ctx.emit({"files": len(results), "damaged": bad})
    else:
        for name, problem in results.items():
            ctx.say(
                f"[red]DAMAGED[/] {escape(name)}: {escape(problem)}"
                if problem
                else f"[green]ok[/]      {escape(name)}",
                markup=True,
            )
        ctx.say(f"{len(results)} files checked, {len(bad)} damaged.")
    return EXIT_ERROR if bad else EXIT_OK


# ------------------------------------------------------------------ index


def _index_check(ctx: Ctx) -> int:
    from langgraph_memory.index.chroma import all_collections

    with ctx.open_memory() as mem:
        store = mem.store
        index = store.vector_index
        repaired = index.reconcile()
        rows = [
            {
                "collection": name,
                "items": store.items.count(name),
                "vectors": index.count(name),
                "repaired": repaired.get(name, 0),
            }
            for name in all_collections()
        ]
        probe, rebuilt = index.probe_seconds, index.last_rebuild
    if ctx.json:
        ctx.emit({"collections": rows, "probe_seconds": probe, "rebuilt": rebuilt.total if rebuilt else None})
        return EXIT_OK
    ctx.table(
        "Chroma index against the catalog",
        ("collection", "items", "vectors in Chroma", "repaired"),
        [(r["collection"], r["items"], r["vectors"], r["repaired"]) for r in rows],
    )
    if probe is not None:
        ctx.say(f"The index was not sealed (a crash, or files changed): probed it in {probe:.2f} s.")
    if rebuilt is not None:
        ctx.say(f"Rebuilt {rebuilt.total} vectors: {rebuilt.reason}")
    return EXIT_OK


def _index_rebuild(ctx: Ctx) -> int:
    with ctx.open_memory() as mem, ctx.progress() as update:
        report = mem.store.rebuild_index(progress=lambda coll, done, total: update(f"rebuild {coll}", done, total))
    if ctx.json:
        ctx.emit({"vectors": report.vectors, "seconds": report.seconds})
    else:
        ctx.say(f"Rebuilt the index: {report.total} vectors in {report.seconds:.1f} s.")
    return EXIT_OK


def _index_reindex(ctx: Ctx) -> int:
    from langgraph_memory.store import ChromaStore

    settings = ctx.settings()
    index = ChromaStore.default_index(ctx.args.model)
    # Opening with reindex=True moves vectors made by another model to this one (its own progress bar);
    # then every vector left is re-embedded, for a model that changed under the same name.
    with ChromaStore(settings=settings, index=index, reindex=True, create=False) as store, ctx.progress() as update:
        n = store.reindex(progress=lambda done, total: update("re-embed", done, total))
        model = store.cached_embeddings.model_id if store.cached_embeddings is not None else None
    if ctx.json:
        ctx.emit({"vectors": n, "model": model})
    else:
        ctx.say(f"Re-embedded {n} vectors with {model} and rebuilt the index.")
    return EXIT_OK


# -------------------------------------------------------------- scheduler


def _scheduler(ctx: Ctx) -> int:
    from apscheduler.schedulers.background import BackgroundScheduler

    from langgraph_memory.archive import schedule_archival
    from langgraph_memory.archive.schedule import run_archive_job

    a = ctx.args
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    scheduler = BackgroundScheduler()
    with _stoppable(), ctx.open_memory() as mem:
        try:
            job = schedule_archival(mem.archiver, cron=a.cron, interval=a.interval, scheduler=scheduler, start=True)
            if ctx.json:
                ctx.emit({"running": True, "next_run": str(job.next_run_time)})
            else:
                ctx.say(f"Archive scheduler running (next run {job.next_run_time}); Ctrl-C to stop.")
            if a.run_now:
                run_archive_job(mem.archiver)
            while True:  # until Ctrl-C
                time.sleep(1.0)
        except KeyboardInterrupt:
            ctx.err.print("Stopping the scheduler...")
        finally:
            if scheduler.running:
                scheduler.shutdown(wait=True)  # the running archive job finishes first
    return EXIT_OK


@contextmanager
def _stoppable() -> Iterator[None]:
    """SIGINT and SIGTERM raise KeyboardInterrupt inside the block, whatever the process inherited.

    Installed explicitly: a process started from a background job of a
    non-interactive shell (a script, CI, `make test &`) inherits SIGINT as
    ignored, and then never stopped on Ctrl-C. SIGTERM, what supervisors
    send, stops it the same way.
    """
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
