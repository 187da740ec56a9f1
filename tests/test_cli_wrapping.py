"""A path in a CLI message is never wrapped, at any terminal width or path length (users copy it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_memory.cli import main


@pytest.mark.parametrize("columns", ["20", "45", "80", "400"])
def test_error_paths_are_never_wrapped(data_dir: Path, tmp_path: Path, capsys, monkeypatch, columns: str) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    deep = tmp_path / "a folder with spaces" / ("long-name-" * 12) / "missing does not exist here"
    code = main(["--data-dir", str(data_dir), "ingest", str(deep)])
    captured = capsys.readouterr()
    assert code == 2
    assert str(deep) in captured.out + captured.err, captured
    code = main(["--data-dir", str(deep), "stats"])
    captured = capsys.readouterr()
    assert code == 2 and str(deep) in captured.out + captured.err, captured
