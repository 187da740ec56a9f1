"""The archiver: stale memories move to compressed files that stay searchable and restorable.

A run, per collection:

1. *scan* the live collection a page at a time and pick items whose last
   activity (``max(updated_at, last_accessed_at)``) is older than its
   retention policy, plus retired items at once and superseded items idle
   for ``superseded_after_days`` (in every collection, with or without a
   policy; see `langgraph_memory.catalog.status`);
2. *write* them, with their vectors, to a new file reserved in the manifest
   as ``writing``; flush and fsync it;
3. *verify*: re-read the file, check SHA-256 and count, index its lines and
   mark it ``verified``, all in one manifest transaction;
4. *delete* the items from the live store, a chunk at a time, skipping any
   item that changed since it was archived (it stays live; its archived
   copy is marked superseded); then mark the file ``complete``.

A crash anywhere leaves each item live, or archived, or (between 3 and 4)
both; the next run first *recovers*: unverified files are discarded (their
items are still live), verified files get their deletes finished, and
restores cut short are settled. So every item ends up in exactly one place.

This module holds the [`Archiver`][langgraph_memory.Archiver] (configuration, the lock, and the
order of the steps); each step itself is in `_steps`, reading archives
back in `_reading`, and the thread file format in `_thread_files`.

    from langgraph_memory.archive import Archiver

    archiver = Archiver(store)                     # archive dir: <data_dir>/archive
    print(archiver.run(dry_run=True).total_selected)
    report = archiver.run()
    hits = archiver.search_archive("lessons", "position sizing", k=3)
    archiver.restore(keys=[hits[0].key])
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import filelock

from langgraph_memory._infra import sqlite as _sqlite
from langgraph_memory.archive import _reading, _steps, _thread_files
from langgraph_memory.archive._steps import ProgressCallback
from langgraph_memory.archive.format import ArchivedItem, ArchiveWriter, encode_item
from langgraph_memory.archive.manifest import READABLE, ArchiveFile, FileStats, Manifest
from langgraph_memory.archive.reports import ArchiveHit, ArchiveReport, CollectionReport, RestoreReport
from langgraph_memory.catalog import StoredItem
from langgraph_memory.config import (
    ARCHIVE_AFTER_DAYS,
    MANIFEST_FILE,
    RETIRED_ARCHIVE_AFTER_DAYS,
    SUPERSEDED_ARCHIVE_AFTER_DAYS,
)
from langgraph_memory.errors import (
    ArchiveError,
    ArchiveIntegrityError,
    ConfigError,
    LockTimeoutError,
    ReadOnlyError,
    StorageError,
)
from langgraph_memory.research.collections import COLLECTIONS, GENERAL, RetentionPolicy, collection_by_name
from langgraph_memory.search.filters import validate_filter
from langgraph_memory.store.history import HistoryRetention

__all__ = ["Archiver", "ThreadPruner", "ProgressCallback", "default_policies"]

logger = logging.getLogger(__name__)

_DAY = 86400.0


@runtime_checkable
class ThreadPruner(Protocol):
    """What the archiver needs from a checkpointer to prune idle threads.

    [`SqliteCheckpointer`][langgraph_memory.SqliteCheckpointer] provides it. The
    ``"archive"`` thread strategy additionally uses LangGraph's ``list`` and
    ``serde`` and the saver's ``prune(thread_ids, strategy=...)``.
    """

    def list_threads(self) -> Sequence[Any]:  # items with .thread_id and .last_activity
        ...

    def prune_inactive(self, older_than: timedelta, *, strategy: str = "keep_latest") -> list[str]: ...


def default_policies() -> dict[str, RetentionPolicy | None]:
    """Retention per collection name, from `langgraph_memory.research.collections` (their defaults)."""
    return {spec.name: spec.retention for spec in (*COLLECTIONS.values(), GENERAL)}


def _policy_text(p: RetentionPolicy | None, retired_days: float | None, superseded_days: float | None) -> str:
    parts = []
    if p is not None:
        text = f"idle > {p.after_days:g} days"
        if p.field is not None and p.below is not None:
            text += f" and {p.field} < {p.below:g}"
        parts.append(text)
    if retired_days is not None:
        parts.append("retired at once" if retired_days == 0 else f"retired and idle > {retired_days:g} days")
    if superseded_days is not None:
        parts.append(f"superseded and idle > {superseded_days:g} days")
    return "; ".join(parts) or "never"


def _ts(value: Any) -> float:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.timestamp()
    return float(value)


class Archiver:
    """Moves stale memories to verified, compressed archive files, and reads them back.

    Args:
        store: the live [`ChromaStore`][langgraph_memory.ChromaStore].
        checkpointer: optional; idle threads are pruned (see ``thread_after_days``).
        archive_dir: where archives and the manifest live (default ``<data_dir>/archive``).
        policies: retention per collection (name or label), merged over the
            defaults: a [`RetentionPolicy`][langgraph_memory.archive.RetentionPolicy], a number of idle days, or
            None to never archive that collection.
        thread_after_days: threads idle longer than this are pruned; None: never.
        thread_strategy: ``"keep_latest"`` (prune to the latest checkpoint),
            ``"delete"``, or ``"archive"`` (write the thread's checkpoints to an
            archive file, verify it, then delete the thread).
        compresslevel: gzip level of new files.
        chunk_size: items fetched, written and deleted per step.
        lock_timeout: seconds to wait for another run (default: the store's lock timeout).
        lineage: a `LineageStore` whose parent
            edges are copied into each archived line; default: the store's
            own (``store.lineage``, in its catalog).
        retired_after_days: retired items are archived once idle this long
            (default 0: at once), in every collection; None: never for that reason.
        superseded_after_days: likewise for superseded items (default 90).
        history_retention: how much of each item's history runs keep (a
            `HistoryRetention`); default: all of it. Versions
            of archived items stay in the catalog's history, readable as of their time, until this drops them.
        read_only: read the archive without writing anything (default: whether the store is read-only):
            listing, searching, reading, verifying and dry runs work; a run, a restore, `recover()` and
            `forget()` raise [`ReadOnlyError`][langgraph_memory.errors.ReadOnlyError].

    ``settings`` and ``lineage`` are the store's: one data directory, one of each.

    Examples:
        >>> archiver = Archiver(store, policies={"strategies": 365})  # needs an archiver over a store with stale items  # doctest: +SKIP
        >>> archiver.run(dry_run=True).collections["lessons_learned"].selected  # needs an archiver over a store with stale items  # doctest: +SKIP
        12
    """

    def __init__(
        self,
        store: Any,
        *,
        checkpointer: Any | None = None,
        archive_dir: str | Path | None = None,
        policies: Mapping[str, RetentionPolicy | float | None] | None = None,
        thread_after_days: float | None = ARCHIVE_AFTER_DAYS,
        thread_strategy: str = "keep_latest",
        compresslevel: int = 6,
        chunk_size: int = 500,
        lock_timeout: float | None = None,
        lineage: Any | None = None,
        retired_after_days: float | None = RETIRED_ARCHIVE_AFTER_DAYS,
        superseded_after_days: float | None = SUPERSEDED_ARCHIVE_AFTER_DAYS,
        read_only: bool | None = None,
        history_retention: HistoryRetention | None = None,
    ) -> None:
        if thread_strategy not in ("keep_latest", "delete", "archive"):
            raise ConfigError(f"thread_strategy must be 'keep_latest', 'delete' or 'archive', got {thread_strategy!r}")
        self.store = store
        self.settings = store.settings
        self.checkpointer = checkpointer
        self.archive_dir = Path(archive_dir) if archive_dir is not None else Path(self.settings.archive_dir)
        #: Reads only: nothing is created or changed in the archive folder.
        self.read_only = bool(getattr(store, "read_only", False)) if read_only is None else read_only
        if not self.read_only:
            try:
                self.archive_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise _sqlite.translate(exc, self.archive_dir, "create the archive folder") from exc
        self.policies: dict[str, RetentionPolicy | None] = default_policies()
        for name, pol in (policies or {}).items():
            spec = collection_by_name(name)
            if isinstance(pol, (int, float)) and not isinstance(pol, bool):
                pol = RetentionPolicy(float(pol))
            if pol is not None and not isinstance(pol, RetentionPolicy):
                raise ConfigError(f"policy for {name!r} must be a RetentionPolicy, a number of days or None")
            self.policies[spec.name] = pol
        self.thread_after_days = thread_after_days
        self.retired_after_days = retired_after_days
        self.superseded_after_days = superseded_after_days
        self.thread_strategy = thread_strategy
        if history_retention is not None and not isinstance(history_retention, HistoryRetention):
            raise ConfigError(f"history_retention must be a HistoryRetention, got {history_retention!r}")
        self.history_retention = history_retention or HistoryRetention()
        self.compresslevel = compresslevel
        self.chunk_size = max(1, int(chunk_size))
        timeout = lock_timeout if lock_timeout is not None else float(self.settings.lock_timeout)
        # Thread-local: each thread locks the file through its own descriptor, so threads exclude each other too.
        self._run_lock_file = filelock.FileLock(str(self.archive_dir / "run.lock"), timeout=timeout)
        self.manifest = Manifest(self.archive_dir / MANIFEST_FILE, read_only=self.read_only)
        #: The store's own lineage (its catalog) unless one is given: one lineage per data directory.
        self.lineage = lineage if lineage is not None else getattr(store, "lineage", None)
        # Fault injection for tests: called with a step name at each step boundary.
        self._fault: Callable[[str], None] | None = None

    # ----------------------------------------------------------------- basics

    def close(self) -> None:
        """Close the manifest (the store and checkpointer are the caller's)."""
        self.manifest.close()

    def _lineage_of(self, item: StoredItem) -> dict[str, Any] | None:
        """Parent edges the lineage store knows for this item (by key), for the archived line."""
        if self.lineage is None:
            return None
        try:
            edges = self.lineage.parents(item.key)
        except Exception:  # noqa: BLE001 - e.g. an unregistered id
            return None
        if not edges:
            return None
        return {
            "parents": [{"id": e.parent_id, "relation": e.relation, "collection": e.parent_collection} for e in edges]
        }

    def _hook(self, step: str) -> None:
        if self._fault is not None:
            self._fault(step)

    @contextmanager
    def _exclusive(self, what: str, *, writes: bool = True) -> Iterator[None]:
        """One run or restore at a time, across threads and processes.

        Read-only, a step that ``writes`` raises `ReadOnlyError`; a dry run
        takes no lock (the lock file would be a write) and reads as it goes.
        """
        if self.read_only:
            if writes:
                raise ReadOnlyError(
                    f"the archive in {self.archive_dir} was opened read-only; could not {what}. Open the memory "
                    "without read_only=True (--read-only) to archive, restore or forget.",
                    self.archive_dir,
                )
            yield
            return
        try:
            self._run_lock_file.acquire()
        except filelock.Timeout:
            raise LockTimeoutError(
                f"another run held the archive lock {self._run_lock_file.lock_file} for more than "
                f"{self._run_lock_file.timeout:.0f}s; an archive run is probably in progress. Retry later."
            ) from None
        except OSError as exc:  # e.g. a read-only archive folder
            raise _sqlite.translate(exc, self._run_lock_file.lock_file, "lock") from exc
        try:
            yield
        finally:
            self._run_lock_file.release()

    def _path(self, name: str) -> Path:
        return self.archive_dir / name

    def _new_name(self, collection: str, run_id: str) -> str:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        return f"{collection}-{stamp}-{run_id}.jsonl.gz"

    # --------------------------------------------------------------------- run

    def run(
        self,
        *,
        now: float | datetime | None = None,
        dry_run: bool = False,
        collections: Iterable[str] | None = None,
        progress: ProgressCallback | None = None,
    ) -> ArchiveReport:
        """Archive stale items of every collection with a policy, sweep TTL, prune idle threads.

        ``now`` (epoch seconds or datetime) is the time policies are measured
        from (default: the clock). With ``dry_run`` nothing changes and the
        report says what would move. Integrity failures of one collection are
        logged and listed in ``report.errors``; other exceptions propagate and
        the next run recovers.

        Examples:
            >>> report = archiver.run(dry_run=True)  # needs an archiver over a store with stale items  # doctest: +SKIP
            >>> {c: r.selected for c, r in report.collections.items()}  # needs an open store (store) holding the items named  # doctest: +SKIP
            {'research_findings': 3, 'lessons_learned': 40}
        """
        at = time.time() if now is None else _ts(now)
        report = ArchiveReport(run_id=uuid.uuid4().hex[:12], dry_run=dry_run, now=at, started_at=time.time())
        wanted = None if collections is None else {collection_by_name(c).name for c in collections}
        with self._exclusive("run an archive", writes=not dry_run):
            report.recovered = self.pending_recovery() if dry_run else self._recover()
            report.ttl_swept = self.store.count_expired() if dry_run else int(self.store.sweep_ttl())
            self.store.flush_access()
            for name, policy in self.policies.items():
                if wanted is not None and name not in wanted:
                    continue
                rule = self._selection(name, policy, at)
                if policy is None and not rule.by_status:
                    continue
                cr = CollectionReport(
                    collection=name,
                    policy=_policy_text(policy, self.retired_after_days, self.superseded_after_days),
                )
                report.collections[name] = cr
                try:
                    self._archive_collection(name, rule, report.run_id, cr, dry_run, progress)
                except ArchiveIntegrityError as exc:
                    cr.error = f"{name}: {exc}"
                    report.errors.append(cr.error)
                    logger.error("archive of %s failed verification, nothing deleted: %s", name, exc)
            if wanted is None:
                self._threads(at, report, dry_run)
                keep = self.history_retention
                if not keep.keeps_all:
                    report.history_pruned = self.store.items.prune_history(
                        keep=keep.versions,
                        older_than=None if keep.days is None else at - keep.days * _DAY,
                        dry_run=dry_run,
                    )
            report.finished_at = time.time()
            if not dry_run:
                self.manifest.record_run(
                    report.run_id, report.started_at, report.finished_at, json.dumps(report.as_dict(), default=str)
                )
        logger.info(
            "archive run %s%s: %d items archived, %d expired swept, %d threads %s",
            report.run_id,
            " (dry run)" if dry_run else "",
            report.total_selected if dry_run else report.total_archived,
            report.ttl_swept,
            len(report.threads),
            report.thread_strategy or "-",
        )
        return report

    def _selection(self, name: str, policy: RetentionPolicy | None, now: float) -> _steps.Selection:
        """What a run at ``now`` takes from collection ``name``."""

        def cutoff(days: float | None) -> float | None:
            return None if days is None else now - days * _DAY

        by_status = self.retired_after_days is not None or self.superseded_after_days is not None
        return _steps.Selection(
            policy=policy,
            cutoff=now - (policy.after_days if policy is not None else 0.0) * _DAY,
            statuses=self.store.items.collection_statuses(name) if by_status else {},
            retired_cutoff=cutoff(self.retired_after_days),
            superseded_cutoff=cutoff(self.superseded_after_days),
            # A restored item is left alone for one policy period (the default one without a policy).
            grace_since=now - (policy.after_days if policy is not None else ARCHIVE_AFTER_DAYS) * _DAY,
        )

    def _archive_collection(
        self,
        name: str,
        rule: _steps.Selection,
        run_id: str,
        cr: CollectionReport,
        dry_run: bool,
        progress: ProgressCallback | None,
    ) -> None:
        total = self.store.items.count(name) if progress else None
        if dry_run:
            for chunk in _steps.stale_chunks(self.store, self.manifest, name, rule, self.chunk_size):
                cr.selected += len(chunk)
                cr.count_reasons(rule.reason(it) for it in chunk)
            return
        writer: ArchiveWriter | None = None
        file_name = ""
        stats = FileStats()
        archived_at = time.time()
        try:
            for chunk in _steps.stale_chunks(self.store, self.manifest, name, rule, self.chunk_size):
                cr.selected += len(chunk)
                # Re-read with vectors: the item may have changed since the scan.
                for it in self.store.items.get_items(name, [c.uid for c in chunk], with_vectors=True):
                    why = rule.reason(it)
                    if why is None:
                        continue
                    cr.count_reasons([why])
                    if writer is None:
                        file_name = self._new_name(name, run_id)
                        self.manifest.reserve(file_name, kind="items", collection=name, run_id=run_id)
                        writer = ArchiveWriter(self._path(file_name), compresslevel=self.compresslevel)
                    lineage, status = self._lineage_of(it), rule.status_of(it)
                    writer.write(
                        encode_item(it, archived_at=archived_at, run_id=run_id, lineage=lineage, status=status)
                    )
                    stats.add(it.last_activity, it.created_at)
                if progress:
                    progress("write", name, stats.count, total)
                self._hook("write_chunk")
            if writer is None:
                return
            writer.close()
        except Exception as exc:
            if writer is not None:
                writer.abort()  # never raises, nor does the discard: exc is what the caller gets
                _steps.discard_after_failure(self.manifest, self._path(file_name), exc)
            raise
        cr.file = file_name
        self._hook("after_write")
        try:
            _steps.verify_new(self.manifest, self._path(file_name), name, writer, stats, progress)
        except StorageError as exc:  # e.g. no room to index it: nothing was deleted, so drop the file
            _steps.discard_after_failure(self.manifest, self._path(file_name), exc)
            raise
        cr.archived = writer.count
        self._hook("after_verify")
        f = self.manifest.file(file_name)
        assert f is not None
        deleted, kept = self._finish_deletes(f, progress=progress)
        cr.deleted, cr.kept_live = deleted, kept
        self.manifest.set_state(file_name, "complete")
        logger.info("archived %d items of %s to %s (%d kept live)", cr.archived, name, file_name, kept)

    def _finish_deletes(
        self, f: ArchiveFile, *, precheck: bool = False, progress: ProgressCallback | None = None
    ) -> tuple[int, int]:
        """Delete a verified file's items that are still live and unchanged; return (deleted, kept live)."""
        return _steps.finish_deletes(
            self.store,
            self.manifest,
            f,
            self._path(f.name),
            chunk_size=self.chunk_size,
            hook=self._hook,
            precheck=precheck,
            progress=progress,
        )

    # ---------------------------------------------------------------- recovery

    def recover(self) -> list[str]:
        """Finish or undo what an interrupted run or restore left; return what was done.

        Runs automatically at the start of every `run()`.
        """
        with self._exclusive("recover an interrupted run"):
            return self._recover()

    def pending_recovery(self) -> list[str]:
        """What the next run's recovery will do with what an interrupted run left, in words (nothing is done now).

        Examples:
            >>> archiver.pending_recovery()  # needs an archiver whose last run was cut off  # doctest: +SKIP
            ['would discard unverified lessons_learned-20261126T130419988639Z-bb43c54b8704.jsonl.gz']
        """
        out = [f"would discard unverified {f.name}" for f in self.manifest.files(states=["writing"])]
        out += [f"would finish deletes of {f.name}" for f in self.manifest.files(states=["verified"])]
        n = self.manifest.query("SELECT COUNT(*) FROM items WHERE status='restoring'")[0][0]
        if n:
            out.append(f"would settle {n} interrupted restores")
        return out

    def _recover(self) -> list[str]:
        done: list[str] = []
        for f in self.manifest.files(states=["writing"]):
            _steps.discard(self.manifest, self._path(f.name), "an earlier run stopped before verifying it")
            done.append(f"discarded unverified {f.name}")
        for f in self.manifest.files(states=["verified"]):
            try:
                if f.kind == "threads":
                    self._finish_thread_deletes(f)
                    deleted, kept = f.items or 0, 0
                else:
                    deleted, kept = self._finish_deletes(f, precheck=True)
            except ArchiveIntegrityError as exc:
                logger.error("archive file %s is damaged; its live items were left alone: %s", f.name, exc)
                done.append(f"found {f.name} damaged; left its live items alone")
                continue
            self.manifest.set_state(f.name, "complete")
            done.append(f"finished deletes of {f.name} ({deleted} deleted, {kept} kept live)")
        settled = _steps.settle_restores(self.store, self.manifest)
        if settled:
            done.append(f"settled {settled} interrupted restores")
        for msg in done:
            logger.warning("archive recovery: %s", msg)
        known = {f.name for f in self.manifest.files()}
        for path in self.archive_dir.glob("*.jsonl.gz"):
            if path.name not in known:
                logger.warning("archive file %s is not in the manifest; ignored", path)
        return done

    # ----------------------------------------------------------------- threads

    def _threads(self, now: float, report: ArchiveReport, dry_run: bool) -> None:
        cp = self.checkpointer
        if cp is None or self.thread_after_days is None:
            return
        if not isinstance(cp, ThreadPruner):
            logger.warning("checkpointer %s cannot list or prune threads; skipping thread retention", type(cp).__name__)
            return
        report.thread_strategy = self.thread_strategy
        cutoff = now - self.thread_after_days * _DAY
        if dry_run:
            report.threads = [t.thread_id for t, _ in self._idle_threads(cutoff)]
            return
        if self.thread_strategy == "archive":
            report.threads = self._archive_threads(cutoff, report.run_id)
            return
        # prune_inactive measures from the clock; shift so the cutoff is ours.
        older_than = timedelta(seconds=max(0.0, time.time() - cutoff))
        report.threads = list(cp.prune_inactive(older_than, strategy=self.thread_strategy))

    def _archive_threads(self, cutoff: float, run_id: str) -> list[str]:
        cp = self.checkpointer
        if not (hasattr(cp, "list") and hasattr(cp, "prune") and hasattr(cp, "serde")):
            raise ConfigError("thread_strategy='archive' needs a checkpointer with list, prune and serde")
        idle = self._idle_threads(cutoff)
        if not idle:
            return []
        name = self._new_name("threads", run_id)
        self.manifest.reserve(name, kind="threads", collection="threads", run_id=run_id)
        archived_at = time.time()
        stats = FileStats()
        for _, act in idle:
            stats.add(act)
        try:
            with ArchiveWriter(self._path(name), compresslevel=self.compresslevel) as w:
                rows = _thread_files.write_threads(cp, idle, w, archived_at=archived_at, run_id=run_id)
        except Exception as exc:
            _steps.discard_after_failure(self.manifest, self._path(name), exc)
            raise
        self._hook("after_write")
        _steps.verify_new(self.manifest, self._path(name), "threads", w, stats, ident=lambda n, _line: rows[n])
        self._hook("after_verify")
        f = self.manifest.file(name)
        assert f is not None
        self._finish_thread_deletes(f)
        self.manifest.set_state(name, "complete")
        return [t.thread_id for t, _ in idle]

    def _idle_threads(self, cutoff: float) -> list[tuple[Any, float]]:
        """``(thread, last activity in epoch seconds)`` of the checkpointer's threads idle since before ``cutoff``."""
        assert self.checkpointer is not None  # only called when threads are archived
        pairs = ((t, _ts(t.last_activity)) for t in self.checkpointer.list_threads())
        return [(t, act) for t, act in pairs if act < cutoff]

    def _finish_thread_deletes(self, f: ArchiveFile) -> None:
        cp = self.checkpointer
        if cp is None:
            raise ArchiveError(f"{f.name} archives threads but this Archiver has no checkpointer to delete them from")
        archived = {tid for (tid,) in self.manifest.query("SELECT DISTINCT key FROM items WHERE file=?", (f.name,))}
        # Only threads with no checkpoint written since they were archived.
        still_idle = [
            t.thread_id
            for t in cp.list_threads()
            if t.thread_id in archived and _ts(t.last_activity) <= (f.max_activity or 0.0)
        ]
        if still_idle:
            cp.prune(still_idle, strategy="delete")

    # ------------------------------------------------------------------ reading

    def list_archives(self, collection: str | None = None, *, all_states: bool = False) -> list[ArchiveFile]:
        """Manifest entries (readable files only, unless ``all_states``), oldest first.

        Examples:
            >>> [(f.name, f.items, f.sha256[:8]) for f in archiver.list_archives("lessons")]  # needs an archiver over a store with stale items  # doctest: +SKIP
        """
        name = collection_by_name(collection).name if collection else None
        return self.manifest.files(collection=name, states=None if all_states else READABLE)

    def count_archived(self, collection: str | None = None) -> int:
        """How many items are archived (not restored or superseded), in one or all collections."""
        return sum(f.live_items for f in self.list_archives(collection) if f.kind == "items")

    def archived_counts(self) -> dict[str, int]:
        """`count_archived()` of every collection at once: ``{collection name: items}``."""
        out: dict[str, int] = {}
        for f in self.list_archives():
            if f.kind == "items":
                out[f.collection] = out.get(f.collection, 0) + f.live_items
        return out

    def forget(self, uids: Sequence[str]) -> int:
        """Delete archived copies for good (a hard delete of the items); return how many lines were dropped.

        Archive files are immutable: the lines stay in their file, marked
        ``deleted`` in the manifest, and no search, lookup or restore returns
        them again.
        """
        with self._exclusive("forget archived items"):
            return self.manifest.mark_deleted(list(uids))

    def iter_archived(
        self, collection: str | None = None, *, filter: dict[str, Any] | None = None
    ) -> Iterator[ArchivedItem]:
        """Every archived item, file by file, each checked against its checksum first (bounded memory)."""
        validate_filter(filter)
        yield from _reading.iter_items(self.manifest, self.archive_dir, self.list_archives(collection), filter)

    def verify(self) -> dict[str, str | None]:
        """Check every readable file against its manifest checksum and count: ``{name: None or problem}``.

        The manifest itself is read through first; a damaged one raises
        [`CorruptFileError`][langgraph_memory.errors.CorruptFileError] naming it and what to do.
        """
        self.manifest.check()
        return _reading.verify_files(self.archive_dir, self.list_archives())

    def search_archive(
        self,
        collection: str,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        k: int = 5,
        *,
        namespace_prefix: tuple[str, ...] | None = None,
        strict: bool = True,
    ) -> list[ArchiveHit]:
        """Semantic search over archived items with their stored vectors (nothing is re-embedded).

        ``filter`` takes the store's filter syntax. Without ``query`` the most
        recently active matches come first (``score`` None). A damaged file
        raises [`ArchiveIntegrityError`][langgraph_memory.errors.ArchiveIntegrityError], or with ``strict=False`` is
        skipped and logged. Memory is bounded by ``k``, not by archive size.

        Examples:
            >>> hits = archiver.search_archive("lessons", "stop losses too tight", k=3)  # needs an archiver over a store with stale items  # doctest: +SKIP
            >>> hits[0].key, round(hits[0].score, 2)  # needs ingested documents  # doctest: +SKIP
            ('l-17', 0.83)
        """
        return _reading.search(
            self.manifest,
            self.archive_dir,
            self.store,
            collection,
            query,
            filter,
            k,
            namespace_prefix=namespace_prefix,
            strict=strict,
        )

    def get_archived(
        self, keys: Iterable[str] | None = None, *, uids: Iterable[str] | None = None
    ) -> list[ArchivedItem]:
        """Archived items by key (any namespace) or uid, via the manifest index; for lineage lookups.

        Examples:
            >>> [a.value["lesson"] for a in archiver.get_archived(["l-17"])]  # needs an archiver over a store with stale items  # doctest: +SKIP
        """
        return _reading.get_items(self.manifest, self.archive_dir, keys, uids)

    def find(self, key: str, *, namespace: tuple[str, ...] | None = None) -> ArchivedItem | None:
        """The archived item with this key (and namespace, if given), or None.

        Examples:
            >>> archiver.find("strategy-42").value["name"]  # needs an archiver over a store with stale items  # doctest: +SKIP
            'mean reversion v2'
        """
        found = [a for a in self.get_archived([key]) if namespace is None or a.namespace == tuple(namespace)]
        if not found:
            return None
        return max(found, key=lambda a: a.archived_at)

    # ----------------------------------------------------------------- restore

    def restore(
        self,
        *,
        collection: str | None = None,
        keys: Iterable[str] | None = None,
        uids: Iterable[str] | None = None,
        filter: dict[str, Any] | None = None,
        namespace_prefix: tuple[str, ...] | None = None,
        all_items: bool = False,
        dry_run: bool = False,
    ) -> RestoreReport:
        """Bring archived items back to the live store with their original timestamps and vectors.

        Select by ``keys`` or ``uids``, or by ``filter``/``namespace_prefix``
        (optionally within ``collection``); ``all_items=True`` restores
        everything selected by ``collection`` alone. Restoring twice is a
        no-op. A restored item is not re-archived for one policy period.

        Examples:
            >>> archiver.restore(keys=["l-17"]).restored  # needs an archiver over a store with stale items  # doctest: +SKIP
            1
        """
        validate_filter(filter)
        keys, uids = list(keys or ()), list(uids or ())
        if not (keys or uids or filter or namespace_prefix or all_items):
            raise ArchiveError("restore needs keys, uids, a filter or a namespace prefix (or all_items=True)")
        coll = collection_by_name(collection).name if collection else None
        prefix = tuple(namespace_prefix or ())
        report = RestoreReport(dry_run=dry_run)
        with self._exclusive("restore archived items", writes=not dry_run):
            if not dry_run:
                _steps.settle_restores(self.store, self.manifest)
            wanted = self.manifest.archived_lines(uids=uids, keys=keys) if keys or uids else None
            for f in self.manifest.files(collection=coll, states=READABLE, kind="items"):
                if wanted is not None and f.name not in wanted:
                    continue
                _steps.restore_file(
                    self.store,
                    self.manifest,
                    f,
                    self._path(f.name),
                    wanted[f.name] if wanted is not None else None,
                    filter,
                    prefix,
                    report,
                    chunk_size=self.chunk_size,
                    hook=self._hook,
                )
        logger.info("restored %d archived items (%d already live)", report.restored, report.already_live)
        return report
