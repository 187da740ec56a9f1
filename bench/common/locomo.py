"""LoCoMo conversations as the recall benches read them: turns with their session's time, and the questions asked.

conv = json.loads((DATA / "26.json").read_text())
for t in turns(conv): ...           # {"dia_id", "text": "speaker: text", "at": epoch seconds}
for qa in questions(conv): ...      # categories 1-4 that name their evidence
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

__all__ = ["CATEGORIES", "DATA", "EMBED_CACHE", "questions", "session_time", "turns"]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_BENCH = Path(__file__).resolve().parents[1]
# The model's vectors of every turn and question, kept between runs (bench/.cache is not committed).
EMBED_CACHE = _BENCH / ".cache" / "locomo-embeddings.sqlite"
# ../shared/data/locomo beside the checkout (worktrees sit one level deeper).
DATA = next(
    (d for d in (_BENCH.parents[i] / "shared" / "data" / "locomo" for i in (1, 2)) if d.is_dir()),
    _BENCH.parents[1] / "shared" / "data" / "locomo",
)


def session_time(text: str) -> float:
    """``"1:56 pm on 8 May, 2023"`` as seconds since the epoch (UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC).timestamp()


def turns(conv: dict) -> list[dict]:
    """Each turn as ``{"dia_id", "speaker", "text": "speaker: text [shares a photo: ...]", "at", "session"}``.

    ``at`` is its session's time, ``session`` the session's number (from 1).
    """
    out = []
    c = conv.get("conversation", conv)
    n = 1
    while f"session_{n}" in c:
        when = session_time(c[f"session_{n}_date_time"])
        for turn in c[f"session_{n}"]:
            text = turn["text"]
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            out.append(
                {
                    "dia_id": turn["dia_id"],
                    "speaker": turn["speaker"],
                    "text": f"{turn['speaker']}: {text}",
                    "at": when,
                    "session": n,
                }
            )
        n += 1
    return out


def questions(conv: dict) -> list[dict]:
    """The questions of categories 1-4 that name their evidence turns."""
    return [qa for qa in conv["qa"] if qa.get("category") in CATEGORIES and qa.get("evidence")]
