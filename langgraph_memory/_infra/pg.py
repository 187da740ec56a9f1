"""PostgreSQL addresses: recognising one, and printing it without its password.

>>> is_postgres_url("postgresql://alice:s3cret@db:5432/memory")
True
>>> redact("postgresql://alice:s3cret@db:5432/memory?sslmode=require")
'postgresql://alice:***@db:5432/memory?sslmode=require'
>>> is_postgres_url("./memory")
False
"""

from __future__ import annotations

import os
import re

__all__ = ["is_postgres_url", "redact", "search_path_schema"]

_SCHEMES = ("postgresql://", "postgres://")
_PASSWORD_IN_URL = re.compile(r"^(postgres(?:ql)?://[^:@/]*):[^@/]*@")
_PASSWORD_PARAM = re.compile(r"(password\s*=\s*)('[^']*'|[^\s&]*)", re.IGNORECASE)


def is_postgres_url(address: object) -> bool:
    """Whether ``address`` is a ``postgresql://`` (or ``postgres://``) address."""
    if isinstance(address, os.PathLike):
        return False
    return isinstance(address, str) and address.strip().lower().startswith(_SCHEMES)


def redact(address: str) -> str:
    """``address`` with any password (in the authority or as a ``password=`` parameter) replaced by ``***``."""
    out = _PASSWORD_IN_URL.sub(r"\1:***@", address)
    return _PASSWORD_PARAM.sub(r"\1***", out)


_SEARCH_PATH = re.compile(r"-c\s*search_path\s*=\s*([A-Za-z_][A-Za-z0-9_]*)")


def search_path_schema(address: str) -> str | None:
    """The first schema of a ``search_path`` set in the address's ``options`` (None when it sets none).

    Several memories can share one database, each in its own schema
    (``?options=-csearch_path%3Dname``); the catalog's tables and the
    checkpointer's then both live in that schema.
    """
    from urllib.parse import unquote

    match = _SEARCH_PATH.search(unquote(address))
    return match[1] if match else None
