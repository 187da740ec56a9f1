"""Merging a share bundle into a store: the conflict rule, re-embedding, statuses, one transaction."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from langgraph_memory.bundle.format import Bundle, Progress, read_bundle
from langgraph_memory.catalog import StoredItem
from langgraph_memory.catalog import evidence as _evidence
from langgraph_memory.catalog import history as _history
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import lineage as _lin
from langgraph_memory.catalog import status as _status
from langgraph_memory.catalog.status import ItemStatus
from langgraph_memory.errors import BundleError, ConfigError, InvalidArgumentError
from langgraph_memory.store.records import record_text

__all__ = ["ConflictRule", "CONFLICT_RULES", "ImportReport", "import_bundle"]

logger = logging.getLogger(__name__)

ConflictRule = Literal["newer", "keep", "replace"]

#: For an item already in the target: does the bundle's copy replace it?
CONFLICT_RULES: dict[str, Callable[[StoredItem, StoredItem], bool]] = {
    "newer": lambda incoming, current: incoming.updated_at > current.updated_at,
    "keep": lambda incoming, current: False,
    "replace": lambda incoming, current: True,
}

# Texts re-embedded per model call when the target's model is not the bundle's.
EMBED_BATCH = 64


@dataclass
class ImportReport:
    """What [`import_bundle()`][langgraph_memory.import_bundle] did (or, with ``dry_run``, would do)."""

    items: int = 0
    added: int = 0
    replaced: int = 0
    kept: int = 0
    #: True when the bundle's vectors were written as they are; False when its texts were re-embedded.
    vectors_reused: bool = True
    reembedded: int = 0
    lineage_nodes: int = 0
    lineage_edges: int = 0
    versions: int = 0
    #: item id -> (version in the bundle, version given here), when the bundle's number was taken here.
    renumbered: dict[str, tuple[int, int]] = field(default_factory=dict)
    cycles_skipped: int = 0
    #: retired and superseded statuses written here (items arriving hidden from searches).
    statuses: int = 0
    #: past versions of items written to the history here (a bundle exported with ``history=True``).
    past_versions: int = 0
    dry_run: bool = False
    on_conflict: str = "newer"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def import_bundle(
    store: Any,
    path: str | os.PathLike[str] | Bundle,
    *,
    on_conflict: ConflictRule = "newer",
    dry_run: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Merge the bundle at ``path`` into ``store``'s data directory (the rules: `langgraph_memory.bundle`).

    ``path`` is the bundle folder, or a [`Bundle`][langgraph_memory.bundle.Bundle] already checked by
    [`read_bundle()`][langgraph_memory.bundle.read_bundle]. The bundle is checked whole first; then, when its model is
    not the
    store's, its texts are re-embedded; then everything is written in one
    catalog transaction and the Chroma index catches up. With ``dry_run``
    nothing is embedded or written: the report says what would happen.

    Raises:
        BundleError: the bundle is damaged, incomplete, or of a newer format (nothing written).
        InvalidArgumentError: an unknown ``on_conflict``.
        ConfigError: the bundle has vectors and the store has no embedding model.

    Examples:
        >>> report = import_bundle(mem.store, "./share")  # needs a data directory with items to share  # doctest: +SKIP
        >>> report.added, report.replaced, report.kept, report.vectors_reused  # needs a data directory with items to share  # doctest: +SKIP
        (40, 0, 2, True)
    """
    if on_conflict not in CONFLICT_RULES:
        raise InvalidArgumentError(f"on_conflict must be one of {', '.join(CONFLICT_RULES)}, got {on_conflict!r}")
    replace = CONFLICT_RULES[on_conflict]
    bundle = path if isinstance(path, Bundle) else read_bundle(path, progress=progress)
    writer = store.items.writer
    report = ImportReport(items=len(bundle.items), dry_run=dry_run, on_conflict=on_conflict)
    has_vectors = any(it.vectors for it in bundle.items)
    if has_vectors and writer.model is None:
        raise ConfigError("importing a bundle with vectors needs a store with an embedding model (index=...)")
    model = bundle.manifest.model
    report.vectors_reused = not has_vectors or (
        model is not None and model.get("name") == writer.model and int(model.get("dims", 0)) == writer.dims
    )
    if dry_run:
        _plan(store, bundle, replace, report)
        return report
    if not report.vectors_reused:
        report.reembedded = _reembed(store, bundle.items, progress)
        logger.info("re-embedded %d texts of %s with %s", report.reembedded, path, writer.model)

    def lineage(conn: Any) -> None:
        # Statuses first: which items they apply to is judged on the target as it was before the merge.
        report.statuses = len(_adopt_statuses(conn, bundle, replace, dry_run=False))
        done = _lin.import_rows(conn, bundle.nodes, bundle.edges, bundle.versions)
        report.lineage_nodes, report.lineage_edges, report.versions = done.nodes, done.edges, done.versions
        report.cycles_skipped = len(done.cycles)
        report.renumbered = done.renumbered
        # The dates travel as they are: one may come from an ancestor left behind, or from lineage grown later.
        _evidence.raise_ends(conn, bundle.evidence_ends)
        for it in bundle.items:  # a renumbered strategy's value says its new number
            if it.key in done.renumbered and it.value.get("version") is not None:
                it.value = {**it.value, "version": done.renumbered[it.key][1]}
        for (ns, key), rows in bundle.history.items():
            coll = store.collections.for_namespace(ns).name
            report.past_versions += _history.adopt(
                conn, _item_rows.item_uid(ns, key), _item_rows.join_ns(ns), key, coll, rows
            )

    if progress is not None:
        progress("write", 0, len(bundle.items))
    report.added, report.replaced, report.kept = store.items.merge_items(bundle.items, replace=replace, before=lineage)
    if progress is not None:
        progress("write", len(bundle.items), len(bundle.items))
    logger.info(
        "imported %s: %d added, %d replaced, %d kept (%s)",
        path,
        report.added,
        report.replaced,
        report.kept,
        "vectors reused" if report.vectors_reused else f"{report.reembedded} texts re-embedded",
    )
    return report


def _adopt_statuses(
    conn: Any, bundle: Bundle, replace: Callable[[StoredItem, StoredItem], bool], *, dry_run: bool
) -> list[ItemStatus]:
    """Write the bundle's statuses that apply to the items the target will hold (run before the merge).

    A status applies when the item left in the target after the merge is the
    one it was set on (same key and ``created_at``): the bundle's copy, added
    or replacing, or the target's copy of that same item, kept by the conflict
    rule. A status the target already holds for that item stands.
    """
    if not bundle.statuses:
        return []
    incoming = {(it.namespace, it.key): it for it in bundle.items}
    current = _item_rows.get_items(conn, [(st.namespace, st.key) for st in bundle.statuses])
    applying = []
    for st in bundle.statuses:
        ident = (st.namespace, st.key)
        here = current.get(ident)
        created = incoming[ident].created_at if here is None or replace(incoming[ident], here) else here.created_at
        if created == st.item_created_at:
            applying.append(st)
    return _status.adopt(conn, applying, dry_run=dry_run)


def _reembed(store: Any, items: list[StoredItem], progress: Progress | None) -> int:
    """Give each item the target model's vectors for the same text paths; return how many texts."""
    jobs: list[tuple[StoredItem, int, str]] = []
    for it in items:
        for i, path in enumerate(it.paths):
            text = record_text(it.value, path)
            if text is None:
                raise BundleError(f"item {it.key!r} has no text at {path!r} to re-embed; the bundle is damaged", None)
            jobs.append((it, i, text))
    for start in range(0, len(jobs), EMBED_BATCH):
        batch = jobs[start : start + EMBED_BATCH]
        matrix = store.items.check_vectors(
            store.cached_embeddings.embed_documents([t for _, _, t in batch]), f"{len(batch)} bundle texts"
        )
        for (it, i, _), vec in zip(batch, matrix, strict=True):
            it.vectors[i] = vec
        if progress is not None:
            progress("re-embed", start + len(batch), len(jobs))
    return len(jobs)


def _plan(store: Any, bundle: Bundle, replace: Callable[[StoredItem, StoredItem], bool], report: ImportReport) -> None:
    """Fill ``report`` with what an import would do, reading the target only."""
    with store.catalog.read() as conn:
        current = _item_rows.get_items(conn, [(it.namespace, it.key) for it in bundle.items])
        known = _lin.nodes(conn, [n.id for n in bundle.nodes])
        report.statuses = len(_adopt_statuses(conn, bundle, replace, dry_run=True))
    for it in bundle.items:
        here = current.get((it.namespace, it.key))
        if here is None:
            report.added += 1
        elif replace(it, here):
            report.replaced += 1
        else:
            report.kept += 1
    report.lineage_nodes = len({n.id for n in bundle.nodes} - set(known))
    report.reembedded = 0 if report.vectors_reused else sum(len(it.paths) for it in bundle.items)
