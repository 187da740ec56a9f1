"""LoCoMo recall through session memory and the conversation node, as an app would store a conversation.

    PYTHONPATH=. .venv/bin/python bench/recall/locomo_sessions.py [--through sessions,paired,node,direct] [--write]

Each development conversation (``../shared/data/locomo``) is fed in order, on a simulated clock: every turn at
its session's date and time plus one minute per turn before it, so the 30-minute inactivity boundary ends each
LoCoMo session and the other boundaries (topic change, 50 turns, 2 hours) run as they would live. One thread per
conversation (a chat thread that lasts months), one namespace per conversation (``("episodes", <id>)``, as
``Memory.open(scope=<id>)`` gives). A day after the last session the cleanup job runs, which promotes the last
session. Then every question of categories 1-4 is asked of long-term memory with the store's own default ranking
(``Memory.open`` with no ranking argument: ``HybridRanking()`` on the wall clock): ``store.search(("episodes",
<id>), query=..., limit=10, refresh_ttl=False)`` (searches do not count as reads, so the order of the questions
cannot change a ranking).

Arms, each in its own data directory:

* **sessions**: ``SessionMemory.add_turn`` once per LoCoMo turn (``dia_id``, the unit of its evidence): speaker A's
  turns on the user side (``add_turn("A: text", "")``), speaker B's on the assistant side (``add_turn("", "B:
  text")``). One LoCoMo turn is one session turn, so each promoted memory is one evidence unit, as in the direct
  store; the side only labels the value (search reads the turn's chunks, and both sides are joined the same way),
  and the speaker's name stays in the text because LoCoMo's questions ask about each speaker by name.
* **paired** (``SessionMemory, exchanges``): each LoCoMo session as exchanges, the speaker who opens it on the user
  side and the other's reply on the assistant side, one ``add_turn(opener, reply)`` per exchange (a last turn
  without a reply is recorded alone): how an app records a message and its answer. One memory holds two LoCoMo
  turns, as in the node arm.
* **node**: a LangGraph ``StateGraph`` (``MessagesState``) compiled with ``Memory.compile``: a scripted "chat" node
  answers each human message with the other speaker's actual reply, then ``conversation_node(mem.sessions)``
  records the exchange. In each LoCoMo session the speaker who opens it is the human (a chat is opened by its
  user) and the other answers, so one memory holds two LoCoMo turns; a session's last turn without a reply is a
  human message never answered, which the node does not record (counted below). Recall@k there counts the
  evidence turns inside the top k memories, which hold up to 2k turns: not the same unit as the other arms.
* **direct**: every turn put straight into a store as a conversation turn (``locomo_bench.py``'s way: kind
  "turn", keys ``D<session>:<turn>``, index field ``text``, dated at its session): the reference, searched with
  the same default ranking on the wall clock, and with its clock at the last session (``locomo_bench.py``'s
  "hybrid + temporal": its 0.741).

"every turn" rows promote with ``SessionConfig(promotion_threshold=0)``: the same path keeping every turn.
"dated" rows date each memory at its turn (a put is dated now; live, promotion follows the turn within hours) and
set the ranking's clock to the conversation's last session, as a live app asked then would rank.
The last column keeps only the hits that pass the relevance threshold the graph nodes and agent tools apply
(``MIN_RELEVANCE``; ``recall_node`` also returns 5 by default, not 10).
BM25 alone is the library's keyword score over the direct store's candidates. For the arms whose memories hold
two turns, "r, first 10 turns" counts the evidence among the first ten LoCoMo turns of the ranking (the
memories' turns in order): the same reading budget as recall@10 of the arms of one turn per memory, where the two
are equal.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from langgraph.store.base import PutOp, SearchOp  # noqa: E402

from bench.common.locomo import CATEGORIES, DATA, EMBED_CACHE, questions, session_time  # noqa: E402
from bench.common.report import git_state, machine, markdown_table  # noqa: E402
from langgraph_memory import Memory, conversation_node  # noqa: E402
from langgraph_memory.catalog.item_rows import join_ns  # noqa: E402
from langgraph_memory.config import MIN_RELEVANCE  # noqa: E402
from langgraph_memory.embeddings import CachedEmbeddings, SentenceTransformerEmbeddings  # noqa: E402
from langgraph_memory.search.ranking import HybridRanking  # noqa: E402
from langgraph_memory.sessions import SessionConfig, SessionMemory  # noqa: E402
from langgraph_memory.store import ChromaStore  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results" / "RESULTS_session.md"
# session_bench.py rewrites everything below its "<!-- tables -->" marker; the heading above it starts its part
ANCHOR = "## Promotion replay and latency targets"
KS = (1, 5, 10)
TURNS = -10  # the key of recall over the first 10 LoCoMo turns of a ranking (see Scores.add)
TURN_SECONDS = 60.0  # simulated time between two turns of a LoCoMo session
DIMS = 384


class Clock:
    """The simulated clock the replay sets (the session memory's ``clock``)."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


@dataclasses.dataclass
class Turn:
    at: float
    dia_id: str
    speaker: str
    text: str  # "speaker: text [shares a photo: ...]"
    session: int


def conversation(conv: dict[str, Any]) -> list[Turn]:
    """Every LoCoMo turn in order, at its session's time plus a minute per turn before it."""
    c = conv.get("conversation", conv)
    out = []
    n = 1
    while f"session_{n}" in c:
        start = session_time(c[f"session_{n}_date_time"])
        for j, t in enumerate(c[f"session_{n}"]):
            text = t["text"] + (f" [shares a photo: {t['blip_caption']}]" if t.get("blip_caption") else "")
            out.append(Turn(start + j * TURN_SECONDS, t["dia_id"], t["speaker"], f"{t['speaker']}: {text}", n))
        n += 1
    return out


class Scores:
    """recall@k and hit@k per conversation and category; a ranking is a list of memories, each some dia_ids."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, dict[int, float], dict[int, float]]] = []

    def add(self, conv: str, category: str, ranked: Sequence[Sequence[str]], evidence: set[str]) -> None:
        recall, hit = {}, {}
        for k in KS:
            found = {d for memory in ranked[:k] for d in memory} & evidence
            recall[k] = len(found) / len(evidence)
            hit[k] = 1.0 if found else 0.0
        # TURNS: the first 10 LoCoMo turns read, whatever memories hold them (the others' recall@10)
        found = set([d for memory in ranked for d in memory][:10]) & evidence
        recall[TURNS], hit[TURNS] = len(found) / len(evidence), 1.0 if found else 0.0
        self.rows.append((conv, category, recall, hit))

    def mean(self, k: int, conv: str | None = None, *, hit: bool = False) -> float:
        xs = [(h if hit else r)[k] for c, _cat, r, h in self.rows if conv is None or c == conv]
        return sum(xs) / len(xs) if xs else float("nan")


@dataclasses.dataclass
class Arm:
    """One way of storing the conversations, and what it stored."""

    label: str
    mem: Memory | None
    store: ChromaStore
    namespace: Callable[[str], tuple[str, ...]]
    dia_ids: dict[tuple[str, str], list[str]]  # (conversation, memory key) -> the LoCoMo turns it holds
    fed: int = 0
    stored: int = 0
    unanswered: int = 0
    sessions: int = 0
    reasons: Counter[str] = dataclasses.field(default_factory=Counter)
    seconds: float = 0.0


def _finish(arm: Arm, sessions: SessionMemory, name: str, clock: Clock, last: float) -> None:
    clock.t = last + 86400.0
    sessions.cleanup()  # what the scheduled job does: ends and promotes the last session
    listed = sessions.list_sessions(limit=10_000)
    arm.sessions += len(listed)
    arm.reasons.update(s.end_reason or "open" for s in listed)


def exchanges(turns: list[Turn]) -> list[tuple[Turn, Turn | None]]:
    """Each LoCoMo session as (opener's turn, the other's reply) pairs; a last turn without a reply stands alone."""
    out: list[tuple[Turn, Turn | None]] = []
    i = 0
    while i < len(turns):
        reply = turns[i + 1] if i + 1 < len(turns) and turns[i + 1].session == turns[i].session else None
        out.append((turns[i], reply))
        i += 2 if reply else 1
    return out


def feed_sessions(
    label: str, path: Path, emb: Any, convs: dict[str, list[Turn]], config: SessionConfig, *, paired: bool = False
) -> Arm:
    """Each LoCoMo turn one ``add_turn`` (speaker A on the user side, B on the assistant side), or with ``paired``
    each exchange one ``add_turn(opener, reply)``, as an app records a user's message and its answer."""
    started = time.perf_counter()
    mem = Memory.open(path, embeddings=emb)
    arm = Arm(label, mem, mem.store, lambda name: ("episodes", name), {})
    for name, turns in convs.items():
        clock = Clock()
        sessions = SessionMemory(mem.store, config, namespace=("episodes", name), clock=clock)
        first = turns[0].speaker
        calls: list[tuple[float, str, str, list[str]]] = []  # (at, user, assistant, dia_ids)
        if paired:
            for a, b in exchanges(turns):
                calls.append(((b or a).at, a.text, b.text if b else "", [a.dia_id] + ([b.dia_id] if b else [])))
        else:
            for t in turns:
                user, assistant = (t.text, "") if t.speaker == first else ("", t.text)
                calls.append((t.at, user, assistant, [t.dia_id]))
        for at, user, assistant, dias in calls:
            clock.t = at
            sessions.add_turn(user, assistant, thread_id=f"locomo-{name}", source=f"locomo:{name}:{'+'.join(dias)}")
        arm.fed += len(turns)
        _finish(arm, sessions, name, clock, turns[-1].at)
        for it in mem.store.search(("episodes", name), limit=10_000):
            # source "locomo:<conversation>:<dia_id>[+<dia_id>]"
            arm.dia_ids[(name, it.key)] = it.value["source"].split(":", 2)[2].split("+")
    arm.stored = len(arm.dia_ids)
    arm.seconds = time.perf_counter() - started
    return arm


class ChatState(MessagesState):
    reply: tuple[str, str] | None  # the scripted answer to this run's human message: (dia_id, text)


def scripted_chat(state: ChatState) -> dict[str, Any]:
    """The "model": answers with the other speaker's actual reply (nothing when the turn got none)."""
    reply = state.get("reply")
    return {"messages": [AIMessage(reply[1], id=reply[0])]} if reply else {}


def feed_node(label: str, path: Path, emb: Any, convs: dict[str, list[Turn]], config: SessionConfig) -> Arm:
    """A chat graph with the conversation node: per LoCoMo session, the opener's turns are human messages."""
    started = time.perf_counter()
    mem = Memory.open(path, embeddings=emb)
    arm = Arm(label, mem, mem.store, lambda name: ("episodes", name), {})
    for name, turns in convs.items():
        clock = Clock()
        sessions = SessionMemory(mem.store, config, namespace=("episodes", name), clock=clock)
        builder = StateGraph(ChatState)
        builder.add_node("chat", scripted_chat)
        builder.add_node("conversation", conversation_node(sessions, output_key=None))
        builder.add_edge(START, "chat")
        builder.add_edge("chat", "conversation")
        builder.add_edge("conversation", END)
        graph = mem.compile(builder)
        run = {"configurable": {"thread_id": f"locomo-{name}"}}
        for human, answer in exchanges(turns):
            clock.t = (answer or human).at
            graph.invoke(
                {
                    "messages": [HumanMessage(human.text, id=human.dia_id)],
                    "reply": (answer.dia_id, answer.text) if answer else None,
                },
                run,
            )
            arm.unanswered += answer is None
        arm.fed += len(turns)
        _finish(arm, sessions, name, clock, turns[-1].at)
        for it in mem.store.search(("episodes", name), limit=10_000):
            # source "conversation:<thread>:<human message id>:<answer id>", the ids being dia_ids ("D3:7")
            parts = it.value["source"].split(":", 2)[2].split(":")
            arm.dia_ids[(name, it.key)] = [f"{a}:{b}" for a, b in zip(parts[::2], parts[1::2], strict=True)]
    arm.stored = len(arm.dia_ids)
    arm.seconds = time.perf_counter() - started
    return arm


# A put is dated now: these date the stored turns as the replay says (created, updated and last read alike).
DATE_BY_KEY = (
    "UPDATE items SET created_at = ?, updated_at = ?, last_accessed_at = ?"
    " WHERE ns_id = (SELECT id FROM namespaces WHERE ns = ?) AND key = ?"
)
DATE_BY_ID = "UPDATE items SET created_at = ?, updated_at = ?, last_accessed_at = ? WHERE id = ?"
ALL_VALUES = "SELECT id, value FROM items"


def feed_direct(path: Path, emb: Any, convs: dict[str, list[Turn]]) -> Arm:
    """Every turn put as a conversation turn (``locomo_bench.py``), dated at its session."""
    started = time.perf_counter()
    store = ChromaStore(data_dir=path, index={"dims": DIMS, "embed": emb, "fields": ["text"]}, ranking=HybridRanking())
    arm = Arm("direct store (locomo_bench.py)", None, store, lambda name: ("locomo", name), {})
    for name, turns in convs.items():
        ns = ("locomo", name)
        for i in range(0, len(turns), 256):
            store.batch([PutOp(ns, t.dia_id, {"text": t.text, "kind": "turn"}) for t in turns[i : i + 256]])
        session_at = {t.dia_id: session_time_of(t) for t in turns}
        with store.catalog.write() as conn:
            conn.executemany(DATE_BY_KEY, [(at, at, at, join_ns(ns), d) for d, at in session_at.items()])
        arm.dia_ids.update({(name, t.dia_id): [t.dia_id] for t in turns})
        arm.fed += len(turns)
    arm.stored = len(arm.dia_ids)
    arm.seconds = time.perf_counter() - started
    return arm


def session_time_of(t: Turn) -> float:
    """The session's own time (``locomo_bench.py`` dates every turn of a session at it)."""
    return t.at - (int(t.dia_id.split(":")[1]) - 1) * TURN_SECONDS


def date_at_turns(store: ChromaStore) -> None:
    """Date each promoted memory at its turn (``occurred_ts``), as live promotion would."""
    with store.catalog.write() as conn:
        rows = conn.execute(ALL_VALUES).fetchall()
        conn.executemany(
            DATE_BY_ID,
            [
                (v["occurred_ts"],) * 3 + (i,)
                for i, v in ((i, json.loads(raw)) for i, raw in rows)
                if "occurred_ts" in v
            ],
        )


def ask(
    arm: Arm, asked: dict[str, list[dict[str, Any]]], clock_at: dict[str, float] | None = None
) -> tuple[Scores, Scores]:
    """Every question through ``store.search`` with the store's own ranking (its clock moved only if ``clock_at``);
    the scores of all ten hits, and of those passing the relevance threshold the nodes and tools apply."""
    sc, kept = Scores(), Scores()
    store = arm.store
    base = store.ranking
    for name, qs in asked.items():
        if clock_at is not None and base is not None:
            store.ranking = dataclasses.replace(base, clock=lambda t=clock_at[name]: t)
        for qa in qs:
            hits = store.search(arm.namespace(name), query=qa["question"], limit=max(KS), refresh_ttl=False)
            evidence = {e.strip() for e in qa["evidence"]}
            sc.add(name, CATEGORIES[qa["category"]], [arm.dia_ids.get((name, h.key), []) for h in hits], evidence)
            passed = [h for h in hits if h.score is not None and h.score >= MIN_RELEVANCE]
            kept.add(name, CATEGORIES[qa["category"]], [arm.dia_ids.get((name, h.key), []) for h in passed], evidence)
    store.ranking = base
    return sc, kept


def bm25_alone(arm: Arm, emb: Any, asked: dict[str, list[dict[str, Any]]]) -> Scores:
    """The library's keyword score alone over the direct store's candidates."""
    sc = Scores()
    store = arm.store
    ranking = store.ranking or HybridRanking()
    for name, qs in asked.items():
        for qa in qs:
            qvec = np.asarray(emb.embed_query(qa["question"]), dtype=np.float32)
            op = SearchOp(arm.namespace(name), None, 10, 0, qa["question"], False)
            cands = store.hybrid.candidates(op, qvec, ranking, omit=lambda _it: False).items
            order = sorted(cands, key=lambda c: (-c.keyword, -c.similarity, c.item.id))
            ranked = [arm.dia_ids.get((name, c.item.key), []) for c in order if c.keyword > 0]
            sc.add(name, CATEGORIES[qa["category"]], ranked, {e.strip() for e in qa["evidence"]})
    return sc


def main() -> None:
    parser = argparse.ArgumentParser(description="LoCoMo recall@k through SessionMemory and conversation_node")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument(
        "--through", default="sessions,paired,node,direct", help="comma-separated: sessions, paired, node, direct"
    )
    parser.add_argument("--conversations", default="", help="comma-separated conversation ids (default: all)")
    parser.add_argument("--no-keep-all", action="store_true", help="skip the arms that promote every turn")
    parser.add_argument("--write", action="store_true", help=f"append a section to {RESULTS.name}")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a SessionConfig setting for every session arm (repeatable), e.g. topic_change_threshold=0",
    )
    parser.add_argument("--tmp", default=None, help="folder for the data directories (default: a new temporary one)")
    args = parser.parse_args()
    through = [a for a in args.through.split(",") if a]
    wanted = {c for c in args.conversations.split(",") if c}
    files = [f for f in sorted(Path(args.data).glob("*.json")) if not wanted or f.stem in wanted]
    if not files:
        raise SystemExit(f"no LoCoMo conversations in {args.data}")
    mach = machine(["chromadb", "sentence-transformers", "langgraph"])
    raw = {f.stem: json.loads(f.read_text()) for f in files}
    convs = {name: conversation(c) for name, c in raw.items()}
    asked = {name: questions(c) for name, c in raw.items()}
    last_session = {name: max(session_time_of(t) for t in ts) for name, ts in convs.items()}
    last_turn = {name: ts[-1].at for name, ts in convs.items()}
    tmp = Path(args.tmp or tempfile.mkdtemp(prefix="lgm-locomo-sessions-"))
    tmp.mkdir(parents=True, exist_ok=True)
    EMBED_CACHE.parent.mkdir(parents=True, exist_ok=True)
    emb = CachedEmbeddings(SentenceTransformerEmbeddings(), path=EMBED_CACHE)

    rows: dict[str, Scores] = {}
    above: dict[str, Scores] = {}  # the same searches, only the hits scoring at least MIN_RELEVANCE
    stored: list[list[str]] = []
    settings: dict[str, Any] = {}
    for pair in args.set:
        key, _, value = pair.partition("=")
        settings[key] = int(value) if value.isdigit() else float(value)
    config = SessionConfig().replace(**settings)
    keep_all = config.replace(promotion_threshold=0.0)
    plan: list[tuple[str, Callable[[], Arm]]] = []
    configs = [("", config)] + ([] if args.no_keep_all else [(", every turn", keep_all)])
    for suffix, cfg in configs:
        if "sessions" in through:
            plan.append(
                (
                    "sessions",
                    lambda s=suffix, c=cfg: feed_sessions(f"SessionMemory{s}", tmp / f"sessions{s}", emb, convs, c),
                )
            )
        if "paired" in through:
            plan.append(
                (
                    "sessions",
                    lambda s=suffix, c=cfg: feed_sessions(
                        f"SessionMemory, exchanges{s}", tmp / f"paired{s}", emb, convs, c, paired=True
                    ),
                )
            )
        if "node" in through:
            plan.append(
                ("node", lambda s=suffix, c=cfg: feed_node(f"conversation_node{s}", tmp / f"node{s}", emb, convs, c))
            )
    if "direct" in through:
        plan.append(("direct", lambda: feed_direct(tmp / "direct", emb, convs)))
    for kind, build in plan:
        arm = build()
        print(f"{arm.label}: {arm.fed} turns fed, {arm.stored} memories, {arm.seconds:.0f} s", flush=True)
        if kind == "direct":
            rows["BM25 alone (direct store's candidates)"] = bm25_alone(arm, emb, asked)
            got = {
                "dated, clock at last session": ask(arm, asked, last_session),
                "wall clock": ask(arm, asked),
            }
        else:
            got = {"default search": ask(arm, asked)}
            date_at_turns(arm.store)
            got["dated at turns, clock at last turn"] = ask(arm, asked, last_turn)
        for how, (all_hits, passed) in got.items():
            rows[f"{arm.label}, {how}"] = all_hits
            above[f"{arm.label}, {how}"] = passed
            print(
                f"  {arm.label}, {how}: recall@10 {all_hits.mean(10):.3f} ({passed.mean(10):.3f} above the threshold)"
            )
        reasons = ", ".join(f"{r} {n}" for r, n in arm.reasons.most_common()) or "-"
        stored.append(
            [
                arm.label,
                f"{arm.fed:,}",
                f"{arm.stored:,}",
                f"{arm.sessions:,}",
                reasons,
                str(arm.unanswered),
                f"{arm.seconds:.0f}",
            ]
        )
        if arm.mem is not None:
            arm.mem.close()
        else:
            arm.store.close()

    names = list(convs)
    header = [
        "stored through",
        *names,
        "pooled r@1",
        "pooled r@5",
        "pooled r@10",
        "pooled hit@10",
        "pooled r, first 10 turns",
        f"r@10 of hits >= {MIN_RELEVANCE}",
    ]
    table = [
        [
            label,
            *(f"{sc.mean(10, n):.3f}" for n in names),
            *(f"{sc.mean(k):.3f}" for k in KS),
            f"{sc.mean(10, hit=True):.3f}",
            f"{sc.mean(TURNS):.3f}",
            f"{above[label].mean(10):.3f}" if label in above else "-",
        ]
        for label, sc in rows.items()
    ]
    mach.load_end = os.getloadavg()
    mach.code = git_state(Path(__file__).resolve().parents[2], ["langgraph_memory", "bench"])
    n_q = sum(len(q) for q in asked.values())
    lines = [
        f"### LoCoMo through sessions and the conversation node: {len(names)} conversations, "
        f"{sum(len(t) for t in convs.values()):,} turns, {n_q} questions (categories 1-4); all-MiniLM-L6-v2",
        "",
        "Command: `PYTHONPATH=. .venv/bin/python bench/recall/locomo_sessions.py "
        + " ".join(a for a in sys.argv[1:] if a != "--write")
        + "` (how it was measured: the script's docstring). Per conversation: recall@10.",
        "",
        markdown_table(header, table, [False] + [True] * (len(header) - 1)),
        "",
        markdown_table(
            ["arm", "turns fed", "memories", "sessions", "ended by", "unanswered (not recorded)", "seconds"],
            stored,
            [False, True, True, True, False, True, True],
        ),
        "",
        "Machine:",
        *mach.lines(),
        "",
    ]
    print("\n".join(lines))
    if args.write:
        write_results(lines)


def write_results(lines: list[str]) -> None:
    """Put the section above ``session_bench.py``'s part of the file (at the end if that part is not there)."""
    head, sep, tail = RESULTS.read_text().partition(ANCHOR)
    RESULTS.write_text(head + "\n".join(lines) + "\n" + sep + tail)


if __name__ == "__main__":
    main()
