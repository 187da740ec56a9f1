"""What a store value may hold: JSON that comes back exactly as it went in.

LangGraph's stores take string keys and JSON values. Anything that JSON would
silently change is refused with `langgraph_memory.errors.ValidationError`
naming the path inside the value, so a caller never reads back something else
than it wrote::

    from langgraph_memory.store.values import check_value

    check_value({"text": "ok", "scores": [1, 2.5]})   # fine
    check_value({"a": {1: "x"}})   # ValidationError: value['a'][1]: dict keys must be strings ...

Accepted: ``str``, ``int``, finite ``float``, ``bool``, ``None``, ``list`` and
``dict`` with string keys; a ``tuple`` is stored as a list (as every LangGraph
store does). Refused: non-string dict keys, NaN and infinities, sets, bytes,
and datetimes (store ``dt.isoformat()`` and parse it back; a datetime has no
JSON form that keeps its type). The walk is iterative, so a deep value cannot
overflow the stack; the limits are in `langgraph_memory.config`.
"""

from __future__ import annotations

import json
import math
from datetime import date, datetime, time
from typing import Any

from langgraph_memory.config import MAX_VALUE_BYTES, MAX_VALUE_DEPTH
from langgraph_memory.errors import ValidationError

__all__ = ["check_value", "dumps_checked"]


def _where(path: tuple[Any, ...]) -> str:
    return "value" + "".join(f"[{p!r}]" for p in path)


def _refuse(path: tuple[Any, ...], why: str) -> ValidationError:
    return ValidationError(f"{_where(path)}: {why}")


def _scalar_problem(obj: Any) -> str | None:
    if obj is None or isinstance(obj, (str, bool, int)):
        return None
    if isinstance(obj, float):
        if math.isnan(obj):
            return "NaN is not JSON and would not come back as stored; use None"
        if math.isinf(obj):
            return "inf is not JSON and would not come back as stored; use None or a large finite number"
        return None
    if isinstance(obj, (datetime, date, time)):
        return (
            f"{type(obj).__name__} is not JSON; store value.isoformat() and parse it back "
            "(datetimes are not converted silently)"
        )
    if isinstance(obj, (set, frozenset)):
        return f"a {type(obj).__name__} is not JSON; store a sorted list"
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return "bytes are not JSON; store text, or base64 of the bytes"
    return f"a {type(obj).__name__} object is not JSON; store str, number, bool, None, list or dict"


def check_value(value: Any, *, max_depth: int = MAX_VALUE_DEPTH) -> None:
    """Raise `ValidationError` naming the first part of ``value`` that would not round-trip.

    Example:
        >>> check_value({"ok": [1, "two"]})
        >>> check_value({"bad": float("nan")})
        Traceback (most recent call last):
        ...
        langgraph_memory.errors.ValidationError: value['bad']: NaN is not JSON and would not come back as stored; use None
    """
    if not isinstance(value, dict):
        raise ValidationError(f"store values must be dicts, got {type(value).__name__}")
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        obj, path = stack.pop()
        if isinstance(obj, dict):
            if len(path) >= max_depth:
                raise _refuse(path, f"nested deeper than {max_depth} levels of dicts and lists")
            for k, v in obj.items():
                if not isinstance(k, str):
                    raise _refuse(
                        path + (k,),
                        f"dict keys must be strings; the key {k!r} "
                        f"({type(k).__name__}) would come back as {json.dumps(str(k))}",
                    )
                stack.append((v, path + (k,)))
        elif isinstance(obj, (list, tuple)):
            if len(path) >= max_depth:
                raise _refuse(path, f"nested deeper than {max_depth} levels of dicts and lists")
            stack.extend((v, path + (i,)) for i, v in enumerate(obj))
        else:
            problem = _scalar_problem(obj)
            if problem is not None:
                raise _refuse(path, problem)


# What ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)`` builds per call:
# made once (a bulk load encodes a thousand values a batch); encoding keeps no state, so threads share it.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps_checked(value: Any, *, max_bytes: int = MAX_VALUE_BYTES) -> str:
    """``value`` as compact JSON after `check_value()`, or `ValidationError` past ``max_bytes``."""
    check_value(value)
    try:
        text = _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:  # a subclass with a custom encoding, say
        raise ValidationError(f"store values must be JSON: {exc}") from None
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise ValidationError(
            f"value is {size:,} bytes as JSON; at most {max_bytes:,} are allowed "
            "(split it into several items, or store a file path instead of the content)"
        )
    return text
