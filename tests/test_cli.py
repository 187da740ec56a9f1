"""The command line, run in-process through ``main(argv)`` against a real data directory."""

from __future__ import annotations

import json

import pytest

from langgraph_memory.cli import main
from langgraph_memory.store import ChromaStore
from tests.helpers.archive_data import make_lessons


@pytest.fixture
def seeded(data_dir, fake_embeddings):
    store = ChromaStore(data_dir=data_dir, index={"dims": 16, "embed": fake_embeddings})
    make_lessons(store, fake_embeddings, 12)
    store.close()
    return data_dir


def _run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_archive_run_dry_run_then_run_list_restore_verify(seeded, capsys, fake_embeddings):
    d = str(seeded)
    code, out = _run(capsys, "--data-dir", d, "archive", "run", "--dry-run")
    assert code == 0 and "dry run" in out and "12" in out
    code, out = _run(capsys, "--data-dir", d, "archive", "run", "--json")
    report = json.loads(out)
    assert code == 0 and report["collections"]["lessons_learned"]["archived"] == 12
    code, out = _run(capsys, "--data-dir", d, "archive", "list", "--json")
    (entry,) = json.loads(out)
    assert entry["items"] == 12 and entry["state"] == "complete" and len(entry["sha256"]) == 64
    code, out = _run(capsys, "--data-dir", d, "archive", "list")
    assert code == 0 and "Archives in" in out
    code, out = _run(capsys, "--data-dir", d, "archive", "restore", "--key", "l3", "--key", "l4")
    assert code == 0 and "restored 2" in out
    code, out = _run(capsys, "--data-dir", d, "archive", "verify")
    assert code == 0 and "0 damaged" in out
    store = ChromaStore(data_dir=seeded, index={"dims": 16, "embed": fake_embeddings})
    assert {it.key for it in store.items.iter_items("lessons")} == {"l3", "l4"}
    store.close()


def test_archive_search_prints_hits(seeded, capsys, monkeypatch, fake_embeddings):
    d = str(seeded)
    assert main(["--data-dir", d, "archive", "run"]) == 0
    capsys.readouterr()
    # The CLI's default index loads the real model; a fake one keeps this test fast.
    monkeypatch.setattr(ChromaStore, "default_index", classmethod(lambda cls, model_name=None: {"dims": 16, "embed": fake_embeddings}))
    code, out = _run(capsys, "--data-dir", d, "archive", "search", "lesson number 7 about risk",
                     "--collection", "lessons", "-k", "2", "--json")
    hits = json.loads(out)
    assert code == 0 and hits[0]["key"] == "l7" and len(hits) == 2


def test_damaged_archive_makes_verify_fail(seeded, capsys):
    d = str(seeded)
    assert main(["--data-dir", d, "archive", "run"]) == 0
    (path,) = (seeded / "archive").glob("*.jsonl.gz")
    path.write_bytes(path.read_bytes()[:-20])
    capsys.readouterr()
    code, out = _run(capsys, "--data-dir", d, "archive", "verify")
    assert code == 1 and "DAMAGED" in out


def test_list_without_archives_and_bad_usage(data_dir, capsys):
    code, out = _run(capsys, "--data-dir", str(data_dir), "archive", "list")
    assert code == 0 and "No archives" in out
    with pytest.raises(SystemExit) as exc:
        main(["archive"])
    assert exc.value.code == 2
    code, out = _run(capsys, "--data-dir", str(data_dir), "archive", "restore")
    assert code == 1 and "restore needs" in out


def test_index_check_and_rebuild(data_dir, fake_embeddings, capsys):
    store = ChromaStore(data_dir=data_dir, index={"dims": 16, "embed": fake_embeddings})
    store.put(("research",), "f1", {"content": "Carry unwinds"})
    store.put(("notes",), "n1", {"text": "a note"})
    store.close()
    code, out = _run(capsys, "--data-dir", str(data_dir), "index", "check", "--json")
    rows = {r["collection"]: r for r in json.loads(out)["collections"]}
    assert code == 0 and rows["research_findings"]["items"] == 1 and rows["research_findings"]["vectors"] == 1
    assert rows["memories"]["vectors"] == 1 and all(r["repaired"] == 0 for r in rows.values())
    code, out = _run(capsys, "--data-dir", str(data_dir), "index", "rebuild", "--json")
    assert code == 0 and json.loads(out)["vectors"] == {"research_findings": 1, "memories": 1}
    code, out = _run(capsys, "--data-dir", str(data_dir), "index", "check")
    assert code == 0 and "research_findings" in out
    store = ChromaStore(data_dir=data_dir, index={"dims": 16, "embed": fake_embeddings})
    assert store.search(("research",), query="Carry unwinds", limit=1)[0].key == "f1"
    store.close()
