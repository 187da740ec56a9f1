"""Where each file type may be cut, and how good each cut is.

A cut position is where the next chunk would start. Each file type ranks
its cuts in levels (higher is better); sections found by the readers
(headings, top-level ``def``/``class``, pages, YAML keys) rank above all of
these and are handled by the chunker itself:

=========  ==================================  ===================  =============
type       level 3                             level 2              level 1
=========  ==================================  ===================  =============
prose      paragraph (blank line)              sentence end         line end
python     a nested ``def``/``class``/``@``    blank line           line end
yaml       a line at column 0                  blank line           line end
csv        a record end (quotes balanced)
=========  ==================================  ===================  =============

Level 0 is any whitespace (a word boundary). Cuts at or above
``semantic_level`` count as semantic boundaries in a chunk's metadata.

    >>> rules = rules_for("text")
    >>> text = "One. Two is longer.\\n\\nNew paragraph here."
    >>> [(lvl, rules.positions(text, lvl, 0, len(text), row_start=0)) for lvl in (3, 2)]
    [(3, [21]), (2, [5, 21])]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

__all__ = ["Rules", "rules_for"]

_LOOKBACK = 8


@dataclass(frozen=True)
class Rules:
    """The cut positions of one file type, by level.

    Attributes:
        patterns: ``(level, regex)``, one per level; a match's end is a cut position.
        semantic_level: cuts at this level or above are semantic boundaries.
        overlap_level: where an overlap may begin (a sentence start for prose,
            a line start for code, a record start for CSV).
        quoted_records: cuts of level 3 are the record ends of a CSV file.
    """

    patterns: tuple[tuple[int, re.Pattern[str]], ...]
    semantic_level: int
    overlap_level: int
    quoted_records: bool = False

    @cached_property
    def levels(self) -> list[int]:
        """The levels this file type cuts at, strongest first."""
        return sorted({lvl for lvl, _ in self.patterns} | ({3} if self.quoted_records else set()), reverse=True)

    def positions(self, text: str, level: int, lo: int, hi: int, *, row_start: int) -> list[int]:
        """The cut positions ``p`` of one level with ``lo <= p <= hi``, in order.

        ``row_start`` is where the current chunk starts (a record start, for
        CSV). Patterns may look at a few characters past ``hi``.
        """
        if self.quoted_records and level == 3:
            return _record_ends(text, lo, hi, row_start)
        end = min(len(text), hi + 80)
        out: list[int] = []
        for lvl, pattern in self.patterns:
            if lvl == level:
                out.extend(p for m in pattern.finditer(text, max(0, lo - _LOOKBACK), end) if lo <= (p := m.end()) <= hi)
        return out  # one pattern per level: already in order


def _record_ends(text: str, lo: int, hi: int, row_start: int) -> list[int]:
    """Positions after a line end where the quotes since ``row_start`` balance (RFC 4180 doubles quotes)."""
    out: list[int] = []
    quotes = text.count('"', row_start, lo) % 2
    pos = lo
    while True:
        nl = text.find("\n", pos, hi)
        if nl < 0:
            return out
        quotes = (quotes + text.count('"', pos, nl)) % 2
        if quotes == 0:
            out.append(nl + 1)
        pos = nl + 1


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_WORD = (0, _rx(r"\s+"))
_LINE = (1, _rx(r"\n"))

_PROSE = Rules(
    patterns=(
        (3, _rx(r"\n[ \t]*\n\s*")),
        (2, _rx(r"[.!?\u2026][\"'\u201d\u2019)\]]*\s+")),
        _LINE,
        _WORD,
    ),
    semantic_level=2,
    overlap_level=2,
)

_PYTHON = Rules(
    patterns=(
        (3, _rx(r"\n(?=[ \t]*(?:@|(?:async[ \t]+)?(?:def|class)[ \t]))")),
        (2, _rx(r"\n[ \t]*\n")),
        _LINE,
        _WORD,
    ),
    semantic_level=2,
    overlap_level=1,
)

_YAML = Rules(
    patterns=((3, _rx(r"\n(?=[^\s#])")), (2, _rx(r"\n[ \t]*\n")), _LINE, _WORD),
    semantic_level=2,
    overlap_level=1,
)

_CSV = Rules(patterns=(_WORD,), semantic_level=3, overlap_level=3, quoted_records=True)

_BY_TYPE = {"text": _PROSE, "markdown": _PROSE, "pdf": _PROSE, "python": _PYTHON, "yaml": _YAML, "csv": _CSV}


def rules_for(file_type: str) -> Rules:
    """The cut rules of a file type (prose rules for a type without its own)."""
    return _BY_TYPE.get(file_type, _PROSE)
