"""Chat transcripts read as conversations: one stored turn per message (``IngestConfig(chunker="conversation")``).

The formats, by extension (``docs/ingestion.md`` says more): ``.txt``/``.md`` one message per line,
``Speaker: text``, optionally after a time in brackets; ``.json`` a list of messages (or ``{"messages": [...]}``)
and ``.jsonl`` one a line, each an object with ``content`` or ``text``, ``speaker``, ``name`` or ``role``, and
optionally ``timestamp``, ``time`` or ``created_at``.

    >>> [(t.speaker, t.text) for t in parse_text("[2023-05-08 13:56] Ann: Hi!\\nBo: Hello,\\nhow are you?\\n")]
    [('Ann', 'Hi!'), ('Bo', 'Hello,\\nhow are you?')]
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langgraph_memory.errors import TranscriptFormatError
from langgraph_memory.ingest.readers import decode_pieces

__all__ = ["Message", "parse_text", "parse_json", "read_transcript"]

# A speaker's name: a few words (letters, digits, spaces, . ' _ -), then a colon and a space.
_TURN = re.compile(r"^(?:\[(?P<at>[^\]]{4,40})\]\s*)?(?P<speaker>[\w][\w .'\-]{0,39}):\s+(?P<text>\S.*)$")


@dataclass(frozen=True)
class Message:
    """One message of a transcript: who said it, what, and when (seconds since the epoch; None: not given)."""

    speaker: str
    text: str
    at: float | None = None


def _time(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.strip())
        except ValueError:
            pass
        else:
            return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()
    raise TranscriptFormatError(f"{where}: {value!r} is not a time (ISO 8601, or seconds since the epoch)")


def parse_text(text: str, source: str = "transcript") -> list[Message]:
    """The messages of a text transcript (lines ``[time] Speaker: text``; see the module docstring).

    Raises:
        TranscriptFormatError: the first line with text does not open a message, or a time does not parse.
    """
    out: list[tuple[str, list[str], float | None]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _TURN.match(line.strip())
        if m is None:
            if not out:
                raise TranscriptFormatError(
                    f"{source}, line {number}: {line.strip()[:60]!r} does not open a message;"
                    " a transcript's lines read 'Speaker: text' (optionally '[time] Speaker: text')"
                )
            out[-1][1].append(line.strip())
            continue
        out.append((m["speaker"].strip(), [m["text"].strip()], _time(m["at"], f"{source}, line {number}")))
    return [Message(speaker, "\n".join(lines), at) for speaker, lines, at in out]


def _message(obj: Any, where: str) -> Message:
    if not isinstance(obj, dict):
        raise TranscriptFormatError(f"{where}: a message must be an object, got {type(obj).__name__}")
    text = obj.get("content", obj.get("text"))
    if not isinstance(text, str):
        raise TranscriptFormatError(f"{where}: a message needs its text as a string in 'content' or 'text'")
    speaker = next((obj[k] for k in ("speaker", "name", "role") if isinstance(obj.get(k), str)), None)
    if speaker is None:
        raise TranscriptFormatError(f"{where}: a message needs its speaker in 'speaker', 'name' or 'role'")
    at = next((obj[k] for k in ("timestamp", "time", "created_at") if obj.get(k) is not None), None)
    return Message(speaker, text, _time(at, where))


def parse_json(text: str, source: str = "transcript", *, lines: bool = False) -> list[Message]:
    """The messages of a JSON transcript (a list, ``{"messages": [...]}``, or with ``lines`` one per line).

    Raises:
        TranscriptFormatError: the text is not such JSON, or a message lacks its text or speaker.
    """
    items: Any
    try:
        if lines:
            items = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
            items = data.get("messages") if isinstance(data, dict) else data
    except json.JSONDecodeError as exc:
        raise TranscriptFormatError(f"{source}: not JSON ({exc})") from exc
    if not isinstance(items, list):
        raise TranscriptFormatError(f"{source}: a JSON transcript is a list of messages, or an object with 'messages'")
    return [_message(obj, f"{source}, message {i + 1}") for i, obj in enumerate(items)]


def read_transcript(path: Path, source: str) -> list[Message]:
    """The messages of the transcript file ``path`` (the format by its extension), those without text left out.

    The whole file is read at once (a transcript of 10,000 messages is a few megabytes), decoded as ingest
    decodes text (its BOM, else UTF-8).
    """
    text = "".join(decode_pieces(path, "text"))
    suffix = path.suffix.lower()
    if suffix in (".json", ".jsonl"):
        found = parse_json(text, source, lines=suffix == ".jsonl")
    else:
        found = parse_text(text, source)
    return [m for m in found if m.text.strip()]
