"""Durable, searchable memory for LangGraph agents.

One line gives a graph both kinds of memory:

    from langgraph_memory import Memory

    with Memory.open("./memory") as mem:
        graph = builder.compile(checkpointer=mem.checkpointer, store=mem.store)

The pieces, each usable alone:

* [`ChromaStore`][langgraph_memory.ChromaStore] - a LangGraph ``BaseStore`` over typed Chroma collections;
* [`HybridRanking`][langgraph_memory.HybridRanking], [`TemporalConfig`][langgraph_memory.TemporalConfig] - hybrid
  keyword + vector recall with decay and reinforcement;
* [`SqliteCheckpointer`][langgraph_memory.SqliteCheckpointer] - a ``BaseCheckpointSaver`` for sync and async graphs;
* [`Memory`][langgraph_memory.Memory] - one data directory: store, checkpointer, typed research API (seven
  collections), lineage, retire/supersede/delete, stats, decay cleanup, archiver;
* [`recall_node()`][langgraph_memory.recall_node], [`store_node()`][langgraph_memory.store_node],
  [`create_recall_tool()`][langgraph_memory.create_recall_tool],
  [`create_store_tool()`][langgraph_memory.create_store_tool] - memory in graphs;
* [`Archiver`][langgraph_memory.Archiver], [`schedule_archival()`][langgraph_memory.schedule_archival] - stale
  memories to compressed, searchable archives;
* [`export_bundle()`][langgraph_memory.export_bundle], [`import_bundle()`][langgraph_memory.import_bundle] - share
  bundles between data directories and teammates;
* ``Memory.ingest`` / [`IngestConfig`][langgraph_memory.IngestConfig] - files and folders into memory, chunked and
  deduplicated;
* [`SessionMemory`][langgraph_memory.SessionMemory] (``mem.sessions``),
  [`SessionConfig`][langgraph_memory.SessionConfig], [`conversation_node()`][langgraph_memory.conversation_node] -
  conversation sessions as short-term memory, their important turns promoted to episodic memory.

From outside a graph: the ``langgraph-memory`` command line (`langgraph_memory.cli`) and the MCP
server (`langgraph_memory.mcp_server`, ``langgraph-memory mcp``).
"""

from __future__ import annotations

from langgraph_memory import _compat

_compat.install()

from langgraph_memory.research.procedures import ProceduralAPI
from langgraph_memory.research.api import ResearchAPI
from langgraph_memory.archive import Archiver, schedule_archival, schedule_session_cleanup
from langgraph_memory.bundle import export_bundle, import_bundle
from langgraph_memory.catalog.status import ItemStatus
from langgraph_memory.checkpoint import SqliteCheckpointer
from langgraph_memory.config import Settings
from langgraph_memory.graph.conversation import conversation_node, last_human_text
from langgraph_memory.lifecycle.decay import DecayReport
from langgraph_memory.store.embeddings import CachedEmbeddings, SentenceTransformerEmbeddings, default_embeddings
from langgraph_memory.errors import LangGraphMemoryError
from langgraph_memory.lifecycle.items import DeleteReport
from langgraph_memory.ingest import ChunkHit, IngestConfig, IngestReport
from langgraph_memory.research.lineage import Lineage
from langgraph_memory.memory import Hit, Memory, StrategyVersion
from langgraph_memory.graph.nodes import recall_node, store_node
from langgraph_memory.lifecycle.stats import CollectionStats, MemoryStats
from langgraph_memory.store.ranking import HybridRanking, TemporalConfig
from langgraph_memory.sessions import CleanupReport, Session, SessionConfig, SessionMemory, SessionTurn
from langgraph_memory.store import ChromaStore
from langgraph_memory.store.registry import CollectionRegistry, CollectionSpec, set_default_collections
from langgraph_memory.research.collections import RESEARCH
from langgraph_memory.graph.tools import create_recall_tool, create_store_tool

__all__ = [
    "Memory",
    "ChromaStore",
    "CollectionRegistry",
    "CollectionSpec",
    "RESEARCH",
    "HybridRanking",
    "TemporalConfig",
    "SqliteCheckpointer",
    "Archiver",
    "schedule_archival",
    "schedule_session_cleanup",
    "export_bundle",
    "import_bundle",
    "recall_node",
    "store_node",
    "create_recall_tool",
    "create_store_tool",
    "Hit",
    "StrategyVersion",
    "ResearchAPI",
    "ProceduralAPI",
    "Lineage",
    "ItemStatus",
    "DeleteReport",
    "MemoryStats",
    "CollectionStats",
    "DecayReport",
    "Settings",
    "SentenceTransformerEmbeddings",
    "CachedEmbeddings",
    "default_embeddings",
    "LangGraphMemoryError",
    "IngestConfig",
    "IngestReport",
    "ChunkHit",
    "SessionMemory",
    "SessionConfig",
    "Session",
    "SessionTurn",
    "CleanupReport",
    "conversation_node",
    "last_human_text",
]

# The product's default: a store opened without ``collections=`` keeps the research collections.
# The store itself only knows the registry interface; the façade decides which one.
set_default_collections(RESEARCH)

from langgraph_memory._version import __version__ as __version__
