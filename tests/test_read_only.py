"""Read-only use: ``Memory.open(path, read_only=True)``, ``--read-only`` on the CLI and the MCP server.

A read-only memory reads a folder this process cannot write, and a snapshot
copied from a live folder while a writer runs, and leaves both byte for byte
as they were; every write raises ``ReadOnlyError``. As root, permissions are
not enforced, so the child processes drop the capabilities that bypass them
(``setpriv``): they cannot create a file in the folder, which each checks.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory
from langgraph_memory.errors import NotFoundError, ReadOnlyError
from langgraph_memory.store import ChromaStore

# Read-only use reads a data directory's files and writes none of them; a memory on a server is read
# through the server (its roles decide who may write), so there is nothing of this to test there.
pytestmark = pytest.mark.sqlite_only("opens a data directory's files without writing them")

HELPERS = Path(__file__).resolve().parent / "helpers"
CLI = Path(sys.executable).with_name("langgraph-memory")
ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["HF_HUB_OFFLINE"] = "1"
    return env


def _unprivileged(cmd: list[str]) -> list[str]:
    """``cmd`` run so that file permissions apply to it (root without the capabilities that bypass them)."""
    if os.geteuid() != 0:
        return cmd
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions cannot be enforced on a child")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner", "--", *cmd]


def _tree(root: Path) -> dict[str, tuple[str, int]]:
    """Every file and folder under ``root``: content hash (files) and modification time."""
    out: dict[str, tuple[str, int]] = {}
    for path in sorted(root.rglob("*")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        out[str(path.relative_to(root))] = (digest, path.stat().st_mtime_ns)
    return out


def _fill(data_dir: Path) -> tuple[str, str]:
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=16)) as mem:
        for i in range(50):
            mem.store.put(("notes",), f"k{i}", {"text": f"note {i} about momentum"})
        f = mem.store_research_finding("Momentum decays after earnings", source="technical", confidence=0.8)
        s = mem.store_strategy("earn-mom", "Buy winners, exit before earnings", parent_id=f.id)
        # A search notes accesses: a writable open would write them back; a read-only one must not.
        mem.store.search(("notes",), query="momentum", limit=5)
        return f.id, s.id


def _chmod_read_only(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode & ~0o222)


def _restore_write(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)


def _child(data_dir: Path, finding: str, strategy: str) -> dict:
    cmd = _unprivileged(
        [sys.executable, str(HELPERS / "readonly_child.py"), "memory", str(data_dir), finding, strategy]
    )
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _check_child(out: dict, finding: str) -> None:
    assert out["read_only"] is True
    assert out["get"] == {"text": "note 3 about momentum"}
    assert out["search"][0] == "k7"  # exact scoring: the text embedded as the query is the top hit
    assert out["explain"] == "exact"
    assert ["notes"] in out["list"] and ["research"] in out["list"]
    assert out["findings"] == [finding]
    assert out["lineage"] == [finding]
    assert out["stats_items"] == 52
    assert out["threads"] == 0
    assert out["writes"] == {name: "ReadOnlyError" for name in out["writes"]}


def test_a_folder_the_process_cannot_write_is_read_and_left_untouched(tmp_path: Path) -> None:
    live = tmp_path / "live"
    finding, strategy = _fill(live)
    ro = tmp_path / "ro"
    shutil.copytree(live, ro)
    _chmod_read_only(ro)
    before = _tree(ro)
    try:
        out = _child(ro, finding, strategy)
    finally:
        after = _tree(ro)
        _restore_write(ro)
    assert out["can_write"] is False  # the child really could not write here
    _check_child(out, finding)
    assert after == before


def test_a_snapshot_copied_from_a_live_folder_while_a_writer_runs(tmp_path: Path) -> None:
    live = tmp_path / "live"
    finding, strategy = _fill(live)
    writer = subprocess.Popen(
        [sys.executable, "-u", str(HELPERS / "readonly_writer.py"), str(live)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    snapshots: list[tuple[Path, int]] = []
    try:
        assert writer.stdout is not None
        acked = 0
        for n in range(3):
            # Readiness through output: the writer says how many puts were committed so far.
            target = acked + 20
            while acked < target:
                line = writer.stdout.readline()
                assert line, writer.stderr.read() if writer.stderr else "writer exited"
                acked = int(line.split()[1])
            snap = tmp_path / f"snap{n}"
            subprocess.run(["cp", "-r", str(live), str(snap)], check=True)
            snapshots.append((snap, acked))
    finally:
        writer.terminate()
        writer.wait(timeout=60)
    for snap, acked in snapshots:
        _chmod_read_only(snap)
        before = _tree(snap)
        try:
            out = _child(snap, finding, strategy)
        finally:
            after = _tree(snap)
            _restore_write(snap)
        assert out["can_write"] is False
        assert out["get"] == {"text": "note 3 about momentum"}
        assert out["findings"] == [finding] and out["lineage"] == [finding]
        assert out["writes"] == {name: "ReadOnlyError" for name in out["writes"]}
        # Every put acknowledged before the copy began is in the snapshot.
        assert out["stats_items"] >= 52 + acked
        assert after == before


def test_a_writable_folder_opened_read_only_is_not_written_either(tmp_path: Path) -> None:
    data_dir = tmp_path / "memory"
    finding, _ = _fill(data_dir)
    before = _tree(data_dir)
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=16), read_only=True) as mem:
        for _ in range(3):
            assert mem.store.search(("notes",), query="momentum", limit=5)
            assert mem.store.get(("notes",), "k1") is not None
        assert mem.get(finding).id == finding
        with pytest.raises(ReadOnlyError, match="read-only"):
            mem.store.put(("notes",), "k1", {"text": "changed"})
        with pytest.raises(ReadOnlyError):
            mem.sessions.add_turn("hi", "hello")
        assert mem.store.start_ttl_sweeper().done()  # nothing to sweep: a read-only store deletes nothing
    assert _tree(data_dir) == before


def test_read_only_open_of_a_missing_folder_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(NotFoundError, match="no memory to read"):
        Memory.open(missing, embeddings=False, read_only=True)
    with pytest.raises(NotFoundError):
        ChromaStore(data_dir=missing, read_only=True)
    assert not missing.exists()


def test_cli_read_only_reads_an_unwritable_folder_and_refuses_writes(tmp_path: Path) -> None:
    live = tmp_path / "live"
    finding, _ = _fill(live)
    ro = tmp_path / "ro"
    shutil.copytree(live, ro)
    _chmod_read_only(ro)
    before = _tree(ro)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = _unprivileged([str(CLI), "--data-dir", str(ro), *args])
        return subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=300)

    try:
        listed = cli("--read-only", "list", "--json")
        got = cli("get", finding, "--json", "--read-only")
        stats = cli("--read-only", "stats", "--json")
        retire = cli("--read-only", "retire", finding, "--reason", "test")
        plain = cli("stats")
    finally:
        after = _tree(ro)
        _restore_write(ro)
    assert listed.returncode == 0, listed.stderr
    assert {
        tuple(r["namespace"]) if isinstance(r["namespace"], list) else r["namespace"]
        for r in json.loads(listed.stdout)["namespaces"]
    }
    assert got.returncode == 0, got.stderr
    assert finding in got.stdout
    assert stats.returncode == 0, stats.stderr
    assert retire.returncode == 2 and "read-only" in retire.stderr
    # Without --read-only the folder cannot be opened, and the message says what to do.
    assert plain.returncode == 2 and "--read-only" in plain.stderr
    assert after == before


async def test_mcp_server_over_a_read_only_memory_offers_only_the_tools_that_read(tmp_path: Path) -> None:
    from mcp import Client

    from langgraph_memory.mcp.server import MemoryTools, build_server

    data_dir = tmp_path / "memory"
    _fill(data_dir)
    before = _tree(data_dir)
    with Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=16), read_only=True) as mem:
        async with Client(build_server(mem)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            found = await client.call_tool("search_memory", {"query": "momentum"})
    assert names == [t for t in MemoryTools.TOOLS if t not in MemoryTools.WRITES]
    assert "get_lineage" in names and "store_memory" not in names
    assert not found.is_error
    assert _tree(data_dir) == before


def test_a_read_only_store_beside_a_live_writer_sees_each_acknowledged_put(tmp_path: Path) -> None:
    live = tmp_path / "live"
    index = {"dims": 16, "embed": DeterministicFakeEmbedding(size=16)}
    with ChromaStore(data_dir=live, index=index) as store:
        store.put(("live",), "seed", {"text": "seed"})
    writer = subprocess.Popen(
        [sys.executable, "-u", str(HELPERS / "readonly_writer.py"), str(live)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert writer.stdout is not None
        first = writer.stdout.readline()
        assert first, writer.stderr.read() if writer.stderr else "writer exited"
        with ChromaStore(data_dir=live, index=index, read_only=True) as ro:
            for _ in range(20):
                acked = int(writer.stdout.readline().split()[1])
                # Every put the writer acknowledged before this read is seen (and the seed).
                assert len(ro.search(("live",), limit=100_000)) >= acked + 1
    finally:
        writer.terminate()
        writer.wait(timeout=60)


async def test_a_read_only_checkpointer_of_a_missing_file_reads_empty_and_refuses_writes(tmp_path: Path) -> None:
    from langgraph_memory.checkpoint import SqliteCheckpointer

    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    checkpoint = {"v": 1, "id": "1", "ts": "", "channel_values": {}, "channel_versions": {}, "versions_seen": {}}
    with SqliteCheckpointer(tmp_path / "none.sqlite", read_only=True) as saver:
        assert list(saver.list(None)) == [] and saver.get_tuple(config) is None
        with pytest.raises(ReadOnlyError, match="read-only"):
            saver.put(config, checkpoint, {}, {})  # type: ignore[arg-type]
        with pytest.raises(ReadOnlyError):
            await saver.aput(config, checkpoint, {}, {})  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []
