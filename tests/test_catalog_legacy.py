"""A data directory written before the catalog existed is imported into it once, nothing lost."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings as ChromaSettings
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from langgraph_memory.catalog import item_uid
from tests.conftest import FAKE_DIMS


def _old_layout(data_dir: Path, emb: DeterministicFakeEmbedding) -> None:
    """Items only in Chroma metadata (``lgm:item``), access data and lineage in side files, as in 0.1."""
    chroma = data_dir / "chroma"
    client = chromadb.PersistentClient(path=str(chroma), settings=ChromaSettings(anonymized_telemetry=False))
    col = client.get_or_create_collection(
        "research_findings", metadata={"hnsw:space": "cosine"}, embedding_function=None
    )
    rows = []
    for key, text in (("f1", "Carry trades unwind"), ("f2", "Momentum fades")):
        packed = {
            "k": key,
            "ca": 100.0,
            "ua": 200.0,
            "la": 300.0,
            "ac": 2,
            "nv": 1,
            "p": "content",
            "v": {"content": text, "confidence": 0.8},
        }
        rows.append(
            (
                item_uid(("research",), key),
                {"lgm:item": json.dumps(packed), "lgm:ns": "research", "lgm:x": 0},
                emb.embed_query(text),
            )
        )
    col.add(ids=[r[0] for r in rows], metadatas=[r[1] for r in rows], embeddings=np.asarray([r[2] for r in rows]))
    notes = client.get_or_create_collection("memories", metadata={"hnsw:space": "cosine"}, embedding_function=None)
    packed = {"k": "n1", "ca": 1.0, "ua": 2.0, "la": 3.0, "ac": 0, "nv": 1, "p": "", "v": {"text": "unindexed"}}
    notes.add(
        ids=[item_uid(("notes", "u1"), "n1")],
        embeddings=[[1.0] * FAKE_DIMS],
        metadatas=[{"lgm:item": json.dumps(packed), "lgm:ns": "notes\x1fu1", "lgm:x": 0, "lgm:vec": False}],
    )
    access = sqlite3.connect(chroma / "lgm-access.sqlite")
    access.execute(
        "CREATE TABLE access (collection TEXT, uid TEXT, last_accessed REAL, count INTEGER, expires_at REAL)"
    )
    access.execute(
        "INSERT INTO access VALUES ('research_findings', ?, 500.0, 3, NULL)", (item_uid(("research",), "f1"),)
    )
    access.commit()
    access.close()
    lineage = sqlite3.connect(data_dir / "lineage.sqlite")
    lineage.executescript(
        "CREATE TABLE items (id TEXT PRIMARY KEY, collection TEXT, namespace TEXT, name TEXT, version INTEGER, created_at REAL);"
        "CREATE TABLE edges (child_id TEXT, parent_id TEXT, relation TEXT, child_collection TEXT, parent_collection TEXT, created_at REAL);"
        "CREATE TABLE versions (name TEXT, version INTEGER, id TEXT, created_at REAL);"
        """INSERT INTO items VALUES ('f1', 'research_findings', '["research"]', NULL, NULL, 1.0);"""
        """INSERT INTO items VALUES ('f2', 'research_findings', '["research"]', NULL, NULL, 2.0);"""
        "INSERT INTO edges VALUES ('f2', 'f1', 'derived_from', 'research_findings', 'research_findings', 3.0);"
    )
    lineage.commit()
    lineage.close()
    from langgraph_memory._infra.chroma import ChromaHandle

    ChromaHandle.stop_client(client)


# The 0.1 layout is a local data directory: opening it imports it into its own SQLite catalog, and a
# server memory gets it from there with `langgraph-memory migrate`.
@pytest.mark.sqlite_only("imports a 0.1 data directory into the data directory's own catalog")
def test_old_layout_is_imported_once(data_dir: Path) -> None:
    emb = DeterministicFakeEmbedding(size=FAKE_DIMS)
    _old_layout(data_dir, emb)
    with Memory.open(data_dir, embeddings=emb) as mem:
        item = mem.store.items.get(("research",), "f1")
        assert item is not None and item.value == {"content": "Carry trades unwind", "confidence": 0.8}
        assert (item.created_at, item.updated_at, item.last_accessed_at, item.access_count) == (100.0, 200.0, 500.0, 5)
        assert mem.store.search(("research",), query="Momentum fades", limit=1)[0].key == "f2"
        assert mem.store.get(("notes", "u1"), "n1").value == {"text": "unindexed"}
        assert mem.lineage_store.ancestors("f2")[0].id == "f1"
    assert not (data_dir / "chroma" / "chroma.sqlite3").exists()  # moved aside, into legacy-<time>/
    assert list((data_dir / "chroma").glob("legacy-*/chroma.sqlite3"))
    assert (data_dir / "lineage.sqlite.imported").exists()
    with Memory.open(data_dir, embeddings=emb) as mem:  # a second open imports nothing again
        assert mem.store.items.count("research") == 2
