"""Readers: each type's structure, encodings (with the bad byte's offset), PDFs, streaming in blocks."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from langgraph_memory.errors import DamagedDocumentError, FileEncodingError, UnsupportedFileTypeError
from langgraph_memory.ingest.encoding import Decoder, file_encoding
from langgraph_memory.ingest.readers import decode_pieces, read_blocks
from tests.helpers.ingest_docs import CSV_HEADER, MARKDOWN, PDF_PAGES, PYTHON, YAML, csv_text, make_pdf


def _write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def _text_of(blocks: list) -> str:
    return "".join(b.text for b in blocks)


def test_markdown_sections_are_headings_outside_code_fences(tmp_path: Path) -> None:
    blocks = list(read_blocks(_write(tmp_path, "a.md", MARKDOWN), "markdown"))
    assert _text_of(blocks) == MARKDOWN
    assert [(b.start, b.title) for b in blocks if b.section] == [
        (0, "Momentum research"),
        (MARKDOWN.index("## Data"), "Momentum research > Data"),
        (MARKDOWN.index("## Results"), "Momentum research > Results"),
    ]


def test_python_sections_are_top_level_blocks_with_their_decorators(tmp_path: Path) -> None:
    blocks = list(read_blocks(_write(tmp_path, "a.py", PYTHON), "python"))
    assert _text_of(blocks) == PYTHON
    sections = [(b.start, b.title) for b in blocks if b.section]
    assert sections == [
        (PYTHON.index("def kelly_fraction"), "def kelly_fraction"),
        (PYTHON.index("@staticmethod"), "def volatility_target"),
        (PYTHON.index("class Sizer"), "class Sizer"),
        (PYTHON.index("LOOKBACK = 60"), None),  # module code after a block is a section of its own
    ]


def test_yaml_sections_are_top_level_keys_and_document_separators(tmp_path: Path) -> None:
    blocks = list(read_blocks(_write(tmp_path, "a.yaml", YAML), "yaml"))
    assert _text_of(blocks) == YAML
    assert [b.title for b in blocks if b.section] == ["strategy", "risk", None, "backtest"]


def test_csv_header_is_every_blocks_prefix_and_records_keep_their_line_breaks(tmp_path: Path) -> None:
    text = csv_text(500)
    blocks = list(read_blocks(_write(tmp_path, "a.csv", text), "csv", block_chars=2000))
    assert len(blocks) > 3
    assert {b.prefix for b in blocks} == {CSV_HEADER + "\n"}
    assert blocks[0].start == len(CSV_HEADER) + 1
    assert CSV_HEADER + "\n" + _text_of(blocks) == text
    for b in blocks:  # a block never ends inside a quoted multi-line field
        assert b.text.count('"') % 2 == 0 and b.text.endswith("\n")
    only_header = list(read_blocks(_write(tmp_path, "h.csv", CSV_HEADER + "\n"), "csv"))
    assert [(b.text, b.prefix) for b in only_header] == [(CSV_HEADER + "\n", "")]


def test_large_text_is_read_in_bounded_blocks(tmp_path: Path) -> None:
    text = "word " * 200_000  # 1 MB
    blocks = list(read_blocks(_write(tmp_path, "a.txt", text), "text", block_chars=65_536))
    assert _text_of(blocks) == text
    assert max(len(b.text) for b in blocks) <= 65_536
    assert [b.start for b in blocks] == [sum(len(x.text) for x in blocks[:i]) for i in range(len(blocks))]


def test_one_huge_line_comes_in_pieces(tmp_path: Path) -> None:
    line = "a" * 300_000
    blocks = list(read_blocks(_write(tmp_path, "a.md", line), "markdown", block_chars=65_536))
    assert _text_of(blocks) == line and max(len(b.text) for b in blocks) <= 65_536


@pytest.mark.parametrize("bad_at", [0, 5, 65_535, 65_536, 65_537, 100_000])
def test_a_bad_byte_is_reported_with_its_offset_in_the_file(tmp_path: Path, bad_at: int) -> None:
    data = bytearray(("é" * 60_000).encode())  # 2-byte characters: 65,536-byte pieces split one
    data[bad_at] = 0xFF
    path = _write(tmp_path, "bad.txt", bytes(data))
    with pytest.raises(FileEncodingError) as info:
        list(decode_pieces(path, "text", block_chars=65_536))
    # A broken second byte makes its character the bad sequence: reported where that character starts.
    expected = bad_at - bad_at % 2
    assert info.value.offset == expected
    assert info.value.path == path and f"byte offset {expected} " in str(info.value)


def test_a_file_cut_inside_a_character_is_reported_at_that_character(tmp_path: Path) -> None:
    path = _write(tmp_path, "cut.txt", b"abc" + "é".encode()[:1])
    with pytest.raises(FileEncodingError) as info:
        list(decode_pieces(path, "text"))
    assert info.value.offset == 3


def test_byte_order_marks_and_python_coding_cookies(tmp_path: Path) -> None:
    bom = _write(tmp_path, "bom.txt", codecs.BOM_UTF8 + "héllo".encode())
    assert file_encoding(bom, "text") == ("utf-8", 3)
    assert "".join(decode_pieces(bom, "text")) == "héllo"
    utf16 = _write(tmp_path, "u16.txt", codecs.BOM_UTF16_LE + "risk on".encode("utf-16-le"))
    assert "".join(decode_pieces(utf16, "text")) == "risk on"
    latin = _write(tmp_path, "old.py", "# -*- coding: latin-1 -*-\nNAME = 'Zürich'\n".encode("latin-1"))
    assert file_encoding(latin, "python")[0] == "iso8859-1"
    assert "Zürich" in "".join(decode_pieces(latin, "python"))
    bad_cookie = _write(tmp_path, "weird.py", b"# -*- coding: no-such-codec -*-\nx = 1\n")
    with pytest.raises(FileEncodingError):
        file_encoding(bad_cookie, "python")
    # A bad byte after a BOM is counted from the start of the file.
    dec = Decoder(bom, "utf-8", 3)
    with pytest.raises(FileEncodingError) as info:
        dec.feed(codecs.BOM_UTF8 + b"ok\xff", True)
    assert info.value.offset == 5


def test_pdf_pages_are_sections(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "paper.pdf")
    blocks = list(read_blocks(path, "pdf"))
    assert [(b.page, b.title) for b in blocks if b.section] == [(1, "page 1"), (2, "page 2"), (3, "page 3")]
    text = _text_of(blocks)
    for lines in PDF_PAGES:
        for line in lines:
            assert line in text
    assert text.index("Page two") == blocks[1].start + blocks[1].text.index("Page two")


def test_damaged_and_encrypted_pdfs_raise_a_typed_error(tmp_path: Path) -> None:
    good = make_pdf(tmp_path / "good.pdf").read_bytes()
    truncated = _write(tmp_path, "cut.pdf", good[: len(good) // 3])
    with pytest.raises(DamagedDocumentError) as info:
        list(read_blocks(truncated, "pdf"))
    assert "cut.pdf" in str(info.value)
    garbage = _write(tmp_path, "junk.pdf", b"this is not a pdf at all" * 10)
    with pytest.raises(DamagedDocumentError):
        list(read_blocks(garbage, "pdf"))

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(tmp_path / "good.pdf").pages:
        writer.add_page(page)
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="RC4-128")
    locked = tmp_path / "locked.pdf"
    with open(locked, "wb") as fh:
        writer.write(fh)
    with pytest.raises(DamagedDocumentError, match="password"):
        list(read_blocks(locked, "pdf"))


def test_an_unknown_type_has_no_reader(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFileTypeError):
        read_blocks(_write(tmp_path, "a.bin", b"\0"), "binary")
