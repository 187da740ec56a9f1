"""The conversation node: records each turn of a chat graph in session memory, hands back a budgeted buffer.

A "conversation buffer" beside the checkpointer. Added to any graph
whose state has a ``messages`` list, it records every completed turn (a
human message and the assistant's final answer to it) into
[`SessionMemory`][langgraph_memory.SessionMemory] with the run's thread id,
and writes the recent turns, within a turn or token budget, to the state as
text for the prompt. With the recall node over ``("episodes",)``, a chat
graph gets long-term memory from two added nodes:

    from langgraph_memory import Memory, conversation_node, recall_node

    mem = Memory.open("./memory")
    builder = StateGraph(MessagesState)        # plus "conversation: str" and "memories: list" keys
    builder.add_node("recall", recall_node(("episodes",), query=last_human_text, output_key="memories"))
    builder.add_node("chat", chat_model_node)
    builder.add_node("conversation", conversation_node(mem.sessions, max_tokens=1500))
    builder.add_edge(START, "recall"); builder.add_edge("recall", "chat")
    builder.add_edge("chat", "conversation"); builder.add_edge("conversation", END)
    graph = mem.compile(builder)
    graph.invoke({"messages": [("user", "My risk limit is 2% per trade")]}, {"configurable": {"thread_id": "t1"}})

Placed after the model, the node records the turn just answered; placed
before it, the previous one (a turn is recorded once it has its answer).
Recording is idempotent: each turn is recorded with a source made of its
messages' ids (or, for messages without ids, of their place and text), so
running the node again over the same history records nothing twice. A
thread's earlier turns not recorded yet (the node added to a running
thread) are recorded too, up to ``max_turns_per_session`` of them.

This module does not use ``from __future__ import annotations``, like
`langgraph_memory.graph.nodes`: LangGraph reads node signatures at run time.
"""

import asyncio
import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig

from langgraph_memory.catalog.sessions import SessionTurn
from langgraph_memory.errors import ConfigError, ValidationError
from langgraph_memory.graph.nodes import _runnable
from langgraph_memory.sessions import SessionMemory

__all__ = ["conversation_node", "format_buffer", "approx_tokens", "last_human_text", "Exchange", "exchanges"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Exchange:
    """One completed turn found in a message list: the human's text, the answer, and a source id."""

    user: str
    assistant: str
    source: str


def approx_tokens(text: str) -> int:
    """About four characters per token (English text); pass a model's tokenizer as ``token_counter`` for exact counts.

    Examples:
        >>> approx_tokens("four score and seven years ago")
        8
    """
    return max(1, -(-len(text) // 4))


def _text(message: BaseMessage) -> str:
    return str(message.text).strip()


def _messages(raw: Any) -> list[BaseMessage]:
    if raw is None:
        return []
    if not isinstance(raw, (list, tuple)):
        raise ValidationError(f"the messages state key must hold a list of messages, got {type(raw).__name__}")
    try:
        return list(convert_to_messages(raw))
    except (ValueError, TypeError, NotImplementedError) as exc:
        raise ValidationError(f"the messages state key holds something that is not a message: {exc}") from None


def exchanges(messages: Sequence[Any], thread_id: str | None = None) -> list[Exchange]:
    """The completed turns of ``messages``, oldest first.

    A turn is a human message and the last AI message with text and no tool
    calls before the next human message (tool calls and their results in
    between are the assistant's work, not the turn). A human message not
    answered yet is not a turn.

    Examples:
        >>> [(e.user, e.assistant) for e in exchanges([("user", "hi"), ("ai", "hello"), ("user", "and?")])]
        [('hi', 'hello')]
    """
    msgs = _messages(list(messages))
    out: list[Exchange] = []
    human: tuple[int, HumanMessage] | None = None
    answer: AIMessage | None = None

    def close() -> None:
        if human is not None and answer is not None:
            pos, h = human
            out.append(Exchange(_text(h), _text(answer), _source(thread_id, pos, h, answer)))

    for pos, msg in enumerate(msgs):
        if isinstance(msg, HumanMessage):
            close()
            human, answer = (pos, msg), None
        elif isinstance(msg, AIMessage) and human is not None and not msg.tool_calls and _text(msg):
            answer = msg
    close()
    return [e for e in out if e.user or e.assistant]


def _source(thread_id: str | None, pos: int, human: BaseMessage, answer: BaseMessage) -> str:
    """The turn's id: the thread and both messages' ids, or (without ids) a hash of their place and text."""
    if human.id and answer.id:
        ident = f"{human.id}:{answer.id}"
    else:
        digest = hashlib.sha256(f"{pos}\x1f{_text(human)}\x1f{_text(answer)}".encode()).hexdigest()[:24]
        ident = f"pos{pos}:{digest}"
    return f"conversation:{thread_id or ''}:{ident}"


def last_human_text(state: Any) -> str | None:
    """The text of the last human message of ``state["messages"]`` (a ``recall_node`` query getter).

    Examples:
        >>> last_human_text({"messages": [("user", "what is my risk limit?"), ("ai", "2%")]})
        'what is my risk limit?'
    """
    raw = state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
    for msg in reversed(_messages(raw)):
        if isinstance(msg, HumanMessage):
            return _text(msg) or None
    return None


def format_buffer(
    turns: Sequence[SessionTurn],
    *,
    max_tokens: int | None = None,
    token_counter: Callable[[str], int] = approx_tokens,
    thread_id: str | None = None,
) -> str:
    """Turns as prompt text, newest kept first within ``max_tokens``; oldest first in the text.

    Turns of a thread other than ``thread_id`` are marked with theirs.

    Examples:
        >>> from langgraph_memory.sessions import SessionTurn
        >>> print(format_buffer([SessionTurn("s", 0, "hi", "hello", 0.0), SessionTurn("s", 1, "risk?", "2%", 1.0)],
        ...                     max_tokens=10))
        User: risk?
        Assistant: 2%
    """
    blocks: list[str] = []
    used = 0
    for turn in reversed(turns):
        lines = []
        if turn.thread_id != thread_id and turn.thread_id is not None:
            lines.append(f"[thread {turn.thread_id}]")
        if turn.user:
            lines.append(f"User: {turn.user}")
        if turn.assistant:
            lines.append(f"Assistant: {turn.assistant}")
        block = "\n".join(lines)
        cost = token_counter(block)
        if max_tokens is not None and blocks and used + cost > max_tokens:
            break
        if max_tokens is not None and not blocks and cost > max_tokens:
            break
        blocks.append(block)
        used += cost
    return "\n\n".join(reversed(blocks))


def conversation_node(
    sessions: SessionMemory,
    *,
    messages_key: str = "messages",
    output_key: str | None = "conversation",
    max_turns: int = 20,
    max_tokens: int | None = None,
    token_counter: Callable[[str], int] = approx_tokens,
    across_threads: bool = False,
    hours_back: float = 2.0,
    name: str = "conversation",
) -> Any:
    """A node that records each completed turn of ``state[messages_key]`` and writes the conversation buffer.

    Args:
        sessions: the session memory to record into (``mem.sessions``).
        messages_key: the state key holding the messages (LangGraph's ``MessagesState`` uses ``"messages"``).
        output_key: the state key that receives the buffer (a string), or None to only record.
        max_turns: the buffer holds at most this many turns.
        max_tokens: and at most this many tokens (``token_counter``), newest turns kept first.
        token_counter: counts a text's tokens (default: about four characters per token).
        across_threads: the buffer holds the recent turns of every thread (``hours_back``), not only
            this thread's current session; other threads' turns are marked with their thread.
        hours_back: how far back ``across_threads`` looks.

    The thread is the run's ``config["configurable"]["thread_id"]`` (None
    without a checkpointer). Works under ``invoke`` and ``ainvoke``.

    Examples:
        >>> builder.add_node("conversation", conversation_node(mem.sessions, max_tokens=1500))  # a line of a graph definition (builder is the caller's StateGraph)  # doctest: +SKIP
    """
    if not isinstance(sessions, SessionMemory):
        raise ConfigError(f"conversation_node needs a SessionMemory (mem.sessions), got {type(sessions).__name__}")
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise ConfigError(f"max_turns must be a whole number >= 1, got {max_turns!r}")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise ConfigError(f"max_tokens must be a whole number >= 1 or None, got {max_tokens!r}")
    backfill = sessions.config.max_turns_per_session

    def record(state: Any, config: RunnableConfig) -> dict[str, Any]:
        thread_id = (config or {}).get("configurable", {}).get("thread_id")
        thread_id = str(thread_id) if thread_id is not None else None
        raw = state.get(messages_key) if isinstance(state, dict) else getattr(state, messages_key, None)
        found = exchanges(_messages(raw), thread_id)[-backfill:]
        known = sessions.known_sources([e.source for e in found]) if found else set()
        new = []
        for e in reversed(found):  # only what came after the last turn recorded
            if e.source in known:
                break
            new.append(e)
        for e in reversed(new):
            sessions.add_turn(e.user, e.assistant, thread_id=thread_id, source=e.source)
        if output_key is None:
            return {}
        if across_threads:
            turns = sessions.get_all_recent_context(hours_back=hours_back, max_turns=max_turns)
        else:
            turns = sessions.get_session_context(max_turns=max_turns, thread_id=thread_id)
        return {
            output_key: format_buffer(turns, max_tokens=max_tokens, token_counter=token_counter, thread_id=thread_id)
        }

    async def arecord(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return await asyncio.to_thread(record, state, config)

    return _runnable(record, arecord, name)
