"""Closing several resources: every one is closed, and the first failure is the one reported."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

__all__ = ["close_all", "unwind"]

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
