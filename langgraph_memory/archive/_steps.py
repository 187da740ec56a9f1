"""The steps that move memories between the live store and archive files.

[`Archiver`][langgraph_memory.Archiver] decides what moves and
when: it holds the lock, applies the policies, writes the file and puts the
steps in order (see `langgraph_memory.archive.archiver`). Each function
here does one step and records it in the manifest: finding stale items,
verifying and indexing a written file, deleting its items from the live store,
discarding a file that never verified, restoring items, and settling restores
a crash cut short. They live apart from the archiver so its module shows the
order of the run, and this one how each step stays safe to interrupt.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_memory._infra import sqlite as _sqlite
from langgraph_memory.archive._reading import check_file, live_records
from langgraph_memory.archive.format import ArchivedItem, ArchiveWriter, decode_line, parse_line, read_lines
from langgraph_memory.archive.manifest import ArchiveFile, FileStats, Manifest
from langgraph_memory.archive.reports import RestoreReport
from langgraph_memory.catalog import StoredItem
from langgraph_memory.catalog.item_rows import NS_SEP
from langgraph_memory.catalog.status import ItemStatus
from langgraph_memory.errors import ArchiveIntegrityError
from langgraph_memory.research.collections import RetentionPolicy
from langgraph_memory.store.records import PAGE_SIZE

#: ``progress(phase, collection, done, total)``; phase is scan, write, verify or delete.
ProgressCallback = Callable[[str, str, int, "int | None"], None]


logger = logging.getLogger(__name__)


def chunks(it: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``it`` in lists of ``size`` (the last one shorter)."""
    it = iter(it)
    while batch := list(itertools.islice(it, size)):
        yield batch


# ------------------------------------------------------------------- scan


@dataclass
class Selection:
    """Which items of one collection a run moves, and why.

    An item goes when the collection's ``policy`` selects it (idle since
    before ``cutoff``, and the value test), when it is retired and idle
    since before ``retired_cutoff``, or superseded and idle since before
    ``superseded_cutoff`` (None: never for that reason). ``statuses`` are
    the collection's status rows by uid; a row applies to the item only
    if the ``created_at`` matches.
    """

    policy: RetentionPolicy | None
    cutoff: float
    statuses: dict[str, ItemStatus] = field(default_factory=dict)
    retired_cutoff: float | None = None
    superseded_cutoff: float | None = None
    #: items restored after this get a grace period (they keep their old timestamps).
    grace_since: float = 0.0

    def status_of(self, it: StoredItem) -> ItemStatus | None:
        st = self.statuses.get(it.uid)
        return st if st is not None and st.item_created_at == it.created_at else None

    def reason(self, it: StoredItem) -> str | None:
        """``"policy"``, ``"retired"`` or ``"superseded"`` if ``it`` goes, else None."""
        st = self.status_of(it)
        if st is not None:
            bound = self.retired_cutoff if st.status == "retired" else self.superseded_cutoff
            if bound is not None and it.last_activity <= bound:
                return st.status
        if self.policy is not None and it.last_activity < self.cutoff and self.policy.applies_to(it.value):
            return "policy"
        return None

    @property
    def by_status(self) -> bool:
        """Whether any item may go because of its status (so the status rows are worth reading)."""
        return bool(self.statuses) and (self.retired_cutoff is not None or self.superseded_cutoff is not None)


def stale_chunks(
    store: Any, manifest: Manifest, name: str, rule: Selection, chunk_size: int
) -> Iterator[list[StoredItem]]:
    """Items ``rule`` selects (without vectors), a chunk at a time, minus recently restored ones.

    Retired and superseded items are read by uid from their status rows; the
    collection is scanned only when it has a policy.
    """

    def selected() -> Iterator[StoredItem]:
        seen: set[str] = set()
        if rule.by_status:
            for uids in chunks(rule.statuses, max(chunk_size, PAGE_SIZE)):
                for it in store.items.get_items(name, uids):
                    if rule.reason(it) is not None:
                        seen.add(it.uid)
                        yield it
        if rule.policy is None:
            return
        for it in store.items.iter_items(name, page_size=max(chunk_size, PAGE_SIZE)):
            if it.uid not in seen and rule.reason(it) is not None:
                yield it

    for chunk in chunks(selected(), chunk_size):
        # A restored item keeps its old timestamps; give it one policy period of grace.
        graced = manifest.recently_restored([it.uid for it in chunk], since=rule.grace_since)
        yield [it for it in chunk if it.uid not in graced]


# -------------------------------------------------------- verify, delete


def _item_ident(line_no: int, raw: bytes) -> tuple[str, str, str]:
    rec = parse_line(raw)
    return rec["uid"], rec["key"], NS_SEP.join(rec["namespace"])


def verify_new(
    manifest: Manifest,
    path: Path,
    collection: str,
    writer: ArchiveWriter,
    stats: FileStats,
    progress: ProgressCallback | None = None,
    ident: Callable[[int, bytes], tuple[str, str, str]] = _item_ident,
) -> None:
    """Re-read the new file; in one transaction, index its lines and mark it verified (or corrupt, and raise).

    ``ident(line number, line)`` is the ``(uid, key, namespace)`` the manifest indexes a line by.
    """
    file_name = path.name
    try:
        with manifest.transaction() as c:
            rows = []
            now = time.time()  # the rows are committed together
            for line_no, raw in read_lines(path, expected_sha256=writer.sha256, expected_count=writer.count):
                rows.append((file_name, line_no, *ident(line_no, raw), "archived", now))
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
            manifest.mark_verified(c, file_name, writer.count, writer.size, writer.sha256, stats)
    except ArchiveIntegrityError as exc:
        manifest.set_state(file_name, "corrupt", note=f"failed verification after writing: {exc}")
        raise ArchiveIntegrityError(f"{file_name} failed verification after writing: {exc}") from None


def finish_deletes(
    store: Any,
    manifest: Manifest,
    f: ArchiveFile,
    path: Path,
    *,
    chunk_size: int,
    hook: Callable[[str], None],
    precheck: bool = False,
    progress: ProgressCallback | None = None,
) -> tuple[int, int]:
    """Delete the verified file ``f``'s items (read from ``path``) still live and unchanged; return (deleted, kept live)."""
    file_name, collection = f.name, f.collection
    assert f.state == "verified"
    if precheck:
        try:
            check_file(path, f)
        except ArchiveIntegrityError as exc:
            with manifest.transaction() as c:
                manifest.set_state(file_name, "corrupt", note=str(exc), conn=c)
                c.execute("UPDATE items SET status='corrupt' WHERE file=? AND status='archived'", (file_name,))
            raise
    store.flush_access()
    deleted = kept = 0
    first = True
    for chunk in chunks(live_records(manifest, path, f), chunk_size):
        # The store checks "unchanged since archived" and deletes under one hold
        # of its lock, so a write from another process can never be deleted unseen.
        # Items already gone were deleted by an earlier, interrupted attempt (or by
        # the user); items changed since are used again: the live copy wins.
        expected = {rec["uid"]: (rec["updated_at"], rec["last_accessed_at"]) for _, rec in chunk}
        gone_uids, changed_uids = store.items.delete_unchanged(collection, expected)
        changed_set = set(changed_uids)
        changed = [line_no for line_no, rec in chunk if rec["uid"] in changed_set]
        if changed:
            manifest.set_item_status(file_name, changed, "superseded")
            kept += len(changed)
        deleted += len(gone_uids)
        if progress:
            progress("delete", collection, deleted + kept, f.items)
        if first:
            first = False
            hook("during_delete")
    return deleted, kept


def discard(manifest: Manifest, path: Path, why: str) -> None:
    """Remove an unverified file and its manifest rows; its items were never deleted, so they are still live."""
    file_name = path.name
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:  # the row stays "writing": the next run tries again
        raise _sqlite.translate(exc, path, "remove the unverified archive file") from exc
    with manifest.transaction() as c:
        c.execute("DELETE FROM items WHERE file=?", (file_name,))
        manifest.set_state(file_name, "discarded", note=why, conn=c)
    logger.warning("discarded unverified archive file %s (%s); its items are still live", file_name, why)


def discard_after_failure(manifest: Manifest, path: Path, exc: BaseException) -> None:
    """Discard a file whose writing failed with ``exc``; never raises, so ``exc`` is what the caller sees.

    On a full disk the manifest may refuse the change too: the file's row
    then stays ``writing`` and the next run's recovery discards it.
    """
    try:
        discard(manifest, path, f"the run failed while writing it: {exc}")
    except Exception as cleanup:  # noqa: BLE001
        logger.warning(
            "could not discard the partial archive file %s after the run failed (%s); the next run will: %s",
            path.name,
            exc,
            cleanup,
        )


# ---------------------------------------------------------------- restore


def restore_file(
    store: Any,
    manifest: Manifest,
    f: ArchiveFile,
    path: Path,
    lines: set[int] | None,
    filter: dict[str, Any] | None,
    prefix: tuple[str, ...],
    report: RestoreReport,
    *,
    chunk_size: int,
    hook: Callable[[str], None],
) -> None:
    """Restore the selected live lines of one file (all of them if ``lines`` is None), adding to ``report``."""
    # Pass 1 checks the whole file before anything is written from it.
    selected = [line_no for line_no, _ in live_records(manifest, path, f, lines=lines, prefix=prefix, filter=filter)]
    if not selected:
        return
    chosen = set(selected)

    def items() -> Iterator[ArchivedItem]:
        for line_no, raw in read_lines(path, expected_sha256=f.sha256, expected_count=f.items):
            if line_no in chosen:
                yield decode_line(parse_line(raw), collection=f.collection, file=f.name, line=line_no)

    for chunk in chunks(items(), chunk_size):
        report.keys.extend(a.key for a in chunk)
        report.hidden.extend(a.status for a in chunk if a.status is not None)
        if report.dry_run:
            report.restored += len(chunk)
            continue
        line_nos = [a.line for a in chunk]
        manifest.set_item_status(f.name, line_nos, "restoring")
        written = store.items.restore_items([a.item for a in chunk], [a.status for a in chunk if a.status])
        hook("restore_chunk")
        manifest.set_item_status(f.name, line_nos, "restored")
        report.restored += written
        report.already_live += len(chunk) - written


def settle_restores(store: Any, manifest: Manifest) -> int:
    """Mark each item a restore left ``restoring`` as restored or archived, by whether it is live; return how many."""
    rows = manifest.query(
        "SELECT i.file, i.line, i.uid, f.collection FROM items i JOIN files f ON f.name = i.file "
        "WHERE i.status = 'restoring'"
    )
    by_coll: dict[str, list[tuple[str, int, str]]] = defaultdict(list)
    for file, line, uid, coll in rows:
        by_coll[coll].append((file, line, uid))
    for coll, entries in by_coll.items():
        live = {it.uid for it in store.items.get_items(coll, [uid for _, _, uid in entries])}
        with manifest.transaction() as c:
            for file, line, uid in entries:
                status = "restored" if uid in live else "archived"
                c.execute(
                    "UPDATE items SET status=?, changed_at=? WHERE file=? AND line=?", (status, time.time(), file, line)
                )
    return len(rows)
