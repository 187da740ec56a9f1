"""Which collection an item lives in: the registry a store is given.

A store does not know any domain. It is handed a [CollectionRegistry][langgraph_memory.CollectionRegistry]
that maps a namespace's first label to a [CollectionSpec][langgraph_memory.CollectionSpec]: the Chroma
collection's name, an optional pydantic schema that values must satisfy, the field that is embedded, how fast items
decay, and when they are archived. Everything else goes to the general collection, ``memories``, and is taken as
it comes, as LangGraph's ``InMemoryStore`` takes it.

```python
from pydantic import BaseModel

from langgraph_memory.registry import CollectionRegistry, CollectionSpec


class Note(BaseModel):
    text: str


notes = CollectionRegistry([CollectionSpec("notes", "notes", Note, "text", memory_type="semantic")])
assert notes.for_namespace(("notes", "u1")).name == "notes"
assert notes.for_namespace(("other",)).name == "memories"
```
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pydantic
from pydantic import BaseModel

from langgraph_memory.errors import ConfigError, NotFoundError, ValidationError

__all__ = [
    "MemoryType",
    "RetentionPolicy",
    "CollectionSpec",
    "CollectionRegistry",
    "GENERAL",
    "PLAIN",
    "DEFAULT",
    "Default",
    "default_collections",
    "set_default_collections",
    "writing",
]

#: How an item ages: working and session memory fade fast, episodes slower, facts and procedures slowest.
MemoryType = Literal["working", "session", "episodic", "semantic"]


@dataclass(frozen=True)
class RetentionPolicy:
    """When items of a collection go to the archive.

    An item is archived once it has been inactive (neither updated nor read)
    for ``after_days``, and, when ``field`` is set, its value at ``field`` is
    below ``below`` (a missing value counts as below).
    """

    after_days: float
    field: str | None = None
    below: float | None = None

    def applies_to(self, value: dict[str, Any]) -> bool:
        """Whether the value-based part of the policy selects ``value``."""
        if self.field is None or self.below is None:
            return True
        got = value.get(self.field)
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            return True
        return bool(got < self.below)


@dataclass(frozen=True)
class CollectionSpec:
    """One Chroma collection and how the store treats it."""

    name: str
    label: str | None
    schema: type[BaseModel] | None
    embed_field: str | None
    retention: RetentionPolicy | None = None
    #: How its items decay in hybrid ranking.
    memory_type: MemoryType = "episodic"

    @property
    def typed(self) -> bool:
        return self.schema is not None

    @property
    def text_field(self) -> str:
        """The field a plain string fills (nodes, tools): the embedded field, else ``content``."""
        return self.embed_field or "content"

    def validate(self, value: dict[str, Any]) -> None:
        """Raise [ValidationError][langgraph_memory.errors.ValidationError] naming the bad field."""
        if self.schema is None:
            return
        try:
            self.schema.model_validate(value, context=_WRITE)
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '<value>'}: {_message(err)}" for err in exc.errors()
            )
            fields = sorted({str(err["loc"][0]) for err in exc.errors() if err["loc"]})
            raise ValidationError(
                f"invalid value for collection {self.name!r} (namespace label {self.label!r}): {problems}. "
                f"Fix the field(s) {', '.join(fields) or 'shown'} and put again."
            ) from None


# What `CollectionSpec.validate` tells a schema's validators: this value is being written (see `writing`).
_WRITE = {"write": True}


def writing(context: Any) -> bool:
    """Whether a schema validator runs for a write (`CollectionSpec.validate`), not for a read of a stored value.

    Checks added to a schema later (a range, say) belong to writes: what was stored before must still read.
    """
    return isinstance(context, dict) and context.get("write") is True


def _message(err: Any) -> str:
    # A validator's own message (a ValueError it raised) reads better without pydantic's "Value error, ".
    if err.get("type") == "value_error" and "error" in (err.get("ctx") or {}):
        return str(err["ctx"]["error"])
    return str(err["msg"])


#: The general collection: any value, in any namespace no typed collection claims.
GENERAL = CollectionSpec(name="memories", label=None, schema=None, embed_field=None)


class CollectionRegistry:
    """Typed collections by namespace label, plus the general collection for everything else.

    Args:
        specs: the typed collections; each needs a distinct ``label`` and ``name``.
        general: the collection for namespaces no spec claims.
    """

    def __init__(self, specs: Iterable[CollectionSpec] = (), *, general: CollectionSpec = GENERAL) -> None:
        typed: dict[str, CollectionSpec] = {}
        by_name: dict[str, CollectionSpec] = {general.name: general}
        for spec in specs:
            if spec.label is None:
                raise ConfigError(f"collection {spec.name!r} needs a namespace label")
            if spec.label in typed or spec.name in by_name:
                raise ConfigError(f"collection {spec.name!r} (label {spec.label!r}) is registered twice")
            typed[spec.label] = spec
            by_name[spec.name] = spec
        self._typed = typed
        self._by_name = by_name
        self.general = general
        # Every put asks about its label; the answer never changes (the registry is fixed once made).
        self._near: dict[str, str | None] = {}

    @property
    def typed(self) -> Mapping[str, CollectionSpec]:
        """The typed collections by namespace label."""
        return self._typed

    def __iter__(self) -> Iterator[CollectionSpec]:
        """Every collection, typed ones first, the general one last."""
        yield from self._typed.values()
        yield self.general

    def __len__(self) -> int:
        return len(self._by_name)

    def names(self) -> list[str]:
        """Every collection's name."""
        return [spec.name for spec in self]

    def for_namespace(self, namespace: tuple[str, ...]) -> CollectionSpec:
        """The collection that holds items of ``namespace`` (by its first label)."""
        if namespace:
            spec = self._typed.get(namespace[0])
            if spec is not None:
                return spec
        return self.general

    def near_label(self, label: str) -> str | None:
        """A typed collection's label one edit (or a -y/-ies plural) away from ``label`` (a likely typo), or None.

        Example:
            >>> registry.near_label("lesson")   # with a typed collection labelled "lessons"  # doctest: +SKIP
            'lessons'
        """
        if label in self._typed:
            return None
        if label in self._near:
            return self._near[label]
        near = next((typed for typed in sorted(self._typed) if _one_edit(label, typed) or _plural(label, typed)), None)
        if len(self._near) < 10_000:  # bounded: labels may be user input
            self._near[label] = near
        return near

    def by_name(self, name: str) -> CollectionSpec:
        """Look a collection up by its name or its namespace label."""
        spec = self._by_name.get(name) or self._typed.get(name)
        if spec is None:
            raise NotFoundError(
                f"no collection named {name!r}; known: {', '.join(sorted(self._by_name))}"
                + (f" (or labels {', '.join(sorted(self._typed))})" if self._typed else "")
            )
        return spec

    def __repr__(self) -> str:
        return f"CollectionRegistry({', '.join(self.names())})"


class Default(enum.Enum):
    """The type of `DEFAULT`."""

    DEFAULT = "default"


#: "Not given": a store then takes [default_collections][langgraph_memory.store.default_collections]().
DEFAULT = Default.DEFAULT

#: A plain LangGraph store: one general collection, any value in any namespace.
PLAIN = CollectionRegistry()

_default: CollectionRegistry = PLAIN


def default_collections() -> CollectionRegistry:
    """The registry a store gets when it is not given one.

    The store knows no domain: whoever wires the product sets it with `set_default_collections`. The package
    (``import langgraph_memory``) sets the research collections, so a bare ``ChromaStore()`` validates
    lessons, strategies and the rest; until something sets one, it is `PLAIN`.

    Examples:
        >>> sorted(default_collections().typed)[:3]
        ['backtests', 'hypotheses', 'lessons']
    """
    return _default


def set_default_collections(registry: CollectionRegistry) -> None:
    """Make ``registry`` the default of stores opened without ``collections=``."""
    global _default
    if not isinstance(registry, CollectionRegistry):
        raise ConfigError(f"expected a CollectionRegistry, got {registry!r}")
    _default = registry


def _plural(a: str, b: str) -> bool:
    """Whether one is the other's English plural in -ies ("strategy", "strategies")."""
    return (a.endswith("y") and b == a[:-1] + "ies") or (b.endswith("y") and a == b[:-1] + "ies")


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` becomes ``b`` by one insertion, deletion, substitution or swap of neighbours."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = next((k for k, (x, y) in enumerate(zip(short, long, strict=False)) if x != y), len(short))
    return short[i:] == long[i + 1 :]
