"""Commands over the life of memories: retire, supersede, reinstate, and the hard delete (dry run first)."""

from __future__ import annotations

import argparse
from typing import Any

from langgraph_memory.cli._common import (
    EXIT_NOTHING,
    EXIT_OK,
    Ctx,
    find_items,
    json_object_arg,
    namespace_arg,
    preview,
    stamp,
)
from langgraph_memory.errors import InvalidArgumentError
from langgraph_memory.lifecycle.states import lifecycle_json

__all__ = ["register"]

# Items read and deleted per catalog transaction (one progress step each).
_DELETE_BATCH = 500
# Rows of the delete table; the rest is counted.
_SHOWN = 200

ItemKey = tuple[tuple[str, ...], str]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "retire",
        parents=[common],
        help="hide a memory from searches (a soft delete: kept, readable, undone by reinstate)",
    )
    p.add_argument("id", help="its id (a typed record) or key (with --namespace)")
    p.add_argument("--reason", required=True, help="why it should no longer be used")
    p.add_argument(
        "--namespace", type=namespace_arg, help="its namespace (needed for items not stored by the typed API)"
    )
    p.set_defaults(func=_retire)

    p = sub.add_parser("supersede", parents=[common], help="replace a memory by a newer one: searches find the new one")
    p.add_argument("old", help="the id (or key) of the memory replaced")
    p.add_argument("new", help="the id (or key) of the memory replacing it")
    p.add_argument("--reason", help="why it was replaced")
    p.add_argument(
        "--namespace", type=namespace_arg, help="the old memory's namespace (items not stored by the typed API)"
    )
    p.add_argument("--new-namespace", type=namespace_arg, help="the new memory's namespace (likewise)")
    p.set_defaults(func=_supersede)

    p = sub.add_parser("reinstate", parents=[common], help="undo retire or supersede: searches find the memory again")
    p.add_argument("id")
    p.add_argument("--namespace", type=namespace_arg, help="its namespace (items not stored by the typed API)")
    p.set_defaults(func=_reinstate)

    p = sub.add_parser(
        "delete",
        parents=[common],
        help="delete memories for good (item, vectors, lineage, status, archived copies): shows what would go; "
        "--yes deletes",
    )
    p.add_argument(
        "keys",
        nargs="*",
        metavar="KEY",
        help="keys (ids) to delete; one that only the archive holds is found by its key too",
    )
    p.add_argument(
        "--namespace",
        type=namespace_arg,
        help="every live item under this namespace, retired ones included (or the keys' namespace)",
    )
    p.add_argument("--filter", type=json_object_arg, default=None, help="only live items matching this JSON filter")
    p.add_argument("--yes", action="store_true", help="really delete (without it: a dry run)")
    p.set_defaults(func=_delete)


# ---------------------------------------------------- retire, supersede


def _status_out(ctx: Ctx, verb: str, item_id: str, st: Any) -> int:
    if ctx.json:
        ctx.emit({"id": item_id, "namespace": list(st.namespace), "collection": st.collection, **lifecycle_json(st)})
    else:
        by = f" by {st.superseded_by}" if st.superseded_by and st.status == "superseded" else ""
        why = f": {st.reason}" if st.reason else ""
        ctx.say(
            f"{verb} {item_id} in {'/'.join(st.namespace)} ({st.collection}){by}{why}. "
            f"Searches leave it out; `langgraph-memory reinstate {item_id}` undoes it."
        )
    return EXIT_OK


def _retire(ctx: Ctx) -> int:
    a = ctx.args
    with ctx.open_memory() as mem:
        st = mem.retire(a.id, a.reason, namespace=a.namespace)
    return _status_out(ctx, "Retired", a.id, st)


def _supersede(ctx: Ctx) -> int:
    a = ctx.args
    with ctx.open_memory() as mem:
        st = mem.supersede(a.old, a.new, a.reason, namespace=a.namespace, new_namespace=a.new_namespace)
    return _status_out(ctx, "Superseded", a.old, st)


def _reinstate(ctx: Ctx) -> int:
    a = ctx.args
    with ctx.open_memory() as mem:
        had = mem.reinstate(a.id, namespace=a.namespace)
    if ctx.json:
        ctx.emit({"id": a.id, "reinstated": had})
    else:
        ctx.say(
            f"Reinstated {a.id}: searches find it again."
            if had
            else f"{a.id} was neither retired nor superseded; nothing changed."
        )
    return EXIT_OK if had else EXIT_NOTHING


# ----------------------------------------------------------------- delete


def _archived_namespaces(mem: Any, key: str) -> list[tuple[str, ...]]:
    """The namespaces of the archived copies of ``key`` (none when the data directory has no archive)."""
    if not mem.settings.manifest_path.exists():
        return []
    return list(dict.fromkeys(tuple(a.namespace) for a in mem.archiver.get_archived([key])))


def _by_key(mem: Any, a: Any) -> tuple[list[ItemKey], dict[ItemKey, Any]]:
    """The items the keys name: live ones (in --namespace, else any), else what lineage or the archive knows."""
    from langgraph_memory.search.filters import matches

    targets: list[ItemKey] = []
    values: dict[ItemKey, Any] = {}
    for key in dict.fromkeys(a.keys):
        found = find_items(mem, key, a.namespace)
        if found:
            for it in found:
                if a.filter is None or matches(it.value, a.filter):
                    targets.append((tuple(it.namespace), it.key))
                    values[targets[-1]] = it
            continue
        if a.filter is not None:  # a filter reads live values: an item that is not live cannot match it
            continue
        if a.namespace is not None:
            targets.append((a.namespace, key))  # maybe archived, or only a status left
            continue
        ref = mem.lineage_store.item(key)
        spaces = [ref.namespace] if ref is not None else _archived_namespaces(mem, key)
        targets.extend((tuple(ns), key) for ns in spaces)
    return targets, values


def _under_namespace(mem: Any, a: Any) -> tuple[list[ItemKey], dict[ItemKey, Any]]:
    """Every live item under --namespace matching --filter, retired and superseded ones included."""
    found: list[Any] = []
    while True:  # a page at a time (searching with no query reads no vectors)
        page = mem.store.search(
            a.namespace, filter=a.filter, limit=1000, offset=len(found), refresh_ttl=False, include_retired=True
        )
        found.extend(page)
        if len(page) < 1000:
            break
    values = {(tuple(it.namespace), it.key): it for it in found}
    return list(values), values


def _delete(ctx: Ctx) -> int:
    a = ctx.args
    if not a.keys and a.namespace is None:
        raise InvalidArgumentError("delete needs keys, or --namespace (with --filter to narrow it down)")
    with ctx.open_memory() as mem:
        targets, values = _by_key(mem, a) if a.keys else _under_namespace(mem, a)
        reports: list[Any] = []
        with ctx.progress() as update:
            phase = "delete" if a.yes else "check"
            for start in range(0, len(targets), _DELETE_BATCH):
                batch = targets[start : start + _DELETE_BATCH]
                reports.extend(r for r in mem.lifecycle.delete_many(batch, dry_run=not a.yes) if r.removed_anything)
                update(phase, start + len(batch), len(targets))
    totals = {
        "vectors": sum(r.vectors for r in reports),
        "lineage_edges": len({(e.child_id, e.parent_id, e.relation) for r in reports for e in r.edges}),
        "statuses": sum(r.status is not None for r in reports),
        "archived_copies": sum(r.archived_copies for r in reports),
    }
    if ctx.json:
        ctx.emit(
            {
                "dry_run": not a.yes,
                "matched": len(reports),
                "deleted": len(reports) if a.yes else 0,
                "live": sum(r.live for r in reports),
                **totals,
                "items": [r.as_dict() for r in reports],
            }
        )
        return EXIT_OK if reports else EXIT_NOTHING
    if not reports:
        ctx.say("Nothing matched; nothing deleted.")
        return EXIT_NOTHING

    def text(r: Any) -> str:
        it = values.get((r.namespace, r.id))
        return preview(it.value) if it is not None else "(archived)" if r.archived_copies else "-"

    def updated(r: Any) -> str:
        it = values.get((r.namespace, r.id))
        return stamp(it.updated_at) if it is not None else "-"

    ctx.table(
        "Deleted" if a.yes else "Would delete (dry run)",
        ("namespace", "key", "removes", "updated", "text"),
        [("/".join(r.namespace), r.id, ", ".join(r.removes()), updated(r), text(r)) for r in reports[:_SHOWN]],
        ids=("key",),
    )
    if len(reports) > _SHOWN:
        ctx.say(f"... and {len(reports) - _SHOWN} more.")
    live = sum(r.live for r in reports)
    summary = (
        f"{len(reports)} items ({live} live, {totals['vectors']} vectors, {totals['lineage_edges']} lineage "
        f"links, {totals['statuses']} retired/superseded statuses, {totals['archived_copies']} archived copies)"
    )
    if a.yes:
        ctx.say(f"Deleted {summary}. This cannot be undone.")
    else:
        ctx.say(f"Dry run: nothing deleted. Run again with --yes to delete these {summary}.")
    return EXIT_OK
