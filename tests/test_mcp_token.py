"""The MCP server's bearer token: from a file or the environment rather than the command line, and the
``Bearer`` scheme matched case-insensitively (RFC 7235)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from langgraph_memory.cli import main

HELPER = Path(__file__).resolve().parent / "helpers" / "mcp_fake_server.py"
TOKEN = "file-token-0123456789abcdef"


def _status(url: str, authorization: str | None) -> int:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if authorization is not None:
        headers["authorization"] = authorization
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_token_file_and_case_insensitive_scheme(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    env = {k: v for k, v in os.environ.items() if k != "LANGGRAPH_MEMORY_MCP_TOKEN"}
    env["HF_HUB_OFFLINE"] = "1"
    proc = subprocess.Popen(
        [
            sys.executable,
            str(HELPER),
            "--data-dir",
            str(tmp_path / "memory"),
            "mcp",
            "--transport",
            "http",
            "--port",
            "0",
            "--token-file",
            str(token_file),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        url = None
        lines: list[str] = []
        while url is None:  # ready once it says where it listens
            line = proc.stderr.readline()
            assert line, "".join(lines)
            lines.append(line)
            m = re.search(r"listening on (http://\S+)", line)
            url = m.group(1) if m else None
        threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True).start()
        assert not any("--token" in line and "warning" in line.lower() for line in lines)
        assert _status(url, None) == 401
        assert _status(url, "Bearer wrong-token-0123456789") == 401
        for scheme in ("Bearer", "bearer", "BEARER"):
            assert _status(url, f"{scheme} {TOKEN}") != 401, scheme
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_token_on_the_command_line_warns(tmp_path: Path, capsys) -> None:
    # An address that check_bind refuses stops the command before it opens anything; the warning comes first.
    code = main(
        ["--data-dir", str(tmp_path / "m"), "mcp", "--transport", "http", "--host", "0.0.0.0", "--token", "t" * 32]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "--token-file" in err and "ps" in err


@pytest.mark.parametrize("content", [None, "", "  \n"])
def test_a_missing_or_empty_token_file_is_a_config_error(tmp_path: Path, capsys, content: str | None) -> None:
    token_file = tmp_path / "token"
    if content is not None:
        token_file.write_text(content)
    code = main(["--data-dir", str(tmp_path / "m"), "mcp", "--transport", "http", "--token-file", str(token_file)])
    err = capsys.readouterr().err
    assert code == 2 and str(token_file) in err and "Traceback" not in err
