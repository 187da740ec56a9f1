"""Each research call is declared once, in the research API; MCP and the CLI offer it as declared."""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from langgraph_memory.catalog.evidence import CutoffArgs
from langgraph_memory.cli import build_parser, main
from langgraph_memory.mcp.server import build_server
from langgraph_memory.research.calls import AS_OF_CALLS, CALLS, HIDDEN, research_calls
from langgraph_memory.store import ChromaStore
from tests.conftest import FAKE_DIMS


@pytest.fixture(autouse=True)
def fake_default_model(monkeypatch, fake_embeddings):
    """The CLI embeds with the configured model; a fake one keeps these tests fast."""
    monkeypatch.setattr(
        ChromaStore,
        "default_index",
        classmethod(lambda cls, model_name=None: {"dims": FAKE_DIMS, "embed": fake_embeddings}),
    )


def _declared(name: str) -> list[str]:
    """The parameters the research API declares for ``name``, as offered (``k`` is ``limit``; the data
    cut-off's ``**cutoff: Unpack[CutoffArgs]`` is its two arguments; a call that reads takes ``as_of`` too)."""
    names: list[str] = []
    for p in inspect.signature(CALLS[name]).parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            names += list(CutoffArgs.__annotations__) if "CutoffArgs" in str(p.annotation) else []
        elif p.name not in HIDDEN:
            names.append("limit" if p.name == "k" else p.name)
    return names + (["as_of"] if name in AS_OF_CALLS else [])


def _cli_options(name: str) -> list[str]:
    parser = build_parser()
    research = next(
        a
        for a in parser._subparsers._group_actions[0].choices["research"]._actions  # noqa: SLF001
        if isinstance(a, argparse._SubParsersAction)
    )  # noqa: SLF001
    sub = research.choices[name]
    return [
        a.dest
        for a in sub._actions
        if a.option_strings and a.dest not in ("help", "data_dir", "url", "local_dir", "json", "verbose", "read_only")
    ]  # noqa: SLF001


def test_mcp_and_cli_offer_exactly_what_the_api_declares(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m", embeddings=DeterministicFakeEmbedding(size=FAKE_DIMS)) as mem:
        tools = {t.name: t for t in asyncio.run(build_server(mem).list_tools())}
    assert [c.name for c in research_calls()] == list(CALLS)
    for name in CALLS:
        declared = _declared(name)
        assert list(tools[name].input_schema["properties"]) == declared, name
        assert _cli_options(name) == declared, name
    # Every call that reads records can read them as of a moment; the version listings (today's statuses) cannot.
    from langgraph_memory.mcp.tools import MemoryTools

    reads = {name for name in CALLS if name not in MemoryTools.WRITES}
    assert reads - AS_OF_CALLS == {"strategy_versions", "get_memory_history"}
    # A Literal in the API is an enum in the tool's schema and a choice on the command line.
    status = tools["query_hypotheses"].input_schema["properties"]["status"]["anyOf"][0]
    assert status["enum"] == ["proposed", "testing", "confirmed", "rejected"]


def _cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code = main(list(argv))
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def test_the_research_command_stores_and_queries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = str(tmp_path / "memory")
    s = _cli_json(
        capsys,
        "--data-dir",
        d,
        "research",
        "store_strategy",
        "--name",
        "mom",
        "--description",
        "Buy 60-day winners",
        "--parameters",
        '{"lookback": 60}',
        "--status",
        "tested",
    )
    b = _cli_json(
        capsys,
        "--data-dir",
        d,
        "research",
        "store_backtest",
        "--strategy-id",
        s["id"],
        "--sharpe",
        "1.3",
        "--universe",
        "SPY",
        "QQQ",
        "--passed",
    )
    assert (b["strategy_name"], b["strategy_version"], b["universe"], b["passed"]) == ("mom", 1, ["SPY", "QQQ"], True)
    found = _cli_json(capsys, "--data-dir", d, "research", "query_backtests", "--strategy-id", s["id"])
    assert [r["id"] for r in found["results"]] == [b["id"]]
    versions = _cli_json(capsys, "--data-dir", d, "research", "strategy_versions", "--name", "mom")
    assert [v["version"] for v in versions["versions"]] == [1]
    # The same checks as the MCP tools: an empty text is refused before anything is written.
    assert main(["--data-dir", d, "research", "store_lesson", "--lesson", " "]) == 2
    assert "lesson must not be empty" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # not one of the Literal's choices
        main(["--data-dir", d, "research", "set_strategy_status", "--strategy-id", s["id"], "--status", "great"])
