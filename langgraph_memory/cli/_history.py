"""``langgraph-memory history <id or namespace/key>``: an item's versions, newest first.

Each version with when it was current, the change that made it (put, retire, supersede, restore) and the
LangGraph thread and run that made that change, what changed from the version before it, and a change that
ended the item (delete, ttl, archive). The first version's own thread and run are not known: the history
records a change's origin with the version that change ends. The call is
the declared ``get_memory_history`` (`langgraph_memory.research.calls`), as the MCP tool runs it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from langgraph_memory.cli._common import EXIT_OK, Ctx, find_items, namespace_arg
from langgraph_memory.errors import InvalidArgumentError, NotFoundError
from langgraph_memory.research.calls import research_calls

__all__ = ["register"]

# A changed value is shown up to this many characters in the table (--json has it whole).
_SHOWN = 40


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "history",
        parents=[common],
        help="an item's versions, newest first: what changed, when, and by which thread and run",
    )
    p.add_argument("item", help="its id (key), or namespace/key (e.g. memories/u1/pref-1)")
    p.add_argument("--namespace", type=namespace_arg, help="its namespace (labels joined by '/')")
    p.set_defaults(func=_history)


def _where(mem: Any, item: str, namespace: tuple[str, ...] | None) -> tuple[tuple[str, ...] | None, str]:
    """``(namespace, key)`` of ``item``: as given, ``namespace/key``, where its lineage says, or its live copy."""
    if namespace is not None:
        return namespace, item
    if "/" in item:
        *labels, key = item.split("/")
        if not key or not all(labels):
            raise InvalidArgumentError(f"expected an id or namespace/key like 'memories/u1/pref-1', got {item!r}")
        return tuple(labels), key
    if mem.lineage_store.item(item) is not None:
        return None, item  # a typed record: the call finds it through its lineage
    live = find_items(mem, item, None)
    if len(live) > 1:
        spaces = ", ".join("/".join(it.namespace) for it in live)
        raise InvalidArgumentError(f"the key {item!r} is in {len(live)} namespaces ({spaces}); give namespace/key")
    if not live:
        raise NotFoundError(
            f"no item with id {item!r}: give namespace/key for a memory that is not live (deleted, archived)"
        )
    return live[0].namespace, item


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _what_changed(row: dict[str, Any], older: dict[str, Any] | None) -> str:
    if row["created"]:
        return "created" if older is None else f"created again (after {older['change']})"
    if not row["changes"]:
        return "no change to its value"
    return "; ".join(f"{c['field']}: {_shown(c['old'])} -> {_shown(c['new'])}" for c in row["changes"])


def _history(ctx: Ctx) -> int:
    a = ctx.args
    call = next(c for c in research_calls() if c.name == "get_memory_history")
    with ctx.open_memory() as mem:
        namespace, key = _where(mem, a.item, a.namespace)
        found = call.invoke(
            mem, {"item_id": key, "namespace": None if namespace is None else list(namespace)}, min_relevance=None
        )
    rows = found["versions"]
    if not rows:
        raise NotFoundError(f"no versions of {key!r} in {'/'.join(namespace or ())}: nothing was ever stored there")
    if ctx.json:
        ctx.emit(found)
        return EXIT_OK
    first = rows[0]
    ctx.table(
        f"History of {'/'.join(first['namespace'])}/{key} ({len(rows)} versions, newest first)",
        ("#", "from", "until", "made by", "thread", "run", "what changed"),
        [
            (
                len(rows) - i,
                _stamp(r["valid_from"]),
                _until(r),
                (r["made_by"] or {}).get("change") or "put",
                (r["made_by"] or {}).get("thread_id") or "-",
                (r["made_by"] or {}).get("run_id") or "-",
                _what_changed(r, rows[i + 1] if i + 1 < len(rows) else None),
            )
            for i, r in enumerate(rows)
        ],
        ids=("thread", "run"),
    )
    return EXIT_OK


def _until(row: dict[str, Any]) -> str:
    """When the version ended; a change that ended the item itself (delete, ttl, archive) is named there."""
    if row["valid_to"] is None:
        return "now"
    ended = _stamp(row["valid_to"])
    return f"{ended} ({row['change']})" if row["change"] in ("delete", "ttl", "archive") else ended


def _stamp(iso: str) -> str:
    """An ISO time to the second (versions often change within a minute), UTC as stored."""
    from datetime import datetime

    return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M:%S")
