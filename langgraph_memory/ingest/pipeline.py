"""The ingest pipeline: paths in, chunks and parent records stored through the store, exactly once.

For each file: hash its bytes (SHA-256; bytes already stored in the namespace are skipped, nothing else read);
copy them to ``raw/{sha256}{ext}``, checking on the way that text decodes; claim the file in the catalog
(`langgraph_memory.catalog.files`: another process meeting the same bytes skips them as ``busy``, a dead
process's claim is taken over and its chunks rolled back); then read, chunk and store it through the store's
write path. The file is marked complete in the transaction of its last batch; one that fails part-way has
its stored chunks deleted again (by the next ingest, after a crash). Chunks are keyed ``{sha256}:c{index}``,
parents (``kind="parent"``, not embedded) ``{sha256}:p{index}``, a transcript's turns ``{sha256}:{position}``;
``docs/ingestion.md`` lists their value fields.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import stat
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langgraph.store.base import PutOp

from langgraph_memory.catalog import files as _files
from langgraph_memory.catalog import status as _status
from langgraph_memory.catalog.item_rows import item_uid
from langgraph_memory.errors import EmptyFileError, IngestError, InvalidArgumentError, UnsupportedFileTypeError
from langgraph_memory.ingest.chunkers import make_chunker
from langgraph_memory.ingest.config import DOCUMENTS_NAMESPACE, IngestConfig
from langgraph_memory.ingest.encoding import Decoder, file_encoding
from langgraph_memory.ingest.files import (
    SUPPORTED_TYPES,
    Found,
    Skipped,
    check_path,
    copy_verbatim,
    file_type_of,
    sha256_file,
    walk,
)
from langgraph_memory.ingest.readers import read_blocks
from langgraph_memory.ingest.records import Parent
from langgraph_memory.ingest.report import FileResult, IngestProgress, IngestReport
from langgraph_memory.ingest.transcripts import Message, read_transcript
from langgraph_memory.research.collections import COLLECTIONS
from langgraph_memory.store.namespaces import validate_namespace

__all__ = ["Ingestor", "chunk_key", "parent_key", "turn_key", "PreviousVersion"]

logger = logging.getLogger(__name__)

Progress = Callable[[IngestProgress], None]
_TEXT_TYPES = frozenset(SUPPORTED_TYPES.values()) - {"pdf"}


def chunk_key(sha256: str, index: int) -> str:
    """The store key of a file's chunk."""
    return f"{sha256}:c{index:06d}"


def parent_key(sha256: str, index: int) -> str:
    """The store key of a file's parent record."""
    return f"{sha256}:p{index:05d}"


@dataclass(frozen=True)
class PreviousVersion:
    """The version a changed file replaces: what a supersede needs.

    Attributes:
        sha256: the hash the path had when last ingested.
        keys: the keys of that version's chunks and parents (in the same namespace).
        other_paths: other paths whose latest ingest had those same bytes; while
            there are any, that version is still current for them.
    """

    sha256: str
    keys: list[str]
    other_paths: list[str]


def check_namespace(namespace: Sequence[str]) -> tuple[str, ...]:
    """A namespace for documents: valid for a put, and in the general collection."""
    if isinstance(namespace, str):
        raise InvalidArgumentError(f"namespace must be a tuple of labels such as ('documents',), got {namespace!r}")
    ns = validate_namespace(tuple(namespace), for_write=True)
    if ns[0] in COLLECTIONS:
        raise InvalidArgumentError(
            f"documents go to the general collection; the namespace {ns!r} starts with the typed label {ns[0]!r}. "
            "Use another first label, such as ('documents', ...)."
        )
    return ns


class Ingestor:
    """Files and folders into one store's general collection.

    Args:
        store: a ``ChromaStore`` with an embedding model (``index=``).
        raw_dir: where verbatim copies go (``<data_dir>/raw``).
        config: chunking and batching settings (default [`IngestConfig`][langgraph_memory.IngestConfig]).
    """

    def __init__(self, store: Any, *, raw_dir: Path, config: IngestConfig | None = None) -> None:
        if getattr(store, "embeddings", None) is None:
            raise InvalidArgumentError("ingest needs a store with an embedding model (ChromaStore(index=...))")
        self.store = store
        self.catalog = store.catalog
        self.raw_dir = Path(raw_dir)
        self.config = config or IngestConfig()
        self.owner = _files.new_owner()

    # ----------------------------------------------------------------- entry

    def ingest(
        self,
        paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
        *,
        namespace: Sequence[str] = DOCUMENTS_NAMESPACE,
        episode_id: str | None = None,
        errors: Literal["raise", "report"] = "raise",
        progress: Progress | None = None,
    ) -> IngestReport:
        """Ingest files and folders (recursively); see the module docstring.

        Problems with a path given by name (missing, a link loop, unreadable,
        an unsupported type, empty) raise before anything is stored. A file
        found in a folder that cannot be ingested is reported (``failed`` or
        ``skipped``) and the others go on; with ``errors="raise"`` a file
        given by name that fails while being read raises.
        """
        if errors not in ("raise", "report"):
            raise InvalidArgumentError(f"errors must be 'raise' or 'report', got {errors!r}")
        if episode_id is not None and not isinstance(episode_id, str):
            raise InvalidArgumentError(f"episode_id must be a string, got {type(episode_id).__name__}")
        ns = check_namespace(namespace)
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        paths = list(paths)
        if not paths:
            raise InvalidArgumentError("nothing to ingest: give at least one file or folder")
        started = time.monotonic()
        for p in paths:  # every named path is checked before anything is stored
            root, st = check_path(p)
            if stat.S_ISREG(st.st_mode) and (refused := self._refusal(Found(root, file_type_of(root), st.st_size))):
                raise refused[0]
        data_dir = [self.store.settings.data_dir]  # never ingest the memory's own files
        entries: list[Found | Skipped] = [
            e for p in paths for e in walk(p, include_hidden=self.config.include_hidden, exclude=data_dir)
        ]
        if progress is not None:
            progress(IngestProgress("found", files=len(entries)))
        report = IngestReport()
        for entry in entries:
            result = self._entry(entry, ns, episode_id, errors, progress)
            report.files.append(result)
            if progress is not None:
                progress(IngestProgress("done", path=result.path, result=result))
        report.seconds = time.monotonic() - started
        logger.info("ingest into %s: %s in %.1f s", "/".join(ns), report.counts(), report.seconds)
        return report

    def _reads(self, file_type: str | None) -> bool:
        """Whether this ingest reads files of ``file_type`` (JSON only as a transcript)."""
        return file_type is not None and (file_type != "json" or self.config.chunker == "conversation")

    def _refusal(self, found: Found) -> tuple[IngestError, str] | None:
        """What stops ingest reading ``found``, if anything: the error a named file raises, and a found one's reason."""
        path = found.path
        if found.file_type == "json" and not self._reads("json"):
            why = f"{path} is JSON, which ingest reads only as a chat transcript: "
            why += "ingest it with chunker='conversation' (--chunker conversation)"
        elif not self._reads(found.file_type):
            why = f"{path} is not a type ingest reads ({path.suffix or 'no extension'}); "
            why += f"supported: {', '.join(sorted(SUPPORTED_TYPES))}"
        elif found.size == 0:
            return EmptyFileError(f"{path} is empty; there is nothing to ingest", path), "empty file"
        else:
            return None
        return UnsupportedFileTypeError(why, path), f"unsupported type ({path.suffix or 'none'})"

    def _entry(
        self,
        entry: Found | Skipped,
        ns: tuple[str, ...],
        episode_id: str | None,
        errors: str,
        progress: Progress | None,
    ) -> FileResult:
        if isinstance(entry, Skipped):
            return FileResult(entry.path, "skipped", reason=entry.reason, error=entry.error)
        if (refused := self._refusal(entry)) is not None:
            logger.info("skipping %s: %s", entry.path, refused[1])
            return FileResult(entry.path, "skipped", file_type=entry.file_type, size=entry.size, reason=refused[1])
        if progress is not None:
            progress(IngestProgress("file", path=entry.path))
        started = time.monotonic()
        try:
            result = self._file(entry, ns, episode_id, progress)
        except IngestError as exc:
            if entry.explicit and errors == "raise":
                raise
            logger.warning("could not ingest %s: %s", entry.path, exc)
            status: Literal["skipped", "failed"] = "skipped" if isinstance(exc, EmptyFileError) else "failed"
            result = FileResult(
                entry.path, status, file_type=entry.file_type, size=entry.size, reason=str(exc), error=exc
            )
        result.seconds = time.monotonic() - started
        return result

    # ------------------------------------------------------------- one file

    def _file(self, found: Found, ns: tuple[str, ...], episode_id: str | None, progress: Progress | None) -> FileResult:
        path, kind = found.path, found.file_type
        assert kind is not None
        uri = path.as_uri()
        sha = sha256_file(path)
        result = FileResult(path, "ingested", sha256=sha, file_type=kind, size=found.size)
        with self.catalog.read() as conn:
            stored = _files.get_file(conn, ns, sha)
            before_sha = _files.path_hash(conn, ns, uri)
        previous = self._previous(ns, uri, before_sha, sha)
        if previous is not None:
            result.replaces, result.replaced_keys = previous.sha256, previous.keys
        if stored is not None and stored.complete:
            return self._duplicate(result, ns, uri, stored, previous)
        raw = copy_verbatim(path, self.raw_dir, sha, check=self._decode_check(path, kind))
        now = time.time()
        with self.catalog.write() as conn:
            state, row = _files.claim(
                conn,
                ns,
                sha,
                owner=self.owner,
                now=now,
                stale_after=self.config.stale_claim_seconds,
                file_type=kind,
                size=found.size,
                source_uri=uri,
                episode_id=episode_id,
                chunker=json.dumps(self.config.describe(), sort_keys=True),
            )
        if state == "complete":
            assert row is not None
            return self._duplicate(result, ns, uri, row, previous)
        if state == "busy":
            assert row is not None
            result.status, result.reason = "busy", f"being ingested by another process ({row.owner})"
            return result
        if row is not None:
            logger.warning("taking over %s from %s, which is gone; rolling its chunks back", path, row.owner)
            self._rollback(ns, sha)
        try:
            result.chunks, result.parents = self._store(raw, kind, ns, sha, uri, episode_id, previous, progress, path)
        except BaseException:
            self._abandon(ns, sha)
            raise
        return result

    def _duplicate(
        self,
        result: FileResult,
        ns: tuple[str, ...],
        uri: str,
        stored: _files.IngestedFile,
        previous: PreviousVersion | None,
    ) -> FileResult:
        with self.catalog.write() as conn:
            _files.record_path(conn, ns, uri, stored.sha256, now=time.time())
            if previous is not None:  # the path went back to bytes stored before
                self._supersede_previous(conn, ns, uri, previous, stored.sha256)
        result.status = "duplicate"
        result.reason = "same bytes as " + stored.source_uri if stored.source_uri != uri else "unchanged"
        logger.info("skipping %s: already ingested (%s)", result.path, result.reason)
        return result

    def _previous(self, ns: tuple[str, ...], uri: str, before_sha: str | None, sha: str) -> PreviousVersion | None:
        """The version this path had, when it held other bytes (a changed file)."""
        if before_sha is None or before_sha == sha:
            return None
        with self.catalog.read() as conn:
            old = _files.get_file(conn, ns, before_sha)
            others = [p for p in _files.paths_of(conn, ns, before_sha) if p != uri]
        if old is None or not old.complete:
            return None
        return PreviousVersion(before_sha, _version_keys(old), others)

    @staticmethod
    def _decode_check(path: Path, kind: str) -> Callable[[bytes, bool], object] | None:
        """For a text file, a check that each block decodes (raising with the bad byte's offset)."""
        if kind not in _TEXT_TYPES:
            return None
        return Decoder(path, *file_encoding(path, kind)).feed

    # -------------------------------------------------------------- storing

    def _store(
        self,
        raw: Path,
        kind: str,
        ns: tuple[str, ...],
        sha: str,
        uri: str,
        episode_id: str | None,
        previous: PreviousVersion | None,
        progress: Progress | None,
        path: Path,
    ) -> tuple[int, int]:
        """Store the file's chunks and parents (or a transcript's turns) in batches; return how many of each."""
        cfg = self.config
        meta = {
            "source_uri": uri,
            "episode_id": episode_id,
            "content_hash": sha,
            "file_type": kind,
            "chunker": cfg.chunker,
        }
        # Each group is stored whole in one batch: a parent with its chunks, or one turn.
        groups: Iterable[tuple[list[PutOp], int, int]]
        if cfg.chunker == "conversation":
            messages = read_transcript(raw, str(path))
            groups = (([_turn_op(m, i, ns, sha, meta)], 1, len(m.text)) for i, m in enumerate(messages))
        else:
            parents = make_chunker(cfg).chunk_blocks(read_blocks(raw, kind, block_chars=cfg.read_block_chars), kind)
            groups = ((_ops(p, ns, sha, meta), len(p.chunks), sum(len(c.content) for c in p.chunks)) for p in parents)
        batch: list[PutOp] = []
        n_batch_chunks = n_batch_chars = n_chunks = n_groups = 0
        for ops, n, size in groups:
            if batch and (n_batch_chunks + n > cfg.batch_max_chunks or n_batch_chars + size > cfg.batch_max_chars):
                self._put(batch, ns, sha, final=None)
                if progress is not None:
                    progress(IngestProgress("stored", path=path, chunks=n_batch_chunks))
                batch, n_batch_chunks, n_batch_chars = [], 0, 0
            batch.extend(ops)
            n_batch_chunks += n
            n_batch_chars += size
            n_chunks += n
            n_groups += 1
        n_parents = 0 if cfg.chunker == "conversation" else n_groups
        if not n_chunks:
            what = "no message" if cfg.chunker == "conversation" else "no text"
            pdf = ", or a PDF without a text layer" if kind == "pdf" else ""
            detail = "" if cfg.chunker == "conversation" else f" (only blank space{pdf})"
            raise EmptyFileError(f"{path} holds {what} to ingest{detail}", path)
        self._put(batch, ns, sha, final=(uri, n_chunks, n_parents, previous))
        if progress is not None:
            progress(IngestProgress("stored", path=path, chunks=n_batch_chunks))
        return n_chunks, n_parents

    def _put(
        self,
        ops: list[PutOp],
        ns: tuple[str, ...],
        sha: str,
        *,
        final: tuple[str, int, int, PreviousVersion | None] | None,
    ) -> None:
        def before(conn: Any) -> None:
            now = time.time()
            if final is None:
                _files.heartbeat(conn, ns, sha, self.owner, now=now)
                return
            uri, n_chunks, n_parents, previous = final
            _files.complete(conn, ns, sha, self.owner, n_chunks=n_chunks, n_parents=n_parents, now=now)
            _files.record_path(conn, ns, uri, sha, now=now)
            if previous is not None:
                self._supersede_previous(conn, ns, uri, previous, sha)

        self.store.items.put_many(ops, before=before)

    def _supersede_previous(
        self, conn: Any, ns: tuple[str, ...], uri: str, previous: PreviousVersion, current_sha: str
    ) -> None:
        """Make ``current_sha`` the version of ``uri``, in the transaction that records it.

        The old version's chunks and parents are superseded by the new
        version's first parent record (they stop being recalled, keep their
        lineage and stay listable with ``include_retired=True``), unless
        another path still holds the old bytes. A version coming back (the
        file went back to bytes stored before) is made current again: the
        supersede an earlier change put on it is lifted (a retire is not).
        """
        current = _files.get_file(conn, ns, current_sha)
        if current is not None:
            uids = [item_uid(ns, k) for k in _version_keys(current)]
            _status.clear(conn, [u for u, st in _status.get(conn, uids).items() if st.status == "superseded"])
        if previous.other_paths:
            logger.info(
                "%s changed (was %s); %s still holds the old bytes, which stay current",
                uri,
                previous.sha256[:12],
                previous.other_paths[0],
            )
            return
        self.store.items.set_status_in(
            conn,
            [(ns, k) for k in previous.keys],
            "superseded",
            reason=f"{uri} changed",
            superseded_by=(ns, _head_key(current_sha, current)),
        )
        logger.info(
            "%s changed (was %s): its %d chunks and parents are superseded",
            uri,
            previous.sha256[:12],
            len(previous.keys),
        )

    def _rollback(self, ns: tuple[str, ...], sha: str) -> int:
        """Delete every chunk and parent of ``sha`` in ``ns`` (an unfinished ingest's); return how many."""
        deleted = 0
        skip = 0
        while True:
            hits = self.store.search(ns, filter={"content_hash": sha}, limit=500, offset=skip)
            if not hits:
                return deleted
            mine = [h for h in hits if tuple(h.namespace) == ns]
            skip += len(hits) - len(mine)
            if mine:
                self.store.batch([PutOp(ns, h.key, None) for h in mine])
                deleted += len(mine)

    def _abandon(self, ns: tuple[str, ...], sha: str) -> None:
        """After a failure: roll back what this file stored, and give up the claim."""
        try:
            self._rollback(ns, sha)
            with self.catalog.write() as conn:
                _files.release(conn, ns, sha, self.owner)
        except Exception:  # noqa: BLE001 - the original error is the one to report; the next ingest cleans up
            logger.warning(
                "could not roll back the unfinished ingest of %s; the next ingest will", sha[:12], exc_info=True
            )


def _version_keys(file: _files.IngestedFile) -> list[str]:
    """The keys of everything an ingested file stored: its chunks and parents, or a transcript's turns."""
    if _is_transcript(file):
        return [turn_key(file.sha256, i) for i in range(file.n_chunks)]
    keys = [chunk_key(file.sha256, i) for i in range(file.n_chunks)]
    return keys + [parent_key(file.sha256, i) for i in range(file.n_parents)]


def _head_key(sha: str, file: _files.IngestedFile | None) -> str:
    """The record that stands for a version (what an older version is superseded by)."""
    return turn_key(sha, 0) if file is not None and _is_transcript(file) else parent_key(sha, 0)


def _is_transcript(file: _files.IngestedFile) -> bool:
    try:
        return bool(file.chunker) and json.loads(file.chunker or "{}").get("chunker") == "conversation"
    except ValueError:
        return False


def turn_key(sha256: str, position: int) -> str:
    """The key of a transcript's turn: ``{sha256}:{position}`` (the file is the thread; see `neighbours`)."""
    return f"{sha256}:{position}"


def _turn_op(m: Message, position: int, ns: tuple[str, ...], sha: str, meta: dict[str, Any]) -> PutOp:
    value = {
        "kind": "turn",
        "content": f"{m.speaker}: {m.text}",
        "speaker": m.speaker,
        "text": m.text,
        "timestamp": m.at,
        "turn_index": position,
        **meta,
    }
    return PutOp(ns, turn_key(sha, position), value, index=["content"])


def _ops(parent: Parent, ns: tuple[str, ...], sha: str, meta: dict[str, Any]) -> list[PutOp]:
    pkey = parent_key(sha, parent.index)
    ops = [
        PutOp(
            ns,
            chunk_key(sha, c.index),
            {
                "kind": "chunk",
                "content": c.content,
                "chunk_index": c.index,
                **meta,
                **dataclasses.asdict(c.metadata),  # start_char, end_char, overlap_start, overlap_end, semantic_boundary
                "parent_key": pkey,
                "title": c.title,
                "page": c.page,
            },
            index=["content"],
        )
        for c in parent.chunks
    ]
    ops.append(
        PutOp(
            ns,
            pkey,
            {
                "kind": "parent",
                "content": parent.content,
                "parent_index": parent.index,
                **meta,
                "start_char": parent.start_char,
                "end_char": parent.end_char,
                "first_chunk": parent.chunks[0].index,
                "n_chunks": len(parent.chunks),
                "title": parent.title,
                "page": parent.page,
            },
            index=False,
        )
    )
    return ops
