"""The archive of a read-only memory: every read works on a folder the process cannot write; writes refuse.

``Memory.open(path, read_only=True)``, the CLI's ``--read-only`` and the MCP
server over such a memory list the archive, search it, read archived items
(also through lineage and stats) and verify it, and leave the folder byte
for byte as it was; an archive run, a restore, `recover()`, `forget()` and a
schedule raise ``ReadOnlyError`` (the CLI exits 2). As root, permissions are
not enforced, so the child processes drop the capabilities that bypass them
(``setpriv``, as in tests/test_read_only.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from langgraph_memory.errors import ReadOnlyError
from tests.test_read_only import CLI, HELPERS, _chmod_read_only, _env, _restore_write, _tree, _unprivileged

pytestmark = pytest.mark.sqlite_only("opens a data directory's files without writing them")


def _fill(data_dir: Path, dims: int = 16) -> tuple[str, str]:
    """Three findings and a strategy derived from the first; the first retired and archived."""
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=dims)) as mem:
        found = [
            mem.store_research_finding(f"Momentum fades after earnings {i}", source="technical", confidence=0.8)
            for i in range(3)
        ]
        strategy = mem.store_strategy("earn-mom", "Buy winners, exit before earnings", parent_id=found[0].id)
        mem.retire(found[0].id, "stale")
        assert mem.archiver.run().total_archived == 1
        return found[0].id, strategy.id


@pytest.fixture
def unwritable(tmp_path: Path):  # -> Iterator[tuple[Path, str, str, dict]]
    live = tmp_path / "live"
    live.mkdir()
    archived, strategy = _fill(live / "memory")
    ro = tmp_path / "ro"
    shutil.copytree(live / "memory", ro)
    _chmod_read_only(ro)
    before = _tree(ro)
    try:
        yield ro, archived, strategy, before
    finally:
        _restore_write(ro)


def test_every_read_of_the_archive_works_read_only_and_every_write_refuses(unwritable) -> None:
    ro, archived, strategy, before = unwritable
    cmd = _unprivileged([sys.executable, str(HELPERS / "readonly_child.py"), "archive", str(ro), archived, strategy])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=300)
    after = _tree(ro)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["can_write"] is False  # the child really could not write here
    assert out["read_only"] is True
    assert len(out["files"]) == 1 and out["files"][0].startswith("research_findings-")
    assert out["counts"] == {"research_findings": 1} and out["count"] == 1
    assert out["get"] == [archived] and out["iter"] == [archived]
    assert out["find"] == "Momentum fades after earnings 0"
    assert out["search"] == [archived]
    assert out["verify"] == {out["files"][0]: None}
    assert out["pending"] == []
    assert out["dry_run"] is True and out["restore_dry_run"] == 1
    # The strategy's parent left the store: lineage reads it from the archive, with its summary.
    assert out["lineage"] == [[archived, "Momentum fades after earnings 0 [retired: stale]"]]
    assert out["stats_archived"] == 1
    assert out["writes"] == {name: "ReadOnlyError" for name in out["writes"]}
    assert after == before


def test_cli_archive_commands_read_only(unwritable) -> None:
    ro, archived, strategy, before = unwritable

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = _unprivileged([str(CLI), "--data-dir", str(ro), "--read-only", *args])
        return subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=300)

    listed = cli("archive", "list", "--json")
    checked = cli("archive", "check", "--json")
    lineage = cli("lineage", strategy, "--json")
    run = cli("archive", "run")
    restore = cli("archive", "restore", "--key", archived)
    after = _tree(ro)
    assert listed.returncode == 0, listed.stderr
    assert [f["collection"] for f in json.loads(listed.stdout)] == ["research_findings"]
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["damaged"] == {}
    assert lineage.returncode == 0, lineage.stderr
    assert archived in lineage.stdout and "Momentum fades after earnings 0" in lineage.stdout  # read from the archive
    for refused in (run, restore):
        assert refused.returncode == 2, refused.stderr
        assert "read-only" in refused.stderr
    assert after == before


def test_cli_archive_search_read_only(tmp_path: Path, monkeypatch, capsys) -> None:
    from langgraph_memory.cli import main
    from langgraph_memory.store import ChromaStore
    from tests.conftest import FAKE_DIMS

    # The CLI embeds with the configured model; a fake one keeps this fast (in-process, as tests/test_cli.py).
    emb = DeterministicFakeEmbedding(size=FAKE_DIMS)
    monkeypatch.setattr(
        ChromaStore, "default_index", classmethod(lambda cls, model_name=None: {"dims": FAKE_DIMS, "embed": emb})
    )
    data_dir = tmp_path / "memory"
    archived, _strategy = _fill(data_dir, FAKE_DIMS)
    before = _tree(data_dir)
    code = main(
        ["--data-dir", str(data_dir), "--read-only", "archive", "search", "Momentum fades after earnings 0", "--json"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert [h["key"] for h in json.loads(out)] == [archived]
    assert _tree(data_dir) == before


async def test_mcp_over_a_read_only_memory_reads_archived_lineage(tmp_path: Path) -> None:
    from mcp import Client

    from langgraph_memory.mcp.server import build_server

    data_dir = tmp_path / "memory"
    archived, strategy = _fill(data_dir)
    before = _tree(data_dir)
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=16), read_only=True) as mem:
        async with Client(build_server(mem)) as client:
            lineage = await client.call_tool("get_lineage", {"item_id": strategy})
            stats = await client.call_tool("get_memory_stats", {})
    assert not lineage.is_error and not stats.is_error
    assert "Momentum fades after earnings 0" in str(lineage.content)
    assert archived in str(lineage.content)
    assert _tree(data_dir) == before


def test_a_read_only_memory_without_an_archive_reads_an_empty_one_and_creates_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "memory"
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=16)) as mem:
        mem.store.put(("notes",), "k", {"text": "a note"})
    shutil.rmtree(data_dir / "archive", ignore_errors=True)
    before = _tree(data_dir)
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=16), read_only=True) as mem:
        assert mem.archiver.list_archives() == [] and mem.archiver.count_archived() == 0
        assert mem.archiver.verify() == {}
        assert mem.stats().archived == 0
        with pytest.raises(ReadOnlyError, match="read-only"):
            mem.archiver.run()
        with pytest.raises(ReadOnlyError, match="read-only"):
            mem.schedule_archival(interval=3600)
    assert _tree(data_dir) == before
    assert not (data_dir / "archive").exists()


def test_a_damaged_manifest_read_only_is_reported_and_restore_refuses(tmp_path: Path, capsys) -> None:
    from langgraph_memory.cli import main

    data_dir = tmp_path / "memory"
    archived, _strategy = _fill(data_dir)
    (data_dir / "archive" / "manifest.sqlite").write_bytes(b"not a database " * 500)
    before = _tree(data_dir)
    code = main(["--data-dir", str(data_dir), "--read-only", "archive", "check", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 3 and report["manifest"] == "damaged"  # EXIT_ERROR
    code = main(["--data-dir", str(data_dir), "--read-only", "archive", "restore", "--key", archived])
    err = capsys.readouterr().err
    assert code == 3 and "manifest.sqlite" in err and "damaged" in err  # refused: CorruptFileError, not a traceback
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=16), read_only=True) as mem:
        assert mem.store.get(("research",), archived) is None  # the memory itself opens and reads
    assert _tree(data_dir) == before
