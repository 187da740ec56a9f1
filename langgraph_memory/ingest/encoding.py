"""Which encoding a text file is in, and decoding it in pieces with the byte offset of any bad byte.

Text files are UTF-8 (a byte-order mark is honoured, UTF-16 included);
Python files may declare another encoding in a coding cookie (PEP 263),
read with `tokenize.detect_encoding()`. `Decoder` decodes a file
block by block and turns a decoding error into
[`FileEncodingError`][langgraph_memory.errors.FileEncodingError] naming the file and the
offset of the first bad byte in the file:

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "notes.txt"
    >>> _ = path.write_bytes(b"caf\\xc3\\xa9 \\xff")
    >>> dec = Decoder(path, *file_encoding(path, "text"))
    >>> dec.feed(b"caf\\xc3")
    'caf'
    >>> dec.feed(b"\\xa9 \\xff", True)
    Traceback (most recent call last):
    ...
    langgraph_memory.errors.FileEncodingError: ... not valid utf-8 at byte offset 6 ...
"""

from __future__ import annotations

import codecs
import os
import tokenize
from pathlib import Path

from langgraph_memory.errors import FileEncodingError, UnreadableFileError

__all__ = ["file_encoding", "Decoder"]

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def file_encoding(path: str | os.PathLike[str], file_type: str) -> tuple[str, int]:
    """``(codec, bytes to skip)`` for a text file: its BOM, a Python coding cookie, else UTF-8.

    Raises:
        FileEncodingError: a Python file declares an encoding Python does not know.
        UnreadableFileError: the file cannot be opened.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
            if file_type == "python":
                fh.seek(0)
                try:
                    declared, _ = tokenize.detect_encoding(fh.readline)
                except SyntaxError as exc:
                    raise FileEncodingError(
                        f"{path}: {exc.msg if hasattr(exc, 'msg') else exc}; fix its coding line (PEP 263)",
                        path,
                        offset=0,
                        encoding="unknown",
                    ) from None
                if declared == "utf-8-sig":
                    return "utf-8", len(codecs.BOM_UTF8)
                return codecs.lookup(declared).name, 0
    except OSError as exc:
        raise UnreadableFileError(f"cannot read {path}: {exc.strerror or exc}", path) from exc
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name, len(bom)
    return "utf-8", 0


class Decoder:
    """Decodes a file's bytes piece by piece; a bad byte raises ``FileEncodingError`` with its offset.

    Args:
        path: the file (for the message).
        encoding: a codec name (see `file_encoding()`).
        skip: bytes at the start of the file that are not text (a BOM):
            fed like the rest, dropped here, counted in offsets.
    """

    def __init__(self, path: str | os.PathLike[str], encoding: str, skip: int = 0) -> None:
        self.path = Path(path)
        self.encoding = encoding
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
        self._skip = skip
        self._fed = 0  # bytes of the file before the next piece

    def feed(self, data: bytes, final: bool = False) -> str:
        """The text of the file's next bytes (an unfinished character waits for the next piece)."""
        if self._skip:
            cut = min(self._skip, len(data))
            self._skip -= cut
            self._fed += cut
            data = data[cut:]
        state = self._decoder.getstate()
        held = state[0] if isinstance(state, tuple) and isinstance(state[0], bytes) else b""
        try:
            text = self._decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            # exc.start counts from the decoder's held-back bytes, which precede ``data``.
            offset = self._fed - len(held) + exc.start
            sample = (held + data)[exc.start : exc.start + 4].hex(" ")
            raise FileEncodingError(
                f"{self.path} is not valid {self.encoding} at byte offset {offset} (bytes {sample}): "
                f"{exc.reason}. Re-save it as UTF-8 (or declare its encoding, for Python files); "
                "nothing of it was stored.",
                self.path,
                offset=offset,
                encoding=self.encoding,
            ) from None
        self._fed += len(data)
        return text
