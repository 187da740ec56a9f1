"""Chunkers: blocks of a file in, parent records holding their chunks out, in bounded memory.

`ContextualChunker` (the default) aims at ``chunk_size``
characters and cuts at the best boundary it can find:

* never across a section found by the reader (a Markdown heading, a
  top-level ``def``/``class``, a PDF page, a YAML key) once the chunk has
  ``min_chunk_size`` characters: smaller sections join the next one;
* otherwise at the strongest boundary of its file type
  (`boundaries`: paragraphs, then sentences,
  then lines for prose; nested blocks, then blank lines for code; records
  for CSV) that still gives a chunk of at least half the target, the one
  nearest the target; at most ``search_window`` characters past it;
* the next chunk repeats ``overlap_ratio`` of it, starting at a sentence
  (line, record) start; there is no overlap across a section.

`FixedWindowChunker` (a baseline) cuts ``fixed_chunk_size`` windows
every ``fixed_chunk_size - fixed_overlap`` characters, blind to structure.

Both group consecutive chunks into parents of at most
``max_chunks_per_parent`` chunks; the contextual chunker packs whole
sections into a parent while they fit, and splits a longer section. Text is
held only from the oldest chunk not yet handed out, so memory is bounded by
two parents and a read block, whatever the size of the file.

    >>> chunker = ContextualChunker(chunk_size=60, min_chunk_size=20)
    >>> parents = chunker.chunk_text("# A\\nShort intro line.\\n# B\\nFirst sentence here. Second one is a bit longer.\\n",
    ...                              "markdown")
    >>> [(c.title, c.content) for p in parents for c in p.chunks]
    [('A', '# A\\nShort intro line.'), ('B', '# B\\nFirst sentence here. Second one is a bit longer.')]
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Iterable, Iterator

from langgraph_memory.ingest.boundaries import Rules, rules_for
from langgraph_memory.ingest.config import IngestConfig
from langgraph_memory.ingest.records import Block, Chunk, ChunkMetadata, Parent

__all__ = ["ContextualChunker", "FixedWindowChunker", "make_chunker"]

_LOOKAHEAD = 96
_NONBLANK = re.compile(r"\S")


@dataclasses.dataclass
class _Cut:
    start: int  # first character of the chunk (absolute)
    end: int  # just past its last character
    resume: int  # where the next chunk starts looking (before skipping whitespace)
    semantic: bool
    section_end: bool  # the cut is a section start or the end of the file: no overlap


class _Stream:
    """The streaming machinery both chunkers share: the text buffer, sections, parents."""

    # The text not yet cut (from offset _base of the file), and how far chunks have been cut.
    _buf: str
    _base: int
    _pos: int

    def __init__(self, cap: int) -> None:
        self.cap = cap

    # subclasses: how far past a chunk's start the buffer must reach before cutting it,
    # and the cut itself.
    def _reach(self) -> int:
        raise NotImplementedError

    def _cut(self, s: int, final: bool) -> _Cut:
        raise NotImplementedError

    def _new_parent_at_sections(self) -> bool:
        return True

    # ------------------------------------------------------------- buffer

    def _text(self, a: int, b: int) -> str:
        return self._buf[a - self._base : b - self._base]

    @property
    def _end(self) -> int:
        return self._base + len(self._buf)

    def _title_page(self, pos: int) -> tuple[str | None, int | None]:
        i = bisect.bisect_right(self._mark_pos, pos) - 1
        return (self._titles[i], self._pages[i]) if i >= 0 else (None, None)

    def _retain(self) -> None:
        keep = min([c.metadata.start_char for c in self._parent[:1] + self._section[:1]] + [self._pos])
        drop = keep - self._base
        if drop > len(self._buf) // 2 and drop > 4096:
            self._buf = self._buf[drop:]
            self._base = keep
            cut = bisect.bisect_right(self._mark_pos, keep) - 1
            if cut > 0:
                del self._mark_pos[:cut], self._titles[:cut], self._pages[:cut]
            h = bisect.bisect_left(self._hard, keep)
            del self._hard[:h]

    # ------------------------------------------------------------- driving

    def chunk_blocks(self, blocks: Iterable[Block], file_type: str) -> Iterator[Parent]:
        """Parents (with their chunks) of a file's blocks, yielded as soon as each is complete."""
        self.rules: Rules = rules_for(file_type)
        self._buf = ""
        self._base = 0
        self._pos = 0
        self._prefix = ""
        self._mark_pos: list[int] = []
        self._titles: list[str | None] = []
        self._pages: list[int | None] = []
        self._hard: list[int] = []
        self._parent: list[Chunk] = []
        self._section: list[Chunk] = []
        self._out: list[Parent] = []
        self._last: Chunk | None = None
        self._n_chunks = 0
        self._n_parents = 0
        self._after_section = True
        first = True
        for block in blocks:
            if first:
                self._base = self._pos = block.start
                self._prefix = block.prefix
                first = False
            elif block.start != self._end:
                raise ValueError(f"blocks must be consecutive: one starts at {block.start}, not {self._end}")
            if block.section or block.page is not None or not self._mark_pos:
                title = block.title if block.section else self._title_page(block.start)[0]
                self._mark_pos.append(block.start)
                self._titles.append(title)
                self._pages.append(block.page)
            if block.section and block.start > self._pos:
                self._hard.append(block.start)
            self._buf += block.text
            while self._end - self._pos > self._reach():
                if not self._step(final=False):
                    break
            yield from self._drain()
        while self._pos < self._end and self._step(final=True):
            pass
        self._finish()
        yield from self._drain()

    def chunk_text(self, text: str, file_type: str = "text") -> list[Parent]:
        """Parents of a whole string read as ``file_type`` (headings, ``def``s... found as in a file)."""
        from langgraph_memory.ingest.readers import blocks_from_text

        return list(self.chunk_blocks(blocks_from_text(text, file_type), file_type))

    def _drain(self) -> Iterator[Parent]:
        out, self._out = self._out, []
        yield from out
        self._retain()

    def _step(self, final: bool) -> bool:
        # A chunk starts at its first non-blank character.
        m = _NONBLANK.search(self._buf, self._pos - self._base)
        if m is None:
            if final:
                self._pos = self._end
            return False
        s = self._base + m.start()
        cut = self._cut(s, final)
        self._emit(cut)
        self._pos = cut.resume
        return True

    def _emit(self, cut: _Cut) -> None:
        start, end = cut.start, cut.end
        title, page = self._title_page(start)
        overlap = 0
        if self._last is not None:
            overlap = max(0, self._last.metadata.end_char - start)
            self._last.metadata = dataclasses.replace(self._last.metadata, overlap_end=overlap)
        chunk = Chunk(
            index=self._n_chunks,
            content=self._prefix + self._text(start, end),
            metadata=ChunkMetadata(start, end, overlap, 0, cut.semantic),
            title=title,
            page=page,
        )
        self._n_chunks += 1
        if self._after_section and self._new_parent_at_sections():
            self._close_section()
        elif len(self._section) >= self.cap:
            self._close_section()
        self._section.append(chunk)
        self._after_section = cut.section_end
        self._last = chunk

    def _close_section(self) -> None:
        if not self._section:
            return
        if len(self._parent) + len(self._section) <= self.cap:
            self._parent.extend(self._section)
        else:
            self._flush_parent()
            self._parent = self._section
        self._section = []

    def _flush_parent(self) -> None:
        if not self._parent:
            return
        first, last = self._parent[0], self._parent[-1]
        a, b = first.metadata.start_char, last.metadata.end_char
        for c in self._parent:
            c.parent_index = self._n_parents
        self._out.append(
            Parent(self._n_parents, self._prefix + self._text(a, b), a, b, self._parent, first.title, first.page)
        )
        self._n_parents += 1
        self._parent = []

    def _finish(self) -> None:
        self._close_section()
        self._flush_parent()


class ContextualChunker(_Stream):
    """The contextual chunker: ~``chunk_size`` characters cut at semantic boundaries, with overlap.

    Args:
        chunk_size: target characters per chunk (a CSV header counts).
        overlap_ratio: share of a chunk the next one repeats (0 to 0.5).
        min_chunk_size: no chunk is cut shorter than this, except at the end of a file.
        search_window: characters a chunk may run past ``chunk_size`` to reach a boundary.
        max_chunks_per_parent: chunks one parent record covers at most.

    Examples:
        >>> parents = ContextualChunker().chunk_text(open("notes.md").read(), "markdown")  # needs files to ingest  # doctest: +SKIP
        >>> [(c.metadata.start_char, c.metadata.end_char) for c in parents[0].chunks]  # continues the example above (needs notes.md)  # doctest: +SKIP
        [(0, 388), (311, 702)]
    """

    def __init__(
        self,
        chunk_size: int = 400,
        overlap_ratio: float = 0.2,
        min_chunk_size: int = 100,
        search_window: int = 50,
        max_chunks_per_parent: int = 16,
    ) -> None:
        super().__init__(max_chunks_per_parent)
        IngestConfig(
            chunk_size=chunk_size,
            overlap_ratio=overlap_ratio,
            min_chunk_size=min_chunk_size,
            search_window=search_window,
            max_chunks_per_parent=max_chunks_per_parent,
        )  # validates
        self.chunk_size = chunk_size
        self.overlap_ratio = overlap_ratio
        self.min_chunk_size = min_chunk_size
        self.search_window = search_window

    def _budget(self) -> int:
        return max(self.min_chunk_size, self.chunk_size - len(self._prefix))

    def _reach(self) -> int:
        return self._budget() + self.search_window + _LOOKAHEAD

    def _cut(self, s: int, final: bool) -> _Cut:
        budget = self._budget()
        lo, target, hi = s + self.min_chunk_size, s + budget, s + budget + self.search_window
        end = self._end
        # 1. A section start past the minimum, or the end of the file, within reach.
        h = bisect.bisect_right(self._hard, s)
        hard = self._hard[h] if h < len(self._hard) else None
        while hard is not None and hard < lo and hard <= hi:  # a small section joins the next one
            h += 1
            hard = self._hard[h] if h < len(self._hard) else None
        if hard is not None and hard <= hi:
            return self._make(s, hard, hard, True, True)
        if final and end <= hi:
            return self._make(s, end, end, True, True)
        # 2. The best boundary of the file type's own, strongest level first: a semantic one
        # that gives at least half the target, else the strongest semantic one, else a line
        # or word boundary, else a plain cut at the target.
        rules, buf, base = self.rules, self._buf, self._base
        top = min(hi, end)
        fallback: tuple[int, int] | None = None
        for level in rules.levels:
            found = rules.positions(buf, level, lo - base, top - base, row_start=s - base)
            if not found:
                continue
            p = self._nearest(found, target - base) + base
            if level < rules.semantic_level:
                if fallback is None:
                    fallback = (p, level)
                break
            if p - s >= budget // 2:
                return self._make(s, p, None, True, False)
            if fallback is None:
                fallback = (p, level)
        if fallback is None:  # no boundary at all (one long word): cut at the target
            p = min(target, end)
            return self._make(s, p, p, False, False)
        return self._make(s, fallback[0], None, fallback[1] >= rules.semantic_level, False)

    @staticmethod
    def _nearest(positions: list[int], target: int) -> int:
        """The last position at or before ``target``, else the first after it."""
        i = bisect.bisect_right(positions, target)
        return positions[i - 1] if i > 0 else positions[0]

    def _make(self, s: int, p: int, resume: int | None, semantic: bool, section_end: bool) -> _Cut:
        e = s + len(self._text(s, p).rstrip())  # the chunk ends at its last non-blank character
        if e <= s:
            e = p
        if resume is None:
            resume = self._overlap_start(s, e, p)
        return _Cut(s, e, resume, semantic, section_end)

    def _overlap_start(self, s: int, e: int, p: int) -> int:
        """Where the next chunk starts: ``overlap_ratio`` back from ``e``, at a sentence (line, record) start."""
        want = round(self.overlap_ratio * (e - s))
        if want <= 0:
            return p
        t = max(s + 1, e - want)
        rules, base = self.rules, self._base
        floors = [rules.overlap_level] if rules.quoted_records else range(rules.overlap_level, -1, -1)
        for floor in floors:  # CSV overlaps by whole records or not at all
            firsts = [
                found[0]
                for level in rules.levels
                if level >= floor
                and (found := rules.positions(self._buf, level, t - base, e - 1 - base, row_start=s - base))
            ]
            if firsts:
                return min(firsts) + base
        return p


class FixedWindowChunker(_Stream):
    """The plain chunker: windows of ``size`` characters every ``size - overlap``, blind to structure.

    Examples:
        >>> [len(c.content) for p in FixedWindowChunker(size=10, overlap=5).chunk_text("x" * 22) for c in p.chunks]
        [10, 10, 10, 7]
    """

    def __init__(self, size: int = 1000, overlap: int = 500, max_chunks_per_parent: int = 16) -> None:
        super().__init__(max_chunks_per_parent)
        IngestConfig(
            fixed_chunk_size=size, fixed_overlap=overlap, max_chunks_per_parent=max_chunks_per_parent
        )  # validates
        self.size = size
        self.overlap = overlap

    def _reach(self) -> int:
        return self.size + 1

    def _new_parent_at_sections(self) -> bool:
        return False

    def _step(self, final: bool) -> bool:  # windows start anywhere, blanks included
        s = self._pos
        if s >= self._end or (not final and self._end - s <= self._reach()):
            return False
        cut = self._cut(s, final)
        self._emit(cut)
        self._pos = cut.resume
        return True

    def _cut(self, s: int, final: bool) -> _Cut:
        e = min(s + self.size, self._end)
        at_end = final and e >= self._end
        after = self._buf[e - self._base : e - self._base + 1]
        semantic = at_end or (self._buf[e - self._base - 1] in ".!?\n" and (not after or after.isspace()))
        resume = self._end if at_end else s + self.size - self.overlap
        return _Cut(s, e, resume, semantic, at_end)


def make_chunker(config: IngestConfig) -> ContextualChunker | FixedWindowChunker:
    """The chunker ``config`` asks for.

    Examples:
        >>> type(make_chunker(IngestConfig(chunker="fixed"))).__name__
        'FixedWindowChunker'
    """
    if config.chunker == "fixed":
        return FixedWindowChunker(config.fixed_chunk_size, config.fixed_overlap, config.max_chunks_per_parent)
    return ContextualChunker(
        config.chunk_size,
        config.overlap_ratio,
        config.min_chunk_size,
        config.search_window,
        config.max_chunks_per_parent,
    )
