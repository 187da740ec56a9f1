"""The archive file format: gzip-compressed JSON Lines, one archived item per line.

Each line is one JSON object holding everything needed to search or restore
the item without re-embedding it:

    {"v": 1, "uid": "...", "namespace": ["lessons"], "key": "l1", "value": {...},
     "created_at": 1.7e9, "updated_at": 1.7e9, "last_accessed_at": 1.7e9,
     "access_count": 3, "expires_at": null, "ttl_minutes": null, "indexed": true,
     "vectors": {"dtype": "<f4", "dims": 384, "b64": ["..."]},
     "texts": ["..."], "paths": ["lesson"], "lineage": {"strategy_id": "s1"},
     "status": {"status": "retired", "reason": "...", ...},
     "archived_at": 1.7e9, "run_id": "..."}

``status`` is present only for a retired or superseded item (see
`langgraph_memory.catalog.status`); a restore brings it back with the item.

Vectors are stored as base64 of little-endian float32, which is exactly what
Chroma holds, so a restored vector is bit-identical to the archived one and a
line is a quarter of the size of a JSON float list. Values go through
``json`` unchanged, so they round-trip bit-exactly (floats by ``repr``).

Files are written once (opened with ``"xb"``), fsynced, and identified by the
SHA-256 of their compressed bytes:

    from langgraph_memory.archive.format import ArchiveWriter, read_lines

    with ArchiveWriter(path) as w:
        w.write(encode_item(item, archived_at=now, run_id="r1"))
    digest, count = w.sha256, w.count
    for line_no, archived in read_lines(path, expected_sha256=digest):
        ...
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from langgraph_memory._infra import sqlite as _sqlite
from langgraph_memory.catalog import StoredItem
from langgraph_memory.catalog.status import ItemStatus
from langgraph_memory.errors import ArchiveIntegrityError, DiskFullError, StorageError

__all__ = [
    "FORMAT_VERSION",
    "ArchivedItem",
    "ArchiveWriter",
    "encode_item",
    "item_record",
    "encode_vectors",
    "decode_vectors",
    "decode_line",
    "read_lines",
    "lineage_links",
    "fsync_dir",
]

FORMAT_VERSION = 1
# Value fields that name another item: typed values carry parent_id; lessons
# name the strategy they are about and the item that resolved them.
LINEAGE_FIELDS = ("parent_id", "strategy_id", "resolution_id")
_CHUNK = 1 << 20
_REQUIRED = ("uid", "namespace", "key", "value", "created_at", "updated_at", "last_accessed_at")


@dataclass
class ArchivedItem:
    """One item as read back from an archive file."""

    item: StoredItem
    collection: str
    file: str
    line: int
    archived_at: float
    run_id: str
    lineage: dict[str, Any] = field(default_factory=dict)
    #: set when the item was retired or superseded when it was archived.
    status: ItemStatus | None = None

    @property
    def uid(self) -> str:
        return self.item.uid

    @property
    def key(self) -> str:
        return self.item.key

    @property
    def namespace(self) -> tuple[str, ...]:
        return self.item.namespace

    @property
    def value(self) -> dict[str, Any]:
        return self.item.value

    def explain(self) -> str:
        """Where the item went and how to bring it back, for a reader who looked for it in live memory.

        Examples:
            >>> archived.explain()  # needs an archived item  # doctest: +SKIP
            "'l-17' is archived: it left live memory on 2026-12-06 03:00 UTC (lessons_learned-....jsonl.gz). ..."
        """
        when = datetime.fromtimestamp(self.archived_at, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
        text = f"{self.key!r} is archived: it left live memory on {when} ({self.file})"
        if self.status is not None:
            text += f", {hidden_because(self.status)}"
        text += (
            f". Restore it with `langgraph-memory archive restore --key {self.key}` "
            f"(in Python: memory.archiver.restore(keys=[{self.key!r}]))"
        )
        if self.status is not None:
            text += f"; it comes back {self.status.status}, as it was, until `langgraph-memory reinstate {self.key}`"
        return text + "."


def hidden_because(st: ItemStatus) -> str:
    """Why searches leave an item out, in words: ``retired (reason: stale)`` or ``superseded by <id>``."""
    if st.status == "superseded" and st.superseded_by:
        return f"superseded by {st.superseded_by}" + (f" ({st.reason})" if st.reason else "")
    return f"{st.status} ({st.reason or 'no reason given'})"


def lineage_links(value: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The lineage links of a value: its ``parent_id``/``strategy_id``/``resolution_id`` that are set."""
    links = {name: value[name] for name in LINEAGE_FIELDS if value.get(name) is not None}
    if extra:
        links.update(extra)
    return links


def encode_vectors(vectors: Any) -> dict[str, Any] | None:
    """Vectors as ``{"dtype": "<f4", "dims": n, "b64": [...]}`` (bit-exact float32), or None for none."""
    if not vectors:
        return None
    arr = np.asarray(vectors, dtype="<f4")
    return {
        "dtype": "<f4",
        "dims": int(arr.shape[1]),
        "b64": [base64.b64encode(row.tobytes()).decode("ascii") for row in arr],
    }


def decode_vectors(blob: dict[str, Any] | None) -> np.ndarray | None:
    """The vectors of a line as an ``(n, dims)`` float32 array, or None if unindexed."""
    if not blob:
        return None
    try:
        dims = int(blob["dims"])
        raw = b"".join(base64.b64decode(s, validate=True) for s in blob["b64"])
        return np.frombuffer(raw, dtype=blob.get("dtype", "<f4")).reshape(-1, dims)
    except (KeyError, TypeError, ValueError) as exc:  # binascii.Error is a ValueError
        # Damaged gzip data can decompress to garbage before the stream's CRC is checked.
        raise ArchiveIntegrityError(f"an archive line holds unreadable vectors ({exc}); the file is damaged") from None


def item_record(item: StoredItem) -> dict[str, Any]:
    """An item's own fields as JSON-ready data, vectors as base64 float32 (archive lines and share bundles)."""
    return {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": item.value,
        "created_at": item.created_at,
        "updated_at": item.updated_at,
        "last_accessed_at": item.last_accessed_at,
        "access_count": item.access_count,
        "expires_at": item.expires_at,
        "ttl_minutes": item.ttl_minutes,
        "indexed": item.indexed,
        "n_vectors": item.n_vectors,
        "vectors": encode_vectors(item.vectors) if item.indexed else None,
        "paths": list(item.paths),
    }


def encode_item(
    item: StoredItem,
    *,
    archived_at: float,
    run_id: str,
    lineage: dict[str, Any] | None = None,
    status: ItemStatus | None = None,
) -> bytes:
    """One archive line (with the trailing newline) for ``item`` (``status``: its retired/superseded state)."""
    record = {
        "v": FORMAT_VERSION,
        "uid": item.uid,
        **item_record(item),
        "texts": list(item.texts),
        "lineage": lineage_links(item.value, lineage),
        "archived_at": archived_at,
        "run_id": run_id,
    }
    if status is not None:
        record["status"] = status.as_dict()
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8") + b"\n"


def parse_line(line: bytes) -> dict[str, Any]:
    """The JSON object of one line (no vector decoding); garbage raises ArchiveIntegrityError.

    Damaged gzip data can decompress to garbage before gzip's own CRC check
    at the end of the stream notices, so a bad line is an integrity error.
    """
    try:
        record = json.loads(line)
    except ValueError as exc:
        raise ArchiveIntegrityError(f"an archive line is unreadable ({exc}); the file is damaged") from None
    if not isinstance(record, dict) or not all(k in record for k in _REQUIRED):
        raise ArchiveIntegrityError("an archive line lacks item fields; the file is damaged")
    return record


def decode_line(record: dict[str, Any], *, collection: str, file: str, line: int) -> ArchivedItem:
    """An [`ArchivedItem`][langgraph_memory.archive.ArchivedItem] from a parsed line, vectors as Python floats."""
    vecs = decode_vectors(record.get("vectors"))
    item = StoredItem(
        namespace=tuple(record["namespace"]),
        key=record["key"],
        value=record["value"],
        created_at=record["created_at"],
        updated_at=record["updated_at"],
        last_accessed_at=record["last_accessed_at"],
        access_count=record["access_count"],
        expires_at=record.get("expires_at"),
        ttl_minutes=record.get("ttl_minutes"),
        indexed=bool(record.get("indexed", True)),
        n_vectors=int(record.get("n_vectors", 1)),
        vectors=vecs.astype(np.float64).tolist() if vecs is not None else [],
        texts=list(record.get("texts") or []),
        paths=list(record.get("paths") or []),
    )
    status = record.get("status")
    return ArchivedItem(
        item=item,
        collection=collection,
        file=file,
        line=line,
        archived_at=float(record.get("archived_at", 0.0)),
        run_id=str(record.get("run_id", "")),
        lineage=dict(record.get("lineage") or {}),
        status=ItemStatus.from_dict(status, item.namespace, item.key, collection) if isinstance(status, dict) else None,
    )


def fsync_dir(path: Path) -> None:
    """Make a directory entry (a new or renamed file) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _HashingWriter:
    """A file object that hashes and counts what gzip writes through it."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.sha.update(data)
        self.size += len(data)
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()


class ArchiveWriter:
    """Writes one new archive file; refuses to overwrite an existing one.

    After ``close()`` the file is flushed and fsynced, and ``sha256``,
    ``count`` and ``size`` describe it. A write that finds no room (a full
    disk, ``ENOSPC``, or a file size limit, ``EFBIG``) raises
    [`DiskFullError`][langgraph_memory.errors.DiskFullError]; other OS errors raise
    [`ReadOnlyError`][langgraph_memory.errors.ReadOnlyError] or
    [`StorageError`][langgraph_memory.errors.StorageError], each naming the file.
    `abort()` never raises, so a caller's cleanup cannot hide the error.

    Examples:
        >>> with ArchiveWriter(path) as w:  # writes an archive file at the caller's path  # doctest: +SKIP
        ...     w.write(encode_item(item, archived_at=time.time(), run_id="r1"))
    """

    def __init__(self, path: Path, *, compresslevel: int = 6) -> None:
        self.path = Path(path)
        try:
            self._raw = open(self.path, "xb")  # "x": a name is never reused, a file never overwritten
        except OSError as exc:
            raise self._error(exc, "create") from exc
        self._hash = _HashingWriter(self._raw)
        # mtime=0 and no file name: the bytes depend only on the items.
        self._gz = gzip.GzipFile(filename="", mode="wb", fileobj=self._hash, compresslevel=compresslevel, mtime=0)
        self.count = 0
        self.sha256: str | None = None
        self.size = 0
        self._closed = False

    def _error(self, exc: OSError, what: str) -> StorageError:
        err = _sqlite.translate(exc, self.path, f"{what} the archive file")
        if isinstance(err, DiskFullError):
            return DiskFullError(
                f"no room to write the archive file {self.path} ({exc.strerror or exc}): the disk is full "
                "or a file size limit was reached. Nothing was deleted from the live store on its account. "
                "Free some space (or raise the limit) and run the archive again.",
                self.path,
            )
        assert isinstance(err, StorageError)
        return err

    def write(self, line: bytes) -> None:
        """Write one encoded line (`encode_item`, or a thread's checkpoint)."""
        try:
            self._gz.write(line)
        except OSError as exc:
            raise self._error(exc, "write") from exc
        self.count += 1

    def close(self) -> None:
        """Finish the gzip stream, flush and fsync the file and its directory."""
        if self._closed:
            return
        self._closed = True
        try:
            self._gz.close()
            self._raw.flush()
            os.fsync(self._raw.fileno())
            self._raw.close()
            fsync_dir(self.path.parent)
        except OSError as exc:
            self._close_quietly()
            raise self._error(exc, "finish") from exc
        self.sha256 = self._hash.sha.hexdigest()
        self.size = self._hash.size

    def abort(self) -> None:
        """Close without caring about the content (the caller discards the file); never raises."""
        self._closed = True
        self._close_quietly()

    def _close_quietly(self) -> None:
        # On a full disk closing flushes, and fails, again: the file is thrown
        # away, and the caller is already raising the first error.
        for close in (self._gz.close, self._raw.close):
            try:
                close()
            except Exception:  # noqa: BLE001, S110
                pass

    def __enter__(self) -> ArchiveWriter:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


class _HashingReader:
    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.sha = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.sha.update(data)
        return data

    def drain(self) -> None:
        while self.read(_CHUNK):
            pass


def read_lines(
    path: Path, *, expected_sha256: str | None = None, expected_count: int | None = None
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line number, raw line)`` of an archive file, then check it.

    The checksum and count can only be known at the end, so the final check
    raises [`ArchiveIntegrityError`][langgraph_memory.errors.ArchiveIntegrityError] *after* the last line: callers that
    must not act on a bad file collect first and act once iteration ended.
    Unreadable gzip data (truncation, flipped bits) raises the same error.
    """
    path = Path(path)
    try:
        raw = open(path, "rb")
    except FileNotFoundError:
        raise ArchiveIntegrityError(f"archive file {path} is missing; it is listed in the manifest") from None
    except OSError as exc:
        raise StorageError(f"could not read archive file {path}: {exc}", path) from exc
    count = 0
    with raw:
        reader = _HashingReader(raw)
        try:
            with gzip.GzipFile(fileobj=reader, mode="rb") as gz:  # type: ignore[call-overload]  # reads like a file
                for line in gz:
                    if not line.endswith(b"\n"):
                        raise ArchiveIntegrityError(f"archive file {path} ends in a partial line")
                    yield count, line
                    count += 1
            reader.drain()
        except (OSError, EOFError, zlib.error) as exc:
            raise ArchiveIntegrityError(
                f"archive file {path} is corrupted or truncated ({exc}); its items were not deleted "
                "from the live store on its account. Restore it from a backup, or drop it with "
                "`langgraph-memory archive verify`."
            ) from None
        digest = reader.sha.hexdigest()
    if expected_sha256 is not None and digest != expected_sha256:
        raise ArchiveIntegrityError(
            f"archive file {path} has SHA-256 {digest}, but the manifest records {expected_sha256}: "
            "the file was modified or damaged after it was written."
        )
    if expected_count is not None and count != expected_count:
        raise ArchiveIntegrityError(f"archive file {path} holds {count} items, the manifest records {expected_count}")
