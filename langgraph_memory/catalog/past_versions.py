"""The history's past versions as arrays in memory: what a search as of any moment scans.

`catalog.history` keeps every past version in ``item_history``; reading the
versions valid at a moment from it for each search (or each new view) was
most of a search as of long ago. `PastVersions` reads the history once into
arrays (`Versions`) and then only the rows added since (history rows are
only ever added, with increasing ids, until a prune); a moment is a mask over
them (`Versions.at()`), made in a few vectorised operations.

    >>> import tempfile, pathlib
    >>> from langgraph_memory.catalog import Catalog
    >>> from langgraph_memory.catalog.items import ItemWrite, NamespaceIds, write_items
    >>> cat = Catalog(pathlib.Path(tempfile.mkdtemp()) / "catalog.sqlite")
    >>> names = NamespaceIds()
    >>> for at, text in ((1.0, "first"), (2.0, "second")):
    ...     with cat.write() as conn:
    ...         _ = write_items(conn, [ItemWrite(("notes",), "k", "memories", '{"t": "%s"}' % text)], names, now=at)
    >>> past = PastVersions()
    >>> with cat.snapshot() as conn:
    ...     versions = past.current(conn)
    >>> len(versions.at(1.5).pos), len(versions.at(2.0).pos)
    (1, 0)
"""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from langgraph_memory.catalog.connection import both
from langgraph_memory.catalog.history import PRUNED_KEY
from langgraph_memory.catalog.keyword_cache import STAMP_SQL

_T = TypeVar("_T")

__all__ = [
    "PastVersions",
    "Versions",
    "Moment",
    "Partition",
    "IdSet",
    "KeywordLengths",
    "keyword_lengths",
    "keyword_stamp",
    "moment_stamp",
    "stamp_and_items",
]

# The history changes only by rows added (a higher id: ids only grow, and writers are serialised, so they commit
# in id order) and by `prune()`, which marks ``meta``: two lookups tell whether the arrays are current.
_STAMP = f"SELECT (SELECT max(id) FROM item_history), (SELECT value FROM meta WHERE key = '{PRUNED_KEY}')"
_SCAN = (
    "SELECT id, item_id, valid_from, valid_to, updated_at, expires_at, status IS NULL, ns, n_vectors, vec"
    " FROM item_history WHERE id > ? AND id <= ? ORDER BY id"
)
_SCAN_VECTORS = (
    "SELECT v.history_id, v.vec FROM history_vectors v JOIN item_history h ON h.id = v.history_id"
    " WHERE h.id > ? AND h.id <= ? AND h.n_vectors > 1 ORDER BY v.history_id, v.idx"
)


# The stamp and the number of items now, which a search as of a moment plans with (the share unchanged since):
# one statement, so on a server one round trip.
_STAMP_AND_ITEMS = f"{_STAMP}, (SELECT coalesce(sum(n_items), 0) FROM collection_counts)"


def moment_stamp(conn: sqlite3.Connection) -> tuple[Any, ...]:
    """What changes whenever the history changes: its last id and the mark of its last prune."""
    return tuple(conn.execute(both(conn, _STAMP)).fetchone())


def stamp_and_items(conn: sqlite3.Connection) -> tuple[tuple[Any, ...], int]:
    """`moment_stamp()`, and how many items the catalog holds now (`item_rows.count_items()`), in one read."""
    last, pruned, n_items = conn.execute(both(conn, _STAMP_AND_ITEMS)).fetchone()
    return (last, pruned), int(n_items)


@dataclass(frozen=True)
class Versions:
    """Every past version's scan data, as arrays in history id order (what a search as of any moment scans).

    Replaced whole, never changed in place, so a search keeps reading the arrays it started with.
    """

    #: history ids (increasing), item ids, ``valid_from``, ``valid_to``, ``updated_at``, ``expires_at`` (NaN:
    #: none), whether each had no status (neither retired nor superseded), its namespace's position in `names`.
    ids: np.ndarray
    item_ids: np.ndarray
    valid_from: np.ndarray
    valid_to: np.ndarray
    updated: np.ndarray
    expires: np.ndarray
    live: np.ndarray
    ns: np.ndarray
    #: the namespaces, as stored (labels joined by ``\x1f``).
    names: tuple[str, ...]
    #: every vector (float32 rows, normalised as the search's in-memory vectors are: a cosine is one dot product;
    #: a zero vector stays zero) and the position of the version owning it.
    vectors: np.ndarray
    owner: np.ndarray
    #: a new value whenever the arrays are reloaded from the start (a prune): positions change meaning.
    epoch: int = 0
    #: the vectors' partition (`Partition`), once there are `PARTITION_MIN` of them: what lets a search as of a
    #: moment score a share of a large scope's vectors instead of all of them.
    partition: Partition | None = None

    def at(self, at: float) -> Moment:
        """The versions valid at ``at`` (``valid_from <= at < valid_to``)."""
        valid = (self.valid_from <= at) & (at < self.valid_to)
        pos = np.flatnonzero(valid)
        index = np.cumsum(valid) - 1
        vmask = valid[self.owner]
        owner = index[self.owner[vmask]]
        later = self.item_ids[self.valid_to > at]
        one_each = not bool(np.any(np.diff(owner) == 0))  # owners never decrease (`_extend`)
        rows = np.flatnonzero(vmask)
        bounds = None
        if self.partition is not None and self.partition.share < 1.0:  # grouped by cluster: a cluster is a slice
            cluster = self.partition.cluster[rows]
            by_cluster = np.argsort(cluster, kind="stable")
            rows, owner = rows[by_cluster], owner[by_cluster]
            bounds = np.searchsorted(cluster[by_cluster], np.arange(len(self.partition.centroids) + 1))
        vector_of = np.full(len(pos), -1, dtype=np.int64)
        if one_each:
            vector_of[owner] = np.arange(len(owner))
        return Moment(
            versions=self,
            pos=pos,
            ids=self.ids[pos],
            item_ids=self.item_ids[pos],
            updated=self.updated[pos],
            expires=self.expires[pos],
            live=self.live[pos],
            vectors=self.vectors[rows],
            owner=owner,
            one_each=one_each,
            vector_of=vector_of,
            changed=IdSet(later),
            bounds=bounds,
        )

    def nbytes(self) -> int:
        """The memory the arrays take."""
        return sum(
            int(getattr(self, f.name).nbytes)
            for f in dataclasses.fields(self)
            if f.name not in ("names", "epoch", "partition")
        ) + (self.partition.cluster.nbytes + self.partition.centroids.nbytes if self.partition else 0)


class IdSet:
    """A set of item ids as a mask by id: a membership test without making a Python set of thousands."""

    def __init__(self, ids: np.ndarray) -> None:
        self._mask = np.zeros(int(ids.max()) + 1 if len(ids) else 0, dtype=bool)
        self._mask[ids] = True
        self._n = int(np.count_nonzero(self._mask))

    def __contains__(self, item_id: object) -> bool:
        return bool(isinstance(item_id, (int, np.integer)) and 0 <= item_id < len(self._mask) and self._mask[item_id])

    def __len__(self) -> int:
        return self._n

    def among(self, ids: np.ndarray) -> np.ndarray:
        """A mask over ``ids``: which are in the set (one vectorised lookup, for the hundreds an HNSW round finds).

        >>> IdSet(np.array([3, 5])).among(np.array([5, 4, 9, -1, 3])).tolist()
        [True, False, False, False, True]
        """
        ids = np.asarray(ids, dtype=np.int64)
        inside = (ids >= 0) & (ids < len(self._mask))
        out = np.zeros(len(ids), dtype=bool)
        out[inside] = self._mask[ids[inside]]
        return out


@dataclass(frozen=True)
class Moment:
    """The past versions valid at one moment (positions in `versions`) and the items a later change ended."""

    versions: Versions
    #: positions of the versions valid then (increasing).
    pos: np.ndarray
    #: their history ids, item ids, ``updated_at``, ``expires_at`` (NaN: none), and whether each had no status.
    ids: np.ndarray
    item_ids: np.ndarray
    updated: np.ndarray
    expires: np.ndarray
    live: np.ndarray
    #: their vectors (normalised) and owners (positions in `pos`); whether every version has one vector at most.
    #: With a partition the vectors are grouped by cluster, else in the order of their versions.
    vectors: np.ndarray
    owner: np.ndarray
    one_each: bool
    #: with one vector each at most: each version's vector (its row in `vectors`; -1: none).
    vector_of: np.ndarray
    #: the items (rows of ``items``) whose version current at the moment a later change ended.
    changed: IdSet
    #: with a partition: cluster ``c``'s vectors are ``vectors[bounds[c]:bounds[c + 1]]``.
    bounds: np.ndarray | None = None
    #: what searches as of the moment derive from it alone (a scope's positions, texts' masks), kept for the next:
    #: the moment's versions never change, so neither does what is derived from them.
    cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def keep(self, key: Any, value: _T) -> _T:
        """``value``, kept in `cache` under ``key`` while it holds fewer than `MOMENT_CACHE_MAX` entries (a
        long-lived store may be asked of any number of scopes and query terms)."""
        if len(self.cache) < MOMENT_CACHE_MAX:
            self.cache[key] = value
        return value

    def in_prefix(self, prefix: Sequence[str]) -> np.ndarray:
        """A mask over `pos`: the versions under ``prefix``."""
        if not prefix:
            return np.ones(len(self.pos), dtype=bool)
        joined = "\x1f".join(prefix)
        under = np.array(
            [n == joined or n.startswith(joined + "\x1f") for n in self.versions.names] or [False], dtype=bool
        )
        return under[self.versions.ns[self.pos]]

    def unscored(self) -> np.ndarray:
        """Over `pos`: -inf for the versions with vectors, NaN for the others (what a search as of the moment
        starts its cosines from; kept for its next search)."""
        got: np.ndarray | None = self.cache.get("unscored")
        if got is None:
            got = np.full(len(self.pos), np.nan)
            got[self.owner] = -np.inf
            got = self.keep("unscored", got)
        return got

    def probe(self, q: np.ndarray) -> list[tuple[int, int]]:
        """The slices of `vectors` in the clusters whose centres lie nearest ``q`` (normalised), nearest first,
        until they hold the partition's `share` of the vectors (all of them without a partition)."""
        part = self.versions.partition
        if part is None or self.bounds is None or part.share >= 1.0:
            return [(0, len(self.vectors))]
        sizes = np.diff(self.bounds)
        order = np.argsort(-(part.centroids @ q), kind="stable")
        chosen = order[: _holding(sizes[order], part.share * len(self.vectors))]
        return [(int(self.bounds[c]), int(self.bounds[c + 1])) for c in chosen if sizes[c]]


@dataclass(frozen=True, eq=False)
class Partition:
    """The past versions' vectors split into clusters (spherical k-means over a sample): each vector's cluster,
    the clusters' centres (normalised rows), and the share of the vectors a search scores (`Moment.probe()`).

    Made once there are `PARTITION_MIN` vectors and made again from the start each time their number doubles;
    vectors added in between join their nearest centre. When embeddings group by topic, as a model's do, the
    clusters nearest a query hold its nearest vectors; on vectors without such structure (random ones) they do
    not. So the share is measured when the partition is made: the smallest of `PROBE_SHARES` whose clusters held
    `PROBE_RECALL` of the 10 nearest neighbours of a sample of the vectors, or all of them (1.0) when none did.
    """

    centroids: np.ndarray
    cluster: np.ndarray
    made_of: int
    #: the share of the vectors a search scores (1.0: all of them), and the recall measured at it.
    share: float
    recall: float

    @classmethod
    def of(cls, vectors: np.ndarray) -> Partition:
        """``vectors`` (normalised rows) partitioned into about ``sqrt(n) / 8`` clusters (16 to 64: a search
        scores a slice per cluster it probes, each a NumPy call)."""
        n = len(vectors)
        k = int(np.clip(np.sqrt(n) / 8, 16, 64))
        rng = np.random.default_rng(0)  # the same vectors always split the same way: a search repeats its answer
        sample = vectors[np.sort(rng.choice(n, min(n, 64 * k), replace=False))]
        centroids = sample[rng.choice(len(sample), k, replace=False)].copy()
        for _ in range(_KMEANS_ROUNDS):
            label = np.argmax(sample @ centroids.T, axis=1)
            order = np.argsort(label, kind="stable")
            counts = np.bincount(label, minlength=k)
            full = np.flatnonzero(counts)
            sums = np.zeros_like(centroids)
            sums[full] = np.add.reduceat(sample[order], (np.cumsum(counts) - counts)[full], axis=0)
            norms = np.linalg.norm(sums, axis=1)
            keep = norms > 0  # an empty cluster keeps its centre
            centroids[keep] = sums[keep] / norms[keep, None]
        cluster = _nearest(vectors, centroids)
        return cls(centroids, cluster, n, *_measure_share(vectors, cluster, centroids, rng))

    def extended(self, vectors: np.ndarray, new: np.ndarray) -> Partition:
        """This partition of ``vectors`` (the old ones followed by ``new``): new vectors join their nearest centre,
        or all are partitioned again once they are twice as many as when it was made."""
        if len(vectors) >= 2 * self.made_of:
            return Partition.of(vectors)
        return dataclasses.replace(self, cluster=np.concatenate([self.cluster, _nearest(new, self.centroids)]))


def _measure_share(
    vectors: np.ndarray, cluster: np.ndarray, centroids: np.ndarray, rng: np.random.Generator
) -> tuple[float, float]:
    """The smallest of `PROBE_SHARES` at which the nearest clusters held `PROBE_RECALL` of the 10 nearest other
    vectors of 64 vectors, within a sample of 20,000 (shares of a sample probe as they do the whole), and the
    recall measured at it; ``(1.0, 1.0)`` when none did."""
    rows = np.sort(rng.choice(len(vectors), min(len(vectors), 20_000), replace=False))
    sample, label = vectors[rows], cluster[rows]
    asked = rng.choice(len(sample), min(len(sample), 64), replace=False)
    sims = sample[asked] @ sample.T
    sims[np.arange(len(asked)), asked] = -np.inf  # each asks for its neighbours, not itself
    exact = np.argpartition(-sims, 10, axis=1)[:, :10]
    sizes = np.bincount(label, minlength=len(centroids))
    nearest_first = np.argsort(-(sample[asked] @ centroids.T), axis=1, kind="stable")
    for share in PROBE_SHARES:
        found = 0
        for i, order in enumerate(nearest_first):
            chosen = order[: _holding(sizes[order], share * len(sample))]
            found += int(np.count_nonzero(np.isin(label[exact[i]], chosen)))
        recall = found / exact.size
        if recall >= PROBE_RECALL:
            return share, recall
    return 1.0, 1.0


def _holding(sizes: np.ndarray, wanted: float) -> int:
    """How many of the clusters of ``sizes`` (nearest first) a search probes: the first that hold ``wanted``."""
    return int(np.searchsorted(np.cumsum(sizes), wanted)) + 1


def _nearest(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Each vector's nearest centre, a block of rows at a time (a block's products stay a few MB)."""
    out = np.empty(len(vectors), dtype=np.int32)
    for start in range(0, len(vectors), 8192):
        out[start : start + 8192] = np.argmax(vectors[start : start + 8192] @ centroids.T, axis=1)
    return out


#: Vectors past which the past versions' vectors are partitioned (`Partition`): below, scoring them all costs
#: about a millisecond (at 64 dimensions; 4 at 384).
PARTITION_MIN = 20_000
#: The shares of the vectors a search may score (`Partition.share`), and the recall of the 10 nearest that the
#: share taken must reach on the partition's own vectors.
PROBE_SHARES = (1 / 32, 1 / 16, 1 / 8, 1 / 4)
PROBE_RECALL = 0.98
_KMEANS_ROUNDS = 8

_NO_VECTORS = np.zeros((0, 0), dtype=np.float32)
#: Entries a moment keeps per scope or query term (`Moment.keep`): each a byte or 8 per version valid then.
MOMENT_CACHE_MAX = 256
#: Moments kept per store (`PastVersions.moment()`): each holds a copy of its versions' vectors.
MOMENTS_KEPT = 4


class PastVersions:
    """The history's `Versions` of one catalog, read once and then only the rows added since (all again after a prune).

    A search as of a moment takes `current()` and masks it (`Versions.at()`):
    no moment reads the catalog's history again. The arrays hold about
    60 bytes per version beside its vectors (4 bytes per dimension).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stamp: tuple[Any, ...] | None = None
        self._versions: Versions | None = None
        # The last moments made (`moment()`), oldest first, for the arrays they were made of.
        self._moments: OrderedDict[float, Moment] = OrderedDict()
        self._moments_of: Versions | None = None
        self._moments_lock = threading.Lock()

    def current(self, conn: sqlite3.Connection, stamp: tuple[Any, ...] | None = None) -> Versions:
        """The arrays as of the history ``conn`` reads (read in a snapshot: the stamp and the rows agree);
        ``stamp``: its `moment_stamp()`, when the caller read it already."""
        stamp = moment_stamp(conn) if stamp is None else stamp
        held = self._versions
        if held is not None and stamp == self._stamp:
            return held
        with self._lock:
            held = self._versions
            if held is None or self._stamp is None or stamp[1] != self._stamp[1] or (stamp[0] or 0) < self._stamp[0]:
                held = _empty(0 if held is None else held.epoch + 1)
                last = 0
            else:
                last = int(self._stamp[0] or 0)
            top = int(stamp[0] or 0)
            if top > last:
                held = _extend(held, conn, last, top)
            self._versions, self._stamp = held, (top, stamp[1])
        return held

    def moment(self, versions: Versions, at: float) -> Moment:
        """``versions.at(at)``, shared by every caller asking for the same moment of the same arrays.

        A reader may make a view per read at one moment (`recall_node` as of a checkpoint does): its views then
        share one mask, and what searches cache on it, instead of each making its own. The last
        `MOMENTS_KEPT` moments are kept.
        """
        with self._moments_lock:
            if self._moments_of is not versions:  # the history changed: what was kept masks older arrays
                self._moments.clear()
                self._moments_of = versions
            got = self._moments.get(at)
            if got is None:
                got = self._moments[at] = versions.at(at)
                if len(self._moments) > MOMENTS_KEPT:
                    self._moments.popitem(last=False)
            self._moments.move_to_end(at)
            return got


def _empty(epoch: int) -> Versions:
    ints, floats = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    return Versions(
        ints, ints, floats, floats, floats, floats, np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int32), (),
        _NO_VECTORS, ints, epoch,
    )  # fmt: skip


def _extend(old: Versions, conn: sqlite3.Connection, after: int, upto: int) -> Versions:
    """``old`` with the history rows of ids ``after < id <= upto`` appended."""
    rows = conn.execute(both(conn, _SCAN), (after, upto)).fetchall()
    n = len(rows)
    names = list(old.names)
    code = {name: k for k, name in enumerate(names)}
    ns = np.empty(n, dtype=np.int32)
    for k, r in enumerate(rows):
        c = code.get(r[7])
        if c is None:
            c = code[r[7]] = len(names)
            names.append(r[7])
        ns[k] = c
    base = len(old.ids)
    blobs = [bytes(r[9]) for r in rows if r[8] == 1 and r[9] is not None]
    owner = [base + k for k, r in enumerate(rows) if r[8] == 1 and r[9] is not None]
    if any(r[8] > 1 for r in rows):
        pos = {int(r[0]): base + k for k, r in enumerate(rows)}
        for hid, vec in conn.execute(both(conn, _SCAN_VECTORS), (after, upto)):
            blobs.append(bytes(vec))
            owner.append(pos[int(hid)])
    new_owner = np.asarray(owner, dtype=np.int64)
    if blobs:
        vecs = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
        order = np.argsort(new_owner, kind="stable")  # vectors grouped by version, as the versions are ordered
        vecs, new_owner = vecs[order], new_owner[order]
        norms = np.linalg.norm(vecs, axis=1)
        norms[norms == 0] = 1.0
        vecs = vecs / norms[:, None]
        vectors = np.concatenate([old.vectors, vecs]) if len(old.vectors) else vecs
    else:
        vecs, vectors = old.vectors[:0], old.vectors
    partition = old.partition
    if partition is not None:
        partition = partition.extended(vectors, vecs)
    elif len(vectors) >= PARTITION_MIN:
        partition = Partition.of(vectors)

    def col(k: int, dtype: Any, fill: float | None = None) -> np.ndarray:
        got = np.fromiter((fill if r[k] is None else r[k] for r in rows), dtype=dtype, count=n)
        return np.concatenate([getattr(old, _FIELDS[k]), got])

    return Versions(
        ids=col(0, np.int64),
        item_ids=col(1, np.int64),
        valid_from=col(2, np.float64),
        valid_to=col(3, np.float64),
        updated=col(4, np.float64),
        expires=col(5, np.float64, np.nan),
        live=col(6, bool),
        ns=np.concatenate([old.ns, ns]),
        names=tuple(names),
        vectors=vectors,
        owner=np.concatenate([old.owner, new_owner]),
        epoch=old.epoch,
        partition=partition,
    )


# The `Versions` field each column of `_SCAN` fills.
_FIELDS = {0: "ids", 1: "item_ids", 2: "valid_from", 3: "valid_to", 4: "updated", 5: "expires", 6: "live"}


_KEYWORD_TOTALS = "SELECT docs, tokens FROM keyword_stats WHERE id = 1"
_KEYWORD_LENGTHS = (
    "SELECT l.item_id, l.n_tokens, coalesce(i.valid_from, i.updated_at) FROM keyword_lengths l"
    " JOIN items i ON i.id = l.item_id"
)


@dataclass(frozen=True)
class KeywordLengths:
    """The keyword index now: its totals, and each indexed item's id, length in words and since when it is current
    (what a search as of any moment takes the items indexed after it out of)."""

    stamp: tuple[Any, ...]
    docs: int
    tokens: int
    item_ids: np.ndarray
    n_tokens: np.ndarray
    since: np.ndarray


def keyword_lengths(conn: sqlite3.Connection) -> KeywordLengths:
    """`KeywordLengths` of the index ``conn`` reads (call in a snapshot: the stamp, totals and rows agree)."""
    stamp = keyword_stamp(conn)
    docs, tokens = conn.execute(both(conn, _KEYWORD_TOTALS)).fetchone()
    rows = conn.execute(both(conn, _KEYWORD_LENGTHS)).fetchall()
    n = len(rows)
    return KeywordLengths(
        stamp,
        int(docs),
        int(tokens),
        np.fromiter((r[0] for r in rows), dtype=np.int64, count=n),
        np.fromiter((r[1] for r in rows), dtype=np.int64, count=n),
        np.fromiter((r[2] for r in rows), dtype=np.float64, count=n),
    )


def keyword_stamp(conn: sqlite3.Connection) -> tuple[Any, ...]:
    """What changes whenever the keyword index changes."""
    return tuple(conn.execute(STAMP_SQL.of(conn)).fetchone())
