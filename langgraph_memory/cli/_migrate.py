"""``langgraph-memory checkpoints migrate SRC DST``: move threads into PostgreSQL.

SRC is a ``checkpoints.sqlite`` file (or the data directory holding it), or
a ``postgresql://`` address whose LangGraph ``PostgresSaver`` tables are
imported; DST is the ``postgresql://`` address of the PostgresCheckpointer.
Counts are verified at the end; running it again is harmless.
"""

from __future__ import annotations

import argparse
from typing import Any

from langgraph_memory.cli._common import EXIT_OK, Ctx
from langgraph_memory.errors import ConfigError

__all__ = ["register"]

_SCHEMES = ("postgresql://", "postgres://")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    checkpoints = sub.add_parser(
        "checkpoints", parents=[common], help="the checkpointer's storage: migrate threads into PostgreSQL"
    )
    csub = checkpoints.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = csub.add_parser(
        "migrate",
        parents=[common],
        help="copy threads from a checkpoints.sqlite (or a PostgresSaver database) into PostgreSQL",
    )
    p.add_argument(
        "source",
        help="checkpoints.sqlite, its data directory, or a postgresql:// address "
        "whose PostgresSaver threads are imported",
    )
    p.add_argument("target", help="postgresql:// address of the PostgresCheckpointer")
    p.add_argument("--schema", default=None, help="PostgreSQL schema of the target tables (default langgraph_memory)")
    p.set_defaults(func=_migrate)


def _migrate(ctx: Ctx) -> int:
    from langgraph_memory.checkpoint.postgres import (
        PostgresCheckpointer,
        copy_from_sqlite,
        import_from_postgres_saver,
    )

    source, target = ctx.args.source, ctx.args.target
    if not target.startswith(_SCHEMES):
        raise ConfigError(f"the target must be a postgresql:// address, got {target!r}")
    kwargs: dict[str, Any] = {"check_conflicts": False}
    if ctx.args.schema:
        kwargs["schema"] = ctx.args.schema
    with PostgresCheckpointer(target, **kwargs) as saver, ctx.progress() as update:
        if source.startswith(_SCHEMES):
            report = import_from_postgres_saver(source, saver, progress=update)
            origin = "PostgresSaver"
        else:
            report = copy_from_sqlite(source, saver, progress=update)
            origin = "SQLite"
    if ctx.json:
        ctx.emit(
            {
                "source": origin,
                "threads": report.threads,
                "checkpoints": report.checkpoints,
                "blobs": report.blobs,
                "writes": report.writes,
                "verified": True,
            }
        )
    else:
        ctx.say(
            f"copied {report.threads} threads, {report.checkpoints} checkpoints and {report.writes} "
            f"pending writes from {origin}; counts verified"
        )
    return EXIT_OK
