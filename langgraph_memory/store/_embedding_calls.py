"""Calls to the embedding model, its own failures reported as `EmbeddingModelError`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    ensure_embeddings,
)

from langgraph_memory._infra.extras import require_extra
from langgraph_memory.embeddings import SentenceTransformerEmbeddings
from langgraph_memory.embeddings.model import _DEFAULT_ALIASES
from langgraph_memory.errors import (
    EmbeddingModelError,
    LangGraphMemoryError,
)

__all__ = ["aembedded", "embedded", "make_embeddings"]

T = TypeVar("T")


def make_embeddings(embed: Any) -> Embeddings:
    if isinstance(embed, str) and (
        embed in _DEFAULT_ALIASES or embed.startswith("sentence-transformers/") or Path(embed).is_dir()
    ):
        return SentenceTransformerEmbeddings(embed)
    if isinstance(embed, str):
        # LangGraph reads "provider:model" names with LangChain's init_embeddings, an optional dependency.
        require_extra("langchain", f"the embedding model {embed!r} (a LangChain 'provider:model' name)")
    return ensure_embeddings(embed)


def embedded(fn: Callable[[], T], what: str) -> T:
    """Run an embedding call; the model's own exception comes out as `EmbeddingModelError`."""
    try:
        return fn()
    except LangGraphMemoryError:
        raise
    except Exception as exc:
        raise _model_error(exc, what) from exc


async def aembedded(coro: Awaitable[T], what: str) -> T:
    try:
        return await coro
    except LangGraphMemoryError:
        raise
    except Exception as exc:
        raise _model_error(exc, what) from exc


def _model_error(exc: Exception, what: str) -> EmbeddingModelError:
    # One message for the sync and the async call.
    return EmbeddingModelError(f"the embedding model failed on {what}: {type(exc).__name__}: {exc}")
