"""Checking the Chroma index against the catalog on open, repairing what differs, rebuilding what is damaged.

After a clean close, when the folder's files are exactly as sealed, opening only applies what is queued;
when they changed since (bit rot), a rebuild replaces the folder. After a crash a probe subprocess opens the
folder first, then counts and an id-set comparison repair what differs. A folder that crashes, fails or
answers wrongly is rebuilt from the catalog's vectors; nothing is re-embedded.
"""

from __future__ import annotations

import logging
import random
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from langgraph_memory._infra.chroma import ChromaHandle
from langgraph_memory._infra.closing import warn_briefly
from langgraph_memory.catalog import Catalog
from langgraph_memory.catalog import applier as _applier
from langgraph_memory.catalog import integrity as _integrity
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import queue as _queue
from langgraph_memory.catalog import scope as _scope
from langgraph_memory.catalog import vectors as _vectors
from langgraph_memory.errors import (
    CorruptFileError,
    DiskFullError,
    LangGraphMemoryError,
)
from langgraph_memory.index._core import (
    _BROKEN_KEY,
    _GEN_KEY,
    _SEAL_KEY,
    _VERIFIED_KEY,
    IndexCore,
    IndexServerUnavailable,
    IndexUnavailable,
    RebuildReport,
    record_id,
)
from langgraph_memory.index._probe import probe, unreachable
from langgraph_memory.index._session import fingerprint, is_content_seal

__all__ = ["IndexRepair", "REBUILD_MAX"]

logger = logging.getLogger(__name__)

_BATCH = 1000
_SAMPLES = 32
#: After an unclean shutdown, at most this many records changed since the index was last verified are
#: checked per collection (the newest), besides `_SAMPLES` random ones.
_RECENT_MAX = 2000
#: After an unclean shutdown an index of at most this many vectors is rebuilt from the catalog rather than
#: probed: measured here, a rebuild applies ~6,600 vectors/s (10,603 in 1.6 s), so 25,000 take about as
#: long as the probe takes at 100,000 (3.7 s), and no record a torn write damaged can survive it. The
#: probe checks the records written since the index was last verified and a sample of the others.
REBUILD_MAX = 25_000

ProgressFn = Callable[[str, int, int], None]


class IndexRepair(IndexCore):
    """Open (check, repair or rebuild), `reconcile()` and `rebuild()`; `ChromaIndex` is the one subclass."""

    def catch_up(self) -> bool:
        """After a Chroma server outage: once it answers, compare it with the catalog and repair it.

        Cheap when nothing is wrong (one attribute read). Call outside any
        catalog transaction. Returns whether the index serves now; while the
        server stays away, tries at most once per backoff interval.
        """
        if self.embedded or not self.health.trouble or self._recovering:
            return True
        if not self.health.may_try():
            return False
        self._recovering = True
        try:
            self._forget_names()
            repaired = self.reconcile()
        except (LangGraphMemoryError, RuntimeError) as exc:
            # Still away (recorded by _failed), the catalog is, or the caller holds a read snapshot (a
            # repair writes): searches stay exact, and the next call outside a snapshot catches up.
            logger.debug("the Chroma index could not catch up yet: %s", exc)
            return False
        finally:
            self._recovering = False
        away = self.health.down_for()
        self.health.recovered()
        logger.warning(
            "the Chroma server answers again%s; the index caught up from the catalog (repaired: %s)",
            f" after {away:.1f} s" if away else "",
            repaired or "nothing",
        )
        return True

    def open(self, *, progress: bool | ProgressFn = True) -> None:
        """Check the index against the catalog and repair or rebuild it (see the module docstring)."""
        if self.session is None:
            self._reconcile_or_rebuild(progress)
            return
        first = self.session.enter()
        try:
            if first:
                self._first_open(progress)
        except BaseException:
            self.session.leave()
            raise
        self.session.share(self.lock_timeout)

    def _first_open(self, progress: bool | ProgressFn) -> None:
        assert self.root is not None
        folder = self.folder()
        assert folder is not None
        self._remove_stale_folders(folder)
        with self.catalog.read() as conn:
            seal = self.catalog.get_meta(conn, _SEAL_KEY)
            broken = self.catalog.get_meta(conn, _BROKEN_KEY)
        now = fingerprint(folder) if seal is not None and folder.exists() else None
        rotted = is_content_seal(seal) and now != seal
        if (seal is None and not self.catalog.created) or rotted:
            # The last session did not close, or the files changed on disk since: check the catalog's pages too.
            # (A catalog this open made has no last session: a new memory starts quietly.)
            self._check_catalog()
        counts = self._catalog_counts()
        total = sum(counts.values())
        if broken:
            self._rebuild_or_degrade("the index failed in an earlier session", progress)
        elif not folder.exists():
            if total:
                self._rebuild_or_degrade(f"the index folder {folder} is missing", progress)
        elif seal is not None and now == seal:
            pass
        elif rotted:
            # Closed cleanly, then changed on disk: a damaged HNSW file can crash the process that loads it,
            # and a probe samples only some records, so the files are never opened; the catalog has it all.
            # Marked broken first, so that an open after a failed rebuild (a full disk) rebuilds as well.
            with self.catalog.write() as conn:
                self.catalog.set_meta(conn, _BROKEN_KEY, "1")
            self._rebuild_or_degrade(
                f"the index files in {folder} changed after the last clean close (damaged on disk, or written "
                f"by another program; content hash {(now or '')[:19]} against the seal's {(seal or '')[:19]})",
                progress,
            )
        else:
            if total <= REBUILD_MAX:
                self._rebuild_or_degrade(
                    f"the index was not closed cleanly; {total:,} vectors are rebuilt faster than checked", progress
                )
            else:
                self._probe_and_catch_up(folder, counts, progress)
        with self.catalog.write() as conn:
            self.catalog.set_meta(conn, _SEAL_KEY, None)

    def _check_catalog(self) -> None:
        """SQLite's quick_check of the catalog's pages.

        Raises:
            CorruptFileError: the catalog is damaged; it is the truth, so nothing repairs it here.
        """
        started = time.perf_counter()
        try:
            with self.catalog.read() as conn:
                problems = _integrity.quick_check(conn)
        except CorruptFileError as exc:  # a page too damaged to be checked at all
            problems = [str(exc.__cause__ or exc)]
        self.catalog_check_seconds = time.perf_counter() - started
        if problems:
            raise CorruptFileError(
                f"the catalog {self.catalog.path} is damaged (SQLite's quick_check: {'; '.join(problems[:3])}); it "
                "holds every item and is not rebuilt from anything. Restore it from a backup (or a bundle), or "
                "move the data directory aside to start afresh (see the README, 'Damaged files, full disks').",
                self.catalog.path,
            )
        logger.info("checked the catalog's pages in %.2f s after an unclean shutdown", self.catalog_check_seconds)

    def _probe_and_catch_up(self, folder: Path, counts: dict[str, int], progress: bool | ProgressFn) -> None:
        """After an unclean shutdown: probe ``folder`` in a subprocess, apply what was queued, check that too."""
        started = time.perf_counter()
        result = probe(folder, self._probe_specs(counts))
        self.probe_seconds = time.perf_counter() - started
        if not result.ok:
            why = result.detail or "; ".join(f"{k}: {v}" for k, v in result.problems.items())
            self._rebuild_or_degrade(f"the index did not pass its check ({why})", progress)
            return
        logger.info("checked the Chroma index in %s after an unclean shutdown (%.2f s)", folder, self.probe_seconds)
        before = self._applied_marks()
        self._mark_verified()
        self._reconcile_or_rebuild(progress, counts)
        self._check_caught_up(before, progress)

    def _remove_stale_folders(self, current: Path) -> None:
        assert self.root is not None
        for old in self.root.glob("index-*"):
            if old != current and old.is_dir():
                logger.info("removing the old index folder %s", old)
                shutil.rmtree(old, ignore_errors=True)

    def _probe_specs(self, counts: dict[str, int]) -> list[dict[str, Any]]:
        specs = []
        with self.catalog.read() as conn:
            for name in self.collections:
                expected = counts.get(name, 0)
                chroma = _queue.chroma_name(conn, name)
                if chroma is None and not expected:
                    continue
                specs.append(
                    {
                        "name": chroma or self._default_name(name),
                        "samples": self._recent(conn, name) + self._samples(conn, name, expected),
                    }
                )
        return specs

    @staticmethod
    def _records(conn: Any, item_ids: list[int]) -> list[list[Any]]:
        """``[record id, vector]`` of every vector of these items."""
        return [
            [record_id(item_id, idx), np.frombuffer(vec, dtype=np.float32).tolist()]
            for item_id, idx, vec in _vectors.records_of(conn, item_ids)
        ]

    def _recent(self, conn: Any, collection: str) -> list[list[Any]]:
        """The records Chroma applied since it was last verified (the newest `_RECENT_MAX`).

        A process killed while Chroma wrote its HNSW files can leave a record
        that its own vector no longer finds while the folder otherwise opens
        and answers; the records written since the last verified point are
        the ones such a write could have touched.
        """
        verified = int(self.catalog.get_meta(conn, _VERIFIED_KEY + collection) or 0)
        return self._changed(conn, collection, verified, _queue.applied(conn, collection))

    def _changed(self, conn: Any, collection: str, after: int, upto: int) -> list[list[Any]]:
        """``[record id, vector]`` of the items queued for ``collection`` in ``(after, upto]``, newest first."""
        items = _queue.recently_changed(conn, collection, after, upto, _RECENT_MAX)
        return self._records(conn, items)[:_RECENT_MAX]

    def _applied_marks(self) -> dict[str, int]:
        with self.catalog.read() as conn:
            return {name: _queue.applied(conn, name) for name in self.collections}

    def _check_caught_up(self, before: dict[str, int], progress: bool | ProgressFn) -> None:
        """After an unclean shutdown: each record applied while catching up must find itself, else rebuild.

        The probe checks what Chroma held before the store caught up. A change
        Chroma had half-applied when the process died, but the queue had not
        marked, is applied again here, into a segment the crash may have torn:
        measured, 1 record in 200 crash-bench kills then stayed unreachable.
        The check runs in this process (the probe showed the folder opens).
        """
        checked = 0
        for name in self.collections:
            if name in self.broken:
                continue
            with self.catalog.read() as conn:
                records = self._changed(conn, name, before.get(name, 0), _queue.applied(conn, name))
            if not records:
                continue
            self._chroma_name(name)
            with self._use() as client:
                try:
                    col = self._collection(client, name, create=False)
                    missed = unreachable(col, records, col.count()) if col is not None else []
                except Exception as exc:  # noqa: BLE001 - any failure here means the index cannot be trusted
                    missed, why = ["?"], f"{type(exc).__name__}: {exc}"
                else:
                    why = f"e.g. {missed[0]}" if missed else ""
            checked += len(records)
            if missed:
                self._rebuild_or_degrade(
                    f"{len(missed)} of {len(records)} records of {name!r} applied after the crash did not find "
                    f"themselves ({why})",
                    progress,
                )
                return
        self.caught_up_checked = checked
        if checked:
            self._mark_verified()

    def _mark_verified(self) -> None:
        """Every record Chroma holds now was checked (a clean close, or an open whose check passed)."""
        with self.catalog.write() as conn:
            for name in self.collections:
                self.catalog.set_meta(conn, _VERIFIED_KEY + name, str(_queue.applied(conn, name)))

    @staticmethod
    def _samples(conn: Any, collection: str, n_vectors: int) -> list[list[Any]]:
        """Up to `_SAMPLES` vectors of ``collection`` Chroma must hold (none still queued)."""
        if not n_vectors:
            return []
        span = _scope.item_id_range(conn)
        if span is None:
            return []
        lo, hi = span
        queued = {item_id for _seq, item_id, _n in _queue.pending(conn, collection)}
        out: list[list[Any]] = []
        rng = random.Random(n_vectors)
        for _ in range(_SAMPLES * 4):
            if len(out) >= _SAMPLES:
                break
            row = _vectors.vector_at_or_after(conn, rng.randint(lo, hi), collection)
            if row is None or row[0] in queued:
                continue
            vec = np.frombuffer(row[2], dtype=np.float32).tolist()
            out.append([record_id(row[0], row[1]), vec])
        return out

    def _reconcile_or_rebuild(self, progress: bool | ProgressFn, counts: dict[str, int] | None = None) -> None:
        try:
            self.reconcile(counts)
        except IndexServerUnavailable:
            # Said already, once per outage, by _failed; a second line at open adds nothing.
            logger.debug("the Chroma server does not answer at open; the index catches up when it does")
        except IndexUnavailable as exc:
            self._rebuild_or_degrade(str(exc), progress)
        except DiskFullError as exc:
            warn_briefly(logger, "the Chroma index could not catch up on open; it will on a later write", exc)

    def _rebuild_or_degrade(self, reason: str, progress: bool | ProgressFn) -> None:
        """Rebuild at open; if even that fails (a full disk), search exactly from the catalog meanwhile."""
        try:
            self.rebuild(reason=reason, progress=progress)
        except LangGraphMemoryError as exc:
            self.broken.update(self.collections)
            logger.error(
                "could not rebuild the Chroma index (%s); searches run exactly from the catalog until a rebuild "
                "succeeds (store.rebuild_index(), or reopen)",
                exc,
            )

    def reconcile(self, counts: dict[str, int] | None = None) -> dict[str, int]:
        """Apply queued changes, then make each collection hold exactly the catalog's vector ids.

        Compares counts first and ids only where counts differ. Returns how
        many records were added or removed per collection.
        """
        self.sync()
        counts = self._catalog_counts() if counts is None else counts
        repaired: dict[str, int] = {}
        for name in self.collections:
            expected = counts.get(name, 0)
            try:
                have = self.count(name)
            except Exception as exc:  # noqa: BLE001
                raise self._failed(name, exc, "counting") from exc
            if have != expected:
                repaired[name] = self._repair_ids(name)
        if repaired:
            logger.warning("repaired the Chroma index from the catalog: %s", repaired)
        return repaired

    def _repair_ids(self, collection: str) -> int:
        """Make ``collection`` on the server hold exactly the catalog's record ids, under the log's claim.

        On a shared server, a repair and another process's pass over the log
        (or two repairs) could upsert the same records at once; Chroma's HNSW
        rewires an upserted record in place, and an in-place update is where
        it can leave a record its graph no longer reaches
        (chroma-core/chroma#7758). Under the log's claim they take turns, and
        the second reads the ids the first added.
        """
        log = self._log()  # before the index lock: it reads through the catalog's own connection
        with _applier.claimed(log, collection):
            return self._repair_claimed(collection, log)

    def _repair_claimed(self, collection: str, log: Catalog) -> int:
        self._chroma_name(collection, record=True)  # before the index lock (see ``_names``)
        # One hold of the index lock from the read of Chroma's ids to the last write: a read of the catalog
        # outside it could be older than a delete or an update another applier (the catch-up thread, an inline
        # sync) applied before the repair's write, which then undid it (a deleted item back as a Chroma record
        # without its item, an updated one with its old vector). The catalog is read after Chroma's ids: a record
        # written before was committed before, so it is wanted (read in the other order, deleted as extra).
        # The read waits on nothing that waits for the index: a SQLite reader never waits for a writer, and on a
        # server the log has a connection of its own (a search holds the catalog's and then asks for the index).
        with self._use(write=True) as client:
            try:
                col = self._collection(client, collection, create=True)
                assert col is not None  # create=True always gives a collection
                have: set[str] = set()
                offset = 0
                while True:
                    got = col.get(include=[], limit=10_000, offset=offset)
                    have.update(got["ids"])
                    if len(got["ids"]) < 10_000:
                        break
                    offset += 10_000
                with log.read() as conn:
                    want: dict[str, tuple[int, int]] = {}
                    for item_id, idx in _vectors.record_keys(conn, collection):
                        want[record_id(item_id, idx)] = (item_id, idx)
                    extra = [rid for rid in have if rid not in want]
                    missing = sorted({want[rid][0] for rid in want if rid not in have})
                    vectors = _item_rows.load_vectors(conn, missing)
                for start in range(0, len(extra), 5000):
                    col.delete(ids=extra[start : start + 5000])
                self._apply(col, {i: 0 for i in missing}, vectors)
            except LangGraphMemoryError:  # the catalog's errors among them: they say what failed
                raise
            except Exception as exc:  # noqa: BLE001
                raise self._failed(collection, exc, "repairing") from exc
        return len(extra) + len(missing)

    # ------------------------------------------------------------- rebuild

    def rebuild(self, *, reason: str = "asked for", progress: bool | ProgressFn = True) -> RebuildReport:
        """Rebuild every collection from the catalog's vectors into a new folder (or new collections).

        The old index keeps serving until the new one is complete; a crash
        midway leaves the old one in place (and the next open removes the
        half-built folder). Shows a progress bar on a terminal (``progress``
        may also be a callback ``(collection, done, total)``), and logs what
        it did.
        """
        started = time.perf_counter()
        report = RebuildReport(reason=reason)
        logger.warning("rebuilding the Chroma index from the catalog: %s", reason)
        counts = self._catalog_counts()
        total = sum(counts.values())
        with self.catalog.read() as conn:
            generation = int(self.catalog.get_meta(conn, _GEN_KEY) or 1)
            snapshot = _queue.last_seq(conn)
        new_gen = generation + 1
        with _progress(progress, total) as tick:
            try:
                if self.embedded:
                    self._rebuild_embedded(new_gen, counts, report, tick)
                else:
                    self._rebuild_server(new_gen, counts, report, tick)
            except LangGraphMemoryError:
                raise
            except Exception as exc:  # noqa: BLE001 - Chroma's errors are untyped
                err = self._failed("*", exc, "rebuilding")
                self.broken.discard("*")
                raise err from exc
            with self.catalog.write() as conn:
                self.catalog.set_meta(conn, _GEN_KEY, str(new_gen))
                self.catalog.set_meta(conn, _BROKEN_KEY, None)
                for name in self.collections:
                    _queue.set_chroma_name(conn, name, self._default_name(name, new_gen), snapshot)
                    self.catalog.set_meta(conn, _VERIFIED_KEY + name, str(snapshot))  # all of it is new
        old_names = {name: self._default_name(name, generation) for name in self.collections}
        self.handle.switched()
        self._forget_names()
        self.broken.clear()
        if self.embedded:
            self._remove_stale_folders(self._folder_of(str(new_gen)))
        else:
            self._drop_server_collections(old_names)
        self.sync()
        report.seconds = time.perf_counter() - started
        self.last_rebuild = report
        logger.warning(
            "rebuilt the Chroma index: %d vectors in %d collections in %.1f s",
            report.total,
            len([c for c in report.vectors.values() if c]),
            report.seconds,
        )
        return report

    def _fill(self, upsert: Callable[..., Any], collection: str, report: RebuildReport, tick: ProgressFn) -> None:
        """Copy a collection's vectors from the catalog, batch by batch, through ``upsert``."""
        after = 0
        done = 0
        while True:
            with self.catalog.read() as conn:
                rows = _vectors.vectors_after(conn, collection, after, _BATCH)
            if not rows:
                break
            after = rows[-1][0]
            dims = len(rows[0][3]) // 4
            matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32).reshape(len(rows), dims)
            upsert(ids=[record_id(r[1], r[2]) for r in rows], embeddings=matrix)
            done += len(rows)
            tick(collection, len(rows), 0)
        report.vectors[collection] = done

    def _rebuild_embedded(self, new_gen: int, counts: dict[str, int], report: RebuildReport, tick: ProgressFn) -> None:
        folder = self._folder_of(str(new_gen))
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        client = None
        try:
            # With an index process the new folder is filled there too: a rebuild's upserts hold the GIL.
            process = self.handle.process
            client = process.open(folder) if process is not None else ChromaHandle.open_persistent(folder)
            for name in self.collections:
                if not counts.get(name):
                    continue
                col = client.get_or_create_collection(name, metadata={"hnsw:space": "cosine"}, embedding_function=None)
                self._fill(col.upsert, name, report, tick)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)  # a half-built folder is of no use
            raise
        finally:
            if client is not None:
                ChromaHandle.stop_client(client)

    def _rebuild_server(self, new_gen: int, counts: dict[str, int], report: RebuildReport, tick: ProgressFn) -> None:
        for name in self.collections:
            chroma = self._default_name(name, new_gen)
            with self._use(write=True) as client:
                try:
                    client.delete_collection(chroma)
                except Exception:  # noqa: BLE001 - not there: the usual case
                    pass
                col = None
                if counts.get(name):
                    col = client.get_or_create_collection(
                        chroma, metadata={"hnsw:space": "cosine"}, embedding_function=None
                    )
            if col is None:
                continue

            # The catalog is read between holds of the index lock, never under it: a search may hold the
            # catalog while it waits for this lock, so the other order could deadlock.
            def upsert(col: Any = col, **batch: Any) -> None:
                with self._use(write=True):
                    col.upsert(**batch)

            self._fill(upsert, name, report, tick)

    def _drop_server_collections(self, names: dict[str, str]) -> None:
        with self._use(write=True) as client:
            for old in names.values():
                try:
                    client.delete_collection(old)
                except Exception:  # noqa: BLE001 - already gone
                    pass

    # ------------------------------------------------------------- closing


@contextmanager
def _progress(progress: bool | ProgressFn, total: int) -> Iterator[ProgressFn]:
    """A ``tick(collection, done, total)`` that drives a rich bar on a terminal, a callback, or nothing."""
    if callable(progress):
        yield progress
        return
    if not progress or not sys.stderr.isatty() or total == 0:
        yield lambda _name, _done, _total: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("rebuilding the index: {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    ) as bar:
        task = bar.add_task("vectors", total=total)
        yield lambda name, done, _total: bar.update(task, advance=done, description=name)
