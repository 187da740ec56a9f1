"""The write path of a put: validate, pick the texts to embed, check the vectors, commit, index.

`Writer` holds what a put needs to know about the store (the index
fields, the model and its dimensions) and turns validated puts plus their
vectors into one catalog transaction, then asks the Chroma index to apply
it. The commit is the acknowledgement: once it returns the put survives a
crash; Chroma catching up is a recorded, repeatable step
(`sync()`), so a Chroma failure
after the commit is logged and repaired later, never reported as a failed put.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from langgraph.store.base import PutOp, get_text_at_path, tokenize_path

from langgraph_memory._infra.closing import warn_briefly
from langgraph_memory.catalog import Catalog
from langgraph_memory.catalog import items as _items
from langgraph_memory.catalog import queue as _queue
from langgraph_memory.catalog import vectors as _catalog_vectors
from langgraph_memory.catalog.connection import Connection
from langgraph_memory.errors import EmbeddingModelError, InvalidArgumentError, ModelMismatchError, WriteConflictError
from langgraph_memory.index._catchup import IndexCatchUp
from langgraph_memory.index.chroma import ChromaIndex, IndexUnavailable
from langgraph_memory.registry import CollectionSpec
from langgraph_memory.store.records import text_path
from langgraph_memory.store.values import dumps_checked

__all__ = ["PreparedPut", "Writer", "index_paths", "dumps_value", "check_vectors"]

logger = logging.getLogger(__name__)


class LocksItself:
    """A ``before`` that takes the catalog's write lock itself, before it reads what other writers change.

    The put then reads its items first without the lock (checked again
    once it is taken), as a plain put does, so on a server the lock is held
    for fewer round trips. The callback must take the lock before any such
    read: the typed API's lineage registration does (`catalog.lineage.register`).

        store.items.put(ns, key, value, before=LocksItself(register))
    """

    def __init__(self, fn: Callable[[Connection], Mapping[int, dict[str, Any]] | None]) -> None:
        self.fn = fn

    def __call__(self, conn: Connection) -> Mapping[int, dict[str, Any]] | None:
        return self.fn(conn)


MODEL_KEY = "embedding_model"
DIMS_KEY = "embedding_dims"
#: set while a re-embedding runs (to the target model): a crash leaves it, and opening says so.
REINDEX_KEY = "reindex_to"


def dumps_value(value: dict[str, Any]) -> str:
    """A value as compact JSON, or `ValidationError` naming what would not round-trip (see `store.values`)."""
    return dumps_checked(value)


def index_paths(paths: Any) -> list[tuple[str, Any]]:
    """Each index path with its tokens (``"$"``, the whole value, stays as is).

    Raises:
        InvalidArgumentError: ``paths`` is not a list of strings (``index="text"`` is a common slip).
    """
    if isinstance(paths, str) or not isinstance(paths, (list, tuple)):
        raise InvalidArgumentError(f"index must be False or a list of field paths such as ['text'], got {paths!r}")
    out = []
    for p in paths:
        if not isinstance(p, str) or not p:
            raise InvalidArgumentError(f"index paths must be non-empty strings, got {p!r}")
        out.append((p, tokenize_path(p) if p != "$" else p))
    return out


@functools.lru_cache(maxsize=256)
def _path_tokens(path: str) -> list[str]:
    """`tokenize_path` of a collection's embedded field, parsed once (a bulk load's puts repeat it; not mutated)."""
    return tokenize_path(path)


def check_vectors(vectors: Sequence[Sequence[float]], dims: int | None, what: str) -> np.ndarray:
    """Vectors as a float32 matrix, or `EmbeddingModelError` for a wrong size, NaN or zero vector."""
    if not vectors:
        return np.zeros((0, dims or 0), dtype=np.float32)
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingModelError(
            f"the embedding model returned something that is not vectors for {what}: {exc}"
        ) from exc
    if matrix.ndim != 2:
        raise EmbeddingModelError(f"the embedding model returned vectors of unequal length for {what}")
    if dims is not None and matrix.shape[1] != dims:
        raise EmbeddingModelError(
            f"the embedding model returned {matrix.shape[1]}-dimensional vectors for {what} but index dims={dims}; "
            "fix index['dims'] or use the model the store was built with"
        )
    if not np.isfinite(matrix).all():
        raise EmbeddingModelError(f"the embedding model returned NaN or infinite values for {what}; check the model")
    if (np.abs(matrix).sum(axis=1) == 0).any():
        raise EmbeddingModelError(f"the embedding model returned an all-zero vector for {what}; it has no direction")
    return matrix


@dataclass
class PreparedPut:
    """A validated put or delete, with the texts to embed: ``(record path, text)``."""

    op: PutOp
    spec: CollectionSpec
    value_json: str | None
    texts: list[tuple[str, str]] = field(default_factory=list)


class Writer:
    """Turns prepared puts and their vectors into one catalog transaction and an index update.

    Args:
        catalog: where the truth goes.
        index: the Chroma index to bring up to date after the commit.
        fields: the store's default index paths (tokenized).
        model: the embedding model's id, or None for a store without one.
        dims: the model's vector size.
    """

    def __init__(
        self,
        catalog: Catalog,
        index: ChromaIndex,
        *,
        fields: list[tuple[str, Any]],
        model: str | None,
        dims: int | None,
    ) -> None:
        self.catalog = catalog
        self.index = index
        self.fields = fields
        self.model = model
        self.dims = dims
        self._model_id: int | None = None
        #: When set, the index catches up in its thread after a commit instead of in the writer's call.
        self.catch_up: IndexCatchUp | None = None

    def needs_reembedding(self) -> bool:
        """Whether stored vectors come from another model than this one (or a re-embedding was cut short).

        Raises:
            ModelMismatchError: with ``self.model`` None there is nothing to re-embed with.
        """
        if self.model is None:
            return False
        with self.catalog.read() as conn:
            have = self.catalog.get_meta(conn, MODEL_KEY)
            dims = self.catalog.get_meta(conn, DIMS_KEY)
            unfinished = self.catalog.get_meta(conn, REINDEX_KEY)
            if unfinished is not None:
                return True
            if have is None or (have == self.model and (dims is None or int(dims) == self.dims)):
                return False
            return _catalog_vectors.has_vectors(conn)

    def stored_model(self) -> tuple[str | None, int | None]:
        """``(model id, dims)`` of the stored vectors, as the catalog records them (None before the first)."""
        with self.catalog.read() as conn:
            model = self.catalog.get_meta(conn, MODEL_KEY)
            dims = self.catalog.get_meta(conn, DIMS_KEY)
        return model, int(dims) if dims is not None else None

    def check_model(self) -> None:
        """Refuse a model other than the one that made the stored vectors (same dims or not).

        Raises:
            ModelMismatchError: the catalog's vectors came from another model, or a
                re-embedding was cut short.
        """
        if not self.needs_reembedding():
            return
        with self.catalog.read() as conn:
            have = self.catalog.get_meta(conn, MODEL_KEY)
            dims = self.catalog.get_meta(conn, DIMS_KEY)
            unfinished = self.catalog.get_meta(conn, REINDEX_KEY)
        if unfinished is not None:
            raise ModelMismatchError(
                f"a re-embedding of {self.catalog.where} with {unfinished} was cut short; finish it: "
                "ChromaStore(data_dir=..., index=<that model>, reindex=True), or `langgraph-memory reindex`."
            )
        raise ModelMismatchError(
            f"the vectors in {self.catalog.where} were made by {have} ({dims} dimensions), but this store "
            f"embeds with {self.model} ({self.dims} dimensions): their scores would not compare. Open it with "
            "the same model, or re-embed everything with the new one: ChromaStore(data_dir=..., index=..., "
            "reindex=True), or `langgraph-memory reindex --model NAME`."
        )

    def texts_for(self, op: PutOp, spec: CollectionSpec) -> list[tuple[str, str]]:
        """The ``(record path, text)`` pairs a put embeds (none with ``index=False`` or no model)."""
        if self.model is None or op.index is False:
            return []
        if op.index is None:
            paths = [(spec.embed_field, _path_tokens(spec.embed_field))] if spec.embed_field else self.fields
        else:
            paths = index_paths(op.index)
        out: list[tuple[str, str]] = []
        for path, tokens in paths:
            texts = get_text_at_path(op.value, tokens)
            if len(texts) > 1:
                out.extend((text_path(path, i), t) for i, t in enumerate(texts))
            elif texts:
                out.append((path, texts[0]))
        return out

    def model_id(self, conn: Connection) -> int:
        """The catalog's id of this store's model (registered, with the catalog's model, on first use)."""
        if self._model_id is None:
            assert self.model is not None and self.dims is not None
            self._model_id = _queue.model_id(conn, self.model, self.dims)
            if self.catalog.get_meta(conn, MODEL_KEY) is None:
                self.catalog.set_meta(conn, MODEL_KEY, self.model)
                self.catalog.set_meta(conn, DIMS_KEY, str(self.dims))
        return self._model_id

    def write(
        self,
        puts: list[PreparedPut],
        vectors: Sequence[Sequence[float]],
        *,
        now: float,
        before: Callable[[Connection], Mapping[int, dict[str, Any]] | None] | None = None,
    ) -> list[int | None]:
        """Commit ``puts`` (vectors in the order of their texts), then bring Chroma up to date.

        ``before`` runs first inside the same transaction (the typed API
        registers lineage and allocates a version there); it may return new
        values for some puts, by position (their embedded text must not
        change: the vectors were made before). Returns each put's item id
        (None for a delete).
        """
        matrix = check_vectors(vectors, self.dims, f"{len(puts)} puts")
        pos = 0
        writes: list[_items.ItemWrite] = []
        for p in puts:
            vecs = [(path, matrix[pos + i].tobytes()) for i, (path, _t) in enumerate(p.texts)]
            pos += len(p.texts)
            ttl = p.op.ttl if p.value_json is not None else None
            writes.append(
                _items.ItemWrite(
                    p.op.namespace,
                    p.op.key,
                    p.spec.name,
                    p.value_json,
                    ttl_minutes=float(ttl) if ttl else None,
                    vectors=vecs,
                    value=dict(p.op.value) if p.op.value is not None else None,
                    texts=[t for _path, t in p.texts],
                )
            )
        # A plain put reads the items it replaces before it takes the catalog's write lock, and takes the lock
        # only with its changes (a lock held across round trips serialized every machine's writes); should
        # another machine change those items in between, it runs again holding the lock from the start.
        late = (before is None or isinstance(before, LocksItself)) and (
            self._model_id is not None or not any(w.vectors for w in writes)
        )
        with self.catch_up.writing(len(puts)) if self.catch_up is not None else contextlib.nullcontext():
            try:
                ids = self._commit(writes, puts, before, now=now, late=late)
            except WriteConflictError:
                if not late:
                    raise
                # Another machine wrote first: this write comes after it, and so must its instant (the versions
                # it ends began at the other's).
                ids = self._commit(writes, puts, before, now=max(now, time.time()), late=False)
        if self.catch_up is not None:
            self.catch_up.request({p.spec.name for p in puts}, len(puts))
        else:
            self.sync({p.spec.name for p in puts})
        return ids

    def _commit(
        self,
        writes: list[_items.ItemWrite],
        puts: list[PreparedPut],
        before: Callable[[Connection], Mapping[int, dict[str, Any]] | None] | None,
        *,
        now: float,
        late: bool,
    ) -> list[int | None]:
        with self.catalog.write(late=late) as conn:
            # Read ahead of ``before``, which takes the lock once it needs it (LocksItself).
            looked_up = _items.look_up(conn, writes, self.catalog.names) if before is not None and late else None
            if before is not None:
                for i, value in (before(conn) or {}).items():
                    puts[i].spec.validate(value)
                    writes[i].value_json = dumps_value(value)
                    writes[i].value = value
                    writes[i].texts = None  # the keyword index reads the new value's texts itself
            if any(w.vectors for w in writes):
                mid = self.model_id(conn)
                for w in writes:
                    w.model_id = mid
            return _items.write_items(conn, writes, self.catalog.names, now=now, looked_up=looked_up)

    def sync(self, collections: set[str] | None = None) -> None:
        """Apply queued changes to Chroma after a commit; a failure is logged, never raised.

        The commit already acknowledged the write: reporting it failed now
        would be false. The changes stay queued (the next write, close or
        open applies them) and searches score queued items exactly meanwhile.
        """
        try:
            self.index.sync(sorted(collections) if collections else None)
        except IndexUnavailable:
            pass  # logged by the index; searches of that collection run exactly until it is rebuilt
        except Exception as exc:  # noqa: BLE001 - e.g. a lock timeout, a full disk, the catalog's server away
            warn_briefly(logger, "could not apply committed changes to the Chroma index yet; they stay queued", exc)
