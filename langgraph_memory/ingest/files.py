"""The file-system side of ingestion: finding files, hashing them, keeping a verbatim copy.

* `walk()` expands the paths given to ``ingest`` into files, recursively,
  following symbolic links but never round a loop. A path given by name that
  is missing, a loop or unreadable raises a typed error at once; inside a
  folder such a path, an unsupported file or a hidden one is skipped with a
  log line and reported.
* `sha256_file()` hashes a file's bytes in blocks (bounded memory).
* `copy_verbatim()` copies a file to ``raw/{sha256}{ext}`` (the original bytes, kept)
  atomically (a temporary file in ``raw/``, fsync, rename), checking on the
  way that the bytes still hash to what was ingested and, for text, that
  they decode.

::

    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.md").write_text("# Notes")
    >>> _ = (folder / "b.bin").write_bytes(b"\\x00")
    >>> [(f.path.name, f.file_type) for f in walk(folder) if isinstance(f, Found)]
    [('a.md', 'markdown'), ('b.bin', None)]
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import stat
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from langgraph_memory._infra import sqlite as _sqlite
from langgraph_memory.errors import (
    FileChangedError,
    IngestError,
    MissingPathError,
    SymlinkLoopError,
    UnreadableFileError,
)

__all__ = ["SUPPORTED_TYPES", "Found", "Skipped", "walk", "check_path", "sha256_file", "copy_verbatim", "file_type_of"]

logger = logging.getLogger(__name__)

#: File extensions ingest reads, and the reader each goes to.
SUPPORTED_TYPES: dict[str, str] = {
    ".md": "markdown",
    ".txt": "text",
    ".py": "python",
    ".csv": "csv",
    ".pdf": "pdf",
    ".yaml": "yaml",
    ".yml": "yaml",
    # Only as a chat transcript (``IngestConfig(chunker="conversation")``); otherwise skipped as unsupported.
    ".json": "json",
    ".jsonl": "json",
}

_BLOCK = 1 << 20


def file_type_of(path: Path) -> str | None:
    """The reader for ``path`` by its extension, or None when ingest does not read it."""
    return SUPPORTED_TYPES.get(path.suffix.lower())


@dataclass(frozen=True)
class Found:
    """A regular file to ingest (``file_type`` None: not a supported type).

    ``explicit``: named by the caller rather than found in a folder, so
    problems with it raise instead of being reported.
    """

    path: Path
    file_type: str | None
    size: int
    explicit: bool = False


@dataclass(frozen=True)
class Skipped:
    """A path inside a folder that was not ingested, and why."""

    path: Path
    reason: str
    error: IngestError | None = None


def _stat_error(path: Path, exc: OSError, what: str = "read") -> IngestError:
    if exc.errno == errno.ELOOP:
        return SymlinkLoopError(
            f"{path} is a symbolic link loop (it leads back to itself); fix or remove the link", path
        )
    if isinstance(exc, FileNotFoundError):
        if os.path.islink(path):
            return MissingPathError(f"{path} is a symbolic link to {os.readlink(path)}, which does not exist", path)
        return MissingPathError(f"{path} does not exist", path)
    return UnreadableFileError(f"cannot {what} {path}: {exc.strerror or exc}", path)


def check_path(path: str | os.PathLike[str]) -> tuple[Path, os.stat_result]:
    """``path`` made absolute (links kept) and its ``stat``; a typed error when it cannot be used.

    Raises:
        MissingPathError: nothing there, or a link to nothing.
        SymlinkLoopError: a link that leads back to itself.
        UnreadableFileError: no permission, or neither a file nor a folder.
    """
    p = Path(os.path.abspath(os.fspath(path)))
    try:
        st = os.stat(p)
    except OSError as exc:
        raise _stat_error(p, exc) from None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise UnreadableFileError(f"{p} is neither a regular file nor a folder; ingest reads files", p)
    return p, st


def walk(
    path: str | os.PathLike[str],
    *,
    include_hidden: bool = False,
    exclude: Iterable[str | os.PathLike[str]] = (),
) -> Iterator[Found | Skipped]:
    """Files under ``path`` (or ``path`` itself), sorted by name within each folder.

    Folders in ``exclude`` (the data directory itself) are not entered.

    Raises:
        MissingPathError, SymlinkLoopError, UnreadableFileError: for ``path`` itself.
    """
    root, st = check_path(path)
    if stat.S_ISREG(st.st_mode):
        yield Found(root, file_type_of(root), st.st_size, explicit=True)
        return
    seen: set[tuple[int, int]] = set()
    for folder in exclude:
        try:
            ex = os.stat(folder)
        except OSError:
            continue
        seen.add((ex.st_dev, ex.st_ino))  # as if already walked
    yield from _walk_dir(root, (st.st_dev, st.st_ino), (), seen, include_hidden, top=True)


def _walk_dir(
    folder: Path,
    ident: tuple[int, int],
    ancestors: tuple[tuple[int, int], ...],
    seen: set[tuple[int, int]],
    include_hidden: bool,
    *,
    top: bool = False,
) -> Iterator[Found | Skipped]:
    if ident in ancestors:
        loop = SymlinkLoopError(f"{folder} is a symbolic link to a folder above it (a loop); skipped", folder)
        logger.warning("%s", loop)
        yield Skipped(folder, "symlink loop", loop)
        return
    if ident in seen:  # reached again through another link (or the data directory itself)
        logger.info("skipping %s: already walked, or the data directory", folder)
        return
    seen.add(ident)
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        err: IngestError = _stat_error(folder, exc, "list")
        if top:
            raise err from None
        logger.warning("%s", err)
        yield Skipped(folder, "unreadable folder", err)
        return
    for entry in entries:
        path = folder / entry.name
        if entry.name.startswith(".") and not include_hidden:
            logger.debug("skipping hidden %s", path)
            continue
        try:
            st = os.stat(path)
        except OSError as exc:
            err = _stat_error(path, exc)
            logger.warning("skipping %s", err)
            yield Skipped(path, "symlink loop" if isinstance(err, SymlinkLoopError) else "unreadable", err)
            continue
        if stat.S_ISDIR(st.st_mode):
            yield from _walk_dir(path, (st.st_dev, st.st_ino), (*ancestors, ident), seen, include_hidden)
        elif stat.S_ISREG(st.st_mode):
            kind = file_type_of(path)
            if kind is None:
                logger.info("skipping %s: not a supported type (%s)", path, ", ".join(sorted(SUPPORTED_TYPES)))
            yield Found(path, kind, st.st_size)
        else:
            logger.info("skipping %s: not a regular file", path)
            yield Skipped(path, "not a regular file")


def _blocks(path: Path) -> Iterator[bytes]:
    try:
        with open(path, "rb") as fh:
            while block := fh.read(_BLOCK):
                yield block
    except OSError as exc:
        raise _stat_error(path, exc) from None


def sha256_file(path: Path) -> str:
    """The SHA-256 of a file's bytes (hex), read in 1 MiB blocks."""
    digest = hashlib.sha256()
    for block in _blocks(path):
        digest.update(block)
    return digest.hexdigest()


def copy_verbatim(
    src: Path,
    raw_dir: Path,
    digest: str,
    *,
    check: Callable[[bytes, bool], object] | None = None,
) -> Path:
    """Copy ``src`` to ``raw_dir/{digest}{ext}`` atomically and return that path.

    ``check(block, final)`` sees every block (a decoder raising on bad
    text). When the copy exists already it is only read through ``check``.

    Raises:
        FileChangedError: ``src`` no longer hashes to ``digest``.
        FileEncodingError: from ``check``.
        UnreadableFileError: ``src`` cannot be read.
        StorageError: ``raw_dir`` cannot be written (``DiskFullError``, ``ReadOnlyError``).
    """
    dest = raw_dir / f"{digest}{src.suffix.lower()}"
    if dest.exists():
        if check is not None:
            for block in _blocks(dest):
                check(block, False)
            check(b"", True)
        return dest
    tmp = raw_dir / f".{digest}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    hasher = hashlib.sha256()
    try:
        # Our own errors (a bad byte, an unreadable source) pass through; the
        # disk's (full, read-only) come out typed, naming the copy.
        with _sqlite.guarded(tmp, "write the verbatim copy"), open(tmp, "wb") as out:
            for block in _blocks(src):
                hasher.update(block)
                if check is not None:
                    check(block, False)
                out.write(block)
            if check is not None:
                check(b"", True)
            out.flush()
            os.fsync(out.fileno())
        if hasher.hexdigest() != digest:
            raise FileChangedError(f"{src} changed while it was being ingested; retry once it is written", src)
        with _sqlite.guarded(dest, "write the verbatim copy"):
            os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(raw_dir)
    return dest


def _fsync_dir(folder: Path) -> None:
    """Make the copy's new name durable (a directory entry)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
