"""Re-embedding: every stored vector made again by another model, then the index rebuilt.

Vectors made by two models do not compare, so a store refuses to open with
a model other than the one the catalog records
([`ModelMismatchError`][langgraph_memory.errors.ModelMismatchError]). `reembed()`
replaces each vector by the new model's vector of the same text (read back
from the item's value at the vector's record path), a batch per transaction,
then records the new model. It is resumable: the catalog marks the run as
under way, each vector row records its model, and a run cut short by a crash
continues where it stopped the next time it is asked for (a store refuses
to open until then).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from langgraph_memory.catalog import Catalog
from langgraph_memory.catalog import queue as _queue
from langgraph_memory.catalog import vectors as _vectors
from langgraph_memory.store._writer import DIMS_KEY, MODEL_KEY, REINDEX_KEY, check_vectors
from langgraph_memory.store.records import record_text

__all__ = ["reembed"]

logger = logging.getLogger(__name__)

_BATCH = 256

Progress = Callable[[int, int], None]


def reembed(
    catalog: Catalog,
    embed: Callable[[list[str]], list[list[float]]],
    *,
    model: str,
    dims: int,
    everything: bool = False,
    progress: bool | Progress = True,
) -> int:
    """Re-embed the vectors of ``catalog`` not made by ``model`` (all of them with ``everything``).

    Returns how many were re-embedded. The caller rebuilds the Chroma index
    afterwards (the dimensions may have changed).
    """
    with catalog.write() as conn:
        catalog.set_meta(conn, REINDEX_KEY, model)
        new_id = _queue.model_id(conn, model, dims)
        if everything:
            _vectors.forget_model(conn, new_id)
        total = _vectors.count_not_made_by(conn, new_id)
    done = 0
    logger.info("re-embedding %d vectors with %s", total, model)
    with _bar(progress, total) as tick:
        # A vector written meanwhile takes the next id of its namespace's run, maybe behind the pass's
        # position: a pass that found any starts another, until one finds nothing left.
        after = found = 0
        while True:
            with catalog.read() as conn:
                rows = _vectors.texts_not_made_by(conn, new_id, after, _BATCH)
            if not rows:
                if not found:
                    break
                after = found = 0
                continue
            after = rows[-1][0]
            texts = [record_text(json.loads(value), path) or "" for _vid, path, value in rows]
            matrix = check_vectors(embed(texts), dims, f"{len(texts)} texts being re-embedded")
            with catalog.write() as conn:
                _queue.bump_vectors_epoch(conn)
                _vectors.set_vectors(conn, new_id, [(rows[k][0], matrix[k]) for k in range(len(rows))])
            found += len(rows)
            done += len(rows)
            tick(len(rows))
    with catalog.write() as conn:
        catalog.set_meta(conn, MODEL_KEY, model)
        catalog.set_meta(conn, DIMS_KEY, str(dims))
        catalog.set_meta(conn, REINDEX_KEY, None)
    logger.info("re-embedded %d vectors with %s", done, model)
    return done


@contextmanager
def _bar(progress: bool | Progress, total: int) -> Iterator[Callable[[int], None]]:
    if callable(progress):
        count = 0

        def tick(n: int) -> None:
            nonlocal count
            count += n
            progress(count, total)

        yield tick
        return
    if not progress or not sys.stderr.isatty() or total == 0:
        yield lambda _n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
    from rich.progress import Progress as Bar

    with Bar(
        TextColumn("re-embedding"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    ) as bar:
        task = bar.add_task("vectors", total=total)
        yield lambda n: bar.update(task, advance=n)
