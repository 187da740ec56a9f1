"""The scheduled jobs of a data directory on APScheduler: the archive run, and the session cleanup.

    from langgraph_memory.archive import Archiver, schedule_archival, schedule_session_cleanup

    job = schedule_archival(Archiver(store), cron="0 3 * * *")      # 03:00 daily, own BackgroundScheduler
    job = schedule_archival(archiver, interval=3600, scheduler=my_scheduler)
    cleanup = schedule_session_cleanup(sessions, scheduler=job._scheduler)   # every 15 minutes, beside it

Each job runs with ``max_instances=1`` and ``coalesce=True``: a slow run is
never overlapped by the next one, and runs missed while the program was
down collapse into one (within ``misfire_grace_time``).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from functools import partial
from typing import Any

from langgraph_memory.errors import ConfigError, ReadOnlyError

__all__ = [
    "schedule_archival",
    "schedule_session_cleanup",
    "DEFAULT_CRON",
    "DEFAULT_JOB_ID",
    "SESSION_CLEANUP_JOB_ID",
    "run_archive_job",
]

logger = logging.getLogger(__name__)

DEFAULT_CRON = "0 3 * * *"  # daily at 03:00, when agents are usually idle
DEFAULT_JOB_ID = "langgraph-memory-archive"
DEFAULT_MISFIRE_GRACE = 3600
SESSION_CLEANUP_JOB_ID = "langgraph-memory-session-cleanup"


def _logged(what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run one scheduled job; its failure is logged here and re-raised for APScheduler."""
    try:
        report = fn(*args, **kwargs)
    except Exception:
        logger.exception("scheduled %s failed; the next run will recover", what)
        raise
    if report.errors:
        logger.error("scheduled %s finished with errors: %s", what, "; ".join(report.errors))
    return report


def run_archive_job(archiver: Any, dry_run: bool = False) -> Any:
    """What the scheduled job calls: one run, logged; errors are logged and re-raised for APScheduler."""
    return _logged("archive run", archiver.run, dry_run=dry_run)


def schedule_archival(
    archiver: Any,
    *,
    cron: str | None = None,
    interval: float | timedelta | None = None,
    scheduler: Any | None = None,
    use_asyncio: bool | None = None,
    misfire_grace_time: int = DEFAULT_MISFIRE_GRACE,
    start: bool | None = None,
    job_id: str = DEFAULT_JOB_ID,
    dry_run: bool = False,
    timezone: Any | None = None,
) -> Any:
    """Register the archive run as an APScheduler job and return the ``Job``.

    Give ``cron`` (a crontab expression) or ``interval`` (seconds or a
    ``timedelta``); neither means ``DEFAULT_CRON`` (03:00 daily). Without
    ``scheduler`` a new one is made: an ``AsyncIOScheduler`` when called
    inside a running event loop (or ``use_asyncio=True``), else a
    ``BackgroundScheduler``; it is started unless ``start=False``. A scheduler
    you pass in is started only if ``start=True``. The job's scheduler is
    ``job._scheduler``; re-scheduling with the same ``job_id`` replaces the job.

    Examples:
        >>> job = schedule_archival(archiver, interval=timedelta(hours=6))  # starts a scheduler job  # doctest: +SKIP
        >>> job.next_run_time  # starts a scheduler job  # doctest: +SKIP
    """
    if getattr(archiver, "read_only", False) and not dry_run:  # each run would fail in its thread: refuse now
        raise ReadOnlyError(
            f"the archive in {archiver.archive_dir} was opened read-only; archive runs write. Open the memory "
            "without read_only=True (--read-only) to schedule them.",
            archiver.archive_dir,
        )
    if cron is not None and interval is not None:
        raise ConfigError("schedule_archival takes cron= or interval=, not both")
    if interval is None:
        from apscheduler.triggers.cron import CronTrigger

        try:
            trigger = CronTrigger.from_crontab(cron or DEFAULT_CRON, timezone=timezone)
        except ValueError as exc:
            raise ConfigError(f"invalid cron expression {cron!r}: {exc}") from None
    else:
        trigger = _every(interval, timezone)
    run = partial(run_archive_job, archiver, dry_run=dry_run)
    job = _add_job(run, trigger, job_id, misfire_grace_time, scheduler, use_asyncio, start, timezone)
    logger.info("scheduled archive job %s (%s)", job_id, trigger)
    return job


def schedule_session_cleanup(
    sessions: Any,
    *,
    interval: float | timedelta | None = None,
    scheduler: Any | None = None,
    use_asyncio: bool | None = None,
    misfire_grace_time: int = DEFAULT_MISFIRE_GRACE,
    start: bool | None = None,
    job_id: str = SESSION_CLEANUP_JOB_ID,
    timezone: Any | None = None,
) -> Any:
    """Register ``sessions.cleanup()`` (a [`SessionMemory`][langgraph_memory.SessionMemory]) as an APScheduler job.

    It runs every ``interval`` (seconds or a ``timedelta``; default the
    sessions' ``cleanup_interval_minutes``, 15 minutes by default): it ends
    sessions whose time is up, promotes ended sessions and forgets turns
    promoted long ago. Pass the archive job's scheduler (``job._scheduler``)
    to run both on one scheduler; otherwise a scheduler is made and started
    as [`schedule_archival()`][langgraph_memory.schedule_archival] does. Returns the ``Job``.

    Examples:
        >>> job = schedule_session_cleanup(mem.sessions)  # starts a scheduler job  # doctest: +SKIP
        >>> job.trigger.interval  # starts a scheduler job  # doctest: +SKIP
        datetime.timedelta(seconds=900)
    """
    trigger = _every(interval or timedelta(minutes=sessions.config.cleanup_interval_minutes), timezone)
    run = partial(_logged, "session cleanup", sessions.cleanup)
    job = _add_job(run, trigger, job_id, misfire_grace_time, scheduler, use_asyncio, start, timezone)
    logger.info("scheduled session cleanup %s (every %s)", job_id, trigger.interval)
    return job


def _every(interval: float | timedelta, timezone: Any | None) -> Any:
    from apscheduler.triggers.interval import IntervalTrigger

    seconds = interval.total_seconds() if isinstance(interval, timedelta) else float(interval)
    if seconds <= 0:
        raise ConfigError(f"interval must be positive, got {interval!r}")
    return IntervalTrigger(seconds=seconds, timezone=timezone)


def _add_job(
    run: Any,
    trigger: Any,
    job_id: str,
    grace: int,
    scheduler: Any | None,
    use_asyncio: bool | None,
    start: bool | None,
    timezone: Any | None,
) -> Any:
    """Add one job (never overlapping itself, missed runs coalesced) to ``scheduler`` or a new one; start a new one.

    A new scheduler is an AsyncIOScheduler inside a running event loop (or if asked), else a BackgroundScheduler.
    """
    created = scheduler is None
    if scheduler is None:
        if use_asyncio if use_asyncio is not None else _in_event_loop():
            from apscheduler.schedulers.asyncio import AsyncIOScheduler as Scheduler
        else:
            from apscheduler.schedulers.background import BackgroundScheduler as Scheduler
        scheduler = Scheduler(**({"timezone": timezone} if timezone else {}))
    # A sync function: AsyncIOScheduler runs it in its thread pool, off the event loop.
    never_overlap = {"max_instances": 1, "coalesce": True, "replace_existing": True, "misfire_grace_time": grace}
    job = scheduler.add_job(run, trigger, id=job_id, name=job_id, **never_overlap)
    if (start if start is not None else created) and not scheduler.running:
        scheduler.start()
    return job


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
