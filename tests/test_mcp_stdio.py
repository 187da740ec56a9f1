"""The MCP server over stdio, started as MCP clients start it: the installed ``langgraph-memory mcp``.

The first test drives the real command with the default model end to end
(relevance by meaning, the 30 % rule, a typed call, lineage, a bad input).
The second starts two servers on one data directory at once, as two agents
would, and checks the shared index stays whole.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from mcp import Client, StdioServerParameters

from langgraph_memory.mcp.server import MemoryTools
from langgraph_memory.memory import Memory
from tests.helpers import catalog_backend

CLI = Path(sys.executable).with_name("langgraph-memory")
HELPER = Path(__file__).resolve().parent / "helpers" / "mcp_fake_server.py"
ENV = {"HF_HUB_OFFLINE": "1"}


async def _call(client: Client, tool: str, **args: Any) -> Any:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    return result.structured_content


@pytest.mark.slow
async def test_the_installed_command_serves_memory_over_stdio_with_the_default_model(tmp_path: Path) -> None:
    data_dir = tmp_path / "memory"  # does not exist yet: the server creates it (a client's first run has no data yet)
    params = StdioServerParameters(
        command=str(CLI), args=["--data-dir", str(data_dir), "mcp"], env={**ENV, **catalog_backend.child_env()}
    )
    async with Client(params, read_timeout_seconds=180) as client:
        assert [t.name for t in (await client.list_tools()).tools] == list(MemoryTools.TOOLS)
        ts = await _call(
            client, "store_memory", content="User prefers TypeScript over JavaScript", tags=["preference", "language"]
        )
        await _call(client, "store_memory", content="The office plants are watered on Fridays", tags=["office"])
        assert ts["embedding_dimensions"] == 384
        found = await _call(client, "search_memory", query="Does the user prefer TypeScript or JavaScript?", limit=5)
        assert [r["memory_id"] for r in found["results"]] == [ts["memory_id"]]  # the plants fell under 30 %
        assert 30.0 <= found["results"][0]["relevance_score"] <= 100.0
        f = await _call(
            client,
            "store_research_finding",
            content="Realised volatility clusters in crises",
            source="technical",
            confidence=0.7,
        )
        s = await _call(
            client, "store_strategy", name="vol", description="Cut exposure when volatility jumps", parent_id=f["id"]
        )
        hits = await _call(client, "query_research_findings", query="volatility clustering during market stress")
        assert hits["results"][0]["id"] == f["id"] and hits["results"][0]["relevance_score"] >= 30.0
        assert (await _call(client, "get_lineage", item_id=s["id"]))["ancestors"][0]["id"] == f["id"]
        bad = await client.call_tool("search_memory", {"query": "x", "limit": 21})
        assert bad.is_error and "limit must be a whole number from 1 to 20" in bad.content[0].text
    assert catalog_backend.has_catalog(data_dir)


async def test_two_servers_on_one_data_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "memory"
    Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=16)).close()

    async def agent(name: str) -> list[tuple[str, str]]:
        params = StdioServerParameters(
            command=sys.executable,
            args=[str(HELPER), "--data-dir", str(data_dir), "mcp"],
            env={**ENV, **catalog_backend.child_env()},  # the servers' catalog is where this test reads it
        )
        async with Client(params, read_timeout_seconds=120) as client:
            out = []
            for i in range(12):
                text = f"{name} observation {i}"
                out.append(((await _call(client, "store_memory", content=text))["memory_id"], text))
            return out

    stored = [pair for pairs in await asyncio.gather(agent("alpha"), agent("beta")) for pair in pairs]
    # Both processes wrote one embedded index: each stored vector must find its own item first.
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=16)) as mem:
        assert len(mem.store.search(("memories",), limit=100)) == 24
        for memory_id, text in stored:
            assert mem.store.search(("memories",), query=text, limit=1)[0].key == memory_id
        assert mem.store.vector_index.count("memories") == 24
