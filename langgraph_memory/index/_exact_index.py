"""The index of a read-only store: none. Every search is scored exactly from the catalog's vectors.

An embedded Chroma folder cannot be opened without writing to it (Chroma
migrates and locks its own SQLite file and may rewrite its HNSW files), and a
read-only memory must write nothing. So a store opened with
``read_only=True`` does not open Chroma at all: its planner scores every
search exactly (`Planner`'s ``exact`` plan), from the vectors held in memory
(`VectorCache`, loaded from the catalog by the first large search) or read
out of the catalog. The answers are the true top results, as an exact plan's
always are; the cost grows with the collection (see ``bench/results/RESULTS_readonly.md``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from langgraph_memory.catalog import Catalog
from langgraph_memory.errors import ReadOnlyError
from langgraph_memory.index.chroma import IndexUnavailable, RebuildReport

__all__ = ["ExactOnlyIndex"]


class ExactOnlyIndex:
    """Stands where `ChromaIndex` stands, for a read-only store: it answers no query and writes nothing."""

    #: The planner never asks this index for candidates.
    searchable = False
    embedded = False
    probe_seconds: float | None = None
    last_rebuild: RebuildReport | None = None
    caught_up_checked = 0

    def __init__(self, catalog: Catalog, collections: list[str]) -> None:
        self.catalog = catalog
        self.collections = list(collections)
        self.broken: set[str] = set()

    def open(self, **_: Any) -> None:
        """Nothing to check: no index is used."""

    def serving(self) -> bool:
        """Always serving: it is never asked for candidates, so nothing waits on it."""
        return True

    def catch_up(self) -> bool:
        """Nothing to catch up (no index)."""
        return True

    def close(self) -> None:
        """Nothing to apply or seal."""

    def folder(self) -> None:
        return None

    def sync(self, collections: list[str] | None = None) -> int:
        raise ReadOnlyError(f"this memory was opened read-only ({self.catalog.path}); the index is not updated")

    def query(self, collection: str, vector: np.ndarray, n: int) -> list[tuple[int, int, float]]:
        raise IndexUnavailable(f"a read-only store searches {collection!r} exactly from the catalog")

    def chroma_collection(self, collection: str) -> None:
        return None

    def count(self, collection: str) -> int:
        return 0

    def rebuild(self, **_: Any) -> RebuildReport:
        raise ReadOnlyError(
            f"this memory was opened read-only ({self.catalog.path}); rebuild the index from a writable open"
        )

    @property
    def handle(self) -> Any:
        raise ReadOnlyError("a read-only store opens no Chroma client; its searches run exactly from the catalog")
