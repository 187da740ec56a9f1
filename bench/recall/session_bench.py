"""Session memory: a LoCoMo replay (what promotion keeps) and the session-memory latency targets.

    .venv/bin/python bench/recall/session_bench.py                 # both parts (about 15 minutes with the real model)
    .venv/bin/python bench/recall/session_bench.py --part replay   # the LoCoMo replay and the rules tried
    .venv/bin/python bench/recall/session_bench.py --part perf     # 50 active sessions, 10,000 promoted memories
    .venv/bin/python bench/recall/session_bench.py --write         # also write bench/results/RESULTS_session.md

**Replay.** Each LoCoMo conversation (``../shared/data/locomo``) is fed turn
by turn into ``SessionMemory`` on a simulated clock: every turn at its
session's date and time plus one minute per turn before it, so the 30-minute
inactivity boundary ends each LoCoMo session, and the topic-change, turn and
duration boundaries run as they would live. A session that ends is promoted
at once (``promote_on_end``), the last one by a cleanup run a day after the
conversation. LoCoMo is a dialogue between two people; its unit of evidence,
and what its paper calls a turn, is one message (``dia_id``), so each message
is one turn (``add_turn(user="<speaker>: <text>", assistant="")``) and the
share promoted counts the same unit the evidence does. Afterwards each
question of categories 1-4 is asked of long-term memory only
(``store.search(("episodes", <conversation>), query=..., limit=10)`` with
``HybridRanking()``, as of the conversation's last session; memories are dated
at their turn), and recall@k is the share of its evidence turns among the
results. The same replay with ``promotion_threshold=0`` stores every turn
through the same path: the reference.

The rule's weights were chosen on conversations 26, 30 and 41 and are
reported on 42 and 43 as well (held out). The table of rules tried recomputes
each rule from the signals the reference replay recorded for every turn
(novelty there is measured against every earlier turn, since all were kept),
stores the turns it keeps in a fresh store, and asks the questions again.

**Performance.** A data directory with 10,000 promoted memories (turns
recorded through ``add_turn`` with ``importance=1``, sessions ended by the
50-turn boundary and promoted) and 50 active sessions of 20 turns, each on
its own thread. Timed: ``get_session_context`` (target: under 20 ms),
chunking one turn (under 50 ms), a search of the promoted memories with
temporal weighting, the query embedded by the model (under 100 ms), and the
cleanup job (under 500 ms) when nothing is due, when 10 sessions expire
(ended and promoted), and when a day of turns is forgotten.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
from langgraph.store.base import PutOp  # noqa: E402

from bench.common.locomo import CATEGORIES, DATA, questions, session_time  # noqa: E402
from bench.common.report import fmt_ms, git_state, machine, markdown_table, percentile  # noqa: E402
from langgraph_memory.embeddings import CachedEmbeddings, SentenceTransformerEmbeddings  # noqa: E402
from langgraph_memory.search.ranking import HybridRanking  # noqa: E402
from langgraph_memory.sessions import SessionConfig, SessionMemory  # noqa: E402
from langgraph_memory.sessions.importance import novelty  # noqa: E402
from langgraph_memory.sessions.promotion import chunk_turn  # noqa: E402
from langgraph_memory.store import ChromaStore  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results" / "RESULTS_session.md"
MARKER = "<!-- tables -->"
TUNE = ("26", "30", "41")
HELD_OUT = ("42", "43")
KS = (5, 10)
TURN_SECONDS = 60.0  # simulated time between two turns of a LoCoMo session
DIMS = 384


class Clock:
    """A simulated clock the replay sets."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def embeddings(tmp: Path, fake: bool) -> Any:
    if fake:
        from langchain_core.embeddings import DeterministicFakeEmbedding

        return DeterministicFakeEmbedding(size=DIMS)
    return CachedEmbeddings(SentenceTransformerEmbeddings(), path=tmp / "shared-cache.sqlite")


def open_store(path: Path, emb: Any) -> ChromaStore:
    return ChromaStore(data_dir=path, index={"dims": DIMS, "embed": emb}, ranking=HybridRanking())


# ------------------------------------------------------------------ replay


@dataclasses.dataclass
class Replayed:
    """One arm of the replay over every conversation."""

    label: str
    store: ChromaStore
    turns: dict[str, int]  # conversation -> turns fed
    promoted: dict[str, int]  # conversation -> turns promoted
    reasons: Counter[str]
    sessions: int
    seconds: float
    last: dict[str, float]  # conversation -> time of its last session


def conversation_turns(conv: dict[str, Any]) -> list[tuple[float, str, str]]:
    """``(simulated time, dia_id, "<speaker>: <text>")`` of every message, in order."""
    c = conv.get("conversation", conv)
    out = []
    n = 1
    while f"session_{n}" in c:
        start = session_time(c[f"session_{n}_date_time"])
        for j, turn in enumerate(c[f"session_{n}"]):
            text = turn["text"]
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            out.append((start + j * TURN_SECONDS, turn["dia_id"], f"{turn['speaker']}: {text}"))
        n += 1
    return out


def replay(label: str, convs: dict[str, dict[str, Any]], emb: Any, path: Path, config: SessionConfig) -> Replayed:
    started = time.perf_counter()
    store = open_store(path, emb)
    out = Replayed(label, store, {}, {}, Counter(), 0, 0.0, {})
    for name, conv in convs.items():
        clock = Clock()
        sessions = SessionMemory(store, config, namespace=("episodes", name), clock=clock)
        fed = conversation_turns(conv)
        for at, dia, text in fed:
            clock.t = at
            sessions.add_turn(text, "", thread_id=f"locomo-{name}", source=f"{name}:{dia}")
        out.last[name] = max(at for at, _d, _t in fed)
        clock.t = out.last[name] + 86400.0
        sessions.cleanup()
        listed = sessions.list_sessions(limit=10_000)
        out.turns[name] = len(fed)
        out.promoted[name] = sum(s.n_promoted for s in listed)
        out.sessions += len(listed)
        out.reasons.update(s.end_reason or "open" for s in listed)
    date_at_turns(store)
    out.seconds = time.perf_counter() - started
    return out


def date_at_turns(store: ChromaStore) -> None:
    """Date each memory at its turn (a put is dated now; live, promotion follows the turn within hours)."""
    with store.catalog.write() as conn:
        rows = conn.execute("SELECT id, value FROM items").fetchall()
        conn.executemany(
            "UPDATE items SET created_at = ?, updated_at = ?, last_accessed_at = ? WHERE id = ?",
            [(v["occurred_ts"],) * 3 + (i,) for i, v in ((i, json.loads(raw)) for i, raw in rows)],
        )


class Scores:
    """recall@k per conversation and category."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, dict[int, float]]] = []

    def add(self, conv: str, category: str, ranked: Sequence[str], evidence: set[str]) -> None:
        self.rows.append((conv, category, {k: len(set(ranked[:k]) & evidence) / len(evidence) for k in KS}))

    def mean(self, k: int, convs: Sequence[str] | None = None, category: str | None = None) -> float:
        xs = [
            r[k] for c, cat, r in self.rows if (convs is None or c in convs) and (category is None or cat == category)
        ]
        return sum(xs) / len(xs) if xs else float("nan")


def ask(store: ChromaStore, convs: dict[str, dict[str, Any]], last: dict[str, float]) -> Scores:
    sc = Scores()
    base = store.ranking
    for name, conv in convs.items():
        store.ranking = dataclasses.replace(HybridRanking(), clock=lambda t=last[name]: t)
        for qa in questions(conv):
            hits = store.search(("episodes", name), query=qa["question"], limit=max(KS), refresh_ttl=False)
            ranked = [h.value["source"].split(":", 1)[1] for h in hits]
            sc.add(name, CATEGORIES[qa["category"]], ranked, {e.strip() for e in qa["evidence"]})
    store.ranking = base
    return sc


@dataclasses.dataclass
class TurnRecord:
    """A turn of the reference replay: what the rules are recomputed from."""

    conv: str
    key: str
    value: dict[str, Any]
    access: int  # later turns of its session with cosine > 0.5


def turn_records(store: ChromaStore, emb: Any) -> list[TurnRecord]:
    """Every memory of the reference replay (every turn), with the access signal computed from the turns' embeddings."""
    items = [it for it in store.items.iter_items("memories")]
    texts = [it.value["content"] for it in items]
    vecs = np.asarray(emb.embed_documents(texts), dtype=np.float32)
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
    by_session: dict[str, list[int]] = {}
    for i, it in enumerate(items):
        by_session.setdefault(it.value["session_id"], []).append(i)
    access = [0] * len(items)
    for idx in by_session.values():
        idx.sort(key=lambda i: items[i].value["turn_index"])
        for a, i in enumerate(idx):
            access[i] = int(sum(float(vecs[j] @ vecs[i]) > 0.5 for j in idx[a + 1 :]))
    return [TurnRecord(it.namespace[1], it.key, it.value, access[i]) for i, it in enumerate(items)]


Rule = Callable[[TurnRecord], float]


def auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """The chance that an evidence turn scores above a turn that is not (ties count half): Mann-Whitney's AUC."""
    pos = np.asarray([s for s, y in zip(scores, labels, strict=False) if y], dtype=np.float64)
    neg = np.asarray([s for s, y in zip(scores, labels, strict=False) if not y], dtype=np.float64)
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def signal_aucs(records: list[TurnRecord], convs: dict[str, dict[str, Any]], names: Sequence[str]) -> list[list[str]]:
    """Each signal's AUC at telling LoCoMo's evidence turns (of any question) from the others."""
    evidence = {(n, e.strip()) for n in names for qa in questions(convs[n]) for e in qa["evidence"]}
    rows = [t for t in records if t.conv in names]
    labels = [(t.conv, t.value["source"].split(":", 1)[1]) in evidence for t in rows]
    signals: list[tuple[str, Callable[[TurnRecord], float]]] = [
        ("content words", lambda t: t.value["signals"]["content_words"]),
        ("novelty against the session (1 - similarity)", lambda t: 1 - t.value["signals"]["similarity_session"]),
        ("novelty against memory (1 - similarity)", lambda t: 1 - t.value["signals"]["similarity_memory"]),
        ("statements (1 - share of questions)", lambda t: 1 - t.value["signals"]["questions"]),
        ("access (later turns of the session returning to it)", lambda t: float(t.access)),
    ]
    return [[label, f"{auc([f(t) for t in rows], labels):.2f}"] for label, f in signals]


def weighted_rule(w_info: float, saturation: int, scale: float, q_penalty: float, w_access: float = 0.0) -> Rule:
    """The library's rule with other weights (and an optional access term: later turns that come back to it)."""

    def rule(t: TurnRecord) -> float:
        s = t.value["signals"]
        info = min(1.0, np.log1p(s["content_words"]) / np.log1p(saturation))
        nov = novelty(max(s["similarity_session"], s["similarity_memory"]), scale)
        acc = min(1.0, t.access / 2.0)
        return w_info * info + (1.0 - w_info - w_access) * nov + w_access * acc - q_penalty * s["questions"]

    return rule


def evaluate_rule(
    rule: Rule,
    records: list[TurnRecord],
    emb: Any,
    convs: dict[str, dict[str, Any]],
    last: dict[str, float],
    path: Path,
    threshold: float = 0.7,
) -> tuple[dict[str, float], Scores]:
    """Store the turns ``rule`` keeps in a fresh store and ask every question; return shares promoted and scores."""
    store = open_store(path, emb)
    kept = [t for t in records if rule(t) >= threshold]
    ops = [PutOp(("episodes", t.conv), t.key, t.value, index=["chunks[*]"]) for t in kept]
    for i in range(0, len(ops), 256):
        store.batch(ops[i : i + 256])
    date_at_turns(store)
    scores = ask(store, convs, last)
    store.close()
    share = {}
    for part, names in (("tune", TUNE), ("held out", HELD_OUT), ("all", tuple(convs))):
        n = sum(1 for t in records if t.conv in names)
        share[part] = sum(1 for t in kept if t.conv in names) / n if n else float("nan")
    return share, scores


def run_replay(
    convs: dict[str, dict[str, Any]], emb: Any, tmp: Path, rules: bool, settings: dict[str, float] | None = None
) -> list[str]:
    lines: list[str] = []
    default = SessionConfig().replace(**(settings or {}))
    selective = replay("promotion (defaults)", convs, emb, tmp / "selective", default)
    everything = replay(
        "every turn (threshold 0)", convs, emb, tmp / "everything", default.replace(promotion_threshold=0.0)
    )
    s_scores = ask(selective.store, convs, selective.last)
    e_scores = ask(everything.store, convs, everything.last)
    parts = [("tune", TUNE), ("held out", HELD_OUT), ("all", tuple(convs))]
    header = [
        "conversations",
        "turns",
        "promoted",
        "share promoted",
        "recall@5 every turn",
        "recall@5 promoted",
        "recall@10 every turn",
        "recall@10 promoted",
        "recall@10 ratio",
    ]
    rows = []
    for part, names in parts:
        names = tuple(n for n in names if n in convs)
        if not names:
            continue
        n = sum(selective.turns[c] for c in names)
        p = sum(selective.promoted[c] for c in names)
        r10e, r10s = e_scores.mean(10, names), s_scores.mean(10, names)
        rows.append(
            [
                f"{part} ({', '.join(names)})",
                f"{n:,}",
                f"{p:,}",
                f"{p / n:.1%}",
                f"{e_scores.mean(5, names):.3f}",
                f"{s_scores.mean(5, names):.3f}",
                f"{r10e:.3f}",
                f"{r10s:.3f}",
                f"{r10s / r10e:.3f}",
            ]
        )
    cat_rows = [
        [cat, f"{e_scores.mean(10, category=cat):.3f}", f"{s_scores.mean(10, category=cat):.3f}"]
        for cat in CATEGORIES.values()
    ]
    total = sum(selective.turns.values())
    lines += [
        f"### LoCoMo replay: {len(convs)} conversations, {total:,} turns, {len(s_scores.rows)} questions (categories 1-4)",
        "",
        "Target: recall@10 at least 0.9x that of storing every turn, promoting at most 60% of the turns.",
        "",
        "Promotion rule: SessionConfig() defaults" + (f" with {settings}" if settings else "") + f": threshold "
        f"{default.promotion_threshold}, information weight {default.information_weight} (saturation "
        f"{default.information_saturation}), novelty scale {default.novelty_scale}, question penalty "
        f"{default.question_penalty}.",
        "",
        markdown_table(header, rows, [False] + [True] * 8),
        "",
        "recall@10 by category (all conversations):",
        "",
        markdown_table(["category", "every turn", "promoted"], cat_rows, [False, True, True]),
        "",
        f"Sessions (promotion run): {selective.sessions:,}, ended by "
        + ", ".join(f"{r} {n:,}" for r, n in selective.reasons.most_common())
        + f"; replay {selective.seconds:.0f} s (reference {everything.seconds:.0f} s).",
        "",
    ]
    if rules:
        records = turn_records(everything.store, emb)
        lines += [
            f"### Signals: AUC at telling evidence turns from the others (tuning conversations {', '.join(TUNE)})",
            "",
            markdown_table(
                ["signal", "AUC"], signal_aucs(records, convs, [c for c in TUNE if c in convs]), [False, True]
            ),
            "",
        ]
        variants: list[tuple[str, Rule]] = [
            (
                "default: 0.7 information (saturation 20) + 0.3 novelty (scale 0.7) - 0.2 questions",
                weighted_rule(0.7, 20, 0.7, 0.2),
            ),
            (
                "0.6 information (saturation 20) + 0.4 novelty (scale 0.5) - 0.2 questions",
                weighted_rule(0.6, 20, 0.5, 0.2),
            ),
            ("information only (saturation 20)", weighted_rule(1.0, 20, 0.5, 0.0)),
            ("information only (saturation 40)", weighted_rule(1.0, 40, 0.5, 0.0)),
            ("default, no question penalty", weighted_rule(0.7, 20, 0.7, 0.0)),
            ("novelty only (scale 0.5)", weighted_rule(0.0, 20, 0.5, 0.0)),
            ("default + 0.1 access (later turns returning to it)", weighted_rule(0.7, 20, 0.7, 0.2, 0.1)),
            ("0.7 information + 0.3 novelty - 0.1 questions", weighted_rule(0.7, 20, 0.7, 0.1)),
            ("0.5 information + 0.5 novelty - 0.2 questions", weighted_rule(0.5, 20, 0.5, 0.2)),
            (
                "0.6 information (saturation 30) + 0.4 novelty (scale 0.4) - 0.3 questions",
                weighted_rule(0.6, 30, 0.4, 0.3),
            ),
        ]
        ref = {part: e_scores.mean(10, names) for part, names in parts}
        var_rows = []
        for i, (label, rule) in enumerate(variants):
            share, sc = evaluate_rule(rule, records, emb, convs, everything.last, tmp / f"rule{i}")
            var_rows.append(
                [label, *(f"{share[p]:.1%} / {sc.mean(10, n):.3f} ({sc.mean(10, n) / ref[p]:.2f}x)" for p, n in parts)]
            )
            print(f"  rule {i}: {var_rows[-1]}", flush=True)
        lines += [
            "### Rules tried (recomputed from the reference replay's signals; share promoted / recall@10 (ratio))",
            "",
            markdown_table(["rule (promoted at 0.7)", "tune", "held out", "all"], var_rows, [False, True, True, True]),
            "",
        ]
    selective.store.close()
    everything.store.close()
    return lines


# -------------------------------------------------------------- performance


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


def run_perf(convs: dict[str, dict[str, Any]], emb: Any, tmp: Path, n_memories: int, n_active: int) -> list[str]:
    texts = [t for conv in convs.values() for _at, _d, t in conversation_turns(conv)]
    corpus = [
        f"{texts[i % len(texts)]} (note {i // len(texts)})" if i >= len(texts) else texts[i]
        for i in range(n_memories + n_active * 20)
    ]
    t0 = time.perf_counter()
    for i in range(0, len(corpus), 256):  # embed once, in batches; add_turn and promotion then hit the cache
        emb.embed_documents(corpus[i : i + 256])
    embed_s = time.perf_counter() - t0
    clock = Clock(1_700_000_000.0)
    store = open_store(tmp / "perf", emb)
    sessions = SessionMemory(store, SessionConfig(), clock=clock)
    t0 = time.perf_counter()
    for i in range(n_memories):  # 50-turn sessions (the max_turns boundary), promoted as they end
        clock.t += 1.0
        sessions.add_turn(corpus[i], "", thread_id=f"history-{i // 5000}", importance=1.0)
    clock.t += 3 * 3600.0
    sessions.cleanup()
    fill_s = time.perf_counter() - t0
    promoted = store.items.count("memories")
    active = [f"active-{j}" for j in range(n_active)]
    for r in range(20):
        for j, thread in enumerate(active):
            clock.t += 1.0
            sessions.add_turn(corpus[n_memories + r * n_active + j], "", thread_id=thread)
    rng = random.Random(15)
    rows: list[list[str]] = []

    def row(label: str, ms: list[float], target: float | None) -> None:
        p50, p95 = percentile(ms, 50), percentile(ms, 95)
        verdict = "-" if target is None else ("met" if p95 < target else ("p50 met" if p50 < target else "missed"))
        rows.append(
            [
                label,
                str(len(ms)),
                fmt_ms(p50),
                fmt_ms(p95),
                fmt_ms(max(ms)),
                f"< {target:g}" if target else "-",
                verdict,
            ]
        )

    row(
        f"get_session_context (20 turns of one of {n_active} threads)",
        timed(lambda: sessions.get_session_context(thread_id=rng.choice(active)), 300),
        20,
    )
    row("get_all_recent_context (2 h, 50 turns)", timed(lambda: sessions.get_all_recent_context(), 200), 20)
    short = [t for t in texts if 100 < len(t) < 400]
    long_turn = " ".join(texts[:60])  # ~6,000 characters: the 10-chunk cap applies
    row("chunking a turn (100-400 characters)", timed(lambda: chunk_turn(rng.choice(short), sessions.config), 300), 50)
    row(
        f"chunking a turn ({len(long_turn):,} characters, {len(chunk_turn(long_turn, sessions.config))} chunks)",
        timed(lambda: chunk_turn(long_turn, sessions.config), 100),
        50,
    )
    qs = [qa["question"] for conv in convs.values() for qa in questions(conv)]
    rng.shuffle(qs)
    fresh = iter(qs)
    store.search(("episodes",), query="warm up", limit=10)
    row(
        f"recall, temporal weighting, query embedded ({promoted:,} memories)",
        timed(lambda: store.search(("episodes",), query=next(fresh), limit=10, refresh_ttl=False), min(200, len(qs))),
        100,
    )
    again = iter(qs)
    row(
        "recall, temporal weighting, query embedding cached",
        timed(lambda: store.search(("episodes",), query=next(again), limit=10, refresh_ttl=False), min(200, len(qs))),
        100,
    )
    row("cleanup, nothing due (50 active sessions)", timed(sessions.cleanup, 20), 500)
    expire = active[:10]
    clock.t += 40 * 60.0  # 10 sessions go quiet past the inactivity threshold; the others keep talking
    for thread in active[10:]:
        clock.t += 1.0
        sessions.add_turn(corpus[rng.randrange(len(corpus))], "", thread_id=thread)
    t = time.perf_counter()
    report = sessions.cleanup()
    rows.append(
        [
            f"cleanup, {len(report.ended)} sessions expired: ended and promoted ({report.promoted_turns} turns)",
            "1",
            *(fmt_ms((time.perf_counter() - t) * 1000.0),) * 3,
            "< 500",
            "-",
        ]
    )
    clock.t += 25 * 3600.0
    t = time.perf_counter()
    report = sessions.cleanup()
    rows.append(
        [
            f"cleanup, a day later: {len(report.ended)} sessions ended, {report.purged_turns:,} turns forgotten",
            "1",
            *(fmt_ms((time.perf_counter() - t) * 1000.0),) * 3,
            "< 500",
            "-",
        ]
    )
    stats_note = f"{promoted:,} promoted memories built in {fill_s:.0f} s (embedding {embed_s:.0f} s); {n_active} active sessions"
    store.close()
    del expire
    return [
        f"### Performance: {stats_note}",
        "",
        markdown_table(
            ["operation", "runs", "p50 ms", "p95 ms", "max ms", "target ms", "verdict"],
            rows,
            [False, True, True, True, True, True, False],
        ),
        "",
        "Verdict: `met` when p95 is under the target, `p50 met` when only the median is.",
        "",
    ]


# --------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description="Session memory: LoCoMo replay and performance")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--part", choices=["replay", "perf", "all"], default="all")
    parser.add_argument("--conversations", default="", help="comma-separated conversation ids (default: all)")
    parser.add_argument("--no-rules", action="store_true", help="skip the table of rules tried")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--active", type=int, default=50)
    parser.add_argument("--fake", action="store_true", help="deterministic fake embeddings (a quick smoke run)")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.name}")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a SessionConfig setting for the promotion replay (repeatable), e.g. information_saturation=25",
    )
    args = parser.parse_args()
    settings = {}
    for pair in args.set:
        name, _, value = pair.partition("=")
        settings[name] = int(value) if value.isdigit() else float(value)

    files = sorted(Path(args.data).glob("*.json"))
    wanted = {c for c in args.conversations.split(",") if c}
    convs = {f.stem: json.loads(f.read_text()) for f in files if not wanted or f.stem in wanted}
    if not convs:
        raise SystemExit(f"no LoCoMo conversations in {args.data}")
    mach = machine(["chromadb", "sentence-transformers", "langgraph"])
    tmp = Path(tempfile.mkdtemp(prefix="lgm-session-"))
    emb = embeddings(tmp, args.fake)
    lines: list[str] = []
    if args.part in ("replay", "all"):
        lines += run_replay(convs, emb, tmp, rules=not args.no_rules, settings=settings)
    if args.part in ("perf", "all"):
        lines += run_perf(convs, emb, tmp, args.memories, args.active)
    mach.load_end = os.getloadavg()
    mach.code = git_state(Path(__file__).resolve().parents[2], ["langgraph_memory", "bench"])
    lines += ["Machine:", *mach.lines(), ""]
    print("\n".join(lines))
    if args.write:
        write_results(lines)


def write_results(lines: list[str]) -> None:
    head, sep, _old = RESULTS.read_text().partition(MARKER) if RESULTS.exists() else ("", "", "")
    if not sep:
        head = (
            "# Session memory (`bench/recall/session_bench.py`)\n\nCommand: `.venv/bin/python bench/recall/session_bench.py --write` "
            "(about 15 minutes). How it was measured: the script's docstring.\n\n"
        )
    RESULTS.write_text(head + MARKER + "\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
