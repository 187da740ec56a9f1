"""PDF files read with ``pypdf``, page by page: each page opens a section.

The file stays open while its pages are read, one at a time, so memory
holds one page's text (pypdf would otherwise read the whole file into
memory first). The document's text is its pages' text joined by a blank
line; chunk offsets count in that text. A PDF encrypted with a password
other than the empty one, or too damaged for pypdf, raises
[`DamagedDocumentError`][langgraph_memory.errors.DamagedDocumentError].

::

    >>> blocks = pdf_blocks(Path("paper.pdf"))  # needs a PDF file  # doctest: +SKIP
    >>> [(b.page, b.title) for b in blocks if b.section]  # continues the example above (needs a PDF file)  # doctest: +SKIP
    [(1, 'page 1'), (2, 'page 2')]
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from langgraph_memory.errors import DamagedDocumentError
from langgraph_memory.ingest.files import _stat_error
from langgraph_memory.ingest.records import Block

__all__ = ["pdf_blocks"]

logger = logging.getLogger(__name__)

_PAGE_SEPARATOR = "\n\n"


def _damaged(path: Path, exc: BaseException) -> DamagedDocumentError:
    return DamagedDocumentError(
        f"{path} cannot be read as a PDF ({type(exc).__name__}: {exc}); it may be truncated or damaged. "
        "Nothing of it was stored.",
        path,
    )


def pdf_blocks(path: Path, *, block_chars: int = 65_536) -> Iterator[Block]:
    """The text of each page of a PDF, a page (or a piece of a long one) per block.

    Raises:
        DamagedDocumentError: pypdf cannot read the file, or it is locked by a password.
        UnreadableFileError: the file cannot be opened.
    """
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise _stat_error(path, exc) from None
    with fh:
        try:
            reader = PdfReader(fh)
            if reader.is_encrypted and not reader.decrypt(""):
                raise DamagedDocumentError(
                    f"{path} is encrypted with a password; decrypt it first (e.g. `qpdf --decrypt`)", path
                )
            n_pages = len(reader.pages)
        except DamagedDocumentError:
            raise
        except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError) as exc:
            raise _damaged(path, exc) from exc
        pos = 0
        for number in range(1, n_pages + 1):
            try:
                text = reader.pages[number - 1].extract_text() or ""
            except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError) as exc:
                raise _damaged(path, exc) from exc
            text = text.replace("\x00", "")
            if number < n_pages:
                text += _PAGE_SEPARATOR
            first = True
            for start in range(0, max(len(text), 1), block_chars):
                piece = text[start : start + block_chars]
                if piece or first:
                    yield Block(piece, pos, section=first, title=f"page {number}" if first else None, page=number)
                pos += len(piece)
                first = False
        logger.debug("read %d pages of %s", n_pages, path)
