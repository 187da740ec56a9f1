"""SIGKILL session promotion at random moments: rerunning it loses no turn and promotes none twice.

A data directory holds ended sessions. A child process promotes them one by
one and is killed with SIGKILL at a random moment, three times over; then
the promotion is run to its end. Everything must equal a reference copy of
the same directory promoted without a crash: every session promoted once,
every turn's decision and memory, each memory's value, vector (a search with
its text finds it first), listing, filter and lineage.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.common.crash_check import index_problems
from langgraph_memory import Memory
from langgraph_memory.catalog import item_rows as _item_rows
from langgraph_memory.sessions import SessionConfig
from tests.helpers import catalog_backend
from tests.helpers.session_data import Clock, TopicEmbeddings
from tests.helpers.session_kill import promote_in_order

HELPER = Path(__file__).parent / "helpers" / "session_kill.py"
TOPICS = TopicEmbeddings.TOPICS
N_SESSIONS = 24


def _forget_chroma_clients() -> None:
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()


def build(data_dir: Path, seed: int) -> None:
    """24 ended sessions of 3 to 7 turns on three threads (facts, repeats, questions), none promoted yet.

    Turns on a thread 45 minutes after its last one end its session by
    inactivity; with ``promote_on_end`` off the ended sessions wait for promotion.
    """
    rng = random.Random(seed)
    clock = Clock()
    with Memory.open(data_dir, embeddings=TopicEmbeddings(), session_config=SessionConfig(promote_on_end=False)) as mem:
        mem.sessions.clock = clock
        for s in range(N_SESSIONS + 3):
            topic = TOPICS[s % len(TOPICS)]
            for t in range(rng.randint(3, 7) if s < N_SESSIONS else 1):
                kind = rng.random()
                if kind < 0.5:
                    words = " ".join(f"{topic}{rng.randint(0, 999)}" for _ in range(rng.randint(4, 25)))
                    user = f"{topic}: note {words}."
                elif kind < 0.8:
                    user = f"{topic} ok?"
                else:
                    user = f"{topic}: what about it? and then?"
                mem.sessions.add_turn(user, f"{topic} answer {t}", thread_id=f"thread-{s % 3}")
                clock.advance(minutes=1)
            clock.advance(minutes=20)  # the thread's next session starts 60+ minutes later: inactivity
        assert len(mem.sessions.list_sessions("ended", limit=1000)) == N_SESSIONS
        assert mem.sessions.list_sessions("promoted") == []


def snapshot(mem: Memory) -> dict[str, Any]:
    """Every session's state and turns, every episodic memory's value and lineage."""
    out: dict[str, Any] = {"sessions": {}, "memories": {}}
    for s in mem.sessions.list_sessions(limit=10_000):
        turns = mem.sessions.get_session_context(s.id, max_turns=1000, include_expired=True)
        out["sessions"][s.id] = (
            s.state,
            s.n_turns,
            s.n_promoted,
            [(t.index, t.importance, t.memory_key) for t in turns],
        )
    for item in mem.store.search(("episodes",), limit=10_000):
        parents = [(e.parent_id, e.relation) for e in mem.lineage_store.parents(item.key)]
        value = {k: v for k, v in item.value.items()}
        out["memories"][item.key] = (
            value["content"],
            value["importance"],
            value["chunks"],
            value["session_id"],
            sorted(parents),
        )
    return out


def _kill_at_random(data_dir: Path, progress: Path, rng: random.Random, remaining: int) -> bool:
    """Run the child, SIGKILL it a random moment after it promoted a random number of sessions; False if it finished."""
    progress.unlink(missing_ok=True)
    after = rng.randrange(0, max(1, remaining))
    proc = subprocess.Popen([sys.executable, str(HELPER), str(data_dir), str(progress)], cwd=str(data_dir.parent))
    try:
        deadline = time.monotonic() + 180
        while proc.poll() is None and time.monotonic() < deadline:
            text = progress.read_text() if progress.exists() else ""
            if text == "done" or (text.isdigit() and int(text) >= after) or (after == 0 and text == ""):
                break
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.15))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode in (0, -signal.SIGKILL), proc.returncode
    return proc.returncode == -signal.SIGKILL


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_sigkill_mid_promotion_loses_no_turn_and_promotes_none_twice(tmp_path: Path, seed: int) -> None:
    data_dir, reference = tmp_path / "data", tmp_path / "reference"
    build(data_dir, seed)
    _forget_chroma_clients()
    catalog_backend.copy_data_dir(data_dir, reference)
    with Memory.open(reference, embeddings=TopicEmbeddings()) as mem:
        promote_in_order(mem)
        expected = snapshot(mem)
    _forget_chroma_clients()
    promoted = [k for k, v in expected["sessions"].items() if v[0] == "promoted"]
    assert len(promoted) == N_SESSIONS and 0 < len(expected["memories"]) < sum(
        v[1] for v in expected["sessions"].values()
    ), "the reference must promote some turns and leave others"

    rng = random.Random(seed)
    kills = 0
    for _ in range(3):
        with Memory.open(data_dir, embeddings=TopicEmbeddings()) as mem:
            remaining = len(mem.sessions.list_sessions("ended", limit=1000))
        _forget_chroma_clients()
        kills += _kill_at_random(data_dir, tmp_path / "progress", rng, remaining)
        _forget_chroma_clients()
    assert kills >= 2, "the kills must land before the promotion finished"

    with Memory.open(data_dir, embeddings=TopicEmbeddings()) as mem:
        halfway = snapshot(mem)
        # Whatever the kills interrupted, each session is either wholly promoted or not at all.
        for sid, (state, _n, n_promoted, turns) in halfway["sessions"].items():
            keys = {t[2] for t in turns if t[2]}
            assert len(keys) == n_promoted and keys == {k for k in halfway["memories"] if k.startswith(f"{sid}:")}
            assert state == "promoted" or not keys
        promote_in_order(mem)
        for sid in promoted:  # promoting again promotes nothing
            assert mem.sessions.promote_to_longterm(sid) == []
        got = snapshot(mem)
        assert got == expected
        # Each memory's vectors are its chunks' embeddings, Chroma holds exactly those and each finds
        # itself; listing and filters agree.
        emb = TopicEmbeddings()
        with mem.store.catalog.read() as conn:
            ids = dict(conn.execute("SELECT key, id FROM items"))
            vectors = _item_rows.load_vectors(conn, list(ids.values()))
        for key, (_content, _importance, chunks, session_id, _parents) in got["memories"].items():
            stored = np.stack([np.frombuffer(v, dtype=np.float32) for _i, _p, v in vectors[ids[key]]])
            want = np.asarray(emb.embed_documents(chunks), dtype=np.float32)
            assert stored.shape == want.shape and np.allclose(
                stored / np.linalg.norm(stored, axis=1, keepdims=True),
                want / np.linalg.norm(want, axis=1, keepdims=True),
                atol=1e-5,
            )
            by_session = mem.store.search(("episodes",), filter={"session_id": session_id}, limit=100)
            assert key in {it.key for it in by_session}
        assert index_problems(mem.store) == []
        stats = mem.stats()
        assert stats.promoted_turns == len(expected["memories"])
        assert stats.session_turns == sum(v[1] for v in expected["sessions"].values())
