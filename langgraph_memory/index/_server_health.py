"""Whether a Chroma server is answering, and when to try it again after it stopped.

A Chroma server that is down (stopped, killed, restarting) or that lost its
data (restarted on an empty directory) is not damage: the catalog holds every
vector, so the index only has to catch up once the server answers again.
`ServerHealth` remembers the outage and spaces the attempts out (so a
search during an outage does not wait on a dead server each time, and the
index is tried again within `MAX_BACKOFF` seconds of the server's return);
`unreachable()` and `missing()` tell those errors from real ones.

    >>> health = ServerHealth(clock=lambda: 100.0)
    >>> health.failed("refused"); health.trouble, health.may_try()
    (True, False)
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable

__all__ = ["ServerHealth", "unreachable", "missing", "MAX_BACKOFF"]

#: The longest wait between two attempts on a server that stopped answering (seconds).
MAX_BACKOFF = 2.0
_FIRST_BACKOFF = 0.25
# httpx/httpcore error names (ends of) that mean no answer: not imported, so this costs no import.
_HTTP_DOWN = ("ConnectError", "ReadError", "WriteError", "ProtocolError", "Timeout", "TimeoutException", "NetworkError")
_DOWN_ERRNOS = {errno.ECONNREFUSED, errno.ECONNRESET, errno.ECONNABORTED, errno.EPIPE, errno.EHOSTUNREACH}


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` means the server did not answer (refused, reset, timed out, went away mid-request)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        module = type(cur).__module__ or ""
        if module.startswith(("httpx", "httpcore")) and type(cur).__name__.endswith(_HTTP_DOWN):
            return True
        if isinstance(cur, (ConnectionError, TimeoutError)) or getattr(cur, "errno", None) in _DOWN_ERRNOS:
            return True
        text = str(cur)
        if "Connection refused" in text or "Server disconnected" in text or "502 Bad Gateway" in text:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def missing(exc: BaseException) -> bool:
    """Whether ``exc`` says a collection does not exist (the server lost it, or another machine replaced it)."""
    return type(exc).__name__ in ("NotFoundError", "InvalidCollectionException") or "does not exist" in str(exc)


class ServerHealth:
    """The state of one server: answering, or down since when and next tried when.

    ``lost`` means the server answers but may have lost records (it was down,
    or a collection was missing): the index must be compared with the catalog
    before it is trusted again.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.down_since: float | None = None
        self.retry_at = 0.0
        self._backoff = _FIRST_BACKOFF
        #: The server (or a collection) must be checked against the catalog before it is trusted.
        self.lost = False
        #: What the last failure said.
        self.reason = ""
        #: How many outages were recovered from.
        self.recoveries = 0

    @property
    def trouble(self) -> bool:
        """The server was down or lost records, and has not been caught up since."""
        return self.down_since is not None or self.lost

    def may_try(self) -> bool:
        """Whether it is time to try the server again (always, when it is answering)."""
        return self.down_since is None or self._clock() >= self.retry_at

    def failed(self, reason: str) -> None:
        """The server did not answer: wait a little longer before the next attempt."""
        now = self._clock()
        if self.down_since is None:
            self.down_since = now
            self._backoff = _FIRST_BACKOFF
        else:
            self._backoff = min(MAX_BACKOFF, self._backoff * 2)
        self.retry_at = now + self._backoff
        self.lost = True
        self.reason = reason

    def mark_lost(self, reason: str) -> None:
        """The server answers, but a collection is missing: catch up before trusting it."""
        self.lost = True
        self.reason = reason

    def recovered(self) -> None:
        """The index was compared with the catalog and caught up."""
        if self.trouble:
            self.recoveries += 1
        self.down_since = None
        self.lost = False
        self.reason = ""
        self._backoff = _FIRST_BACKOFF

    def down_for(self) -> float:
        """Seconds since the server stopped answering (0 when it answers)."""
        return 0.0 if self.down_since is None else self._clock() - self.down_since
