"""Readers: a file's text as a stream of `Block` s, with its structure.

Each reader decodes its file piece by piece (a few tens of kilobytes at a
time, whatever the file's size) and marks where the file's own sections
begin, so the chunker can cut there:

========  ==========================================================
markdown  ATX headings (``#`` to ``######``) outside fenced code; the
          title is the heading path ("Install > Linux")
python    top-level ``def``/``class`` blocks, with their decorators
          (outside triple-quoted strings), and the module code between them
yaml      top-level keys and ``---`` document separators
csv       the header row, handed to every block as its ``prefix``
text      none: paragraphs and sentences are the chunker's business
pdf       pages (see `langgraph_memory.ingest.pdf`)
========  ==========================================================

::

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "notes.md"
    >>> _ = path.write_text("Intro\\n# Setup\\nRun it.\\n## Linux\\napt install\\n")
    >>> [(b.start, b.title) for b in read_blocks(path, "markdown") if b.section]
    [(6, 'Setup'), (22, 'Setup > Linux')]
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from langgraph_memory.errors import UnsupportedFileTypeError
from langgraph_memory.ingest.encoding import Decoder, file_encoding
from langgraph_memory.ingest.files import _stat_error
from langgraph_memory.ingest.records import Block

__all__ = ["read_blocks", "blocks_from_text", "decode_pieces"]

#: What a section detector says about a line: None (nothing), ("start", title) or ("title", title)
#: (the section begun by the lines before, such as decorators, is called ``title``).
Mark = tuple[str, str | None] | None

_DEFAULT_BLOCK = 65_536


def decode_pieces(path: str | os.PathLike[str], file_type: str, block_chars: int = _DEFAULT_BLOCK) -> Iterator[str]:
    """The decoded text of a file, in pieces of about ``block_chars`` characters.

    Raises:
        FileEncodingError: a byte that is not valid in the file's encoding (offset in the message).
        UnreadableFileError: the file cannot be read.
    """
    path = Path(path)
    encoding, skip = file_encoding(path, file_type)
    decoder = Decoder(path, encoding, skip)
    try:
        with open(path, "rb") as fh:
            while data := fh.read(block_chars):
                if text := decoder.feed(data):
                    yield text
    except OSError as exc:
        raise _stat_error(path, exc) from None
    if tail := decoder.feed(b"", True):
        yield tail


def _lines(pieces: Iterator[str], max_line: int) -> Iterator[str]:
    """Lines with their endings; a line longer than ``max_line`` comes in pieces of that size."""
    rest = ""
    for piece in pieces:
        data = rest + piece
        start = 0
        while True:
            nl = data.find("\n", start)
            if nl < 0:
                break
            while nl + 1 - start > max_line:
                yield data[start : start + max_line]
                start += max_line
            yield data[start : nl + 1]
            start = nl + 1
        rest = data[start:]
        while len(rest) > max_line:
            yield rest[:max_line]
            rest = rest[max_line:]
    if rest:
        yield rest


def _sectioned(
    lines: Iterator[str], detect: Callable[[str], Mark], block_chars: int, start: int = 0
) -> Iterator[Block]:
    """Group lines into blocks: a new block at each section start, and every ``block_chars``."""
    buf: list[str] = []
    size = 0
    pos = start
    section, title = False, None
    for line in lines:
        mark = detect(line)
        if mark is not None and mark[0] == "start":
            if buf:
                yield Block("".join(buf), pos - size, section, title)
                buf, size = [], 0
            section, title = True, mark[1]
        elif mark is not None and mark[0] == "title" and section:
            title = mark[1]
        buf.append(line)
        size += len(line)
        pos += len(line)
        if size >= block_chars:
            yield Block("".join(buf), pos - size, section, title)
            buf, size = [], 0
            section = False
    if buf:
        yield Block("".join(buf), pos - size, section, title)


# ------------------------------------------------------------------ markdown

_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*\r?\n?$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


class _MarkdownSections:
    def __init__(self) -> None:
        self.fence: str | None = None
        self.path: list[tuple[int, str]] = []

    def __call__(self, line: str) -> Mark:
        fence = _FENCE.match(line)
        if fence:
            mark = fence.group(1)
            if self.fence is None:
                self.fence = mark
            elif mark[0] == self.fence[0] and len(mark) >= len(self.fence):
                self.fence = None
            return None
        if self.fence is not None or not line.lstrip(" ").startswith("#"):
            return None
        m = _HEADING.match(line)
        if m is None:
            return None
        level, text = len(m.group(1)), (m.group(2) or "").strip()
        self.path = [(lvl, t) for lvl, t in self.path if lvl < level] + [(level, text)]
        return ("start", " > ".join(t for _, t in self.path if t) or None)


# -------------------------------------------------------------------- python

_PY_DEF = re.compile(r"(?:async[ \t]+)?(def|class)[ \t]+(\w+)")
_TRIPLE = re.compile(r"\"\"\"|'''|#")


class _PythonSections:
    """Top-level ``def``/``class`` blocks (decorators included) and the module code between them."""

    def __init__(self) -> None:
        self.string: str | None = None  # the triple quote we are inside
        self.decorated = False
        self.in_block = False

    def _scan_strings(self, line: str) -> None:
        pos = 0
        while True:
            if self.string is not None:
                end = line.find(self.string, pos)
                if end < 0:
                    return
                self.string, pos = None, end + 3
                continue
            m = _TRIPLE.search(line, pos)
            if m is None or m.group() == "#":
                return
            self.string, pos = m.group(), m.end()

    def __call__(self, line: str) -> Mark:
        in_string = self.string is not None
        self._scan_strings(line)
        if in_string or not line or line[0] in " \t\r\n#)]}":
            return None
        if line.startswith("@"):
            if self.decorated:
                return None
            self.decorated = True
            return ("start", None)
        m = _PY_DEF.match(line)
        if m is not None:
            title = f"{m.group(1)} {m.group(2)}"
            self.in_block = True
            if self.decorated:
                self.decorated = False
                return ("title", title)
            return ("start", title)
        self.decorated = False
        if self.in_block:  # module code after a def/class block starts a section of its own
            self.in_block = False
            return ("start", None)
        return None


# ---------------------------------------------------------------------- yaml

_YAML_KEY = re.compile(r"""(?P<key>"[^"]*"|'[^']*'|[^\s#:'"\-?][^:#]*?)[ \t]*:(?:[ \t]|\r?\n|$)""")


def _yaml_sections(line: str) -> Mark:
    if line.startswith("---"):
        return ("start", None)
    if line[:1] in ("", " ", "\t", "#", "-", "\r", "\n"):
        return None
    m = _YAML_KEY.match(line)
    if m is None:
        return None
    return ("start", m.group("key").strip().strip("\"'"))


# ----------------------------------------------------------------------- csv


def _csv_records(lines: Iterator[str]) -> Iterator[str]:
    """Whole CSV records: a quoted field may hold line breaks (RFC 4180 doubles quotes, keeping parity)."""
    record: list[str] = []
    quotes = 0
    for line in lines:
        record.append(line)
        quotes += line.count('"')
        if quotes % 2 == 0 and line.endswith("\n"):
            yield "".join(record)
            record, quotes = [], 0
    if record:
        yield "".join(record)


def _csv_blocks(pieces: Iterator[str], block_chars: int) -> Iterator[Block]:
    records = _csv_records(_lines(pieces, block_chars))
    header = next(records, None)
    if header is None:
        return
    prefix = header.rstrip("\r\n") + "\n"
    buf: list[str] = []
    size = 0
    pos = len(header)
    rows = False
    for record in records:
        rows = True
        buf.append(record)
        size += len(record)
        if size >= block_chars:
            yield Block("".join(buf), pos, prefix=prefix)
            pos += size
            buf, size = [], 0
    if buf:
        yield Block("".join(buf), pos, prefix=prefix)
    elif not rows:  # a header and nothing else: the header is the text
        yield Block(header, 0)


# ---------------------------------------------------------------------- text


def _text_blocks(pieces: Iterator[str]) -> Iterator[Block]:
    pos = 0
    for piece in pieces:
        yield Block(piece, pos)
        pos += len(piece)


def read_blocks(path: str | os.PathLike[str], file_type: str, *, block_chars: int = _DEFAULT_BLOCK) -> Iterator[Block]:
    """The blocks of a file of ``file_type`` (a value of ``SUPPORTED_TYPES``), read as they are needed.

    Raises:
        UnsupportedFileTypeError: ``file_type`` is not one ingest reads.
        FileEncodingError, UnreadableFileError, DamagedDocumentError: while reading.
    """
    if file_type == "pdf":
        from langgraph_memory.ingest.pdf import pdf_blocks

        return pdf_blocks(Path(path), block_chars=block_chars)
    if file_type not in _TEXT_TYPES:
        raise UnsupportedFileTypeError(f"no reader for file type {file_type!r}", path)
    return _blocks_of(decode_pieces(path, file_type, block_chars), file_type, block_chars)


def blocks_from_text(text: str, file_type: str = "text", *, block_chars: int = _DEFAULT_BLOCK) -> Iterator[Block]:
    """The blocks of a string, read as a file of ``file_type`` would be (a PDF's text as prose).

    Examples:
        >>> [b.title for b in blocks_from_text("x = 1\\ndef f():\\n    pass\\n", "python") if b.section]
        ['def f']
    """
    pieces = (text[i : i + block_chars] for i in range(0, len(text), block_chars))
    return _blocks_of(pieces, file_type if file_type in _TEXT_TYPES else "text", block_chars)


_TEXT_TYPES = ("text", "markdown", "python", "yaml", "csv")


def _blocks_of(pieces: Iterator[str], file_type: str, block_chars: int) -> Iterator[Block]:
    if file_type == "text":
        return _text_blocks(pieces)
    if file_type == "csv":
        return _csv_blocks(pieces, block_chars)
    makers: dict[str, Callable[[], Callable[[str], Mark]]] = {
        "markdown": _MarkdownSections,
        "python": _PythonSections,
        "yaml": lambda: _yaml_sections,
    }
    detect = makers[file_type]()
    return _sectioned(_lines(pieces, block_chars), detect, block_chars)
