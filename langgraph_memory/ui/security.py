"""Who may look, and which requests may change anything: the UI's token, host and CSRF checks.

The rules are those of ``docs/ui.md`` ("Safety"): a token beyond loopback (the MCP server's rule), sent once as
``?token=`` and kept in an HttpOnly cookie, or as ``Authorization: Bearer``; without a token only loopback Host
names (against DNS rebinding); writes only when allowed, by POST from this server's own pages with the CSRF token
derived from the browser's CSRF cookie.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

from starlette.requests import Request

from langgraph_memory._infra.serving import is_loopback
from langgraph_memory.errors import ConfigError

__all__ = ["TOKEN_ENV", "TOKEN_COOKIE", "CSRF_COOKIE", "check_ui_bind", "read_token", "Guard"]

#: The token when no ``--token-file`` is given.
TOKEN_ENV = "LANGGRAPH_MEMORY_UI_TOKEN"
TOKEN_COOKIE = "lgm_ui_token"
CSRF_COOKIE = "lgm_csrf"
_LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def read_token(token_file: str | os.PathLike[str] | None) -> str | None:
    """The token from ``token_file`` (its first line), else ``$LANGGRAPH_MEMORY_UI_TOKEN``, else None."""
    if token_file is not None:
        path = Path(token_file).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the token file {path}: {exc.strerror or exc}") from exc
        token = text.strip().splitlines()[0].strip() if text.strip() else ""
        if not token:
            raise ConfigError(f"the token file {path} is empty; write a random token of 16+ characters in it")
        return token
    return os.environ.get(TOKEN_ENV) or None


def check_ui_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback ``host`` without a token, and any token under 16 characters (the MCP server's rules)."""
    from langgraph_memory.mcp.server import check_bind

    if not is_loopback(host) and not token:
        raise ConfigError(
            f"serving the memory browser on {host} exposes it beyond this machine: give a token of 16+ "
            f"characters with --token-file FILE (or ${TOKEN_ENV}); browsers then open it once as "
            "http://HOST:PORT/?token=TOKEN"
        )
    check_bind(host, token, allow_remote=True)


class Guard:
    """The checks of one server: its token (or None), whether writes are allowed, and its CSRF secret."""

    def __init__(self, *, token: str | None, allow_writes: bool, host: str) -> None:
        self.token = token
        self.allow_writes = allow_writes
        self.host = host
        self._secret = secrets.token_bytes(32)

    # ---------------------------------------------------------------- token

    def token_ok(self, request: Request) -> bool:
        if self.token is None:
            return True
        expected = self.token.encode()
        auth = request.headers.get("authorization", "")
        if auth.startswith("Bearer ") and hmac.compare_digest(auth[7:].encode(), expected):
            return True
        cookie = request.cookies.get(TOKEN_COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie.encode(), expected)

    def query_token_ok(self, request: Request) -> bool:
        given = request.query_params.get("token", "")
        return self.token is not None and bool(given) and hmac.compare_digest(given.encode(), self.token.encode())

    def host_ok(self, request: Request) -> bool:
        """With a token any Host is fine; without one, only loopback names (or the address bound)."""
        if self.token is not None:
            return True
        raw = request.headers.get("host", "")
        name = urlsplit(f"//{raw}").hostname or ""
        return name in _LOOPBACK_NAMES or name == self.host

    # ----------------------------------------------------------------- CSRF

    @staticmethod
    def new_csrf_cookie() -> str:
        return secrets.token_urlsafe(24)

    def csrf_token(self, cookie: str) -> str:
        """The form token that goes with a browser's CSRF cookie."""
        return hmac.new(self._secret, cookie.encode(), hashlib.sha256).hexdigest()

    def same_origin(self, request: Request) -> bool:
        """Whether the request came from a page of this server (``Origin``, else ``Referer``)."""
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        origin = request.headers.get("origin")
        if origin is not None:
            return origin == own
        referer = request.headers.get("referer")
        if referer:
            parts = urlsplit(referer)
            return f"{parts.scheme}://{parts.netloc}" == own
        return False

    def csrf_ok(self, request: Request, form_token: str | None) -> bool:
        cookie = request.cookies.get(CSRF_COOKIE, "")
        if not cookie or not form_token:
            return False
        return hmac.compare_digest(self.csrf_token(cookie), form_token)
