"""Commands over live memory: search, get, list, lineage, versions, delete."""

from __future__ import annotations

import argparse
import json
from typing import Any

from langgraph_memory.catalog import StoredItem
from langgraph_memory.catalog import items as _items
from langgraph_memory.cli._common import (
    EXIT_NOTHING,
    EXIT_OK,
    Ctx,
    item_dict,
    namespace_arg,
    positive_int,
    preview,
    stamp,
)
from langgraph_memory.collections import GENERAL, collection_by_name, collection_for
from langgraph_memory.errors import InvalidArgumentError, NotFoundError

__all__ = ["register"]

# Items deleted per catalog transaction (one progress step each).
_DELETE_BATCH = 500


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("search", parents=[common], help="search live memory by meaning")
    p.add_argument("query")
    p.add_argument("--namespace", type=namespace_arg, help="only under this namespace (labels joined by '/')")
    p.add_argument("--collection", help="only this collection (name or label, e.g. lessons)")
    p.add_argument("-k", "--limit", type=positive_int, default=5, help="how many results (default 5)")
    p.add_argument("--filter", type=json.loads, default=None, help='JSON filter, e.g. \'{"severity": "major"}\'')
    p.add_argument("--min-relevance", type=float, default=None, help="drop results under this cosine score")
    p.set_defaults(func=_search)

    p = sub.add_parser("get", parents=[common], help="show one memory by its key (or id)")
    p.add_argument("key")
    p.add_argument("--namespace", type=namespace_arg, help="its namespace, when the key is in several")
    p.set_defaults(func=_get)

    p = sub.add_parser("list", parents=[common], help="list namespaces, or the items under a namespace (paged)")
    p.add_argument("namespace", nargs="?", type=namespace_arg, help="list the items under this namespace")
    p.add_argument("--limit", type=positive_int, default=50, help="rows per page (default 50)")
    p.add_argument("--offset", type=int, default=0, help="rows to skip (the next page: --offset <limit>)")
    p.set_defaults(func=_list)

    p = sub.add_parser("lineage", parents=[common], help="where an item came from and what came from it")
    p.add_argument("id")
    p.set_defaults(func=_lineage)

    p = sub.add_parser("versions", parents=[common], help="the versions of a named strategy")
    p.add_argument("name")
    p.set_defaults(func=_versions)

    p = sub.add_parser("delete", parents=[common], help="delete memories: shows what would go; --yes deletes")
    p.add_argument("keys", nargs="*", metavar="KEY", help="keys (ids) to delete")
    p.add_argument("--namespace", type=namespace_arg, help="everything under this namespace (or the keys' namespace)")
    p.add_argument("--filter", type=json.loads, default=None, help="only items matching this JSON filter")
    p.add_argument("--yes", action="store_true", help="really delete (without it: a dry run)")
    p.set_defaults(func=_delete)


# ----------------------------------------------------------------- search


def _search(ctx: Ctx) -> int:
    a = ctx.args
    prefix: tuple[str, ...] = a.namespace or ()
    general = False
    if a.collection:
        spec = collection_by_name(a.collection)
        general = spec is GENERAL
        if spec.label and not prefix:
            prefix = (spec.label,)
    with ctx.open_memory(embed=True) as mem:
        ctx.load_model(mem)
        hits = mem.store.search(prefix, query=a.query, filter=a.filter, limit=a.limit, refresh_ttl=False)
    if general:  # the general collection has no label of its own: keep its items
        hits = [h for h in hits if collection_for(tuple(h.namespace)) is GENERAL]
    if a.min_relevance is not None:
        hits = [h for h in hits if h.score is not None and h.score >= a.min_relevance]
    if ctx.json:
        ctx.emit([item_dict(h) for h in hits])
    elif hits:
        ctx.table(f"Search: {a.query!r}", ("score", "namespace", "key", "text"),
                  [(f"{h.score:.3f}" if h.score is not None else "-", "/".join(h.namespace), h.key,
                    preview(h.value)) for h in hits], ids=("key",))
    else:
        ctx.say("No matches.")
    return EXIT_OK if hits else EXIT_NOTHING


# -------------------------------------------------------------------- get


def _find(mem: Any, key: str, namespace: tuple[str, ...] | None) -> list[StoredItem]:
    """Items with this key: in ``namespace`` if given, else in any namespace."""
    with mem.store.catalog.read() as conn:
        if namespace is not None:
            found = _items.get_items(conn, [(namespace, key)])
            return list(found.values())
        return _items.items_by_key(conn, key)


def _get(ctx: Ctx) -> int:
    a = ctx.args
    with ctx.open_memory() as mem:
        found = _find(mem, a.key, a.namespace)
    if not found:
        raise NotFoundError(f"no memory with key {a.key!r}" + (f" in {'/'.join(a.namespace)}" if a.namespace else ""))
    if len(found) > 1:
        spaces = ", ".join("/".join(it.namespace) for it in found)
        raise InvalidArgumentError(f"the key {a.key!r} is in {len(found)} namespaces ({spaces}); pass --namespace")
    it = found[0]
    if ctx.json:
        ctx.emit(item_dict(it))
        return EXIT_OK
    ctx.table(None, ("field", "value"), [
        ("namespace", "/".join(it.namespace)), ("key", it.key), ("collection", collection_for(it.namespace).name),
        ("created", stamp(it.created_at)), ("updated", stamp(it.updated_at)),
        ("last read", stamp(it.last_accessed_at)), ("reads", it.access_count),
    ], ids=("value",))
    ctx.out.print_json(json.dumps(it.value, ensure_ascii=False))
    return EXIT_OK


# ------------------------------------------------------------------- list


def _list(ctx: Ctx) -> int:
    a = ctx.args
    if a.offset < 0:
        raise InvalidArgumentError(f"--offset cannot be negative, got {a.offset}")
    with ctx.open_memory() as mem:
        with mem.store.catalog.read() as conn:
            spaces = _items.namespace_counts(conn, a.namespace or ())
        total = sum(n for _, _, n in spaces)
        if a.namespace is None:
            page: list[Any] = spaces[a.offset : a.offset + a.limit]
            shown = len(spaces)
        else:
            page = mem.store.search(a.namespace, limit=a.limit, offset=a.offset, refresh_ttl=False)
            shown = total
    if ctx.json:
        if a.namespace is None:
            ctx.emit({"namespaces": [{"namespace": list(ns), "collection": c, "items": n} for ns, c, n in page],
                      "total": shown, "offset": a.offset, "limit": a.limit})
        else:
            ctx.emit({"items": [item_dict(it) for it in page], "total": shown, "offset": a.offset, "limit": a.limit})
        return EXIT_OK if page else EXIT_NOTHING
    if not page:
        ctx.say("Nothing here." if not shown else f"Nothing past --offset {a.offset} ({shown} in all).")
        return EXIT_NOTHING
    if a.namespace is None:
        ctx.table(f"Namespaces ({total} items)", ("namespace", "collection", "items"),
                  [("/".join(ns), c, n) for ns, c, n in page], ids=("namespace",))
    else:
        ctx.table(f"Items under {'/'.join(a.namespace)}", ("key", "namespace", "updated", "text"),
                  [(it.key, "/".join(it.namespace), stamp(it.updated_at.timestamp()), preview(it.value))
                   for it in page], ids=("key",))
    end = a.offset + len(page)
    more = f"; next page: --offset {end}" if end < shown else ""
    ctx.say(f"Rows {a.offset + 1}-{end} of {shown}{more}")
    return EXIT_OK


# -------------------------------------------------------- lineage, versions


def _lineage(ctx: Ctx) -> int:
    with ctx.open_memory() as mem:
        lin = mem.lineage(ctx.args.id)
    if ctx.json:
        ctx.emit(lin.as_dict())
        return EXIT_OK
    from rich.markup import escape
    from rich.tree import Tree

    def label(node: Any) -> str:
        rel = f" [dim]({node.relation})[/]" if node.relation else ""
        return f"{escape(node.summary)}{rel}  [cyan]{node.id}[/] [dim]{node.collection or '?'} {node.status}[/]"

    if lin.ancestors:
        ctx.out.print("[bold]Ancestors[/] (root first)")
        for node in lin.ancestors:
            ctx.out.print(f"  {label(node)}", soft_wrap=True)
    root = Tree(f"[bold]{label(lin.item)}[/]")
    stack = [(root, lin.descendants)]
    while stack:  # iterative: a chain of any length
        branch, tree = stack.pop()
        for child in tree.children:
            stack.append((branch.add(label(child.node)), child))
    ctx.out.print(root, soft_wrap=True)
    return EXIT_OK


def _versions(ctx: Ctx) -> int:
    with ctx.open_memory() as mem:
        versions = mem.versions(ctx.args.name)
    rows = [{"version": v.version, "id": v.id, "status": v.status, "created_at": v.created_at.isoformat(),
             "live": v.record is not None} for v in versions]
    if ctx.json:
        ctx.emit(rows)
    elif rows:
        ctx.table(f"Versions of {ctx.args.name!r}", ("version", "id", "status", "created"),
                  [(r["version"], r["id"], r["status"] or "archived/deleted", r["created_at"][:16]) for r in rows],
                  ids=("id",))
    else:
        ctx.say(f"No strategy named {ctx.args.name!r}.")
    return EXIT_OK if rows else EXIT_NOTHING


# ----------------------------------------------------------------- delete


def _doomed(mem: Any, a: Any) -> list[StoredItem]:
    if a.keys:
        found = [it for key in dict.fromkeys(a.keys) for it in _find(mem, key, a.namespace)]
    elif a.namespace is None:
        raise InvalidArgumentError("delete needs keys, or --namespace (with --filter to narrow it down)")
    else:
        keys: list[tuple[tuple[str, ...], str]] = []
        while True:  # every match, a page at a time (searching with no query reads no vectors)
            page = mem.store.search(a.namespace, filter=a.filter, limit=1000, offset=len(keys), refresh_ttl=False)
            keys.extend((tuple(it.namespace), it.key) for it in page)
            if len(page) < 1000:
                break
        with mem.store.catalog.read() as conn:
            found = list(_items.get_items(conn, keys).values())
    if a.keys and a.filter:
        from langgraph_memory.store.filters import matches

        found = [it for it in found if matches(it.value, a.filter)]
    return found


def _delete(ctx: Ctx) -> int:
    a = ctx.args
    with ctx.open_memory() as mem:
        doomed = _doomed(mem, a)
        deleted = 0
        if doomed and a.yes:
            by_coll: dict[str, list[StoredItem]] = {}
            for it in doomed:
                by_coll.setdefault(collection_for(it.namespace).name, []).append(it)
            with ctx.progress() as update:
                for name, group in by_coll.items():
                    for start in range(0, len(group), _DELETE_BATCH):
                        deleted += mem.store.items.delete_items(name, group[start : start + _DELETE_BATCH])
                        update(f"delete {name}", min(start + _DELETE_BATCH, len(group)), len(group))
    if ctx.json:
        ctx.emit({"dry_run": not a.yes, "matched": len(doomed), "deleted": deleted,
                  "items": [{"namespace": list(it.namespace), "key": it.key} for it in doomed]})
        return EXIT_OK if doomed else EXIT_NOTHING
    if not doomed:
        ctx.say("Nothing matched; nothing deleted.")
        return EXIT_NOTHING
    ctx.table("Deleted" if a.yes else "Would delete (dry run)", ("namespace", "key", "updated", "text"),
              [("/".join(it.namespace), it.key, stamp(it.updated_at), preview(it.value)) for it in doomed[:200]],
              ids=("key",))
    if len(doomed) > 200:
        ctx.say(f"... and {len(doomed) - 200} more.")
    if a.yes:
        ctx.say(f"Deleted {deleted} items.")
    else:
        ctx.say(f"Dry run: nothing deleted. Run again with --yes to delete these {len(doomed)} items.")
    return EXIT_OK
