"""Reading archives back: iterate, check, search and look up archived items.

Everything here only reads archive files (each checked against its manifest
checksum and line count) and the manifest's item index: no lock is taken and
neither the live store nor the manifest is changed. It is kept apart from the
archiver so the read side can be followed without the run's crash-safety
machinery. [`Archiver`][langgraph_memory.Archiver] methods of the
same names are the public way in.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from langgraph_memory.archive.format import ArchivedItem, decode_line, decode_vectors, parse_line, read_lines
from langgraph_memory.archive.manifest import READABLE, ArchiveFile, Manifest
from langgraph_memory.archive.reports import ArchiveHit
from langgraph_memory.errors import ArchiveIntegrityError, ConfigError
from langgraph_memory.research.collections import collection_by_name
from langgraph_memory.search.filters import matches, validate_filter

logger = logging.getLogger(__name__)


def iter_items(
    manifest: Manifest, archive_dir: Path, files: Iterable[ArchiveFile], filter: dict[str, Any] | None
) -> Iterator[ArchivedItem]:
    """The live lines of ``files`` (item files only) matching ``filter``, each file checked before its first line."""
    for f in files:
        if f.kind != "items":
            continue
        path = archive_dir / f.name
        check_file(path, f)
        for line_no, rec in live_records(manifest, path, f, filter=filter):
            yield decode_line(rec, collection=f.collection, file=f.name, line=line_no)


def live_records(
    manifest: Manifest,
    path: Path,
    f: ArchiveFile,
    *,
    lines: set[int] | None = None,
    prefix: tuple[str, ...] = (),
    filter: dict[str, Any] | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, parsed line)`` of the lines of ``f`` (at ``path``) that still count as archived.

    Only ``lines`` (if given), only namespaces under ``prefix`` (if any) and
    only values matching ``filter``. The manifest's excluded lines are read
    when iteration starts. As with `read_lines()`, a checksum or count
    mismatch raises [`ArchiveIntegrityError`][langgraph_memory.errors.ArchiveIntegrityError] after the last line.
    """
    excluded = manifest.excluded_lines(f.name)
    for line_no, raw in read_lines(path, expected_sha256=f.sha256, expected_count=f.items):
        if line_no in excluded or (lines is not None and line_no not in lines):
            continue
        rec = parse_line(raw)
        if prefix and tuple(rec["namespace"][: len(prefix)]) != prefix:
            continue
        if matches(rec["value"], filter):
            yield line_no, rec


def check_file(path: Path, f: ArchiveFile) -> None:
    """Read ``f`` (at ``path``) through; raises `ArchiveIntegrityError` if its checksum or count is off."""
    for _ in read_lines(path, expected_sha256=f.sha256, expected_count=f.items):
        pass


def verify_files(archive_dir: Path, files: Iterable[ArchiveFile]) -> dict[str, str | None]:
    """``{name: None or problem}`` for each of ``files``; problems are also logged."""
    out: dict[str, str | None] = {}
    for f in files:
        try:
            check_file(archive_dir / f.name, f)
            out[f.name] = None
        except ArchiveIntegrityError as exc:
            out[f.name] = str(exc)
            logger.error("%s", exc)
    return out


def search(
    manifest: Manifest,
    archive_dir: Path,
    store: Any,
    collection: str,
    query: str | None,
    filter: dict[str, Any] | None,
    k: int,
    *,
    namespace_prefix: tuple[str, ...] | None,
    strict: bool,
) -> list[ArchiveHit]:
    """The ``k`` best archived matches in one collection; see ``Archiver.search_archive``.

    ``store`` is only asked for its embedding model, and only when there is a query.
    """
    validate_filter(filter)
    spec = collection_by_name(collection)
    qv: np.ndarray | None = None
    if query:
        if store.cached_embeddings is None:
            raise ConfigError("search_archive with a query needs a store built with index= (an embedding model)")
        qv = np.asarray(store.cached_embeddings.embed_query(query), dtype=np.float32)
        qv = qv / (np.linalg.norm(qv) or 1.0)
    prefix = tuple(namespace_prefix or ())
    best: list[tuple[float, int, str, int, dict[str, Any], str]] = []  # min-heap of (rank, tiebreak, ...)
    counter = itertools.count()
    for f in manifest.files(collection=spec.name, states=READABLE, kind="items"):
        local: list[tuple[float, int, str, int, dict[str, Any], str]] = []
        try:
            for line_no, rec in live_records(manifest, archive_dir / f.name, f, prefix=prefix, filter=filter):
                if qv is not None:
                    vecs = decode_vectors(rec.get("vectors"))
                    if vecs is None:
                        continue
                    # A damaged file can hold any bytes until its checksum fails at its end: a huge
                    # float here is reported then, as an integrity error, not as a numpy warning now.
                    with np.errstate(over="ignore", invalid="ignore"):
                        norms = np.linalg.norm(vecs, axis=1)
                        norms[norms == 0] = 1.0
                        rank = float(np.max(vecs @ qv / norms))
                else:
                    rank = max(rec["updated_at"], rec["last_accessed_at"])
                _push_bounded(local, (rank, -next(counter), f.name, line_no, rec, f.collection), k)
        except ArchiveIntegrityError:
            if strict:
                raise
            logger.error("skipping damaged archive file %s in search", f.name, exc_info=True)
            continue
        for entry in local:  # only a file that verified contributes
            _push_bounded(best, entry, k)
    hits = []
    for rank, _, fname, line_no, rec, coll in sorted(best, reverse=True):
        hits.append(
            ArchiveHit(decode_line(rec, collection=coll, file=fname, line=line_no), rank if qv is not None else None)
        )
    return hits


def _push_bounded(heap: list[Any], entry: Any, k: int) -> None:
    """Add ``entry`` to the min-heap ``heap`` of the ``k`` largest entries seen."""
    if len(heap) < k:
        heapq.heappush(heap, entry)
    elif entry > heap[0]:
        heapq.heapreplace(heap, entry)


def get_items(
    manifest: Manifest, archive_dir: Path, keys: Iterable[str] | None, uids: Iterable[str] | None
) -> list[ArchivedItem]:
    """Archived items by key (any namespace) or uid, found through the manifest's item index."""
    wanted = manifest.archived_lines(uids=list(uids or ()), keys=list(keys or ()))
    out: list[ArchivedItem] = []
    for name, lines in wanted.items():
        f = manifest.file(name)
        assert f is not None
        found = [
            (line_no, parse_line(raw))
            for line_no, raw in read_lines(archive_dir / name, expected_sha256=f.sha256, expected_count=f.items)
            if line_no in lines
        ]
        out.extend(decode_line(rec, collection=f.collection, file=name, line=ln) for ln, rec in found)
    return out
