"""Namespace labels map to typed collections with schemas and retention."""

from __future__ import annotations

import pytest

from langgraph_memory.errors import NotFoundError, ValidationError
from langgraph_memory.research.collections import COLLECTIONS, GENERAL, collection_by_name, collection_for


@pytest.mark.parametrize(
    "label, name, field",
    [
        ("research", "research_findings", "content"),
        ("strategies", "strategy_library", "description"),
        ("lessons", "lessons_learned", "lesson"),
        ("regimes", "market_regimes", "description"),
        ("tools", "tool_definitions", "description"),
    ],
)
def test_labels_select_typed_collections(label: str, name: str, field: str) -> None:
    spec = collection_for((label, "desk-1"))
    assert (spec.name, spec.embed_field, spec.typed) == (name, field, True)
    assert collection_by_name(name) is spec and collection_by_name(label) is spec


def test_everything_else_is_general() -> None:
    assert collection_for(("users", "u1")) is GENERAL
    assert collection_for(("Research",)) is GENERAL  # labels are case-sensitive
    assert GENERAL.typed is False
    GENERAL.validate({"anything": object()})  # no schema, nothing to check
    with pytest.raises(NotFoundError, match="no collection named"):
        collection_by_name("nope")


def test_retention_defaults_from_the_seed() -> None:
    lessons = COLLECTIONS["lessons"].retention
    research = COLLECTIONS["research"].retention
    assert lessons.after_days == 90 and lessons.applies_to({"lesson": "x"})
    assert research.after_days == 90
    assert research.applies_to({"confidence": 0.2}) and not research.applies_to({"confidence": 0.5})
    assert research.applies_to({})  # no confidence counts as low
    assert COLLECTIONS["strategies"].retention is None


def test_validation_messages_name_the_field() -> None:
    with pytest.raises(ValidationError, match=r"win_rate"):
        COLLECTIONS["strategies"].validate({"description": "d", "win_rate": 1.5})
    with pytest.raises(ValidationError, match=r"tags\.1"):
        COLLECTIONS["research"].validate({"content": "c", "tags": ["ok", 3]})
    COLLECTIONS["research"].validate({"content": "c", "tags": ["ok"], "custom": {"kept": True}})
