"""``langgraph-memory ARGS`` with a fast deterministic model in place of the default one.

The MCP tests start the real command line (``langgraph_memory.cli.main``) and
the real SDK server through this script; only the embedding model differs,
so a server starts in a couple of seconds. The default model is driven end to
end by ``tests/test_mcp_stdio.py`` through the installed ``langgraph-memory``.
"""

from __future__ import annotations

import sys

from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory.cli import main
from langgraph_memory.store import ChromaStore

DIMS = 16


def _fake_index(cls: type, model_name: str | None = None) -> dict:
    return {"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS)}


if __name__ == "__main__":
    ChromaStore.default_index = classmethod(_fake_index)  # type: ignore[method-assign, assignment]
    sys.exit(main(sys.argv[1:]))
