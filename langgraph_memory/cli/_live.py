"""Commands that read live memory: search, get, list, stats, lineage, versions."""

from __future__ import annotations

import argparse
import json
from typing import Any

from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.cli._common import (
    AS_OF_HELP,
    EXIT_NOTHING,
    EXIT_OK,
    Ctx,
    day_arg,
    find_items,
    iso,
    item_dict,
    json_object_arg,
    moment_arg,
    namespace_arg,
    positive_int,
    preview,
    stamp,
    unit_arg,
)
from langgraph_memory.errors import InvalidArgumentError, NotFoundError
from langgraph_memory.lifecycle.states import item_states
from langgraph_memory.lifecycle.states import value_status as _value_status
from langgraph_memory.research.calls import research_calls
from langgraph_memory.research.collections import GENERAL, collection_by_name, collection_for
from langgraph_memory.research.units import RELEVANCE

__all__ = ["register"]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("search", parents=[common], help="search live memory by meaning")
    p.add_argument("query")
    p.add_argument("--namespace", type=namespace_arg, help="only under this namespace (labels joined by '/')")
    p.add_argument("--collection", help="only this collection (name or label, e.g. lessons)")
    p.add_argument("-k", "--limit", type=positive_int, default=5, help="how many results (default 5)")
    p.add_argument("--filter", type=json_object_arg, default=None, help='JSON filter, e.g. \'{"severity": "major"}\'')
    p.add_argument(
        "--min-relevance",
        type=unit_arg(RELEVANCE, "--min-relevance"),
        default=None,
        help=f"drop results scoring under this ({RELEVANCE.describe()})".replace("%", "%%"),
    )
    p.add_argument("--include-retired", action="store_true", help="also return retired and superseded memories")
    p.add_argument("--as-of", type=moment_arg, metavar="WHEN", help=AS_OF_HELP)
    p.add_argument(
        "--data-cutoff",
        type=day_arg,
        metavar="DATE",
        help="only memories whose evidence (the market data behind them, through lineage) ends on or before "
        "this ISO date; those with no known evidence end are left out unless --include-undated",
    )
    p.add_argument("--include-undated", action="store_true", help="with --data-cutoff, also undated memories")
    p.set_defaults(func=_search)

    p = sub.add_parser("get", parents=[common], help="show one memory by its key (or id)")
    p.add_argument("key")
    p.add_argument("--namespace", type=namespace_arg, help="its namespace, when the key is in several")
    p.add_argument("--as-of", type=moment_arg, metavar="WHEN", help=AS_OF_HELP)
    p.set_defaults(func=_get)

    p = sub.add_parser("list", parents=[common], help="list namespaces, or the items under a namespace (paged)")
    p.add_argument("namespace", nargs="?", type=namespace_arg, help="list the items under this namespace")
    p.add_argument("--limit", type=positive_int, default=50, help="rows per page (default 50)")
    p.add_argument("--offset", type=int, default=0, help="rows to skip (the next page: --offset <limit>)")
    p.add_argument("--as-of", type=moment_arg, metavar="WHEN", help=AS_OF_HELP + " (namespaces then without counts)")
    p.set_defaults(func=_list)

    p = sub.add_parser("stats", parents=[common], help="what is in memory, per collection, and the data directory")
    p.set_defaults(func=_stats)

    p = sub.add_parser("lineage", parents=[common], help="where an item came from and what came from it")
    p.add_argument("id")
    p.set_defaults(func=_lineage)

    p = sub.add_parser("versions", parents=[common], help="the versions of a named strategy")
    p.add_argument("name")
    p.set_defaults(func=_versions)


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

    def keep(found: list[Any]) -> list[Any]:
        if general:  # the general collection has no label of its own: keep its items
            found = [h for h in found if collection_for(tuple(h.namespace)) is GENERAL]
        if a.min_relevance is not None:
            found = [h for h in found if h.score is not None and h.score >= a.min_relevance]
        return found

    hidden: list[Any] = []
    archived: list[Any] = []
    with ctx.open_memory(embed=True) as mem:
        ctx.load_model(mem)
        store: Any = mem.store if a.as_of is None else mem.store.as_of(a.as_of)
        cutoff = {"data_cutoff": a.data_cutoff, "include_undated": a.include_undated} if a.data_cutoff else {}
        hits = keep(
            store.search(
                prefix,
                query=a.query,
                filter=a.filter,
                limit=a.limit,
                refresh_ttl=False,
                include_retired=a.include_retired,
                **cutoff,
            )
        )
        # Statuses are today's: a search as of a moment shows none.
        as_now = a.as_of is None
        statuses = (
            mem.store.items.statuses([(tuple(h.namespace), h.key) for h in hits])
            if a.include_retired and as_now
            else {}
        )
        if not hits and as_now:  # say what else matches, and how to get it back
            if not a.include_retired:
                hidden = keep(
                    mem.store.search(
                        prefix,
                        query=a.query,
                        filter=a.filter,
                        limit=a.limit,
                        refresh_ttl=False,
                        include_retired=True,
                        **cutoff,
                    )
                )
            archived = keep(_archived_matches(mem, prefix, a))
    title = f"Search: {a.query!r}" + ("" if a.as_of is None else f" as of {a.as_of.isoformat()}")
    if ctx.json:
        ctx.emit([{**item_dict(h), **(_states(statuses, h) if as_now else {})} for h in hits])
    elif hits:
        lifecycle = (lambda h: _lifecycle_word(statuses, h)) if a.include_retired and as_now else None
        ctx.hits(title, hits, lifecycle=lifecycle)
    else:
        ctx.say("No matches.")
    _say_what_is_hidden(ctx, a.query, hidden, archived)
    return EXIT_OK if hits else EXIT_NOTHING


def _archived_matches(mem: Any, prefix: tuple[str, ...], a: Any) -> list[Any]:
    """The archive's best matches for a search (none when the memory has no archive: looking makes none)."""
    if not mem.settings.manifest_path.exists():
        return []
    archiver = mem.archiver
    if a.collection:
        names = [collection_by_name(a.collection).name]
    else:
        names = sorted({f.collection for f in archiver.list_archives() if f.kind == "items"})
    found: list[Any] = []
    for name in names:
        found.extend(
            archiver.search_archive(name, a.query, filter=a.filter, k=a.limit, namespace_prefix=prefix or None)
        )
    found.sort(key=lambda h: h.score if h.score is not None else float("-inf"), reverse=True)
    return found


def _memories(n: int) -> str:
    return "1 memory that matches is" if n == 1 else f"{n} memories that match are"


def _say_what_is_hidden(ctx: Ctx, query: str, hidden: list[Any], archived: list[Any]) -> None:
    """Nothing live matched: say what else does (retired or superseded items, archived ones) and how to get it."""
    if hidden:
        ctx.say(
            f"{_memories(len(hidden))} retired or superseded, which searches leave out. "
            f"--include-retired shows them; `langgraph-memory reinstate {hidden[0].key}` brings one back."
        )
    if archived:
        ctx.say(f"{_memories(len(archived))} in the archive, which a live search leaves out:")
        for h in archived[:3]:
            ctx.say(f"  {h.key}  {'/'.join(h.namespace)}  {preview(h.value, 60)}")
        ctx.say(
            f"`langgraph-memory archive search {query!r}` searches the archive; "
            f"`langgraph-memory archive restore --key {archived[0].key}` brings one back."
        )


# -------------------------------------------------------------------- get


def _get(ctx: Ctx) -> int:
    a = ctx.args
    if a.as_of is not None:
        return _get_as_of(ctx)
    with ctx.open_memory() as mem:
        found = find_items(mem, a.key, a.namespace)
        statuses = mem.store.items.statuses([(it.namespace, it.key) for it in found])
        archived = mem.archived(a.key, namespace=a.namespace) if not found else None
    if archived is not None:
        return _show_archived(ctx, archived)
    if not found:
        raise NotFoundError(f"no memory with key {a.key!r}" + (f" in {'/'.join(a.namespace)}" if a.namespace else ""))
    if len(found) > 1:
        spaces = ", ".join("/".join(it.namespace) for it in found)
        raise InvalidArgumentError(f"the key {a.key!r} is in {len(found)} namespaces ({spaces}); pass --namespace")
    it = found[0]
    st = statuses.get((it.namespace, it.key))
    # Three states, three names (as in lineage and versions): the value's status, where it is stored, its lifecycle.
    value_status = _value_status(it.value)
    if ctx.json:
        ctx.emit({**item_dict(it), **item_states(it.value, st)})
        return EXIT_OK
    rows: list[tuple[str, Any]] = [
        ("namespace", "/".join(it.namespace)),
        ("key", it.key),
        ("collection", collection_for(it.namespace).name),
        ("created", stamp(it.created_at)),
        ("updated", stamp(it.updated_at)),
        ("last read", stamp(it.last_accessed_at)),
        ("reads", it.access_count),
    ]
    if value_status is not None:
        rows.append(("status", value_status))
    rows.append(("storage", "live"))
    if st is not None:  # hidden from searches: say so, and why
        by = f" by {st.superseded_by}" if st.superseded_by and st.status == "superseded" else ""
        rows.append(("lifecycle", f"{st.status}{by} ({stamp(st.changed_at)}): {st.reason or 'no reason given'}"))
    else:
        rows.append(("lifecycle", "active"))
    ctx.table(None, ("field", "value"), rows, ids=("value",))
    ctx.out.print_json(json.dumps(it.value, ensure_ascii=False))
    return EXIT_OK


def _get_as_of(ctx: Ctx) -> int:
    """``get --as-of``: the item's value as it stood then (where its live copy or lineage says, or --namespace)."""
    a = ctx.args
    when = a.as_of.isoformat()
    with ctx.open_memory() as mem:
        spaces = [a.namespace] if a.namespace else [it.namespace for it in find_items(mem, a.key, None)]
        ref = None if a.namespace else mem.lineage_store.item(a.key)
        if ref is not None and ref.namespace not in spaces:
            spaces.append(ref.namespace)
        then = mem.store.as_of(a.as_of)
        found = [it for it in (then.get(ns, a.key) for ns in spaces) if it is not None]
    if not found:
        hint = "" if a.namespace else " (a memory deleted since is found by --namespace)"
        raise NotFoundError(f"no memory with key {a.key!r} as of {when}{hint}")
    if len(found) > 1:
        spaces_text = ", ".join("/".join(it.namespace) for it in found)
        raise InvalidArgumentError(
            f"the key {a.key!r} was in {len(found)} namespaces ({spaces_text}); pass --namespace"
        )
    it = found[0]
    if ctx.json:
        ctx.emit({**item_dict(it), "as_of": when})
        return EXIT_OK
    rows: list[tuple[str, Any]] = [
        ("namespace", "/".join(it.namespace)),
        ("key", it.key),
        ("collection", collection_for(tuple(it.namespace)).name),
        ("created", stamp(it.created_at)),
        ("updated", stamp(it.updated_at)),
        ("as of", when),
    ]
    ctx.table(None, ("field", "value"), rows, ids=("value",))
    ctx.out.print_json(json.dumps(it.value, ensure_ascii=False))
    return EXIT_OK


def _show_archived(ctx: Ctx, archived: Any) -> int:
    """``get`` of an item that left live memory for the archive: the archived copy, and how to restore it."""
    it = archived.item
    restore = f"langgraph-memory archive restore --key {it.key}"
    if ctx.json:
        ctx.emit(
            {
                **item_dict(it),
                **item_states(it.value, archived.status, storage="archived"),
                "archived_at": iso(archived.archived_at),
                "archive_file": archived.file,
                "restore": restore,
            }
        )
        return EXIT_OK
    rows: list[tuple[str, Any]] = [
        ("namespace", "/".join(it.namespace)),
        ("key", it.key),
        ("collection", archived.collection),
        ("created", stamp(it.created_at)),
        ("updated", stamp(it.updated_at)),
        ("storage", f"archived {stamp(archived.archived_at)} in {archived.file}"),
        ("lifecycle", archived.status.status if archived.status is not None else "active"),
    ]
    ctx.table(None, ("field", "value"), rows, ids=("value",))
    ctx.out.print_json(json.dumps(it.value, ensure_ascii=False))
    ctx.say(archived.explain())
    return EXIT_OK


# ------------------------------------------------------------------- list


def _list(ctx: Ctx) -> int:
    a = ctx.args
    if a.offset < 0:
        raise InvalidArgumentError(f"--offset cannot be negative, got {a.offset}")
    if a.as_of is not None:
        return _list_as_of(ctx)
    with ctx.open_memory() as mem:
        with mem.store.catalog.read() as conn:
            spaces = _item_rows.namespace_counts(conn, a.namespace or ())
        total = sum(n for _, _, n in spaces)
        if a.namespace is None:
            page: list[Any] = spaces[a.offset : a.offset + a.limit]
            shown = len(spaces)
        else:
            # Every item, retired and superseded ones too (marked): the counts above include them.
            page = mem.store.search(
                a.namespace, limit=a.limit, offset=a.offset, refresh_ttl=False, include_retired=True
            )
            shown = total
            statuses = mem.store.items.statuses([(tuple(it.namespace), it.key) for it in page])
    if ctx.json:
        if a.namespace is None:
            ctx.emit(
                {
                    "namespaces": [{"namespace": list(ns), "collection": c, "items": n} for ns, c, n in page],
                    "total": shown,
                    "offset": a.offset,
                    "limit": a.limit,
                }
            )
        else:
            ctx.emit(
                {
                    "items": [{**item_dict(it), **_states(statuses, it)} for it in page],
                    "total": shown,
                    "offset": a.offset,
                    "limit": a.limit,
                }
            )
        return EXIT_OK if page else EXIT_NOTHING
    if not page:
        ctx.say("Nothing here." if not shown else f"Nothing past --offset {a.offset} ({shown} in all).")
        return EXIT_NOTHING
    if a.namespace is None:
        ctx.table(
            f"Namespaces ({total} items)",
            ("namespace", "collection", "items"),
            [("/".join(ns), c, n) for ns, c, n in page],
            ids=("namespace",),
        )
    else:
        ctx.table(
            f"Items under {'/'.join(a.namespace)}",
            ("key", "namespace", "updated", "lifecycle", "text"),
            [
                (
                    it.key,
                    "/".join(it.namespace),
                    stamp(it.updated_at),
                    _lifecycle_word(statuses, it),
                    preview(it.value),
                )
                for it in page
            ],
            ids=("key",),
        )
    end = a.offset + len(page)
    more = f"; next page: --offset {end}" if end < shown else ""
    ctx.say(f"Rows {a.offset + 1}-{end} of {shown}{more}")
    return EXIT_OK


def _list_as_of(ctx: Ctx) -> int:
    """``list --as-of``: the namespaces that held items then, or one page of the items under one then.

    The history keeps no per-namespace counts, so the namespaces come without them, and a page says whether
    another follows rather than how many there are.
    """
    a = ctx.args
    when = a.as_of.isoformat()
    with ctx.open_memory() as mem:
        then = mem.store.as_of(a.as_of)
        if a.namespace is None:
            rows: list[Any] = then.list_namespaces(limit=a.limit + 1, offset=a.offset)
        else:
            rows = then.search(a.namespace, limit=a.limit + 1, offset=a.offset, include_retired=True)
    more, page = len(rows) > a.limit, rows[: a.limit]
    if ctx.json:
        if a.namespace is None:
            spaces = [{"namespace": list(ns), "collection": collection_for(tuple(ns)).name} for ns in page]
            ctx.emit({"namespaces": spaces, "as_of": when, "offset": a.offset, "limit": a.limit, "more": more})
        else:
            items = [item_dict(it) for it in page]
            ctx.emit({"items": items, "as_of": when, "offset": a.offset, "limit": a.limit, "more": more})
        return EXIT_OK if page else EXIT_NOTHING
    if not page:
        ctx.say(f"Nothing here as of {when}.")
        return EXIT_NOTHING
    if a.namespace is None:
        ctx.table(
            f"Namespaces as of {when}",
            ("namespace", "collection"),
            [("/".join(ns), collection_for(tuple(ns)).name) for ns in page],
            ids=("namespace",),
        )
    else:
        ctx.table(
            f"Items under {'/'.join(a.namespace)} as of {when}",
            ("key", "namespace", "updated", "text"),
            [(it.key, "/".join(it.namespace), stamp(it.updated_at), preview(it.value)) for it in page],
            ids=("key",),
        )
    end = a.offset + len(page)
    ctx.say(f"Rows {a.offset + 1}-{end}" + (f"; next page: --offset {end}" if more else ""))
    return EXIT_OK


def _states(statuses: dict[Any, Any], it: Any) -> dict[str, Any]:
    """The item's status, storage and lifecycle (see `langgraph_memory.lifecycle.states`)."""
    return item_states(it.value, statuses.get((tuple(it.namespace), it.key)))


def _lifecycle_word(statuses: dict[Any, Any], it: Any) -> str:
    st = statuses.get((tuple(it.namespace), it.key))
    return st.status if st is not None else ""


# ------------------------------------------------------------------ stats


def _size(n: int) -> str:
    """Bytes for a table: ``812 B``, ``4.2 KB``, ``1.3 MB``."""
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _stats(ctx: Ctx) -> int:
    with ctx.open_memory() as mem:
        stats = mem.stats()
        where = mem.settings.where  # a server's address (without its password), else the data directory
    if ctx.json:
        ctx.emit(stats.as_dict())
        return EXIT_OK
    rows = [
        (
            c.name,
            c.items,
            c.with_vectors,
            _size(c.storage_bytes),
            stamp(c.oldest),
            stamp(c.newest),
            c.archived,
            c.retired,
            c.superseded,
        )
        for c in stats.collections.values()
    ]
    rows.append(
        (
            "total",
            stats.items,
            sum(c.with_vectors for c in stats.collections.values()),
            _size(sum(c.storage_bytes for c in stats.collections.values())),
            "",
            "",
            stats.archived,
            stats.retired,
            stats.superseded,
        )
    )
    ctx.table(
        f"Memory in {where}",
        ("collection", "items", "with vectors", "storage", "oldest", "newest", "archived", "retired", "superseded"),
        rows,
        ids=("collection",),
    )
    threads = (
        "no checkpointer threads" if not stats.threads else f"{stats.threads} threads ({stats.checkpoints} checkpoints)"
    )
    ctx.say(
        f"{stats.namespaces} namespaces, {stats.lineage_edges} lineage links, {stats.sessions} sessions "
        f"({stats.active_sessions} active; {stats.session_turns} turns recorded, {stats.promoted_turns} promoted), "
        f"{threads}."
    )
    ctx.say("On disk: " + ", ".join(f"{name} {_size(n)}" for name, n in stats.disk_bytes.items()))
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
        states = [f"storage {node.storage}", f"lifecycle {node.lifecycle}"]
        if node.superseded_by and node.lifecycle == "superseded":
            states[-1] += f" by {node.superseded_by}"
        if node.status:
            states.insert(0, f"status {node.status}")
        where = escape(f"{node.collection or '?'}; {', '.join(states)}")
        return f"{escape(node.summary)}{rel}  [cyan]{node.id}[/] [dim]{where}[/]"

    if lin.ancestors:
        ctx.out.print("[bold]Ancestors[/] (root first)")
        for node in lin.ancestors:
            ctx.out.print(f"  {label(node)}", soft_wrap=True)
    rows = lin.descendants.rows()
    if max((r["depth"] for r in rows), default=0) > _TREE_DEPTH:
        # A deep chain as a tree would indent each line by its depth (a 10,000 deep chain: lines of
        # 40,000 columns); list it flat instead, each line with its depth and parent.
        ctx.out.print(f"[bold]{label(lin.item)}[/]", soft_wrap=True)
        from types import SimpleNamespace

        for r in rows:
            ctx.out.print(f"  {r['depth']:>5} {label(SimpleNamespace(**r))} [dim]<- {r['parent']}[/]", soft_wrap=True)
        return EXIT_OK
    root = Tree(f"[bold]{label(lin.item)}[/]")
    stack = [(root, lin.descendants)]
    while stack:  # iterative: a chain of any length
        branch, tree = stack.pop()
        for child in tree.children:
            stack.append((branch.add(label(child.node)), child))
    ctx.out.print(root, soft_wrap=True)
    return EXIT_OK


# Deeper descendant trees are printed as a flat list with depths.
_TREE_DEPTH = 16


def _versions(ctx: Ctx) -> int:
    call = next(c for c in research_calls() if c.name == "strategy_versions")
    with ctx.open_memory() as mem:
        rows = call.invoke(mem, {"name": ctx.args.name}, min_relevance=None)["versions"]
    if ctx.json:
        ctx.emit(rows)
    elif rows:
        ctx.table(
            f"Versions of {ctx.args.name!r}",
            ("version", "id", "status", "storage", "lifecycle", "created"),
            [
                (
                    r["version"],
                    r["id"],
                    r["status"] or "-",
                    "live" if r["storage"] == "live" else "archived or deleted",
                    r["lifecycle"] + (f" by {r['superseded_by']}" if r["superseded_by"] else ""),
                    r["created_at"][:16],
                )
                for r in rows
            ],
            ids=("id",),
        )
    else:
        ctx.say(f"No strategy named {ctx.args.name!r}.")
    return EXIT_OK if rows else EXIT_NOTHING
