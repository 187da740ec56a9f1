"""SessionMemory: short-term memory of conversations, durable in the catalog, promoted to episodic memory.

Every turn is committed before ``add_turn`` returns (``docs/sessions.md`` has the whole story). Sessions follow
each other per *channel*: the session memory's namespace and a thread id (None is a channel too). A turn starts
a new session when the current one has ended by one of these boundaries, checked in this order (the first that
holds is recorded as ``end_reason``):

* ``forced``: ``add_turn(..., force_new_session=True)``;
* ``inactivity``: ``inactivity_threshold_minutes`` (30) or more since its last turn;
* ``max_duration``: ``duration_hours`` (2) or more since it started;
* ``max_turns``: it holds ``max_turns_per_session`` (50) turns;
* ``topic_change``: the cosine similarity of this turn's embedding with the
  previous turn's is under ``topic_change_threshold`` (0.3).

An ended session is promoted (`langgraph_memory.sessions.importance` scores its turns,
`langgraph_memory.sessions.promotion` stores the important ones) in the transaction that marks it promoted,
so each turn is promoted once, whatever crashes or reruns. Every call has an async twin with an ``a`` prefix.
"""

from __future__ import annotations

import logging
import sqlite3
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
from langgraph.store.base import PutOp

from langgraph_memory.catalog import sessions as _s
from langgraph_memory.catalog.sessions import Decision, Session, SessionState, SessionTurn
from langgraph_memory.errors import ConfigError, InvalidArgumentError, NotFoundError
from langgraph_memory.research.collections import collection_for
from langgraph_memory.research.typed import athread
from langgraph_memory.sessions import promotion as _promo
from langgraph_memory.sessions.config import EPISODES_NAMESPACE, SessionConfig
from langgraph_memory.sessions.importance import score_session
from langgraph_memory.store import ChromaStore
from langgraph_memory.store.namespaces import validate_namespace

__all__ = ["SessionMemory", "CleanupReport"]

logger = logging.getLogger(__name__)


@dataclass
class CleanupReport:
    """What one [`SessionMemory.cleanup()`][langgraph_memory.SessionMemory.cleanup] did."""

    #: Sessions whose time was up (inactivity or duration), ended now.
    ended: list[str] = field(default_factory=list)
    #: Sessions promoted now (ended by this run or before).
    promoted_sessions: list[str] = field(default_factory=list)
    #: Turns that became episodic memories.
    promoted_turns: int = 0
    #: Turns of long-promoted sessions forgotten.
    purged_turns: int = 0
    #: Sessions that could not be promoted (they stay ended; the next run tries again).
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


class _AlreadyPromoted(Exception):
    """Raised inside a promotion's transaction to roll it back: another run promoted the session first."""


def _text(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be a string, got {type(value).__name__}")
    return value


def _optional_id(name: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{name} must be a non-empty string or None, got {value!r}")
    return value


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{name} must be a whole number >= 1, got {value!r}")
    return value


class SessionMemory:
    """Conversation turns by session, in the catalog; important ones promoted to episodic memory.

    Args:
        store: the data directory's store (its catalog holds the sessions; its
            model embeds turns; promoted turns are stored through it).
        config: boundaries, promotion and cleanup settings (the defaults of `SessionConfig`).
        namespace: where promoted turns are stored (``("episodes",)``; ``Memory``
            adds its scope labels). Sessions of other namespaces are not seen.
        clock: seconds since the epoch (a fake clock in tests, a simulated one in a replay).
        guard: called before every operation (``Memory`` raises there once closed).

    Examples:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> import tempfile
        >>> from langgraph_memory import ChromaStore
        >>> store = ChromaStore(data_dir=tempfile.mkdtemp(), index={"dims": 8, "embed": DeterministicFakeEmbedding(size=8)})
        >>> sessions = SessionMemory(store)
        >>> sid = sessions.add_turn("My broker is Interactive Brokers", "Got it.", thread_id="t1")
        >>> [t.user for t in sessions.get_session_context(thread_id="t1")]
        ['My broker is Interactive Brokers']
        >>> store.close()
    """

    def __init__(
        self,
        store: ChromaStore,
        config: SessionConfig | None = None,
        *,
        namespace: Sequence[str] = EPISODES_NAMESPACE,
        clock: Callable[[], float] = time.time,
        guard: Callable[[], None] | None = None,
    ) -> None:
        if not isinstance(store, ChromaStore):
            raise ConfigError(
                f"SessionMemory needs a ChromaStore (its catalog holds the sessions), got {type(store).__name__}"
            )
        if config is not None and not isinstance(config, SessionConfig):
            raise ConfigError(f"config must be a SessionConfig, got {type(config).__name__}")
        ns = validate_namespace(tuple(namespace), for_write=True)
        spec = collection_for(ns)
        if spec.typed:
            raise ConfigError(
                f"namespace {ns!r} belongs to the typed collection {spec.name!r}; promoted turns need a namespace "
                "of the general collection, such as ('episodes',)"
            )
        self.store = store
        self.catalog = store.catalog
        self.config = config or SessionConfig()
        self.namespace: tuple[str, ...] = ns
        self.collection = spec.name
        self.clock = clock
        self._guard = guard

    def _check(self) -> None:
        if self._guard is not None:
            self._guard()

    # ------------------------------------------------------------ turns

    def add_turn(
        self,
        user: str,
        assistant: str,
        force_new_session: bool = False,
        *,
        thread_id: str | None = None,
        source: str | None = None,
        importance: float | None = None,
    ) -> str:
        """Record one turn and return the id of the session it joined (a new one after a boundary).

        Args:
            user: what the user said.
            assistant: what the assistant answered (either side may be empty, not both).
            force_new_session: end the current session of the thread and start a new one.
            thread_id: the conversation's thread (the checkpointer's ``thread_id``).
            source: an id of the turn's origin (e.g. its message ids), unique across the data
                directory: recording the same source again records nothing and returns its session.
            importance: the turn's importance (0 to 1), used as is instead of the rule's score.

        The turn is committed before this returns. A turn that ends the
        current session promotes it first when ``promote_on_end`` is set (a
        failure there is logged; the cleanup job tries again).

        Raises:
            InvalidArgumentError: a side is not a string, both are empty, or an argument is malformed.
        """
        self._check()
        user, assistant = _text("user", user), _text("assistant", assistant)
        if not (user.strip() or assistant.strip()):
            raise InvalidArgumentError("a turn needs text on at least one side (user or assistant)")
        thread_id = _optional_id("thread_id", thread_id)
        source = _optional_id("source", source)
        if importance is not None and (
            isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 0.0 <= importance <= 1.0
        ):
            raise InvalidArgumentError(f"importance must be a number from 0 to 1 or None, got {importance!r}")
        if source is not None:
            with self.catalog.read() as conn:
                found = _s.find_source(conn, source)
            if found is not None:
                return found[0]
        vec = self._embed(user, assistant)
        now = self.clock()
        ended: str | None = None
        with self.catalog.write() as conn:
            if source is not None and (found := _s.find_source(conn, source)) is not None:
                return found[0]
            session = _s.current(conn, self.namespace, thread_id)
            if session is not None:
                boundary = self._boundary(conn, session, vec, now, force_new_session)
                if boundary is not None:
                    reason, ended_at = boundary
                    _s.end(conn, session.id, reason, ended_at=ended_at)
                    ended, session = session.id, None
            if session is None:
                session = _s.create(conn, uuid.uuid4().hex, self.namespace, thread_id, now=now)
            _s.add_turn(
                conn,
                session,
                user,
                assistant,
                at=now,
                vec=vec,
                source=source,
                pinned=None if importance is None else float(importance),
            )
        if ended is not None:
            logger.debug("session %s ended; %s started", ended, session.id)
            if self.config.promote_on_end:
                try:
                    self._promote(ended)
                except Exception:  # noqa: BLE001 - the turn is recorded; cleanup promotes the session later
                    logger.exception("could not promote session %s now; the cleanup job will try again", ended)
        return session.id

    def _embed(self, user: str, assistant: str) -> bytes | None:
        """The turn's embedding, unit length, as float32 bytes (None without a model)."""
        emb = self.store.cached_embeddings
        if emb is None:
            return None
        vec = np.asarray(emb.embed_documents(["\n".join(p for p in (user, assistant) if p)])[0], dtype=np.float32)
        norm = float(np.linalg.norm(vec))
        return (vec / norm if norm > 0 else vec).tobytes()

    def _boundary(
        self, conn: sqlite3.Connection, session: Session, vec: bytes | None, now: float, forced: bool
    ) -> tuple[str, float] | None:
        """Why ``session`` ends before a turn at ``now`` (and when it ended), or None if the turn joins it."""
        cfg = self.config
        if forced:
            return "forced", now
        if now - session.last_turn_at >= cfg.inactivity_seconds:
            return "inactivity", min(now, session.last_turn_at + cfg.inactivity_seconds)
        if now - session.started_at >= cfg.duration_seconds:
            return "max_duration", min(now, session.started_at + cfg.duration_seconds)
        if session.n_turns >= cfg.max_turns_per_session:
            return "max_turns", now
        if vec is not None and session.n_turns:
            last = _s.turns(conn, session.id, limit=1, with_vectors=True)
            prev = last[0].vector if last else None
            if prev is not None and len(prev) == len(vec):
                sim = float(np.frombuffer(prev, dtype=np.float32) @ np.frombuffer(vec, dtype=np.float32))
                if sim < cfg.topic_change_threshold:
                    return "topic_change", now
        return None

    # ---------------------------------------------------------- reading

    def _expired(self, session: Session, now: float) -> bool:
        cfg = self.config
        return (
            session.state != "active"
            or now - session.last_turn_at >= cfg.inactivity_seconds
            or now - session.started_at >= cfg.duration_seconds
        )

    def get_session_context(
        self,
        session_id: str | None = None,
        max_turns: int = 20,
        include_expired: bool = False,
        *,
        thread_id: str | None = None,
    ) -> list[SessionTurn]:
        """The last ``max_turns`` turns of a session, oldest first.

        Without ``session_id``: the current session of ``thread_id``; with
        ``include_expired`` also the turns of the thread's earlier sessions
        still held. A session that has ended (or whose time is up, before
        cleanup ends it) gives no turns unless ``include_expired``.

        Raises:
            NotFoundError: ``session_id`` is not a session of this namespace.
        """
        self._check()
        max_turns = _count("max_turns", max_turns)
        thread_id = _optional_id("thread_id", thread_id)
        now = self.clock()
        with self.catalog.snapshot() as conn:
            if session_id is not None:
                session = self._session(conn, session_id)
                if not include_expired and self._expired(session, now):
                    return []
                return _s.turns(conn, session.id, limit=max_turns)
            if include_expired:
                return _s.channel_turns(conn, self.namespace, thread_id, limit=max_turns)
            current = _s.current(conn, self.namespace, thread_id)
            if current is None or self._expired(current, now):
                return []
            return _s.turns(conn, current.id, limit=max_turns)

    def get_all_recent_context(self, hours_back: float = 2.0, max_turns: int = 50) -> list[SessionTurn]:
        """The last ``max_turns`` turns recorded in the past ``hours_back`` hours, across sessions and threads, oldest first."""
        self._check()
        if isinstance(hours_back, bool) or not isinstance(hours_back, (int, float)) or not hours_back > 0:
            raise InvalidArgumentError(f"hours_back must be a positive number, got {hours_back!r}")
        max_turns = _count("max_turns", max_turns)
        with self.catalog.read() as conn:
            return _s.recent_turns(conn, self.namespace, since=self.clock() - hours_back * 3600.0, limit=max_turns)

    def session(self, session_id: str) -> Session:
        """One session of this namespace.

        Raises:
            NotFoundError: no such session here.
        """
        self._check()
        with self.catalog.read() as conn:
            return self._session(conn, session_id)

    def _session(self, conn: sqlite3.Connection, session_id: str) -> Session:
        found = _s.get(conn, session_id) if isinstance(session_id, str) else None
        if found is None or found.namespace != self.namespace:
            raise NotFoundError(f"no session {session_id!r} in namespace {self.namespace!r}")
        return found

    def current_session(self, thread_id: str | None = None) -> Session | None:
        """The active session of ``thread_id`` (None when there is none, or its time is up)."""
        self._check()
        thread_id = _optional_id("thread_id", thread_id)
        with self.catalog.read() as conn:
            session = _s.current(conn, self.namespace, thread_id)
        return None if session is None or self._expired(session, self.clock()) else session

    def list_sessions(self, state: SessionState | None = None, *, limit: int = 100) -> list[Session]:
        """Sessions of this namespace, most recent activity first (``state``: active, ended or promoted)."""
        self._check()
        if state is not None and state not in ("active", "ended", "promoted"):
            raise InvalidArgumentError(f"state must be 'active', 'ended', 'promoted' or None, got {state!r}")
        limit = _count("limit", limit)
        with self.catalog.read() as conn:
            states: list[SessionState] = [state] if state else ["active", "ended", "promoted"]
            found = [s for st in states for s in _s.in_state(conn, self.namespace, st)]
        return sorted(found, key=lambda s: (-s.last_turn_at, s.id))[:limit]

    def known_sources(self, sources: Sequence[str]) -> set[str]:
        """Which of ``sources`` were recorded already (as ``add_turn(source=...)``), even if forgotten since."""
        self._check()
        with self.catalog.read() as conn:
            return _s.known_sources(conn, list(sources))

    # -------------------------------------------------------- promotion

    def promote_to_longterm(self, session_id: str | None = None, *, end_active: bool = False) -> list[SessionTurn]:
        """Promote ended sessions: their important turns become episodic memories; return the turns promoted.

        Without ``session_id``: every session of this namespace that has
        ended, after ending those whose time is up (and, with ``end_active``,
        every active one). With ``session_id``: that session, ended first if
        it is active (``end_reason="closed"``). A session is promoted once:
        promoting again (or after a crash, whichever part of the promotion it
        interrupted) promotes nothing twice and loses nothing.

        Raises:
            NotFoundError: ``session_id`` is not a session of this namespace.
        """
        self._check()
        now = self.clock()
        with self.catalog.write() as conn:
            if session_id is not None:
                session = self._session(conn, session_id)
                if session.state == "active":
                    _s.end(conn, session.id, "closed", ended_at=now)
                todo = [session.id]
            else:
                self._end_expired(conn, now)
                if end_active:
                    for s in _s.in_state(conn, self.namespace, "active"):
                        _s.end(conn, s.id, "closed", ended_at=now)
                todo = [s.id for s in _s.in_state(conn, self.namespace, "ended")]
        return [turn for sid in todo for turn in self._promote(sid)]

    def _end_expired(self, conn: sqlite3.Connection, now: float) -> list[str]:
        cfg = self.config
        ended = []
        for s, why in _s.expired(
            conn, self.namespace, idle_before=now - cfg.inactivity_seconds, started_before=now - cfg.duration_seconds
        ):
            at = s.last_turn_at + cfg.inactivity_seconds if why == "inactivity" else s.started_at + cfg.duration_seconds
            if _s.end(conn, s.id, why, ended_at=min(now, at)):
                ended.append(s.id)
        return ended

    def _nearest_memory(self, vec: np.ndarray, session_id: str) -> float:
        """The highest cosine of ``vec`` with a memory of this namespace (not one of this session's)."""
        mine = f"{session_id}:"
        hits = self.store.search_by_vector(self.namespace, vec, limit=1, exclude=lambda _ns, key: key.startswith(mine))
        return max((float(h.score) for h in hits if h.score is not None), default=0.0)

    def _promote(self, session_id: str) -> list[SessionTurn]:
        """Score an ended session's turns and store the important ones, with the promoted mark, in one transaction."""
        with self.catalog.snapshot() as conn:
            session = _s.get(conn, session_id)
            if session is None or session.state != "ended":
                return []
            turns = _s.turns(conn, session_id, with_vectors=True)
        cfg = self.config
        vectors = None
        if self.store.cached_embeddings is not None and turns and all(t.vector for t in turns):
            vectors = np.stack([np.frombuffer(t.vector or b"", dtype=np.float32) for t in turns])
        memory_sims = (
            [self._nearest_memory(v, session_id) for v in vectors] if vectors is not None else [0.0] * len(turns)
        )
        scored = score_session([t.content for t in turns], vectors, memory_sims, cfg)
        decisions: list[Decision] = []
        ops: list[PutOp] = []
        promoted: list[SessionTurn] = []
        index: list[str] | Literal[False] = ["chunks[*]"] if self.store.cached_embeddings is not None else False
        for turn, (score, signals) in zip(turns, scored, strict=True):
            if turn.pinned is not None:
                score = turn.pinned
            key = _promo.memory_key(session_id, turn.index) if score >= cfg.promotion_threshold else None
            decisions.append(Decision(turn.index, round(float(score), 4), signals.as_dict(), key))
            if key is not None:
                chunks = _promo.chunk_turn(turn.content, cfg)
                value = _promo.memory_value(turn, session, chunks, score, signals.as_dict())
                ops.append(PutOp(self.namespace, key, value, index=index))
                promoted.append(replace(turn, importance=round(float(score), 4), memory_key=key, vector=None))
        now = self.clock()
        keys = [op.key for op in ops]

        def mark(conn: sqlite3.Connection) -> None:
            if not _s.mark_promoted(conn, session_id, decisions, now=now):
                raise _AlreadyPromoted(session_id)
            _promo.register_lineage(conn, session, self.collection, self.namespace, keys)

        try:
            if ops:
                self.store.items.put_many(ops, before=mark)
            else:
                with self.catalog.write() as conn:
                    mark(conn)
        except _AlreadyPromoted:
            logger.debug("session %s was promoted by another run", session_id)
            return []
        logger.info("promoted session %s: %d of %d turns", session_id, len(promoted), len(turns))
        return promoted

    # ---------------------------------------------------------- cleanup

    def cleanup(self) -> CleanupReport:
        """End sessions whose time is up, promote every ended session, forget turns promoted long ago.

        What the scheduled job runs every ``cleanup_interval_minutes``. A
        session that fails to promote is logged and reported and stays ended
        (the next run tries again); the others go on.
        """
        self._check()
        started = time.perf_counter()
        report = CleanupReport()
        now = self.clock()
        with self.catalog.write() as conn:
            report.ended = self._end_expired(conn, now)
            todo = [s.id for s in _s.in_state(conn, self.namespace, "ended")]
        for sid in todo:
            try:
                done = self._promote(sid)
            except Exception as exc:  # noqa: BLE001 - one session's failure must not stop the others
                logger.exception("could not promote session %s; the next cleanup will try again", sid)
                report.errors.append(f"{sid}: {exc}")
                continue
            report.promoted_sessions.append(sid)
            report.promoted_turns += len(done)
        with self.catalog.write() as conn:
            report.purged_turns = _s.purge(
                conn, self.namespace, ended_before=now - self.config.retention_hours * 3600.0, now=now
            )
        report.seconds = time.perf_counter() - started
        if report.ended or report.promoted_sessions or report.purged_turns or report.errors:
            logger.info(
                "session cleanup: %d ended, %d promoted (%d turns), %d turns forgotten, %d errors",
                len(report.ended),
                len(report.promoted_sessions),
                report.promoted_turns,
                report.purged_turns,
                len(report.errors),
            )
        return report

    # ------------------------------------------------------ async twins

    aadd_turn = athread(add_turn)
    aget_session_context = athread(get_session_context)
    aget_all_recent_context = athread(get_all_recent_context)
    asession = athread(session)
    acurrent_session = athread(current_session)
    alist_sessions = athread(list_sessions)
    aknown_sources = athread(known_sources)
    apromote_to_longterm = athread(promote_to_longterm)
    acleanup = athread(cleanup)
