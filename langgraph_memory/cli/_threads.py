"""Commands over the checkpointer's threads: list them, prune idle ones."""

from __future__ import annotations

import argparse
import time
from datetime import timedelta
from typing import Any

from langgraph_memory.cli._common import EXIT_NOTHING, EXIT_OK, Ctx, iso, stamp
from langgraph_memory.config import ARCHIVE_AFTER_DAYS

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    threads = sub.add_parser("threads", parents=[common], help="the checkpointer's threads: list, prune")
    tsub = threads.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = tsub.add_parser("list", parents=[common], help="every thread with its last activity, most recent first")
    p.set_defaults(func=_list)
    p = tsub.add_parser(
        "prune", parents=[common], help="prune threads idle for --older-than days: shows what would go; --yes prunes"
    )
    p.add_argument(
        "--older-than",
        type=float,
        default=ARCHIVE_AFTER_DAYS,
        help=f"days without a checkpoint (default {ARCHIVE_AFTER_DAYS})",
    )
    p.add_argument(
        "--strategy",
        choices=("keep_latest", "delete"),
        default="keep_latest",
        help="keep each thread's latest checkpoint (default), or delete the thread",
    )
    p.add_argument("--yes", action="store_true", help="really prune (without it: a dry run)")
    p.set_defaults(func=_prune)


def _saver(ctx: Ctx) -> Any:
    """The data directory's checkpointer, or None when nothing was ever checkpointed there."""
    settings = ctx.settings()
    if not settings.checkpoints_path.exists():
        return None
    from langgraph_memory.checkpoint import SqliteCheckpointer

    return SqliteCheckpointer(settings.checkpoints_path, lock_timeout=settings.lock_timeout, read_only=ctx.read_only)


def _rows(threads: list[Any]) -> list[dict[str, Any]]:
    return [
        {"thread_id": t.thread_id, "last_activity": iso(t.last_activity), "checkpoints": t.checkpoints} for t in threads
    ]


def _list(ctx: Ctx) -> int:
    saver = _saver(ctx)
    threads: list[Any] = []
    if saver is not None:
        try:
            threads = saver.list_threads()
        finally:
            saver.close()
    if ctx.json:
        ctx.emit(_rows(threads))
    elif threads:
        ctx.table(
            f"Threads ({len(threads)})",
            ("thread", "last activity", "checkpoints"),
            [(t.thread_id, stamp(t.last_activity.timestamp()), t.checkpoints) for t in threads],
            ids=("thread",),
        )
    else:
        ctx.say("No threads.")
    return EXIT_OK if threads else EXIT_NOTHING


def _prune(ctx: Ctx) -> int:
    a = ctx.args
    saver = _saver(ctx)
    names: list[str] = []
    if saver is not None:
        try:
            if a.yes:
                with ctx.err.status("Pruning idle threads..."):
                    names = saver.prune_inactive(timedelta(days=a.older_than), strategy=a.strategy)
            else:  # the dry run picks threads as prune_inactive does: no checkpoint since the cutoff
                cutoff = time.time() - a.older_than * 86400.0
                names = [t.thread_id for t in saver.list_threads() if t.last_activity.timestamp() < cutoff]
        finally:
            saver.close()
    if ctx.json:
        ctx.emit({"dry_run": not a.yes, "strategy": a.strategy, "older_than_days": a.older_than, "threads": names})
        return EXIT_OK if names else EXIT_NOTHING
    if not names:
        ctx.say(f"No thread has been idle for {a.older_than:g} days.")
        return EXIT_NOTHING
    verb = "Pruned" if a.yes else "Would prune (dry run)"
    ctx.table(f"{verb}: {a.strategy}", ("thread",), [(n,) for n in names], ids=("thread",))
    if not a.yes:
        ctx.say(f"Dry run: nothing pruned. Run again with --yes to prune these {len(names)} threads.")
    return EXIT_OK
