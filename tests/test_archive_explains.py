"""The archive explains itself: ``get`` and ``search`` say when a memory is archived and how to restore it,
and a restore says when what came back is still hidden (retired, as it was) and how to make it searchable.

Through the installed ``langgraph-memory`` command, as a user types it, and through ``Memory.get``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from langgraph_memory import Memory
from langgraph_memory.errors import ArchivedError, NotFoundError
from tests.helpers import catalog_backend

CLI = Path(sys.executable).with_name("langgraph-memory")


def _cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # A wide, fixed terminal: tables and messages never wrap, whatever the runner's width.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "1000"}
    return subprocess.run(
        [str(CLI), "--data-dir", str(data_dir), *args], capture_output=True, text=True, env=env, timeout=300
    )


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _archive_a_lesson(data_dir: Path) -> tuple[Path, str]:
    lesson = json.loads(
        _ok(_cli(data_dir, "research", "store_lesson", "--lesson", "Tight stops get hit by noise", "--json"))
    )
    _ok(_cli(data_dir, "retire", lesson["id"], "--reason", "wrong data"))
    report = json.loads(_ok(_cli(data_dir, "archive", "run", "--json")))
    assert report["collections"]["lessons_learned"]["archived"] == 1
    return data_dir, lesson["id"]


@pytest.fixture(scope="module")
def _archived_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return _archive_a_lesson(tmp_path_factory.mktemp("archive-explains") / "memory")


@pytest.fixture
def archived_lesson(_archived_once: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    """A lesson stored, retired ("wrong data") and archived, all from the command line (a copy per test).

    The copy takes the catalog too where the run keeps it on a server (the copy `langgraph-memory migrate`
    makes); storing, retiring and archiving again per test cost 10-23 s a test there.
    """
    source, key = _archived_once
    catalog_backend.copy_data_dir(source, tmp_path / "memory")
    return tmp_path / "memory", key


def test_get_of_an_archived_memory_shows_it_and_how_to_restore_it(archived_lesson) -> None:
    data_dir, key = archived_lesson
    shown = _ok(_cli(data_dir, "get", key))
    assert "Tight stops get hit by noise" in shown
    assert "archived" in shown and "retired (wrong data)" in shown
    assert f"langgraph-memory archive restore --key {key}" in shown

    as_json = json.loads(_ok(_cli(data_dir, "get", key, "--json")))
    assert (as_json["storage"], as_json["lifecycle"], as_json["reason"]) == ("archived", "retired", "wrong data")
    assert as_json["value"]["lesson"] == "Tight stops get hit by noise"
    assert as_json["restore"] == f"langgraph-memory archive restore --key {key}"
    assert as_json["archive_file"].startswith("lessons_learned-")


def test_search_says_an_archived_memory_matches_and_how_to_restore_it(archived_lesson) -> None:
    data_dir, key = archived_lesson
    found = _cli(data_dir, "search", "stops hit by noise")
    assert found.returncode == 1  # nothing live matched
    assert "No matches." in found.stdout
    assert "in the archive" in found.stdout and key in found.stdout
    assert f"langgraph-memory archive restore --key {key}" in found.stdout


def test_restore_says_the_memory_came_back_retired_and_how_to_make_it_searchable(archived_lesson) -> None:
    data_dir, key = archived_lesson
    dry = _ok(_cli(data_dir, "archive", "restore", "--key", key, "--dry-run"))
    assert "would restore 1 item;" in dry
    assert f"{key}: retired (wrong data)" in dry and f"langgraph-memory reinstate {key}" in dry

    restored = json.loads(_ok(_cli(data_dir, "archive", "restore", "--key", key, "--json")))
    assert restored["restored"] == 1
    assert [(h["key"], h["lifecycle"], h["reason"]) for h in restored["hidden"]] == [(key, "retired", "wrong data")]

    hidden = _cli(data_dir, "search", "stops hit by noise")
    assert hidden.returncode == 1
    assert "retired or superseded" in hidden.stdout and f"langgraph-memory reinstate {key}" in hidden.stdout
    assert "--include-retired" in hidden.stdout

    _ok(_cli(data_dir, "reinstate", key))
    back = json.loads(_ok(_cli(data_dir, "search", "stops hit by noise", "--json")))
    assert [h["key"] for h in back] == [key]


def test_memory_get_of_an_archived_record_raises_archived_error_naming_the_restore(
    tmp_path: Path, fake_embeddings
) -> None:
    with Memory.open(tmp_path / "memory", embeddings=fake_embeddings) as mem:
        f = mem.store_research_finding("Carry unwinds in vol spikes", confidence=0.9)
        gone = mem.store_research_finding("deleted for good", confidence=0.9)
        mem.retire(f.id, "stale")
        assert mem.archiver.run().total_archived == 1
        with pytest.raises(ArchivedError) as exc:
            mem.get(f.id)
        assert isinstance(exc.value, NotFoundError)  # code that catches NotFoundError still does
        assert f"archive restore --key {f.id}" in str(exc.value) and "retired (stale)" in str(exc.value)
        assert mem.archived(f.id).value["content"] == "Carry unwinds in vol spikes"

        mem.store.delete(("research",), gone.id)  # gone from the store, with no archived copy
        with pytest.raises(NotFoundError, match="deleted") as deleted:
            mem.get(gone.id)
        assert not isinstance(deleted.value, ArchivedError)
