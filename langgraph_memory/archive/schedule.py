"""The archive job on an APScheduler schedule.

    from langgraph_memory.archive import Archiver, schedule_archival

    job = schedule_archival(Archiver(store), cron="0 3 * * *")      # 03:00 daily, own BackgroundScheduler
    job = schedule_archival(archiver, interval=3600, scheduler=my_scheduler)

The job runs with ``max_instances=1`` and ``coalesce=True``: a slow run is
never overlapped by the next one, and runs missed while the program was
down collapse into one (within ``misfire_grace_time``).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

from langgraph_memory.errors import ConfigError

__all__ = ["schedule_archival", "DEFAULT_CRON", "DEFAULT_JOB_ID", "run_archive_job"]

logger = logging.getLogger(__name__)

DEFAULT_CRON = "0 3 * * *"  # daily at 03:00, when agents are usually idle
DEFAULT_JOB_ID = "langgraph-memory-archive"
DEFAULT_MISFIRE_GRACE = 3600


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

    Example:
        >>> job = schedule_archival(archiver, interval=timedelta(hours=6))   # doctest: +SKIP
        >>> job.next_run_time   # doctest: +SKIP
    """
    if cron is not None and interval is not None:
        raise ConfigError("schedule_archival takes cron= or interval=, not both")
    if cron is None and interval is None:
        cron = DEFAULT_CRON
    if cron is not None:
        from apscheduler.triggers.cron import CronTrigger

        try:
            trigger: Any = CronTrigger.from_crontab(cron, timezone=timezone)
        except ValueError as exc:
            raise ConfigError(f"invalid cron expression {cron!r}: {exc}") from None
    else:
        from apscheduler.triggers.interval import IntervalTrigger

        seconds = interval.total_seconds() if isinstance(interval, timedelta) else float(interval)  # type: ignore[arg-type]
        if seconds <= 0:
            raise ConfigError(f"interval must be positive, got {interval!r}")
        trigger = IntervalTrigger(seconds=seconds, timezone=timezone)
    created = scheduler is None
    if scheduler is None:
        if use_asyncio if use_asyncio is not None else _in_event_loop():
            from apscheduler.schedulers.asyncio import AsyncIOScheduler

            scheduler = AsyncIOScheduler(timezone=timezone) if timezone else AsyncIOScheduler()
        else:
            from apscheduler.schedulers.background import BackgroundScheduler

            scheduler = BackgroundScheduler(timezone=timezone) if timezone else BackgroundScheduler()
    # A sync function: AsyncIOScheduler runs it in its thread pool, off the event loop.
    job = scheduler.add_job(
        run_archive_job,
        trigger=trigger,
        args=[archiver],
        kwargs={"dry_run": dry_run},
        id=job_id,
        name="langgraph-memory archive run",
        max_instances=1,
        coalesce=True,
        misfire_grace_time=misfire_grace_time,
        replace_existing=True,
    )
    if (start if start is not None else created) and not scheduler.running:
        scheduler.start()
    logger.info("scheduled archive job %s (%s)", job_id, cron or f"every {trigger.interval}")
    return job
