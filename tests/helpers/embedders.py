"""Test embedders with a fixed geometry."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings


class Unrelated(Embeddings):
    """Every memory at cosine 0 to every query: what is left of a score is keyword evidence (and neighbours)."""

    dims = 4

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[0.0, 1.0, 0.0, 0.0] for _t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0, 0.0, 0.0]
