"""What agent-facing tools accept: one set of checks for the MCP server and the LangChain tools.

An agent (an LLM choosing arguments) calls these tools, so every argument is
checked before anything is embedded or written, and a bad one raises a typed
error whose message tells the agent what to send instead:

* content: a non-empty string (whitespace alone is empty);
* tags: at most `MAX_TAGS` (10) strings of
  at most `MAX_TAG_CHARS` (50) characters;
* a search limit: a whole number from 1 to
  `MAX_SEARCH_LIMIT` (20).

::

    from langgraph_memory.research.validation import check_content, check_limit, check_tags

    check_content("User prefers TypeScript")          # returns the text
    check_tags(["preference", "language"])            # returns the tags as a list
    check_limit(5)                                    # returns 5
    check_limit(50)                                   # InvalidArgumentError: limit must be 1-20
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field

from langgraph_memory.config import MAX_SEARCH_LIMIT, MAX_TAG_CHARS, MAX_TAGS
from langgraph_memory.errors import InvalidArgumentError, ValidationError

__all__ = ["Text", "Tags", "Limit", "check_content", "check_tags", "check_limit"]

# The same limits as types: an agent reads them in each tool's JSON schema (MCP), and the checks below
# enforce them with one message for every entry point.
Limit = Annotated[
    int,
    Field(
        description=f"how many results, 1-{MAX_SEARCH_LIMIT}",
        json_schema_extra={"minimum": 1, "maximum": MAX_SEARCH_LIMIT},
    ),
]
Tags = Annotated[
    list[str] | None,
    Field(
        description=f"at most {MAX_TAGS} tags of at most {MAX_TAG_CHARS} characters",
        json_schema_extra={"maxItems": MAX_TAGS},
    ),
]
Text = Annotated[str, Field(description="the text; not empty", json_schema_extra={"minLength": 1})]


def check_content(content: Any, *, field: str = "content") -> str:
    """``content`` if it is a string with something besides whitespace, else `ValidationError`.

    Examples:
        >>> check_content("  ")
        Traceback (most recent call last):
        ...
        langgraph_memory.errors.ValidationError: content must not be empty: send the text to remember
    """
    if not isinstance(content, str):
        raise ValidationError(f"{field} must be a string, got {type(content).__name__}")
    if not content.strip():
        raise ValidationError(f"{field} must not be empty: send the text to remember")
    return content


def check_tags(tags: Sequence[str] | None, *, max_tags: int = MAX_TAGS, max_chars: int = MAX_TAG_CHARS) -> list[str]:
    """The tags as a list (``None`` is no tags), or `ValidationError` naming the bad one.

    Examples:
        >>> check_tags(["risk", "fx"])
        ['risk', 'fx']
        >>> check_tags(["x" * 51])
        Traceback (most recent call last):
        ...
        langgraph_memory.errors.ValidationError: tag 1 has 51 characters; each tag may have at most 50
    """
    if tags is None:
        return []
    if isinstance(tags, str) or not isinstance(tags, Sequence):
        raise ValidationError(f"tags must be a list of strings, got {type(tags).__name__}")
    out = list(tags)
    if len(out) > max_tags:
        raise ValidationError(f"{len(out)} tags given; at most {max_tags} are allowed")
    for i, tag in enumerate(out, 1):
        if not isinstance(tag, str):
            raise ValidationError(f"tag {i} must be a string, got {type(tag).__name__}")
        if not tag.strip():
            raise ValidationError(f"tag {i} is empty; drop it or give it a name")
        if len(tag) > max_chars:
            raise ValidationError(f"tag {i} has {len(tag)} characters; each tag may have at most {max_chars}")
    return out


def check_limit(limit: Any, *, maximum: int = MAX_SEARCH_LIMIT) -> int:
    """``limit`` if it is a whole number from 1 to ``maximum`` (20), else `InvalidArgumentError`.

    Examples:
        >>> check_limit(20)
        20
        >>> check_limit(0)
        Traceback (most recent call last):
        ...
        langgraph_memory.errors.InvalidArgumentError: limit must be a whole number from 1 to 20, got 0
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= maximum:
        raise InvalidArgumentError(f"limit must be a whole number from 1 to {maximum}, got {limit!r}")
    return limit
