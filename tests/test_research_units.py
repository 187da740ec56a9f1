"""Numbers with units: a drawdown of 31 % is 0.31, and every way in says so and refuses 31.

Each numeric research field is declared once with its unit (`langgraph_memory.research.units`); the Python
API's docstring, the CLI's ``--help`` and the MCP tool schema all print that same unit and range, and a
fraction outside its range is refused before anything is written, with the fraction it probably meant.
The CLI runs as a user types it: the installed ``langgraph-memory`` command, in a subprocess.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from langgraph_memory import Memory
from langgraph_memory.errors import ValidationError
from langgraph_memory.mcp.server import build_server
from langgraph_memory.research.calls import research_calls
from langgraph_memory.research.collections import COLLECTIONS, BacktestResult
from langgraph_memory.research.units import DRAWDOWN, Unit, units_of

CLI = Path(sys.executable).with_name("langgraph-memory")


def _cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # A wide, fixed terminal: help lines never wrap, so what a test reads does not depend on the runner's.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "1000"}
    return subprocess.run(
        [str(CLI), "--data-dir", str(data_dir), *args], capture_output=True, text=True, env=env, timeout=300
    )


def _numeric_params() -> list[tuple[str, str, Unit]]:
    """(call, parameter, unit) of every numeric parameter the research calls offer."""
    return [
        (call.name, name, unit)
        for call in research_calls()
        for name, unit in units_of(call.method).items()
        if name in call.signature.parameters
    ]


def test_every_offered_numeric_research_parameter_has_a_unit() -> None:
    found = {(call, name) for call, name, _ in _numeric_params()}
    for call in research_calls():
        for name, param in call.signature.parameters.items():
            hint = str(param.annotation)
            if name != "limit" and ("float" in hint or "int" in hint) and "list" not in hint:
                assert (call.name, name) in found, f"{call.name}({name}) is a number without a unit"
    assert ("store_backtest", "max_drawdown") in found and ("query_research_findings", "min_confidence") in found


def test_a_drawdown_of_31_is_refused_by_the_cli_with_the_fraction_it_meant(tmp_path: Path) -> None:
    data_dir = tmp_path / "memory"
    made = _cli(data_dir, "research", "store_strategy", "--name", "mom", "--description", "60-day momentum", "--json")
    assert made.returncode == 0, made.stderr
    strategy = json.loads(made.stdout)["id"]

    cases = {
        ("--max-drawdown", "31"): "did you mean 0.31?",
        ("--max-drawdown", "-0.2"): "did you mean 0.2?",
        ("--win-rate", "3"): "did you mean 0.03?",
        ("--cagr", "-50"): "did you mean -0.5?",
    }
    for (flag, value), hint in cases.items():
        refused = _cli(data_dir, "research", "store_backtest", "--strategy-id", strategy, flag, value)
        assert refused.returncode == 2, (flag, value, refused.stdout)
        assert hint in refused.stderr, refused.stderr
        assert "a fraction" in refused.stderr and "Traceback" not in refused.stderr

    stored = _cli(data_dir, "research", "query_backtests", "--strategy-id", strategy, "--json")
    assert json.loads(stored.stdout)["total_results"] == 0  # nothing half-written

    ok = _cli(data_dir, "research", "store_backtest", "--strategy-id", strategy, "--max-drawdown", "0.31", "--json")
    assert ok.returncode == 0, ok.stderr
    assert "max drawdown 31%" in json.loads(ok.stdout)["summary"]


def test_cli_help_states_each_numbers_unit_and_range(tmp_path: Path) -> None:
    shown = _cli(tmp_path / "memory", "research", "store_backtest", "--help")
    assert shown.returncode == 0, shown.stderr
    lines = {m.group(1): m.group(2) for m in re.finditer(r"^\s+--([a-z-]+) [A-Z_]+\s+(.*)$", shown.stdout, re.M)}
    for _call, name, unit in (p for p in _numeric_params() if p[0] == "store_backtest"):
        if "." not in name:
            assert lines[name.replace("_", "-")] == unit.describe(), name
    assert lines["max-drawdown"].endswith("a fraction from 0 to 1")
    assert "0.18 = 18 %" in lines["max-drawdown"]
    assert "commission_bps (basis points" in lines["costs"]


async def test_mcp_schema_and_docstring_state_the_same_unit(tmp_path: Path, fake_embeddings) -> None:
    with Memory.open(tmp_path / "memory", embeddings=fake_embeddings) as mem:
        tools = {t.name: t for t in await build_server(mem).list_tools()}
    for call, name, unit in _numeric_params():
        if "." in name:
            continue
        prop = tools[call].input_schema["properties"][name]
        assert prop["description"] == unit.describe(), (call, name)
        assert (prop.get("minimum"), prop.get("maximum"), prop.get("exclusiveMinimum")) == (unit.ge, unit.le, unit.gt)
        assert (
            f"    {name}: {unit.describe()}"
            in getattr(Memory, call if call != "strategy_versions" else "versions").__doc__
        )
    drawdown = tools["store_backtest"].input_schema["properties"]["max_drawdown"]
    assert (drawdown["minimum"], drawdown["maximum"]) == (0, 1)


def test_python_api_refuses_out_of_range_numbers_before_writing(tmp_path: Path, fake_embeddings) -> None:
    with Memory.open(tmp_path / "memory", embeddings=fake_embeddings) as mem:
        s = mem.store_strategy("mom", "60-day momentum")
        with pytest.raises(
            ValidationError, match=r"max_drawdown must be a fraction from 0 to 1 .*did you mean 0\.31\?"
        ):
            mem.store_backtest(s.id, max_drawdown=31)
        with pytest.raises(ValidationError, match=r"costs\.commission_bps must be 0 or more"):
            mem.store_backtest(s.id, costs={"commission_bps": -1})
        with pytest.raises(ValidationError, match=r"confidence .*did you mean 0\.8\?"):
            mem.store_research_finding("Vol clusters", confidence=80)
        with pytest.raises(ValidationError, match=r"max_drawdown .*did you mean 0\.25\?"):
            mem.store_strategy("mom", "again", metrics={"max_drawdown": -0.25})  # copied from metrics: held too
        with pytest.raises(ValidationError, match=r"max_drawdown .*did you mean 0\.2\?"):
            mem.query_backtests(max_drawdown=20)  # a filter in the wrong unit would match everything
        with pytest.raises(ValidationError, match="finite"):
            mem.store_backtest(s.id, sharpe=float("nan"))
        assert mem.query_backtests(strategy_id=s.id) == []
        assert [v.version for v in mem.versions("mom")] == [1]
        b = mem.store_backtest(s.id, max_drawdown=0.31, sharpe=-0.4, cagr=-0.2, trades=0)
        assert (b.max_drawdown, b.sharpe, b.cagr) == (0.31, -0.4, -0.2)


def test_a_stored_value_from_before_the_range_still_reads_back() -> None:
    # Writes are held to the range; a record written before it was declared must not break searches.
    old: dict[str, Any] = {"summary": "old run", "max_drawdown": 31.0}
    assert BacktestResult.model_validate(old).max_drawdown == 31.0
    with pytest.raises(ValidationError, match="did you mean 0.31"):
        COLLECTIONS["backtests"].validate(old)


def test_unit_messages_name_the_range_and_suggest_the_fraction() -> None:
    with pytest.raises(ValidationError) as exc:
        DRAWDOWN.check(31, "max_drawdown")
    assert str(exc.value) == (
        "max_drawdown must be a fraction from 0 to 1 (largest fall from a peak, as a positive fraction of it: "
        "0.18 = 18 %), got 31; did you mean 0.31?"
    )
    assert DRAWDOWN.check(1, "max_drawdown") == 1.0
    with pytest.raises(ValidationError, match="must be a number"):
        DRAWDOWN.check("0.3", "max_drawdown")
    with pytest.raises(ValidationError, match="must be a number"):
        DRAWDOWN.check(True, "max_drawdown")


def test_the_docs_state_every_record_fields_unit() -> None:
    table = (Path(__file__).resolve().parents[1] / "docs" / "research.md").read_text()
    for spec in COLLECTIONS.values():
        for name, field in spec.schema.model_fields.items():
            for unit in (m for m in field.metadata if isinstance(m, Unit)):
                row = next((line for line in table.splitlines() if f"`{name}`" in line and line.startswith("| ")), "")
                assert row.endswith(f"| {unit.describe()} |"), (spec.name, name, row)


def test_a_relevance_threshold_of_30_is_refused_with_the_score_it_meant(tmp_path: Path, fake_embeddings) -> None:
    # The MCP tools show relevance in percent; the threshold is a score: 30 would silently drop every hit.
    refused = _cli(tmp_path / "memory", "search", "stops", "--min-relevance", "30")
    assert refused.returncode == 2
    assert "argument --min-relevance: --min-relevance must be a fraction from -1 to 1" in refused.stderr
    assert "did you mean 0.3?" in refused.stderr
    with Memory.open(tmp_path / "memory", embeddings=fake_embeddings) as mem:
        mem.store_lesson("Tight stops get hit by noise")
        with pytest.raises(ValidationError, match=r"min_relevance .*did you mean 0\.3\?"):
            mem.get_relevant_lessons("stops", min_relevance=30)
        assert len(mem.get_relevant_lessons("stops", min_relevance=None)) == 1
