"""Values and keys that would not come back as they went in are refused, not coerced.

LangGraph's stores take string keys and JSON values. A put that would store
something other than what it was given (``5`` as ``"5"``, ``{1: "a"}`` as
``{"1": "a"}``, NaN, a set, bytes, a datetime) raises ``ValidationError``
naming the path inside the value, and nothing is written.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from langgraph_memory.errors import (
    InvalidArgumentError,
    LangGraphMemoryError,
    ValidationError,
)
from langgraph_memory.store import ChromaStore


def test_a_non_string_key_is_refused(store: ChromaStore) -> None:
    with pytest.raises(InvalidArgumentError, match="key must be a string"):
        store.put(("notes",), 5, {"text": "x"})  # type: ignore[arg-type]
    assert store.get(("notes",), "5") is None


async def test_a_non_string_key_is_refused_async(store: ChromaStore) -> None:
    with pytest.raises(InvalidArgumentError, match="key must be a string"):
        await store.aput(("notes",), 5, {"text": "x"})  # type: ignore[arg-type]
    assert await store.aget(("notes",), "5") is None


@pytest.mark.parametrize(
    ("value", "path", "what"),
    [
        ({1: "a"}, "value[1]", "key"),
        ({"a": {"b": [0, {2: "x"}]}}, "value['a']['b'][1][2]", "key"),
        ({"a": math.nan}, "value['a']", "NaN"),
        ({"a": [1.0, math.inf]}, "value['a'][1]", "inf"),
        ({"a": {1, 2}}, "value['a']", "set"),
        ({"a": b"raw"}, "value['a']", "bytes"),
        ({"when": datetime(2026, 1, 1, tzinfo=UTC)}, "value['when']", "isoformat"),
        ({"a": object()}, "value['a']", "object"),
    ],
)
def test_a_value_that_would_not_round_trip_is_refused(store: ChromaStore, value: dict, path: str, what: str) -> None:
    with pytest.raises(ValidationError) as info:
        store.put(("notes",), "k", value)
    message = str(info.value)
    assert path in message and what in message
    assert isinstance(info.value, LangGraphMemoryError)
    assert store.get(("notes",), "k") is None


def test_a_deeply_nested_value_is_checked_without_recursion(store: ChromaStore) -> None:
    value: dict = {"leaf": {1: "bad"}}
    for _ in range(5_000):
        value = {"d": value}
    with pytest.raises(ValidationError):
        store.put(("notes",), "deep", value)


def test_json_values_round_trip_exactly(store: ChromaStore) -> None:
    value = {"s": "é", "i": 3, "f": 1.5, "b": True, "n": None, "l": [1, "two", [3.0]], "d": {"x": {"y": []}}}
    store.put(("notes",), "ok", value)
    assert store.get(("notes",), "ok").value == value
