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
from typing import Any

from langgraph_memory.errors import ConfigError, ReadOnlyError

__all__ = [
    "schedule_archival",
    "schedule_session_cleanup",
    "DEFAULT_CRON",
    "DEFAULT_JOB_ID",
    "SESSION_CLEANUP_JOB_ID",
    "run_archive_job",
    "run_session_cleanup",
]

logger = logging.getLogger(__name__)

DEFAULT_CRON = "0 3 * * *"  # daily at 03:00, when agents are usually idle
DEFAULT_JOB_ID = "langgraph-memory-archive"
DEFAULT_MISFIRE_GRACE = 3600
SESSION_CLEANUP_JOB_ID = "langgraph-memory-session-cleanup"


def run_archive_job(archiver: Any, dry_run: bool = False) -> Any:
    """What the scheduled job calls: one run, logged; errors are logged and re-raised for APScheduler."""
    try:
        report = archiver.run(dry_run=dry_run)
    except Exception:
        logger.exception("scheduled archive run failed; the next run will recover")
        raise
    if report.errors:
        logger.error("scheduled archive run %s finished with errors: %s", report.run_id, "; ".join(report.errors))
    return report


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


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
    if cron is None and interval is None:
        cron = DEFAULT_CRON
    trigger = _trigger(cron, interval, timezone)
    job = _add_job(
        scheduler,
        use_asyncio,
        timezone,
        start,
        run_archive_job,
        trigger,
        [archiver],
        {"dry_run": dry_run},
        job_id,
        "langgraph-memory archive run",
        misfire_grace_time,
    )
    logger.info("scheduled archive job %s (%s)", job_id, cron or f"every {trigger.interval}")
    return job


def _add_job(
    scheduler: Any | None,
    use_asyncio: bool | None,
    timezone: Any | None,
    start: bool | None,
    func: Any,
    trigger: Any,
    args: list[Any],
    kwargs: dict[str, Any],
    job_id: str,
    name: str,
    misfire_grace_time: int,
) -> Any:
    """Add one job (never overlapping itself, missed runs coalesced) to ``scheduler`` or a new one; start a new one."""
    created = scheduler is None
    scheduler = _scheduler(scheduler, use_asyncio, timezone)
    # A sync function: AsyncIOScheduler runs it in its thread pool, off the event loop.
    job = scheduler.add_job(
        func,
        trigger=trigger,
        args=args,
        kwargs=kwargs,
        id=job_id,
        name=name,
        max_instances=1,
        coalesce=True,
        misfire_grace_time=misfire_grace_time,
        replace_existing=True,
    )
    if (start if start is not None else created) and not scheduler.running:
        scheduler.start()
    return job


def _trigger(cron: str | None, interval: float | timedelta | None, timezone: Any | None) -> Any:
    """A CronTrigger for ``cron``, else an IntervalTrigger for ``interval`` (seconds or a timedelta)."""
    if cron is not None:
        from apscheduler.triggers.cron import CronTrigger

        try:
            return CronTrigger.from_crontab(cron, timezone=timezone)
        except ValueError as exc:
            raise ConfigError(f"invalid cron expression {cron!r}: {exc}") from None
    from apscheduler.triggers.interval import IntervalTrigger

    seconds = interval.total_seconds() if isinstance(interval, timedelta) else float(interval)  # type: ignore[arg-type]
    if seconds <= 0:
        raise ConfigError(f"interval must be positive, got {interval!r}")
    return IntervalTrigger(seconds=seconds, timezone=timezone)


def _scheduler(scheduler: Any | None, use_asyncio: bool | None, timezone: Any | None) -> Any:
    """``scheduler``, or a new one: an AsyncIOScheduler inside a running event loop (or if asked), else a BackgroundScheduler."""
    if scheduler is not None:
        return scheduler
    if use_asyncio if use_asyncio is not None else _in_event_loop():
        from apscheduler.schedulers.asyncio import AsyncIOScheduler

        return AsyncIOScheduler(timezone=timezone) if timezone else AsyncIOScheduler()
    from apscheduler.schedulers.background import BackgroundScheduler

    return BackgroundScheduler(timezone=timezone) if timezone else BackgroundScheduler()


def run_session_cleanup(sessions: Any) -> Any:
    """What the scheduled session job calls: one ``sessions.cleanup()``; errors logged and re-raised for APScheduler."""
    try:
        report = sessions.cleanup()
    except Exception:
        logger.exception("scheduled session cleanup failed; the next run will recover")
        raise
    if report.errors:
        logger.error(
            "scheduled session cleanup could not promote %d sessions: %s", len(report.errors), "; ".join(report.errors)
        )
    return report


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
    if interval is None:
        interval = timedelta(minutes=sessions.config.cleanup_interval_minutes)
    trigger = _trigger(None, interval, timezone)
    job = _add_job(
        scheduler,
        use_asyncio,
        timezone,
        start,
        run_session_cleanup,
        trigger,
        [sessions],
        {},
        job_id,
        "langgraph-memory session cleanup",
        misfire_grace_time,
    )
    logger.info("scheduled session cleanup %s (every %s)", job_id, trigger.interval)
    return job
