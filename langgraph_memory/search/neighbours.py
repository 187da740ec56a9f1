"""Conversation turns ranked with their neighbours; z-score fusion over the candidates.

A memory is a **turn** when its value says so (``value["kind"] == "turn"``)
and its key reads ``"<thread>:<position>"``: what session memory stores for
each promoted turn (`langgraph_memory.sessions`, and so the conversation node).
Any caller can store turns the same way. With ``HybridRanking.neighbours = r``
(the default: 2):

* the turns up to ``r`` positions from a candidate turn in the same
  namespace and thread are read and scored too, so a turn whose answer sits
  in the turn before it can be found: a window is retrieved at query time
  instead of being stored at write time;
* under ``noisy-or`` fusion (the default) a turn's relevance ``s`` is raised
  towards 1 by its best neighbour: ``1 - (1 - s) * (1 - neighbour_weight * g)``,
  where ``g = max(0, (s_nb - mean) / (1 - mean))`` says how far the best
  neighbour's relevance ``s_nb`` stands above the mean relevance of the vector
  search's candidates. The scale stays absolute (a turn never scores less than
  its own evidence gives it, never 1), so the relevance threshold keeps its meaning;
* under ``fusion="zscore"`` each side (cosine, BM25) is turned into z-scores
  over the candidates, the relevance is ``z_cosine + zscore_weight *
  z_keyword`` (shifted to be positive), a turn gets ``+ neighbour_weight *
  best``, and everything is divided by the best candidate's: a relative scale.

Memories that are not turns are ranked by their own evidence alone.
Measured on LoCoMo by leave-one-conversation-out (``bench/results/RESULTS_ranking.md``).

    >>> thread_position("session-7:12"), thread_position("note")
    (('session-7', 12), None)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from langgraph_memory.catalog import StoredItem

__all__ = ["thread_position", "is_turn", "neighbour_keys", "relative_relevance", "Raised"]


def thread_position(key: str) -> tuple[str, int] | None:
    """``(thread, position)`` of a key ``"<thread>:<position>"`` (None when it has no such form)."""
    thread, sep, pos = key.rpartition(":")
    if not sep or not thread or not pos.isdigit():
        return None
    return thread, int(pos)


def is_turn(item: StoredItem) -> bool:
    """Whether ``item`` is a conversation turn: ``value["kind"] == "turn"`` and a key ``"<thread>:<position>"``.

    Example:
        >>> is_turn(StoredItem(("s",), "t:5", {"kind": "turn"}, 0.0, 0.0, 0.0)), is_turn(StoredItem(("s",), "t:5", {}, 0.0, 0.0, 0.0))
        (True, False)
    """
    value = item.value
    return isinstance(value, dict) and value.get("kind") == "turn" and thread_position(item.key) is not None


def neighbour_keys(items: Iterable[StoredItem], radius: int) -> list[tuple[tuple[str, ...], str]]:
    """The ``(namespace, key)`` of every position up to ``radius`` from one of the turns among ``items`` in its
    thread, except ``items`` themselves.

    Example:
        >>> it = StoredItem(("s",), "t:5", {"kind": "turn"}, 0.0, 0.0, 0.0, id=1)
        >>> neighbour_keys([it], 1)
        [(('s',), 't:4'), (('s',), 't:6')]
    """
    have = {(it.namespace, it.key) for it in items}
    out: dict[tuple[tuple[str, ...], str], None] = {}
    for it in items:
        if not is_turn(it):
            continue
        thread, pos = thread_position(it.key) or ("", 0)
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


@dataclass(frozen=True)
class Raised:
    """A candidate's relevance after its neighbours, and which neighbour raised it (None: none did)."""

    relevance: float
    neighbour: str | None = None


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
    vector: Sequence[bool] | None = None,
) -> list[Raised]:
    """Each candidate's relevance in [0, 1] under z-score fusion and/or neighbour propagation among turns.

    ``keyword`` is the raw BM25 score, ``fused`` the absolute fusion's relevance
    (used when ``fusion`` is not ``"zscore"``); ``joined`` marks candidates read
    only as neighbours of others (they do not count in the z-scores' statistics);
    ``vector`` those the vector search found, whose mean relevance a turn's
    neighbour must stand above to raise it (None: every candidate not joined).

    Example:
        >>> its = [StoredItem(("s",), f"t:{i}", {"kind": "turn"}, 0.0, 0.0, 0.0, id=i) for i in (1, 2, 3)]
        >>> rel = relative_relevance(its, [0.9, 0.1, 0.2], [0.0] * 3, [0.9, 0.1, 0.2], [False] * 3,
        ...                          fusion="noisy-or", zscore_weight=1.5, neighbours=1, neighbour_weight=0.5)
        >>> [(round(r.relevance, 3), r.neighbour) for r in rel]  # mean 0.4: t:1 stands 0.5/0.6 above it
        [(0.9, None), (0.475, 't:1'), (0.2, None)]
    """
    n = len(items)
    if not n:
        return []
    own = [i for i in range(n) if not joined[i]] or list(range(n))
    if fusion == "zscore":
        # Every candidate's z (joined neighbours too) against the statistics of the searched candidates only.
        mean_s, sd_s = _mean_std([similarity[i] for i in own])
        mean_k, sd_k = _mean_std([keyword[i] for i in own])
        raw = [(similarity[i] - mean_s) / sd_s + zscore_weight * (keyword[i] - mean_k) / sd_k for i in range(n)]
        floor = min(raw[i] for i in own)
        score = [r - floor + 1e-3 for r in raw]
    else:
        score = list(fused)
    raised = list(score)
    by: list[str | None] = [None] * n
    if neighbours:
        turns = [is_turn(it) for it in items]
        where: dict[tuple[tuple[str, ...], str, int], int] = {}
        for i, it in enumerate(items):
            if turns[i]:
                thread, pos = thread_position(it.key) or ("", 0)
                where[(it.namespace, thread, pos)] = i
        base = [i for i in range(n) if vector[i]] if vector is not None else own
        mean = sum(score[i] for i in base or own) / len(base or own)
        for i, it in enumerate(items):
            if not turns[i]:
                continue
            thread, pos = thread_position(it.key) or ("", 0)
            best, at = -math.inf, -1
            for d in range(1, neighbours + 1):
                for p in (pos - d, pos + d):
                    j = where.get((it.namespace, thread, p))
                    if j is not None and score[j] > best:
                        best, at = score[j], j
            if at < 0:
                continue
            if fusion == "zscore":
                raised[i] = score[i] + neighbour_weight * best
                by[i] = items[at].key
            elif best > mean:
                # Towards 1 by the neighbour's standing above the mean: absolute, strictly below 1.
                g = min(1.0, (best - mean) / (1.0 - mean)) if mean < 1.0 else 0.0
                raised[i] = 1.0 - (1.0 - score[i]) * (1.0 - neighbour_weight * g)
                by[i] = items[at].key if raised[i] > score[i] else None
    if fusion != "zscore":
        return [Raised(min(1.0, max(0.0, r)), b) for r, b in zip(raised, by, strict=True)]
    # z-scores have no absolute scale: relative to the best.
    top = max(raised)
    return [Raised(max(0.0, r) / top if top > 0 else 0.0, b) for r, b in zip(raised, by, strict=True)]
