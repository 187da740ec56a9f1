"""Procedural memory: tool and workflow definitions, stored as JSON, versioned by name.

A tool's argument schema (JSON Schema, as LLM tool calling takes it) or a
workflow's steps are typed items of the ``tool_definitions`` collection
(namespace ``("tools", *scope)``). Storing a name again makes its next
version and supersedes the previous one in the same transaction, so
searches find the current definition only. ``Memory`` builds a
[`ProceduralAPI`][langgraph_memory.ProceduralAPI] and offers its calls directly:

    with Memory.open("/tmp/lgm-demo") as mem:
        mem.store_tool_definition("fetch_prices", "Daily closes for a ticker",
                                  parameters={"type": "object", "properties": {"ticker": {"type": "string"}}})
        mem.get_tool_definition("fetch_prices").version       # 1
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Unpack

from langgraph_memory.catalog.evidence import CutoffArgs
from langgraph_memory.config import DEFAULT_K, MIN_RELEVANCE
from langgraph_memory.errors import NotFoundError, ValidationError
from langgraph_memory.research.collections import ToolDefinition, ToolKind
from langgraph_memory.research.typed import Hit, ParentIds, TypedItems, athread, parent_list
from langgraph_memory.research.units import RELEVANCE, VERSION, check_units

__all__ = ["ProceduralAPI", "TOOL_VERSION_PREFIX", "TOOL_KINDS"]

#: Tool versions share the catalog's versions table with strategies; the prefix keeps their names apart.
TOOL_VERSION_PREFIX = "tool:"
TOOL_KINDS: tuple[str, ...] = ("tool", "workflow")


def _check_kind(kind: str) -> None:
    if kind not in TOOL_KINDS:
        raise ValidationError(f"kind must be one of {', '.join(TOOL_KINDS)}, got {kind!r}")


class ProceduralAPI:
    """Typed calls for tool and workflow definitions, over `TypedItems`.

    Examples:
        >>> from langgraph_memory.memory import Memory
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> import tempfile
        >>> with Memory.open(tempfile.mkdtemp(), embeddings=DeterministicFakeEmbedding(size=16)) as mem:
        ...     _ = mem.store_tool_definition("scan", "Find breakouts")
        ...     mem.store_tool_definition("scan", "Find breakouts on volume").version
        2
    """

    def __init__(self, typed: TypedItems) -> None:
        self.typed = typed

    def store_tool_definition(
        self,
        name: str,
        description: str,
        *,
        kind: ToolKind = "tool",
        parameters: dict[str, Any] | None = None,
        steps: Sequence[dict[str, Any]] = (),
        definition: dict[str, Any] | None = None,
        parent_id: ParentIds = None,
        tags: Sequence[str] = (),
        **extra: Any,
    ) -> ToolDefinition:
        """Store a tool (its argument JSON Schema in ``parameters``) or a workflow (its ``steps``), as JSON.

        Procedural memory. Storing a ``name`` again makes the next
        ``version``, and the previous version is superseded in the same
        transaction: searches find the current definition only.

        Examples:
            >>> tool = mem.store_tool_definition("fetch_prices", "Daily closes for a ticker",
            ...     parameters={"type": "object", "properties": {"ticker": {"type": "string"}}, "required": ["ticker"]})
            >>> tool.name, tool.version
            ('fetch_prices', 1)
        """
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("a tool definition needs a non-empty name; versions are counted per name")
        _check_kind(kind)
        parents = parent_list(parent_id)
        value = {
            **extra,
            "name": name,
            "description": description,
            "kind": kind,
            "parameters": dict(parameters or {}),
            "steps": [dict(s) for s in steps],
            "definition": dict(definition or {}),
            "parent_id": parents[0] if parents else None,
            "tags": list(tags),
        }
        return self.typed.put(  # type: ignore[return-value]
            "tools",
            value,
            [(p, "derived_from") for p in parents],
            version_name=TOOL_VERSION_PREFIX + name,
            supersede_previous=True,
        )

    @check_units
    def get_tool_definition(self, name: str, version: Annotated[int | None, VERSION] = None) -> ToolDefinition:
        """The current definition of the tool or workflow ``name`` (or its ``version``).

        Raises:
            NotFoundError: no such name or version, or it left the store.
        """
        self.typed.check_open()
        rows = self.typed.lineage.versions(TOOL_VERSION_PREFIX + name)
        if version is not None:
            rows = [r for r in rows if r.version == version]
        if not rows:
            raise NotFoundError(f"no tool definition named {name!r}" + (f" with version {version}" if version else ""))
        return self.typed.get(rows[-1].id)  # type: ignore[return-value]

    @check_units
    def query_tool_definitions(
        self,
        query: str,
        *,
        k: int = DEFAULT_K,
        kind: ToolKind | None = None,
        min_relevance: Annotated[float | None, RELEVANCE] = MIN_RELEVANCE,
        include_retired: bool = False,
        **cutoff: Unpack[CutoffArgs],
    ) -> list[Hit[ToolDefinition]]:
        """Current tool and workflow definitions most similar to ``query`` (older versions with ``include_retired``).

        A tool rests on no market data: under a ``data_cutoff`` it is undated, so only ``include_undated`` keeps it.
        """
        flt = None
        if kind is not None:
            _check_kind(kind)
            flt = {"kind": kind}
        return self.typed.search(
            "tools", query, k=k, filter=flt, min_relevance=min_relevance, include_retired=include_retired, **cutoff
        )

    astore_tool_definition = athread(store_tool_definition)
    aget_tool_definition = athread(get_tool_definition)
    aquery_tool_definitions = athread(query_tool_definitions)
