"""Which turns of a session are important enough to become episodic memories: the rule, measured.

When a session ends, each of its turns gets an importance in [0, 1]; a turn
reaching ``SessionConfig.promotion_threshold`` (0.7) is promoted:

    importance = information_weight       * information
               + (1 - information_weight) * novelty
               - question_penalty         * questions

* **information** = ``min(1, ln(1 + w) / ln(1 + information_saturation))``,
  where ``w`` is the number of distinct content words of the turn (the terms
  the keyword index would search for: stop words and single letters left out,
  `query_terms()`). Growth is
  logarithmic: the first words of a turn say the most; 20 content words (the
  default saturation) count as a full turn.
* **novelty** = ``min(1, (1 - s) / novelty_scale)``, where ``s`` is the
  highest cosine similarity of the turn's embedding with the earlier turns of
  its session and with the episodic memories already in its namespace (the
  nearest one, found by the store's own vector search). A turn that repeats
  what is already known (s near 1) is not new; one at most 0.3 similar to
  anything known (the default scale, 0.7) is fully new. Without a model (a store
  opened with ``embeddings=False``) every turn counts as new.
* **questions** = the share of the turn's sentences that end with ``?``: a
  turn made only of questions asks for information rather than holding it.
* A turn recorded with an explicit ``importance=`` (say, a user's "remember
  this") keeps that value: the caller knows better.

**How it was chosen** (``bench/recall/session_bench.py``, ``bench/results/RESULTS_session.md``).
LoCoMo's conversations were replayed turn by turn on a simulated clock; the
questions were then asked of long-term memory only. Signals were compared on
conversations 26, 30 and 41 and the rule reported on 42 and 43, held out.
The results file gives each signal's AUC at telling LoCoMo's evidence turns
from the others; content words tell them apart best, novelty next, and
*access* (later turns of the session coming back to a turn) added nothing
once information and novelty were in, so the rule leaves it out; explicit
importance covers what a caller knows. Within the family above, the weights
were chosen to promote at most 60% of the turns while keeping the most
evidence, on the live replay (``--set NAME=VALUE``), which promotes a few
points more than the recomputed table since novelty there is measured only
against what was promoted: 0.6 information + 0.4 novelty (scale 0.5)
promoted 62.9% (recall@10 0.98x storing every turn); 0.7 + 0.3 (scale 0.7)
less 0.1 per question 58.4% (0.99x); the default, less 0.2 per question,
55.9% (0.97x; held out 53.8%, 0.96x); information saturating at 22 or 25
words instead of 20 cost recall (0.965x and 0.945x).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from langgraph_memory.catalog.keywords import query_terms
from langgraph_memory.sessions.config import SessionConfig

__all__ = ["Signals", "information", "question_share", "novelty", "importance", "score_session"]

# A sentence: text up to ., ! or ? (or the end of a line).
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")


@dataclass(frozen=True)
class Signals:
    """What a turn's importance was made from (stored beside each decision and each promoted memory)."""

    information: float
    novelty: float
    questions: float
    content_words: int
    similarity_session: float
    similarity_memory: float

    def as_dict(self) -> dict[str, float]:
        return {k: round(float(v), 4) for k, v in asdict(self).items()}


def information(text: str, saturation: int) -> tuple[float, int]:
    """``(information, content words)`` of ``text``: ``min(1, ln(1 + w) / ln(1 + saturation))``.

    Examples:
        >>> round(information("Ok!", 20)[0], 2), round(information("I moved to Lisbon in May to study marine biology", 20)[0], 2)
        (0.23, 0.64)
    """
    words = len(query_terms(text))
    return min(1.0, math.log1p(words) / math.log1p(saturation)), words


def question_share(text: str) -> float:
    """The share of ``text``'s sentences that end with a question mark.

    Examples:
        >>> question_share("Nice! Where did you go? And when?")
        0.6666666666666666
    """
    sentences = [s.strip() for s in _SENTENCE.findall(text) if s.strip()]
    if not sentences:
        return 0.0
    return sum(s.endswith("?") for s in sentences) / len(sentences)


def novelty(similarity: float, scale: float) -> float:
    """``min(1, (1 - similarity) / scale)``, at least 0: how new a turn is next to the nearest known thing.

    Examples:
        >>> novelty(0.9, 0.5), novelty(0.3, 0.5)
        (0.19999999999999996, 1.0)
    """
    return min(1.0, max(0.0, 1.0 - similarity) / scale)


def importance(signals: Signals, config: SessionConfig) -> float:
    """The turn's importance in [0, 1] by the rule of the module docstring."""
    w = config.information_weight
    score = w * signals.information + (1.0 - w) * signals.novelty - config.question_penalty * signals.questions
    return min(1.0, max(0.0, score))


def score_session(
    texts: Sequence[str],
    vectors: np.ndarray | None,
    memory_similarity: Sequence[float],
    config: SessionConfig,
) -> list[tuple[float, Signals]]:
    """Each turn's importance and signals, in order.

    ``vectors`` holds the turns' unit-length embeddings (a row per turn, None
    without a model); ``memory_similarity`` each turn's highest cosine with
    the memories already stored (0 where nothing is stored).
    """
    out: list[tuple[float, Signals]] = []
    sims = vectors @ vectors.T if vectors is not None and len(vectors) else None
    for i, text in enumerate(texts):
        info, words = information(text, config.information_saturation)
        s_session = float(sims[i, :i].max()) if sims is not None and i else 0.0
        s_memory = float(memory_similarity[i]) if vectors is not None else 0.0
        sig = Signals(
            information=info,
            novelty=novelty(max(s_session, s_memory), config.novelty_scale),
            questions=question_share(text),
            content_words=words,
            similarity_session=s_session,
            similarity_memory=s_memory,
        )
        out.append((importance(sig, config), sig))
    return out
