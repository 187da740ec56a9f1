"""``langgraph-memory ingest``, in-process through ``main(argv)``, with the default model end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langgraph_memory import Memory
from langgraph_memory.cli import main
from tests.helpers.ingest_docs import write_corpus


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.slow
def test_ingest_command_with_the_default_model(data_dir: Path, tmp_path: Path, capsys, real_embeddings) -> None:
    docs = tmp_path / "docs"
    files = write_corpus(docs)
    d = str(data_dir)
    code, out = _run(capsys, "--data-dir", d, "ingest", str(docs), "--episode-id", "DS-25-002")
    assert code == 0, out
    assert "Ingest into documents" in out
    assert [line.split("│")[2].strip() for line in out.splitlines() if "ingested" in line] == ["7"]
    code, out = _run(capsys, "--data-dir", d, "ingest", str(docs), "--json")
    report = json.loads(out)
    assert code == 0 and report["counts"] == {"ingested": 0, "duplicate": 7, "busy": 0, "skipped": 1, "failed": 0}
    assert report["chunks"] == 0
    # The chunks carry the episode and are found by meaning with the default model.
    with Memory.open(d, embeddings=real_embeddings) as mem:
        hit = mem.recall("Kelly fraction for a bet with a win rate and payoff", k=1)[0]
        assert hit.source_uri == files["python"].as_uri() and hit.episode_id == "DS-25-002"
        assert "kelly_fraction" in hit.content


def test_ingest_command_reports_failures_and_bad_paths(data_dir: Path, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "docs"
    bad.mkdir()
    (bad / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    d = str(data_dir)
    code, out = _run(capsys, "--data-dir", d, "ingest", str(bad), "--namespace", "documents/desk")
    assert code == 3  # a file failed
    assert "Failed files" in out and str(bad / "latin.txt") in out  # the path shown whole
    code = main(["--data-dir", d, "ingest", str(bad), "--json"])
    (failed,) = json.loads(capsys.readouterr().out)["files"]
    assert code == 3 and failed["status"] == "failed" and "byte offset 3" in failed["reason"]
    code, out = _run(capsys, "--data-dir", d, "ingest", str(tmp_path / "missing"))
    assert code == 2 and "does not exist" in out  # bad usage: a path that is not there
    code, out = _run(capsys, "--data-dir", d, "ingest", str(bad / "latin.txt"), "--namespace", "research")
    assert code == 2 and "typed label" in out
