"""LangGraph search filters: validation, and the exact match on a value.

LangGraph filters look like ``{"status": "approved", "metrics": {"sharpe": {"$gt": 1}}}``
with the operators ``$eq $ne $gt $gte $lt $lte`` and nested dicts for nested
values. The catalog's filter index (`langgraph_memory.catalog.fields`)
narrows the candidates; `matches()` decides exactly.

Comparison rules (those of PostgreSQL's JSONB, which LangGraph's stores follow):
booleans equal only booleans (``True`` is not ``1``); ``1`` equals ``1.0``;
``$gt``/``$gte``/``$lt``/``$lte`` compare numbers with numbers and strings with
strings, and anything else (a missing field included) does not match.

    >>> matches({"a": {"b": 2}}, {"a": {"b": {"$gte": 2}}})
    True
    >>> matches({"access-level": "public"}, {"access-level": "public"})
    True
    >>> matches({"user": {"access-level": "nested"}}, {"user.access-level": "nested"})   # a dotted path
    True
"""

from __future__ import annotations

from typing import Any

from langgraph_memory.errors import FilterError

__all__ = ["matches", "validate_filter", "OPERATORS"]

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
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
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
            and all(_match_value(v, c) for v, c in zip(value, cond, strict=True))
        )
    return _equal(value, cond)


def matches(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    """Whether an item's value satisfies a LangGraph filter."""
    if not filter:
        return True
    return all(_match_value(_field(value, k), cond) for k, cond in filter.items())


def _field(value: dict[str, Any], key: str) -> Any:
    # A key the value holds as is matches as is (InMemoryStore); otherwise a dotted key is a path into
    # nested dicts, as in SqliteStore: {"user.access-level": "x"} looks at value["user"]["access-level"].
    if key in value or not isinstance(key, str) or "." not in key:
        return value.get(key)
    node: Any = value
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def validate_filter(filter: dict[str, Any] | None) -> None:
    """Raise [`FilterError`][langgraph_memory.errors.FilterError] for unknown operators or a non-dict filter."""
    if filter is None:
        return
    if not isinstance(filter, dict):
        raise FilterError(f"a filter must be a dict, got {type(filter).__name__}")

    def has_operator(v: Any) -> bool:
        if isinstance(v, dict):
            return any(isinstance(k, str) and k.startswith("$") or has_operator(x) for k, x in v.items())
        if isinstance(v, (list, tuple)):
            return any(has_operator(x) for x in v)
        return False

    def walk(cond: Any, path: str) -> None:
        if isinstance(cond, dict):
            for k, v in cond.items():
                if not isinstance(k, str):
                    raise FilterError(f"filter keys must be strings, got {k!r} at {path or 'the top'}")
                if k.startswith("$"):
                    if k not in OPERATORS:
                        raise FilterError(
                            f"unsupported filter operator {k!r} at {path or 'the top'}; use one of "
                            f"{', '.join(sorted(OPERATORS))}"
                        )
                    if not path:
                        raise FilterError(f"operator {k} needs a field: write {{'field': {{{k!r}: ...}}}}")
                    if k in _RANGE and not (_is_number(v) or isinstance(v, str)):
                        raise FilterError(f"operator {k} at {path!r} needs a number or a string, got {v!r}")
                    if has_operator(v):
                        raise FilterError(
                            f"the operand of {k} at {path!r} holds another operator ({v!r}); operators do not "
                            "nest: write {'field': {'$gt': 1}} rather than {'field': {'$eq': {'$gt': 1}}}"
                        )
                else:
                    walk(v, f"{path}.{k}" if path else k)
        elif isinstance(cond, float) and cond != cond:
            raise FilterError(f"the filter compares {path!r} with NaN, which equals nothing; give a number")

    walk(filter, "")
