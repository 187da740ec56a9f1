"""The read-only collection view, texts read back from values, and namespace listing across stores."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.errors import ReadOnlyError
from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS


def _raw(store: ChromaStore, name: str) -> Any:
    """The plain Chroma collection behind the index."""
    return store.client.get_collection(name, embedding_function=None)


def test_chroma_holds_only_vectors_and_the_view_reads_everything_from_the_catalog(store: ChromaStore) -> None:
    store.put(("research",), "f1", {"content": "Carry trades unwind when volatility spikes", "source": "macro"})
    view = store.collection("research")
    assert view.get(include=["documents"])["documents"] == ["Carry trades unwind when volatility spikes"]
    assert view.get(include=["documents"])["metadatas"] is None  # not asked for, not returned
    assert view.peek()["documents"] == ["Carry trades unwind when volatility spikes"]
    q = view.query(query_embeddings=[store.embeddings.embed_query("x")], n_results=1)
    assert q["documents"] == [["Carry trades unwind when volatility spikes"]]
    assert q["distances"] is not None and q["metadatas"][0][0]["source"] == "macro"
    meta = q["metadatas"][0][0]
    assert meta["namespace"] == ["research"] and meta["key"] == "f1"
    assert not any(k.startswith("lgm:") for k in meta)  # no internal keys handed out
    # The view above needs no index; Chroma itself follows the commits in a thread.
    assert store.wait_for_index(timeout=120)
    raw = _raw(store, "research_findings").get(include=["documents", "metadatas", "embeddings"])
    assert raw["documents"] == [None] and raw["metadatas"] == [None]  # the catalog holds the rest
    assert len(raw["embeddings"][0]) == FAKE_DIMS


def test_the_collection_view_is_read_only(store: ChromaStore) -> None:
    store.put(("research",), "f1", {"content": "Momentum fades"})
    view = store.collection("research")
    for call in (lambda: view.add(ids=["x"], embeddings=[[0.0] * FAKE_DIMS]), lambda: view.delete(ids=["1"])):
        with pytest.raises(ReadOnlyError, match="read-only"):
            call()
    assert [r.key for r in store.search(("research",))] == ["f1"]


def test_view_where_filters_like_chroma(store: ChromaStore) -> None:
    store.put(("research",), "a", {"content": "one", "source": "macro", "confidence": 0.9})
    store.put(("research",), "b", {"content": "two", "source": "technical", "confidence": 0.4})
    view = store.collection("research")
    assert view.get(where={"source": "macro"})["documents"] == ["one"]
    assert view.get(where={"confidence": {"$lt": 0.5}})["documents"] == ["two"]
    assert sorted(view.get(where={"$or": [{"source": "macro"}, {"confidence": {"$lt": 0.5}}]})["documents"]) == [
        "one",
        "two",
    ]
    assert view.get(where_document={"$contains": "tw"})["documents"] == ["two"]
    vs = store.as_vectorstore("research")
    assert [d.page_content for d in vs.similarity_search("one", k=2, filter={"source": "technical"})] == ["two"]


def test_wildcard_paths_give_each_record_its_own_text(
    data_dir: Path, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    s = ChromaStore(
        data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings, "fields": ["tags[*]", "title"]}
    )
    s.put(("docs",), "d", {"title": "A title", "tags": ["momentum", "carry", "value"]})
    view = s.collection("memories")
    got = view.get(include=["documents"])
    assert sorted(got["documents"]) == ["A title", "carry", "momentum", "value"]
    vs = s.as_vectorstore("memories")
    top = vs.similarity_search("carry", k=1)[0]
    assert top.page_content == "carry"  # an extra vector record reads its own element
    # Reads are applied to the item's row: the texts must survive it.
    s.get(("docs",), "d")
    assert s.flush_access() == 1
    assert sorted(view.get(include=["documents"])["documents"]) == ["A title", "carry", "momentum", "value"]
    s.close()


def test_archive_style_restore_keeps_texts(data_dir: Path, fake_embeddings: DeterministicFakeEmbedding) -> None:
    s = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings, "fields": ["tags[*]"]})
    s.put(("docs",), "d", {"tags": ["alpha", "beta"]})
    s.put(("lessons",), "l", {"lesson": "Cut losers early"})
    items = {name: list(s.items.iter_items(name, with_vectors=True)) for name in ("memories", "lessons_learned")}
    assert items["memories"][0].texts == ["alpha", "beta"]
    assert items["lessons_learned"][0].texts == ["Cut losers early"]
    for name, group in items.items():
        s.items.delete_items(name, group)
    assert s.collection("memories").count() == 0
    assert s.items.restore_items(items["memories"] + items["lessons_learned"]) == 2
    assert sorted(s.collection("memories").get(include=["documents"])["documents"]) == ["alpha", "beta"]
    again = next(iter(s.items.iter_items("memories", with_vectors=True)))
    assert again.texts == ["alpha", "beta"] and again.paths == ["tags[*].0", "tags[*].1"]
    assert s.collection("lessons").get(include=["documents"])["documents"] == ["Cut losers early"]
    s.close()


def test_filters_on_the_prose_field_work(store: ChromaStore) -> None:
    store.put(("research",), "a", {"content": "Momentum fades after earnings", "confidence": 0.9})
    store.put(("research",), "b", {"content": "Carry unwinds in crises", "confidence": 0.4})
    flt = {"content": "Carry unwinds in crises"}
    assert [i.key for i in store.search(("research",), filter=flt)] == ["b"]
    assert [i.key for i in store.search(("research",), query="anything", filter=flt)] == ["b"]
    both = {"content": {"$ne": "Carry unwinds in crises"}, "confidence": {"$gt": 0.5}}
    assert [i.key for i in store.search(("research",), filter=both)] == ["a"]


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
def test_namespace_cache_sees_deletes_by_another_process(
    data_dir: Path, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    a = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    a.put(("users", "u1"), "k", {"v": 1})
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    done = subprocess.run(
        [sys.executable, "-c", _DELETE_IN_CHILD, str(data_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    a.put(("users", "u1"), "k", {"v": 2})
    assert a.list_namespaces() == [("users", "u1")]
    a.close()


def test_the_view_and_langchain_store_hide_retired_and_superseded_items(store: ChromaStore) -> None:
    texts = {"a": "Carry pays in calm markets", "b": "Carry pays 3% a year", "c": "Carry unwinds in crises"}
    for key, text in texts.items():
        store.put(("research",), key, {"content": text})
    store.items.set_status([(("research",), "a")], "retired", reason="wrong data")
    store.items.set_status(
        [(("research",), "b")], "superseded", reason="longer sample", superseded_by=(("research",), "c")
    )
    view, every = store.collection("research"), store.collection("research", include_retired=True)
    assert (view.count(), every.count()) == (1, 3)
    assert view.get(include=["documents"])["documents"] == [texts["c"]]
    assert sorted(every.get(include=["documents"])["documents"]) == sorted(texts.values())
    assert view.peek()["documents"] == [texts["c"]]
    ids = every.get()["ids"]
    assert len(view.get(ids=ids)["ids"]) == 1 and len(every.get(ids=ids)["ids"]) == 3
    q = store.embeddings.embed_query(texts["a"])
    assert view.query(query_embeddings=[q], n_results=3)["documents"] == [[texts["c"]]]
    assert every.query(query_embeddings=[q], n_results=3)["documents"][0][0] == texts["a"]
    assert view.query(query_texts=[texts["b"]], n_results=1)["documents"] == [[texts["c"]]]

    retriever = store.as_vectorstore("research").as_retriever(search_kwargs={"k": 3})
    assert [d.page_content for d in retriever.invoke(texts["a"])] == [texts["c"]]
    everything = store.as_vectorstore("research", include_retired=True).as_retriever(search_kwargs={"k": 3})
    found = everything.invoke(texts["a"])
    assert found[0].page_content == texts["a"] and len(found) == 3
    assert found[0].metadata["key"] == "a"
    # Reinstated, it is back in the view at once (the hidden set follows the catalog's status version).
    store.items.clear_status([(("research",), "a")])
    assert view.count() == 2 and texts["a"] in [d.page_content for d in retriever.invoke(texts["a"])]


def test_as_vectorstore_is_read_only_and_hands_out_no_internal_metadata(store: ChromaStore) -> None:
    store.put(("research", "desk1"), "f1", {"content": "Carry unwinds in volatility spikes", "confidence": 0.7})
    vs = store.as_vectorstore("research")
    for write in (
        lambda: vs.add_texts(["bypassing the catalog"]),
        lambda: vs.delete(ids=["f1"]),
        lambda: vs.delete_collection(),
    ):
        with pytest.raises(ReadOnlyError, match="read-only"):
            write()
    (doc,) = vs.similarity_search("Carry unwinds in volatility spikes", k=1)
    assert doc.page_content == "Carry unwinds in volatility spikes"
    assert doc.metadata == {
        "content": "Carry unwinds in volatility spikes",
        "confidence": 0.7,
        "namespace": ["research", "desk1"],
        "key": "f1",
    }
    assert [r.key for r in store.search(("research",))] == ["f1"]  # nothing changed behind the store's back
