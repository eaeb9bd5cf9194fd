"""The service's recurring work, in one table, and how a host runs it without a cron line.

`SCHEDULES` names every periodic task: the digital keys' sweeper (EXPIRED with its event, then
lock commands due again: a revocation the lock service missed during an outage is re-sent),
the kiosk session purge, the Idempotency-Key purge, the outbox purge, the payments
reconciler (PENDING card payments and ledger postings), the channel holds the clock released
(pms.services.distribution.hold_releases) and the guests' data retention (each property's
rules, pms.services.privacy.retention). Each is registered with the platform's
schedule service (pms.platform.schedules, SPEC: schedules are delegated to it), and the service's
own long-running processes run them too: the `relay` process (`pms-cli outbox relay --follow`)
and the embedded runtime of `pms-cli serve` start a `SchedulerLoop` thread
(workers.runtime, cli.outbox).

Leader-safe across hosts without session state (PgBouncer transaction mode): a host runs a tick
only after moving the schedule's `due_at` on in one conditional UPDATE (`due_at <= now`) in its
own short transaction; a second host's UPDATE waits for that commit, re-reads the row and
matches nothing. No advisory lock, no lock held while the work runs. Times are the database's
(`database_now`), so hosts with skewed clocks agree. A host that dies mid-tick leaves the next
tick to whoever comes after `every`: each task is idempotent and safe to repeat.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pms.db.scope import unscoped

log = logging.getLogger("pms.scheduling")


@dataclass(frozen=True)
class Schedule:
    name: str
    every: timedelta
    description: str
    run: Callable[[Any, datetime], dict[str, int]]  # (platform, now) -> counts


def _envs() -> list[uuid.UUID]:
    from pms.relay.operations import known_envs

    return known_envs()


def _per_env(work: Callable[[Any], dict[str, int]], sub: str) -> dict[str, int]:
    """Run `work(ctx)` for every env, one env's failure logged and counted, never the others'."""
    from pms.context import system_ctx

    totals: dict[str, int] = {"envs": 0, "failed_envs": 0}
    for env in _envs():
        totals["envs"] += 1
        try:
            for key, value in work(system_ctx(env, sub=sub)).items():
                totals[key] = totals.get(key, 0) + value
        except Exception:  # noqa: BLE001 - the next tick tries this env again
            totals["failed_envs"] += 1
            log.warning("schedule %s failed for env %s", sub, env, exc_info=True)
    return totals


def _sweep_keys(platform: Any, now: datetime) -> dict[str, int]:
    from pms.services.keys.lock_sync import sweep

    return _per_env(lambda ctx: sweep(ctx, platform.locks), "schedule:digital_keys.sweep")


def _purge_kiosk_sessions(platform: Any, now: datetime) -> dict[str, int]:
    from pms.relay.operations import purge_kiosk_sessions

    return {"kiosk_sessions": purge_kiosk_sessions(_envs(), now=now)}


def _purge_idempotency(platform: Any, now: datetime) -> dict[str, int]:
    from pms.relay.operations import purge_idempotency

    return {"idempotency_records": purge_idempotency(_envs(), now=now)}


def _purge_outbox(platform: Any, now: datetime) -> dict[str, int]:
    from pms.relay.operations import purge_published

    days = platform.settings.outbox_retention_days
    return {"outbox_rows": purge_published(older_than=timedelta(days=days), now=now)}


def _reconcile(platform: Any, now: datetime) -> dict[str, int]:
    from pms.services.cashiering.ledger_postings import reconcile_postings
    from pms.services.cashiering.payments import reconcile_payments

    def one(ctx: Any) -> dict[str, int]:
        outcome = reconcile_payments(ctx, payments=platform.payments, ledger=platform.ledger)
        outcome["ledger_posted"] = reconcile_postings(ctx, platform.ledger)
        return outcome

    return _per_env(one, "schedule:cashiering.reconcile")


def _announce_releases(platform: Any, now: datetime) -> dict[str, int]:
    from pms.services.distribution.hold_releases import announce_clock_releases

    return _per_env(announce_clock_releases, "schedule:allotments.releases")


def _retention(platform: Any, now: datetime) -> dict[str, int]:
    from pms.services.privacy.retention import purge

    def one(ctx: Any) -> dict[str, int]:
        report = purge(ctx)
        return {"profiles_erased": report["profiles_erased"],
                "profiles_skipped": len(report["skipped"]),
                "registrations_cleared": report["registrations_cleared"],
                "messages_removed": report["messages_removed"]}

    return _per_env(one, "schedule:privacy.retention")


def _expire_exports(platform: Any, now: datetime) -> dict[str, int]:
    from pms.services.privacy.export_jobs import expire_archives

    return _per_env(lambda ctx: {"archives_deleted": expire_archives(ctx, store=platform.storage)},
                    "schedule:privacy.exports.expire")


SCHEDULES: tuple[Schedule, ...] = (
    Schedule("digital_keys.sweep", timedelta(minutes=2),
             "digital keys past valid_until written EXPIRED (digital_key:expired); lock "
             "commands due again re-sent (revocations missed during a lock outage)", _sweep_keys),
    Schedule("kiosk_sessions.purge", timedelta(minutes=15),
             "dead kiosk sessions past their retention deleted", _purge_kiosk_sessions),
    Schedule("idempotency.purge", timedelta(hours=1),
             "expired Idempotency-Key records deleted", _purge_idempotency),
    Schedule("outbox.purge", timedelta(hours=1),
             "published outbox rows past PMS_OUTBOX_RETENTION_DAYS deleted", _purge_outbox),
    Schedule("cashiering.reconcile", timedelta(minutes=5),
             "PENDING card payments and ledger postings finished (same idempotency keys)",
             _reconcile),
    Schedule("allotments.releases", timedelta(minutes=5),
             "channel holds that the clock released at a property without a night audit "
             "announced on the bus (hotel:pms:ari:updated), once per day",
             _announce_releases),
    Schedule("privacy.retention", timedelta(days=1),
             "each property's retention rules applied: stale guest profiles erased, "
             "registrations cleared and message bodies removed past their days",
             _retention),
    Schedule("privacy.exports.expire", timedelta(hours=1),
             "stored personal-data export archives deleted PMS_PRIVACY_EXPORT_ARCHIVE_DAYS "
             "after their export", _expire_exports),
)
BY_NAME = {s.name: s for s in SCHEDULES}


def owner_name() -> str:
    return f"{socket.gethostname()[:40]}:{os.getpid()}"


def claim(schedule: Schedule, now: datetime, owner: str) -> bool:
    """Take this tick of `schedule` if it is due: True for exactly one caller per tick."""
    from pms.db.database import db, write_begin_args
    from pms.models.schedules import ScheduleTick

    with unscoped(), db.atomic(**write_begin_args()):
        (ScheduleTick.insert(name=schedule.name, due_at=now)
         .on_conflict_ignore().execute())
        taken = (ScheduleTick.update(due_at=now + schedule.every, owner=owner, started_at=now,
                                     runs=ScheduleTick.runs + 1)
                 .where((ScheduleTick.name == schedule.name) & (ScheduleTick.due_at <= now))
                 .execute())
    return bool(taken)


def _finished(schedule: Schedule, result: dict[str, Any]) -> None:
    from pms.db.database import db, write_begin_args
    from pms.models.schedules import ScheduleTick
    from pms.relay.clock import database_now

    with unscoped(), db.atomic(**write_begin_args()):
        ScheduleTick.update(finished_at=database_now(), last_result=result).where(
            ScheduleTick.name == schedule.name).execute()


def run_due(platform: Any, *, names: Iterable[str] | None = None,
            owner: str | None = None) -> dict[str, dict[str, Any]]:
    """Run every schedule (or those named) whose tick is due and that this caller claims.
    Returns {name: counts} of what ran here; a task's failure is logged and kept as its
    result (`error`), and the others still run."""
    from pms.relay.clock import database_now

    owner = owner or owner_name()
    ran: dict[str, dict[str, Any]] = {}
    for schedule in (BY_NAME[n] for n in names) if names is not None else SCHEDULES:
        now = database_now()
        if not claim(schedule, now, owner):
            continue
        try:
            result: dict[str, Any] = dict(schedule.run(platform, now))
        except Exception as exc:  # noqa: BLE001 - the next tick runs it again
            log.warning("schedule %s failed", schedule.name, exc_info=True)
            result = {"error": type(exc).__name__}
        _finished(schedule, result)
        ran[schedule.name] = result
    return ran


def register_all(client: Any) -> int:
    """Declare every schedule with the platform's schedule service (idempotent PUTs). Returns
    how many it registered; a service that does not answer is logged (the host's own loop
    runs the schedules meanwhile)."""
    done = 0
    for schedule in SCHEDULES:
        try:
            client.register(schedule.name, every_seconds=int(schedule.every.total_seconds()),
                            description=schedule.description,
                            command=f"pms-cli schedules run {schedule.name}")
            done += 1
        except Exception:  # noqa: BLE001 - registration is retried at the next start
            log.warning("could not register schedule %s", schedule.name, exc_info=True)
    return done


class SchedulerLoop:
    """A host's own scheduler: every `check_every` seconds, the due schedules it claims."""

    def __init__(self, platform: Any, *, check_every: float = 15.0) -> None:
        self.platform = platform
        self.check_every = check_every
        self.owner = owner_name()
        self.ticks = 0

    def run_forever(self, stop: threading.Event) -> None:
        from pms.db.iteration import iteration_scope

        with iteration_scope():
            register_all(self.platform.schedules)
        while not stop.is_set():
            started = time.monotonic()
            try:
                with iteration_scope():  # each pass owns its connection
                    ran = run_due(self.platform, owner=self.owner)
                if ran:
                    log.info("schedules ran: %s", ran)
                self.ticks += 1
            except Exception:  # noqa: BLE001 - e.g. the database restarting; try again
                log.warning("scheduler pass failed", exc_info=True)
            stop.wait(max(0.0, self.check_every - (time.monotonic() - started)))


def start_thread(platform: Any, stop: threading.Event) -> threading.Thread:
    """Start a SchedulerLoop in a daemon thread, checking every PMS_SCHEDULE_CHECK_SECONDS."""
    loop = SchedulerLoop(platform, check_every=platform.settings.schedule_check_seconds)
    thread = threading.Thread(target=loop.run_forever, args=(stop,), name="pms-scheduler",
                              daemon=True)
    thread.start()
    return thread


__all__ = ["BY_NAME", "SCHEDULES", "Schedule", "SchedulerLoop", "claim", "register_all",
           "run_due", "start_thread"]
