"""Old module paths keep importing after the package's layers moved into subpackages.

``import langgraph_memory.collections`` (and every other path in ``MOVED``)
returns the module at its new home, the very same module object, so
``isinstance`` checks, monkeypatching and logger names all agree. The alias is
resolved lazily, on first import of the old name, so the package root stays
cheap to import.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

__all__ = ["MOVED", "install"]

#: old module path -> new module path
MOVED: dict[str, str] = {
    "langgraph_memory._sqlite": "langgraph_memory._infra.sqlite",
    "langgraph_memory._lock": "langgraph_memory._infra.lock",
    "langgraph_memory._chroma": "langgraph_memory._infra.chroma",
    "langgraph_memory._conn_string": "langgraph_memory._infra.conn_string",
    "langgraph_memory.embeddings": "langgraph_memory.store.embeddings",
    "langgraph_memory.ranking": "langgraph_memory.store.ranking",
    "langgraph_memory.collections": "langgraph_memory.research.collections",
    "langgraph_memory._typed": "langgraph_memory.research.typed",
    "langgraph_memory._research_api": "langgraph_memory.research.api",
    "langgraph_memory._procedural_api": "langgraph_memory.research.procedures",
    "langgraph_memory.lineage": "langgraph_memory.research.lineage",
    "langgraph_memory.validation": "langgraph_memory.research.validation",
    "langgraph_memory.decay": "langgraph_memory.lifecycle.decay",
    "langgraph_memory.stats": "langgraph_memory.lifecycle.stats",
    "langgraph_memory.nodes": "langgraph_memory.graph.nodes",
    "langgraph_memory.tools": "langgraph_memory.graph.tools",
    "langgraph_memory.conversation": "langgraph_memory.graph.conversation",
    "langgraph_memory._mcp_tools": "langgraph_memory.mcp.tools",
    "langgraph_memory.mcp_server": "langgraph_memory.mcp.server",
}


#: names an old module had that now live elsewhere: old module -> {name: new module}
_SPLIT: dict[str, dict[str, str]] = {
    "langgraph_memory.store.ranking": {
        "MEMORY_TYPES": "langgraph_memory.research.collections",
        "memory_type_for": "langgraph_memory.research.collections",
        "MemoryType": "langgraph_memory.store.registry",
    },
}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self._target = target
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self._target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamped the alias's spec on the module; give it back its own.
        module.__spec__ = self._spec
        split = _SPLIT.get(self._target)
        if split is not None and not hasattr(module, "__getattr__"):
            module.__getattr__ = _split_getattr(self._target, split)  # type: ignore[method-assign]


def _split_getattr(name: str, split: dict[str, str]):  # noqa: ANN202 - a module-level __getattr__
    def __getattr__(attr: str) -> object:
        home = split.get(attr)
        if home is None:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        return getattr(importlib.import_module(home), attr)

    return __getattr__


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())
