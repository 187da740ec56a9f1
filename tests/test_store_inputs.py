"""Bad input: a typed error that says what to do, and nothing written.

One test per input that used to pass unchecked or surface raw, now a typed error:
a negative offset, a limit that is not a whole number, an operator inside an
operator's operand, a NaN vector from the model, the model's own exception,
and ``index="text"`` where a list of paths belongs.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langgraph.store.base import PutOp

from langgraph_memory.errors import (
    ConfigError,
    EmbeddingModelError,
    FilterError,
    InvalidArgumentError,
    LangGraphMemoryError,
)
from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS


class BrokenEmbeddings(Embeddings):
    """A model that fails, or returns NaN, on request."""

    def __init__(self) -> None:
        self.inner = DeterministicFakeEmbedding(size=FAKE_DIMS)
        self.fail_with: Exception | None = None
        self.nan = False

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.fail_with is not None:
            raise self.fail_with
        vecs = self.inner.embed_documents(texts)
        if self.nan:
            vecs = [[math.nan] * FAKE_DIMS for _ in vecs]
        return vecs

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.fixture
def broken(data_dir: Path) -> tuple[ChromaStore, BrokenEmbeddings]:
    emb = BrokenEmbeddings()
    store = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": emb})
    store.put(("notes",), "k", {"text": "already here"})
    yield store, emb
    store.close()


def test_negative_offset(store: ChromaStore) -> None:
    store.put(("notes",), "a", {"text": "x"})
    with pytest.raises(InvalidArgumentError, match="offset cannot be negative"):
        store.search(("notes",), offset=-1)
    with pytest.raises(InvalidArgumentError, match="limit cannot be negative"):
        store.search(("notes",), limit=-5)


@pytest.mark.parametrize("limit", ["5", 2.5, None, True])
def test_limit_must_be_a_whole_number(store: ChromaStore, limit: object) -> None:
    with pytest.raises(InvalidArgumentError, match="limit must be a whole number") as info:
        store.search(("notes",), query="x", limit=limit)  # type: ignore[arg-type]
    assert isinstance(info.value, (TypeError, ValueError))  # either habit of catching still works


def test_operator_inside_an_operand(store: ChromaStore) -> None:
    store.put(("notes",), "a", {"n": 2})
    with pytest.raises(FilterError, match="operators do not nest"):
        store.search(("notes",), filter={"n": {"$eq": {"$gt": 1}}})
    with pytest.raises(FilterError, match="needs a field"):
        store.search(("notes",), filter={"$gt": 1})
    with pytest.raises(FilterError, match="NaN"):
        store.search(("notes",), filter={"n": math.nan})


def test_nan_vectors_from_the_model(broken: tuple[ChromaStore, BrokenEmbeddings]) -> None:
    store, emb = broken
    emb.nan = True
    with pytest.raises(EmbeddingModelError, match="NaN"):
        store.search(("notes",), query="anything")
    with pytest.raises(EmbeddingModelError, match="NaN"):
        store.put(("notes",), "nan", {"text": "poisoned"})
    emb.nan = False
    assert store.get(("notes",), "nan") is None
    assert [h.key for h in store.search(("notes",), query="already here")] == ["k"]


def test_the_models_own_exception_is_wrapped_with_the_original_chained(
    broken: tuple[ChromaStore, BrokenEmbeddings],
) -> None:
    store, emb = broken
    original = ConnectionError("the embedding server is down")
    emb.fail_with = original
    with pytest.raises(EmbeddingModelError, match="the embedding server is down") as info:
        store.batch([PutOp(("notes",), "a", {"text": "one"}), PutOp(("notes",), "b", {"text": "two"})])
    assert info.value.__cause__ is original
    with pytest.raises(EmbeddingModelError) as info:
        store.search(("notes",), query="x")
    assert info.value.__cause__ is original
    emb.fail_with = None
    assert store.get(("notes",), "a") is None and store.get(("notes",), "b") is None


async def test_the_models_own_exception_is_wrapped_async(broken: tuple[ChromaStore, BrokenEmbeddings]) -> None:
    store, emb = broken
    emb.fail_with = RuntimeError("quota exceeded")
    with pytest.raises(EmbeddingModelError, match="quota exceeded"):
        await store.aput(("notes",), "a", {"text": "one"})
    with pytest.raises(EmbeddingModelError, match="quota exceeded"):
        await store.asearch(("notes",), query="x")


def test_index_must_be_a_list_of_paths(
    store: ChromaStore, data_dir: Path, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    with pytest.raises(InvalidArgumentError, match="list of field paths"):
        store.put(("notes",), "a", {"text": "x"}, index="text")  # type: ignore[arg-type]
    assert store.get(("notes",), "a") is None
    store.close()
    with pytest.raises(InvalidArgumentError, match="list of field paths"):
        ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings, "fields": "text"})  # type: ignore[typeddict-item]
    with pytest.raises(ConfigError, match="dims"):
        ChromaStore(data_dir=data_dir, index={"dims": "16", "embed": fake_embeddings})  # type: ignore[typeddict-item]


def test_one_bad_put_writes_nothing_of_its_batch(store: ChromaStore) -> None:
    ops = [PutOp(("notes",), "good", {"text": "fine"}), PutOp(("notes",), "bad", {"x": math.nan})]
    with pytest.raises(LangGraphMemoryError):
        store.batch(ops)
    assert store.get(("notes",), "good") is None
    with pytest.raises(InvalidArgumentError, match="keys must be non-empty strings"):
        store.batch([PutOp(("notes",), "good", {"text": "fine"}), PutOp(("notes",), "", {"text": "no key"})])
    assert store.get(("notes",), "good") is None
