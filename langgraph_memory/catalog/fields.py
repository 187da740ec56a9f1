"""The filter index: one row per scalar leaf of a value, so filters are found by index.

A value ``{"status": "approved", "metrics": {"sharpe": 1.4}}`` gives the rows
``("status", STR, "approved")`` and ``("metrics\\x1fsharpe", NUM, 1.4)``:
the path is the keys joined by ``\\x1f`` (so any key works, hyphens, dots and
leading digits included), the kind keeps ``True`` apart from ``1`` (LangGraph
filters compare as PostgreSQL's JSONB does), and numbers compare as numbers
(``1`` equals ``1.0``). Strings longer than `MAX_INDEXED_CHARS`, lists
and nulls are not indexed: a filter on them is applied to the values. Nor
are strings and keys holding a NUL character, on either backend: PostgreSQL's
``TEXT`` and ``JSONB`` cannot hold one, and both backends must index (and so
match) the same leaves.

`compile_filter()` turns the indexable part of a LangGraph filter into
SQL selecting candidate item ids; the caller still checks every candidate
with `langgraph_memory.search.filters.matches()` unless the compiled
part was exact.

    >>> field_rows({"status": "approved", "metrics": {"sharpe": 1.4}, "ok": True})
    [('status', 1, 'approved'), ('ok', 2, 1), ('metrics\\x1fsharpe', 0, 1.4)]
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from langgraph_memory.catalog.connection import POSTGRESQL, SQLITE, Rows, dialect_of

__all__ = [
    "KIND_NUM",
    "KIND_STR",
    "KIND_BOOL",
    "MAX_INDEXED_CHARS",
    "PATH_SEP",
    "field_rows",
    "Condition",
    "compile_filter",
    "insert_rows",
]

KIND_NUM = 0
KIND_STR = 1
KIND_BOOL = 2
PATH_SEP = "\x1f"
# Longer strings are prose: nobody filters on a paragraph by equality, and the index stays small.
MAX_INDEXED_CHARS = 256

_NUL = "\x00"

_RANGE_SQL = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def _leaf(v: Any) -> tuple[int, Any] | None:
    if isinstance(v, bool):
        return KIND_BOOL, int(v)
    if isinstance(v, str):
        return (KIND_STR, v) if len(v) <= MAX_INDEXED_CHARS and _NUL not in v else None
    if isinstance(v, int):
        return (KIND_NUM, v) if -(2**63) <= v < 2**63 else None
    if isinstance(v, float):
        return (KIND_NUM, v) if math.isfinite(v) else None
    return None


def field_rows(value: dict[str, Any], prefix: str = "") -> list[tuple[str, int, Any]]:
    """The ``(path, kind, value)`` rows of every indexable scalar leaf of ``value``."""
    out: list[tuple[str, int, Any]] = []
    stack: list[tuple[str, dict[str, Any]]] = [(prefix, value)]
    while stack:
        base, node = stack.pop(0)
        for k, v in node.items():
            path = f"{base}{k}"
            if _NUL in path:
                continue
            if isinstance(v, dict):
                stack.append((path + PATH_SEP, v))
                continue
            leaf = _leaf(v)
            if leaf is not None:
                out.append((path, leaf[0], leaf[1]))
    return out


@dataclass(frozen=True)
class Condition:
    """One indexable condition: ``path`` ``op`` ``value`` on leaves of ``kind``."""

    path: str
    kind: int
    op: str  # "=", ">", ">=", "<", "<="
    value: Any

    def sql(self, dialect: str = SQLITE) -> tuple[str, tuple[Any, ...]]:
        """``SELECT item_id FROM fields WHERE ...`` for this condition (PostgreSQL compares JSONB values)."""
        if dialect == POSTGRESQL:
            return (
                f"SELECT item_id FROM fields WHERE path = ? AND kind = ? AND val {self.op} CAST(? AS jsonb)",
                (self.path, self.kind, json.dumps(self.value)),
            )
        return (
            f"SELECT item_id FROM fields WHERE path = ? AND kind = ? AND val {self.op} ?",
            (self.path, self.kind, self.value),
        )


# The values are typed JSON on PostgreSQL (JSONB), SQLite's own values on SQLite.
_INSERT = Rows(
    "INSERT OR IGNORE INTO fields(path, kind, val, item_id) VALUES (?, ?, ?, ?)",
    "INSERT INTO fields(path, kind, val, item_id)",
    "(%s, %s, CAST(%s AS jsonb), %s)",
    " ON CONFLICT DO NOTHING",
)


def insert_rows(conn: Any, rows: Iterable[tuple[str, int, Any, int]]) -> None:
    """Add ``(path, kind, value, item_id)`` rows to the filter index (rows already there are kept)."""
    if dialect_of(conn) == POSTGRESQL:
        # A SQLite catalog written before NULs were left out may hold such rows; a copy leaves them behind.
        _INSERT.insert(
            conn,
            [
                (p, k, json.dumps(v), i)
                for p, k, v, i in rows
                if _NUL not in p and not (isinstance(v, str) and _NUL in v)
            ],
        )
    else:
        _INSERT.insert(conn, rows)


def _compile(path: str, cond: Any, out: list[Condition]) -> bool:
    """Append the indexable conditions of ``cond`` at ``path``; return whether they say everything."""
    if _NUL in path:  # no such path is indexed (see the module docstring): checked on the values
        return False
    if isinstance(cond, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in cond):
            exact = True
            for op, operand in cond.items():
                leaf = _leaf(operand)
                if op == "$eq" and leaf is not None:
                    out.append(Condition(path, leaf[0], "=", leaf[1]))
                elif op in _RANGE_SQL and leaf is not None and leaf[0] != KIND_BOOL:
                    out.append(Condition(path, leaf[0], _RANGE_SQL[op], leaf[1]))
                else:  # $ne, or an operand the index does not hold
                    exact = False
            return exact
        if not cond:
            return False
        exact = True
        for k, v in cond.items():
            exact = _compile(f"{path}{PATH_SEP}{k}", v, out) and exact
        return exact
    leaf = _leaf(cond)
    if leaf is None:
        return False
    out.append(Condition(path, leaf[0], "=", leaf[1]))
    return True


def compile_filter(filter: dict[str, Any] | None) -> tuple[list[Condition], bool]:
    """The indexable conditions of a LangGraph filter, and whether they are the whole filter.

    Every item matching the filter matches every condition, so the
    intersection of the conditions' item ids is a superset of the matches,
    and exactly the matches when the second value is True.

    Examples:
        >>> conds, exact = compile_filter({"status": "approved", "metrics": {"sharpe": {"$gt": 1}}})
        >>> [(c.path, c.op, c.value) for c in conds], exact
        ([('status', '=', 'approved'), ('metrics\\x1fsharpe', '>', 1)], True)
        >>> compile_filter({"status": {"$ne": "draft"}})[1]
        False
    """
    if not filter:
        return [], True
    out: list[Condition] = []
    exact = True
    for key, cond in filter.items():
        if "." in str(key):  # a literal key or a dotted path (see store.filters): checked on the values
            exact = False
            continue
        exact = _compile(str(key), cond, out) and exact
    return out, exact
