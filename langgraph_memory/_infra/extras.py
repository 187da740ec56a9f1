"""Optional dependencies: a feature whose extra is not installed says which extra to install.

>>> require_extra("postgres", "a memory on a PostgreSQL server")  # silent when psycopg & co are installed
"""

from __future__ import annotations

import importlib.util

from langgraph_memory.errors import MissingExtraError

__all__ = ["EXTRAS", "require_extra"]

#: The modules each extra of ``pyproject.toml`` brings that the library imports.
EXTRAS: dict[str, tuple[str, ...]] = {
    "postgres": ("psycopg", "psycopg_pool", "snowballstemmer"),
    "langchain": ("langchain",),
}


def require_extra(extra: str, feature: str) -> None:
    """Raise `MissingExtraError` naming ``extra`` when any of its modules is missing.

    Call it before importing those modules, where ``feature`` starts: the
    error then says what to install instead of ``No module named 'psycopg'``.
    """
    missing = [name for name in EXTRAS[extra] if _missing(name)]
    if missing:
        raise MissingExtraError(
            f"{feature} needs the {extra!r} extra, which is not installed ({', '.join(missing)} missing): "
            f"pip install 'langgraph-chroma-memory[{extra}]'"
        )


def _missing(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):  # a parent package missing, or a module set to None to hide it
        return True
