"""Commands for share bundles: export memories to a folder, import a folder into this data directory."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from langgraph_memory.cli._common import EXIT_NOTHING, EXIT_OK, Ctx, namespace_arg

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("export", parents=[common], help="write memories to a share bundle folder")
    p.add_argument("path", type=Path, help="the bundle folder to create")
    p.add_argument(
        "--namespace",
        type=namespace_arg,
        action="append",
        help="only under this namespace (repeatable; labels joined by '/')",
    )
    p.add_argument("--collection", action="append", help="only this collection (repeatable)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing bundle folder")
    p.set_defaults(func=_export)

    p = sub.add_parser("import", parents=[common], help="merge a share bundle into this data directory")
    p.add_argument("path", type=Path, help="the bundle folder")
    p.add_argument(
        "--on-conflict",
        choices=("newer", "keep", "replace"),
        default="newer",
        help="an item already here: the copy updated last wins (default), keep ours, or take theirs",
    )
    p.add_argument("--dry-run", action="store_true", help="report what would happen; change nothing")
    p.set_defaults(func=_import)


def _export(ctx: Ctx) -> int:
    from langgraph_memory.bundle import export_bundle

    a = ctx.args
    with ctx.open_memory() as mem, ctx.progress() as update:
        manifest = export_bundle(
            mem.store, a.path, namespaces=a.namespace, collections=a.collection, overwrite=a.overwrite, progress=update
        )
    counts = manifest.counts
    if ctx.json:
        ctx.emit({"path": str(a.path.resolve()), **manifest.as_dict()})
    else:
        by = ", ".join(f"{n} {c}" for c, n in counts["by_collection"].items()) or "nothing"
        hidden = f"; {counts.get('retired', 0)} retired, {counts.get('superseded', 0)} superseded"
        ctx.say(
            f"Exported {counts['items']} memories ({by}{hidden}), {counts['lineage_edges']} lineage links, "
            f"{counts['versions']} strategy versions to {a.path}"
        )
    return EXIT_OK if counts["items"] else EXIT_NOTHING


def _import(ctx: Ctx) -> int:
    from langgraph_memory.bundle import import_bundle, read_bundle
    from langgraph_memory.errors import InvalidArgumentError

    a = ctx.args
    if not a.path.is_dir():
        raise InvalidArgumentError(f"no bundle folder at {a.path}; give the folder `langgraph-memory export` wrote")
    with ctx.progress() as update:
        bundle = read_bundle(a.path, progress=update)  # a damaged bundle stops here, before anything is created
        # Importing into a new data directory is how a teammate starts: it may be created.
        with ctx.open_memory(embed=True, create=True) as mem:
            report = import_bundle(mem.store, bundle, on_conflict=a.on_conflict, dry_run=a.dry_run, progress=update)
    if ctx.json:
        ctx.emit(report.as_dict())
        return EXIT_OK if report.items else EXIT_NOTHING
    verb = "Would import" if report.dry_run else "Imported"
    vectors = "vectors reused" if report.vectors_reused else f"{report.reembedded} texts re-embedded"
    ctx.say(
        f"{verb} {report.items} memories from {a.path}: {report.added} added, {report.replaced} replaced, "
        f"{report.kept} kept as they were here (--on-conflict {report.on_conflict}); {vectors}."
    )
    if not report.dry_run:
        ctx.say(
            f"Lineage: {report.lineage_nodes} nodes, {report.lineage_edges} links, {report.versions} "
            f"versions added"
            + (f"; {report.cycles_skipped} links left out (cycles)" if report.cycles_skipped else "")
            + f". {report.statuses} retired or superseded statuses added."
        )
    for item_id, (old, new) in report.renumbered.items():
        ctx.say(f"strategy {item_id}: version {old} was taken here; it is version {new}")
    return EXIT_OK if report.items else EXIT_NOTHING
