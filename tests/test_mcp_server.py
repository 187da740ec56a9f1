"""The MCP server over streamable HTTP on loopback, driven by the ``mcp`` SDK's own client.

One server process for the module (``langgraph-memory mcp --transport http``
through ``tests/helpers/mcp_fake_server.py``: the real command line and the
real SDK server, a fast deterministic model). Every tool, bad input to each,
two clients at once, the bearer token, and the bind rules.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from langgraph_memory.cli import main
from langgraph_memory.config import MIN_RELEVANCE
from langgraph_memory.errors import ConfigError
from langgraph_memory.mcp.server import MemoryTools, check_bind
from langgraph_memory.memory import Memory

HELPER = Path(__file__).resolve().parent / "helpers" / "mcp_fake_server.py"
TOKEN = "test-token-0123456789abcdef"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    data_dir = tmp_path_factory.mktemp("mcp-http") / "memory"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "LANGGRAPH_MEMORY_MCP_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [sys.executable, str(HELPER), "--data-dir", str(data_dir), "mcp", "--transport", "http", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        url = None
        lines = []
        while url is None:
            line = proc.stderr.readline()
            if not line:
                raise RuntimeError("the server did not start:\n" + "".join(lines) + proc.stderr.read())
            lines.append(line)
            m = re.search(r"listening on (http://\S+)", line)
            url = m.group(1) if m else None
        assert url.startswith("http://127.0.0.1:")  # loopback by default
        # Keep reading what the server logs, so a full pipe never blocks it.
        threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True).start()
        yield {"url": url, "dir": data_dir, "proc": proc}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@asynccontextmanager
async def _client(url: str, token: str | None = TOKEN):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0)) as http:
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client:
            yield client


async def _call(client: Client, tool: str, **args: Any) -> Any:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    return result.structured_content


def _local(server: dict[str, Any]) -> Memory:
    """The same data directory opened by this process too: sharing it with the server is safe."""
    return Memory.open(server["dir"], embeddings=DeterministicFakeEmbedding(size=16))


def _count(server: dict[str, Any]) -> int:
    with _local(server) as mem, mem.store.catalog.read() as conn:
        return (
            conn.execute("SELECT count(*) FROM items").fetchone()[0]
            + conn.execute("SELECT count(*) FROM lineage_edges").fetchone()[0]
        )


async def test_every_tool_is_listed_with_its_limits(server) -> None:
    async with _client(server["url"]) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert list(tools) == list(MemoryTools.TOOLS)
    limit = tools["search_memory"].input_schema["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 20, 5)
    assert tools["store_memory"].input_schema["properties"]["tags"]["maxItems"] == 10
    assert tools["store_memory"].input_schema["required"] == ["content"]


async def test_store_and_search_memory(server) -> None:
    texts = [
        "User prefers TypeScript over JavaScript",
        "Deploys happen on Tuesdays",
        "The cat is called Miso",
        "Risk limits are reviewed monthly",
        "Coffee before standup",
    ]
    async with _client(server["url"]) as client:
        stored = [await _call(client, "store_memory", content=t, tags=["seed", f"n{i}"]) for i, t in enumerate(texts)]
        assert all(
            s["success"] and s["embedding_dimensions"] == 16 and s["timestamp"].endswith("+00:00") for s in stored
        )
        found = await _call(client, "search_memory", query=texts[0], limit=20)
    results = found["results"]
    assert results[0]["memory_id"] == stored[0]["memory_id"] and results[0]["relevance_score"] == 100.0
    assert results[0]["tags"] == ["seed", "n0"] and results[0]["content"] == texts[0]
    assert found["total_results"] == len(results) and found["query_embedding_generated"] is True
    assert all(r["relevance_score"] >= 30.0 for r in results)
    # Every stored memory under 30 % relevance was dropped (scores checked from this process).
    with _local(server) as mem:
        scores = {h.key: h.score for h in mem.store.search(("memories",), query=texts[0], limit=50)}
    ids = {r["memory_id"] for r in results}
    assert {k for k, s in scores.items() if s >= MIN_RELEVANCE} == ids
    assert any(s < MIN_RELEVANCE for s in scores.values())  # the rule was exercised
    async with _client(server["url"]) as client:
        got = await _call(client, "get_memory", memory_id=stored[2]["memory_id"])
    assert got["value"] == {"content": texts[2], "tags": ["seed", "n2"]}


async def test_typed_research_tools_and_lineage(server) -> None:
    async with _client(server["url"]) as client:
        f = await _call(
            client,
            "store_research_finding",
            content="Momentum decays after earnings",
            source="technical",
            confidence=0.8,
            tags=["momentum"],
        )
        s1 = await _call(
            client,
            "store_strategy",
            name="mcp-mom",
            description="Buy 20-day winners",
            parent_id=f["id"],
            parameters={"lookback": 20},
            metrics={"sharpe_ratio": 0.4},
        )
        s2 = await _call(client, "store_strategy", name="mcp-mom", description="Buy 60-day winners")
        lesson = await _call(
            client,
            "store_lesson",
            lesson="20-day lookbacks whipsaw",
            strategy_id=s1["id"],
            iteration=1,
            failure_type="backtest",
            feedback={"trades": 140},
        )
        resolved = await _call(client, "resolve_lesson", lesson_id=lesson["id"], resolution_id=s2["id"])
        approved = await _call(client, "set_strategy_status", strategy_id=s2["id"], status="approved")
        regime = await _call(
            client,
            "store_market_regime",
            description="Choppy high-volatility market",
            regime_type="volatile",
            volatility=0.3,
            start_date="2024-01-01",
        )
        versions = await _call(client, "strategy_versions", name="mcp-mom")
        hits = {
            "research": await _call(
                client, "query_research_findings", query="Momentum decays after earnings", min_confidence=0.5
            ),
            "strategies": await _call(
                client, "get_similar_strategies", description="Buy 60-day winners", status="approved"
            ),
            "lessons": await _call(
                client, "get_relevant_lessons", context="20-day lookbacks whipsaw", include_resolved=True
            ),
            "regimes": await _call(
                client, "query_market_regimes", query="Choppy high-volatility market", regime_type="volatile"
            ),
        }
        lineage = await _call(client, "get_lineage", item_id=lesson["id"])
        record = await _call(client, "get_memory", memory_id=s1["id"])
    assert (s1["version"], s2["version"]) == (1, 2) and resolved["resolved"] and approved["approved_at"]
    assert [v["id"] for v in versions["versions"]] == [s1["id"], s2["id"]]
    assert hits["research"]["results"][0]["id"] == f["id"]
    assert hits["strategies"]["results"][0]["id"] == s2["id"]
    assert hits["lessons"]["results"][0]["record"]["resolved"] is True
    assert hits["regimes"]["results"][0]["id"] == regime["id"]
    assert all(r["relevance_score"] >= 30.0 for h in hits.values() for r in h["results"])
    assert [a["id"] for a in lineage["ancestors"]] == [f["id"], s1["id"]]
    assert [r["id"] for r in lineage["descendants"] if r["parent"] == lesson["id"]] == [s2["id"]]
    assert record["record"]["parameters"] == {"lookback": 20}


async def test_hypotheses_backtests_tool_definitions_and_stats(server) -> None:
    async with _client(server["url"]) as client:
        h = await _call(
            client,
            "store_hypothesis",
            statement="Momentum persists in trending regimes",
            rationale="trends last months",
            confidence=0.6,
            tags=["momentum"],
        )
        s = await _call(
            client, "store_strategy", name="mcp-trend", description="60-day momentum", parameters={"lookback": 60}
        )
        b = await _call(
            client,
            "store_backtest",
            strategy_id=s["id"],
            period_start="2015-01-02",
            period_end="2024-12-31",
            universe=["SPY"],
            sharpe=1.1,
            max_drawdown=0.18,
            trades=42,
            win_rate=0.55,
            costs={"commission_bps": 1.0, "slippage_bps": 2.0},
            equity_curve=[100, 110, 90, 120],
            passed=True,
        )
        updated = await _call(
            client, "update_hypothesis", hypothesis_id=h["id"], status="confirmed", add_evidence=[b["id"]]
        )
        hyps = await _call(
            client, "query_hypotheses", query="Momentum persists in trending regimes", status="confirmed"
        )
        by_strategy = await _call(client, "query_backtests", strategy_id=s["id"], min_sharpe=1.0)
        none_passing = await _call(client, "query_backtests", strategy_id=s["id"], passed=False)
        t1 = await _call(
            client,
            "store_tool_definition",
            name="mcp-fetch",
            description="Daily closes for a ticker",
            parameters={"type": "object", "properties": {"ticker": {"type": "string"}}},
        )
        t2 = await _call(
            client,
            "store_tool_definition",
            name="mcp-fetch",
            description="Daily closes, adjusted",
            parameters={"type": "object", "properties": {"ticker": {"type": "string"}}},
        )
        current = await _call(client, "get_tool_definition", name="mcp-fetch")
        first = await _call(client, "get_tool_definition", name="mcp-fetch", version=1)
        tools = await _call(client, "query_tool_definitions", query="Daily closes, adjusted", kind="tool")
        record = await _call(client, "get_memory", memory_id=b["id"])
        lineage = await _call(client, "get_lineage", item_id=b["id"])
        stats = await _call(client, "get_memory_stats")
    assert (b["strategy_name"], b["strategy_version"], b["parameters"]) == ("mcp-trend", 1, {"lookback": 60})
    assert b["costs"] == {"commission_bps": 1.0, "slippage_bps": 2.0, "total": None}
    assert b["equity_curve"]["trough"] == 0.9 and "Sharpe 1.10" in b["summary"]
    assert updated["status"] == "confirmed" and updated["evidence_ids"] == [b["id"]]
    assert hyps["results"][0]["id"] == h["id"] and hyps["results"][0]["relevance_score"] >= 30.0
    assert [r["id"] for r in by_strategy["results"]] == [b["id"]] and none_passing["results"] == []
    assert by_strategy["results"][0]["relevance_score"] is None  # no query: newest first, nothing to score
    assert (t2["version"], current["id"], first["id"]) == (2, t2["id"], t1["id"])
    assert [r["id"] for r in tools["results"]] == [t2["id"]]  # version 1 was superseded by version 2
    assert record["record"]["sharpe"] == 1.1 and record["status"] is None
    assert [a["id"] for a in lineage["ancestors"]] == [s["id"]]
    with _local(server) as mem:
        assert mem.status(t1["id"]).superseded_by == t2["id"]
        local = mem.stats().as_dict()
    assert {n: c["items"] for n, c in stats["collections"].items()} == {
        n: c["items"] for n, c in local["collections"].items()
    }
    assert stats["collections"]["backtest_results"]["items"] >= 1 and stats["collections"]["hypotheses"]["items"] >= 1
    assert (
        stats["collections"]["tool_definitions"]["superseded"] >= 1 and stats["lineage_edges"] == local["lineage_edges"]
    )


async def test_an_agent_can_retire_supersede_and_reinstate_a_memory(server) -> None:
    async with _client(server["url"]) as client:
        wrong = await _call(client, "store_memory", content="The desk rebalances on Mondays")
        right = await _call(client, "store_memory", content="The desk rebalances on Fridays")
        f_old = await _call(client, "store_research_finding", content="Carry pays 4% a year (2010-2019 sample)")
        f_new = await _call(client, "store_research_finding", content="Carry pays 3% a year (2010-2024 sample)")

        async def found(query: str) -> set[str]:
            return {r["memory_id"] for r in (await _call(client, "search_memory", query=query, limit=20))["results"]}

        assert wrong["memory_id"] in await found("The desk rebalances on Mondays")
        retired = await _call(client, "retire_memory", memory_id=wrong["memory_id"], reason="it is Fridays")
        assert (retired["lifecycle"], retired["reason"], retired["namespace"]) == (
            "retired",
            "it is Fridays",
            ["memories"],
        )
        assert wrong["memory_id"] not in await found("The desk rebalances on Mondays")
        assert right["memory_id"] in await found("The desk rebalances on Fridays")
        got = await _call(client, "get_memory", memory_id=wrong["memory_id"])  # still readable by id, marked
        assert got["lifecycle"] == "retired" and got["value"]["content"] == "The desk rebalances on Mondays"

        sup = await _call(client, "supersede_memory", old_id=f_old["id"], new_id=f_new["id"], reason="longer sample")
        assert (sup["lifecycle"], sup["superseded_by"], sup["namespace"]) == ("superseded", f_new["id"], ["research"])
        hits = await _call(client, "query_research_findings", query="Carry pays 4% a year (2010-2019 sample)", limit=20)
        assert f_old["id"] not in {r["id"] for r in hits["results"]}
        assert (await _call(client, "get_lineage", item_id=f_new["id"]))["ancestors"][0]["id"] == f_old["id"]

        back = await _call(client, "reinstate_memory", memory_id=wrong["memory_id"])
        assert back == {"memory_id": wrong["memory_id"], "reinstated": True}
        assert wrong["memory_id"] in await found("The desk rebalances on Mondays")
        again = await _call(client, "reinstate_memory", memory_id=wrong["memory_id"])
        assert again["reinstated"] is False
    # A graph's memory under ("memories", "<user>") is named by its namespace.
    with _local(server) as mem:
        mem.store.put(("memories", "u9"), "pref", {"content": "User u9 likes long reports"})
    async with _client(server["url"]) as client:
        done = await _call(client, "retire_memory", memory_id="pref", reason="changed", namespace=["memories", "u9"])
        assert done["namespace"] == ["memories", "u9"]
        assert "pref" not in {
            r["memory_id"]
            for r in (await _call(client, "search_memory", query="User u9 likes long reports"))["results"]
        }


BAD_INPUT = [
    ("store_memory", {"content": ""}, "ValidationError"),
    ("store_memory", {"content": "x", "tags": ["t"] * 11}, "at most 10"),
    ("store_memory", {"content": "x", "tags": ["x" * 51]}, "at most 50"),
    ("store_memory", {"tags": ["a"]}, "content"),
    ("search_memory", {"query": "x", "limit": 0}, "from 1 to 20"),
    ("search_memory", {"query": "x", "limit": 21}, "from 1 to 20"),
    ("search_memory", {"query": "x", "limit": "many"}, "limit"),
    ("search_memory", {"query": "  "}, "query must not be empty"),
    ("get_memory", {"memory_id": "no-such-id"}, "NotFoundError"),
    ("store_research_finding", {"content": "x", "confidence": 1.5}, "confidence"),
    ("store_research_finding", {"content": "x", "parent_id": "no-such-parent"}, "LineageError"),
    ("query_research_findings", {"query": "x", "limit": 50}, "from 1 to 20"),
    ("store_strategy", {"name": " ", "description": "d"}, "name must not be empty"),
    ("store_strategy", {"name": "n", "description": "d", "status": "shipped"}, "status"),
    ("get_similar_strategies", {"description": "x", "limit": 0}, "from 1 to 20"),
    ("set_strategy_status", {"strategy_id": "no-such-id", "status": "approved"}, "NotFoundError"),
    ("strategy_versions", {"name": ""}, "ValidationError"),
    ("store_lesson", {"lesson": "x", "severity": "catastrophic"}, "severity"),
    ("get_relevant_lessons", {"context": "x", "limit": 100}, "from 1 to 20"),
    ("resolve_lesson", {"lesson_id": "no-such-id"}, "NotFoundError"),
    ("store_market_regime", {"description": "x", "start_date": "not a date"}, "start_date"),
    ("store_market_regime", {"description": "x", "regime_type": "crab"}, "regime_type"),
    ("query_market_regimes", {"query": ""}, "ValidationError"),
    ("get_lineage", {"item_id": "no-such-id"}, "NotFoundError"),
    ("store_hypothesis", {"statement": " "}, "statement must not be empty"),
    ("store_hypothesis", {"statement": "x", "confidence": 2.0}, "confidence"),
    ("store_hypothesis", {"statement": "x", "parent_id": "no-such-parent"}, "LineageError"),
    ("update_hypothesis", {"hypothesis_id": "no-such-id", "status": "confirmed"}, "NotFoundError"),
    ("update_hypothesis", {"hypothesis_id": "x", "status": "proven"}, "status"),
    ("query_hypotheses", {"query": "x", "status": "maybe"}, "status"),
    ("store_backtest", {"strategy_id": "no-such-id", "sharpe": 1.0}, "NotFoundError"),
    ("store_backtest", {"strategy_id": "x", "trades": "many"}, "trades"),
    ("store_backtest", {"strategy_id": "x", "costs": {"commission_bps": -1}}, "commission_bps"),
    ("query_backtests", {"limit": 0}, "from 1 to 20"),
    ("query_backtests", {"query": " "}, "query must not be empty"),
    ("store_tool_definition", {"name": "t", "description": "d", "kind": "macro"}, "kind"),
    ("store_tool_definition", {"name": " ", "description": "d"}, "name must not be empty"),
    ("get_tool_definition", {"name": "no-such-tool"}, "NotFoundError"),
    ("query_tool_definitions", {"query": "x", "limit": 21}, "from 1 to 20"),
    ("retire_memory", {"memory_id": "no-such-id", "reason": "wrong"}, "NotFoundError"),
    ("retire_memory", {"memory_id": "x", "reason": " "}, "reason must not be empty"),
    ("supersede_memory", {"old_id": "no-such-id", "new_id": "no-such-either"}, "NotFoundError"),
    ("reinstate_memory", {"memory_id": ""}, "ValidationError"),
    ("get_memory_history", {"item_id": "no-such-id"}, "NotFoundError"),
    ("get_memory_history", {"item_id": " "}, "item_id must not be empty"),
    ("search_memory", {"query": "x", "as_of": "last tuesday"}, "InvalidArgumentError"),
    ("get_relevant_lessons", {"context": "x", "as_of": "2026-13-01"}, "as_of must be an ISO date"),
]


async def test_an_agent_reads_an_items_versions_and_the_memory_as_it_stood(server) -> None:
    async with _client(server["url"]) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("search_memory", "get_memory", "get_relevant_lessons", "query_backtests"):
            assert "as_of" in tools[name].input_schema["properties"], name
        lesson = await _call(client, "store_lesson", lesson="Stops sit too tight for momentum entries")
        plain = await _call(client, "store_memory", content="The desk rebalances on Mondays")
    before = datetime.now(UTC)
    with _local(server) as mem:  # the desk rewords both afterwards
        mem.store.put(("lessons",), lesson["id"], {**lesson, "lesson": "Stops sit too tight in choppy markets"})
        mem.store.put(("memories",), plain["memory_id"], {"content": "The desk rebalances on Fridays", "tags": []})
    async with _client(server["url"]) as client:
        history = await _call(client, "get_memory_history", item_id=lesson["id"])
        then = await _call(client, "get_memory", memory_id=lesson["id"], as_of=before.isoformat())
        now = await _call(client, "get_memory", memory_id=lesson["id"])
        recalled_then = await _call(
            client, "get_relevant_lessons", context="Stops sit too tight for momentum entries", as_of=before.isoformat()
        )
        recalled_now = await _call(client, "get_relevant_lessons", context="Stops sit too tight for momentum entries")
        plain_then = await _call(client, "get_memory", memory_id=plain["memory_id"], as_of=before.isoformat())
        searched_then = await _call(
            client, "search_memory", query="The desk rebalances on Mondays", as_of=before.isoformat()
        )
        before_all = await _call(client, "search_memory", query="The desk rebalances on Mondays", as_of="2000-01-01")
        plain_history = await _call(client, "get_memory_history", item_id=plain["memory_id"], namespace=["memories"])
    newest, oldest = history["versions"]
    assert history["total"] == 2 and newest["valid_to"] is None and oldest["change"] == "put"
    assert oldest["created"] is True and oldest["changes"] == []
    assert newest["changes"] == [
        {
            "field": "lesson",
            "old": "Stops sit too tight for momentum entries",
            "new": "Stops sit too tight in choppy markets",
        }
    ]
    assert then["record"]["lesson"] == "Stops sit too tight for momentum entries"
    assert now["record"]["lesson"] == "Stops sit too tight in choppy markets"
    assert [r["record"]["lesson"] for r in recalled_then["results"]][:1] == ["Stops sit too tight for momentum entries"]
    assert "Stops sit too tight for momentum entries" not in [r["record"]["lesson"] for r in recalled_now["results"]]
    assert plain_then["value"]["content"] == "The desk rebalances on Mondays"
    assert plain["memory_id"] in {r["memory_id"] for r in searched_then["results"]}
    assert next(r for r in searched_then["results"] if r["memory_id"] == plain["memory_id"])["content"] == (
        "The desk rebalances on Mondays"
    )
    assert before_all["results"] == []
    assert [v["value"]["content"] for v in plain_history["versions"]] == [
        "The desk rebalances on Fridays",
        "The desk rebalances on Mondays",
    ]


async def test_bad_input_to_each_tool_is_a_clear_error_and_writes_nothing(server) -> None:
    before = _count(server)
    async with _client(server["url"]) as client:
        takes_arguments = {t.name for t in (await client.list_tools()).tools if t.input_schema.get("properties")}
        assert {tool for tool, _, _ in BAD_INPUT} == takes_arguments  # every tool that takes input gets bad input
        for tool, args, expected in BAD_INPUT:
            result = await client.call_tool(tool, args)
            assert result.is_error, (tool, args)
            assert expected in result.content[0].text, (tool, result.content[0].text)
    assert _count(server) == before


async def test_two_clients_at_once(server) -> None:
    async def session(name: str) -> list[str]:
        async with _client(server["url"]) as client:
            ids = []
            for i in range(8):
                stored, _ = await asyncio.gather(
                    _call(client, "store_memory", content=f"{name} note {i}"),
                    _call(client, "search_memory", query=f"{name} note {i}"),
                )
                ids.append(stored["memory_id"])
            return ids

    a, b = await asyncio.gather(session("alpha"), session("beta"))
    async with _client(server["url"]) as client:  # each sees what the other wrote
        for ids, name in ((a, "alpha"), (b, "beta")):
            for i, memory_id in enumerate(ids):
                hits = (await _call(client, "search_memory", query=f"{name} note {i}", limit=1))["results"]
                assert hits[0]["memory_id"] == memory_id


async def test_http_needs_the_token(server) -> None:
    async with httpx2.AsyncClient() as http:
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}):
            response = await http.post(
                server["url"], json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers
            )
            assert response.status_code == 401


def test_binding_beyond_loopback_needs_a_flag_and_a_token(capsys) -> None:
    check_bind("127.0.0.1", None, False)
    check_bind("::1", None, False)
    check_bind("localhost", None, False)
    check_bind("0.0.0.0", TOKEN, True)
    for host, token, allow in (
        ("0.0.0.0", None, False),
        ("0.0.0.0", TOKEN, False),
        ("0.0.0.0", None, True),
        ("192.168.1.5", TOKEN, False),
        ("127.0.0.1", "short", False),
    ):
        with pytest.raises(ConfigError):
            check_bind(host, token, allow)
    code = main(["mcp", "--transport", "http", "--host", "0.0.0.0", "--data-dir", "/nonexistent/never-created"])
    assert code == 2 and "--allow-remote" in capsys.readouterr().err.replace("\n", " ")
    assert not Path("/nonexistent/never-created").exists()
