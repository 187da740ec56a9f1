"""The factories langgraph.json names (langgraph_memory.platform), without a server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import platform_checkpointer, platform_store
from langgraph_memory.errors import ConfigError
from langgraph_memory.platform import (
    CHROMA_URL_ENV,
    STORE_CONFIG_ENV,
    open_checkpointer,
    open_store,
    resolve_embed,
    store_config_from_env,
)
from tests.helpers import catalog_backend

ROOT = Path(__file__).resolve().parents[1]
EMBED_FILE = (
    "from langchain_core.embeddings import DeterministicFakeEmbedding\nemb = DeterministicFakeEmbedding(size=16)\n"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> Path:
    """A langgraph dev project folder (the working directory) with an embeddings file."""
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "emb.py").write_text(EMBED_FILE)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("LANGGRAPH_MEMORY_DIR", str(data_dir))
    monkeypatch.delenv(CHROMA_URL_ENV, raising=False)
    return folder


def _json_blocks(path: Path) -> list[Any]:
    return [json.loads(b) for b in re.findall(r"```json\n(.*?)```", path.read_text(), flags=re.S)]


def test_readme_and_guide_show_the_config_the_server_test_runs() -> None:
    tested = json.loads((ROOT / "examples" / "langgraph_app" / "langgraph.json").read_text())
    assert tested in _json_blocks(ROOT / "README.md")
    assert tested in _json_blocks(ROOT / "docs" / "langgraph_app.md")
    assert tested["store"]["path"] == "langgraph_memory.platform_store"
    assert tested["checkpointer"]["path"] == "langgraph_memory.platform_checkpointer"


def test_store_config_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STORE_CONFIG_ENV, raising=False)
    assert store_config_from_env() == {}
    monkeypatch.setenv(STORE_CONFIG_ENV, json.dumps({"index": {"dims": 16}}))
    assert store_config_from_env() == {"index": {"dims": 16}}
    for bad in ("{not json", "[1, 2]"):
        monkeypatch.setenv(STORE_CONFIG_ENV, bad)
        with pytest.raises(ConfigError, match=STORE_CONFIG_ENV):
            store_config_from_env()


def test_resolve_embed_forms(project: Path) -> None:
    assert isinstance(resolve_embed("./emb.py:emb"), DeterministicFakeEmbedding)
    assert resolve_embed("./emb.py:emb") is resolve_embed("emb.py:emb")  # one module per file
    assert isinstance(resolve_embed("langgraph_memory.embeddings:SentenceTransformerEmbeddings"), type)
    assert resolve_embed("openai:text-embedding-3-small") == "openai:text-embedding-3-small"
    assert resolve_embed("all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"
    emb = DeterministicFakeEmbedding(size=4)
    assert resolve_embed(emb) is emb
    with pytest.raises(ConfigError, match="no file"):
        resolve_embed("./missing.py:emb")
    with pytest.raises(ConfigError, match="defines no 'nope'"):
        resolve_embed("./emb.py:nope")


def test_open_store_takes_index_and_ttl_as_the_server_passes_them(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    section = {
        "path": "langgraph_memory.platform_store",
        "index": {"dims": 16, "embed": "./emb.py:emb", "fields": ["text"]},
        "ttl": {"default_ttl": 60, "refresh_on_read": False},
    }
    monkeypatch.setenv(STORE_CONFIG_ENV, json.dumps(section))
    store = open_store()
    try:
        assert store.index_config is not None and store.index_config["dims"] == 16
        assert store.index_config["fields"] == ["text"]
        assert store.ttl_config == {"default_ttl": 60, "refresh_on_read": False}
        store.put(("memories", "u1"), "k", {"text": "size to volatility", "other": "not embedded"})
        (hit,) = store.search(("memories",), query="size to volatility")
        assert hit.key == "k" and hit.score is not None
    finally:
        store.close()


def test_chroma_addresses_are_not_memories(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A postgresql:// address is a memory (tests/test_pg_address.py opens one); a Chroma server's is not.
    monkeypatch.setenv("LANGGRAPH_MEMORY_DIR", "http://127.0.0.1:8000")
    with pytest.raises(ConfigError, match="is a Chroma address"):
        open_checkpointer()
    with pytest.raises(ConfigError, match="is a Chroma address"):
        open_store({})
    assert not (project / "http:").exists()


def test_bad_chroma_url(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CHROMA_URL_ENV, "localhost:8000")
    with pytest.raises(ConfigError, match=CHROMA_URL_ENV):
        open_store({})


async def test_factories_share_one_instance_and_never_block(
    project: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch, no_blocking: Any
) -> None:
    monkeypatch.setenv(STORE_CONFIG_ENV, json.dumps({"index": {"dims": 16, "embed": "./emb.py:emb"}}))
    # The server enters each factory once per event loop; the loops share one store and one checkpointer.
    async with platform_store() as s1, platform_checkpointer() as c1:
        async with platform_store() as s2, platform_checkpointer() as c2:
            assert s1 is s2 and c1 is c2
            await s1.aput(("memories", "u1"), "k", {"text": "hello"})
        assert (await s1.aget(("memories", "u1"), "k")) is not None  # still open for the first user
        if catalog_backend.active():  # threads beside the catalog, on its server
            assert type(c1).__name__ == "PostgresCheckpointer"
        else:
            assert c1.path == data_dir / "checkpoints.sqlite"
    assert s1._closed  # the last user closed it
    async with platform_store() as s3:  # and a later entry opens it again
        assert s3 is not s1 and (await s3.aget(("memories", "u1"), "k")) is not None
