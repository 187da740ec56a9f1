"""What readers hand the chunkers, and what the chunkers hand back.

A reader turns a file into `Block` s: consecutive pieces of the
file's text, each knowing where it starts and whether a structural section
(a Markdown heading, a top-level ``def``/``class``, a PDF page, a YAML key)
begins with it. A chunker turns blocks into `Parent` s, each holding
its `Chunk` s; every chunk carries its `ChunkMetadata`.

Offsets are characters of the file's decoded text (for a PDF, of its pages'
text joined by a blank line), so ``text[start_char:end_char]`` is a chunk's
own text. A CSV chunk's ``content`` is the header row followed by its rows;
its offsets are those of the rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Block", "ChunkMetadata", "Chunk", "Parent"]


@dataclass(frozen=True, slots=True)
class Block:
    """A piece of a file's text as a reader hands it to a chunker.

    Attributes:
        text: the text (blocks are consecutive: each starts where the previous ended).
        start: offset of ``text[0]`` in the file's text.
        section: a section begins at ``start`` (a heading, a top-level block, a page).
        title: the section's title ("Install > Linux", "def parse", "page 3"), when ``section``.
        page: the PDF page (1-based) ``text`` belongs to.
        prefix: text every chunk of this block is read with (a CSV file's header row).
    """

    text: str
    start: int
    section: bool = False
    title: str | None = None
    page: int | None = None
    prefix: str = ""


@dataclass(frozen=True, slots=True)
class ChunkMetadata:
    """Where a chunk sits in its file.

    Attributes:
        start_char: offset of the chunk's first character in the file's text.
        end_char: offset just past its last character.
        overlap_start: characters it shares with the chunk before it.
        overlap_end: characters it shares with the chunk after it.
        semantic_boundary: it ends at a section, paragraph or sentence end
            (a row end for CSV, a blank line or block end for code), or at the end of the file.
    """

    start_char: int
    end_char: int
    overlap_start: int
    overlap_end: int
    semantic_boundary: bool


@dataclass(slots=True)
class Chunk:
    """One chunk: the text that is embedded and where it came from.

    Attributes:
        index: position in the file (0-based), its ``chunk_index``.
        content: the embedded text (the file's text at the chunk's offsets,
            after the block's ``prefix``).
        metadata: offsets, overlaps and whether the chunk ends on a semantic boundary.
        parent_index: the parent record (0-based, within the file) that holds it.
        title: the title of the section the chunk starts in.
        page: the PDF page it starts on.
    """

    index: int
    content: str
    metadata: ChunkMetadata
    parent_index: int = 0
    title: str | None = None
    page: int | None = None


@dataclass(slots=True)
class Parent:
    """The full context of consecutive chunks (one or more sections of a file).

    Attributes:
        index: position among the file's parents (0-based).
        content: the file's text from the first chunk's start to the last
            chunk's end (after the block's ``prefix``).
        start_char, end_char: offsets of that text.
        chunks: its chunks, in order.
        title: the title of its first section.
        page: the PDF page it starts on.
    """

    index: int
    content: str
    start_char: int
    end_char: int
    chunks: list[Chunk] = field(default_factory=list)
    title: str | None = None
    page: int | None = None
