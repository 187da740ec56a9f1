"""What the command line says when something is wrong, and in its help: clear, alike, and parseable.

* every JSON option (``--filter``, ``--costs``, ``--parameters``...) refuses broken JSON the same clear way;
* help derived from docstrings shows no reST markup (````like this````), and neither do MCP tool descriptions;
* with ``--json``, an error is a JSON object on stdout (and the exit status is not 0), so scripts can parse it.

The headline cases run the installed ``langgraph-memory`` command in a subprocess, as a user types it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from langgraph_memory import Memory
from langgraph_memory.cli import build_parser, main
from langgraph_memory.cli._common import json_arg, json_object_arg
from langgraph_memory.mcp.server import build_server

CLI = Path(sys.executable).with_name("langgraph-memory")
JSON_TYPES = (json_arg, json_object_arg)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    # A wide, fixed terminal: messages never wrap, whatever the runner's width.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "1000"}
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, env=env, timeout=300)


def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command's parser with the words that reach it (``("archive", "restore")``)."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if sub.prog.endswith(" " + name):  # aliases point at the same parser: visit it once
                    yield from _parsers(sub, (*path, name))


def _json_options() -> list[tuple[tuple[str, ...], str]]:
    return [
        (path, action.option_strings[-1])
        for path, parser in _parsers(build_parser())
        for action in parser._actions
        if action.option_strings and action.type in JSON_TYPES
    ]


def test_every_json_option_parses_through_the_one_helper() -> None:
    options = _json_options()
    assert (("search",), "--filter") in options and (("research", "store_backtest"), "--costs") in options
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            assert action.type is not json.loads, (path, action.option_strings)


def test_every_json_option_refuses_broken_json_alike(capsys) -> None:
    options = _json_options()
    assert (("archive", "restore"), "--filter") in options and (("research", "store_lesson"), "--feedback") in options
    for path, flag in options:
        with pytest.raises(SystemExit) as exc:
            main([*path, flag, "{bad"])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert (
            f"argument {flag}: not valid JSON (Expecting property name enclosed in double quotes at column 2): '{{bad'"
            in err
        ), (path, err)
        assert "Write it in single quotes for the shell" in err


@pytest.mark.sqlite_only("arguments refused before any data directory is opened: the same in both passes")
def test_filter_and_costs_say_the_same_clear_thing_from_the_shell(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "memory")
    filtered = _cli("--data-dir", data_dir, "search", "x", "--filter", "{bad")
    costs = _cli("--data-dir", data_dir, "research", "store_backtest", "--strategy-id", "s", "--costs", "{bad")
    for proc, flag in ((filtered, "--filter"), (costs, "--costs")):
        assert proc.returncode == 2
        assert f"error: argument {flag}: not valid JSON (Expecting property name" in proc.stderr
        assert "invalid loads value" not in proc.stderr
    listed = _cli("--data-dir", data_dir, "search", "x", "--filter", "[1]")
    assert listed.returncode == 2 and "expected a JSON object" in listed.stderr


def test_no_help_text_shows_rest_markup() -> None:
    for path, parser in _parsers(build_parser()):
        text = parser.format_help()
        assert "``" not in text, (path, text)
        assert "][" not in text, (path, text)  # an mkdocs cross-reference


def test_research_help_is_plain_text_from_the_shell() -> None:
    shown = _cli("research", "store_backtest", "--help")
    assert shown.returncode == 0
    assert "Store one backtest of the strategy strategy_id (relation backtest_of)." in " ".join(shown.stdout.split())
    assert "``" not in shown.stdout


async def test_mcp_tool_descriptions_show_no_rest_markup(tmp_path: Path, fake_embeddings) -> None:
    with Memory.open(tmp_path / "memory", embeddings=fake_embeddings) as mem:
        tools = await build_server(mem).list_tools()
    for tool in tools:
        assert "``" not in (tool.description or ""), (tool.name, tool.description)
    described = {t.name: t.description for t in tools}
    assert "status says when it is retired or superseded" in described["get_memory"]


def test_with_json_an_error_is_a_json_object_on_stdout(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "memory")
    made = _cli("--data-dir", data_dir, "research", "store_lesson", "--lesson", "Stops too tight", "--json")
    assert made.returncode == 0, made.stderr

    cases = {
        ("get", "no-such-key"): ("NotFoundError", 1, "no memory with key 'no-such-key'"),
        ("search", "x", "--filter", "{bad"): ("UsageError", 2, "argument --filter: not valid JSON"),
        ("search",): ("UsageError", 2, "the following arguments are required: query"),
        ("research", "store_backtest", "--strategy-id", "nope", "--max-drawdown", "31"): (
            "ValidationError",
            2,
            "did you mean 0.31?",
        ),
    }
    for args, (kind, code, words) in cases.items():
        proc = _cli("--data-dir", data_dir, *args, "--json")
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        error = json.loads(proc.stdout)["error"]  # stdout holds the one JSON document
        assert (error["type"], error["exit_code"]) == (kind, code), args
        assert words in error["message"], (args, error)
        assert words in proc.stderr  # the human message is still on stderr


@pytest.mark.sqlite_only("an argument refused before any data directory is opened: the same in both passes")
def test_without_json_an_error_leaves_stdout_empty(tmp_path: Path) -> None:
    proc = _cli("--data-dir", str(tmp_path / "memory"), "search", "x", "--filter", "{bad")
    assert proc.returncode == 2 and proc.stdout == ""


def test_a_bad_namespace_says_what_a_namespace_is() -> None:
    proc = _cli("list", "/")
    assert proc.returncode == 2
    assert "argument namespace: a namespace needs at least one label, like 'memories/u1', got '/'" in proc.stderr
    assert "invalid namespace_arg value" not in proc.stderr
