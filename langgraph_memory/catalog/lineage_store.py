"""Parents, children and versions of items, as an API over the catalog's lineage tables.

The typed research API, the nodes, the archiver and ``Memory`` share one per
data directory; the views that draw a lineage live in
``langgraph_memory.research.lineage``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

from langgraph_memory.catalog import lineage as _lin
from langgraph_memory.catalog.catalog import Catalog
from langgraph_memory.catalog.lineage import Edge, ItemRef, VersionRow
from langgraph_memory.config import CATALOG_FILE, resolve_lock_timeout
from langgraph_memory.errors import LineageError, NotFoundError

__all__ = ["LineageStore"]


class LineageStore:
    """Parents, children and strategy versions, in a catalog.

    Built over a store's `Catalog` (one per
    data directory, shared by ``Memory``, the nodes and the archiver), or
    alone over a catalog file path, which it then opens and closes itself.

    Args:
        catalog: a ``Catalog``, or the path of a catalog file.
        lock_timeout: seconds to wait for another writer when opening a path
            (argument > ``LANGGRAPH_MEMORY_LOCK_TIMEOUT`` > config file > 30).

    Example:
        >>> import tempfile, os
        >>> lin = LineageStore(os.path.join(tempfile.mkdtemp(), "catalog.sqlite"))
        >>> _ = lin.register("a", "research_findings", ("research",))
        >>> _ = lin.register("b", "strategy_library", ("strategies",), parents=[("a", "derived_from")])
        >>> [r.id for r in lin.ancestors("b")]
        ['a']
        >>> lin.close()
    """

    def __init__(self, catalog: Catalog | str | os.PathLike[str], *, lock_timeout: float | None = None) -> None:
        if isinstance(catalog, (str, os.PathLike)):
            self.catalog = Catalog(Path(catalog).expanduser(), timeout=resolve_lock_timeout(lock_timeout))
            self._owns = True
        else:  # an open catalog: the SQLite file's, or PgCatalog (same interface)
            self.catalog = catalog
            self._owns = False
        self.path = self.catalog.path

    @classmethod
    def for_data_dir(cls, data_dir: str | os.PathLike[str], **kwargs: Any) -> LineageStore:
        """Open the catalog of ``data_dir`` (a data directory, or a ``postgresql://`` address)."""
        from langgraph_memory.catalog.factory import open_catalog
        from langgraph_memory.config import Settings

        settings = Settings.resolve(data_dir, lock_timeout=kwargs.get("lock_timeout"))
        if settings.catalog_url is None:
            return cls(settings.data_dir / CATALOG_FILE, **kwargs)
        lineage = cls(open_catalog(settings))
        lineage._owns = True
        return lineage

    @property
    def closed(self) -> bool:
        return self.catalog.closed

    def _check_open(self) -> None:
        if self.catalog.closed:
            raise LineageError(f"the lineage in {self.path} is closed; open a new Memory or LineageStore")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        self._check_open()
        with self.catalog.read() as conn:
            yield conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        self._check_open()
        with self.catalog.write() as conn:
            yield conn

    def close(self) -> None:
        """Close the catalog if this object opened it (a shared catalog is its owner's to close)."""
        if self._owns:
            self.catalog.close()

    def __enter__(self) -> LineageStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------- writes

    def register(
        self,
        item_id: str,
        collection: str,
        namespace: Sequence[str],
        *,
        parents: Iterable[tuple[str, str]] = (),
        name: str | None = None,
        version_name: str | None = None,
        link_previous_version: bool = True,
        evidence_end: date | None = None,
    ) -> int | None:
        """Record a new item, its parents, and (``version_name``) its version number, in one transaction.

        ``evidence_end`` is the last market date of the item's own data, if any; its evidence end is the
        latest of that and its parents' (see `langgraph_memory.catalog.evidence`).

        Parents must be known items, no link may close a cycle, and the
        version is the next free number for ``version_name`` (1 for a new
        name). With ``link_previous_version`` the previous version becomes a
        parent (relation ``"previous_version"``). Returns the version number,
        or None without ``version_name``. `register_in()` does the same
        inside a transaction of the caller's (the typed API's item write).

        Raises:
            LineageError: a parent is unknown or an id is empty.
            LineageCycleError: a link would make an item its own ancestor.
        """
        with self._write() as conn:
            return self.register_in(
                conn,
                item_id,
                collection,
                namespace,
                parents=parents,
                name=name,
                version_name=version_name,
                link_previous_version=link_previous_version,
                evidence_end=evidence_end,
            )

    @staticmethod
    def register_in(
        conn: sqlite3.Connection, item_id: str, collection: str, namespace: Sequence[str], **kwargs: Any
    ) -> int | None:
        """`register()` inside the caller's write transaction on the same catalog."""
        return _lin.register(conn, item_id, collection, namespace, **kwargs)

    @staticmethod
    def link_in(conn: sqlite3.Connection, child_id: str, parent_id: str, relation: str = "derived_from") -> Edge:
        """`link()` inside the caller's write transaction (raises before writing anything)."""
        return _lin.link(conn, child_id, parent_id, relation)

    @staticmethod
    def forget_in(conn: sqlite3.Connection, item_ids: Sequence[str]) -> None:
        """`forget()` inside the caller's write transaction (a hard delete of the items)."""
        _lin.forget(conn, item_ids)

    @staticmethod
    def version_in(conn: sqlite3.Connection, name: str, version: int) -> ItemRef | None:
        """The item that is version ``version`` of ``name``, read inside the caller's transaction."""
        item_id = _lin.version_id(conn, name, version)
        return _lin.node(conn, item_id) if item_id is not None else None

    def link(self, child_id: str, parent_id: str, relation: str = "derived_from") -> Edge:
        """Record that ``child_id`` came from ``parent_id``; both must be registered.

        Idempotent for the same (child, parent, relation).

        Raises:
            LineageError: either id is unknown.
            LineageCycleError: ``child_id`` is ``parent_id`` or one of its ancestors.
        """
        with self._write() as conn:
            return _lin.link(conn, child_id, parent_id, relation)

    def forget(self, item_id: str) -> None:
        """Remove an item's node, its edges and its version row."""
        with self._write() as conn:
            _lin.forget(conn, [item_id])

    # --------------------------------------------------------------- reads

    def item(self, item_id: str) -> ItemRef | None:
        """Where ``item_id`` lives, or None if it was never registered."""
        with self._read() as conn:
            return _lin.node(conn, item_id)

    def items(self, item_ids: Iterable[str]) -> dict[str, ItemRef]:
        """``item()`` for many ids at once (unknown ids are left out)."""
        with self._read() as conn:
            return _lin.nodes(conn, item_ids)

    def require(self, item_id: str) -> ItemRef:
        """``item()``, raising `NotFoundError` for an unknown id."""
        ref = self.item(item_id)
        if ref is None:
            raise NotFoundError(f"no item with id {item_id!r} was stored through this Memory's data directory")
        return ref

    def parents(self, item_id: str) -> list[Edge]:
        """Direct parents of ``item_id`` (oldest link first)."""
        with self._read() as conn:
            return _lin.parents(conn, item_id)

    def children(self, item_id: str) -> list[Edge]:
        """Direct children of ``item_id`` (oldest link first)."""
        with self._read() as conn:
            return _lin.children(conn, [item_id])[item_id]

    def children_of(self, item_ids: Sequence[str]) -> dict[str, list[Edge]]:
        """Direct children of several items in one read."""
        with self._read() as conn:
            return _lin.children(conn, item_ids)

    def ancestor_depths(self, item_id: str) -> dict[str, int]:
        """Every ancestor of ``item_id`` and its longest distance (1 = parent)."""
        with self._read() as conn:
            return _lin.ancestor_depths(conn, item_id)

    def ancestors(self, item_id: str) -> list[ItemRef]:
        """Ancestors root first: the farthest first, then by creation time."""
        return self.ordered_ancestors(self.ancestor_depths(item_id))

    def ordered_ancestors(self, depths: dict[str, int]) -> list[ItemRef]:
        """The refs of ``ancestor_depths`` root first: the farthest first, then by creation time."""
        refs = self.items(depths)
        order = sorted(depths, key=lambda i: (-depths[i], refs[i].created_at if i in refs else 0.0, i))
        return [refs.get(i) or ItemRef(i, "", ()) for i in order]

    def versions(self, name: str) -> list[VersionRow]:
        """Versions of ``name``, oldest first (empty for an unknown name)."""
        with self._read() as conn:
            return _lin.versions(conn, name)

    def edge_count(self) -> int:
        with self._read() as conn:
            return _lin.edge_count(conn)
