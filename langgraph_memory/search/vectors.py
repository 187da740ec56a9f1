"""The catalog's vectors resident in memory, ordered by namespace, so exact scoring never reads blobs.

Reading a candidate's vector from SQLite costs about as much as scoring it
a hundred times (measured: 1,400 vectors, 8 ms from the catalog against
0.35 ms from memory). `VectorCache` keeps, per collection, a float32
matrix of every vector with its item id and namespace id, loaded on first use
and kept in step through the catalog's change log (``index_queue``, see
`langgraph_memory.catalog.queue`): before each use one query reads the
log's head, and the items changed since are reloaded (by any process, on any
machine: the log is in the catalog, a file or a PostgreSQL database). A cache
left too far behind (the log was pruned past it) or a re-embedding
(``vectors_epoch``) reloads the collection.

The rows are sorted by namespace (then item id), so every namespace prefix is
a contiguous run of rows: a user's namespace, or a tenth of a collection, is
scored in place, one dot product per row and no copy (measured here: 10,000
rows scored in place in 1.1 ms, gathered in 4.6 ms). Rows changed since the
last sort sit in an unsorted tail, looked through by their namespace ids, and
are merged in (with dead rows compacted away) once the tail or the dead rows
pass a small share of the rows.

Rows are normalised once, so a score is one dot product, computed on one
thread (`dot_rows()`).

Memory: 4 bytes per dimension per vector (1.5 KB at 384 dims, 154 MB for
100,000 vectors), and 256 bytes for its sketch once a search that finds the
index busy has ranked the collection by it (64 dimensions: its main
directions, see `CollectionVectors.rank()`). Collections that would take the cache over ``budget_bytes``
are not cached; their searches read vectors from the catalog as before.

Example:
    >>> cache = VectorCache(store.catalog)  # needs a cached collection and its query_vector  # doctest: +SKIP
    >>> with cache.lock, store.catalog.snapshot() as conn:  # needs a cached collection  # doctest: +SKIP
    ...     vecs = cache.get(conn, "memories")
    ...     vecs.rank(Segments([(0, vecs.n)]), query_vector, top=5)
    [(17, 0.83), (4, 0.79), ...]
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from langgraph_memory.catalog import Catalog
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.catalog import queue as _queue
from langgraph_memory.catalog import vectors as _catalog_vectors
from langgraph_memory.catalog.connection import Connection

__all__ = ["VectorCache", "CollectionVectors", "Segments", "DEFAULT_BUDGET_BYTES", "dot_rows"]

logger = logging.getLogger(__name__)

#: Default cap on the memory every cached collection together may take.
DEFAULT_BUDGET_BYTES = 1 << 30
#: Sort the tail in once it holds this share of the rows (or the dead rows reach it).
_TAIL_SHARE = 0.05
#: Blocks of consecutive rows that `CollectionVectors.beaten()` samples.
_PROBE_BLOCKS = 16
#: Item ids per base row up to which `rows_of_items()` reads a table instead of searching the sorted ids.
_TABLE_SLOTS_PER_ROW = 4
#: Dimensions of each row's sketch: the row on the collection's main directions (its principal components),
#: which `CollectionVectors.rank()` scores first when asked for a ``coarse`` ranking. A fixed random projection
#: of as many dimensions kept only 0.71-0.80 of the true top 10 among the best 2% on MiniLM vectors of LoCoMo
#: turns; the main directions, fitted on the other half of them, 0.988.
_SKETCH_DIMS = 64
#: Rows sampled to fit those directions (an eigendecomposition of their 384 x 384 covariance: a few ms).
_SKETCH_SAMPLE = 4_096
#: Rows from which a ``coarse`` ranking scores the sketch first (fewer are scored exactly in a few ms anyway).
#: 20,000 left a filter's matches exact: 14,286 rows gathered by the catch-up bench's filter took 20.6 ms exactly
#: against 6.2 ms by sketch (the search 32 ms against 14 ms, load 10). Sketch recall@10 at such shares, the best
#: 2,000 of 5,000-20,000 rows: 1.000 on the bench's vectors (60 queries, scopes of 10,000-20,000, keeping 500
#: too); on 3,320 MiniLM vectors of LoCoMo turns, 200 other turns as queries, keeping 10% 1.000, 5% 0.9995.
_COARSE_MIN = 5_000
#: Rows whose sketch scored best that a ``coarse`` ranking scores exactly (at least; 64 per item asked for).
#: Measured on 100,000 clustered 384-d vectors: sketch and rescoring 3.0-3.1 ms against 11.4-11.5 ms for every row
#: exactly, recall@10 1.000 over 30 queries between clusters (0.997 keeping 1,000).
_COARSE_KEEP = 2_000
#: Bytes per row besides the vector: item id, namespace id, namespace rank, alive, and the sketch (made for a
#: collection only once a busy index has a search rank it coarsely).
_ROW_OVERHEAD = 8 + 8 + 8 + 1 + 4 * _SKETCH_DIMS


def _offsets(widths: np.ndarray) -> np.ndarray:
    """0, 1, ..., w - 1 for each width w, concatenated (the positions inside runs of those widths)."""
    return np.arange(int(widths.sum())) - np.repeat(np.cumsum(widths) - widths, widths)


def dot_rows(matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``matrix @ q`` on one thread.

    Not through BLAS: OpenBLAS splits a matrix-vector product over its
    threads, and when another process keeps a core busy the split costs more
    than the product (measured on 2 cores: 10,000 x 384 took 8 ms through
    BLAS, 1 ms through ``einsum``; equal when the machine is quiet).
    """
    return np.einsum("ij,j->i", matrix, q)


def main_directions(rows: np.ndarray, k: int = _SKETCH_DIMS) -> np.ndarray:
    """The ``k`` directions along which ``rows`` vary most, as the columns of a ``(dims, k)`` matrix.

    A row's sketch is ``row @ basis``; its dot with the query's sketch ranks
    rows as their cosines do up to the variance the other directions hold
    (a constant per query, the mean's share, drops out of any ranking).

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> rows = rng.standard_normal((500, 8)) * [9, 5, 1, 1, 1, 1, 1, 1]  # two directions dominate
        >>> basis = main_directions(rows.astype(np.float32), 2)
        >>> np.round(np.abs(basis), 1)[:3].tolist()
        [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    """
    centred = rows - rows.mean(axis=0)
    _, vecs = np.linalg.eigh(centred.T @ centred)  # ascending eigenvalues
    return np.ascontiguousarray(vecs[:, ::-1][:, :k], dtype=np.float32)


@dataclass
class Segments:
    """Rows to score: contiguous runs ``[start, stop)``, plus rows named one by one."""

    runs: list[tuple[int, int]] = field(default_factory=list)
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __len__(self) -> int:
        return sum(b - a for a, b in self.runs) + len(self.rows)


@dataclass
class _Version:
    seq: int
    epoch: str | None


class CollectionVectors:
    """One collection's vectors: rows of a normalised float32 matrix, with their items and namespaces.

    Rows ``[0, base)`` are sorted by namespace name, then item id; rows
    ``[base, n)`` were appended since (the tail). A row whose item changed
    or went is marked dead (``alive`` False); the item's new rows go to the
    tail.
    """

    def __init__(self, dims: int, capacity: int = 1024) -> None:
        self.dims = dims
        self.n = 0
        self.base = 0
        self.matrix = np.zeros((capacity, dims), dtype=np.float32)
        # Made by the first coarse ranking (`_sketches`), then kept for every row: contiguous beside the matrix,
        # a sixth of its bytes to read.
        self.sketch: np.ndarray | None = None
        self.basis: np.ndarray | None = None
        self.item_ids = np.zeros(capacity, dtype=np.int64)
        self.ns_ids = np.zeros(capacity, dtype=np.int64)
        self.alive = np.zeros(capacity, dtype=bool)
        self.n_dead = 0
        # The sorted part: each base row's namespace rank, and the names by rank.
        self._ranks = np.zeros(0, dtype=np.int64)
        self._names: list[str] = []
        # Base rows by item id: ids in order, and their rows.
        self._sorted_ids = np.zeros(0, dtype=np.int64)
        self._sorted_rows = np.zeros(0, dtype=np.int64)
        # The same as a table indexed by item id - _id_lo (when ids are dense enough): an item's first base
        # row (-1: none) and its row count. One read per item instead of a binary search's ~17, each of which
        # misses the cache after a Chroma query has been through it.
        self._id_lo = 0
        self._first_row = np.zeros(0, dtype=np.int64)
        self._row_count = np.zeros(0, dtype=np.int32)

    @property
    def nbytes(self) -> int:
        return int(
            self.matrix.nbytes
            + (0 if self.sketch is None else self.sketch.nbytes)
            + self.item_ids.nbytes
            + self.ns_ids.nbytes
            + self.alive.nbytes
            + self._ranks.nbytes
            + self._sorted_ids.nbytes
            + self._sorted_rows.nbytes
            + self._first_row.nbytes
            + self._row_count.nbytes
        )

    @property
    def n_alive(self) -> int:
        return self.n - self.n_dead

    # ------------------------------------------------------------ writes

    def _grow(self, need: int) -> None:
        cap = len(self.item_ids)
        if need <= cap:
            return
        new = max(need, cap * 2)
        for name in ("matrix", "sketch", "item_ids", "ns_ids", "alive"):
            old = getattr(self, name)
            if old is None:
                continue
            shape = (new, *old.shape[1:])
            arr = np.zeros(shape, dtype=old.dtype)
            arr[: self.n] = old[: self.n]
            setattr(self, name, arr)

    def append(self, item_ids: np.ndarray, ns_ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add rows to the tail (vectors are normalised here; a zero vector stays zero and scores 0)."""
        k = len(item_ids)
        if not k:
            return
        self._grow(self.n + k)
        norms = np.linalg.norm(vectors, axis=1)
        norms[norms == 0] = 1.0
        end = self.n + k
        self.matrix[self.n : end] = vectors / norms[:, None]
        if self.sketch is not None and self.basis is not None:
            self.sketch[self.n : end] = self.matrix[self.n : end] @ self.basis
        self.item_ids[self.n : end] = item_ids
        self.ns_ids[self.n : end] = ns_ids
        self.alive[self.n : end] = True
        self.n = end

    def kill_items(self, item_ids: np.ndarray) -> None:
        """Mark every row of these items dead."""
        rows = self.rows_of_items(item_ids)
        if len(rows):
            self.alive[rows] = False
            self.n_dead += len(rows)

    def needs_sort(self) -> bool:
        """Whether the tail or the dead rows have grown past their share."""
        limit = _TAIL_SHARE * max(self.n, 1)
        return self.n - self.base > limit or self.n_dead > limit

    def sort(self, names: dict[int, str]) -> None:
        """Compact dead rows away and sort every row by namespace name, then item id.

        ``names`` maps every namespace id among the rows to its joined name.
        """
        keep = np.nonzero(self.alive[: self.n])[0]
        ns = self.ns_ids[keep]
        ordered = sorted({int(i) for i in np.unique(ns)}, key=lambda i: names[i])
        rank_of = {nid: r for r, nid in enumerate(ordered)}
        ranks = np.fromiter((rank_of[int(i)] for i in ns), dtype=np.int64, count=len(ns))
        order = keep[np.lexsort((self.item_ids[keep], ranks))]
        k = len(order)
        self.matrix[:k] = self.matrix[order]
        if self.sketch is not None:
            self.sketch[:k] = self.sketch[order]
        self.item_ids[:k] = self.item_ids[order]
        self.ns_ids[:k] = self.ns_ids[order]
        self.alive[:k] = True
        self.alive[k : self.n] = False
        self.n = self.base = k
        self.n_dead = 0
        self._ranks = np.sort(ranks)
        self._names = [names[i] for i in ordered]
        by_id = np.argsort(self.item_ids[:k], kind="stable")
        self._sorted_ids = self.item_ids[:k][by_id]
        self._sorted_rows = by_id
        self._build_table()

    def _build_table(self) -> None:
        """The item-id table of the base rows (see ``__init__``), or none when ids are too sparse for one."""
        ids = self._sorted_ids
        self._first_row = np.zeros(0, dtype=np.int64)
        self._row_count = np.zeros(0, dtype=np.int32)
        if not len(ids) or int(ids[-1]) - int(ids[0]) >= _TABLE_SLOTS_PER_ROW * len(ids) + 1024:
            return
        self._id_lo = int(ids[0])
        span = int(ids[-1]) - self._id_lo + 1
        unique, first, counts = np.unique(ids, return_index=True, return_counts=True)
        self._first_row = np.full(span, -1, dtype=np.int64)
        self._row_count = np.zeros(span, dtype=np.int32)
        # The base is sorted by namespace, then item id: an item's rows are consecutive, and the stable
        # argsort puts its lowest row first.
        self._first_row[unique - self._id_lo] = self._sorted_rows[first]
        self._row_count[unique - self._id_lo] = counts

    def _base_runs(self, item_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each item's first base row and its number of base rows (0 for an item with none)."""
        if len(self._first_row):
            off = item_ids - self._id_lo
            inside = (off >= 0) & (off < len(self._first_row))
            off = np.where(inside, off, 0)
            return self._first_row[off], np.where(inside, self._row_count[off], 0)
        lo = np.searchsorted(self._sorted_ids, item_ids, side="left")
        hi = np.searchsorted(self._sorted_ids, item_ids, side="right")
        return self._sorted_rows[np.minimum(lo, len(self._sorted_rows) - 1)], hi - lo

    # ------------------------------------------------------------- reads

    def rows_of_items(self, item_ids: np.ndarray) -> np.ndarray:
        """The live rows of these items (every vector of each), in no particular order."""
        return self._rows_and_owners(item_ids)[0]

    def _rows_and_owners(self, item_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The live rows of these items, and for each row the position in ``item_ids`` of its item."""
        item_ids = np.asarray(item_ids, dtype=np.int64)
        none = np.zeros(0, dtype=np.int64)
        if not len(item_ids) or not self.n:
            return none, none
        rows, owners = [], []
        if self.base:
            first, width = self._base_runs(item_ids)
            if width.any():
                rows.append(np.repeat(first, width) + _offsets(width))
                owners.append(np.repeat(np.arange(len(item_ids)), width))
        if self.base < self.n:
            tail_ids = self.item_ids[self.base : self.n]
            hit = np.nonzero(np.isin(tail_ids, item_ids))[0]
            if len(hit):
                order = np.argsort(item_ids, kind="stable")
                rows.append(self.base + hit)
                owners.append(order[np.searchsorted(item_ids[order], tail_ids[hit])])
        if not rows:
            return none, none
        all_rows, all_owners = np.concatenate(rows), np.concatenate(owners)
        live = self.alive[all_rows]
        return all_rows[live], all_owners[live]

    def in_namespaces(self, item_ids: np.ndarray, ns_ids: np.ndarray) -> np.ndarray:
        """Which of these items (a mask in their order) have a live row in one of the namespaces ``ns_ids``."""
        item_ids = np.asarray(item_ids, dtype=np.int64)
        keep = np.zeros(len(item_ids), dtype=bool)
        rows, owners = self._rows_and_owners(item_ids)
        if len(rows) and len(ns_ids):
            wanted = np.sort(np.asarray(ns_ids, dtype=np.int64))
            ns = self.ns_ids[rows]
            pos = np.minimum(np.searchsorted(wanted, ns), len(wanted) - 1)
            keep[owners[wanted[pos] == ns]] = True
        return keep

    def namespace_rows(self, exact: str, lo: str, hi: str, ns_ids: np.ndarray) -> Segments:
        """The rows of namespace ``exact`` and of names in ``[lo, hi)``; ``ns_ids`` are those namespaces' ids.

        The sorted rows come as runs (dead ones included: `rank()`
        skips them); the tail's by their namespace ids.
        """
        runs = []
        r_eq = bisect.bisect_left(self._names, exact)
        if r_eq < len(self._names) and self._names[r_eq] == exact:
            runs.append((r_eq, r_eq + 1))
        runs.append((bisect.bisect_left(self._names, lo), bisect.bisect_left(self._names, hi)))
        out = Segments()
        for r0, r1 in runs:
            if r0 < r1:
                a, b = np.searchsorted(self._ranks, [r0, r1])
                if a < b:
                    out.runs.append((int(a), int(b)))
        if self.base < self.n and len(ns_ids):
            tail = np.arange(self.base, self.n)
            keep = np.isin(self.ns_ids[self.base : self.n], ns_ids) & self.alive[self.base : self.n]
            out.rows = tail[keep]
        return out

    def everything(self) -> Segments:
        return Segments([(0, self.n)] if self.n else [])

    def items_of(self, segments: Segments) -> np.ndarray:
        """The item ids of ``segments``' live rows (an item with several vectors may repeat)."""
        parts = [self.item_ids[a:b][self.alive[a:b]] for a, b in segments.runs]
        if len(segments.rows):
            parts.append(self.item_ids[segments.rows[self.alive[segments.rows]]])
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def beaten(
        self, segments: Segments, qvec: np.ndarray, bar: float, ignore: Callable[[np.ndarray], np.ndarray], size: int
    ) -> bool:
        """Whether a sample of about ``size`` of ``segments``' live rows, in blocks spread over them, holds an item scoring
        above ``bar``, other than the items ``ignore`` marks (given item ids, a mask of those to pass over).

        A check of an approximate answer whose ``bar``-th best it claims is
        the collection's: any item above that bar must be in it.
        """
        total = len(segments)
        if not total or size <= 0:
            return False
        q = np.asarray(qvec, dtype=np.float32)
        bar *= float(np.linalg.norm(q)) or 1.0
        # Blocks of consecutive rows, scored in place: no gather of rows one page apart.
        per = max(1, size // _PROBE_BLOCKS)
        for a, b in segments.runs:
            k = max(1, round(_PROBE_BLOCKS * (b - a) / total))
            for i in range(k):
                start = a + (b - a) * i // k
                stop = min(start + per, b)
                if self._beaten(start + np.nonzero(dot_rows(self.matrix[start:stop], q) > bar)[0], ignore):
                    return True
        if len(segments.rows):
            rows = segments.rows[:: max(1, total // size)]
            return self._beaten(rows[dot_rows(self.matrix[rows], q) > bar], ignore)
        return False

    def _beaten(self, rows: np.ndarray, ignore: Callable[[np.ndarray], np.ndarray]) -> bool:
        rows = rows[self.alive[rows]]
        return bool(len(rows)) and not ignore(self.item_ids[rows]).all()

    def _sketches(self) -> tuple[np.ndarray, np.ndarray]:
        """Every row's sketch and the basis that made it, fitted on a sample of the live rows the first time."""
        if self.sketch is None or self.basis is None:
            live = np.nonzero(self.alive[: self.n])[0]
            sample = live[:: max(1, len(live) // _SKETCH_SAMPLE)]
            self.basis = main_directions(self.matrix[sample]) if len(sample) else np.eye(self.dims, _SKETCH_DIMS)
            self.basis = self.basis.astype(np.float32)
            self.sketch = np.zeros((len(self.item_ids), self.basis.shape[1]), dtype=np.float32)
            self.sketch[: self.n] = self.matrix[: self.n] @ self.basis
        return self.sketch, self.basis

    def _coarse(self, segments: Segments, q: np.ndarray, keep: int) -> np.ndarray:
        """The ``keep`` rows of ``segments`` whose sketch scores best against the query ``q``'s."""
        sketch, basis = self._sketches()
        qs = q @ basis
        scores_parts, rows_parts = [], []
        for a, b in segments.runs:
            scores_parts.append(dot_rows(sketch[a:b], qs))
            rows_parts.append(np.arange(a, b))
        if len(segments.rows):
            scores_parts.append(dot_rows(sketch[segments.rows], qs))
            rows_parts.append(segments.rows)
        scores, rows = np.concatenate(scores_parts), np.concatenate(rows_parts)
        return rows[np.argpartition(-scores, keep - 1)[:keep]]

    def best_cosines(self, rows: np.ndarray, qvec: np.ndarray) -> dict[int, float]:
        """Each item's best cosine over ``rows`` (live rows, e.g. from `rows_of_items()`): what `rank()` gives it.

        Every item is wanted here, so there is no selection to make: for the few dozen rows of a hybrid
        search's keyword candidates, `rank()`'s selection cost more than the scoring.
        """
        if not len(rows):
            return {}
        q = np.asarray(qvec, dtype=np.float32)
        scores = (dot_rows(self.matrix[rows], q) / (float(np.linalg.norm(q)) or 1.0)).astype(np.float64).tolist()
        out: dict[int, float] = {}
        for item, score in zip(self.item_ids[rows].tolist(), scores, strict=True):
            if item not in out or score > out[item]:
                out[item] = score
        return out

    def rank(self, segments: Segments, qvec: np.ndarray, top: int, *, coarse: bool = False) -> list[tuple[int, float]]:
        """The best ``top`` items among ``segments`` as ``(item id, cosine)``, best first.

        An item scores its best row; dead rows are skipped; ties are broken by
        item id, as the planner's other paths do. ``coarse`` (for a large
        ``segments``): only the rows whose sketch scores best are scored
        exactly, so an item can be missed, as HNSW can miss one; never fewer
        than ``top`` items when ``segments`` holds that many.
        """
        if top <= 0 or not len(segments):
            return []
        q = np.asarray(qvec, dtype=np.float32)
        keep = max(_COARSE_KEEP, 64 * top)
        if coarse and len(segments) >= max(_COARSE_MIN, 2 * keep):
            rows = self._coarse(segments, q, keep)
            ranked = self.rank(Segments(rows=rows), q, top)
            if len(ranked) >= top:
                return ranked
            # Too few live, distinct items among them: score every row.
        qn = float(np.linalg.norm(q)) or 1.0
        scores_parts, rows_parts = [], []
        for a, b in segments.runs:
            scores_parts.append(dot_rows(self.matrix[a:b], q))
            rows_parts.append(np.arange(a, b))
        if len(segments.rows):
            scores_parts.append(dot_rows(self.matrix[segments.rows], q))
            rows_parts.append(segments.rows)
        scores = np.concatenate(scores_parts) / qn
        rows = np.concatenate(rows_parts)
        live = self.alive[rows]
        if not live.all():
            scores, rows = scores[live], rows[live]
        if not len(rows):
            return []
        ids = self.item_ids[rows]
        # Enough rows to hold ``top`` distinct items whatever the duplicates: take
        # the best ``top * 4`` rows first, all of them if distinct items fall short.
        want = min(len(rows), top * 4)
        while True:
            part = np.argpartition(-scores, want - 1)[:want] if want < len(rows) else np.arange(len(rows))
            order = part[np.lexsort((ids[part], -scores[part]))]
            _, first = np.unique(ids[order], return_index=True)
            if len(first) >= top or want >= len(rows):
                break
            want = min(len(rows), want * 4)
        best = order[np.sort(first)][:top]
        return list(zip(ids[best].tolist(), scores[best].astype(np.float64).tolist(), strict=True))


class VectorCache:
    """Every collection's vectors, loaded on first use and kept in step with the catalog.

    Safe to share between threads: the caller holds `lock` around
    `get()` and every use of the `CollectionVectors` it returns.

    Args:
        catalog: the data directory's catalog.
        budget_bytes: collections that would take the cache past this are
            not cached (their exact searches read the catalog).
    """

    def __init__(self, catalog: Catalog, *, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.catalog = catalog
        self.budget_bytes = int(budget_bytes)
        self.lock = threading.RLock()
        self._cols: dict[str, CollectionVectors] = {}
        self._versions: dict[str, _Version] = {}
        self._too_big: dict[str, int] = {}  # collection -> vectors it had when it did not fit

    def cached(self, collection: str) -> bool:
        """Whether ``collection`` is resident now (no load is started)."""
        return collection in self._cols

    def resident(self, collection: str) -> CollectionVectors | None:
        """The collection as last loaded or refreshed, without refreshing it (hold ``lock``)."""
        return self._cols.get(collection)

    def fits(self, collection: str, n_vectors: int, dims: int = 384) -> bool:
        """Whether ``collection`` is resident, or ``n_vectors`` more vectors would fit in the budget."""
        if collection in self._cols:
            return True
        if collection in self._too_big and n_vectors >= self._too_big[collection]:
            return False
        col = next(iter(self._cols.values()), None)
        width = (col.dims if col is not None else dims) * 4 + _ROW_OVERHEAD
        return n_vectors * width <= self._room(collection)

    def count(self, collection: str) -> int:
        """The live vectors of a resident collection (0 when it is not resident)."""
        col = self._cols.get(collection)
        return 0 if col is None else col.n_alive

    def nbytes(self) -> int:
        """The memory the resident collections take."""
        return sum(c.nbytes for c in self._cols.values())

    def drop(self, collection: str | None = None) -> None:
        """Forget one collection (or all); the next `get()` loads it again."""
        with self.lock:
            for name in [collection] if collection else list(self._cols):
                self._cols.pop(name, None)
                self._versions.pop(name, None)
                self._too_big.pop(name, None)

    def get(
        self, conn: Connection, collection: str, head: tuple[int, str | None] | None = None
    ) -> CollectionVectors | None:
        """The vectors of ``collection`` as the catalog holds them now, or None when they do not fit.

        Call with `lock` held, inside one read snapshot of the catalog; ``head``
        is `queue.log_head()` when it was read already in that snapshot.
        """
        version = _Version(*(_queue.log_head(conn) if head is None else head))
        col = self._cols.get(collection)
        if col is not None:
            seen = self._versions[collection]
            if seen.seq == version.seq and seen.epoch == version.epoch:
                return col
            if seen.epoch == version.epoch and seen.seq >= _queue.pruned_upto(conn, collection):
                if self._apply_changes(conn, collection, col, seen.seq):
                    self._versions[collection] = version
                    return col
            self._cols.pop(collection)
        col = self._load(conn, collection)
        if col is None:
            return None
        self._cols[collection] = col
        self._versions[collection] = version
        return col

    # ------------------------------------------------------------ loading

    def _room(self, collection: str) -> int:
        return self.budget_bytes - sum(c.nbytes for name, c in self._cols.items() if name != collection)

    def _load(self, conn: Connection, collection: str) -> CollectionVectors | None:
        n_vectors = _catalog_vectors.count_vectors(conn, collection)
        if not n_vectors:
            return None
        batches = _catalog_vectors.collection_vectors(conn, collection, batch=5000)
        rows = next(batches, None)
        if not rows:
            return None
        dims = len(rows[0][2]) // 4
        if n_vectors * (dims * 4 + _ROW_OVERHEAD) > self._room(collection):
            self._too_big[collection] = n_vectors
            logger.info("not caching the %d vectors of %s: over the vector cache's budget", n_vectors, collection)
            return None
        col = CollectionVectors(dims, capacity=int(n_vectors * 1.1) + 16)
        while rows:
            if not self._append_rows(col, rows, collection):
                return None
            rows = next(batches, None)
        col.sort(self._names(conn, col))
        self._too_big.pop(collection, None)
        logger.info(
            "loaded %d vectors of %s into memory for exact search (%.0f MB)", col.n, collection, col.nbytes / 1e6
        )
        return col

    @staticmethod
    def _names(conn: Connection, col: CollectionVectors) -> dict[int, str]:
        ids = sorted({int(i) for i in np.unique(col.ns_ids[: col.n])})
        return _item_rows.namespace_names(conn, ids)

    @staticmethod
    def _append_rows(col: CollectionVectors, rows: list[tuple[int, int, bytes]], collection: str) -> bool:
        width = col.dims * 4
        if any(len(r[2]) != width for r in rows):
            logger.warning(
                "vectors of %s differ in size from the catalog's %d dimensions; not cached", collection, col.dims
            )
            return False
        col.append(
            np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
            np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)),
            np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), col.dims),
        )
        return True

    def _apply_changes(self, conn: Connection, collection: str, col: CollectionVectors, after: int) -> bool:
        """Reload the items changed since ``after``; False when the collection must be loaded afresh."""
        changed = np.asarray(_queue.changed_since(conn, collection, after), dtype=np.int64)
        if not len(changed):
            return True
        col.kill_items(changed)
        for rows in _catalog_vectors.vectors_with_namespaces(conn, changed.tolist()):
            if rows and not self._append_rows(col, rows, collection):
                return False
        if col.needs_sort():
            col.sort(self._names(conn, col))
        return True
