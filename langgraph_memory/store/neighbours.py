"""Relative hybrid ranking: z-score fusion over the candidates, and neighbour propagation along a thread.

Two options of [`HybridRanking`][langgraph_memory.HybridRanking] that rank
by a candidate's standing among the others rather than on an absolute scale:

* ``fusion="zscore"``: each side (cosine, BM25) is turned into z-scores
  over the candidate set, and the relevance is ``z_cosine + zscore_weight *
  z_keyword`` (shifted to be positive);
* ``neighbours=r``: items whose key reads ``"<thread>:<position>"`` (what
  session memory stores: `langgraph_memory.sessions`) are a thread, and a
  candidate's relevance is raised by ``neighbour_weight`` times the best
  relevance among the items up to ``r`` positions from it in the same
  namespace and thread. The neighbours of the candidates are read and scored
  too, so a turn whose answer sits in the turn before it can be found: a
  window is retrieved at query time instead of being stored at write time.

Measured on LoCoMo by leave-one-conversation-out (``bench/results/RESULTS_locomo.md``):
with both, recall@10 over plain stored turns goes from 0.675 to 0.754.

Under z-score fusion the relevance is divided by the best candidate's, so it
is in [0, 1] but relative: the best candidate always scores 1 before temporal
weighting, and a ``min_relevance`` threshold means little. With noisy-or
fusion and neighbours the raised relevance is divided by ``1 +
neighbour_weight`` (an absolute scale, but lower than without neighbours).

    >>> thread_position("session-7:12"), thread_position("note")
    (('session-7', 12), None)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from langgraph_memory.catalog import StoredItem

__all__ = ["thread_position", "neighbour_keys", "relative_relevance"]


def thread_position(key: str) -> tuple[str, int] | None:
    """``(thread, position)`` of a key ``"<thread>:<position>"`` (None when it has no such form)."""
    thread, sep, pos = key.rpartition(":")
    if not sep or not thread or not pos.isdigit():
        return None
    return thread, int(pos)


def neighbour_keys(items: Iterable[StoredItem], radius: int) -> list[tuple[tuple[str, ...], str]]:
    """The ``(namespace, key)`` of every item up to ``radius`` positions from one of ``items`` in its thread,
    except ``items`` themselves.

    Example:
        >>> it = StoredItem(("s",), "t:5", {}, 0.0, 0.0, 0.0, id=1)
        >>> neighbour_keys([it], 1)
        [(('s',), 't:4'), (('s',), 't:6')]
    """
    have = {(it.namespace, it.key) for it in items}
    out: dict[tuple[tuple[str, ...], str], None] = {}
    for it in items:
        tp = thread_position(it.key)
        if tp is None:
            continue
        thread, pos = tp
        for d in range(1, radius + 1):
            for p in (pos - d, pos + d):
                key = (it.namespace, f"{thread}:{p}")
                if p >= 0 and key not in have:
                    out[key] = None
    return list(out)


def _mean_std(xs: Sequence[float]) -> tuple[float, float]:
    """Mean and population standard deviation (1.0 when all are equal: z-scores of 0)."""
    mean = sum(xs) / len(xs)
    return mean, math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs)) or 1.0


def relative_relevance(
    items: Sequence[StoredItem],
    similarity: Sequence[float],
    keyword: Sequence[float],
    fused: Sequence[float],
    joined: Sequence[bool],
    *,
    fusion: str,
    zscore_weight: float,
    neighbours: int,
    neighbour_weight: float,
) -> list[float]:
    """Each candidate's relevance in [0, 1] under z-score fusion and/or neighbour propagation.

    ``keyword`` is the raw BM25 score, ``fused`` the absolute fusion's relevance
    (used when ``fusion`` is not ``"zscore"``); ``joined`` marks candidates read
    only as neighbours of others (they do not count in the z-scores' statistics).

    Example:
        >>> its = [StoredItem(("s",), f"t:{i}", {}, 0.0, 0.0, 0.0, id=i) for i in (1, 2)]
        >>> rel = relative_relevance(its, [0.9, 0.1], [0.0, 0.0], [0.9, 0.1], [False, False],
        ...                          fusion="noisy-or", zscore_weight=1.5, neighbours=1, neighbour_weight=0.5)
        >>> [round(r, 2) for r in rel]  # (0.9 + 0.5 * 0.1) / 1.5, (0.1 + 0.5 * 0.9) / 1.5
        [0.63, 0.37]
    """
    n = len(items)
    if not n:
        return []
    if fusion == "zscore":
        own = [i for i in range(n) if not joined[i]] or list(range(n))
        # Every candidate's z (joined neighbours too) against the statistics of the searched candidates only.
        mean_s, sd_s = _mean_std([similarity[i] for i in own])
        mean_k, sd_k = _mean_std([keyword[i] for i in own])
        raw = [(similarity[i] - mean_s) / sd_s + zscore_weight * (keyword[i] - mean_k) / sd_k for i in range(n)]
        floor = min(raw[i] for i in own)
        score = [r - floor + 1e-3 for r in raw]
    else:
        score = list(fused)
    if neighbours:
        where: dict[tuple[tuple[str, ...], str, int], int] = {}
        for i, it in enumerate(items):
            tp = thread_position(it.key)
            if tp is not None:
                where[(it.namespace, tp[0], tp[1])] = i
        raised = list(score)
        for i, it in enumerate(items):
            tp = thread_position(it.key)
            if tp is None:
                continue
            best = 0.0
            for d in range(1, neighbours + 1):
                for p in (tp[1] - d, tp[1] + d):
                    j = where.get((it.namespace, tp[0], p))
                    if j is not None:
                        best = max(best, score[j])
            raised[i] = score[i] + neighbour_weight * best
        score = raised
    # z-scores have no absolute scale: relative to the best. A noisy-or relevance keeps its own (at most 1).
    top = max(score) if fusion == "zscore" else 1.0 + (neighbour_weight if neighbours else 0.0)
    return [max(0.0, s) / top if top > 0 else 0.0 for s in score]
