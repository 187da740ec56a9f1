"""Set-up shared by the tests that open a memory by its ``postgresql://`` address.

Each of those tests must see only the address it passes: no data directory,
address or config file from the environment, and fake embeddings wherever a
store picks its default index.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS

ENV = ("LANGGRAPH_MEMORY_DIR", "LANGGRAPH_MEMORY_URL", "LANGGRAPH_MEMORY_LOCAL_DIR", "EMBEDDING_MODEL")


def isolate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_embeddings: Any) -> None:
    """Clear the memory's environment, point its config at an empty file, and default to ``fake_embeddings``."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    monkeypatch.setenv("LANGGRAPH_MEMORY_CONFIG", str(empty))
    monkeypatch.setattr(
        ChromaStore,
        "default_index",
        classmethod(lambda cls, model_name=None: {"dims": FAKE_DIMS, "embed": fake_embeddings}),
    )


class CounterState(TypedDict):
    n: int


def counter_graph() -> Any:
    """A one-node graph that adds 1 to ``n``: enough to write checkpoints (compile it with a checkpointer)."""
    builder = StateGraph(CounterState)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    return builder
