"""A lineage 10,000 deep renders everywhere: ``as_dict()`` through ``json.dumps``, the CLI (text and
``--json``) and the MCP tool ``get_lineage``; no recursion anywhere, and output that does not grow with
the square of the depth."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest
from langgraph.store.base import PutOp

from langgraph_memory import Memory
from langgraph_memory.catalog.lineage_store import LineageStore
from langgraph_memory.cli import main
from langgraph_memory.mcp.server import MemoryTools

DEPTH = 10_000


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from tests.conftest import FAKE_DIMS

    data_dir = tmp_path_factory.mktemp("deep") / "memory"
    ids = [f"f{i:05d}" for i in range(DEPTH)]
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=FAKE_DIMS)) as mem:
        ns = ("research",)
        mem.store.batch([PutOp(ns, i, {"content": f"finding {i}", "id": i}, index=False) for i in ids])
        with mem.lineage_store._write() as conn:  # one transaction: the chain, each the parent of the next
            prev = None
            for i in ids:
                LineageStore.register_in(
                    conn, i, "research_findings", ns, parents=[(prev, "derived_from")] if prev else []
                )
                prev = i
    return data_dir, ids


def _assert_whole_chain(lineage: dict, item: str, ids: list[str]) -> None:
    """``lineage`` (as JSON) of ``item``, the root or the leaf of the chain, holds the whole chain in order."""
    assert lineage["item"]["id"] == item
    if item == ids[0]:
        # All ancestors, always; descendants in order up to the tree's cap (build_lineage's max_nodes, 2,000).
        assert lineage["ancestors"] == [] and [d["id"] for d in lineage["descendants"]] == ids[1:2000]
    else:
        assert [a["id"] for a in lineage["ancestors"]] == ids[:-1] and lineage["descendants"] == []


def test_as_dict_of_a_deep_chain_goes_through_json(chain, fake_embeddings) -> None:
    data_dir, ids = chain
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        root = json.loads(json.dumps(mem.lineage(ids[0]).as_dict()))
        leaf = json.loads(json.dumps(mem.lineage(ids[-1]).as_dict()))
    assert [a["id"] for a in leaf["ancestors"]] == ids[:-1]
    rows = root["descendants"]
    assert rows[0]["id"] == ids[1] and rows[0]["parent"] == ids[0]
    assert all(r["parent"] == p["id"] for p, r in pairwise(rows))  # a chain: each row's parent precedes it
    assert rows[-1]["depth"] == len(rows)


def test_cli_lineage_of_a_deep_chain(chain, capsys) -> None:
    data_dir, ids = chain
    for item in (ids[0], ids[-1]):
        assert main(["--data-dir", str(data_dir), "lineage", item, "--json"]) == 0
        _assert_whole_chain(json.loads(capsys.readouterr().out), item, ids)
        assert main(["--data-dir", str(data_dir), "lineage", item]) == 0
        out = capsys.readouterr().out
        assert ids[1] in out or ids[-2] in out
        # Indentation is capped: the text does not grow with the square of the depth.
        assert max(len(line) for line in out.splitlines()) < 400
        assert len(out) < 300 * DEPTH


def test_mcp_get_lineage_of_a_deep_chain(chain, fake_embeddings) -> None:
    from pydantic_core import to_json

    data_dir, ids = chain
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        tools = MemoryTools(mem)
        for item in (ids[0], ids[-1]):
            # Serialised as the MCP SDK serialises a tool's result.
            _assert_whole_chain(json.loads(to_json(tools.get_lineage(item))), item, ids)
