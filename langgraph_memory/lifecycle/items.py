"""Retire, supersede, reinstate and delete items: the life of a memory after it is stored (``docs/lifecycle.md``).

Items are named by id: the key of an item stored through the typed API or a node (its lineage knows the
namespace), or any key with ``namespace=``. ``Memory`` builds one `ItemLifecycle` and offers its calls.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from langgraph.store.base import PutOp

from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import item_uid
from langgraph_memory.catalog import lineage as _lin
from langgraph_memory.catalog import status as _status
from langgraph_memory.catalog.lineage import Edge
from langgraph_memory.catalog.status import ItemStatus
from langgraph_memory.errors import LineageCycleError, NotFoundError, ValidationError
from langgraph_memory.lifecycle.states import lifecycle_json
from langgraph_memory.research.lineage import LineageStore
from langgraph_memory.store import ChromaStore
from langgraph_memory.store.history import Version
from langgraph_memory.store.items import ItemKey

__all__ = ["ItemLifecycle", "DeleteReport"]

logger = logging.getLogger(__name__)


@dataclass
class DeleteReport:
    """What a hard delete removed (or, with ``dry_run``, would remove).

    ``live`` says whether the item was in the store (its value and
    ``vectors``); ``edges`` are the lineage links that went with its node
    (to parents and to children: those children lose a parent);
    ``version`` its strategy or tool version, ``status`` its retired or
    superseded state, ``archived_copies`` the archived lines dropped.
    """

    id: str
    namespace: tuple[str, ...]
    collection: str
    dry_run: bool
    live: bool = False
    vectors: int = 0
    lineage_node: bool = False
    edges: list[Edge] = field(default_factory=list)
    version: tuple[str, int] | None = None
    status: ItemStatus | None = None
    archived_copies: int = 0

    @property
    def removed_anything(self) -> bool:
        return self.live or self.lineage_node or bool(self.edges) or self.status is not None or self.archived_copies > 0

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (the CLI's ``delete --json`` prints it)."""
        return {
            "id": self.id,
            "namespace": list(self.namespace),
            "collection": self.collection,
            "dry_run": self.dry_run,
            "live": self.live,
            "vectors": self.vectors,
            "lineage_node": self.lineage_node,
            "edges": [asdict(e) for e in self.edges],
            "version": {"name": self.version[0], "version": self.version[1]} if self.version is not None else None,
            # The lifecycle record (retired, superseded) the delete removes, if any.
            "lifecycle": lifecycle_json(self.status) if self.status is not None else None,
            "archived_copies": self.archived_copies,
        }

    def removes(self) -> list[str]:
        """What goes, in words: ``["the item (1 vector)", "its lineage node and 2 links", ...]``."""
        parts = []
        if self.live:
            parts.append(f"the item ({self.vectors} vector{'s' if self.vectors != 1 else ''})")
        if self.lineage_node:
            parts.append(f"its lineage node and {len(self.edges)} link{'s' if len(self.edges) != 1 else ''}")
        if self.version is not None:
            parts.append(f"version {self.version[1]} of {self.version[0]!r}")
        if self.status is not None:
            parts.append(f"its {self.status.status} status")
        if self.archived_copies:
            parts.append(f"{self.archived_copies} archived cop{'ies' if self.archived_copies != 1 else 'y'}")
        return parts

    def __str__(self) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        what = ", ".join(self.removes()) or "nothing (no such item)"
        return f"{verb} {self.id} in {self.collection} {self.namespace}: {what}"


class ItemLifecycle:
    """Retire, supersede, reinstate and hard-delete the items of one store.

    Args:
        store: the data directory's store.
        lineage: its lineage (``store.lineage``).
        archiver: returns the data directory's archiver, or None when it has
            no archive (hard deletes then have no archived copies to drop).
        guard: called before every operation; raises when the owner is closed.

    Examples:
        >>> store.put(("research",), "f1", {"content": "Vol clusters"})
        >>> life = ItemLifecycle(store, store.lineage, lambda: None)
        >>> life.retire("f1", "bad data", namespace=("research",)).status
        'retired'
    """

    def __init__(
        self,
        store: ChromaStore,
        lineage: LineageStore,
        archiver: Callable[[], Any | None],
        *,
        guard: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.lineage = lineage
        self._archiver = archiver
        self._guard = guard

    def locate(self, item_id: str, namespace: Sequence[str] | None = None) -> ItemKey:
        """``(namespace, key)`` of ``item_id``: the given namespace, else where its lineage says."""
        if self._guard is not None:
            self._guard()
        if not isinstance(item_id, str) or not item_id:
            raise ValidationError(f"an item id must be a non-empty string, got {item_id!r}")
        if namespace is not None:
            return tuple(namespace), item_id
        ref = self.lineage.item(item_id)
        if ref is None:
            raise NotFoundError(
                f"no item with id {item_id!r} was stored through the typed API or a node; "
                "pass namespace= to name a store item by its namespace and key"
            )
        return ref.namespace, item_id

    def retire(self, item_id: str, reason: str, *, namespace: Sequence[str] | None = None) -> ItemStatus:
        """Retire (soft-delete) an item: searches, nodes and tools stop returning it.

        It stays readable by key and in lineage (marked retired), and the
        archive job archives it at once; `reinstate()` undoes it.

        Examples:
            >>> mem.retire(finding.id, "the vendor restated these prices").status
            'retired'

        Raises:
            NotFoundError: no such live item.
        """
        if not isinstance(reason, str) or not reason.strip():
            raise ValidationError("retire needs a reason (say why the memory should no longer be used)")
        key = self.locate(item_id, namespace)
        st = self.store.items.set_status([key], "retired", reason=reason)[0]
        logger.info("retired %s in %s: %s", item_id, key[0], reason)
        return st

    def supersede(
        self,
        old_id: str,
        new_id: str,
        reason: str | None = None,
        *,
        namespace: Sequence[str] | None = None,
        new_namespace: Sequence[str] | None = None,
    ) -> ItemStatus:
        """Mark ``old_id`` superseded by ``new_id``: searches return the new one only.

        When both are in the lineage, ``new_id`` becomes a child of
        ``old_id`` (relation ``supersedes``) in the same transaction, unless
        it is already one of its ancestors (superseding with an older item).

        Examples:
            >>> mem.supersede(old.id, new.id, "corrected the sample period").superseded_by == new.id
            True

        Raises:
            NotFoundError: either item is not live.
            ValidationError: an item cannot supersede itself.
        """
        old = self.locate(old_id, namespace)
        new = self.locate(new_id, new_namespace)
        if old == new:
            raise ValidationError(f"item {old_id!r} cannot supersede itself")
        linked = self.lineage.item(old_id) is not None and self.lineage.item(new_id) is not None

        def link(conn: sqlite3.Connection) -> None:
            if not linked:
                return
            try:
                LineageStore.link_in(conn, new_id, old_id, "supersedes")
            except LineageCycleError:
                logger.debug("%s is an ancestor of %s: superseded without a lineage link", new_id, old_id)

        st = self.store.items.set_status([old], "superseded", reason=reason, superseded_by=new, before=link)[0]
        logger.info("%s superseded by %s%s", old_id, new_id, f": {reason}" if reason else "")
        return st

    def reinstate(self, item_id: str, *, namespace: Sequence[str] | None = None) -> bool:
        """Undo `retire()` or `supersede()`; return whether the item had a status."""
        return self.store.items.clear_status([self.locate(item_id, namespace)]) > 0

    def history(self, item_id: str, *, namespace: Sequence[str] | None = None) -> list[Version]:
        """Every version of the item, newest first (the current one first, if it is live).

        Each `Version` says what ended it (``change``), when, and which
        LangGraph thread and run made that change.

        Examples:
            >>> mem.history(f.id)[0].value["content"]
            'Carry unwinds in vol spikes'
        """
        ns, key = self.locate(item_id, namespace)
        return self.store.history(ns, key)

    def status(self, item_id: str, *, namespace: Sequence[str] | None = None) -> ItemStatus | None:
        """The item's retired or superseded status, or None for an item searches return."""
        key = self.locate(item_id, namespace)
        return self.store.items.statuses([key]).get(key)

    def delete(self, item_id: str, *, namespace: Sequence[str] | None = None, dry_run: bool = False) -> DeleteReport:
        """Delete an item for good and say what went (see `DeleteReport`); ``dry_run`` only says.

        The live item, its lineage node, links, version and status go in one
        catalog transaction; archived copies are then marked deleted in the
        archive's manifest (their files are immutable). Unlike
        `retire()`, nothing can bring it back.

        Examples:
            >>> print(mem.delete(lesson.id, dry_run=True))
            would delete ... in lessons_learned ('lessons',): the item (1 vector), its lineage node and 1 link
        """
        return self.delete_many([self.locate(item_id, namespace)], dry_run=dry_run)[0]

    def delete_many(self, keys: Sequence[ItemKey], *, dry_run: bool = False) -> list[DeleteReport]:
        """`delete()` for items named by ``(namespace, key)``, in one catalog transaction; a report each.

        Keys that name nothing (no live item, lineage node, status or
        archived copy) get a report whose ``removed_anything`` is false.
        What each item takes with it is read in a few batched reads, so a
        dry run over thousands of items is quick.

        Examples:
            >>> reports = mem.lifecycle.delete_many([(("memories", "u1"), "m1"), (("lessons",), lesson.id)],
            ...                                     dry_run=True)
            >>> sum(r.vectors for r in reports)  # m1 names nothing
            1
        """
        if self._guard is not None:
            self._guard()
        keys = list(dict.fromkeys((tuple(ns), key) for ns, key in keys))
        reports = [DeleteReport(key, ns, self.store.collections.for_namespace(ns).name, dry_run) for ns, key in keys]
        ids = [key for _, key in keys]
        with self.store.catalog.read() as conn:
            live = _item_rows.get_items(conn, keys)
            nodes = _lin.nodes(conn, ids)
            parents: dict[str, list[Edge]] = {}
            for e in _lin.parents_of(conn, ids):
                parents.setdefault(e.child_id, []).append(e)
            children = _lin.children(conn, ids)
        statuses = self.store.items.statuses(keys)
        archiver = self._archiver()
        for report, ident in zip(reports, keys, strict=True):
            it = live.get(ident)
            if it is not None:
                report.live, report.vectors = True, it.n_vectors
            ref = nodes.get(report.id)
            if ref is not None and ref.namespace == report.namespace:  # the node names this item, not a namesake
                report.lineage_node = True
                report.edges = [*parents.get(report.id, []), *children.get(report.id, [])]
                if ref.version is not None and ref.name is not None:
                    report.version = (ref.name, ref.version)
            report.status = statuses.get(ident)
            if archiver is not None:
                uid = item_uid(*ident)
                report.archived_copies = sum(
                    len(lines) for lines in archiver.manifest.archived_lines(uids=[uid]).values()
                )
        doomed = [r for r in reports if r.removed_anything]
        if dry_run or not doomed:
            return reports
        forget_ids = [r.id for r in doomed if r.lineage_node]
        uids = [item_uid(r.namespace, r.id) for r in doomed]

        def forget(conn: sqlite3.Connection) -> None:
            _status.clear(conn, uids, record=False)
            if forget_ids:
                LineageStore.forget_in(conn, forget_ids)

        # Deleting a key that is not live is a no-op for the item, so every doomed key can go in one batch.
        self.store.items.put_many([PutOp(r.namespace, r.id, None) for r in doomed], before=forget)
        archived = [item_uid(r.namespace, r.id) for r in doomed if r.archived_copies]
        if archived and archiver is not None:
            archiver.forget(archived)
        for r in doomed:
            logger.info("%s", r)
        return reports
