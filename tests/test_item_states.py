"""The three states of an item have three names, and every view agrees on them.

``status`` is the value's own (a strategy's draft/tested/approved), ``storage``
where it is (live, archived, unknown), ``lifecycle`` whether searches show it
(active, retired, superseded). A strategy superseded while approved must read
so in ``get``, ``lineage`` and ``versions`` (text and JSON), the Python API and
the MCP tools alike.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langgraph_memory import Memory
from langgraph_memory.cli import main


@pytest.fixture
def superseded(data_dir: Path, fake_embeddings) -> tuple[str, str, str]:
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        s1 = mem.store_strategy("trend", "Buy 20-day highs", status="approved")
        s2 = mem.store_strategy("trend", "Buy 50-day highs", parent_id=s1.id, status="tested")
        mem.supersede(s1.id, s2.id, reason="longer lookback")
    return str(data_dir), s1.id, s2.id


def _json(capsys, *argv: str):  # type: ignore[no-untyped-def]
    capsys.readouterr()
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _text(capsys, *argv: str) -> str:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_api_names_the_three_states_apart(superseded, fake_embeddings) -> None:
    d, s1, s2 = superseded
    with Memory.open(d, embeddings=fake_embeddings) as mem:
        old = mem.lineage(s2).ancestors[0]
        assert (old.id, old.status, old.storage, old.lifecycle, old.superseded_by) == (
            s1,
            "approved",
            "live",
            "superseded",
            s2,
        )
        v1, v2 = mem.versions("trend")
        assert (v1.status, v1.storage, v1.lifecycle, v1.superseded_by) == ("approved", "live", "superseded", s2)
        assert (v2.status, v2.storage, v2.lifecycle) == ("tested", "live", "active")
        hits = {h.id: h for h in mem.get_similar_strategies("Buy 20-day highs", include_retired=True)}
        assert (hits[s1].record.status, hits[s1].lifecycle) == ("approved", "superseded")
        assert (hits[s2].record.status, hits[s2].lifecycle) == ("tested", "active")


def test_cli_json_views_agree(superseded, capsys) -> None:
    d, s1, s2 = superseded
    want = {"status": "approved", "storage": "live", "lifecycle": "superseded", "superseded_by": s2}
    code, got = _json(capsys, "--data-dir", d, "get", s1)
    assert code == 0 and {k: got[k] for k in want} == want and got["reason"] == "longer lookback"
    code, lin = _json(capsys, "--data-dir", d, "lineage", s2)
    assert code == 0 and {k: lin["ancestors"][0][k] for k in want} == want
    assert (lin["item"]["status"], lin["item"]["storage"], lin["item"]["lifecycle"]) == ("tested", "live", "active")
    code, rows = _json(capsys, "--data-dir", d, "versions", "trend")
    assert code == 0 and {k: rows[0][k] for k in want} == want
    code, listing = _json(capsys, "--data-dir", d, "list", "strategies")
    by_key = {it["key"]: it for it in listing["items"]}
    assert {k: by_key[s1][k] for k in want} == want


def test_cli_text_views_agree(superseded, capsys) -> None:
    d, s1, s2 = superseded
    got = _text(capsys, "--data-dir", d, "get", s1)
    lines = {
        line.split("│")[1].strip(): line.split("│")[2].strip() for line in got.splitlines() if line.count("│") >= 3
    }
    assert lines["status"] == "approved" and lines["storage"] == "live"
    assert lines["lifecycle"].startswith(f"superseded by {s2}")
    lineage = _text(capsys, "--data-dir", d, "lineage", s2)
    old = next(line for line in lineage.splitlines() if s1 in line)
    assert f"status approved, storage live, lifecycle superseded by {s2}" in old
    versions = _text(capsys, "--data-dir", d, "versions", "trend")
    row = next(line for line in versions.splitlines() if s1 in line)
    assert "approved" in row and "live" in row and f"superseded by {s2}" in row


async def test_mcp_tools_agree(superseded, fake_embeddings) -> None:
    from mcp import Client

    from langgraph_memory.mcp.server import build_server

    d, s1, s2 = superseded
    want = {"status": "approved", "storage": "live", "lifecycle": "superseded", "superseded_by": s2}
    with Memory.open(d, embeddings=fake_embeddings) as mem:
        async with Client(build_server(mem)) as client:
            got = (await client.call_tool("get_memory", {"memory_id": s1})).structured_content
            lin = (await client.call_tool("get_lineage", {"item_id": s2})).structured_content
            versions = (await client.call_tool("strategy_versions", {"name": "trend"})).structured_content
    assert {k: got[k] for k in want} == want
    assert {k: lin["ancestors"][0][k] for k in want} == want
    assert {k: versions["versions"][0][k] for k in want} == want
