"""``langgraph-memory migrate SOURCE TARGET``: move a memory between a data directory and PostgreSQL.

    langgraph-memory migrate ./memory postgresql://user@db:5432/memory --local-dir /var/lib/lgm
    langgraph-memory migrate postgresql://user@db:5432/memory ./exported     # the reverse: export

The catalog (items, vectors, filter rows, lineage, versions, statuses,
sessions, ingestion records, the memory's settings) is copied row by row
with a progress bar and verified by counting every table; the keyword index
is rebuilt on the target, the Chroma index by the first store that opens it.
Threads go along: ``checkpoints.sqlite`` into the PostgresCheckpointer on
the same server, or the server's threads into the exported directory's file. Archive files and ingested
originals (``archive/``, ``raw/``) are copied into the target's local folder.
The source is only read. Running it again copies only what is missing; a
target holding another memory is refused.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from langgraph_memory._infra.pg import is_postgres_url
from langgraph_memory.cli._common import EXIT_OK, Ctx, positive_int
from langgraph_memory.errors import ConfigError

__all__ = ["register"]

# Folders of a memory's local directory that hold files the catalog refers to.
_FOLDERS = ("archive", "raw")
# Files that belong to one running copy, never moved.
_SKIP = {"run.lock"}


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "migrate",
        parents=[common],
        help="copy a memory between a data directory and PostgreSQL (either way), counts verified",
    )
    p.add_argument("source", help="data directory, or postgresql:// address, to copy from (only read)")
    p.add_argument("target", help="postgresql:// address, or data directory, to copy into")
    p.add_argument(
        "--no-checkpoints", action="store_true", help="leave checkpoints.sqlite out (threads are copied by default)"
    )
    p.add_argument("--batch", type=positive_int, default=1000, help="rows per transaction (default 1000)")
    p.set_defaults(func=_migrate)


def _settings(where: str, local_dir: str | None, *, source: bool) -> Any:
    from langgraph_memory.config import Settings

    if is_postgres_url(where):
        return Settings.resolve(where, local_dir=local_dir)
    settings = Settings.resolve(where)
    if source and not settings.catalog_path.is_file():
        raise ConfigError(f"no memory at {settings.data_dir}: {settings.catalog_path.name} is missing")
    return settings


def _copy_folders(source: Path, target: Path) -> int:
    """Copy the files of ``archive/`` and ``raw/`` that the target lacks; return how many."""
    copied = 0
    if source.resolve() == target.resolve():
        return 0
    for name in _FOLDERS:
        root = source / name
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.name in _SKIP:
                continue
            dest = target / name / path.relative_to(root)
            if dest.exists():
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
            copied += 1
    return copied


def _migrate(ctx: Ctx) -> int:
    from langgraph_memory.catalog.factory import open_catalog
    from langgraph_memory.catalog.transfer import copy_catalog

    a = ctx.args
    if not (is_postgres_url(a.source) or is_postgres_url(a.target)):
        raise ConfigError("one side must be a postgresql:// address (copy a data directory with `export`/`import`)")
    src_settings = _settings(a.source, ctx.local_dir, source=True)
    dst_settings = _settings(a.target, ctx.local_dir, source=False)
    if src_settings.where == dst_settings.where:
        raise ConfigError(f"the source and the target are the same memory ({src_settings.where})")
    threads: dict[str, Any] | None = None
    source = open_catalog(src_settings)
    try:
        if dst_settings.catalog_url is None:
            dst_settings.ensure_dirs()  # a folder that cannot be made is a typed error naming it
        target = open_catalog(dst_settings)
        try:
            with ctx.progress() as update:
                report = copy_catalog(source, target, progress=update, batch=a.batch)
                if not a.no_checkpoints:
                    threads = _copy_threads(src_settings, dst_settings, update)
        finally:
            target.close()
    finally:
        source.close()
    files = _copy_folders(src_settings.data_dir, dst_settings.data_dir)
    if ctx.json:
        ctx.emit({**report.as_dict(), "threads": threads, "files": files})
        return EXIT_OK
    ctx.table(
        f"{report.source} -> {report.target}",
        ("table", "rows", "copied now"),
        [(name, n, report.copied.get(name, 0)) for name, n in report.rows.items()],
    )
    ctx.say(
        f"Copied {report.total} rows ({sum(report.copied.values())} new), {report.meta} settings; "
        f"{report.keywords} items indexed for keyword search; counts verified."
    )
    if threads is not None:
        ctx.say(
            f"Threads: {threads['threads']} threads, {threads['checkpoints']} checkpoints, "
            f"{threads['writes']} pending writes copied; counts verified."
        )
    if files:
        ctx.say(f"Copied {files} archive and ingested files into {dst_settings.data_dir}.")
    ctx.say("The Chroma index is rebuilt from the catalog by the first program that opens the target.")
    return EXIT_OK


def _copy_threads(src: Any, dst: Any, update: Any) -> dict[str, Any] | None:
    """Threads beside the catalogs: ``checkpoints.sqlite`` into the PostgresCheckpointer on the target's server,
    or the source server's threads into the target directory's ``checkpoints.sqlite``."""
    from langgraph_memory.checkpoint.postgres import PostgresCheckpointer, copy_from_sqlite, copy_to_sqlite

    def tick(table: str, done: int, total: int | None) -> None:
        update(f"threads: {table}", done, total)

    if src.catalog_url is None and dst.catalog_url is not None:
        if not src.checkpoints_path.is_file():
            return None
        with PostgresCheckpointer(dst.catalog_url, timeout=dst.lock_timeout, check_conflicts=False) as saver:
            report = copy_from_sqlite(src.checkpoints_path, saver, progress=tick)
    elif src.catalog_url is not None and dst.catalog_url is None:
        with PostgresCheckpointer(src.catalog_url, timeout=src.lock_timeout, check_conflicts=False) as saver:
            report = copy_to_sqlite(saver, dst.checkpoints_path, progress=tick)
    else:
        return None
    return {
        "threads": report.threads,
        "checkpoints": report.checkpoints,
        "blobs": report.blobs,
        "writes": report.writes,
        "verified": True,
    }
