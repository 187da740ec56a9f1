"""Opening a data directory that cannot be one: typed errors that name the path and the fix, nothing written."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from langgraph_memory import Memory
from langgraph_memory.errors import ConfigError, MemoryNotFoundError, ReadOnlyError
from langgraph_memory.store import ChromaStore
from tests.helpers.tmpfs import remount_read_only, tmpfs

CLI = Path(sys.executable).with_name("langgraph-memory")


def test_an_empty_data_dir_is_refused_and_the_current_directory_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="data_dir is empty"):
        Memory.open("", embeddings=False)
    with pytest.raises(ConfigError, match="data_dir is empty"):
        ChromaStore(data_dir="  ")
    assert os.listdir(tmp_path) == []


def test_a_path_that_cannot_hold_a_folder_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError) as info:
        Memory.open("/proc/nope", embeddings=False)
    assert "/proc/nope" in str(info.value) and "--data-dir" in str(info.value)
    assert not isinstance(info.value, FileNotFoundError)


@pytest.mark.parametrize("existing", [True, False], ids=["empty-folder", "new-folder"])
def test_a_folder_that_cannot_be_written_is_a_read_only_error_before_any_other_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, existing: bool
) -> None:
    with tmpfs(tmp_path, "4m") as mnt:
        target = mnt / "memory"
        if existing:
            target.mkdir()
        remount_read_only(mnt)
        with caplog.at_level(logging.WARNING), pytest.raises(ReadOnlyError) as info:
            Memory.open(target, embeddings=False)
        message = str(info.value)
        assert str(target) in message and "read_only=True" in message and "--data-dir" in message
        # The embedding cache was never tried: the folder's problem is the one reported.
        assert not [r for r in caplog.records if "embedding cache" in r.getMessage()]
        done = subprocess.run(
            [str(CLI), "--data-dir", str(target), "ingest", str(tmp_path)], capture_output=True, text=True
        )
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and "PermissionError" not in done.stderr
        assert str(target) in done.stderr


@pytest.mark.sqlite_only(
    "a memory on a server always exists (its tables are made on open); only a folder can be no memory"
)
def test_opening_without_create_leaves_a_folder_that_is_no_memory_untouched(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "readme.txt").write_text("my own notes")
    with pytest.raises(MemoryNotFoundError, match="is not a memory") as info:
        Memory.open(folder, embeddings=False, create=False)
    assert info.value.path == folder and isinstance(info.value, ConfigError)
    with pytest.raises(MemoryNotFoundError):
        Memory.open(tmp_path / "missing", embeddings=False, create=False)
    assert sorted(os.listdir(folder)) == ["readme.txt"]
    assert not (tmp_path / "missing").exists()
    Memory.open(folder / "memory", embeddings=False).close()  # made once ...
    Memory.open(folder / "memory", embeddings=False, create=False).close()  # ... then opened without create


@pytest.mark.sqlite_only(
    "a memory on a server always exists (its tables are made on open); only a folder can be no memory"
)
@pytest.mark.parametrize(
    "command",
    [
        ["search", "x"],
        ["get", "some-key"],
        ["list"],
        ["stats"],
        ["lineage", "some-id"],
        ["versions", "x"],
        ["index", "check"],
    ],
    ids=" ".join,
)
def test_a_read_command_on_a_folder_that_is_no_memory_says_so_and_writes_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    folder = tmp_path / "notamemory"
    folder.mkdir()
    (folder / "readme.txt").write_text("not a memory")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGGRAPH_MEMORY_")}
    done = subprocess.run(
        [str(CLI), "--data-dir", str(folder), *command], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "is not a memory" in done.stderr and str(folder) in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(os.listdir(folder)) == ["readme.txt"]
    assert sorted(os.listdir(tmp_path)) == ["notamemory"]


@pytest.mark.sqlite_only("the PostgreSQL test mode maps every folder, the target too, onto the server")
def test_migrating_into_a_folder_that_cannot_be_made_is_a_typed_error(tmp_path: Path, pg_database: str) -> None:
    Memory.open(pg_database, local_dir=tmp_path / "local", embeddings=False).close()
    done = subprocess.run(
        [str(CLI), "migrate", pg_database, "/proc/nope", "--local-dir", str(tmp_path / "local")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr
    assert "/proc/nope" in done.stderr and "Traceback" not in done.stderr
