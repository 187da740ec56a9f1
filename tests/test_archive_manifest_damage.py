"""A damaged archive manifest: memory still opens, ``archive check`` reports it, restore refuses with a typed error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langgraph_memory import Memory
from langgraph_memory.cli import main
from langgraph_memory.errors import CorruptFileError


def test_damaged_manifest(data_dir: Path, fake_embeddings, capsys) -> None:
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        mem.store.put(("notes",), "a", {"text": "hello"})
        mem.archiver.run()
    manifest = data_dir / "archive" / "manifest.sqlite"
    assert manifest.exists()
    manifest.write_bytes(b"not a database " * 500)
    with Memory.open(data_dir, embeddings=fake_embeddings) as mem:
        assert mem.store.get(("notes",), "a").value == {"text": "hello"}
        with pytest.raises(CorruptFileError):
            mem.archiver.restore(all_items=True)
    capsys.readouterr()
    code = main(["--data-dir", str(data_dir), "archive", "check", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 3 and report["manifest"] == "damaged" and "manifest" in report["reason"]
    code = main(["--data-dir", str(data_dir), "archive", "restore", "--all"])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err and "manifest" in err
