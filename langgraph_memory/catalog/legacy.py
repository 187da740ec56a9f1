"""Bring a data directory written before the catalog existed into the catalog.

Until version 0.1 the items lived only in Chroma (each record's metadata held
the item as JSON under ``lgm:item``), access data in ``chroma/lgm-access.sqlite``
and lineage in ``lineage.sqlite``. `import_legacy()` copies all of it
into the catalog once, with timestamps, access data and vectors as they were,
then moves the old Chroma files into ``chroma/legacy-<time>/`` (delete that
folder once you are satisfied). It runs when a store opens a data directory
whose catalog is new and which holds an old ``chroma/chroma.sqlite3``.
"""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langgraph_memory._infra.chroma import ChromaHandle
from langgraph_memory.catalog import items as _items
from langgraph_memory.catalog.catalog import Catalog
from langgraph_memory.config import LINEAGE_FILE

__all__ = ["has_legacy", "import_legacy"]

logger = logging.getLogger(__name__)

_DONE_KEY = "legacy_imported"


def has_legacy(chroma_root: Path, catalog: Catalog) -> bool:
    """Whether ``chroma_root`` holds an old-layout Chroma folder the catalog has not imported."""
    return (chroma_root / "chroma.sqlite3").exists() and catalog.meta(_DONE_KEY) is None


def _decode(meta: dict[str, Any], embedding: Any) -> tuple[_items.StoredItem, int] | None:
    if not meta or "lgm:item" not in meta:
        return None
    packed = json.loads(meta["lgm:item"])
    ns_raw = meta.get("lgm:ns", "")
    indexed = bool(meta.get("lgm:vec", True))
    item = _items.StoredItem(
        namespace=_items.split_ns(ns_raw),
        key=packed["k"],
        value=packed["v"],
        created_at=packed["ca"],
        updated_at=packed["ua"],
        last_accessed_at=packed["la"],
        access_count=packed["ac"],
        expires_at=meta.get("lgm:exp"),
        ttl_minutes=packed.get("ttl"),
        indexed=indexed,
        n_vectors=packed["nv"] if indexed else 0,
    )
    if indexed:
        item.vectors = [[float(x) for x in embedding]]
        item.paths = [packed.get("p", "")]
    return item, int(meta.get("lgm:x", 0))


def import_legacy(
    chroma_root: Path,
    data_dir: Path,
    catalog: Catalog,
    model_name: str | None,
    dims: int | None,
    collections: Sequence[str],
) -> int:
    """Copy an old-layout data directory into ``catalog``; return how many items were imported."""
    client = ChromaHandle.open_persistent(chroma_root)
    access = _read_access(chroma_root / "lgm-access.sqlite")
    total = 0
    for name in collections:
        try:
            col = client.get_collection(name, embedding_function=None)
        except Exception:  # noqa: BLE001 - not there
            continue
        got = col.get(include=["metadatas", "embeddings"])
        primaries: dict[str, _items.StoredItem] = {}
        extras: list[tuple[str, int, Any, str]] = []
        for rid, meta, emb in zip(
            got["ids"], got["metadatas"] or [], got["embeddings"] if got["embeddings"] is not None else [], strict=False
        ):
            decoded = _decode(meta, emb)
            if decoded is None:
                continue
            item, x = decoded
            if x == 0:
                acc = access.get((name, rid))
                if acc:
                    item.last_accessed_at = max(item.last_accessed_at, acc[0])
                    item.access_count += acc[1]
                primaries[rid] = item
            else:
                extras.append((rid.rsplit(":", 1)[0], x, emb, json.loads(meta["lgm:item"]).get("p", "")))
        for uid, x, emb, path in sorted(extras, key=lambda e: (e[0], e[1])):
            it = primaries.get(uid)
            if it is not None and it.indexed and len(it.vectors) == x:
                it.vectors.append([float(v) for v in emb])
                it.paths.append(path)
        items = list(primaries.values())
        with catalog.write() as conn:
            model_id = 0
            if model_name and dims and any(it.vectors for it in items):
                from langgraph_memory.catalog import queue as _queue

                model_id = _queue.model_id(conn, model_name, dims)
            total += len(_items.restore_items(conn, items, name, catalog.names, model_id=model_id))
    _import_lineage(data_dir / LINEAGE_FILE, catalog)
    ChromaHandle.stop_client(client)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    legacy_dir = chroma_root / f"legacy-{stamp}"
    legacy_dir.mkdir()
    for entry in list(chroma_root.iterdir()):
        if entry.name == "chroma.sqlite3" or (entry.is_dir() and len(entry.name) == 36 and entry.name.count("-") == 4):
            shutil.move(str(entry), legacy_dir / entry.name)
    with catalog.write() as conn:
        catalog.set_meta(conn, _DONE_KEY, str(time.time()))
    logger.warning(
        "imported %d items from the old data layout into the catalog; the old Chroma files are in %s "
        "(delete that folder once you are satisfied)",
        total,
        legacy_dir,
    )
    return total


def _read_access(path: Path) -> dict[tuple[str, str], tuple[float, int]]:
    if not path.exists():
        return {}
    try:
        conn = sqlite3.connect(str(path))
        try:
            return {
                (c, u): (la, n)
                for c, u, la, n in conn.execute("SELECT collection, uid, last_accessed, count FROM access")
            }
        finally:
            conn.close()
    except sqlite3.Error:
        logger.warning("could not read the old access table %s; access counts start afresh", path, exc_info=True)
        return {}


def _import_lineage(path: Path, catalog: Catalog) -> None:
    if not path.exists():
        return
    try:
        src = sqlite3.connect(str(path))
        try:
            nodes = src.execute("SELECT id, collection, namespace, name, version, created_at FROM items").fetchall()
            edges = src.execute(
                "SELECT child_id, parent_id, relation, child_collection, parent_collection, created_at FROM edges"
            ).fetchall()
            versions = src.execute("SELECT name, version, id, created_at FROM versions").fetchall()
        finally:
            src.close()
    except sqlite3.Error:
        logger.warning("could not read the old lineage file %s; lineage starts afresh", path, exc_info=True)
        return
    with catalog.write() as conn:
        conn.executemany("INSERT OR IGNORE INTO lineage_nodes VALUES (?, ?, ?, ?, ?, ?)", nodes)
        conn.executemany("INSERT OR IGNORE INTO lineage_edges VALUES (?, ?, ?, ?, ?, ?)", edges)
        conn.executemany("INSERT OR IGNORE INTO versions VALUES (?, ?, ?, ?)", versions)
    path.rename(path.with_name(path.name + ".imported"))
