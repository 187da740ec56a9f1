"""Embeddings whose similarities a session test decides, and a settable clock."""

from __future__ import annotations

import hashlib
import math

import numpy as np
from langchain_core.embeddings import Embeddings

DIMS = 16


class Clock:
    """A fake clock: seconds since the epoch, moved by the test."""

    def __init__(self, t: float = 1_750_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, *, minutes: float = 0.0, hours: float = 0.0, seconds: float = 0.0) -> float:
        self.t += seconds + 60.0 * minutes + 3600.0 * hours
        return self.t


def topic_vector(axis: int, tilt: float = 0.0) -> list[float]:
    """A unit vector on ``axis``, tilted towards the last axis so that its cosine with ``axis``'s is ``cos(tilt)``."""
    v = np.zeros(DIMS, dtype=np.float64)
    v[axis] = math.cos(tilt)
    v[DIMS - 1] = math.sin(tilt)
    return v.tolist()


class TopicEmbeddings(Embeddings):
    """A text's vector is chosen by the first topic word it contains (``TOPICS``); other texts get a hashed unit vector.

    Two texts on the same topic have cosine 1, two on different topics 0.
    ``cosines`` adds topics whose cosine with ``rates`` is given (``"rates29"`` -> 0.29).
    """

    TOPICS = ("rates", "crypto", "football", "cooking", "weather", "options", "travel", "music")

    def __init__(self, cosines: dict[str, float] | None = None) -> None:
        self.cosines = cosines or {}

    def _vec(self, text: str) -> list[float]:
        low = text.lower()
        for word, cos in self.cosines.items():
            if word in low:
                return topic_vector(0, math.acos(cos))
        for axis, word in enumerate(self.TOPICS):
            if word in low:
                return topic_vector(axis)
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
        v = np.random.default_rng(seed).normal(size=DIMS)
        return (v / np.linalg.norm(v)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)
