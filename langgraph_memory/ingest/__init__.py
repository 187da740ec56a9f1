"""Files into memory: reading, chunking, dedup by content hash, and recall with parent context.

::

    from langgraph_memory import Memory

    with Memory.open("./memory") as mem:
        report = mem.ingest("papers/", episode_id="DS-25-002")      # .md .txt .py .csv .pdf .yaml .yml
        print(report.counts())                                       # {'ingested': 12, 'duplicate': 0, ...}
        for hit in mem.recall("momentum after earnings", include_parents=True):
            print(hit.score, hit.source_uri, hit.content[:80], len(hit.full_context))

The modules, in the order a file meets them: `files` (walk, SHA-256,
verbatim copy to ``raw/``), `encoding`, `readers` and
`pdf` (text and structure), `boundaries` and `chunkers`
(the contextual chunker, the fixed window), `pipeline`
(claims, batches, the store), `recall`, `report`; every tunable
is in `config`.
"""

from langgraph_memory.ingest.chunkers import ContextualChunker, FixedWindowChunker, make_chunker
from langgraph_memory.ingest.config import DOCUMENTS_NAMESPACE, IngestConfig
from langgraph_memory.ingest.files import SUPPORTED_TYPES
from langgraph_memory.ingest.pipeline import Ingestor, chunk_key, parent_key
from langgraph_memory.ingest.recall import ChunkHit, ParentContext, recall
from langgraph_memory.ingest.records import Block, Chunk, ChunkMetadata, Parent
from langgraph_memory.ingest.report import FileResult, IngestProgress, IngestReport

__all__ = [
    "IngestConfig",
    "DOCUMENTS_NAMESPACE",
    "SUPPORTED_TYPES",
    "ContextualChunker",
    "FixedWindowChunker",
    "make_chunker",
    "Ingestor",
    "chunk_key",
    "parent_key",
    "recall",
    "ChunkHit",
    "ParentContext",
    "Block",
    "Chunk",
    "ChunkMetadata",
    "Parent",
    "FileResult",
    "IngestReport",
    "IngestProgress",
]
