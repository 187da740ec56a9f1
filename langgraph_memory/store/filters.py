"""LangGraph search filters: matching in Python and translation to Chroma ``where``.

LangGraph filters look like ``{"status": "approved", "metrics": {"sharpe": {"$gt": 1}}}``
with the operators ``$eq $ne $gt $gte $lt $lte`` and nested dicts for nested
values. :func:`compile_where` turns the part Chroma can evaluate into a
``where`` clause (one operator per level, several conditions under ``$and``)
whose matches are always a superset of the true matches; :func:`matches`
then decides exactly, so anything Chroma cannot express is applied afterwards.

Comparison rules (those of PostgreSQL's JSONB, which LangGraph's stores follow):
booleans equal only booleans (``True`` is not ``1``); ``1`` equals ``1.0``;
``$gt``/``$gte``/``$lt``/``$lte`` compare numbers with numbers and strings with
strings, and anything else (a missing field included) does not match.

    >>> matches({"a": {"b": 2}}, {"a": {"b": {"$gte": 2}}})
    True
    >>> compile_where({"a": {"b": {"$gte": 2}}, "s": "x"})
    ({'$and': [{'a.b': {'$gte': 2}}, {'s': {'$eq': 'x'}}]}, True)
"""

from __future__ import annotations

from typing import Any

from langgraph_memory.errors import FilterError
from langgraph_memory.store.records import flat_key_ok, flattenable

__all__ = ["matches", "compile_where", "combine_where", "OPERATORS"]

OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_RANGE = {"$gt", "$gte", "$lt", "$lte"}


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (dict, list, tuple)) or isinstance(b, (dict, list, tuple)):
        return False
    return a == b


def _apply(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return _equal(value, operand)
    if op == "$ne":
        return not _equal(value, operand)
    if op not in _RANGE:
        raise FilterError(
            f"unsupported filter operator {op!r}; use one of {', '.join(sorted(OPERATORS))} "
            "or a plain value for equality."
        )
    if _is_number(operand):
        if not _is_number(value):
            return False
        a, b = float(value), float(operand)
    elif isinstance(operand, str):
        if not isinstance(value, str):
            return False
        a, b = value, operand  # type: ignore[assignment]
    else:
        raise FilterError(f"operator {op} needs a number or a string, got {operand!r}")
    if op == "$gt":
        return a > b
    if op == "$gte":
        return a >= b
    if op == "$lt":
        return a < b
    return a <= b


def _match_value(value: Any, cond: Any) -> bool:
    if isinstance(cond, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in cond):
            return all(_apply(value, op, operand) for op, operand in cond.items())
        if not isinstance(value, dict):
            return False
        return all(_match_value(value.get(k), v) for k, v in cond.items())
    if isinstance(cond, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(cond)
            and all(_match_value(v, c) for v, c in zip(value, cond))
        )
    return _equal(value, cond)


def matches(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    """Whether an item's value satisfies a LangGraph filter."""
    if not filter:
        return True
    return all(_match_value(value.get(k), cond) for k, cond in filter.items())


def validate_filter(filter: dict[str, Any] | None) -> None:
    """Raise :class:`FilterError` for unknown operators or a non-dict filter."""
    if filter is None:
        return
    if not isinstance(filter, dict):
        raise FilterError(f"a filter must be a dict, got {type(filter).__name__}")

    def walk(cond: Any) -> None:
        if isinstance(cond, dict):
            for k, v in cond.items():
                if isinstance(k, str) and k.startswith("$"):
                    if k not in OPERATORS:
                        raise FilterError(
                            f"unsupported filter operator {k!r}; use one of {', '.join(sorted(OPERATORS))}"
                        )
                    if k in _RANGE and not (_is_number(v) or isinstance(v, str)):
                        raise FilterError(f"operator {k} needs a number or a string, got {v!r}")
                else:
                    walk(v)

    walk(filter)


def _compile(path: str, cond: Any, out: list[dict[str, Any]]) -> bool:
    """Append clauses for ``cond`` at ``path``; return whether they are exact."""
    if isinstance(cond, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in cond):
            exact = True
            for op, operand in cond.items():
                if op in ("$eq", "$ne") and flattenable(operand):
                    out.append({path: {op: operand}})
                elif op in _RANGE and _is_number(operand) and flattenable(operand):
                    out.append({path: {op: operand}})
                else:
                    exact = False
            return exact
        if not cond:
            return False
        exact = True
        for k, v in cond.items():
            if not flat_key_ok(k):
                exact = False
                continue
            exact = _compile(f"{path}.{k}", v, out) and exact
        return exact
    if flattenable(cond):
        out.append({path: {"$eq": cond}})
        return True
    return False


def compile_where(filter: dict[str, Any] | None, *, unflattened: str | None = None) -> tuple[dict[str, Any] | None, bool]:
    """Chroma ``where`` for ``filter`` and whether it is exact (no Python pass needed).

    ``unflattened`` names a top-level field the collection does not flatten
    (a typed collection's embedded text): conditions on it run in Python.
    """
    if not filter:
        return None, True
    clauses: list[dict[str, Any]] = []
    exact = True
    for key, cond in filter.items():
        if not flat_key_ok(key) or key == unflattened:
            exact = False
            continue
        exact = _compile(key, cond, clauses) and exact
    return combine_where(clauses), exact


def combine_where(clauses: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One ``where`` from several single-condition clauses."""
    clauses = [c for c in clauses if c]
    if not clauses:
        return None
    if len(clauses) == 1:
        return clauses[0]
    return {"$and": clauses}
