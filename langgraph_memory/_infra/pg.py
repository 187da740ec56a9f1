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

__all__ = ["is_postgres_url", "redact"]

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
