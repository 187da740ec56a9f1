"""Which text each of an item's vectors embeds: record paths, and the texts read back from a value.

LangGraph lets an item carry several vectors: one per index path (``fields``
or a put's ``index=[...]``), and one per text when a path such as
``"notes[*]"`` yields several. Each vector row in the catalog records its
*record path*: the index path, with ``.<i>`` appended when the path yielded
several texts (`text_path()`). The text itself is not stored twice: it is
read back from the value (`record_text()`), for the LangChain view, the
archive and the keyword index (`langgraph_memory.catalog.keywords`).

    >>> value = {"notes": ["buy the dip", "sell the rip"]}
    >>> record_text(value, text_path("notes[*]", 1))
    'sell the rip'
"""

from __future__ import annotations

from typing import Any

from langgraph.store.base.embed import get_text_at_path

__all__ = ["text_path", "split_text_path", "record_text", "text_index"]


def text_path(path: str, index: int) -> str:
    """The record path of the ``index``-th text at an index path that yields several.

    Examples:
        >>> text_path("notes[*]", 2)
        'notes[*].2'
    """
    return f"{path}.{index}"


def split_text_path(record_path: str) -> tuple[str, int | None]:
    """The index path and text number a record path names (the inverse of `text_path()`).

    A path that does not end in ``.<digits>`` is a plain index path.

    Examples:
        >>> split_text_path("notes[*].2"), split_text_path("content")
        (('notes[*]', 2), ('content', None))
    """
    base, dot, tail = record_path.rpartition(".")
    if not dot or not tail.isdigit():
        return record_path, None
    return base, int(tail)


def record_text(value: dict[str, Any], record_path: str) -> str | None:
    """The text a vector with this record path embeds, read from ``value`` (None when gone).

    Examples:
        >>> record_text({"content": "Carry unwinds"}, "content")
        'Carry unwinds'
    """
    if not record_path:
        return None
    if record_path == "$":
        texts = get_text_at_path(value, "$")
        return texts[0] if texts else None
    texts = get_text_at_path(value, record_path)
    if texts:
        return texts[0] if len(texts) == 1 else None
    base, index = split_text_path(record_path)
    if index is None:
        return None
    texts = get_text_at_path(value, base)
    return texts[index] if index < len(texts) else None


def text_index(value: dict[str, Any], path: str, text: str | None) -> int | None:
    """Which of the texts at a path ``path`` names, for a record known by path and text.

    A path that yields several texts gives each record the path
    ``text_path(path, i)``; this recovers ``i`` (None for a plain path).
    """
    base, i = split_text_path(path)
    if i is None or text is None:
        return None
    texts = get_text_at_path(value, base)
    return i if len(texts) > 1 and i < len(texts) and texts[i] == text else None
