"""Session memory: recent conversation turns by session, and their promotion to episodic memory.

::

    from langgraph_memory import Memory

    with Memory.open("./memory") as mem:
        mem.sessions.add_turn("Remind me: my risk limit is 2% per trade", "Noted.", thread_id="t1")
        print(mem.sessions.get_session_context(thread_id="t1"))
        mem.sessions.promote_to_longterm(end_active=True)
        print(mem.store.search(("episodes",), query="risk limit"))

The modules: `config` (``SessionConfig``, every tunable), `memory`
(``SessionMemory``: boundaries, context, promotion, cleanup),
`importance` (which turns matter, and how that was measured),
`promotion` (what a promoted turn is stored as, and its lineage); the
rows live in the catalog (`langgraph_memory.catalog.sessions`). The
conversation node that records turns from a graph is
[`langgraph_memory.graph.conversation.conversation_node()`][langgraph_memory.conversation_node]; the scheduled cleanup
is [`langgraph_memory.archive.schedule_session_cleanup()`][langgraph_memory.schedule_session_cleanup].
"""

from langgraph_memory.catalog.sessions import Session, SessionTurn
from langgraph_memory.sessions.config import EPISODES_NAMESPACE, SessionConfig
from langgraph_memory.sessions.importance import Signals
from langgraph_memory.sessions.memory import CleanupReport, SessionMemory
from langgraph_memory.sessions.promotion import SESSIONS_COLLECTION, THREADS_COLLECTION, thread_node_id

__all__ = [
    "SessionMemory",
    "SessionConfig",
    "Session",
    "SessionTurn",
    "CleanupReport",
    "Signals",
    "EPISODES_NAMESPACE",
    "SESSIONS_COLLECTION",
    "THREADS_COLLECTION",
    "thread_node_id",
]
