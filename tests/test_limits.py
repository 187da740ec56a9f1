"""The documented limits (``langgraph_memory.config``): the largest value is accepted, one more is refused.

The same limits hold through the store, the typed API, the CLI and the MCP
tools, each time with a typed error; ``bench/store/limits_bench.py`` measures what
the largest accepted value costs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_memory import Memory
from langgraph_memory.cli import main
from langgraph_memory.config import (
    MAX_KEY_CHARS,
    MAX_LABEL_CHARS,
    MAX_NAMESPACE_LABELS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_VALUE_BYTES,
    MAX_VALUE_DEPTH,
)
from langgraph_memory.errors import (
    InvalidArgumentError,
    NamespaceError,
    ValidationError,
)
from langgraph_memory.mcp.server import MemoryTools
from langgraph_memory.store import ChromaStore


def _nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth - 1):
        value = {"d": value}
    return value


def test_namespace_limits(store: ChromaStore) -> None:
    store.put(("a" * MAX_LABEL_CHARS,), "k", {"text": "x"})
    store.put(tuple("n" for _ in range(MAX_NAMESPACE_LABELS)), "k", {"text": "x"})
    with pytest.raises(NamespaceError, match=f"at most {MAX_LABEL_CHARS}"):
        store.put(("a" * (MAX_LABEL_CHARS + 1),), "k", {"text": "x"})
    with pytest.raises(NamespaceError, match=f"at most {MAX_NAMESPACE_LABELS} labels"):
        store.put(tuple("n" for _ in range(MAX_NAMESPACE_LABELS + 1)), "k", {"text": "x"})


def test_key_limit(store: ChromaStore) -> None:
    store.put(("notes",), "k" * MAX_KEY_CHARS, {"text": "x"})
    with pytest.raises(InvalidArgumentError, match=f"at most {MAX_KEY_CHARS}"):
        store.put(("notes",), "k" * (MAX_KEY_CHARS + 1), {"text": "x"})


def test_value_size_and_depth_limits(store: ChromaStore) -> None:
    overhead = len('{"blob":""}')
    store.put(("notes",), "big", {"blob": "x" * (MAX_VALUE_BYTES - overhead)}, index=False)
    with pytest.raises(ValidationError, match="at most 1,000,000"):
        store.put(("notes",), "bigger", {"blob": "x" * (MAX_VALUE_BYTES - overhead + 1)}, index=False)
    assert store.get(("notes",), "bigger") is None
    store.put(("notes",), "deep", _nested(MAX_VALUE_DEPTH), index=False)
    with pytest.raises(ValidationError, match=f"deeper than {MAX_VALUE_DEPTH}"):
        store.put(("notes",), "deeper", _nested(MAX_VALUE_DEPTH + 1), index=False)


def test_typed_api_tags_follow_the_same_limits(data_dir: Path, fake_embeddings) -> None:
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        mem.store_research_finding("fine", tags=["t" * MAX_TAG_CHARS] * MAX_TAGS)
        with pytest.raises(ValidationError, match=f"at most {MAX_TAGS}"):
            mem.store_research_finding("too many", tags=["t"] * (MAX_TAGS + 1))
        with pytest.raises(ValidationError, match=f"at most {MAX_TAG_CHARS}"):
            mem.store_hypothesis("too long", tags=["t" * (MAX_TAG_CHARS + 1)])
        with pytest.raises(ValidationError, match="at most 1,000,000"):
            mem.store_research_finding("x" * MAX_VALUE_BYTES)


def test_mcp_tools_follow_the_same_limits(data_dir: Path, fake_embeddings) -> None:
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        tools = MemoryTools(mem)
        with pytest.raises(ValidationError, match="at most 1,000,000"):
            tools.store_memory("x" * MAX_VALUE_BYTES)
        with pytest.raises(ValidationError, match="at most 1,000,000"):
            tools.store_research_finding(content="x" * MAX_VALUE_BYTES)


def test_cli_refuses_a_namespace_past_the_limit(data_dir: Path, tmp_path: Path, capsys) -> None:
    doc = tmp_path / "a.txt"
    doc.write_text("some text")
    code = main(["--data-dir", str(data_dir), "ingest", str(doc), "--namespace", "d" * (MAX_LABEL_CHARS + 1)])
    out = capsys.readouterr()
    assert code == 2, out
    assert f"at most {MAX_LABEL_CHARS}" in out.out + out.err
    assert "Traceback" not in out.out + out.err
