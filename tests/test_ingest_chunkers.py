"""The chunkers: offsets that match the text, sizes, overlaps, semantic cuts, sections, parents, streaming."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_memory.errors import ConfigError
from langgraph_memory.ingest import ContextualChunker, FixedWindowChunker, IngestConfig, make_chunker
from langgraph_memory.ingest.readers import blocks_from_text
from langgraph_memory.ingest.records import Parent
from tests.helpers.ingest_docs import MARKDOWN, PYTHON, TEXT, YAML, csv_text

PROSE = " ".join(
    f"Sentence number {i} says something about markets and risk{'.' if i % 3 else '!'}" + ("\n\n" if i % 7 == 6 else "")
    for i in range(300)
)


def _chunks(parents: list[Parent]) -> list:
    return [c for p in parents for c in p.chunks]


def _check_offsets(text: str, parents: list[Parent], prefix: str = "") -> None:
    """Every chunk and parent is its own slice of the text; overlaps agree; chunk indexes run 0..n-1."""
    chunks = _chunks(parents)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert [p.index for p in parents] == list(range(len(parents)))
    for c in chunks:
        m = c.metadata
        assert c.content == prefix + text[m.start_char : m.end_char]
        assert c.content.strip() and c.content == c.content.strip() or prefix
    for p in parents:
        assert p.content == prefix + text[p.start_char : p.end_char]
        assert all(c.parent_index == p.index for c in p.chunks)
        assert p.start_char == p.chunks[0].metadata.start_char and p.end_char == p.chunks[-1].metadata.end_char
    for a, b in zip(chunks, chunks[1:], strict=False):
        shared = max(0, a.metadata.end_char - b.metadata.start_char)
        assert a.metadata.overlap_end == shared == b.metadata.overlap_start
        assert b.metadata.start_char > a.metadata.start_char
    assert chunks[0].metadata.overlap_start == 0 and chunks[-1].metadata.overlap_end == 0


def _uncovered(text: str, parents: list[Parent]) -> list[int]:
    covered = bytearray(len(text))
    for c in _chunks(parents):
        covered[c.metadata.start_char : c.metadata.end_char] = b"\1" * (c.metadata.end_char - c.metadata.start_char)
    return [i for i, ch in enumerate(text) if not covered[i] and not ch.isspace()]


def test_prose_chunks_aim_at_the_target_and_end_on_sentences() -> None:
    parents = ContextualChunker().chunk_text(PROSE)
    chunks = _chunks(parents)
    _check_offsets(PROSE, parents)
    assert _uncovered(PROSE, parents) == []
    sizes = [len(c.content) for c in chunks]
    assert all(100 <= n <= 450 for n in sizes[:-1]), sizes
    assert 250 <= sum(sizes) / len(sizes) <= 450
    semantic = [c for c in chunks if c.metadata.semantic_boundary]
    assert len(semantic) == len(chunks)  # sentences every ~60 characters: always one in reach
    for c in chunks[:-1]:
        assert re.search(r"[.!?]$", c.content), c.content[-30:]
    # 20 % overlap, starting at a sentence start
    overlaps = [c.metadata.overlap_start for c in chunks[1:]]
    assert sum(1 for o in overlaps if o > 0) >= len(overlaps) * 0.8
    assert all(o <= 0.2 * 450 + 1 for o in overlaps)
    for c in chunks[1:]:
        if c.metadata.overlap_start:
            assert c.content.startswith("Sentence number"), c.content[:40]


def test_paragraphs_win_over_sentences_when_the_chunk_is_big_enough() -> None:
    paragraphs = "\n\n".join(("Alpha beta gamma delta. " * 9).strip() for _ in range(12))  # 215-char paragraphs
    chunks = _chunks(ContextualChunker().chunk_text(paragraphs))
    ends = [c.metadata.end_char for c in chunks[:-1]]
    assert all(paragraphs[e : e + 2] == "\n\n" for e in ends), [paragraphs[e : e + 5] for e in ends]


def test_markdown_never_cuts_across_a_heading_and_titles_chunks_with_the_heading_path() -> None:
    parents = ContextualChunker().chunk_text(MARKDOWN, "markdown")
    _check_offsets(MARKDOWN, parents)
    chunks = _chunks(parents)
    assert [c.title for c in chunks] == ["Momentum research", "Momentum research > Data", "Momentum research > Results"]
    assert chunks[1].content.startswith("## Data") and chunks[2].content.startswith("## Results")
    assert "# a code fence" in chunks[1].content  # a '#' line inside a fence is no heading
    assert all(c.metadata.overlap_start == 0 for c in chunks)  # no overlap across sections


def test_python_cuts_at_top_level_blocks_and_keeps_decorators_with_their_function() -> None:
    parents = ContextualChunker().chunk_text(PYTHON, "python")
    _check_offsets(PYTHON, parents)
    chunks = _chunks(parents)
    starts = [c.content.split("\n", 1)[0] for c in chunks]
    assert "@staticmethod" in starts and "class Sizer:" in starts
    assert not any(s.startswith("def volatility_target") for s in starts)  # the decorator opens its section
    assert {c.title for c in chunks} >= {"def volatility_target", "class Sizer"}
    assert not any("not_a_function" in (c.title or "") for c in chunks)
    assert all(c.metadata.semantic_boundary for c in chunks)


def test_long_python_classes_are_cut_between_methods() -> None:
    methods = "".join(
        f'    def method_{i}(self, x):\n        """Docstring {i}."""\n        y = x * {i}\n        return y + {i}\n\n'
        for i in range(30)
    )
    code = "class Big:\n" + methods
    chunks = _chunks(ContextualChunker().chunk_text(code, "python"))
    _check_offsets(code, ContextualChunker().chunk_text(code, "python"))
    for c in chunks[1:]:
        first = c.content.split("\n", 1)[0]
        assert first.startswith("def method_") or c.metadata.overlap_start, first


def test_csv_chunks_carry_the_header_and_never_split_a_record() -> None:
    text = csv_text(200)
    header = text.split("\n", 1)[0] + "\n"
    parents = ContextualChunker().chunk_text(text, "csv")
    _check_offsets(text, parents, prefix=header)
    for c in _chunks(parents):
        assert c.content.startswith(header)
        body = c.content[len(header) :]
        assert body.count('"') % 2 == 0  # a quoted multi-line note is never cut
        assert re.match(r"2024-01-\d\d,SPY,", body), body[:30]
        assert len(c.content) <= 400 + 50


def test_yaml_sections_are_top_level_keys_and_documents() -> None:
    big = "".join(f"key_{i}:\n  value: {i}\n  note: {'x' * 120}\n" for i in range(6)) + YAML
    chunks = _chunks(ContextualChunker().chunk_text(big, "yaml"))
    _check_offsets(big, ContextualChunker().chunk_text(big, "yaml"))
    assert all(re.match(r"(key_\d+|strategy|backtest|---|risk):?", c.content) for c in chunks), [
        c.content[:12] for c in chunks
    ]


def test_fixed_window_is_seed_000s_1000_and_500() -> None:
    parents = FixedWindowChunker().chunk_text(PROSE)
    chunks = _chunks(parents)
    _check_offsets_fixed = [(c.metadata.start_char, c.metadata.end_char) for c in chunks]
    assert _check_offsets_fixed[:3] == [(0, 1000), (500, 1500), (1000, 2000)]
    assert all(c.content == PROSE[c.metadata.start_char : c.metadata.end_char] for c in chunks)
    assert chunks[-1].metadata.end_char == len(PROSE) and chunks[-1].metadata.semantic_boundary
    assert all(c.metadata.overlap_start == 500 for c in chunks[1:])
    assert [len(p.chunks) for p in parents[:-1]] == [16] * (len(parents) - 1)
    assert FixedWindowChunker().chunk_text("short file")[0].chunks[0].content == "short file"


def test_parents_pack_whole_sections_up_to_the_cap_and_split_longer_ones() -> None:
    sections = "".join(
        f"# Section {i}\n\n" + ("Words of the section go here. " * (30 if i % 2 else 5)) + "\n" for i in range(10)
    )
    parents = ContextualChunker(max_chunks_per_parent=4).chunk_text(sections, "markdown")
    _check_offsets(sections, parents)
    assert all(1 <= len(p.chunks) <= 4 for p in parents)
    for p in parents:  # a parent starts at a section start unless it continues a section longer than the cap
        head = p.chunks[0]
        assert head.content.startswith("# Section") or len([q for q in parents if q.title == p.title]) > 1


def test_text_without_any_boundary_is_cut_at_the_target() -> None:
    blob = "x" * 1000
    chunks = _chunks(ContextualChunker().chunk_text(blob))
    assert [len(c.content) for c in chunks][:2] == [400, 400]
    assert not chunks[0].metadata.semantic_boundary


def test_a_small_tail_and_blank_text() -> None:
    assert ContextualChunker().chunk_text("   \n\n  ") == []
    parents = ContextualChunker().chunk_text("Just one line.\n")
    assert [c.content for c in _chunks(parents)] == ["Just one line."]


def test_config_defaults_are_the_seeds_and_bad_values_are_refused() -> None:
    cfg = IngestConfig()
    assert (cfg.chunk_size, cfg.overlap_ratio, cfg.min_chunk_size) == (400, 0.2, 100)
    assert (cfg.fixed_chunk_size, cfg.fixed_overlap) == (1000, 500)
    assert isinstance(make_chunker(cfg), ContextualChunker)
    assert isinstance(make_chunker(cfg.replace(chunker="fixed")), FixedWindowChunker)
    for bad in (
        {"overlap_ratio": 0.7},
        {"chunk_size": 0},
        {"min_chunk_size": 500},
        {"chunker": "semantic"},
        {"fixed_overlap": 1000},
        {"batch_max_chunks": True},
    ):
        with pytest.raises(ConfigError):
            IngestConfig(**bad)


_WORDS = st.sampled_from(["risk", "alpha", "beta.", "momentum!", "carry?", "\n", "\n\n", "## Heading\n", "x" * 30])


@settings(max_examples=60, deadline=None)
@given(words=st.lists(_WORDS, min_size=1, max_size=600), kind=st.sampled_from(["text", "markdown", "python"]))
def test_chunks_do_not_depend_on_how_the_file_was_read(words: list[str], kind: str) -> None:
    """Streaming in small blocks gives exactly the chunks of reading the text at once."""
    text = " ".join(words)
    whole = ContextualChunker().chunk_text(text, kind)
    streamed = list(ContextualChunker().chunk_blocks(blocks_from_text(text, kind, block_chars=700), kind))
    assert [(c.content, c.metadata, c.title) for c in _chunks(whole)] == [
        (c.content, c.metadata, c.title) for c in _chunks(streamed)
    ]
    assert [(p.start_char, p.end_char) for p in whole] == [(p.start_char, p.end_char) for p in streamed]
    if whole:
        _check_offsets(text, whole)
    assert _uncovered(text, whole) == []


def test_text_file_prose_from_the_corpus() -> None:
    parents = ContextualChunker().chunk_text(TEXT)
    _check_offsets(TEXT, parents)
    assert _uncovered(TEXT, parents) == []
