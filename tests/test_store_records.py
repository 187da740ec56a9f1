"""The record layout: texts read back from values, unflattened prose fields, the namespace registry cache."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.collections import collection_for
from langgraph_memory.store import ChromaStore
from langgraph_memory.store.filters import compile_where
from langgraph_memory.store.records import record_text
from tests.conftest import FAKE_DIMS


def _raw(store: ChromaStore, label: str) -> Any:
    """The plain Chroma collection, without the document-filling view."""
    return store._collection(collection_for((label,)))


def test_records_carry_no_documents_but_every_view_reads_the_text(store: ChromaStore) -> None:
    store.put(("research",), "f1", {"content": "Carry trades unwind when volatility spikes", "source": "macro"})
    raw = _raw(store, "research").get(include=["documents", "metadatas"])
    assert raw["documents"] == [None]  # Chroma holds no copy of the text
    assert record_text(raw["metadatas"][0]) == "Carry trades unwind when volatility spikes"
    view = store.collection("research")
    assert view.get(include=["documents"])["documents"] == ["Carry trades unwind when volatility spikes"]
    assert view.get(include=["documents"])["metadatas"] is None  # not asked for, not returned
    assert view.peek()["documents"] == ["Carry trades unwind when volatility spikes"]
    q = view.query(query_embeddings=[store.embeddings.embed_query("x")], n_results=1)
    assert q["documents"] == [["Carry trades unwind when volatility spikes"]]
    assert q["distances"] is not None and q["metadatas"][0][0]["source"] == "macro"


def test_wildcard_paths_give_each_record_its_own_text(data_dir: Path, fake_embeddings: DeterministicFakeEmbedding) -> None:
    s = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings, "fields": ["tags[*]", "title"]})
    s.put(("docs",), "d", {"title": "A title", "tags": ["momentum", "carry", "value"]})
    view = s.collection("memories")
    got = view.get(include=["documents"])
    assert sorted(got["documents"]) == ["A title", "carry", "momentum", "value"]
    vs = s.as_vectorstore("memories")
    top = vs.similarity_search("carry", k=1)[0]
    assert top.page_content == "carry"  # an extra vector record reads its own element
    # Reads are flushed into the primary record's JSON: the text index must survive it.
    s.get(("docs",), "d")
    assert s.flush_access() == 1
    assert sorted(view.get(include=["documents"])["documents"]) == ["A title", "carry", "momentum", "value"]
    s.close()


def test_archive_style_restore_keeps_texts(data_dir: Path, fake_embeddings: DeterministicFakeEmbedding) -> None:
    s = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings, "fields": ["tags[*]"]})
    s.put(("docs",), "d", {"tags": ["alpha", "beta"]})
    s.put(("lessons",), "l", {"lesson": "Cut losers early"})
    items = {name: list(s.iter_items(name, with_vectors=True)) for name in ("memories", "lessons_learned")}
    assert items["memories"][0].texts == ["alpha", "beta"]
    assert items["lessons_learned"][0].texts == ["Cut losers early"]
    for name, group in items.items():
        s.delete_items(name, group)
    assert s.collection("memories").count() == 0
    assert s.restore_items(items["memories"] + items["lessons_learned"]) == 2
    assert sorted(s.collection("memories").get(include=["documents"])["documents"]) == ["alpha", "beta"]
    again = next(iter(s.iter_items("memories", with_vectors=True)))
    assert again.texts == ["alpha", "beta"] and again.paths == ["tags[*].0", "tags[*].1"]
    assert s.collection("lessons").get(include=["documents"])["documents"] == ["Cut losers early"]
    s.close()


def test_prose_field_is_not_flattened_yet_filters_on_it_work(store: ChromaStore) -> None:
    store.put(("research",), "a", {"content": "Momentum fades after earnings", "confidence": 0.9})
    store.put(("research",), "b", {"content": "Carry unwinds in crises", "confidence": 0.4})
    meta = _raw(store, "research").get(ids=None, include=["metadatas"])["metadatas"]
    assert all("content" not in m and "confidence" in m for m in meta)
    where, exact = compile_where({"content": "Carry unwinds in crises"}, unflattened="content")
    assert where is None and exact is False
    flt = {"content": "Carry unwinds in crises"}
    assert [i.key for i in store.search(("research",), filter=flt)] == ["b"]
    assert [i.key for i in store.search(("research",), query="anything", filter=flt)] == ["b"]
    both = {"content": {"$ne": "Carry unwinds in crises"}, "confidence": {"$gt": 0.5}}
    assert [i.key for i in store.search(("research",), filter=both)] == ["a"]
    # The general collection still flattens short strings into Chroma.
    store.put(("misc",), "m", {"content": "short"})
    assert "content" in _raw(store, "misc").get(include=["metadatas"])["metadatas"][0]


def test_namespace_cache_sees_deletes_by_another_store_in_this_process(
    data_dir: Path, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    a = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    b = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    a.put(("users", "u1"), "k", {"v": 1})
    b.delete(("users", "u1"), "k")
    assert a.list_namespaces() == []
    a.put(("users", "u1"), "k", {"v": 2})  # must register the namespace again
    assert b.list_namespaces() == [("users", "u1")]
    a.close()
    b.close()


_DELETE_IN_CHILD = textwrap.dedent(
    """
    import sys
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langgraph_memory.store import ChromaStore
    s = ChromaStore(data_dir=sys.argv[1], index={"dims": 16, "embed": DeterministicFakeEmbedding(size=16)})
    s.delete(("users", "u1"), "k")
    assert s.list_namespaces() == [], s.list_namespaces()
    s.close()
    """
)


@pytest.mark.slow
def test_namespace_cache_sees_deletes_by_another_process(data_dir: Path, fake_embeddings: DeterministicFakeEmbedding) -> None:
    a = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    a.put(("users", "u1"), "k", {"v": 1})
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    done = subprocess.run(
        [sys.executable, "-c", _DELETE_IN_CHILD, str(data_dir)], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    a.put(("users", "u1"), "k", {"v": 2})
    assert a.list_namespaces() == [("users", "u1")]
    a.close()
