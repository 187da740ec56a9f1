"""Every tunable of ingestion in one place, with the seeds' defaults.

::

    from langgraph_memory.ingest import IngestConfig

    config = IngestConfig()                                  # the contextual chunker
    fixed = IngestConfig(chunker="fixed")                    # a plain 1,000/500 window
    wide = config.replace(chunk_size=800, overlap_ratio=0.1)

The design gives the contextual chunker's numbers (400 characters, overlap
0.2, minimum 100, a search window of 50 around the ideal cut: small chunks
embed precisely, and the overlap keeps a sentence cut at a boundary
findable) and the fixed window (1,000 characters, 500 overlap: the baseline
the contextual chunker is measured against). The rest are ours:

* ``max_chunks_per_parent`` (16). A conversation turn is capped at 10
  chunks. A file section (a Markdown section, a function, a PDF page) is
  longer than a chat turn, so the cap is larger, but bounded so that recall
  with ``include_parents=True`` and five hits hands about 25 KB (~6,500
  tokens) of context to a model: 16 chunks of 400 characters with 20 %
  overlap are ~5 KB of text per parent.
* ``batch_max_chunks`` / ``batch_max_chars`` (1,024 chunks, 1 MB). A file
  whose chunks fit in one batch (about 330 KB of text at the defaults; all
  but the largest files) is stored in one transaction with its parents and
  its "done" mark. A larger file is stored in batches of this size, so
  memory stays bounded; it is marked done only by its last batch, and an
  interrupted one is rolled back by the next ingest.
* ``read_block_chars`` (64 Ki characters): how much text a reader hands the
  chunker at a time.
* ``stale_claim_seconds`` (600): a file another process claimed and has not
  advanced for this long (a crashed process on another host) is taken over.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from langgraph_memory.errors import ConfigError

__all__ = ["IngestConfig", "DOCUMENTS_NAMESPACE"]

ChunkerName = Literal["contextual", "fixed", "conversation"]

#: Where ingested files go unless told otherwise (the general collection).
DOCUMENTS_NAMESPACE: tuple[str, ...] = ("documents",)


@dataclass(frozen=True)
class IngestConfig:
    """How files are read, chunked and stored.

    Args:
        chunker: ``"contextual"`` (the default), ``"fixed"`` (the plain window), or ``"conversation"``: each
            file is a chat transcript, each message stored as a conversation turn
            (`langgraph_memory.ingest.transcripts`).
        chunk_size: target characters per contextual chunk.
        overlap_ratio: share of a chunk repeated at the start of the next (0 to 0.5).
        min_chunk_size: the contextual chunker never cuts a chunk shorter than
            this, except at the end of a file.
        search_window: characters past ``chunk_size`` a chunk may run to reach a boundary.
        fixed_chunk_size: the fixed window's size.
        fixed_overlap: characters two fixed windows share.
        max_chunks_per_parent: chunks one parent record covers at most.
        batch_max_chunks: chunks stored (and embedded) per transaction at most.
        batch_max_chars: characters of chunk text per transaction at most.
        read_block_chars: characters a reader hands the chunker at a time.
        stale_claim_seconds: a claim on a file not advanced for this long is taken over.
        include_hidden: also walk into folders and files whose name starts with a dot.
    """

    chunker: ChunkerName = "contextual"
    chunk_size: int = 400
    overlap_ratio: float = 0.2
    min_chunk_size: int = 100
    search_window: int = 50
    fixed_chunk_size: int = 1000
    fixed_overlap: int = 500
    max_chunks_per_parent: int = 16
    batch_max_chunks: int = 1024
    batch_max_chars: int = 1_000_000
    read_block_chars: int = 65_536
    stale_claim_seconds: float = 600.0
    include_hidden: bool = False

    def __post_init__(self) -> None:
        if self.chunker not in ("contextual", "fixed", "conversation"):
            raise ConfigError(f"chunker must be 'contextual', 'fixed' or 'conversation', got {self.chunker!r}")
        for name in (
            "chunk_size",
            "min_chunk_size",
            "fixed_chunk_size",
            "max_chunks_per_parent",
            "batch_max_chunks",
            "batch_max_chars",
            "read_block_chars",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{name} must be a positive whole number, got {value!r}")
        for name in ("search_window", "fixed_overlap"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{name} must be a whole number >= 0, got {value!r}")
        if not 0.0 <= float(self.overlap_ratio) <= 0.5:
            raise ConfigError(f"overlap_ratio must be between 0 and 0.5, got {self.overlap_ratio!r}")
        if self.min_chunk_size > self.chunk_size:
            raise ConfigError(f"min_chunk_size ({self.min_chunk_size}) cannot exceed chunk_size ({self.chunk_size})")
        if self.fixed_overlap >= self.fixed_chunk_size:
            raise ConfigError(
                f"fixed_overlap ({self.fixed_overlap}) must be smaller than fixed_chunk_size ({self.fixed_chunk_size})"
            )
        if not self.stale_claim_seconds > 0:
            raise ConfigError(f"stale_claim_seconds must be positive, got {self.stale_claim_seconds!r}")

    def replace(self, **changes: Any) -> IngestConfig:
        """A copy with some settings changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def describe(self) -> dict[str, Any]:
        """The settings that decide the chunks, as stored with each ingested file."""
        if self.chunker == "conversation":
            return {"chunker": "conversation"}
        if self.chunker == "fixed":
            return {
                "chunker": "fixed",
                "size": self.fixed_chunk_size,
                "overlap": self.fixed_overlap,
                "max_chunks_per_parent": self.max_chunks_per_parent,
            }
        return {
            "chunker": "contextual",
            "size": self.chunk_size,
            "overlap_ratio": self.overlap_ratio,
            "min": self.min_chunk_size,
            "window": self.search_window,
            "max_chunks_per_parent": self.max_chunks_per_parent,
        }
