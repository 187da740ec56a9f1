"""Closing several resources: every one is closed, and the first failure is the one reported."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

__all__ = ["close_all", "unwind", "warn_briefly"]

logger = logging.getLogger(__name__)


def close_all(steps: Iterable[Callable[[], object]]) -> None:
    """Run every step, in order, even when one fails; then raise the first failure.

    Examples:
        >>> done = []
        >>> close_all([lambda: done.append("a"), lambda: done.append("b")])
        >>> done
        ['a', 'b']
    """
    errors: list[Exception] = []
    for step in steps:
        try:
            step()
        except Exception as exc:  # close everything, then report the first failure
            errors.append(exc)
    if errors:
        raise errors[0]


def unwind(opened: Sequence[Callable[[], object]], what: str) -> None:
    """After a failed open: close what was opened, newest first, logging (not raising) what fails to close.

    The open's own exception is the one the caller re-raises; a failure to clean up must not hide it.
    """
    for close in reversed(opened):
        try:
            close()
        except Exception:  # noqa: BLE001 - the open's error is the one to report
            logger.warning("closing after a failed %s failed", what, exc_info=True)


def warn_briefly(log: logging.Logger, message: str, exc: BaseException, *args: object) -> None:
    """Log ``message`` at WARNING on one line, ending with what ``exc`` said; its traceback at DEBUG.

    For expected trouble that the library rides out (a server away, a full
    disk): a whole traceback at WARNING reads as a crash, and the reason is
    all the reader needs.

    Examples:
        >>> warn_briefly(logger, "could not apply %d changes", TimeoutError("no answer"), 3)  # logs one line
    """
    first = str(exc).strip().splitlines()
    reason = f"{type(exc).__name__}: {first[0]}" if first else type(exc).__name__
    log.warning(message + ": %s", *args, reason)
    log.debug("the failure above in full", exc_info=exc)
