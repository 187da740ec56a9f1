"""The archiver: stale memories move to compressed files that stay searchable and restorable.

A run, per collection with a retention policy:

1. *scan* the live collection a page at a time and pick items whose last
   activity (``max(updated_at, last_accessed_at)``) is older than the policy;
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

    from langgraph_memory.archive import Archiver

    archiver = Archiver(store)                     # archive dir: <data_dir>/archive
    print(archiver.run(dry_run=True).total_selected)
    report = archiver.run()
    hits = archiver.search_archive("lessons", "position sizing", k=3)
    archiver.restore(keys=[hits[0].key])
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import filelock
import numpy as np

from langgraph_memory.archive.format import (
    ArchivedItem,
    ArchiveWriter,
    decode_line,
    decode_vectors,
    parse_line,
    read_lines,
)
from langgraph_memory.archive.manifest import READABLE, ArchiveFile, Manifest
from langgraph_memory.archive.reports import ArchiveHit, ArchiveReport, CollectionReport, RestoreReport
from langgraph_memory.collections import COLLECTIONS, GENERAL, RetentionPolicy, collection_by_name
from langgraph_memory.config import ARCHIVE_AFTER_DAYS
from langgraph_memory.errors import ArchiveError, ArchiveIntegrityError, ConfigError, LockTimeoutError
from langgraph_memory.store.filters import matches, validate_filter
from langgraph_memory.store.records import NS_SEP, StoredItem

__all__ = ["Archiver", "ThreadPruner", "ProgressCallback", "default_policies"]

logger = logging.getLogger(__name__)

_DAY = 86400.0
ProgressCallback = Callable[[str, str, int, "int | None"], None]
"""``progress(phase, collection, done, total)``; phase is scan, write, verify or delete."""


@runtime_checkable
class ThreadPruner(Protocol):
    """What the archiver needs from a checkpointer to prune idle threads.

    :class:`~langgraph_memory.checkpoint.SqliteCheckpointer` provides it. The
    ``"archive"`` thread strategy additionally uses LangGraph's ``list`` and
    ``serde`` and the saver's ``prune(thread_ids, strategy=...)``.
    """

    def list_threads(self) -> Sequence[Any]:  # items with .thread_id and .last_activity
        ...

    def prune_inactive(self, older_than: timedelta, *, strategy: str = "keep_latest") -> list[str]:
        ...


def default_policies() -> dict[str, RetentionPolicy | None]:
    """Retention per collection name, from :mod:`langgraph_memory.collections` (seed 004 defaults)."""
    return {spec.name: spec.retention for spec in (*COLLECTIONS.values(), GENERAL)}


def _policy_text(p: RetentionPolicy) -> str:
    text = f"idle > {p.after_days:g} days"
    if p.field is not None and p.below is not None:
        text += f" and {p.field} < {p.below:g}"
    return text


def _ts(value: Any) -> float:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.timestamp()
    return float(value)


def _chunks(it: Iterable[Any], size: int) -> Iterator[list[Any]]:
    it = iter(it)
    while batch := list(itertools.islice(it, size)):
        yield batch


class Archiver:
    """Moves stale memories to verified, compressed archive files, and reads them back.

    Args:
        store: the live :class:`~langgraph_memory.store.ChromaStore`.
        checkpointer: optional; idle threads are pruned (see ``thread_after_days``).
        archive_dir: where archives and the manifest live (default ``<data_dir>/archive``).
        policies: retention per collection (name or label), merged over the
            defaults: a :class:`RetentionPolicy`, a number of idle days, or
            None to never archive that collection.
        thread_after_days: threads idle longer than this are pruned; None: never.
        thread_strategy: ``"keep_latest"`` (prune to the latest checkpoint),
            ``"delete"``, or ``"archive"`` (write the thread's checkpoints to an
            archive file, verify it, then delete the thread).
        compresslevel: gzip level of new files.
        chunk_size: items fetched, written and deleted per step.
        lock_timeout: seconds to wait for another run (default: the store's lock timeout).
        lineage: a :class:`~langgraph_memory.lineage.LineageStore` whose parent
            edges are copied into each archived line; default: the data
            directory's ``lineage.sqlite`` when it exists.

    Example:
        >>> archiver = Archiver(store, policies={"strategies": 365})   # doctest: +SKIP
        >>> archiver.run(dry_run=True).collections["lessons_learned"].selected   # doctest: +SKIP
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
    ) -> None:
        if thread_strategy not in ("keep_latest", "delete", "archive"):
            raise ConfigError(f"thread_strategy must be 'keep_latest', 'delete' or 'archive', got {thread_strategy!r}")
        self.store = store
        self.checkpointer = checkpointer
        self.archive_dir = Path(archive_dir) if archive_dir is not None else Path(store.settings.archive_dir)
        self.archive_dir.mkdir(parents=True, exist_ok=True)
        self.policies: dict[str, RetentionPolicy | None] = default_policies()
        for name, pol in (policies or {}).items():
            spec = collection_by_name(name)
            if isinstance(pol, (int, float)) and not isinstance(pol, bool):
                pol = RetentionPolicy(float(pol))
            if pol is not None and not isinstance(pol, RetentionPolicy):
                raise ConfigError(f"policy for {name!r} must be a RetentionPolicy, a number of days or None")
            self.policies[spec.name] = pol
        self.thread_after_days = thread_after_days
        self.thread_strategy = thread_strategy
        self.compresslevel = compresslevel
        self.chunk_size = max(1, int(chunk_size))
        timeout = lock_timeout if lock_timeout is not None else float(store.settings.lock_timeout)
        self._run_lock_file = filelock.FileLock(str(self.archive_dir / "run.lock"), timeout=timeout, thread_local=False)
        self._thread_lock = threading.RLock()
        self._lock_timeout = timeout
        self.manifest = Manifest(self.archive_dir / "manifest.sqlite")
        self._lineage = lineage
        self._own_lineage = False
        if lineage is None:
            path = Path(store.settings.data_dir) / "lineage.sqlite"
            if path.exists():
                try:
                    from langgraph_memory.lineage import LineageStore

                    self._lineage, self._own_lineage = LineageStore(path), True
                except Exception:  # noqa: BLE001 - lineage is an extra; archiving must not depend on it
                    logger.warning("could not open %s; archiving without lineage edges", path, exc_info=True)
        # Fault injection for tests: called with a step name at each step boundary.
        self._fault: Callable[[str], None] | None = None

    # ----------------------------------------------------------------- basics

    def close(self) -> None:
        """Close the manifest (the store and checkpointer are the caller's)."""
        self.manifest.close()
        if self._own_lineage and self._lineage is not None:
            self._lineage.close()

    def _lineage_of(self, item: StoredItem) -> dict[str, Any] | None:
        """Parent edges the lineage store knows for this item (by key), for the archived line."""
        if self._lineage is None:
            return None
        try:
            edges = self._lineage.parents(item.key)
        except Exception:  # noqa: BLE001 - e.g. an unregistered id
            return None
        if not edges:
            return None
        return {"parents": [{"id": e.parent_id, "relation": e.relation, "collection": e.parent_collection} for e in edges]}

    def _hook(self, step: str) -> None:
        if self._fault is not None:
            self._fault(step)

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """One run or restore at a time, across threads and processes."""
        if not self._thread_lock.acquire(timeout=self._lock_timeout):
            raise LockTimeoutError(f"another archive run in this process did not finish within {self._lock_timeout:.0f}s")
        try:
            try:
                self._run_lock_file.acquire()
            except filelock.Timeout:
                raise LockTimeoutError(
                    f"another process held the archive lock {self._run_lock_file.lock_file} for more than "
                    f"{self._lock_timeout:.0f}s; an archive run is probably in progress. Retry later."
                ) from None
            try:
                yield
            finally:
                self._run_lock_file.release()
        finally:
            self._thread_lock.release()

    def _path(self, name: str) -> Path:
        return self.archive_dir / name

    def _new_name(self, collection: str, run_id: str) -> str:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
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

        Example:
            >>> report = archiver.run(dry_run=True)   # doctest: +SKIP
            >>> {c: r.selected for c, r in report.collections.items()}   # doctest: +SKIP
            {'research_findings': 3, 'lessons_learned': 40}
        """
        at = time.time() if now is None else _ts(now)
        report = ArchiveReport(run_id=uuid.uuid4().hex[:12], dry_run=dry_run, now=at, started_at=time.time())
        wanted = None if collections is None else {collection_by_name(c).name for c in collections}
        with self._exclusive():
            report.recovered = self._pending_recovery() if dry_run else self._recover()
            report.ttl_swept = self._count_expired() if dry_run else int(self.store.sweep_ttl())
            self.store.flush_access()
            for name, policy in self.policies.items():
                if policy is None or (wanted is not None and name not in wanted):
                    continue
                cr = CollectionReport(collection=name, policy=_policy_text(policy))
                report.collections[name] = cr
                try:
                    self._archive_collection(name, policy, at, report.run_id, cr, dry_run, progress)
                except ArchiveIntegrityError as exc:
                    cr.error = f"{name}: {exc}"
                    report.errors.append(cr.error)
                    logger.error("archive of %s failed verification, nothing deleted: %s", name, exc)
            if wanted is None:
                self._threads(at, report, dry_run)
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

    def _count_expired(self) -> int:
        now = time.time()
        n = 0
        for spec in (*COLLECTIONS.values(), GENERAL):
            n += sum(1 for it in self.store.iter_items(spec.name) if it.expires_at is not None and it.expires_at < now)
        return n

    def _stale_chunks(self, name: str, policy: RetentionPolicy, cutoff: float) -> Iterator[list[StoredItem]]:
        """Stale items (without vectors), a chunk at a time, minus recently restored ones."""

        def stale() -> Iterator[StoredItem]:
            for it in self.store.iter_items(name, page_size=max(self.chunk_size, 1000)):
                if it.last_activity < cutoff and policy.applies_to(it.value):
                    yield it

        for chunk in _chunks(stale(), self.chunk_size):
            # A restored item keeps its old timestamps; give it one policy period of grace.
            graced = self.manifest.recently_restored([it.uid for it in chunk], since=cutoff)
            yield [it for it in chunk if it.uid not in graced]

    def _archive_collection(
        self,
        name: str,
        policy: RetentionPolicy,
        now: float,
        run_id: str,
        cr: CollectionReport,
        dry_run: bool,
        progress: ProgressCallback | None,
    ) -> None:
        cutoff = now - policy.after_days * _DAY
        total = self.store.count(name) if progress else None
        if dry_run:
            for chunk in self._stale_chunks(name, policy, cutoff):
                cr.selected += len(chunk)
            return
        writer: ArchiveWriter | None = None
        file_name = ""
        stats = _Stats()
        archived_at = time.time()
        try:
            for chunk in self._stale_chunks(name, policy, cutoff):
                cr.selected += len(chunk)
                # Re-read with vectors: the item may have changed since the scan.
                for it in self.store.get_items(name, [c.uid for c in chunk], with_vectors=True):
                    if not (it.last_activity < cutoff and policy.applies_to(it.value)):
                        continue
                    if writer is None:
                        file_name = self._new_name(name, run_id)
                        self.manifest.reserve(file_name, kind="items", collection=name, run_id=run_id)
                        writer = ArchiveWriter(self._path(file_name), compresslevel=self.compresslevel)
                    writer.write(it, archived_at=archived_at, run_id=run_id, lineage=self._lineage_of(it))
                    stats.add(it)
                if progress:
                    progress("write", name, stats.count, total)
                self._hook("write_chunk")
            if writer is None:
                return
            writer.close()
        except Exception:
            if writer is not None:
                writer.abort()
                self._discard(file_name, "the run failed while writing it")
            raise
        cr.file = file_name
        self._hook("after_write")
        self._verify_new(file_name, writer, stats, progress)
        cr.archived = writer.count
        self._hook("after_verify")
        deleted, kept = self._finish_deletes(file_name, name, progress=progress)
        cr.deleted, cr.kept_live = deleted, kept
        self.manifest.set_state(file_name, "complete")
        logger.info("archived %d items of %s to %s (%d kept live)", cr.archived, name, file_name, kept)

    def _verify_new(self, file_name: str, writer: ArchiveWriter, stats: _Stats, progress: ProgressCallback | None) -> None:
        """Re-read the new file; in one transaction, index its lines and mark it verified."""
        path = self._path(file_name)
        collection = self.manifest.file(file_name).collection  # type: ignore[union-attr]
        try:
            with self.manifest.transaction() as c:
                rows = []
                for line_no, raw in read_lines(path, expected_sha256=writer.sha256, expected_count=writer.count):
                    rec = parse_line(raw)
                    rows.append((file_name, line_no, rec["uid"], rec["key"], NS_SEP.join(rec["namespace"]), "archived", time.time()))
                    if len(rows) >= 1000:
                        c.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
                        rows.clear()
                        if progress:
                            progress("verify", collection, line_no + 1, writer.count)
                c.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
                # An older archived copy of the same item (archived, restored or
                # re-put, then archived again) is superseded by this one.
                c.execute(
                    "UPDATE items SET status='superseded', changed_at=? WHERE status IN ('archived','restored') "
                    "AND file != ? AND uid IN (SELECT uid FROM items WHERE file = ?)",
                    (time.time(), file_name, file_name),
                )
                c.execute(
                    "UPDATE files SET state='verified', changed_at=?, items=?, bytes=?, sha256=?, min_activity=?, "
                    "max_activity=?, min_created=?, max_created=? WHERE name=?",
                    (time.time(), writer.count, writer.size, writer.sha256, stats.min_act, stats.max_act,
                     stats.min_created, stats.max_created, file_name),
                )
        except ArchiveIntegrityError as exc:
            self.manifest.set_state(file_name, "corrupt", note=f"failed verification after writing: {exc}")
            raise ArchiveIntegrityError(f"{file_name} failed verification after writing: {exc}") from None

    def _finish_deletes(
        self, file_name: str, collection: str, *, precheck: bool = False, progress: ProgressCallback | None = None
    ) -> tuple[int, int]:
        """Delete a verified file's items that are still live and unchanged; return (deleted, kept live)."""
        f = self.manifest.file(file_name)
        assert f is not None and f.state == "verified"
        path = self._path(file_name)
        if precheck:
            try:
                for _ in read_lines(path, expected_sha256=f.sha256, expected_count=f.items):
                    pass
            except ArchiveIntegrityError as exc:
                with self.manifest.transaction() as c:
                    self.manifest.set_state(file_name, "corrupt", note=str(exc), conn=c)
                    c.execute("UPDATE items SET status='corrupt' WHERE file=? AND status='archived'", (file_name,))
                raise
        self.store.flush_access()
        excluded = self.manifest.excluded_lines(file_name)
        deleted = kept = 0
        first = True

        def lines() -> Iterator[tuple[int, dict[str, Any]]]:
            for line_no, raw in read_lines(path, expected_sha256=f.sha256, expected_count=f.items):
                if line_no not in excluded:
                    yield line_no, parse_line(raw)

        for chunk in _chunks(lines(), self.chunk_size):
            # The store checks "unchanged since archived" and deletes under one hold
            # of its lock, so a write from another process can never be deleted unseen.
            # Items already gone were deleted by an earlier, interrupted attempt (or by
            # the user); items changed since are used again: the live copy wins.
            expected = {rec["uid"]: (rec["updated_at"], rec["last_accessed_at"]) for _, rec in chunk}
            gone_uids, changed_uids = self.store.delete_unchanged(collection, expected)
            changed_set = set(changed_uids)
            changed = [line_no for line_no, rec in chunk if rec["uid"] in changed_set]
            if changed:
                self.manifest.set_item_status(file_name, changed, "superseded")
                kept += len(changed)
            deleted += len(gone_uids)
            if progress:
                progress("delete", collection, deleted + kept, f.items)
            if first:
                first = False
                self._hook("during_delete")
        return deleted, kept

    def _discard(self, file_name: str, why: str) -> None:
        path = self._path(file_name)
        path.unlink(missing_ok=True)
        with self.manifest.transaction() as c:
            c.execute("DELETE FROM items WHERE file=?", (file_name,))
            self.manifest.set_state(file_name, "discarded", note=why, conn=c)
        logger.warning("discarded unverified archive file %s (%s); its items are still live", file_name, why)

    # ---------------------------------------------------------------- recovery

    def recover(self) -> list[str]:
        """Finish or undo what an interrupted run or restore left; return what was done.

        Runs automatically at the start of every :meth:`run`.
        """
        with self._exclusive():
            return self._recover()

    def _pending_recovery(self) -> list[str]:
        out = [f"would discard unverified {f.name}" for f in self.manifest.files(states=["writing"])]
        out += [f"would finish deletes of {f.name}" for f in self.manifest.files(states=["verified"])]
        n = self.manifest.query("SELECT COUNT(*) FROM items WHERE status='restoring'")[0][0]
        if n:
            out.append(f"would settle {n} interrupted restores")
        return out

    def _recover(self) -> list[str]:
        done: list[str] = []
        for f in self.manifest.files(states=["writing"]):
            self._discard(f.name, "an earlier run stopped before verifying it")
            done.append(f"discarded unverified {f.name}")
        for f in self.manifest.files(states=["verified"]):
            try:
                if f.kind == "threads":
                    self._finish_thread_deletes(f)
                    deleted, kept = f.items or 0, 0
                else:
                    deleted, kept = self._finish_deletes(f.name, f.collection, precheck=True)
            except ArchiveIntegrityError as exc:
                logger.error("archive file %s is damaged; its live items were left alone: %s", f.name, exc)
                done.append(f"found {f.name} damaged; left its live items alone")
                continue
            self.manifest.set_state(f.name, "complete")
            done.append(f"finished deletes of {f.name} ({deleted} deleted, {kept} kept live)")
        settled = self._settle_restores()
        if settled:
            done.append(f"settled {settled} interrupted restores")
        for msg in done:
            logger.warning("archive recovery: %s", msg)
        known = {f.name for f in self.manifest.files()}
        for path in self.archive_dir.glob("*.jsonl.gz"):
            if path.name not in known:
                logger.warning("archive file %s is not in the manifest; ignored", path)
        return done

    def _settle_restores(self) -> int:
        rows = self.manifest.query(
            "SELECT i.file, i.line, i.uid, f.collection FROM items i JOIN files f ON f.name = i.file "
            "WHERE i.status = 'restoring'"
        )
        by_coll: dict[str, list[tuple[str, int, str]]] = defaultdict(list)
        for file, line, uid, coll in rows:
            by_coll[coll].append((file, line, uid))
        for coll, entries in by_coll.items():
            live = {it.uid for it in self.store.get_items(coll, [uid for _, _, uid in entries])}
            with self.manifest.transaction() as c:
                for file, line, uid in entries:
                    status = "restored" if uid in live else "archived"
                    c.execute("UPDATE items SET status=?, changed_at=? WHERE file=? AND line=?", (status, time.time(), file, line))
        return len(rows)

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
            report.threads = [t.thread_id for t in cp.list_threads() if _ts(t.last_activity) < cutoff]
            return
        if self.thread_strategy == "archive":
            report.threads = self._archive_threads(cutoff, report.run_id)
            return
        # prune_inactive measures from the clock; shift so the cutoff is ours.
        older_than = timedelta(seconds=max(0.0, time.time() - cutoff))
        report.threads = list(cp.prune_inactive(older_than, strategy=self.thread_strategy))

    def _archive_threads(self, cutoff: float, run_id: str) -> list[str]:
        import base64

        cp = self.checkpointer
        if not (hasattr(cp, "list") and hasattr(cp, "prune") and hasattr(cp, "serde")):
            raise ConfigError("thread_strategy='archive' needs a checkpointer with list, prune and serde")
        idle = [t for t in cp.list_threads() if _ts(t.last_activity) < cutoff]
        if not idle:
            return []

        def typed(obj: Any) -> list[str]:
            kind, data = cp.serde.dumps_typed(obj)
            return [kind, base64.b64encode(data).decode("ascii")]

        name = self._new_name("threads", run_id)
        self.manifest.reserve(name, kind="threads", collection="threads", run_id=run_id)
        archived_at = time.time()
        rows: list[tuple[str, str]] = []
        acts = [_ts(t.last_activity) for t in idle]
        try:
            with ArchiveWriter(self._path(name), compresslevel=self.compresslevel) as w:
                for t in idle:
                    for tup in cp.list({"configurable": {"thread_id": t.thread_id}}):
                        line = {
                            "v": 1,
                            "thread_id": t.thread_id,
                            "last_activity": _ts(t.last_activity),
                            "config": tup.config,
                            "parent_config": tup.parent_config,
                            "checkpoint": typed(tup.checkpoint),
                            "metadata": typed(tup.metadata),
                            "pending_writes": [[tid, ch, typed(v)] for tid, ch, v in (tup.pending_writes or [])],
                            "archived_at": archived_at,
                            "run_id": run_id,
                        }
                        w.write_line(json.dumps(line, default=str).encode("utf-8") + b"\n")
                        rows.append((t.thread_id, tup.config["configurable"].get("checkpoint_id", "")))
        except Exception:
            self._discard(name, "the run failed while writing it")
            raise
        self._hook("after_write")
        try:
            with self.manifest.transaction() as c:
                n = 0
                for line_no, _ in read_lines(self._path(name), expected_sha256=w.sha256, expected_count=w.count):
                    tid, cid = rows[line_no]
                    c.execute("INSERT INTO items VALUES (?, ?, ?, ?, ?, 'archived', ?)", (name, line_no, f"{tid}:{cid}", tid, "", time.time()))
                    n += 1
                c.execute(
                    "UPDATE files SET state='verified', changed_at=?, items=?, bytes=?, sha256=?, min_activity=?, "
                    "max_activity=? WHERE name=?",
                    (time.time(), w.count, w.size, w.sha256, min(acts), max(acts), name),
                )
        except ArchiveIntegrityError as exc:
            self.manifest.set_state(name, "corrupt", note=str(exc))
            raise
        self._hook("after_verify")
        f = self.manifest.file(name)
        assert f is not None
        self._finish_thread_deletes(f)
        self.manifest.set_state(name, "complete")
        return [t.thread_id for t in idle]

    def _finish_thread_deletes(self, f: ArchiveFile) -> None:
        cp = self.checkpointer
        if cp is None:
            raise ArchiveError(f"{f.name} archives threads but this Archiver has no checkpointer to delete them from")
        archived = {tid for (tid,) in self.manifest.query("SELECT DISTINCT key FROM items WHERE file=?", (f.name,))}
        # Only threads with no checkpoint written since they were archived.
        still_idle = [t.thread_id for t in cp.list_threads() if t.thread_id in archived and _ts(t.last_activity) <= (f.max_activity or 0.0)]
        if still_idle:
            cp.prune(still_idle, strategy="delete")

    # ------------------------------------------------------------------ reading

    def list_archives(self, collection: str | None = None, *, all_states: bool = False) -> list[ArchiveFile]:
        """Manifest entries (readable files only, unless ``all_states``), oldest first.

        Example:
            >>> [(f.name, f.items, f.sha256[:8]) for f in archiver.list_archives("lessons")]   # doctest: +SKIP
        """
        name = collection_by_name(collection).name if collection else None
        return self.manifest.files(collection=name, states=None if all_states else READABLE)

    def count_archived(self, collection: str | None = None) -> int:
        """How many items are archived (not restored or superseded), in one or all collections."""
        return sum(f.live_items for f in self.list_archives(collection) if f.kind == "items")

    def iter_archived(self, collection: str | None = None, *, filter: dict[str, Any] | None = None) -> Iterator[ArchivedItem]:
        """Every archived item, file by file, each checked against its checksum first (bounded memory)."""
        validate_filter(filter)
        for f in self.list_archives(collection):
            if f.kind != "items":
                continue
            self._check_file(f)
            excluded = self.manifest.excluded_lines(f.name)
            for line_no, raw in read_lines(self._path(f.name), expected_sha256=f.sha256, expected_count=f.items):
                if line_no in excluded:
                    continue
                rec = parse_line(raw)
                if matches(rec["value"], filter):
                    yield decode_line(rec, collection=f.collection, file=f.name, line=line_no)

    def _check_file(self, f: ArchiveFile) -> None:
        for _ in read_lines(self._path(f.name), expected_sha256=f.sha256, expected_count=f.items):
            pass

    def verify(self) -> dict[str, str | None]:
        """Check every readable file against its manifest checksum and count: ``{name: None or problem}``."""
        out: dict[str, str | None] = {}
        for f in self.list_archives():
            try:
                self._check_file(f)
                out[f.name] = None
            except ArchiveIntegrityError as exc:
                out[f.name] = str(exc)
                logger.error("%s", exc)
        return out

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
        raises :class:`ArchiveIntegrityError`, or with ``strict=False`` is
        skipped and logged. Memory is bounded by ``k``, not by archive size.

        Example:
            >>> hits = archiver.search_archive("lessons", "stop losses too tight", k=3)   # doctest: +SKIP
            >>> hits[0].key, round(hits[0].score, 2)   # doctest: +SKIP
            ('l-17', 0.83)
        """
        validate_filter(filter)
        spec = collection_by_name(collection)
        qv: np.ndarray | None = None
        if query:
            if self.store.embeddings is None:
                raise ConfigError("search_archive with a query needs a store built with index= (an embedding model)")
            qv = np.asarray(self.store.embeddings.embed_query(query), dtype=np.float32)
            qv = qv / (np.linalg.norm(qv) or 1.0)
        prefix = tuple(namespace_prefix or ())
        best: list[tuple[float, int, str, int, dict[str, Any], str]] = []  # min-heap of (rank, tiebreak, ...)
        counter = itertools.count()
        for f in self.manifest.files(collection=spec.name, states=READABLE, kind="items"):
            excluded = self.manifest.excluded_lines(f.name)
            local: list[tuple[float, int, str, int, dict[str, Any], str]] = []
            try:
                for line_no, raw in read_lines(self._path(f.name), expected_sha256=f.sha256, expected_count=f.items):
                    if line_no in excluded:
                        continue
                    rec = parse_line(raw)
                    if prefix and tuple(rec["namespace"][: len(prefix)]) != prefix:
                        continue
                    if not matches(rec["value"], filter):
                        continue
                    if qv is not None:
                        vecs = decode_vectors(rec.get("vectors"))
                        if vecs is None:
                            continue
                        norms = np.linalg.norm(vecs, axis=1)
                        norms[norms == 0] = 1.0
                        rank = float(np.max(vecs @ qv / norms))
                    else:
                        rank = max(rec["updated_at"], rec["last_accessed_at"])
                    entry = (rank, -next(counter), f.name, line_no, rec, f.collection)
                    if len(local) < k:
                        heapq.heappush(local, entry)
                    elif entry > local[0]:
                        heapq.heapreplace(local, entry)
            except ArchiveIntegrityError:
                if strict:
                    raise
                logger.error("skipping damaged archive file %s in search", f.name, exc_info=True)
                continue
            for entry in local:  # only a file that verified contributes
                if len(best) < k:
                    heapq.heappush(best, entry)
                elif entry > best[0]:
                    heapq.heapreplace(best, entry)
        hits = []
        for rank, _, fname, line_no, rec, coll in sorted(best, reverse=True):
            hits.append(ArchiveHit(decode_line(rec, collection=coll, file=fname, line=line_no), rank if qv is not None else None))
        return hits

    def get_archived(
        self, keys: Iterable[str] | None = None, *, uids: Iterable[str] | None = None
    ) -> list[ArchivedItem]:
        """Archived items by key (any namespace) or uid, via the manifest index; for lineage lookups.

        Example:
            >>> [a.value["lesson"] for a in archiver.get_archived(["l-17"])]   # doctest: +SKIP
        """
        rows = self.manifest.archived_rows(uids=list(uids or ()), keys=list(keys or ()))
        wanted: dict[str, set[int]] = defaultdict(set)
        for file, line, *_ in rows:
            wanted[file].add(line)
        out: list[ArchivedItem] = []
        for name, lines in wanted.items():
            f = self.manifest.file(name)
            assert f is not None
            found = [
                (line_no, parse_line(raw))
                for line_no, raw in read_lines(self._path(name), expected_sha256=f.sha256, expected_count=f.items)
                if line_no in lines
            ]
            out.extend(decode_line(rec, collection=f.collection, file=name, line=ln) for ln, rec in found)
        return out

    def find(self, key: str, *, namespace: tuple[str, ...] | None = None) -> ArchivedItem | None:
        """The archived item with this key (and namespace, if given), or None.

        Example:
            >>> archiver.find("strategy-42").value["name"]   # doctest: +SKIP
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

        Example:
            >>> archiver.restore(keys=["l-17"]).restored   # doctest: +SKIP
            1
        """
        validate_filter(filter)
        keys, uids = list(keys or ()), list(uids or ())
        if not (keys or uids or filter or namespace_prefix or all_items):
            raise ArchiveError("restore needs keys, uids, a filter or a namespace prefix (or all_items=True)")
        coll = collection_by_name(collection).name if collection else None
        prefix = tuple(namespace_prefix or ())
        report = RestoreReport(dry_run=dry_run)
        with self._exclusive():
            if not dry_run:
                self._settle_restores()
            wanted: dict[str, set[int]] | None = None
            if keys or uids:
                wanted = defaultdict(set)
                for file, line, *_ in self.manifest.archived_rows(uids=uids, keys=keys):
                    wanted[file].add(line)
            for f in self.manifest.files(collection=coll, states=READABLE, kind="items"):
                if wanted is not None and f.name not in wanted:
                    continue
                self._restore_file(f, wanted[f.name] if wanted is not None else None, filter, prefix, report)
        logger.info("restored %d archived items (%d already live)", report.restored, report.already_live)
        return report

    def _restore_file(
        self, f: ArchiveFile, lines: set[int] | None, filter: dict[str, Any] | None, prefix: tuple[str, ...], report: RestoreReport
    ) -> None:
        excluded = self.manifest.excluded_lines(f.name)
        path = self._path(f.name)
        selected: list[int] = []
        # Pass 1 checks the whole file before anything is written from it.
        for line_no, raw in read_lines(path, expected_sha256=f.sha256, expected_count=f.items):
            if line_no in excluded or (lines is not None and line_no not in lines):
                continue
            rec = parse_line(raw)
            if prefix and tuple(rec["namespace"][: len(prefix)]) != prefix:
                continue
            if matches(rec["value"], filter):
                selected.append(line_no)
        if not selected:
            return
        chosen = set(selected)

        def items() -> Iterator[ArchivedItem]:
            for line_no, raw in read_lines(path, expected_sha256=f.sha256, expected_count=f.items):
                if line_no in chosen:
                    yield decode_line(parse_line(raw), collection=f.collection, file=f.name, line=line_no)

        for chunk in _chunks(items(), self.chunk_size):
            report.keys.extend(a.key for a in chunk)
            if report.dry_run:
                report.restored += len(chunk)
                continue
            line_nos = [a.line for a in chunk]
            self.manifest.set_item_status(f.name, line_nos, "restoring")
            written = self.store.restore_items([a.item for a in chunk])
            self._hook("restore_chunk")
            self.manifest.set_item_status(f.name, line_nos, "restored")
            report.restored += written
            report.already_live += len(chunk) - written


class _Stats:
    """Count and time ranges of the items written to one file."""

    def __init__(self) -> None:
        self.count = 0
        self.min_act = self.max_act = self.min_created = self.max_created = None  # type: float | None

    def add(self, it: StoredItem) -> None:
        self.count += 1
        act = it.last_activity
        self.min_act = act if self.min_act is None else min(self.min_act, act)
        self.max_act = act if self.max_act is None else max(self.max_act, act)
        self.min_created = it.created_at if self.min_created is None else min(self.min_created, it.created_at)
        self.max_created = it.created_at if self.max_created is None else max(self.max_created, it.created_at)
