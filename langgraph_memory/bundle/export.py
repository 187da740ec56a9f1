"""Writing a share bundle from a store: every item whole, with its lineage and status, atomically in place."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langgraph_memory.archive.format import fsync_dir
from langgraph_memory.bundle.format import (
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    MANIFEST,
    MEMORIES,
    README,
    BundleManifest,
    LineWriter,
    Progress,
    history_record,
    item_line,
    node_line,
    readme_text,
)
from langgraph_memory.catalog import StoredItem, item_uid
from langgraph_memory.catalog import evidence as _evidence
from langgraph_memory.catalog import history as _history
from langgraph_memory.catalog import lineage as _lin
from langgraph_memory.catalog.lineage import Edge
from langgraph_memory.catalog.status import STATUSES
from langgraph_memory.errors import InvalidArgumentError, StorageError
from langgraph_memory.research.collections import COLLECTIONS, GENERAL, collection_by_name, collection_for
from langgraph_memory.store.namespaces import validate_namespace

__all__ = ["export_bundle"]

logger = logging.getLogger(__name__)

_PAGE = 500


def _collections(prefixes: list[tuple[str, ...]] | None, collections: Sequence[str] | None) -> list[str]:
    every = [s.name for s in (*COLLECTIONS.values(), GENERAL)]
    names = {collection_by_name(c).name for c in collections} if collections else set(every)
    if prefixes and all(prefixes):  # the empty prefix () reaches every collection
        names &= {collection_for(p).name for p in prefixes}
    return [n for n in every if n in names]


def export_bundle(
    store: Any,
    path: str | os.PathLike[str],
    *,
    namespaces: Sequence[tuple[str, ...]] | None = None,
    collections: Sequence[str] | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
    history: bool = False,
) -> BundleManifest:
    """Write the memories of ``store`` (all, or under ``namespaces`` / in ``collections``) as a bundle at ``path``.

    The files are written into a temporary folder beside ``path``, fsynced
    and moved into place at the end, so ``path`` never holds half a bundle.
    An existing non-empty ``path`` is refused unless ``overwrite``.
    ``history``: each item's line also carries its past versions (values, times, what ended each, vectors),
    which an import adds to the target's history.

    Raises:
        InvalidArgumentError: ``path`` exists and is not an empty folder (and not ``overwrite``).
        NotFoundError: an unknown collection name.

    Examples:
        >>> manifest = export_bundle(mem.store, "./share", namespaces=[("lessons",)])
        >>> manifest.counts["items"]
        1
    """
    target = Path(path).expanduser().resolve()
    if target.exists() and (not target.is_dir() or any(target.iterdir())) and not overwrite:
        raise InvalidArgumentError(f"{target} exists and is not an empty folder; choose another path, or overwrite")
    prefixes = [validate_namespace(tuple(ns), for_write=False) for ns in namespaces] if namespaces else None
    names = _collections(prefixes, collections)
    store.flush_access()  # export the access data as it is now, reads noted but not yet written included
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        tmp.chmod(0o755)  # mkdtemp makes it private; a bundle is meant to be shared
    except OSError as exc:
        raise StorageError(f"cannot create the bundle folder {target}: {exc}", target) from exc
    try:
        manifest = _write(store, tmp, names, prefixes, progress, history)
        if target.exists():
            shutil.rmtree(target) if target.is_dir() else target.unlink()
        os.replace(tmp, target)
        fsync_dir(target.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    logger.info("exported %d memories to %s", manifest.counts["items"], target)
    return manifest


def _write(
    store: Any,
    folder: Path,
    names: list[str],
    prefixes: list[tuple[str, ...]] | None,
    progress: Progress | None,
    history: bool = False,
) -> BundleManifest:
    by_coll: dict[str, int] = {}
    exported: set[str] = set()
    referenced: set[str] = set()
    n_edges = n_versions = n_past = 0
    by_status = dict.fromkeys(STATUSES, 0)
    try:
        fh = open(folder / MEMORIES, "xb")
    except OSError as exc:
        raise StorageError(f"cannot write the bundle in {folder}: {exc}", folder) from exc
    with fh:
        out = LineWriter(fh)
        for name in names:
            total = store.items.count(name)
            for done, page in _pages(store, name, prefixes):
                for record in _lines(store, page, history):
                    out.write(record)
                    n_past += len(record.get("history") or ())
                    lineage = record["lineage"]
                    n_edges += len(lineage["parents"])
                    n_versions += lineage["version"] is not None
                    if "status" in record:
                        by_status[record["status"]["status"]] += 1
                    referenced.update(p["id"] for p in lineage["parents"])
                    exported.add(record["key"])
                    by_coll[name] = by_coll.get(name, 0) + 1
                if progress is not None:
                    progress(f"export {name}", done, max(total, done))
        n_nodes = _write_ancestors(store, out, referenced - exported, exported)
        fh.flush()
        os.fsync(fh.fileno())
    model_name, dims = store.items.stored_model()
    from langgraph_memory._version import __version__

    manifest = BundleManifest(
        format=BUNDLE_FORMAT,
        schema_version=BUNDLE_VERSION,
        source={
            "catalog_id": store.catalog.catalog_id,
            "data_dir": str(store.settings.data_dir),
            "host": socket.gethostname(),
            "exported_at": datetime.now(UTC).isoformat(),
            "package_version": __version__,
        },
        counts={
            "items": sum(by_coll.values()),
            "by_collection": by_coll,
            "lineage_nodes": n_nodes,
            "lineage_edges": n_edges,
            "versions": n_versions,
            **({"past_versions": n_past} if history else {}),
            **by_status,
        },
        model={"name": model_name, "dims": int(dims)} if model_name and dims else None,
        files={MEMORIES: out.summary()},
    )
    _write_text(folder / README, readme_text(manifest))
    _write_text(folder / MANIFEST, json.dumps(manifest.as_dict(), indent=2, ensure_ascii=False) + "\n")
    fsync_dir(folder)
    return manifest


def _write_ancestors(store: Any, out: LineWriter, frontier: set[str], exported: set[str]) -> int:
    """Write the ancestors of exported items that were not exported as lineage nodes with their links.

    Their items stay behind, but the lineage of what was exported stays
    whole: the importer sees every ancestor by id, root first.
    """
    seen: set[str] = set()
    while frontier:
        with store.catalog.read() as conn:
            refs = _lin.nodes(conn, sorted(frontier))
            edges: dict[str, list[Edge]] = {}
            for e in _lin.parents_of(conn, sorted(refs)):
                edges.setdefault(e.child_id, []).append(e)
            dated = _evidence.ends_by_uid(conn, [item_uid(r.namespace, r.id) for r in refs.values()])
        for ref in refs.values():
            out.write(node_line(ref, edges.get(ref.id, []), dated.get(item_uid(ref.namespace, ref.id))))
        seen |= frontier
        frontier = {e.parent_id for es in edges.values() for e in es} - exported - seen
    return len(seen)


def _pages(store: Any, name: str, prefixes: list[tuple[str, ...]] | None) -> Iterator[tuple[int, list[StoredItem]]]:
    """Pages of a collection's items in scope, each with how many items were read so far."""
    page: list[StoredItem] = []
    done = 0
    for item in store.items.iter_items(name, with_vectors=True):
        done += 1
        if prefixes is None or any(item.namespace[: len(p)] == p for p in prefixes):
            page.append(item)
        if done % _PAGE == 0:
            yield done, page
            page = []
    yield done, page


def _lines(store: Any, items: list[StoredItem], history: bool = False) -> Iterator[dict[str, Any]]:
    """Bundle lines for a page of items, their lineage read in one go."""
    if not items:
        return
    keys = [it.key for it in items]
    with store.catalog.read() as conn:
        nodes = _lin.nodes(conn, keys)
        edges: dict[str, list[Edge]] = {}
        for e in _lin.parents_of(conn, keys):
            edges.setdefault(e.child_id, []).append(e)
        versions = _lin.versions_of(conn, keys)
        dated = _evidence.ends_by_uid(conn, [it.uid for it in items])
        past = {it.uid: _history.records(conn, it.uid) for it in items} if history else {}
    statuses = store.items.statuses([(it.namespace, it.key) for it in items])
    for it in items:
        node = nodes.get(it.key)
        status = statuses.get((it.namespace, it.key))
        # A lineage node names one item: only the item in the node's namespace carries it.
        if node is None or tuple(node.namespace) != it.namespace:
            line = item_line(it, None, [], None, status)
        else:
            line = item_line(it, node, edges.get(it.key, []), versions.get(it.key), status, dated.get(it.uid))
        if past.get(it.uid):
            line["history"] = [history_record(r) for r in past[it.uid]]
        yield line


def _write_text(path: Path, text: str) -> None:
    with open(path, "x", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
