"""Chat transcripts ingested as conversations: each message a turn, ranked with its neighbours without configuration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from langgraph_memory import Memory
from langgraph_memory.errors import TranscriptFormatError, UnsupportedFileTypeError
from langgraph_memory.ingest.transcripts import parse_text

NS = ("documents",)

# LoCoMo-like: two speakers, dated messages; the answer's date sits in the turn before the one naming the group.
TRANSCRIPT = """\
[2023-05-08 13:56] Caroline: Hey Mel! Good to see you! How have you been?
[2023-05-08 13:57] Melanie: Hey Caroline! I'm swamped with the kids and work. What's up with you?
[2023-05-08 13:58] Caroline: Yesterday was a big day for me, it was so powerful.
[2023-05-08 13:59] Caroline: I went to a LGBTQ support group and met people with stories like mine.
[2023-05-08 14:00] Melanie: Wow, that's cool, Caroline! What happened that was so awesome?
[2023-05-08 14:01] Caroline: The transgender stories were so inspiring,
and I felt accepted for who I am.
[2023-05-08 14:02] Melanie: That's great. I signed up for a pottery class last week.
"""


def _ingest(mem: Memory, path: Path) -> None:
    report = mem.ingest(path, chunker="conversation")
    assert report.counts()["ingested"] == 1, report.counts()


def test_a_transcript_is_stored_as_turns_that_search_ranks_with_their_neighbours(
    tmp_path: Path, real_embeddings
) -> None:
    path = tmp_path / "chat.txt"
    path.write_text(TRANSCRIPT)
    with Memory.open(tmp_path / "m", embeddings=real_embeddings) as mem:
        _ingest(mem, path)
        items = mem.store.search(NS, limit=100)
        found = mem.store.search_explained(NS, query="When did Caroline go to the LGBTQ support group?", limit=4)
    assert len(items) == 7  # the continued line belongs to its message
    by_pos = {int(it.key.rsplit(":", 1)[1]): it.value for it in items}
    assert by_pos[5]["text"] == "The transgender stories were so inspiring,\nand I felt accepted for who I am."
    assert by_pos[0]["kind"] == "turn" and by_pos[0]["speaker"] == "Caroline"
    assert by_pos[0]["timestamp"] == pytest.approx(1683554160.0)  # 2023-05-08 13:56 UTC
    assert by_pos[3]["content"].startswith("Caroline: I went to a LGBTQ support group")
    assert found.ranking == "hybrid"
    assert found.hits[0].item.key.endswith(":3")
    for hit in found.hits:
        assert hit.parts is not None and "turn with neighbours" in hit.parts.why, hit.parts
    assert any(h.parts is not None and h.parts.neighbour is not None for h in found.hits)


def test_json_and_jsonl_transcripts_take_role_or_speaker_and_times(tmp_path: Path, real_embeddings) -> None:
    messages = [
        {"role": "user", "content": "Which lookback did the momentum backtest use?", "timestamp": 1700000000},
        {"role": "assistant", "content": "It used a 60-day lookback.", "created_at": "2023-11-14T22:14:00+00:00"},
    ]
    (tmp_path / "a.json").write_text(json.dumps({"messages": messages}))
    (tmp_path / "b.jsonl").write_text("\n".join(json.dumps({"speaker": "Ann", "text": f"note {i}"}) for i in range(3)))
    with Memory.open(tmp_path / "m", embeddings=real_embeddings) as mem:
        report = mem.ingest([tmp_path / "a.json", tmp_path / "b.jsonl"], chunker="conversation")
        values = [it.value for it in mem.store.search(NS, limit=100)]
    assert report.counts()["ingested"] == 2
    assert sorted(v["speaker"] for v in values) == ["Ann", "Ann", "Ann", "assistant", "user"]
    answer = next(v for v in values if v["speaker"] == "assistant")
    assert answer["timestamp"] == pytest.approx(1700000040.0) and answer["kind"] == "turn"


def test_a_changed_transcript_supersedes_its_earlier_turns(tmp_path: Path, real_embeddings) -> None:
    path = tmp_path / "chat.txt"
    path.write_text("Ann: first plan is to buy bonds\nBo: fine\n")
    with Memory.open(tmp_path / "m", embeddings=real_embeddings) as mem:
        _ingest(mem, path)
        path.write_text("Ann: new plan is to buy equities\nBo: fine\nAnn: agreed then\n")
        report = mem.ingest(path, chunker="conversation")
        live = [it.value["content"] for it in mem.store.search(NS, limit=100)]
    assert report.ingested[0].replaced_keys and len(report.ingested[0].replaced_keys) == 2
    assert sorted(live) == ["Ann: agreed then", "Ann: new plan is to buy equities", "Bo: fine"]


def test_a_file_that_is_not_a_transcript_is_refused_and_nothing_is_stored(tmp_path: Path, real_embeddings) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("Just some notes without any speaker.\nAnn: hello\n")
    with Memory.open(tmp_path / "m", embeddings=real_embeddings) as mem:
        with pytest.raises(TranscriptFormatError, match="line 1"):
            mem.ingest(path, chunker="conversation")
        assert mem.store.search(NS, limit=10) == []


def test_json_is_read_only_as_a_transcript(tmp_path: Path, real_embeddings) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "data.json").write_text("[]")
    (tmp_path / "docs" / "a.md").write_text("# Notes\nSome text about bonds.\n")
    with Memory.open(tmp_path / "m", embeddings=real_embeddings) as mem:
        with pytest.raises(UnsupportedFileTypeError, match="conversation"):
            mem.ingest(tmp_path / "docs" / "data.json")
        counts = mem.ingest(tmp_path / "docs").counts()  # in a folder: skipped, as before
    assert counts["ingested"] == 1 and counts["skipped"] == 1


def test_bad_times_are_named_with_their_line() -> None:
    with pytest.raises(TranscriptFormatError, match="line 2"):
        parse_text("Ann: hi\n[yesterday noon] Bo: hello\n")


def test_the_cli_ingests_a_transcript_as_a_conversation(tmp_path: Path) -> None:
    path = tmp_path / "chat.txt"
    path.write_text(TRANSCRIPT)
    cli = str(Path(sys.executable).with_name("langgraph-memory"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "1000"}
    data = str(tmp_path / "m")
    subprocess.run(
        [cli, "--data-dir", data, "ingest", str(path), "--chunker", "conversation"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    out = subprocess.run(
        [cli, "--data-dir", data, "search", "LGBTQ support group", "--namespace", "documents", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    ).stdout
    assert "I went to a LGBTQ support group" in out and '"turn"' in out
